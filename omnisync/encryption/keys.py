"""The master keys: given as arguments, or read from ``OMNISYNC_ENCRYPTION_KEYS`` and ``OMNISYNC_ENCRYPTION_KEY_ID``."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from .. import _env
from ..errors import ConfigurationError

KEY_BYTES = 32
KEYS_VARIABLE = "OMNISYNC_ENCRYPTION_KEYS"
KEY_ID_VARIABLE = "OMNISYNC_ENCRYPTION_KEY_ID"
_KEY_ID_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class Encryption:
    """Master keys for encryption at rest: ``Encryption(keys={"2026-12": key}, current="2026-12")``.

    Each key is 32 bytes (AES-256), named by a key id of letters, digits, ``-``, ``_`` or ``.``.
    New sessions' data keys are wrapped by ``current``; the other keys open data keys wrapped
    before a rotation. ``accept_plaintext=True`` (migration mode, what ``omnisync encrypt`` uses)
    reads values still in clear instead of refusing them. Give it to ``MemoryRouter(...,
    encryption=...)``. A key lost is data lost: nothing can open what it wrapped.
    """

    def __init__(self, keys: Mapping[str, bytes], current: str, *, accept_plaintext: bool = False) -> None:
        if not isinstance(keys, Mapping) or not keys:
            raise ConfigurationError("Encryption needs keys: a dict of key id to 32-byte key, e.g. {'2026-12': os.urandom(32)}")
        for key_id, key in keys.items():
            check_key_id(key_id)
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                size = f"{len(key)} bytes" if isinstance(key, bytes) else type(key).__name__
                raise ConfigurationError(f"encryption key {key_id!r} must be {KEY_BYTES} bytes, not {size}: make one with os.urandom(32)")
        if current not in keys:
            raise ConfigurationError(f"the current key id {current!r} is not one of the keys given ({', '.join(sorted(keys))})")
        self.keys: dict[str, bytes] = dict(keys)
        self.current: str = current
        self.accept_plaintext: bool = accept_plaintext

    @classmethod
    def from_environment(cls, *, accept_plaintext: bool = False) -> "Encryption | None":
        """The keys of ``OMNISYNC_ENCRYPTION_KEYS`` (``kid:base64,kid:base64``) with
        ``OMNISYNC_ENCRYPTION_KEY_ID`` as the current one (optional when there is one key); None
        when the keys variable is not set."""
        text = _env.variable(KEYS_VARIABLE)
        if text is None:
            return None
        keys = parse_keys(text)
        current = _env.variable(KEY_ID_VARIABLE)
        if current is None:
            if len(keys) > 1:
                raise ConfigurationError(f"{KEYS_VARIABLE} holds {len(keys)} keys: set {KEY_ID_VARIABLE} to the one new data keys are wrapped by")
            current = next(iter(keys))
        return cls(keys, current, accept_plaintext=accept_plaintext)

    def with_current(self, key_id: str) -> "Encryption":
        """The same keys with ``key_id`` as the current one (what a rotation wraps with)."""
        return Encryption(self.keys, key_id, accept_plaintext=self.accept_plaintext)

    def __repr__(self) -> str:  # never the keys themselves
        return f"Encryption(key_ids={sorted(self.keys)!r}, current={self.current!r})"


def check_key_id(key_id: object) -> str:
    """A key id, refused unless it is 1 to 64 of letters, digits, ``-``, ``_``, ``.``."""
    if not isinstance(key_id, str) or not key_id or len(key_id) > 64 or not set(key_id) <= _KEY_ID_CHARACTERS:
        raise ConfigurationError(f"an encryption key id must be 1 to 64 letters, digits, '-', '_' or '.', not {key_id!r}")
    return key_id


def parse_keys(text: str) -> dict[str, bytes]:
    """``kid:base64,kid:base64`` as a dict of key id to key (each checked by :class:`Encryption`)."""
    keys: dict[str, bytes] = {}
    for item in (part.strip() for part in text.split(",")):
        key_id, colon, encoded = item.partition(":")
        if not colon:
            raise ConfigurationError(f"{KEYS_VARIABLE} must be kid:base64 pairs separated by commas; {key_id[:12]!r}... has no ':'")
        try:
            keys[check_key_id(key_id.strip())] = base64.b64decode(encoded.strip(), validate=True)
        except binascii.Error:
            raise ConfigurationError(f"{KEYS_VARIABLE}: the key of {key_id!r} is not base64") from None
    return keys
