"""Reading never creates: a command that only reads a store, or changes what it holds, first checks that it is there.

Opening a store makes it (a SQLite file, tables, a MongoDB collection and its indexes), which
is right for an agent and an import, and wrong for ``sessions`` with a typo in the path: that
would leave an empty store behind and answer "no sessions". So these commands open the store
with :func:`omnisync.router.existing_router`, which reads the URL, options and environment exactly as
``MemoryRouter`` does and asks the kind's registry entry how to look before it opens:

- SQLite: the file exists and holds omnisync's tables (the in-memory database holds nothing).
- Other SQL: the database accepts a connection and holds omnisync's tables.
- Redis: some key carries the store's prefix (``OMNISYNC_REDIS_PREFIX``); Redis reads write nothing.
- MongoDB: the database the router would use (the URL's, else ``MONGODB_DB_NAME``) holds the
  store's collection; the store is opened without making indexes.
"""

from __future__ import annotations

from .. import _env
from ..encryption.keys import Encryption
from ..router import MemoryRouter, existing_router
from .connect import choose_kind


def open_existing(kind: str | None, url: str | None, timeout: float, *, plaintext_too: bool = False) -> MemoryRouter:
    """A router on a store that is already there; a StoreError naming the place if it is not.

    With ``plaintext_too`` and ``OMNISYNC_ENCRYPTION_KEYS`` set, values in clear are read as
    well as sealed ones (a copy's source, which the destination seals on the way in)."""
    encryption = Encryption.from_environment(accept_plaintext=True) if plaintext_too and _env.encryption_keys() else None
    return existing_router(choose_kind(kind, url), url=url, encryption=encryption, connect_timeout=timeout)
