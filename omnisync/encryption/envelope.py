"""One encrypted value as text: ``osx1.<data key id>.<base64 of nonce + AES-GCM ciphertext>``.

The associated data names the value's place, so a value moved elsewhere does not open.
``cryptography`` is imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import DecryptionError, MissingDependencyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "osx1."
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


def place(*parts: object) -> bytes:
    """The associated data of a value kept at ``parts`` (agent, session, where, field)."""
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def seal(key: bytes, data_key_id: str, plaintext: bytes, where: bytes) -> str:
    """``plaintext`` encrypted with ``key`` and bound to ``where``, as envelope text."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = aesgcm(key).encrypt(nonce, plaintext, where)
    return f"{PREFIX}{data_key_id}.{base64.b64encode(nonce + sealed).decode()}"


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def data_key_id_of(envelope: str) -> str:
    return envelope[len(PREFIX) :].partition(".")[0]


def open_sealed(key: bytes, envelope: str, where: bytes, describe: str) -> bytes:
    """The plaintext of ``envelope``; DecryptionError naming ``describe`` when the key or place does not fit."""
    from cryptography.exceptions import InvalidTag

    try:
        raw = base64.b64decode(envelope[len(PREFIX) :].partition(".")[2], validate=True)
        return aesgcm(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], where)
    except (InvalidTag, binascii.Error, ValueError):
        raise DecryptionError(
            f"{describe} does not decrypt: it was moved from another place (agent, session, seq or record) or altered. "
            "It was left as it is."
        ) from None
