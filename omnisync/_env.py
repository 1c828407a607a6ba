"""The one place omnisync reads environment variables.

Arguments always win; these are read only when an argument was left out.
"""

from __future__ import annotations

import os

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _get(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def variable(name: str) -> str | None:
    """A variable a store kind's registry entry names (its URL's, e.g. ``DATABASE_URL``)."""
    return _get(name)


def encryption_keys() -> str | None:
    """``OMNISYNC_ENCRYPTION_KEYS``: set, a router encrypts at rest (:mod:`omnisync.encryption`)."""
    return _get("OMNISYNC_ENCRYPTION_KEYS")


def mongodb_db_name() -> str:
    return _get("MONGODB_DB_NAME") or "omnisync"


def mongodb_collection() -> str:
    return _get("MONGODB_COLLECTION") or "messages"


def redis_prefix() -> str:
    return _get("OMNISYNC_REDIS_PREFIX") or "omnisync"


def openai_base_url() -> str:
    return _get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL


def openai_api_key() -> str | None:
    return _get("OPENAI_API_KEY")


def openai_org_id() -> str | None:
    """The organization sent as ``OpenAI-Organization`` when model_config names none (as openai-python reads it)."""
    return _get("OPENAI_ORG_ID")


def openai_project_id() -> str | None:
    """The project sent as ``OpenAI-Project`` when model_config names none (as openai-python reads it)."""
    return _get("OPENAI_PROJECT_ID")


def model_timeout() -> str | None:
    """Seconds a model call may wait for the server when model_config sets no ``timeout`` (checked by ModelConfig)."""
    return _get("OMNISYNC_MODEL_TIMEOUT")


def ca_bundle() -> str | None:
    """The CA bundle requests would use from the environment."""
    return _get("REQUESTS_CA_BUNDLE") or _get("CURL_CA_BUNDLE")


def tiktoken_cache_dir() -> str | None:
    """Where tiktoken keeps its encodings, as tiktoken reads it: the first of ``TIKTOKEN_CACHE_DIR``
    and ``DATA_GYM_CACHE_DIR`` that is set ("" when set empty: no cache), None when neither is."""
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if name in os.environ:
            return os.environ[name]
    return None


def aio_threads() -> str | None:
    """Worker threads of omnisync.aio's pool (checked by omnisync._aio_pool)."""
    return _get("OMNISYNC_AIO_THREADS")


def serve_tokens() -> str | None:
    """Bearer tokens of ``omnisync serve``, one ``TOKEN AGENT[,AGENT...]`` per line or ``;``-separated."""
    return _get("OMNISYNC_SERVE_TOKENS")


def serve_worker() -> str | None:
    """What ``omnisync serve --workers N`` hands each worker process (JSON, set by the command itself)."""
    return _get("OMNISYNC_SERVE_WORKER")


def capture_message_content() -> bool:
    """``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``: spans may carry messages (omnisync.telemetry)."""
    return (_get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") or "").strip().lower() == "true"
