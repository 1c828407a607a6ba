"""The store contract held by every backend with encryption at rest on (an EncryptedStore around it)."""

from __future__ import annotations

import os

import pytest

from backend_routers import BACKENDS, open_router
from omnisync import Encryption
from omnisync.encryption import EncryptedStore
from store_contract import StoreContract

pytest.importorskip("cryptography")


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path, monkeypatch):
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    for router in open_router(request.param, tmp_path, monkeypatch):
        yield EncryptedStore(router.store, Encryption({"k": os.urandom(32)}, "k"))


class TestEncryptedStore(StoreContract):
    pass
