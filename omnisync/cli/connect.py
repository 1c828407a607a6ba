"""Which store a command talks to: ``--store``/``--url``, a URL's scheme, or the environment.

The rules are MemoryRouter's, so the command line sees what the agents see: ``--store KIND``
reads that kind's variable (``DATABASE_URL``, ``REDIS_URL``, ``MONGODB_URI``) unless ``--url``
is given; ``--url`` alone lets its scheme pick the kind; with neither, the one store variable
that is set picks it. Several set, or none, is an error that names them: never a guess.
"""

from __future__ import annotations

from ..redact import redact_url
from ..router import MemoryRouter
from ..stores.registry import KINDS, NETWORKED, kind_named_by
from .errors import UsageError

CLI_KINDS = NETWORKED
"""The kinds the command line can reach: an ``in_memory`` store lives only inside its process."""

_ENV_URLS = tuple((str(KINDS[kind].environment), kind, KINDS[kind].url_from_environment) for kind in NETWORKED)
_IN_PROCESS = "memory: is an in-process store: nothing outside the process that made it can read it"


def kind_of_url(url: str) -> str:
    """The store kind a URL's scheme names (``postgresql+psycopg://`` is ``sql``)."""
    kind = kind_named_by(url)
    if kind is not None and not KINDS[kind].networked:
        raise UsageError(_IN_PROCESS)
    if kind is None:
        raise UsageError(
            f"cannot tell the store from {redact_url(url)!r}: use a URL such as sqlite:///./memory.db, "
            "postgresql://user:pass@host/db, redis://host:6379/0 or mongodb://host:27017"
        )
    return kind


def kind_from_environment() -> str:
    """The kind whose URL variable is set, when exactly one is."""
    found = [(name, kind) for name, kind, read in _ENV_URLS if read()]
    if len(found) == 1:
        return found[0][1]
    if not found:
        variables = ", ".join(name for name, _, _ in _ENV_URLS)
        raise UsageError(f"no store given: pass --store KIND (and --url URL), or set one of {variables}")
    names = " and ".join(name for name, _ in found)
    kinds = "|".join(kind for _, kind in found)
    raise UsageError(f"{names} are set: pass --store {kinds} to choose one")


def open_router(kind: str | None, url: str | None, timeout: float) -> MemoryRouter:
    """A router on the chosen store, made if it is not there yet; connections fail within ``timeout`` seconds where the driver allows."""
    kind = choose_kind(kind, url)
    return MemoryRouter(kind, url=url, connect_timeout=timeout)


def choose_kind(kind: str | None, url: str | None) -> str:
    """The kind ``--store`` names, checked against ``--url``; else the URL's; else the environment's."""
    if kind is None:
        return kind_of_url(url) if url else kind_from_environment()
    if url:
        named = kind_of_url(url)
        if named != kind:
            raise UsageError(f"--store {kind} does not match the URL {redact_url(url)!r} (a {named} URL)")
    return kind


def url_of(kind: str, url: str | None) -> str | None:
    """``url``, or the kind's environment variable, as MemoryRouter reads it."""
    return url or next(read() for _, named, read in _ENV_URLS if named == kind)
