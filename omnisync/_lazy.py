"""A package's public names imported from their modules on first use (PEP 562's module ``__getattr__``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str], computed: Mapping[str, Callable[[], Any]] = {}) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: a name of ``homes`` comes from the module named there
    (relative to the package), a name of ``computed`` from calling its function; either is kept
    in the package's namespace, so it is looked up once."""
    namespace = vars(importlib.import_module(package))

    def __getattr__(name: str) -> Any:
        if name in homes:
            value = getattr(importlib.import_module(f".{homes[name]}", package), name)
        elif name in computed:
            value = computed[name]()
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__
