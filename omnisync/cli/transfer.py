"""``export``, ``import`` and ``copy``: sessions and run records out of one store and into another.

All three share one format (:mod:`.records`) and one way in (:mod:`.restore`). An import or a
copy refuses, before writing anything, a destination that already holds one of its sessions or
run records, unless ``--append``; it ends by counting what the destination holds, per session,
against what was meant to be there, and exits 1 if they differ.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from ..messages import Message
from ..router import MemoryRouter
from ..run_record import RunRecord
from ..stores.base import MemoryStore, SessionInfo
from . import sqlite_file
from .connect import kind_of_url, open_router, redact
from .errors import CommandError, UsageError
from .output import note
from .progress import Progress
from .records import SessionDump, agents_of, dumps, iter_lines, parse, selected_sessions
from .restore import Restorer


def export(args: argparse.Namespace, router: MemoryRouter) -> int:
    store = router.store
    sessions = selected_sessions(store, args.agent, args.session)
    if args.sqlite:
        messages, runs = sqlite_file.write(
            Path(args.sqlite), _messages(store, sessions), _runs(store, sessions, args.agent, args.session)
        )
        note(f"exported {messages} messages of {len(sessions)} sessions and {runs} run records to {args.sqlite}")
        return 0
    lines = iter_lines(store, sessions, args.agent, args.session)
    if args.output in (None, "-"):
        count = _write_lines(lines, sys.stdout)
        sys.stdout.flush()
    else:
        target = Path(args.output)
        partial = target.with_name(target.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                count = _write_lines(lines, out)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        note(f"exported {count} lines ({len(sessions)} sessions) to {args.output}")
    return 0


def _write_lines(lines: Iterator[dict], out: TextIO) -> int:
    count = 0
    for line in lines:
        out.write(dumps(line) + "\n")
        count += 1
    return count


def _messages(store: MemoryStore, sessions: list[SessionInfo]) -> Iterator[Message]:
    for info in sessions:
        yield from store.history(info.agent, info.session_id, include_inactive=True)


def _runs(store: MemoryStore, sessions: list[SessionInfo], agent: str | None, session_id: str | None) -> Iterator[RunRecord]:
    for name in agents_of(sessions, agent):
        yield from store.list_runs(name, session_id=session_id)


def import_(args: argparse.Namespace, router: MemoryRouter) -> int:
    source = "stdin" if args.file == "-" else args.file
    try:
        if args.file == "-":
            parsed = parse(sys.stdin, source)
        else:
            with open(args.file, encoding="utf-8-sig") as lines:
                parsed = parse(lines, source)
    except OSError as exc:
        raise CommandError(f"cannot read {source}: {exc.strerror or exc}") from None
    progress = Progress("importing", parsed.message_count + len(parsed.runs), enabled=_show_progress(args))
    restorer = Restorer(router.store, append=args.append, progress=progress)
    restorer.check_free(((s.agent, s.session_id) for s in parsed.sessions), parsed.runs)
    with _partly_written(restorer, progress):
        for dump in parsed.sessions:
            restorer.session(dump)
        restorer.runs(parsed.runs)
    report = restorer.verify()
    print(f"imported {report.describe()} from {source}; counts verified")
    return 0


def copy(args: argparse.Namespace, timeout: float) -> int:
    source_url, target_url = args.source, args.target
    source_kind, target_kind = kind_of_url(source_url), kind_of_url(target_url)
    if source_url == target_url:
        raise UsageError("--from and --to are the same store")
    with open_router(source_kind, source_url, timeout) as source, open_router(target_kind, target_url, timeout) as target:
        store = source.store
        sessions = selected_sessions(store, args.agent, args.session)
        runs = list(_runs(store, sessions, args.agent, args.session))
        total = sum(s.message_count for s in sessions) + len(runs)
        progress = Progress("copying", total, enabled=_show_progress(args))
        restorer = Restorer(target.store, append=args.append, progress=progress)
        restorer.check_free(((s.agent, s.session_id) for s in sessions), runs)
        with _partly_written(restorer, progress):
            for info in sessions:
                messages = store.history(info.agent, info.session_id, include_inactive=True)
                restorer.session(SessionDump(info.agent, info.session_id, messages))
            restorer.runs(runs)
        report = restorer.verify()
    print(f"copied {report.describe()} from {redact(source_url)} to {redact(target_url)}; counts verified")
    return 0


@contextmanager
def _partly_written(restorer: Restorer, progress: Progress) -> Iterator[None]:
    """End the progress bar; after a failure, say that what was written so far stays written."""
    try:
        yield
    except BaseException:
        progress.finish()
        if restorer.started:
            note(
                f"the destination was left partly written: {restorer.report.sessions} sessions complete, "
                f"{restorer.report.runs} run records; the session or run being written when it failed is incomplete"
            )
        raise
    progress.finish()


def _show_progress(args: argparse.Namespace) -> bool:
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty()
