"""``omnisync serve module:attr``: agents behind HTTP (Starlette under uvicorn).

``attr`` is an agent, a list of agents or a mapping of names to agents, found as uvicorn finds
an app (the current directory is importable). With ``--workers N`` each worker process imports
it again and builds its own app: the agents must then share a store every process reaches.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from .. import _env
from ..errors import ConfigurationError, MissingDependencyError
from .errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
WORKER_FACTORY = "omnisync.cli.serve:worker_app"
REQUEST_SECONDS = 30.0


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("target", metavar="MODULE:ATTR", help="where the agent (or a list or mapping of agents) is, e.g. examples.served:agent")
    sub.add_argument("--host", default=DEFAULT_HOST, help=f"the address to listen on (default {DEFAULT_HOST}; another needs tokens)")
    sub.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"(default {DEFAULT_PORT}; 0 picks a free one)")
    sub.add_argument("--workers", type=_workers, default=1, help="server processes (default 1); more need a store they all reach")
    sub.add_argument("--token-file", metavar="FILE", help="bearer tokens, one 'TOKEN AGENT[,AGENT...]' (or 'TOKEN *') a line; else OMNISYNC_SERVE_TOKENS")
    sub.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN", help="a web origin that may call the API from a browser (repeat for more); none by default")
    sub.add_argument(
        "--request-timeout", type=_seconds, default=REQUEST_SECONDS, metavar="SECONDS",
        help=f"a request's headers, and then its body, must arrive within this (default {REQUEST_SECONDS:g}); a connection that sends nothing more is closed",
    )


def serve(args: argparse.Namespace, timeout: float) -> int:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError(f"omnisync serve needs uvicorn and Starlette ({exc}): pip install 'omnisync[serve]'") from exc
    config = {"target": args.target, "token_file": args.token_file, "cors": args.cors_origin, "request_timeout": args.request_timeout}
    agents = load_agents(args.target)
    tokens = read_tokens(args.token_file)
    from ..serve.agents import served_agents
    from ..serve.connections import uvicorn_options
    from ..serve.loopback import is_loopback_host

    served = served_agents(agents)
    if tokens is None and not is_loopback_host(args.host):
        raise UsageError(
            f"no token is configured, so the server listens on loopback only, not {args.host}: "
            "give --token-file or set OMNISYNC_SERVE_TOKENS to listen elsewhere"
        )
    if args.workers > 1:
        from ..stores.registry import KINDS

        private = [name for name, agent in served.items() if not KINDS[agent.blocking.get_memory_store_type()].networked]
        if private:
            raise UsageError(f"--workers {args.workers}: agent(s) {', '.join(private)} keep memory in their process; give them a store every worker reaches (sql, redis, mongodb)")
    if tokens is None:
        print(f"omnisync serve: no token configured: listening on {args.host} only, open to anyone on this machine", file=sys.stderr)
    print(f"omnisync serve: agents {', '.join(served)} on http://{_url_host(args.host)}:{args.port} ({args.workers} worker(s))", file=sys.stderr)
    options = uvicorn_options(args.request_timeout)
    if args.workers == 1:
        app = _app(served, tokens, args.cors_origin, args.request_timeout)
        uvicorn.run(app, host=args.host, port=args.port, log_level="info", **options)
    else:
        os.environ["OMNISYNC_SERVE_WORKER"] = json.dumps(config)
        uvicorn.run(WORKER_FACTORY, factory=True, host=args.host, port=args.port, workers=args.workers, log_level="info", **options)
    return 0


def worker_app() -> Any:
    """The app of one worker process of ``--workers N``, built from what the command put in its environment."""
    config = json.loads(_env.serve_worker() or "{}")
    if "target" not in config:
        raise ConfigurationError("omnisync.cli.serve:worker_app is started by 'omnisync serve --workers N', which sets OMNISYNC_SERVE_WORKER")
    return _app(load_agents(config["target"]), read_tokens(config["token_file"]), config["cors"], float(config.get("request_timeout", REQUEST_SECONDS)))


def _app(agents: Any, tokens: dict[str, list[str]] | None, cors: list[str], request_timeout: float) -> Any:
    from ..serve import create_app

    return create_app(agents, tokens=tokens, cors_origins=cors, body_seconds=request_timeout)


def load_agents(target: str) -> Any:
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(f"give the agent as MODULE:ATTR (e.g. examples.served:agent), not {target!r}")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        found: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UsageError(f"cannot import {module_name!r}: no such module from {Path.cwd()}") from exc
        raise
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise UsageError(f"module {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, part)
    return found


def read_tokens(token_file: str | None) -> dict[str, list[str]] | None:
    """The tokens from ``--token-file``, else from OMNISYNC_SERVE_TOKENS; None when neither gives any."""
    from ..serve.auth import parse_tokens

    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read --token-file {token_file}: {exc.strerror}") from exc
        tokens = parse_tokens(text, f"--token-file {token_file}")
        if not tokens:
            raise UsageError(f"--token-file {token_file} holds no token")
        return tokens
    variable = _env.serve_tokens()
    return parse_tokens(variable, "OMNISYNC_SERVE_TOKENS") if variable else None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"a timeout is a number of seconds above 0, at most 3600, not {text!r}")
    return seconds


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"workers is 1 to 64, not {text!r}")
    return int(text)
