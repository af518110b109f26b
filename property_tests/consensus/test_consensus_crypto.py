"""consensus/crypto.py: Ed25519 verification by libsodium, signatures by ``cryptography``.

The two libraries must agree on every signature an honest or a clumsy signer can make
(a wrong key, a changed message, a flipped bit), because the vectors and the JavaScript
driver were made with the other one; they may differ only where libsodium is stricter,
on signatures made without any private key (small-order keys and points), which ours
must refuse.
"""

from __future__ import annotations

import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given
from hypothesis import strategies as st

from ostrom.consensus.crypto import (
    VERIFIED_ENTRIES,
    KeyRing,
    Signer,
    derive_key,
    ed25519_verify,
    public_bytes,
    verified_entries,
)
from ostrom.consensus.messages import Request, Signed

#: The group order of Ed25519's base point (RFC 8032 §5.1).
L = 2**252 + 27742317777372353535851937790883648493
#: The encoding of the neutral element: a public key of order 1.
IDENTITY = bytes([1]) + bytes(31)


def _openssl(public: bytes, data: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True


@given(
    signer=st.text(min_size=1, max_size=8),
    other=st.text(min_size=1, max_size=8),
    data=st.binary(max_size=300),
    change=st.sampled_from(["none", "key", "message", "signature", "truncate"]),
    where=st.integers(min_value=0, max_value=10_000),
)
def test_libsodium_and_openssl_agree_on_what_signers_make(
    signer: str, other: str, data: bytes, change: str, where: int
) -> None:
    key = derive_key(b"crypto-test", signer)
    public, signature = public_bytes(key), key.sign(data)
    if change == "key":
        public = public_bytes(derive_key(b"crypto-test", signer + "/" + other))
    elif change == "message":
        data = data + other.encode() if not data else _flip(data, where)
    elif change == "signature":
        signature = _flip(signature, where)
    elif change == "truncate":
        signature = signature[: where % 64]
    ours = ed25519_verify(public, data, signature)
    assert ours == _openssl(public, data, signature)
    assert ours == (change == "none")


def _flip(b: bytes, where: int) -> bytes:
    i = where % (8 * len(b))
    out = bytearray(b)
    out[i // 8] ^= 1 << (i % 8)
    return bytes(out)


@given(data=st.binary(max_size=100))
def test_a_signature_made_without_a_private_key_is_refused(data: bytes) -> None:
    # With the neutral element as public key and as R, and S = 0, the cofactorless check
    # [S]B = R + [k]A holds for every message: OpenSSL accepts it, libsodium does not.
    forged = IDENTITY + bytes(32)
    assert _openssl(IDENTITY, data, forged)
    assert not ed25519_verify(IDENTITY, data, forged)


@given(data=st.binary(max_size=100))
def test_a_non_canonical_s_is_refused(data: bytes) -> None:
    key = derive_key(b"crypto-test", "s")
    sig = key.sign(data)
    s = int.from_bytes(sig[32:], "little") + L  # the same scalar mod L, not reduced
    malleated = sig[:32] + s.to_bytes(32, "little")
    assert ed25519_verify(public_bytes(key), data, sig)
    assert not ed25519_verify(public_bytes(key), data, malleated)


def test_wrong_lengths_are_refused_without_raising() -> None:
    key = derive_key(b"crypto-test", "len")
    sig = key.sign(b"m")
    pub = public_bytes(key)
    assert not ed25519_verify(pub[:31], b"m", sig)
    assert not ed25519_verify(pub + b"\0", b"m", sig)
    assert not ed25519_verify(pub, b"m", sig + b"\0")
    assert not ed25519_verify(b"", b"m", b"")


def test_the_verification_memo_keeps_digests_not_messages() -> None:
    """Issue 41, item 6: the memo of verified signatures is keyed by the SHA-256 of the
    message, so a 4 MiB message costs it 32 bytes, and a forged signature (any sender's
    name, any bytes) is never remembered at all."""
    key = derive_key(b"crypto-test", "r1")
    ring = KeyRing({"r1": public_bytes(key)})
    big = Request("c0", 1, {"blob": "x" * (4 << 20)})
    signed = Signer("r1", key).sign(big)
    forged = Signed(Request("c0", 2, {"blob": "y" * (4 << 20)}), "r1", bytes(64))
    assert ring.verify(signed) and ring.verify(signed)  # the second from the memo
    assert not ring.verify(forged)
    entries = verified_entries()
    assert max(len(a) + len(b) + len(c) for a, b, c in entries) <= 32 + 32 + 64
    assert (public_bytes(key), hashlib.sha256(big.encoded).digest(), signed.signature) in entries
    assert not any(sig == bytes(64) for _, _, sig in entries)
    assert len(entries) <= VERIFIED_ENTRIES
