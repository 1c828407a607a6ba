"""Sessions and run records into a store: from an export (import) or straight from another store (copy).

Both refuse, before writing anything, a destination that already holds one of their sessions
or run records, unless ``append``; both end by counting what the destination holds, per
session, against what was meant to be there, and raise TransferError if they differ. A failure
after writing began is raised as TransferError saying what was left written (its cause chained).
"""

from __future__ import annotations

import itertools
import os
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO

from .._logging import logger
from ..errors import TransferError
from ..run_record import DATA_KEY, RunRecord
from ..stores.base import MemoryStore
from .progress import Progress
from .records import Export, agents_of, event_batches, parse, selected_sessions
from .restore import Report, Restorer


def read_export(source: TextIO | str | os.PathLike[str], *, name: str | None = None) -> Export:
    """Check a whole JSON Lines export (a path, or an open text stream) before anything is written.

    Keeps per-session counts and the run records, not the messages: an import reads a path's
    lines again as it writes them. A stream is copied to a temporary file as it is checked.
    """
    if not isinstance(source, (str, os.PathLike)):
        shown = name or str(getattr(source, "name", "the export"))
        spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        parsed = parse(_copied(source, spool), shown)
        parsed.reopen = lambda: _rewound(spool)
        weakref.finalize(parsed, spool.close)
        return parsed
    shown = name or os.fspath(source)
    path = os.fspath(source)
    try:
        with open(path, encoding="utf-8-sig") as lines:
            parsed = parse(lines, shown)
    except OSError as exc:
        raise TransferError(f"cannot read {shown}: {exc.strerror or exc}") from None
    parsed.reopen = lambda: _reopened(path, shown)
    return parsed


def import_export(store: MemoryStore, export: Export, *, append: bool = False, progress: Progress | None = None) -> Report:
    """Write a checked export into ``store`` as its lines are read again, then verify the counts; see the module docstring.

    An export that holds encrypted values needs a ``store`` with the keys: its values are opened
    and sealed again at their new place (:mod:`omnisync.transfer.sealed`)."""
    if any(record.kind == DATA_KEY for record in export.runs):
        from .sealed import for_target

        export = for_target(export, store)
    restorer = Restorer(store, append=append, progress=progress)
    restorer.check_free(export.sessions, export.runs)
    restorer.progress.start(export.message_count + len(export.runs))
    with _explained(restorer):
        for (agent, session_id), messages in itertools.groupby(export.messages(), key=lambda m: (m.agent, m.session_id)):
            restorer.session(agent, session_id, messages)
        restorer.runs(export.runs)
        restorer.events(export.events())
    return restorer.verify()


def _copied(lines: Iterable[str], spool: TextIO) -> Iterator[str]:
    for line in lines:
        spool.write(line)
        yield line


@contextmanager
def _rewound(spool: TextIO) -> Iterator[Iterable[str]]:
    spool.flush()
    spool.seek(0)
    yield spool


@contextmanager
def _reopened(path: str, shown: str) -> Iterator[Iterable[str]]:
    try:
        lines = open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise TransferError(f"cannot read {shown} again: {exc.strerror or exc}") from None
    with lines:
        yield lines


def copy_store(
    source: MemoryStore,
    target: MemoryStore,
    *,
    agent: str | None = None,
    session_id: str | None = None,
    append: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Copy sessions (all, one agent's, or one id's) and their run records from ``source`` into ``target``.

    With encryption, both must be opened with keys, or the source hold nothing sealed: else
    TransferError, nothing written (:func:`omnisync.transfer.sealed.check_copy`)."""
    keys, total = [], 0  # the sessions' keys only: the listing is read a page at a time
    for info in selected_sessions(source, agent, session_id):
        keys.append((info.agent, info.session_id))
        total += info.message_count
    agents = agents_of((a for a, _ in keys), agent)
    from .sealed import check_copy  # encryption on one side only: refused before anything is written

    check_copy(source, target, agents)

    def records() -> Iterator[RunRecord]:  # read twice, a page at a time: checked and counted, then written
        return (r for name in agents for r in source.iter_records(name, session_id=session_id))

    restorer = Restorer(target, append=append, progress=progress)
    run_count = restorer.check_free(keys, records())
    restorer.progress.start(total + run_count)
    with _explained(restorer):
        for name, session in keys:
            restorer.session(name, session, source.iter_history(name, session, include_inactive=True))
        restorer.runs(records())
        restorer.events(batch for agent, run_id in restorer.written_runs for batch in event_batches(source, agent, run_id))
    return restorer.verify()


@contextmanager
def _explained(restorer: Restorer) -> Iterator[None]:
    """After a failure, say that what was written so far stays written."""
    try:
        yield
    except Exception as exc:
        if not restorer.started:
            raise
        raise TransferError(f"{_first_line(exc)}; {_partly_written(restorer.report)}") from exc
    except BaseException:
        if restorer.started:
            logger.warning("%s", _partly_written(restorer.report))
        raise


def _partly_written(report: Report) -> str:
    return (
        f"the destination was left partly written: {report.sessions} sessions complete, {report.runs} run records; "
        "the session or run being written when it failed is incomplete"
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

