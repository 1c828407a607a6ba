"""``omnisync keys``: which master keys wrap the store's data keys, rotating them, retiring one."""

from __future__ import annotations

import argparse

from ..encryption.keys import Encryption
from ..encryption_admin.rotation import key_ids_in_use, rotate
from ..router import MemoryRouter, existing_router
from .connect import choose_kind
from .errors import CommandError, UsageError

ACTIONS = ("list", "rotate", "retire")
HELP = "encryption keys: list the key ids in use, rotate --to KID (re-wraps data keys, content untouched), retire KID"


def keys(args: argparse.Namespace, router: MemoryRouter) -> int:
    store, agents = router.store, args.agent or None
    of = f" of agent(s) {', '.join(agents)}" if agents else ""
    if args.action == "list":
        counts = key_ids_in_use(store, agents)
        print("\n".join(f"{kid}\t{count} sessions" for kid, count in sorted(counts.items())) or f"no data keys{of}: {'they are' if agents else 'the store is'} not encrypted")
        return 0
    if args.action == "rotate":
        if not args.to:
            raise UsageError("keys rotate needs --to KID, the key id to wrap every data key with")
        print(f"rotated{of}: {rotate(store, _encryption(router), args.to, agents=agents).describe()}; counts verified")
        return 0
    if not args.key_id:
        raise UsageError("keys retire needs the KID to retire")
    counts = key_ids_in_use(store, agents)
    if counts[args.key_id]:
        raise CommandError(
            f"{counts[args.key_id]} data keys{of} are still wrapped by {args.key_id!r}: run `omnisync keys rotate --to NEW` first. Nothing was changed."
        )
    if agents:
        print(f"{args.key_id!r} wraps no data key{of} (theirs are wrapped by: {', '.join(sorted(counts)) or 'none'}); other agents were not counted")
    else:
        print(f"{args.key_id!r} wraps no data key: remove it from OMNISYNC_ENCRYPTION_KEYS (every data key is wrapped by: {', '.join(sorted(counts)) or 'none'})")
    return 0


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("action", choices=ACTIONS)
    sub.add_argument("key_id", nargs="?", metavar="KID", help="retire: the key id no data key may be wrapped by")
    sub.add_argument("--to", metavar="KID", help="rotate: the key id to wrap every data key with (must be in OMNISYNC_ENCRYPTION_KEYS)")
    sub.add_argument("--agent", action="append", metavar="NAME", help="only the data keys of this agent's sessions (repeatable; default: the whole store)")


def _encryption(router: MemoryRouter) -> Encryption:
    if router.encryption is None:
        raise UsageError("set OMNISYNC_ENCRYPTION_KEYS (kid:base64,...) with the old and the new key to rotate")
    return router.encryption


ENCRYPT_HELP = "encrypt a store written in clear, in place, a page at a time (resumable: run it again to finish), with OMNISYNC_ENCRYPTION_KEYS"


def encrypt(args: argparse.Namespace, timeout: float) -> int:
    from ..encryption_admin.migration import encrypt_in_place
    from ..stores.encrypted import EncryptedStore

    encryption = Encryption.from_environment(accept_plaintext=True)
    if encryption is None:
        raise UsageError("set OMNISYNC_ENCRYPTION_KEYS (kid:base64,...) and OMNISYNC_ENCRYPTION_KEY_ID to the key to encrypt with")
    kind = choose_kind(getattr(args, "store", None), getattr(args, "url", None))
    with existing_router(kind, url=getattr(args, "url", None), encryption=encryption, connect_timeout=timeout) as router:
        store = router.store
        assert isinstance(store, EncryptedStore)
        print(f"encrypted with {encryption.current!r}: {encrypt_in_place(store, args.page_size).describe()}; nothing left in clear")
    return 0
