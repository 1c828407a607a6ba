"""model_config, validated when the agent is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from .. import _env
from ..errors import ConfigurationError
from ..redact import redact_url

PROVIDERS = ("openai",)
SAMPLING_OPTIONS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
    "reasoning_effort",
    "response_format",
)
CLIENT_OPTIONS = ("provider", "model", "base_url", "api_key", "timeout", "deadline", "max_retries")
DEFAULT_TIMEOUT = 60.0
DEFAULT_DEADLINE = 600.0  # seconds for a whole call, retries included: a server trickling its body cannot hold a run
DEFAULT_MAX_RETRIES = 2


@dataclass(frozen=True)
class ModelConfig:
    """Which model to call, where, and how."""

    model: str
    provider: str = "openai"
    base_url: str = _env.OPENAI_DEFAULT_BASE_URL
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    sampling: dict[str, Any] = field(default_factory=dict)
    deadline: float = DEFAULT_DEADLINE

    def __repr__(self) -> str:
        return (
            f"ModelConfig(model={self.model!r}, provider={self.provider!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={'***' if self.api_key else None}, timeout={self.timeout:g}, deadline={self.deadline:g}, "
            f"max_retries={self.max_retries}, sampling={self.sampling!r})"
        )

    @classmethod
    def from_dict(cls, config: Any) -> "ModelConfig":
        if isinstance(config, ModelConfig):
            return config
        if not isinstance(config, dict):
            raise ConfigurationError(
                f"model_config must be a dict such as {{'provider': 'openai', 'model': 'gpt-5.4-mini'}}, not {type(config).__name__}"
            )
        unknown = sorted(set(config) - set(CLIENT_OPTIONS) - set(SAMPLING_OPTIONS))
        if unknown:
            raise ConfigurationError(
                f"Unknown model_config key(s): {', '.join(unknown)}. "
                f"Allowed: {', '.join(CLIENT_OPTIONS + SAMPLING_OPTIONS)}"
            )
        provider = config.get("provider", "openai")
        if provider not in PROVIDERS:
            raise ConfigurationError(
                f"Unknown provider: {provider!r}. omnisync speaks the OpenAI Chat Completions API: use "
                "provider 'openai', with base_url (or OPENAI_BASE_URL) for any compatible server."
            )
        model = config.get("model")
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError("model_config needs a model name, e.g. {'provider': 'openai', 'model': 'gpt-5.4-mini'}")
        base_url = (config.get("base_url") or _env.openai_base_url()).rstrip("/")
        if urlparse(base_url).scheme not in ("http", "https"):
            raise ConfigurationError(
                f"base_url must be an http(s) URL such as http://127.0.0.1:8080/v1, not {redact_url(base_url)!r}"
            )
        api_key = config.get("api_key") or _env.openai_api_key()
        if api_key is None and urlparse(base_url).hostname == "api.openai.com":
            raise ConfigurationError(
                "OpenAI's API needs a key: pass model_config={'api_key': ...} or set OPENAI_API_KEY. "
                "(A local OpenAI-compatible server may need none: set base_url or OPENAI_BASE_URL to it.)"
            )
        timeout = config["timeout"] if config.get("timeout") is not None else _timeout_from_environment()
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigurationError(f"model_config timeout must be a positive number of seconds, not {timeout!r}")
        deadline = config.get("deadline", DEFAULT_DEADLINE)
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or deadline <= 0:
            raise ConfigurationError(f"model_config deadline must be a positive number of seconds for a whole call, not {deadline!r}")
        max_retries = config.get("max_retries", DEFAULT_MAX_RETRIES)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= 10:
            raise ConfigurationError(f"model_config max_retries must be a whole number from 0 to 10, not {max_retries!r}")
        sampling = {key: config[key] for key in SAMPLING_OPTIONS if key in config and config[key] is not None}
        return cls(
            model=model,
            provider=provider,
            base_url=base_url,
            api_key=api_key,
            timeout=float(timeout),
            deadline=float(deadline),
            max_retries=max_retries,
            sampling=sampling,
        )


def _timeout_from_environment() -> float:
    text = _env.model_timeout()
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ConfigurationError(f"OMNISYNC_MODEL_TIMEOUT must be a positive number of seconds, not {text!r}")
    return seconds
