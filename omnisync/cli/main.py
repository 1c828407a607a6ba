"""The argument parser, and the one place a command's failure becomes an exit status.

Exit status: 0 done; 1 the command could not do it (a store that cannot be reached, a refusal,
counts that differ after a copy), with one line on stderr saying why; 2 bad arguments or
settings, with the usage; 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from ..errors import ConfigurationError, OmnisyncError
from .errors import CommandError, UsageError

DEFAULT_TIMEOUT = 10.0
MAX_ERROR_CHARS = 300

DESCRIPTION = "Look into, move and tend the memory stores omnisync agents keep their sessions and runs in; serve agents over HTTP."
EPILOG = """\
which store: --store KIND reads that kind's variable, as MemoryRouter(KIND) does (DATABASE_URL,
REDIS_URL, MONGODB_URI), unless --url is given; --url alone lets its scheme choose (sqlite:///...,
postgresql://..., redis://..., mongodb://...); with neither, the one of those variables that is
set. Store options go before or after the command. Only import and copy's --to create a
store; every other command needs one that is there, and a missing one is an error.

exit status: 0 done, 1 failed (one line on stderr says why), 2 bad arguments (usage shown)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:  # answered before the commands' modules load
        print(f"omnisync {_version()}")
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    command: argparse.ArgumentParser = args.command_parser
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"{command.prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if getattr(args, "traceback", False):
            raise
        status = exit_status(exc)
        if status == 2:
            command.error(_one_line(exc))  # exits 2 with the usage
        if isinstance(exc, (CommandError, OmnisyncError)):
            print(f"{command.prog}: error: {_one_line(exc)}", file=sys.stderr)
        else:  # a driver error no store wrapped
            print(f"{command.prog}: error: {type(exc).__name__}: {_one_line(exc)} (--traceback shows where)", file=sys.stderr)
        return status


def exit_status(exc: Exception) -> int:
    """2 for wrong arguments or settings (the usage is shown), 1 for everything else that failed."""
    return 2 if isinstance(exc, (UsageError, ConfigurationError)) else 1


def _run(args: argparse.Namespace) -> int:
    check: Callable[[argparse.Namespace], None] | None = getattr(args, "check", None)
    if check is not None:
        check(args)
    timeout = getattr(args, "timeout", DEFAULT_TIMEOUT)
    if args.opens_own_store:  # import reads its file first; copy opens two stores
        status: int = args.handler(args, timeout)
        return status
    from .reading import open_existing  # the router and its stores: not imported for --version

    with open_existing(getattr(args, "store", None), getattr(args, "url", None), timeout) as router:
        status = args.handler(args, router)
    return status


def _one_line(exc: BaseException) -> str:
    """The first line of the error, cut short: some drivers append pages of diagnostics."""
    lines = str(exc).strip().splitlines()
    line = lines[0].strip() if lines else type(exc).__name__
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


# --- argument types -------------------------------------------------------------------


def identifier(what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        from ..storable import MAX_ID_LENGTH  # when an argument is read: not imported for --version

        if not text or len(text) > MAX_ID_LENGTH:
            raise argparse.ArgumentTypeError(f"a {what} is 1 to {MAX_ID_LENGTH} characters, not {text!r}")
        if what == "agent name" and "#" in text:
            raise argparse.ArgumentTypeError(f"an agent name has no '#': {text!r}")
        return text

    parse.__name__ = what
    return parse


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


agent_name: Callable[[str], str] = identifier("agent name")
session_id: Callable[[str], str] = identifier("session id")
run_id: Callable[[str], str] = identifier("run id")
call_id: Callable[[str], str] = identifier("call id")


# --- the parser -----------------------------------------------------------------------


def _connection_options(with_store: bool) -> argparse.ArgumentParser:
    """Options every command takes, before or after its name (SUPPRESS: the last one given wins)."""
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("store options")
    if with_store:
        from .connect import CLI_KINDS  # the store registry: not imported for --version

        group.add_argument("--store", choices=CLI_KINDS, default=argparse.SUPPRESS, metavar="KIND", help=f"one of {', '.join(CLI_KINDS)}")
        group.add_argument("--url", default=argparse.SUPPRESS, help="the store's URL (else the kind's environment variable)")
    group.add_argument("--timeout", type=positive_seconds, default=argparse.SUPPRESS, metavar="SECONDS", help=f"give up connecting after this long (default {DEFAULT_TIMEOUT:g})")
    group.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help="show the traceback of a failure")
    return options


def build_parser() -> argparse.ArgumentParser:
    from ..run_record import RUN_STATUSES  # with the commands: not imported for --version
    from . import doctor, history, keys, parts, preview, runs, serve, show, transfer

    store_options = _connection_options(with_store=True)
    parser = argparse.ArgumentParser(
        prog="omnisync",
        description=DESCRIPTION,
        epilog=EPILOG,
        parents=[store_options],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Callable[..., int], help: str, *, store: bool = True, opens_own_store: bool = False) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, parents=[_connection_options(with_store=store)])
        sub.set_defaults(handler=handler, command_parser=sub, opens_own_store=opens_own_store)
        return sub

    sub = command("sessions", show.sessions, "list the sessions per agent, with message counts and last activity")
    sub.add_argument("--agent", type=agent_name, help="only this agent's sessions")
    _json(sub)

    sub = command("history", show.history, "show a session's active messages (with --all, every stored one)")
    sub.add_argument("session", type=session_id, metavar="SESSION")
    sub.add_argument("--agent", type=agent_name, required=True)
    sub.add_argument("--all", action="store_true", help="include inactive messages; summaries are marked")
    _json(sub, full=True)

    sub = command("clear", show.clear, "delete one session of an agent, or with --all-sessions all of them")
    sub.add_argument("session", type=session_id, nargs="?", metavar="SESSION")
    sub.add_argument("--agent", type=agent_name, required=True)
    sub.add_argument("--all-sessions", action="store_true", help="delete every session of the agent (asks first on a terminal)")
    sub.add_argument("--yes", action="store_true", help="do not ask: needed for --all-sessions when stdin is not a terminal")
    sub.set_defaults(check=_check_clear)

    sub = command("export", transfer.export, "write sessions and run records as JSON Lines (or, with --sqlite, a SQLite file)")
    _selection(sub)
    where = sub.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="FILE", help="write JSON Lines here (default: stdout)")
    where.add_argument("--sqlite", metavar="FILE", help="write a new SQLite file, tables messages and runs (opens in Datasette)")
    sub.add_argument("--decrypt", action="store_true", help="an encrypted store: write its values in clear (default: as stored, sealed)")

    sub = command("import", transfer.import_, "read a JSON Lines export into the store (made if it is not there)", opens_own_store=True)
    sub.add_argument("file", metavar="FILE", help="the export ('-' for stdin)")
    _append_and_progress(sub)

    sub = command("copy", transfer.copy, "copy sessions and run records between two stores, then verify the counts", store=False, opens_own_store=True)
    sub.add_argument("--from", dest="source", required=True, metavar="URL", help="the store to read")
    sub.add_argument("--to", dest="target", required=True, metavar="URL", help="the store to write")
    _selection(sub)
    _append_and_progress(sub)
    sub.set_defaults(check=_check_copy)

    sub = command("runs", runs.runs, "list run records (durable runs)")
    sub.add_argument("--agent", type=agent_name, help="only this agent's runs (default: every agent with sessions)")
    sub.add_argument("--status", choices=RUN_STATUSES)
    sub.add_argument("--session", type=session_id, help="only the runs of this session")
    _json(sub)

    for name, handler, verdict in (("approve", runs.approve, "approve"), ("deny", runs.deny, "deny")):
        sub = command(name, handler, f"{verdict} one tool call of a run that awaits approval (then resume the run)")
        sub.add_argument("run_id", type=run_id, metavar="RUN_ID")
        sub.add_argument("call_id", type=call_id, metavar="CALL_ID")
        sub.add_argument("--agent", type=agent_name, required=True)
        sub.add_argument("--reason", help="why, kept with the decision")

    sub = command("preview", preview.preview, "show what the next model call of a session would be given, without calling it")
    sub.add_argument("session", type=session_id, metavar="SESSION")
    sub.add_argument("--agent", type=agent_name, required=True)
    sub.add_argument("--system", default="", metavar="TEXT", help="the agent's system instruction")
    sub.add_argument("--memory-config", type=preview.memory_config, metavar="JSON", help='the agent\'s memory_config, e.g. \'{"value": 20}\'')
    new = sub.add_mutually_exclusive_group()
    new.add_argument("--message", metavar="TEXT", help="a new user message, as the next run would add it")
    new.add_argument(
        "--message-json",
        dest="message",
        type=parts.message_json,
        metavar="JSON",
        help='the new message as JSON content parts, e.g. \'[{"type": "text", "text": "Describe it"}, ...]\', or @FILE holding them',
    )
    _json(sub, full=True)

    sub = command("keys", keys.keys, keys.HELP)
    keys.add_arguments(sub)

    sub = command("encrypt", keys.encrypt, keys.ENCRYPT_HELP, opens_own_store=True)
    sub.add_argument("--page-size", type=int, default=500, metavar="N", help="messages read and sealed per write (default 500)")

    sub = command("search", history.search, "search an agent's sessions: the messages holding every word of QUERY, best first")
    sub.add_argument("query", metavar="QUERY")
    sub.add_argument("--agent", type=agent_name, required=True)
    sub.add_argument("--session", type=session_id, help="only this session")
    sub.add_argument("--limit", type=int, default=10, help="the most hits (1 to 100, default 10)")
    _json(sub)

    sub = command("fork", history.fork, "copy a session's history (up to --at) into a new session; prints the new id")
    sub.add_argument("session", type=session_id, metavar="SESSION")
    sub.add_argument("--agent", type=agent_name, required=True)
    sub.add_argument("--at", type=int, metavar="SEQ", help="the last message to copy (a SEQ of 'history --all'; default: all)")
    sub.add_argument("--new-session", type=session_id, metavar="ID", help="the new session's id (default: SESSION-fork-...)")
    _json(sub)

    sub = command("reindex", history.reindex, "rebuild the search index from the stored messages (after a restore by other means, or SQLite's VACUUM)")
    sub.add_argument("--agent", type=agent_name, help="only this agent (default: every agent)")

    sub = command("doctor", doctor.doctor, doctor.HELP, opens_own_store=True)
    _json(sub)

    sub = command("serve", serve.serve, "serve agents over HTTP: sessions and runs as JSON and server-sent events", store=False, opens_own_store=True)
    serve.add_arguments(sub)
    return parser


def _version() -> str:
    from .. import __version__

    return __version__


def _json(sub: argparse.ArgumentParser, full: bool = False) -> None:
    sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    if full:
        sub.add_argument("--full", action="store_true", help="with --json, keep images', audio's and files' base64 data (elided by default)")


def _selection(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--agent", type=agent_name, help="only this agent (default: every agent with sessions)")
    sub.add_argument("--session", type=session_id, help="only this session id")


def _append_and_progress(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--append", action="store_true", help="add to sessions the destination already holds (default: refuse)")
    sub.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )


def _check_clear(args: argparse.Namespace) -> None:
    if args.all_sessions and args.session:
        raise UsageError("give a SESSION or --all-sessions, not both")
    if not args.all_sessions and not args.session:
        raise UsageError("give the SESSION to clear, or --all-sessions to clear every session of the agent")
    if args.all_sessions and not args.yes and not sys.stdin.isatty():
        raise UsageError(f"--all-sessions deletes every session of agent {args.agent!r}: pass --yes to confirm (there is no terminal to ask)")


def _check_copy(args: argparse.Namespace) -> None:
    if hasattr(args, "store") or hasattr(args, "url"):
        raise UsageError("copy takes its stores from --from and --to, not --store or --url")
