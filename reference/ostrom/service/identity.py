"""Who sent a command: Ed25519 envelopes over the canonical command, and key files.

An agent's command reaches the node wrapped in an *envelope*::

    {"agent": "alice", "seq": 7, "command": {...}, "signature": "<128 hex>",
     "public_key": "<64 hex>"}            # public_key: on join only

The signature covers ``SIGNING_DOMAIN + canonical(envelope without "signature")``: the
agent, its sequence number and the command (and the key being registered, on join); of a
propose or resubmit, the command without its payload, which its signed ``digest`` covers.
Binding ``agent`` stops one agent acting as another; binding ``seq`` makes every signed
envelope usable exactly once (the gate refuses a replayed or reordered seq); the domain
prefix keeps a command signature from ever being valid as any other ostrom signature
(a PBFT message is signed over its own canonical bytes, without this prefix).

The canonical encoding is the protocol's own (protocol/encoding.py), so an implementation
in another language signs the same bytes that its vote commitments hash.  Nothing here
does I/O but the key-file helpers (a file is created new, never through a link:
``create_file``); the checks never raise on hostile input.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ostrom.consensus.crypto import ed25519_verify
from ostrom.protocol.commands import PAYLOAD_FIELDS
from ostrom.protocol.encoding import canonical as _canonical
from ostrom.protocol.version import PROTOCOL_VERSION

__all__ = [
    "ENVELOPE_KEYS",
    "MAX_SEQ",
    "SIGNING_DOMAIN",
    "KeyFileError",
    "canonical",
    "check_private",
    "create_file",
    "is_public_key",
    "key_from_hex",
    "load_key",
    "new_key",
    "private_hex",
    "public_hex",
    "save_key",
    "sign_envelope",
    "signed_bytes",
    "verify_envelope",
    "without_payload",
]

#: Prefix of every signed command's bytes, ``b"ostrom-command/1\n"`` for protocol version 1:
#: versioned by the protocol (protocol/version.py), so an envelope signed under one
#: version is never valid under another.
SIGNING_DOMAIN: Final = f"ostrom-command/{PROTOCOL_VERSION}\n".encode("ascii")
#: The keys an envelope may have; ``public_key`` only on a join.
ENVELOPE_KEYS: Final = frozenset({"agent", "seq", "command", "signature", "public_key"})
#: Largest sequence number (a signed 64-bit integer: SQLite's INTEGER, every JSON library).
MAX_SEQ: Final = 2**63 - 1

_HEX_KEY: Final = re.compile(r"[0-9a-f]{64}")
_HEX_SIG: Final = re.compile(r"[0-9a-f]{128}")


class KeyFileError(ValueError):
    """A key file that cannot be read or is not 32 raw bytes in hex."""


def canonical(obj: Any) -> bytes:
    """Sorted-key compact UTF-8 JSON: the protocol's canonical encoding (one definition)."""
    return _canonical(obj)


def without_payload(command: Any) -> Any:
    """``command`` without its payload fields (content, title, tags, source): what the
    signature covers and the log keeps.  Anything else is returned as it is."""
    if not isinstance(command, Mapping) or not any(k in command for k in PAYLOAD_FIELDS):
        return command
    return {k: v for k, v in command.items() if k not in PAYLOAD_FIELDS}


def signed_bytes(envelope: Mapping[str, Any]) -> bytes:
    """The bytes the signature covers: the domain, then the canonical envelope minus its
    signature, its command minus the payload (``without_payload``).  The payload is
    covered all the same, through the command's ``digest``, which the node checks
    against it (``payload_digest``): so a forgotten artifact's content can be purged
    while every logged envelope still verifies (docs/design.md §11).  Raises
    ``ValueError`` for what JSON cannot encode (callers check first)."""
    body = {k: envelope[k] for k in ("agent", "seq", "command", "public_key") if k in envelope}
    if "command" in body:
        body["command"] = without_payload(body["command"])
    try:
        return SIGNING_DOMAIN + canonical(body)
    except (TypeError, UnicodeEncodeError, RecursionError) as exc:
        raise ValueError(f"not canonically encodable: {exc}") from None


def public_hex(key: Ed25519PrivateKey) -> str:
    """The raw 32-byte public key of ``key`` in lowercase hex (how the node registers it)."""
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def sign_envelope(
    key: Ed25519PrivateKey,
    agent: str,
    seq: int,
    command: Mapping[str, Any],
    public_key: str | None = None,
) -> dict[str, Any]:
    """The envelope of ``command`` sent by ``agent`` as its ``seq``-th command, signed with
    ``key`` (``public_key``: the hex key a join registers; pass ``public_hex(key)``)."""
    env: dict[str, Any] = {"agent": agent, "seq": seq, "command": dict(command)}
    if public_key is not None:
        env["public_key"] = public_key
    env["signature"] = key.sign(signed_bytes(env)).hex()
    return env


@functools.lru_cache(maxsize=1 << 16)
def _public_key(value: str) -> Ed25519PublicKey | None:
    """The loaded key of 64 hex digits (None: not a key); cached, because every command
    of an agent is checked against the same key and loading it was a tenth of a
    command's cost.  Only strings that passed the hex pattern reach it."""
    try:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(value))
    except ValueError:
        return None


def is_public_key(value: object) -> bool:
    """64 lowercase hex digits that decode to an Ed25519 public key."""
    if not isinstance(value, str) or _HEX_KEY.fullmatch(value) is None:
        return False
    return _public_key(value) is not None


def _is_signature(value: object) -> bool:
    """128 lowercase hex digits (64 bytes)."""
    return isinstance(value, str) and _HEX_SIG.fullmatch(value) is not None


def verify_envelope(envelope: Mapping[str, Any], public_key: str) -> bool:
    """True iff ``envelope["signature"]`` is ``public_key``'s signature of the envelope.

    Never raises: a missing or malformed signature, a bad key or unencodable content
    are all simply not a valid signature."""
    sig = envelope.get("signature")
    if not _is_signature(sig) or not is_public_key(public_key):
        return False
    try:
        data = signed_bytes(envelope)
    except ValueError:
        return False
    return ed25519_verify(_raw_key(public_key), data, bytes.fromhex(str(sig)))


@functools.lru_cache(maxsize=1 << 16)
def _raw_key(value: str) -> bytes:
    """The 32 bytes of a key that passed ``is_public_key`` (cached, as the keys are few)."""
    return bytes.fromhex(value)


# --- key files ------------------------------------------------------------------------------


def new_key() -> Ed25519PrivateKey:
    """A fresh private key from the OS's entropy (keys are the one place entropy belongs)."""
    return Ed25519PrivateKey.generate()


def key_from_hex(text: str) -> Ed25519PrivateKey:
    """A private key from 64 hex digits (surrounding whitespace ignored)."""
    raw = text.strip().lower()
    if _HEX_KEY.fullmatch(raw) is None:
        raise KeyFileError("a private key is 32 bytes written as 64 hex digits")
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(raw))


def private_hex(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()).hex()


def load_key(path: str | Path) -> Ed25519PrivateKey:
    """Read a private key file (64 hex digits); ``KeyFileError`` says what is wrong."""
    p = Path(path)
    try:
        text = p.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"{p}: cannot read the key: {exc}") from None
    try:
        return key_from_hex(text)
    except KeyFileError as exc:
        raise KeyFileError(f"{p}: {exc}") from None


#: How every file that holds a secret, or that names the keys trusted, is created: a new
#: file or nothing (``O_EXCL``: an existing key is never overwritten, a file planted in
#: the way is never written through), never through a symbolic link (``O_NOFOLLOW``;
#: ``O_EXCL`` refuses one too, this says so), private to its owner (mode 600).
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def create_file(path: str | Path, data: bytes, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data`` (durably), or raise ``FileExistsError`` if
    anything is there (a file, a directory, a symbolic link): docs/security.md, keys."""
    fd = os.open(Path(path), _CREATE, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def save_key(key: Ed25519PrivateKey, path: str | Path) -> None:
    """Write ``key`` as 64 hex digits, readable by its owner only; never overwrites
    (``FileExistsError``), never writes through a link."""
    create_file(path, (private_hex(key) + "\n").encode("ascii"))


def check_private(path: str | Path) -> None:
    """``KeyFileError`` unless ``path`` is a regular file (not a link) of this user that
    nobody else may read or write: what a key file must be before a node adopts it as
    its own (a key another user could have planted, or read, is not the node's)."""
    p = Path(path)
    try:
        st = p.lstat()
    except OSError as exc:
        raise KeyFileError(f"{p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError(f"{p}: not a regular file (a key is never read through a link)")
    if st.st_uid != os.geteuid():
        raise KeyFileError(f"{p}: owned by another user")
    if st.st_mode & 0o077:
        raise KeyFileError(f"{p}: readable or writable by others (mode {st.st_mode & 0o777:o})")
