"""The run keeper's thread: woken only when it would look at a new run too late, never missing one."""

import time

from omnisync.run_state import keeper as keeper_module
from omnisync.run_state.keeper import Keeper, Watch


def until(condition, seconds=10.0):
    ends = time.monotonic() + seconds
    while not condition() and time.monotonic() < ends:
        time.sleep(0.01)
    return condition()


def test_a_new_run_wakes_the_keeper_only_when_it_would_look_too_late(monkeypatch):
    keeper = Keeper()
    renewed: list[str] = []

    def watch(run_id):
        return Watch(run_id, read_request=lambda: None, renew=lambda: renewed.append(run_id))

    first = watch("first")
    keeper.add(first)  # starts the thread
    assert until(lambda: keeper._wakes_at != float("-inf")), "the keeper thread never went to wait"
    woken: list[int] = []
    notify = keeper._changed.notify
    monkeypatch.setattr(keeper._changed, "notify", lambda n=1: (woken.append(n), notify(n)))

    keeper.add(watch("second"))  # due a WATCH_SECONDS from now: the thread looks by then anyway
    assert woken == []
    assert until(lambda: "second" in renewed), "a run added without a wake was never looked after"

    monkeypatch.setattr(keeper_module, "WATCH_SECONDS", 0.05)
    assert until(lambda: keeper._wakes_at > time.monotonic() + 0.1), "the keeper thread never went back to wait"
    keeper.add(watch("soon"))  # due sooner than the thread would look: woken
    assert woken == [1]
    assert until(lambda: "soon" in renewed)
    for run_id in ("first", "second", "soon"):
        found = keeper.find(run_id)
        assert found is not None
        keeper.remove(found)
