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
SUMMARY_KEYS = ("enabled", "retention_policy", "max_tokens", "model", "instructions")
DEFAULT_SUMMARY_MAX_TOKENS = 512  # room for a few sentences; a small local model otherwise writes until its context is full
SUMMARY_DEFAULTS: dict[str, Any] = {"enabled": False, "retention_policy": "keep"}


@dataclass(frozen=True)
class MemoryConfig:
    mode: Literal["sliding_window", "token_budget"] = "sliding_window"
    value: int = DEFAULT_VALUE
    summary_enabled: bool = False
    retention_policy: str = "keep"
    summary_max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS
    summary_model: str | None = None  # None: the agent's model
    summary_instructions: str | None = None  # None: the summarizer's own prompt

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
        max_tokens = summary.get("max_tokens", DEFAULT_SUMMARY_MAX_TOKENS)
        if not positive_int(max_tokens):
            raise ConfigurationError(
                f"memory_config summary max_tokens must be a positive whole number of tokens a summary may take "
                f"(default {DEFAULT_SUMMARY_MAX_TOKENS}), not {max_tokens!r}"
            )
        return cls(
            mode=mode,
            value=value,
            summary_enabled=enabled,
            retention_policy=policy,
            summary_max_tokens=max_tokens,
            summary_model=_optional_text(summary, "model", "a model name of the agent's endpoint; leave it out to use the agent's model"),
            summary_instructions=_optional_text(summary, "instructions", "the summarizer's prompt; leave it out for the default"),
        )


def _optional_text(summary: dict[str, Any], key: str, what: str) -> str | None:
    value = summary.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"memory_config summary {key} must be a non-empty string ({what}), not {value!r}")
    return value
