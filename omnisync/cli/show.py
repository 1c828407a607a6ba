"""``sessions``, ``history`` and ``clear``: what a store holds per agent and session."""

from __future__ import annotations

import argparse

from .. import run_state
from ..agent_config import DEFAULT_RETENTION_DAYS
from ..content import describe
from ..messages import Message
from ..router import MemoryRouter
from .output import nonempty, note, print_json_items, snippet, table, when
from ..transfer.records import message_line
from .errors import CommandError
from .parts import elided_message


def sessions(args: argparse.Namespace, router: MemoryRouter) -> int:
    """Printed a page at a time as the store reads them: a store with a million sessions prints
    its first lines at once and never holds the listing."""
    found = nonempty(router.store.iter_sessions(args.agent))
    if found is None:
        if args.agent:
            raise CommandError(no_sessions(args.agent))
        if not args.json:
            note("no sessions")
            return 0
        found = iter(())
    if args.json:
        print_json_items(
            {"agent": s.agent, "session_id": s.session_id, "message_count": s.message_count, "last_activity": s.last_activity}
            for s in found
        )
    else:
        table(("AGENT", "SESSION", "MESSAGES", "LAST ACTIVITY"), ((s.agent, s.session_id, s.message_count, when(s.last_activity)) for s in found))
    return 0


def history(args: argparse.Namespace, router: MemoryRouter) -> int:
    """Printed a page at a time, as :func:`sessions`."""
    messages = nonempty(router.store.iter_history(args.agent, args.session, include_inactive=args.all))
    if messages is None:
        require_session(router, args.agent, args.session)
        if not args.json:
            note(f"no active messages in session {args.session!r} of agent {args.agent!r}")
            return 0
        messages = iter(())
    if args.json:
        lines = (message_line(m) for m in messages)
        print_json_items(lines if args.full else (elided_message(line) for line in lines))
    elif args.all:
        table(("SEQ", "STATUS", "ROLE", "CONTENT"), ((m.seq, _status(m), m.role, _content(m)) for m in messages))
    else:
        table(("SEQ", "ROLE", "CONTENT"), ((m.seq, m.role, _content(m)) for m in messages))
    return 0


def _status(message: Message) -> str:
    if not message.is_summary:
        return message.status
    info = message.metadata.get("summary")
    folded = f" of {info['first_seq']}-{info['last_seq']}" if isinstance(info, dict) and "first_seq" in info and "last_seq" in info else ""
    return f"{message.status}, summary{folded}"


def _content(message: Message) -> str:
    if message.tool_calls:
        calls = ", ".join(f"{c.get('function', {}).get('name', '?')}({c.get('function', {}).get('arguments', '')})" for c in message.tool_calls)
        return snippet(f"→ {calls}" + (f"  {describe(message.content)}" if message.content else ""))
    if message.role == "tool":
        return snippet(f"[{message.tool_call_id}] {describe(message.content)}")
    return snippet(describe(message.content))


def clear(args: argparse.Namespace, router: MemoryRouter) -> int:
    """Refuse a name that holds nothing (a typo would otherwise answer "0 messages deleted"); ask before clearing all."""
    store = router.store
    if args.all_sessions:
        held = messages = 0
        for info in store.iter_sessions(args.agent):
            held, messages = held + 1, messages + info.message_count
        if not held:
            raise CommandError(no_sessions(args.agent) + "; nothing deleted")
        if not args.yes and not _confirmed(f"delete all {held} sessions ({messages} messages) of agent {args.agent!r}?"):
            raise CommandError("not confirmed; nothing deleted")
        session_id = None
    else:
        require_session(router, args.agent, args.session)
        session_id = args.session
    deleted = run_state.clear(store, args.agent, session_id, retention_days=DEFAULT_RETENTION_DAYS)  # a run going in it ends cancelled first
    where = "every session" if session_id is None else f"session {session_id!r}"
    print(f"cleared {where} of agent {args.agent!r}: {deleted} messages deleted (run records are kept)")
    return 0


def no_sessions(agent: str) -> str:
    return f"agent {agent!r} has no sessions in this store (check the name and the store)"


def require_session(router: MemoryRouter, agent: str, session_id: str) -> None:
    """Raise CommandError unless the store holds ``session_id`` of ``agent``, saying which of the two is unknown."""
    others = 0
    for info in router.store.iter_sessions(agent):
        if info.session_id == session_id:
            return
        others += 1
    if not others:
        raise CommandError(no_sessions(agent))
    raise CommandError(f"agent {agent!r} has no session {session_id!r} ({others} others: omnisync sessions --agent {agent} lists them)")


def _confirmed(question: str) -> bool:
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
