"""``omnisync doctor``: the checks of :mod:`omnisync.doctor`, one line each (or JSON); exit 1 when one failed."""

from __future__ import annotations

import argparse
import json

from ..doctor import diagnose
from .connect import choose_kind, url_of
from .errors import UsageError


def doctor(args: argparse.Namespace, timeout: float) -> int:
    kind = choose_kind(getattr(args, "store", None), getattr(args, "url", None))
    url = url_of(kind, getattr(args, "url", None))
    if not url:
        raise UsageError(f"no URL for the {kind} store: pass --url or set its variable")
    report = diagnose(kind, url, timeout)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1


HELP = "check a deployment's store: reachable, schema, cluster or pooler, version, latency, clock; say what to fix (exit 1 if a check fails)"
