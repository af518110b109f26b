"""Who sent a command: Ed25519 envelopes over the canonical command, and key files.

An agent's command reaches the node wrapped in an *envelope*::

    {"agent": "alice", "seq": 7, "command": {...}, "signature": "<128 hex>",
     "public_key": "<64 hex>"}            # public_key: on join only

The signature covers ``SIGNING_DOMAIN + community + "\n" + canonical(envelope without
"signature")``: the community's id, the agent, its sequence number and the command (and
the key being registered and its admission proof, on join); of a propose or resubmit, the
command without its payload, which its signed ``digest`` covers.  Binding the *community*
makes an envelope valid in one community only (ENV-1): one that node A accepted, replayed
to node B, does not verify there, however the two share founders, seeds or an agent's
key.  The id is not in the envelope: each verifier supplies its own (a node's is random,
made with its database; a cluster's is in its cluster.toml), so nothing a client sends
can choose it.  Binding ``agent`` stops one agent acting as another; binding ``seq`` makes
every signed envelope usable exactly once (the gate refuses a replayed or reordered seq);
the domain prefix keeps a command signature from ever being valid as any other ostrom
signature (a PBFT message is signed over its own canonical bytes, without this prefix).

``envelope_refusal`` is the one answer to "is this envelope well-formed and signed for
this community by this key" (the node's gate and a cluster's front ask it).

The canonical encoding is the protocol's own (protocol/encoding.py), so an implementation
in another language signs the same bytes that its vote commitments hash.  Nothing here
does I/O but the key-file helpers (a file is created new, never through a link:
``create_file``); the checks never raise on hostile input.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
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
from ostrom.protocol.commands import PAYLOAD_FIELDS, is_text
from ostrom.protocol.encoding import canonical as _canonical
from ostrom.protocol.version import PROTOCOL_VERSION

__all__ = [
    "COMMUNITY_BYTES",
    "ENVELOPE_KEYS",
    "INVITE_DOMAIN",
    "MAX_SEQ",
    "POW_DOMAIN",
    "SIGNING_DOMAIN",
    "KeyFileError",
    "admission_shape",
    "canonical",
    "check_private",
    "create_file",
    "envelope_refusal",
    "envelope_shape",
    "invite_bytes",
    "is_community_id",
    "is_nonce",
    "is_public_key",
    "key_from_hex",
    "load_key",
    "new_community_id",
    "new_key",
    "pow_bits",
    "private_hex",
    "public_hex",
    "save_key",
    "sign_envelope",
    "sign_invite",
    "signed_bytes",
    "solve_pow",
    "verify_envelope",
    "verify_invite",
    "without_payload",
]

#: Prefix of every signed command's bytes, ``b"ostrom-command/1\n"`` for protocol version 1:
#: versioned by the protocol (protocol/version.py), so an envelope signed under one
#: version is never valid under another.
SIGNING_DOMAIN: Final = f"ostrom-command/{PROTOCOL_VERSION}\n".encode("ascii")
#: The keys an envelope may have; ``public_key`` and ``admission`` only on a join.
ENVELOPE_KEYS: Final = frozenset(
    {"agent", "seq", "command", "signature", "public_key", "admission"}
)
#: Length of a community id in bytes (written as twice as many lowercase hex digits): 128
#: random bits, so two communities never share one by chance.
COMMUNITY_BYTES: Final = 16
#: Prefix of an operator's invitation (``sign_invite``): never valid as a command's signature.
INVITE_DOMAIN: Final = f"ostrom-invite/{PROTOCOL_VERSION}\n".encode("ascii")
#: Prefix of a join's proof of work (``pow_bits``).
POW_DOMAIN: Final = f"ostrom-pow/{PROTOCOL_VERSION}\n".encode("ascii")
#: Largest sequence number (a signed 64-bit integer: SQLite's INTEGER, every JSON library).
MAX_SEQ: Final = 2**63 - 1

_HEX_KEY: Final = re.compile(r"[0-9a-f]{64}")
_HEX_SIG: Final = re.compile(r"[0-9a-f]{128}")
_HEX_COMMUNITY: Final = re.compile(rf"[0-9a-f]{{{2 * COMMUNITY_BYTES}}}")
#: Longest proof-of-work nonce a join may carry (hex digits).
_MAX_NONCE: Final = 64
_HEX_NONCE: Final = re.compile(rf"[0-9a-f]{{1,{_MAX_NONCE}}}")


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


def new_community_id() -> str:
    """A fresh community id: ``COMMUNITY_BYTES`` random bytes in lowercase hex."""
    return secrets.token_hex(COMMUNITY_BYTES)


def is_community_id(value: object) -> bool:
    """``2 * COMMUNITY_BYTES`` lowercase hex digits."""
    return isinstance(value, str) and _HEX_COMMUNITY.fullmatch(value) is not None


def signed_bytes(envelope: Mapping[str, Any], community: str) -> bytes:
    """The bytes the signature covers: the domain, the community's id and a newline
    (ENV-1: valid in this community only), then the canonical envelope minus its
    signature, its command minus the payload (``without_payload``).  The payload is
    covered all the same, through the command's ``digest``, which the node checks
    against it (``payload_digest``): so a forgotten artifact's content can be purged
    while every logged envelope still verifies (docs/design.md §11).  Raises
    ``ValueError`` for what JSON cannot encode, or a community that is not an id
    (callers check first)."""
    if not is_community_id(community):
        raise ValueError("a community id is 32 lowercase hex digits")
    body = {
        k: envelope[k]
        for k in ("agent", "seq", "command", "public_key", "admission")
        if k in envelope
    }
    if "command" in body:
        body["command"] = without_payload(body["command"])
    try:
        return SIGNING_DOMAIN + community.encode("ascii") + b"\n" + canonical(body)
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
    *,
    community: str,
    admission: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The envelope of ``command`` sent by ``agent`` as its ``seq``-th command in
    ``community``, signed with ``key`` (``public_key``: the hex key a join registers; pass
    ``public_hex(key)``; ``admission``: a join's proof, ``{"nonce": ...}`` or
    ``{"operator": ..., "invite": ...}``, as the community's ``join_mode`` asks)."""
    env: dict[str, Any] = {"agent": agent, "seq": seq, "command": dict(command)}
    if public_key is not None:
        env["public_key"] = public_key
    if admission is not None:
        env["admission"] = dict(admission)
    env["signature"] = key.sign(signed_bytes(env, community)).hex()
    return env


def invite_bytes(community: str, public_key: str) -> bytes:
    """What an operator signs to invite the holder of ``public_key`` into ``community``
    (``join_mode = "invite"``): the invitee's key, never a name, so the invitation is
    the key's and whoever holds the key picks its name."""
    return INVITE_DOMAIN + community.encode("ascii") + b"\n" + public_key.encode("ascii")


def sign_invite(operator_key: Ed25519PrivateKey, community: str, public_key: str) -> str:
    """An operator's invitation of ``public_key`` into ``community`` (128 hex digits)."""
    return operator_key.sign(invite_bytes(community, public_key)).hex()


def pow_bits(community: str, public_key: str, nonce: str) -> int:
    """Leading zero bits of SHA-256(POW_DOMAIN, community, key, nonce): a join's proof of
    work (``join_mode = "pow"``), one hash to check and about ``2**bits`` to find; bound
    to the community and the key, so a proof is spent on one identity in one community."""
    h = hashlib.sha256(
        POW_DOMAIN
        + community.encode("ascii")
        + b"\n"
        + public_key.encode("ascii")
        + b"\n"
        + nonce.encode("ascii")
    ).digest()
    n = int.from_bytes(h, "big")
    return 256 - n.bit_length()


def solve_pow(community: str, public_key: str, bits: int) -> str:
    """The first nonce (hex) whose ``pow_bits`` is at least ``bits`` (about 2**bits tries)."""
    i = 0
    while True:
        nonce = format(i, "x")
        if pow_bits(community, public_key, nonce) >= bits:
            return nonce
        i += 1


def is_nonce(value: object) -> bool:
    """1 to 64 lowercase hex digits (a proof-of-work nonce)."""
    return isinstance(value, str) and _HEX_NONCE.fullmatch(value) is not None


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


def verify_envelope(envelope: Mapping[str, Any], public_key: str, community: str) -> bool:
    """True iff ``envelope["signature"]`` is ``public_key``'s signature of the envelope
    in ``community`` (ENV-1).

    Never raises: a missing or malformed signature, a bad key or community, or
    unencodable content are all simply not a valid signature."""
    sig = envelope.get("signature")
    if not _is_signature(sig) or not is_public_key(public_key):
        return False
    try:
        data = signed_bytes(envelope, community)
    except ValueError:
        return False
    return ed25519_verify(_raw_key(public_key), data, bytes.fromhex(str(sig)))


def verify_invite(community: str, public_key: str, operator_key: str, invite: object) -> bool:
    """True iff ``invite`` is ``operator_key``'s invitation of ``public_key`` (never raises)."""
    if not _is_signature(invite) or not is_public_key(operator_key):
        return False
    assert isinstance(invite, str)
    data = invite_bytes(community, public_key)
    return ed25519_verify(_raw_key(operator_key), data, bytes.fromhex(invite))


def envelope_shape(envelope: object) -> tuple[str, str] | None:
    """Why ``envelope`` is not an envelope — ``("malformed" | "unsigned", detail)`` — or
    None: the keys and their types, nothing about who sent it or whether it verifies.
    Never raises."""
    if not isinstance(envelope, dict):
        return "malformed", "the body must be a JSON object (an envelope)"
    extra = set(envelope) - ENVELOPE_KEYS
    if extra:
        return "malformed", f"unknown envelope key(s): {', '.join(sorted(extra))}"
    agent, seq, command = envelope.get("agent"), envelope.get("seq"), envelope.get("command")
    if not isinstance(agent, str) or not is_text(agent) or not 0 < len(agent) <= 256:
        # is_text: UTF-8 can encode it (a lone surrogate cannot be logged or signed)
        return "malformed", "agent must be a string of 1 to 256 characters"
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ:
        return "malformed", f"seq must be an integer in 1..{MAX_SEQ}"
    if not isinstance(command, dict):
        return "malformed", "command must be an object"
    op = command.get("op")
    if "public_key" in envelope and op != "join":
        return "malformed", "public_key belongs to a join only"
    if "admission" in envelope:
        if op != "join":
            return "malformed", "admission belongs to a join only"
        if admission_shape(envelope["admission"]) is None:
            return "malformed", 'admission is {"nonce": hex} or {"operator": id, "invite": hex}'
    if "signature" not in envelope:
        return "unsigned", "the envelope has no signature"
    return None


def admission_shape(value: object) -> str | None:
    """The kind of a join's admission proof — ``"pow"`` or ``"invite"`` — or None if it
    is neither ``{"nonce": 1-64 hex}`` nor ``{"operator": id, "invite": 128 hex}``."""
    if isinstance(value, dict) and set(value) == {"nonce"} and is_nonce(value["nonce"]):
        return "pow"
    if (
        isinstance(value, dict)
        and set(value) == {"operator", "invite"}
        and isinstance(value["operator"], str)
        and 0 < len(value["operator"]) <= 256
        and _is_signature(value["invite"])
    ):
        return "invite"
    return None


def envelope_refusal(envelope: object, community: str, public_key: str) -> tuple[str, str] | None:
    """Why ``envelope`` is not a well-formed envelope signed by ``public_key`` for
    ``community`` — ``(code, detail)``, a ``GATE_ERRORS`` code: ``malformed``,
    ``unsigned`` or ``bad_signature`` — or None.  The one such check (ENV-1): the node's
    gate and a cluster's front both ask it; who may send what (the key of the sender,
    its seq, an operator's rights) is the gate's.  Never raises."""
    shape = envelope_shape(envelope)
    if shape is not None:
        return shape
    assert isinstance(envelope, dict)
    if not verify_envelope(envelope, public_key, community):
        return "bad_signature", "the signature does not verify"
    return None


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
