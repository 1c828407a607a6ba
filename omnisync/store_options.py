"""The options a MemoryRouter passes to its store, checked when the router is made.

Every network store takes the same two waits, in seconds: ``connect_timeout`` (to open a
connection) and ``timeout`` (for any one read or write to answer). A server that goes
silent then becomes a StoreError within them instead of holding a run forever. Beyond those,
a kind takes the options its registry entry names, and its client's where the entry says
how to tell them (Redis and MongoDB); the SQL and in-process stores take no more.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigurationError
from .stores.registry import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, KINDS, WAITS, load

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_TIMEOUT", "WAITS", "check_options"]


def check_options(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the waits filled in; a ConfigurationError naming what is accepted otherwise."""
    if not KINDS[kind].takes_options:
        if options:
            raise ConfigurationError(f"MemoryRouter({kind!r}) takes no options; it got {_names(options)}")
        return {}
    checked = dict(options)
    for name, default in zip(WAITS, (DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT)):
        value = checked.setdefault(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigurationError(f"MemoryRouter({kind!r}) option {name} must be a positive number of seconds, not {value!r}")
    unknown = [name for name in checked if name not in WAITS and name not in KINDS[kind].own_options and not _client_accepts(kind, name, checked[name])]
    if unknown:
        raise ConfigurationError(
            f"MemoryRouter({kind!r}) does not take {_names(unknown)}; it takes {_accepted(kind)}"
        )
    return checked


def _client_accepts(kind: str, name: str, value: Any) -> bool:
    accepts = KINDS[kind].client_accepts
    return accepts is not None and bool(load(accepts)(name, value))


def _accepted(kind: str) -> str:
    own = ", ".join((*WAITS, *KINDS[kind].own_options))
    client = KINDS[kind].client
    return f"{own} and {client}'s options" if client else f"{own} only"


def _names(names: Any) -> str:
    return ", ".join(sorted(names))
