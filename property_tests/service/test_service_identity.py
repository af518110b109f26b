"""Envelopes: a signature binds agent, seq, command (and a join's key); the checks never
raise on hostile input; key files round-trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom import layout
from ostrom.protocol.version import PROTOCOL_VERSION
from ostrom.service import identity
from ostrom.service.openapi import openapi_text
from service_world import COMMUNITY, key

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=10,
)


def _env() -> dict[str, Any]:
    return identity.sign_envelope(key("a"), "a", 3, {"op": "tick"}, community=COMMUNITY)


def test_a_signed_envelope_verifies_under_its_key_only() -> None:
    env = _env()
    assert identity.verify_envelope(env, identity.public_hex(key("a")), COMMUNITY)
    assert not identity.verify_envelope(env, identity.public_hex(key("b")), COMMUNITY)


def test_a_signed_envelope_verifies_in_its_community_only() -> None:
    """ENV-1: the community id is in the signed bytes, so the same envelope, sent to a
    node of another community, does not verify there; nor does one signed for none."""
    env = _env()
    other = identity.new_community_id()
    assert identity.is_community_id(other) and other != COMMUNITY
    assert not identity.verify_envelope(env, identity.public_hex(key("a")), other)
    raw = identity.SIGNING_DOMAIN + identity.canonical(
        {k: env[k] for k in ("agent", "seq", "command")}
    )
    unbound = {**env, "signature": key("a").sign(raw).hex()}  # signed for no community
    assert not identity.verify_envelope(unbound, identity.public_hex(key("a")), COMMUNITY)
    for bad in ("", "C0" * 16, "c0" * 15, "c0" * 17):  # not an id: nothing verifies
        assert not identity.verify_envelope(env, identity.public_hex(key("a")), bad)
    pk = identity.public_hex(key("a"))
    assert identity.envelope_refusal(env, COMMUNITY, pk) is None
    assert identity.envelope_refusal(env, other, pk) == (
        "bad_signature",
        "the signature does not verify",
    )
    assert identity.envelope_refusal({**env, "x": 1}, COMMUNITY, pk)[0] == "malformed"  # type: ignore[index]
    unsigned = {k: v for k, v in env.items() if k != "signature"}
    assert identity.envelope_refusal(unsigned, COMMUNITY, pk)[0] == "unsigned"  # type: ignore[index]


@pytest.mark.parametrize(
    "field,value",
    [
        ("agent", "b"),
        ("seq", 4),
        ("command", {"op": "tick", "x": 1}),
        ("public_key", "00" * 32),
        ("admission", {"nonce": "0"}),
    ],
)
def test_changing_any_signed_field_breaks_the_signature(field: str, value: object) -> None:
    env = {**_env(), field: value}
    assert not identity.verify_envelope(env, identity.public_hex(key("a")), COMMUNITY)


def test_the_domain_is_part_of_the_signed_bytes() -> None:
    env = _env()
    raw = identity.canonical({k: env[k] for k in ("agent", "seq", "command")})
    sig = key("a").sign(raw).hex()  # the same bytes without the domain: refused
    forged = {**env, "signature": sig}
    assert not identity.verify_envelope(forged, identity.public_hex(key("a")), COMMUNITY)
    assert identity.signed_bytes(env, COMMUNITY).startswith(
        identity.SIGNING_DOMAIN + COMMUNITY.encode() + b"\n"
    )


def test_the_domain_names_the_protocol_version() -> None:
    """The signed prefix carries the protocol's version (docs/design.md §9, "Versions"):
    an envelope signed under one version never verifies under another.  The docs and the
    OpenAPI document quote the prefix: they say the same bytes."""
    assert f"ostrom-command/{PROTOCOL_VERSION}\n".encode() == identity.SIGNING_DOMAIN
    env = _env()
    other = f"ostrom-command/{PROTOCOL_VERSION + 1}\n".encode()
    body = identity.canonical({k: env[k] for k in ("agent", "seq", "command")})
    raw = other + COMMUNITY.encode() + b"\n" + body
    forged = {**env, "signature": key("a").sign(raw).hex()}
    assert not identity.verify_envelope(forged, identity.public_hex(key("a")), COMMUNITY)
    shown = repr(identity.SIGNING_DOMAIN).replace("'", '"')  # b"ostrom-command/1\n"
    service_md = (layout.DOCS_DIR / "service.md").read_text(encoding="utf-8")
    assert f"`{shown} + community + " in service_md
    assert json.dumps(repr(identity.SIGNING_DOMAIN))[1:-1] in openapi_text()  # JSON-escaped


#: Community ids and near misses (wrong length, capitals, not text).
COMMUNITIES = st.just(COMMUNITY) | st.text("0123456789abcdefABCDEF", max_size=34) | st.none()


@given(env=st.dictionaries(st.text(max_size=10), JSON, max_size=6), pk=JSON, c=COMMUNITIES)
def test_verify_never_raises(env: dict[str, Any], pk: object, c: object) -> None:
    assert identity.verify_envelope(env, pk, COMMUNITY) in (True, False)  # type: ignore[arg-type]
    assert identity.verify_envelope(env, pk, c) in (True, False)  # type: ignore[arg-type]
    shape = identity.envelope_shape(env)
    assert shape is None or shape[0] in ("malformed", "unsigned")


def test_lone_surrogates_are_not_a_valid_signature() -> None:
    env = {**_env(), "command": {"op": "tick", "x": "\udc80"}}
    assert not identity.verify_envelope(env, identity.public_hex(key("a")), COMMUNITY)


def test_key_files_round_trip_and_bad_files_are_clear(tmp_path: Path) -> None:
    k = identity.new_key()
    identity.save_key(k, tmp_path / "k")
    assert identity.private_hex(identity.load_key(tmp_path / "k")) == identity.private_hex(k)
    assert (tmp_path / "k").stat().st_mode & 0o077 == 0
    with pytest.raises(FileExistsError):
        identity.save_key(k, tmp_path / "k")
    (tmp_path / "bad").write_text("zz")
    with pytest.raises(identity.KeyFileError, match="64 hex"):
        identity.load_key(tmp_path / "bad")
    with pytest.raises(identity.KeyFileError, match="cannot read"):
        identity.load_key(tmp_path / "missing")


def test_key_files_are_created_new_and_never_through_a_link(tmp_path: Path) -> None:
    """docs/security.md, keys: a link planted where a key goes is refused, the file it
    names untouched (a dangling link too: O_EXCL, O_NOFOLLOW); a key adopted by a new
    node must be a private regular file of this user (``check_private``)."""
    victim = tmp_path / "victim"
    victim.write_text("unchanged")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("link", "dangling"):
        with pytest.raises(FileExistsError):
            identity.save_key(identity.new_key(), tmp_path / name)
    assert victim.read_text() == "unchanged" and not (tmp_path / "nowhere").exists()
    identity.save_key(identity.new_key(), tmp_path / "k")
    identity.check_private(tmp_path / "k")
    with pytest.raises(identity.KeyFileError, match="not a regular file"):
        identity.check_private(tmp_path / "link")
    os.chmod(tmp_path / "k", 0o644)
    with pytest.raises(identity.KeyFileError, match="readable or writable by others"):
        identity.check_private(tmp_path / "k")
    with pytest.raises(identity.KeyFileError):
        identity.check_private(tmp_path / "missing")


def _serve(db: Path) -> subprocess.CompletedProcess[str]:
    """``ostrom serve`` as its own process (a node that wrongly starts is killed by the
    timeout instead of blocking the test)."""
    return subprocess.run(
        [sys.executable, "-m", "ostrom", "serve", "--db", str(db), "--port", "0"],
        env={**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.system
def test_a_new_node_adopts_only_a_private_operator_key(tmp_path: Path) -> None:
    """An operator key file found where a new database's key goes: a link, or a file
    others may read, is refused (exit 2, nothing created): before, it was adopted as
    the new node's operator unchecked (docs/security.md, keys)."""
    planted = tmp_path / "attacker.key"
    planted.write_text(identity.private_hex(identity.new_key()) + "\n")
    os.chmod(planted, 0o600)
    db = tmp_path / "n.db"
    key = tmp_path / "n.db.operator.key"
    key.symlink_to(planted)
    linked = _serve(db)
    assert linked.returncode == 2 and "not a regular file" in linked.stderr, linked.stderr
    key.unlink()
    key.write_text(planted.read_text())
    os.chmod(key, 0o644)
    shared = _serve(db)
    assert shared.returncode == 2 and "readable or writable by others" in shared.stderr
    assert not db.exists()
