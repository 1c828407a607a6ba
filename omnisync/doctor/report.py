"""What ``omnisync doctor`` finds: one Check per question asked of a deployment, and the Report of them all."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"
STATUSES = (OK, WARN, FAIL)
_SHOWN = {OK: "ok", WARN: "warn", FAIL: "FAIL"}


@dataclass(frozen=True)
class Check:
    """One answer: ``name`` (reachable, schema, topology, server, latency, clock), its status,
    what was seen, and what to do when it is not ok."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def line(self, width: int) -> str:
        text = f"{_SHOWN[self.status]:<4}  {self.name:<{width}}  {self.detail}"
        return f"{text}; fix: {self.fix}" if self.fix else text


@dataclass
class Report:
    """The checks of one store, in the order they ran; a failed connection ends the list."""

    kind: str
    url: str  # passwords already masked
    checks: list[Check] = field(default_factory=list)

    def add(self, name: str, status: str, detail: str, fix: str = "") -> Check:
        check = Check(name, status, detail, fix)
        self.checks.append(check)
        return check

    @property
    def ok(self) -> bool:
        """No check failed (warnings are advice: the store works)."""
        return all(check.status != FAIL for check in self.checks)

    def lines(self) -> list[str]:
        width = max((len(check.name) for check in self.checks), default=0)
        return [f"omnisync doctor: {self.kind} store {self.url}", *(check.line(width) for check in self.checks)]

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "ok": self.ok, "checks": [asdict(check) for check in self.checks]}
