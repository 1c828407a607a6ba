"""``export``, ``import`` and ``copy``: the command-line shell over :mod:`omnisync.transfer`.

Here only what a terminal needs: which stores and files, the progress bar, and the lines that
report what was done. The work, its checks and its refusals are the library's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..router import MemoryRouter
from ..transfer import copy_store, export_jsonl, export_sqlite, import_export, read_export
from ..redact import redact_url as redact
from .connect import kind_of_url, open_router
from .errors import UsageError
from .output import note
from .progress import Progress
from .reading import open_existing


def export(args: argparse.Namespace, router: MemoryRouter) -> int:
    store = router.store
    if args.decrypt and router.encryption is None:
        raise UsageError("--decrypt needs the keys: set OMNISYNC_ENCRYPTION_KEYS")
    if args.sqlite:
        done = export_sqlite(store, args.sqlite, agent=args.agent, session_id=args.session, decrypt=args.decrypt)
        note(f"exported {done.messages} messages of {done.sessions} sessions and {done.runs} run records ({done.events} stored events) to {args.sqlite}")
        return 0
    if args.output in (None, "-"):
        export_jsonl(store, sys.stdout, agent=args.agent, session_id=args.session, decrypt=args.decrypt)
        sys.stdout.flush()
        return 0
    done = export_jsonl(store, args.output, agent=args.agent, session_id=args.session, decrypt=args.decrypt)
    note(f"exported {done.lines} lines ({done.sessions} sessions) to {args.output}")
    return 0


def import_(args: argparse.Namespace, timeout: float) -> int:
    """Read and check the whole file before the store is opened: a missing file creates nothing."""
    source = "stdin" if args.file == "-" else args.file
    parsed = read_export(sys.stdin, name=source) if args.file == "-" else read_export(args.file)
    with open_router(getattr(args, "store", None), getattr(args, "url", None), timeout) as router:
        with _progress(args, "importing") as progress:
            report = import_export(router.store, parsed, append=args.append, progress=progress)
    print(f"imported {report.describe()} from {source}; counts verified")
    return 0


def copy(args: argparse.Namespace, timeout: float) -> int:
    source_url, target_url = args.source, args.target
    source_kind, target_kind = kind_of_url(source_url), kind_of_url(target_url)
    if source_url == target_url:
        raise UsageError("--from and --to are the same store")
    with open_existing(source_kind, source_url, timeout, plaintext_too=True) as source, open_router(target_kind, target_url, timeout) as target:
        with _progress(args, "copying") as progress:
            report = copy_store(
                source.store, target.store, agent=args.agent, session_id=args.session, append=args.append, progress=progress
            )
    print(f"copied {report.describe()} from {redact(source_url)} to {redact(target_url)}; counts verified")
    return 0


@contextmanager
def _progress(args: argparse.Namespace, label: str) -> Iterator[Progress]:
    """A bar on stderr (``--progress``, or stderr is a terminal), its line ended however the transfer ends."""
    enabled = bool(args.progress) if args.progress is not None else sys.stderr.isatty()
    progress = Progress(label, enabled=enabled)
    try:
        yield progress
    finally:
        progress.finish()
