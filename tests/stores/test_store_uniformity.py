"""Every backend implements every public store method, with the contract's signature."""

import inspect

import pytest

from omnisync.stores.base import MemoryStore
from omnisync.stores.registry import KINDS
from omnisync.stores.sql.postgres import PostgresStore
from omnisync.stores.sql.sqlite import SQLiteStore

# Every kind the registry declares, and the subclasses a SQLite and a PostgreSQL URL open.
BACKENDS = [kind.store_class() for kind in KINDS.values()] + [SQLiteStore, PostgresStore]
PUBLIC = [name for name, member in inspect.getmembers(MemoryStore, inspect.isfunction) if not name.startswith("_")]


def test_the_contract_has_the_methods_agents_use():
    assert {"append", "latest", "window", "history", "clear", "sessions", "fold", "save_run", "load_run", "list_runs", "prune_runs", "close"} <= set(PUBLIC)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_backend_implements_every_public_method(backend):
    assert not inspect.isabstract(backend), getattr(backend, "__abstractmethods__", None)
    for name in PUBLIC:
        ours, theirs = inspect.signature(getattr(MemoryStore, name)), inspect.signature(getattr(backend, name))
        assert list(ours.parameters) == list(theirs.parameters), (backend.__name__, name, theirs)
    assert backend.kind in KINDS and issubclass(backend, KINDS[backend.kind].store_class())
