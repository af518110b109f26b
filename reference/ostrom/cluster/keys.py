"""Ed25519 key files of a cluster: one private key per principal, one public key ring.

``crypto.make_keys`` derives every key from a seed: right for a reproducible simulation,
wrong for processes that must not be able to sign for each other.  A cluster's keys come
from ``os.urandom`` (``seed`` only for tests that want the same keys twice), each written
to its own file, ``<principal>.key`` (hex of the 32-byte private key, mode 0600), and
the public keys of every principal to ``public.json``.  A key file has the node's format
(``service.identity``: 64 hex digits), so ``ostrom keygen`` and the cluster read the same
files, and is created as the node creates its keys: new or not at all, never through a
link (``identity.create_file``; docs/security.md).  A replica process reads its own
private key and the ring; the front reads the clients' keys and the ring.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom.consensus.crypto import KeyRing, Signer, derive_key, public_bytes
from ostrom.service.identity import KeyFileError, create_file, key_from_hex, save_key

__all__ = ["KeyFileError", "generate", "load_ring", "load_signer"]

_RING: Final = "public.json"
_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def generate(directory: Path, principals: Iterable[str], *, seed: int | None = None) -> None:
    """Write a fresh private key for each principal and the public ring; every file is
    created new (``FileExistsError`` if one is there: a key is never overwritten)."""
    directory.mkdir(parents=True, exist_ok=True)
    ring: dict[str, str] = {}
    for p in principals:
        if not _NAME.match(p):
            raise KeyFileError(f"not a principal name: {p!r}")
        key = (
            Ed25519PrivateKey.from_private_bytes(os.urandom(32))
            if seed is None
            else derive_key(seed, p)
        )
        save_key(key, directory / f"{p}.key")
        ring[p] = public_bytes(key).hex()
    ring_text = json.dumps(ring, sort_keys=True, indent=1) + "\n"
    create_file(directory / _RING, ring_text.encode(), 0o644)


def load_ring(directory: Path) -> KeyRing:
    path = directory / _RING
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        return KeyRing({str(k): bytes.fromhex(v) for k, v in doc.items()})
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise KeyFileError(f"{path}: not a readable key ring ({exc})") from None


def load_signer(directory: Path, principal: str) -> Signer:
    if not _NAME.match(principal):
        raise KeyFileError(f"not a principal name: {principal!r}")
    path = directory / f"{principal}.key"
    try:
        key = key_from_hex(path.read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError, KeyFileError) as exc:
        raise KeyFileError(f"{path}: not a readable private key ({exc})") from None
    return Signer(principal, key)
