"""The Redis store's Lua scripts, kept as files of their own (``lua/*.lua``, package data).

Each file starts with what its script takes (KEYS, ARGV) and returns. Some are functions other
scripts include (``append_function``, ``save_functions``, ``lease_function``, ``move_range_function``); ``BATCH`` and
``RUN_ARGS`` in their text are filled in here.
"""

from __future__ import annotations

from importlib.resources import files

BATCH = 1000
"""ZADD arguments per call inside a script (Lua's unpack has a stack limit)."""
RUN_ARGS = 9
"""ARGV entries of one record's save: expected version ("" creates), new version, data, status,
session, finished (µs or ""), index score, run token, expire at (ms or "")."""


def _text(*names: str) -> str:
    parts = (files("omnisync.stores.redis").joinpath("lua", f"{name}.lua").read_text(encoding="utf-8") for name in names)
    return "".join(parts).replace("BATCH", str(2 * BATCH)).replace("RUN_ARGS", str(RUN_ARGS))


APPEND_FUNCTION = _text("append_function")
APPEND = APPEND_FUNCTION + "return append(1)"
RESERVE_SEQS = _text("reserve_seqs")
APPEND_PLACED = _text("append_placed")
REPLACE_VALUES = _text("replace_values")
FOLD = _text("move_range_function", "fold")
DEACTIVATE = _text("move_range_function", "deactivate")
DELETE_MESSAGE = _text("delete_message")
CLEAR_SESSION = _text("clear_session")
LIST = _text("list")
ORDERED = _text("ordered")
COUNT_SESSION = _text("count_session")
HISTORY = _text("history")
HISTORY_PAGE = _text("history_page")
SAVE_RUNS = _text("save_functions", "save_runs")
APPEND_AND_SAVE_RUN = _text("append_function", "save_functions", "append_and_save_run")
APPEND_EVENTS = _text("append_events")
LOAD_LEASE = _text("lease_function") + "return lease_and_holder()"
LOAD_LEASE_AND_WINDOW = _text("lease_function", "load_lease_and_window")
LIST_RUNS = _text("list_runs")
RUNS_PAGE = _text("runs_page")
PRUNE_RUNS = _text("prune_runs")
