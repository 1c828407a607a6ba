"""The store contract held by every backend with encryption at rest on (an EncryptedStore around it)."""

from __future__ import annotations

import os

import pytest

from helpers.backend_routers import BACKENDS, open_router
from omnisync import Encryption
from omnisync.run_state.data_keys import create as save_data_key
from omnisync.stores.encrypted import EncryptedStore
from helpers.store_contract import StoreContract

pytest.importorskip("cryptography")


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path, monkeypatch):
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    for router in open_router(request.param, tmp_path, monkeypatch):
        yield EncryptedStore(router.store, Encryption({"k": os.urandom(32)}, "k"), save_data_key=save_data_key)


class TestEncryptedStore(StoreContract):
    pass


def test_the_encrypted_store_decides_every_public_store_method_itself():
    """A method the base answers by default (or by calling others) could pass a sealed value through,
    or refuse what the backend does: each one is the encrypted store's own, forwarding or sealing."""
    import inspect

    from omnisync.stores.base import MemoryStore

    public = {name for name, member in vars(MemoryStore).items() if not name.startswith("_") and inspect.isfunction(member)}
    inherited = {name for name in public if name not in vars(EncryptedStore)}
    allowed = {
        "iter_history", "iter_sessions", "iter_runs", "runs_page",  # built on the methods it defines (history_page, sessions_page, _page_of_runs)
        "as_stored", "events_as_stored", "replace_values",  # the backend's own hooks: called on the inner store by its writes and by `omnisync encrypt`
    }
    assert inherited <= allowed, f"EncryptedStore leaves {sorted(inherited - allowed)} to MemoryStore"
