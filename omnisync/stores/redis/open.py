"""What the registry asks of the Redis store besides its class: which of the client's options
pass through, and a store opened only if some key carries its prefix (Redis reads write nothing)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ...errors import StoreError
from ...redact import redact_url
from ..base import MemoryStore
from ..registry import NOT_CREATED, first_line


def client_accepts(name: str, value: Any) -> bool:
    try:
        import redis
        from redis.cluster import RedisCluster
    except ImportError:
        return True  # building the store names the missing extra
    # A cluster client passes what it does not take itself on to each node's connection.
    accepted = {*inspect.signature(redis.Redis.__init__).parameters, *inspect.signature(RedisCluster.__init__).parameters}
    return name in accepted and name not in ("self", "kwargs")


def open_existing(url: str, options: dict[str, Any], build: Callable[..., MemoryStore]) -> MemoryStore:
    from redis.exceptions import RedisClusterException, RedisError

    from .store import glob_escaped

    store: Any = build()
    prefix = store.prefix
    try:
        if store.client.exists(f"{prefix}:agents") or next(store.client.scan_iter(match=f"{glob_escaped(prefix)}:*", count=1000), None):
            return store  # type: ignore[no-any-return]
        problem = f"no store at {redact_url(url)}: no key starts with {prefix + ':'!r} ({NOT_CREATED}; check the database number and OMNISYNC_REDIS_PREFIX)"
    except (RedisError, RedisClusterException) as exc:
        problem = f"cannot reach {redact_url(url)}: {first_line(exc)}"
    store.close()
    raise StoreError(problem)
