"""Encryption at rest: envelope encryption of what a store keeps, bound to its place.

:class:`Encryption` holds the master keys; ``MemoryRouter(..., encryption=...)`` puts an
:class:`~omnisync.stores.encrypted.EncryptedStore` around any store. Nothing here imports
``cryptography`` until a value is sealed or opened (the ``omnisync[encryption]`` extra).
See ``docs/encryption.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_names

_HOMES = {"Encryption": "keys"}

__all__ = ["Encryption"]

__getattr__: Callable[[str], Any] = lazy_names(__name__, _HOMES)

if TYPE_CHECKING:
    from .keys import Encryption as Encryption
