"""``search``, ``fork`` and ``reindex``: searching and branching sessions from the command line (omnisync/history_edit.py)."""

from __future__ import annotations

import argparse

from .. import history_edit
from ..router import MemoryRouter
from .output import note, print_json, print_json_items, snippet, table


def search(args: argparse.Namespace, router: MemoryRouter) -> int:
    """The agent's messages holding every word of the query, best first."""
    hits = history_edit.search(router.store, args.agent, args.query, args.session, args.limit, None, None)
    if args.json:
        print_json_items(hits)
    elif not hits:
        note(f"no active message of agent {args.agent!r} holds every word of {args.query!r}")
    else:
        table(("SESSION", "SEQ", "ROLE", "SCORE", "SNIPPET"), ((h["session_id"], h["seq"], h["role"], f"{h['score']:.3g}", snippet(h["snippet"])) for h in hits))
    return 0


def fork(args: argparse.Namespace, router: MemoryRouter) -> int:
    """A new session with the session's history up to ``--at``; prints its id."""
    new = history_edit.fork(router.store, args.agent, args.session, args.at, args.new_session)
    if args.json:
        print_json({"session_id": new})
    else:
        print(new)
    return 0


def reindex(args: argparse.Namespace, router: MemoryRouter) -> int:
    """Every message's search terms written again from its content."""
    indexed = router.store.reindex(args.agent)
    print(f"reindexed: {indexed} messages hold search terms (0 on a store that searches by scanning: nothing to rebuild)")
    return 0
