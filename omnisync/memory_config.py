"""memory_config: how much history a run is given, and what happens to the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._validate import only_keys, positive_int
from .errors import ConfigurationError

MEMORY_MODES = ("sliding_window", "token_budget")
RETENTION_POLICIES = ("keep", "delete")
DEFAULT_VALUE = 10_000
MEMORY_KEYS = ("mode", "value", "summary")
SUMMARY_KEYS = ("enabled", "retention_policy")
SUMMARY_DEFAULTS: dict[str, Any] = {"enabled": False, "retention_policy": "keep"}


@dataclass(frozen=True)
class MemoryConfig:
    mode: Literal["sliding_window", "token_budget"] = "sliding_window"
    value: int = DEFAULT_VALUE
    summary_enabled: bool = False
    retention_policy: str = "keep"

    @property
    def max_messages(self) -> int | None:
        return self.value if self.mode == "sliding_window" else None

    @property
    def max_tokens(self) -> int | None:
        return self.value if self.mode == "token_budget" else None

    @classmethod
    def from_dict(cls, config: Any) -> "MemoryConfig":
        """Merge ``config`` with the defaults one level deep, and validate it.

        A key left out keeps its default; a ``summary`` given replaces the default summary
        as a whole, and a key left out of it takes the summarizer's default.
        """
        if config is None:
            return cls()
        if not isinstance(config, dict):
            raise ConfigurationError(f"memory_config must be a dict with keys {', '.join(MEMORY_KEYS)}, not {type(config).__name__}")
        only_keys("memory_config", config, MEMORY_KEYS)
        mode = config.get("mode", "sliding_window")
        if mode not in MEMORY_MODES:
            modes = ", ".join(repr(m) for m in MEMORY_MODES)
            raise ConfigurationError(f"Invalid memory mode: {mode}. Must be one of {{{modes}}}.")
        value = config.get("value", DEFAULT_VALUE)
        if not positive_int(value):
            raise ConfigurationError(f"memory_config value must be a positive whole number (messages or tokens), not {value!r}")
        summary = config.get("summary", SUMMARY_DEFAULTS)
        if not isinstance(summary, dict):
            raise ConfigurationError(f"memory_config summary must be a dict with keys {', '.join(SUMMARY_KEYS)}, not {summary!r}")
        only_keys("memory_config summary", summary, SUMMARY_KEYS)
        enabled = summary.get("enabled", SUMMARY_DEFAULTS["enabled"])
        if not isinstance(enabled, bool):
            raise ConfigurationError(f"memory_config summary enabled must be True or False, not {enabled!r}")
        policy = summary.get("retention_policy", SUMMARY_DEFAULTS["retention_policy"])
        if policy not in RETENTION_POLICIES:
            raise ConfigurationError(
                f"Invalid retention_policy: {policy}. Must be one of: {', '.join(RETENTION_POLICIES)}"
            )
        return cls(mode=mode, value=value, summary_enabled=enabled, retention_policy=policy)
