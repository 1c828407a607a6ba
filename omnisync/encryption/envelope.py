"""One encrypted value as text: ``osx1.<data key id>.<base64 of nonce + AES-GCM ciphertext>``.

The associated data names the value's place, so a value moved elsewhere does not open.
``cryptography`` is imported on first use.
"""

from __future__ import annotations

import binascii
import json
import os
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import DecryptionError, MissingDependencyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "osx1."
FIELD_NAMES = frozenset({"content", "tool_calls", "metadata"})
NONCE_BYTES = 12


def aesgcm(key: bytes) -> "AESGCM":
    """An AES-GCM cipher for ``key``, built once per key."""
    return _cipher(key)


@lru_cache(maxsize=4096)
def _cipher(key: bytes) -> "AESGCM":
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise MissingDependencyError("encryption at rest needs the cryptography package: pip install 'omnisync[encryption]'") from None
    return AESGCM(key)


@lru_cache(maxsize=1)
def _invalid_tag() -> type[Exception]:
    from cryptography.exceptions import InvalidTag

    return InvalidTag


def place(*parts: object) -> bytes:
    """The associated data of a value kept at ``parts`` (agent, session, where, field)."""
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def place_of(*parts: object) -> Callable[..., bytes]:
    """:func:`place` of ``parts`` and then more, the first ones encoded once (what a page of
    messages of one session shares): ``place_of(a, s)(seq, field) == place(a, s, seq, field)``."""
    head = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))[:-1]

    def then(*more: object) -> bytes:
        if len(more) == 2 and type(more[0]) is int and more[1] in FIELD_NAMES:  # a message's field: JSON's text, written directly
            return f'{head},{more[0]},"{more[1]}"]'.encode()
        return (head + "," + json.dumps(more, ensure_ascii=False, separators=(",", ":"))[1:]).encode()

    return then


def seal(key: bytes, data_key_id: str, plaintext: bytes, where: bytes) -> str:
    """``plaintext`` encrypted with ``key`` and bound to ``where``, as envelope text."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = aesgcm(key).encrypt(nonce, plaintext, where)
    return f"{PREFIX}{data_key_id}.{binascii.b2a_base64(nonce + sealed, newline=False).decode()}"


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def data_key_id_of(envelope: str) -> str:
    return envelope[len(PREFIX) :].partition(".")[0]


def open_sealed(key: bytes, envelope: str, where: bytes, describe: str) -> bytes:
    """The plaintext of ``envelope``; DecryptionError naming ``describe`` when the key or place does not fit."""
    try:
        raw = binascii.a2b_base64(envelope[envelope.index(".", len(PREFIX)) + 1 :])
        return aesgcm(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], where)
    except (_invalid_tag(), binascii.Error, ValueError):
        raise DecryptionError(
            f"{describe} does not decrypt: it was moved from another place (agent, session, seq or record) or altered. "
            "It was left as it is."
        ) from None
