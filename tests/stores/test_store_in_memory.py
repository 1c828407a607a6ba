import threading

import pytest

from omnisync.stores.in_memory import InMemoryStore
from helpers.store_contract import AGENT, StoreContract, user


@pytest.fixture
def store():
    return InMemoryStore()


class TestInMemoryStore(StoreContract):
    def test_threads_appending_at_once_lose_nothing(self, store):
        def work(name):
            for i in range(200):
                store.append(AGENT, "s", [user(f"{name}-{i}")])

        threads = [threading.Thread(target=work, args=(n,)) for n in "abcd"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seqs = [m.seq for m in store.history(AGENT, "s")]
        assert len(seqs) == 800 and seqs == sorted(set(seqs))
