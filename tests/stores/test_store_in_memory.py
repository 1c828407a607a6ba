import pytest

from omnisync.stores.in_memory import InMemoryStore
from helpers.store_contract import StoreContract


@pytest.fixture
def store():
    return InMemoryStore()


class TestInMemoryStore(StoreContract):
    pass
