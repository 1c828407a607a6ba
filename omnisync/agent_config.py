"""agent_config, validated when the agent is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._validate import only_keys, positive_int
from .errors import ConfigurationError
from .memory_config import MemoryConfig

AGENT_KEYS = ("memory_config", "run_retention_days", "max_steps", "budget", "context_management", "run_lease_seconds", "session_wait_seconds", "capture_message_content")
BUDGET_KEYS = ("max_tool_calls", "max_tokens", "max_steps")
CONTEXT_KEYS = ("enabled", "max_context_tokens", "reserve_output_tokens", "min_tool_result_chars")
DEFAULT_MAX_STEPS = 20
DEFAULT_RETENTION_DAYS = 30
DEFAULT_LEASE_SECONDS = 300
DEFAULT_SESSION_WAIT_SECONDS = 30


@dataclass(frozen=True)
class ContextConfig:
    """Keeps each model call under a token budget (defaults suit a 128k-token model)."""

    enabled: bool = True
    max_context_tokens: int = 128_000
    reserve_output_tokens: int = 8_000
    min_tool_result_chars: int = 200

    @property
    def budget(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


@dataclass(frozen=True)
class AgentConfig:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    run_retention_days: int | None = DEFAULT_RETENTION_DAYS
    max_steps: int = DEFAULT_MAX_STEPS
    budget: dict[str, int | None] = field(default_factory=dict)
    context: ContextConfig = field(default_factory=ContextConfig)
    run_lease_seconds: int = DEFAULT_LEASE_SECONDS
    session_wait_seconds: int = DEFAULT_SESSION_WAIT_SECONDS
    capture_message_content: bool = False  # spans may carry messages, redacted (omnisync.telemetry.content)

    @classmethod
    def from_dict(cls, config: Any) -> "AgentConfig":
        if config is None:
            return cls()
        if not isinstance(config, dict):
            raise ConfigurationError(f"agent_config must be a dict with keys {', '.join(AGENT_KEYS)}, not {type(config).__name__}")
        only_keys("agent_config", config, AGENT_KEYS)
        retention = config.get("run_retention_days", DEFAULT_RETENTION_DAYS)
        if retention is not None and not positive_int(retention):
            raise ConfigurationError(
                f"run_retention_days must be a positive whole number of days, or None to keep every run record; not {retention!r}"
            )
        max_steps = config.get("max_steps", DEFAULT_MAX_STEPS)
        if not positive_int(max_steps):
            raise ConfigurationError(f"max_steps must be a positive whole number of model calls per run, not {max_steps!r}")
        lease = config.get("run_lease_seconds", DEFAULT_LEASE_SECONDS)
        if not positive_int(lease):
            raise ConfigurationError(f"run_lease_seconds must be a positive whole number, not {lease!r}")
        session_wait = config.get("session_wait_seconds", DEFAULT_SESSION_WAIT_SECONDS)
        if isinstance(session_wait, bool) or not isinstance(session_wait, int) or session_wait < 0:
            raise ConfigurationError(
                f"session_wait_seconds must be a whole number of seconds, 0 or more, that a run waits for a busy session; not {session_wait!r}"
            )
        capture = config.get("capture_message_content", False)
        if not isinstance(capture, bool):
            raise ConfigurationError(f"capture_message_content must be True or False (whether OpenTelemetry spans may carry messages), not {capture!r}")
        return cls(
            memory=MemoryConfig.from_dict(config.get("memory_config")),
            run_retention_days=retention,
            max_steps=max_steps,
            budget=_budget(config.get("budget")),
            context=_context(config.get("context_management")),
            run_lease_seconds=lease,
            session_wait_seconds=session_wait,
            capture_message_content=capture,
        )


def _budget(budget: Any) -> dict[str, int | None]:
    if budget is None:
        return {}
    if not isinstance(budget, dict):
        raise ConfigurationError(f"budget must be a dict with keys {', '.join(BUDGET_KEYS)}, not {budget!r}")
    only_keys("budget", budget, BUDGET_KEYS)
    for key, value in budget.items():
        if value is not None and not positive_int(value):
            raise ConfigurationError(f"budget {key} must be a positive whole number or None, not {value!r}")
    return dict(budget)


def _context(context: Any) -> ContextConfig:
    if context is None:
        return ContextConfig()
    if not isinstance(context, dict):
        raise ConfigurationError(f"context_management must be a dict with keys {', '.join(CONTEXT_KEYS)}, not {context!r}")
    only_keys("context_management", context, CONTEXT_KEYS)
    merged = {**ContextConfig().__dict__, **context}
    if not isinstance(merged["enabled"], bool):
        raise ConfigurationError(f"context_management enabled must be True or False, not {merged['enabled']!r}")
    for key in CONTEXT_KEYS[1:]:
        if not positive_int(merged[key]):
            raise ConfigurationError(f"context_management {key} must be a positive whole number, not {merged[key]!r}")
    if merged["reserve_output_tokens"] >= merged["max_context_tokens"]:
        raise ConfigurationError("context_management reserve_output_tokens must be smaller than max_context_tokens")
    return ContextConfig(**merged)
