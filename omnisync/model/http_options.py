"""What a model request carries besides its body: extra headers and query parameters, the key, a session.

Checked when model_config is built, so a bad header fails there and not as a connection
error retried at the first call. Values under names that look secret (``api-key``,
``X-Auth-Token``, ``sig``...) are redacted wherever omnisync shows text; a repr shows no value at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from ..errors import ApiKeyError, ConfigurationError
from ..redact import MASK, RecentSecrets, remember_secret

if TYPE_CHECKING:
    import requests

ApiKey = Union[str, Callable[[], str]]

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # an HTTP header name (RFC 9110 token)
_SECRET_NAME = re.compile(r"(?i)key|token|secret|auth|password|cookie|sig|credential")


def check_api_key(value: Any) -> ApiKey | None:
    """A non-empty string, a callable that returns one (called per request), or None for no key."""
    if value is None or (isinstance(value, str) and value):
        remember_secret(value)
        return value
    if callable(value) and not isinstance(value, str):
        return value  # type: ignore[no-any-return]
    raise ConfigurationError(
        "model_config api_key must be a non-empty string, a callable that returns one (called before each request, "
        f"for short-lived tokens), or None to send no key; not {type(value).__name__}"
    )


def call_api_key(key: ApiKey | None, minted: RecentSecrets) -> str | None:
    """The key to send with one request: a callable is called now, and what it returns is kept in ``minted``.

    ``minted`` (the client's) holds only the last few tokens, so a key minting one per
    request adds nothing without bound to what every redaction scans.
    """
    if key is None or isinstance(key, str):
        return key
    try:
        value = key()
    except Exception as exc:
        # The cause's message is not repeated here: a credential library's error may quote a token.
        raise ApiKeyError(
            f"the model_config api_key callable failed with {type(exc).__name__} (the exception chained to this one); "
            "no request was sent. Fix what the callable needs (credentials, network), or pass api_key as a string"
        ) from exc
    if not isinstance(value, str) or not value:
        raise ApiKeyError(f"the model_config api_key callable must return a non-empty string, not {type(value).__name__}")
    minted.add(value)
    return value


def check_headers(value: Any) -> dict[str, str]:
    """default_headers: header names and string values, as requests will send them."""
    headers = check_mapping("model_config default_headers", value, "names to strings such as {'HTTP-Referer': 'https://example.org'}")
    for name, item in headers.items():
        if not _TOKEN.match(name):
            raise ConfigurationError(f"model_config default_headers: {name!r} is not an HTTP header name (letters, digits and -_.!#$%&'*+^`|~)")
        if not isinstance(item, str) or any(c in item for c in "\r\n\0"):
            raise ConfigurationError(
                f"model_config default_headers[{name!r}] must be a string on one line, not {type(item).__name__}"
            )
    _remember_secret_values(headers)
    return dict(headers)


def check_query(value: Any) -> dict[str, str]:
    """default_query: parameter names and string (or number) values, added to every request's URL."""
    query = check_mapping("model_config default_query", value, "names to strings such as {'api-version': '2024-10-21'}")
    checked = {}
    for name, item in query.items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ConfigurationError(f"model_config default_query[{name!r}] must be a string or a number, not {type(item).__name__}")
        checked[name] = str(item)
    _remember_secret_values(checked)
    return checked


def check_header_value(source: str, value: Any) -> str | None:
    """organization and project: None, or a non-empty string sent as a header; ``source`` names where it came from."""
    if value is None or (isinstance(value, str) and value and not any(c in value for c in "\r\n\0")):
        return value
    raise ConfigurationError(f"{source} must be a non-empty string on one line, or None; not {value!r}")


def check_session(value: Any) -> requests.Session | None:
    if value is None:
        return None
    import requests  # only for a session given: building a config loads no HTTP library

    if isinstance(value, requests.Session):
        return value
    raise ConfigurationError(f"model_config http_session must be a requests.Session (yours to close), not {type(value).__name__}")


def shown(mapping: Mapping[str, str]) -> dict[str, str]:
    """A mapping as a repr shows it: names, never values."""
    return {name: MASK for name in mapping}


def check_mapping(where: str, value: Any, shape: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping with non-empty string names (None: an empty one); ``shape`` says what it should hold."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where} must be a dict of {shape}, not {type(value).__name__}")
    for name in value:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{where} names must be non-empty strings, not {name!r}")
    return value


def _remember_secret_values(mapping: Mapping[str, str]) -> None:
    for name, item in mapping.items():
        if _SECRET_NAME.search(name):
            remember_secret(item)
