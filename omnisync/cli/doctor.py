"""``omnisync doctor``: the checks of :mod:`omnisync.doctor`, one line each (or JSON); exit 1 when one failed."""

from __future__ import annotations

import argparse
import json

from ..doctor import diagnose
from ..doctor.report import Report
from ..errors import OmnisyncError
from ..router import existing_router
from .connect import choose_kind, url_of
from .errors import UsageError


def doctor(args: argparse.Namespace, timeout: float) -> int:
    kind = choose_kind(getattr(args, "store", None), getattr(args, "url", None))
    url = url_of(kind, getattr(args, "url", None))
    if not url:
        raise UsageError(f"no URL for the {kind} store: pass --url or set its variable")
    report = diagnose(kind, url, timeout)
    if report.ok:
        encryption_check(report, kind, url, timeout)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1


def encryption_check(report: Report, kind: str, url: str, timeout: float) -> None:
    """Which master key ids wrap the store's data keys (read without opening anything sealed); no
    line for a store without data keys when no keys are set."""
    from ..encryption_admin.rotation import key_ids_doctor_line

    try:
        with existing_router(kind, url=url, connect_timeout=timeout) as router:
            line = key_ids_doctor_line(getattr(router.store, "inner", router.store), router.encryption)
    except (OmnisyncError, NotImplementedError) as exc:
        line = ("warn", f"key ids not read: {exc}", "")
    if line is not None:
        report.add("encryption", *line)


HELP = "check a deployment's store: reachable, schema, cluster or pooler, version, latency, clock; say what to fix (exit 1 if a check fails)"
