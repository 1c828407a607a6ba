"""model_config, validated when the agent is built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from .. import _env
from ..errors import ConfigurationError
from ..redact import redact_url
from .extra_body import check_extra_body
from .http_options import ApiKey, check_api_key, check_header_value, check_headers, check_query, check_session, shown

if TYPE_CHECKING:
    import requests

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
CLIENT_OPTIONS = (
    "provider",
    "model",
    "base_url",
    "api_key",
    "organization",
    "project",
    "default_headers",
    "default_query",
    "extra_body",
    "http_session",
    "timeout",
    "deadline",
    "max_retries",
)
MERGED_OPTIONS = ("default_headers", "default_query", "extra_body")  # with_options adds to these, as openai-python's does
DEFAULT_TIMEOUT = 60.0
DEFAULT_DEADLINE = 600.0  # seconds for a whole call, retries included: a server trickling its body cannot hold a run
DEFAULT_MAX_RETRIES = 2


@dataclass(frozen=True)
class ModelConfig:
    """Which model to call, where, and how.

    ``api_key`` is a string, a callable that returns one before each request (short-lived
    tokens), or None for no ``Authorization`` header. ``http_session`` is a
    ``requests.Session`` of yours (proxies, mTLS, custom auth): omnisync uses it from every
    thread and never closes it.
    """

    model: str
    provider: str = "openai"
    base_url: str = _env.OPENAI_DEFAULT_BASE_URL
    api_key: ApiKey | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    sampling: dict[str, Any] = field(default_factory=dict)
    deadline: float = DEFAULT_DEADLINE
    organization: str | None = None
    project: str | None = None
    default_headers: dict[str, str] = field(default_factory=dict)
    default_query: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)  # a server's own options, merged into every request body
    http_session: requests.Session | None = None

    def __repr__(self) -> str:
        key = None if self.api_key is None else "***" if isinstance(self.api_key, str) else "<callable>"
        extra = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("organization", self.organization),
                ("project", self.project),
                ("default_headers", shown(self.default_headers)),
                ("default_query", shown(self.default_query)),
                ("extra_body", shown(self.extra_body)),
                ("http_session", self.http_session),
            )
            if value
        )
        return (
            f"ModelConfig(model={self.model!r}, provider={self.provider!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={key}, timeout={self.timeout:g}, deadline={self.deadline:g}, "
            f"max_retries={self.max_retries}, sampling={self.sampling!r}{extra})"
        )

    def with_options(self, **changes: Any) -> "ModelConfig":
        """A copy with ``changes`` applied, checked as model_config is.

        ``default_headers``, ``default_query`` and ``extra_body`` are added to the ones this config
        has (a name given None is removed); any other option replaces its value, and None unsets a sampling
        option: ``config.with_options(model="gpt-5.4", response_format=None)``.
        """
        options = self._options()
        for name in MERGED_OPTIONS:
            if isinstance(changes.get(name), dict):
                merged = {**options[name], **changes.pop(name)}
                options[name] = {key: value for key, value in merged.items() if value is not None}
        return ModelConfig.from_dict({**options, **changes})

    def _options(self) -> dict[str, Any]:
        """The model_config this config is, resolved (the key and base URL the environment gave included)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "organization": self.organization,
            "project": self.project,
            "default_headers": dict(self.default_headers),
            "default_query": dict(self.default_query),
            "extra_body": dict(self.extra_body),
            "http_session": self.http_session,
            "timeout": self.timeout,
            "deadline": self.deadline,
            "max_retries": self.max_retries,
            **self.sampling,
        }

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
        # Left out, the key comes from OPENAI_API_KEY; None is no key, so another provider never gets that one.
        api_key = check_api_key(config["api_key"]) if "api_key" in config else _env.openai_api_key()
        default_headers = check_headers(config.get("default_headers"))
        if api_key is None and urlparse(base_url).hostname == "api.openai.com" and not _has_header(default_headers, "authorization"):
            raise ConfigurationError(
                "OpenAI's API needs a key: pass model_config={'api_key': ...} or set OPENAI_API_KEY"
                + (" (api_key=None sends none)" if "api_key" in config else "")
                + ". (A local OpenAI-compatible server may need none: set base_url or OPENAI_BASE_URL to it.)"
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
            organization=_header_option(config, "organization", "OPENAI_ORG_ID", _env.openai_org_id),
            project=_header_option(config, "project", "OPENAI_PROJECT_ID", _env.openai_project_id),
            default_headers=default_headers,
            default_query=check_query(config.get("default_query")),
            extra_body=check_extra_body(config.get("extra_body"), SAMPLING_OPTIONS),
            http_session=check_session(config.get("http_session")),
        )


def _header_option(config: dict[str, Any], option: str, variable: str, read: Callable[[], str | None]) -> str | None:
    """organization or project: as given (None sends none), else from the environment as openai-python reads it."""
    if option in config:
        return check_header_value(f"model_config {option}", config[option])
    return check_header_value(f"{variable} (read because model_config has no {option})", read())


def _has_header(headers: dict[str, str], name: str) -> bool:
    return any(key.lower() == name for key in headers)


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
