"""The options a MemoryRouter passes to its store, checked when the router is made.

Every network store takes the same two waits, in seconds: ``connect_timeout`` (to open a
connection) and ``timeout`` (for any one read or write to answer). A server that goes
silent then becomes a StoreError within them instead of holding a run forever. Beyond those,
Redis and MongoDB take their client's own options; the SQL and in-process stores take none.
"""

from __future__ import annotations

import inspect
from typing import Any

from .errors import ConfigurationError
from .stores.registry import KINDS

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_TIMEOUT = 30.0
WAITS = ("connect_timeout", "timeout")


def check_options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the waits filled in; a ConfigurationError naming what is accepted otherwise."""
    if kind == "in_memory":
        if options:
            raise ConfigurationError(f"MemoryRouter('in_memory') takes no options; it got {_names(options)}")
        return {}
    checked = dict(options)
    for name, default in (("connect_timeout", DEFAULT_CONNECT_TIMEOUT), ("timeout", DEFAULT_TIMEOUT)):
        value = checked.setdefault(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigurationError(f"MemoryRouter({kind!r}) option {name} must be a positive number of seconds, not {value!r}")
    unknown = [name for name in checked if name not in WAITS and name not in KINDS[kind].own_options and not _client_accepts(kind, name, checked[name])]
    if unknown:
        raise ConfigurationError(
            f"MemoryRouter({kind!r}) does not take {_names(unknown)}; it takes {_accepted(kind)}"
        )
    return checked


def _client_accepts(kind: str, name: str, value: Any) -> bool:
    if kind == "redis":
        try:
            import redis
            from redis.cluster import RedisCluster
        except ImportError:
            return True  # building the store names the missing extra
        # A cluster client passes what it does not take itself on to each node's connection.
        accepted = {*inspect.signature(redis.Redis.__init__).parameters, *inspect.signature(RedisCluster.__init__).parameters}
        return name in accepted and name not in ("self", "kwargs")
    if kind == "mongodb":
        try:
            from pymongo.common import validate
            from pymongo.errors import ConfigurationError as MongoConfigurationError
        except ImportError:
            return True
        try:
            validate(name, value)
        except MongoConfigurationError as exc:
            return not str(exc).startswith("Unknown option")
        except Exception:  # a known option with a bad value: MongoClient says what is wrong with it
            return True
        return True
    return False


def _accepted(kind: str) -> str:
    own = ", ".join((*WAITS, *KINDS[kind].own_options))
    client = KINDS[kind].client
    return f"{own} and {client}'s options" if client else f"{own} only"


def _names(names: Any) -> str:
    return ", ".join(sorted(names))
