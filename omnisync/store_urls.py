"""Checks on a store URL made before anything is opened, so a mistake says how to write it."""

from __future__ import annotations

from .errors import ConfigurationError
from .redact import redact_url
from .stores.registry import KINDS, kind_named_by, load


def check_url(kind: str, url: str) -> str:
    """``url`` if it suits a store of ``kind``; a ConfigurationError naming the right form otherwise.

    What every kind checks is here; what one kind checks besides is its registry entry's ``check_url``."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(f"MemoryRouter({kind!r}) got an empty URL; use a URL such as {_example(kind)}")
    belongs_to = kind_named_by(url)
    if belongs_to is not None and belongs_to != kind:
        router = f"MemoryRouter({belongs_to!r}, url=...)" if KINDS[belongs_to].networked else f"MemoryRouter({belongs_to!r})"
        raise ConfigurationError(
            f"{redact_url(url)!r} is a {belongs_to} URL, but MemoryRouter({kind!r}) was asked for: "
            f"use {router}, or give a {kind} URL such as {_example(kind)}"
        )
    own_check = KINDS[kind].check_url
    if own_check is not None:
        load(own_check)(url)
    return url


def _example(kind: str) -> str:
    return KINDS[kind].example_url or "none (in_memory takes no URL)"
