"""The front's screen (cluster/screen.py) refuses exactly as the gate refuses.

``screen`` mirrors ``Gate.admit`` up to the signature so that the front can refuse an
unsigned envelope before it signs anything.  Two copies of one rule drift; this is the
test that fails when they do: on generated envelopes — signed ones, then broken in each
way a hostile client can break them — every refusal of ``screen`` is the refusal a real
``Gate`` gives (the same code), and an envelope ``screen`` lets through is never one the
gate refuses for its sender, but for the one case ``screen`` leaves to the gate on
purpose (a join signed by the key it carries, for an agent that already has another).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.cluster.screen import SCREENED, Lookup, Refusal, screen
from ostrom.consensus.crypto import derive_key
from ostrom.service.gate import GATE_ERRORS, Gate
from ostrom.service.identity import public_hex, sign_envelope
from service_world import FOUNDERS, OPERATOR, PARAMS, key, setup

SETUP = setup()
C = SETUP.community  # ENV-1: the community every envelope here is signed for
#: what the replicas would answer for each agent's registered key
REGISTERED: dict[str, str | None] = {f: public_hex(key(f)) for f in FOUNDERS}
REGISTERED.update({"newbie": None, "ghost": None})
STRANGER = derive_key(b"screen-stranger", "x")


def base(kind: str, agent: str) -> dict[str, Any]:
    """A well-signed envelope of ``kind`` (1 is every agent's next seq in a fresh gate)."""
    if kind == "join":
        k = key(agent) if agent != "newbie" else STRANGER
        return sign_envelope(
            k, agent, 1, {"op": "join", "agent": agent}, public_hex(k), community=C
        )
    if kind == "tick":
        return sign_envelope(key(agent), agent, 1, {"op": "tick"}, community=C)
    return sign_envelope(
        key(agent),
        agent,
        1,
        {"op": "propose", "agent": agent, "artifact": "a1", "slot": "s"},
        community=C,
    )


def broken(env: dict[str, Any], how: str) -> Any:
    e = copy.deepcopy(env)
    if how == "none":
        return e
    if how == "unsigned":
        e.pop("signature", None)
    elif how == "flip" and isinstance(e.get("signature"), str) and e["signature"]:
        sig = e["signature"]
        e["signature"] = ("0" if sig[0] != "0" else "1") + sig[1:]
    elif how == "garbage_signature":
        e["signature"] = "zz"
    elif how == "other_agent":
        e["agent"] = "f2" if e["agent"] != "f2" else "f3"
    elif how == "command_agent" and isinstance(e.get("command"), dict):
        e["command"]["agent"] = "somebody"
    elif how == "extra_key":
        e["hello"] = 1
    elif how == "public_key":
        e["public_key"] = public_hex(STRANGER)
    elif how == "bad_seq":
        e["seq"] = 0
    elif how == "command_not_object":
        e["command"] = [1]
    elif how == "agent_not_text":
        e["agent"] = 7
    elif how == "not_an_object":
        return [e]
    elif how == "resigned_by_stranger" and isinstance(e.get("command"), dict):
        e.pop("signature", None)
        e = sign_envelope(
            STRANGER, e["agent"], e["seq"], e["command"], e.get("public_key"), community=C
        )
    elif (
        how == "other_community"  # ENV-1: signed right, for another community
        and isinstance(e.get("command"), dict)
        and isinstance(e.get("agent"), str)
    ):
        k = STRANGER if e.get("public_key") == public_hex(STRANGER) else key(e["agent"])
        e.pop("signature", None)
        e = sign_envelope(
            k, e["agent"], e["seq"], e["command"], e.get("public_key"), community="0f" * 16
        )
    elif how == "bad_public_key":
        e["public_key"] = "00"
    return e


HOWS = [
    "none",
    "unsigned",
    "flip",
    "garbage_signature",
    "other_agent",
    "command_agent",
    "extra_key",
    "public_key",
    "bad_seq",
    "command_not_object",
    "agent_not_text",
    "not_an_object",
    "resigned_by_stranger",
    "bad_public_key",
    "other_community",
]
AGENTS = [*FOUNDERS[:3], OPERATOR, "newbie", "ghost"]


def test_every_screened_code_is_a_gate_code() -> None:
    assert set(GATE_ERRORS) >= SCREENED


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(["join", "tick", "propose"]),
    st.sampled_from(AGENTS),
    st.lists(st.sampled_from(HOWS), min_size=1, max_size=2),
)
def test_screen_refuses_as_the_gate(kind: str, agent: str, hows: list[str]) -> None:
    env: Any = base(kind, agent)
    for how in hows:
        if not isinstance(env, dict):
            break
        env = broken(env, how)
    got = screen(env, C, SETUP.operators, REGISTERED)
    assert not isinstance(got, Lookup)  # every agent's key is known here
    adm = Gate(PARAMS, SETUP).admit(env)
    if isinstance(got, Refusal):
        assert got.code in SCREENED
        assert adm.code == got.code, (env, got, adm)
        return
    # let through: signed by its sender's key, or a self-signed join left to the gate
    if adm.code in SCREENED:
        assert isinstance(env, dict) and env["command"].get("op") == "join", (env, adm)
        assert adm.code == "bad_signature" and REGISTERED.get(env["agent"]) is not None


def test_an_unknown_agent_is_looked_up_then_decided() -> None:
    env = base("propose", "f1")
    assert screen(env, C, SETUP.operators, {}) == Lookup("f1")
    assert screen(env, C, SETUP.operators, {"f1": public_hex(key("f1"))}) is None
    refused = screen(env, C, SETUP.operators, {"f1": None})
    assert isinstance(refused, Refusal) and refused.code == "unknown_agent"
    # a join signed by the key it carries needs no look-up
    assert screen(base("join", "newbie"), C, SETUP.operators, {}) is None


def test_the_screen_of_key_commands_is_the_gates() -> None:
    """KEY-1, KEY-2 at the front: after f1 rotated (the gate applied it; the screen knows
    the new key and the retired one, as the replicas answer them), every envelope below
    gets the gate's answer, or is let through to a gate that admits it."""
    g = Gate(PARAMS, SETUP)
    new = derive_key(b"screen-rotation", "f1")
    rot = {"op": "rotate_key", "agent": "f1", "public_key": public_hex(new)}
    assert g.apply(sign_envelope(key("f1"), "f1", 1, rot, community=C))["result"] == "ok"
    registered = {**REGISTERED, "f1": public_hex(new)}
    retired = {"f1": [public_hex(key("f1"))]}
    prop = {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"}
    revoke = {"op": "revoke_key", "agent": "f1"}
    cases = [
        sign_envelope(key("f1"), "f1", 2, prop, community=C),  # the old key: key_retired
        sign_envelope(new, "f1", 2, prop, community=C),  # the new key: through
        sign_envelope(key("f1"), "f1", 2, revoke, community=C),  # a retired key revokes
        sign_envelope(STRANGER, "f1", 2, revoke, community=C),  # a stranger: bad_signature
        sign_envelope(key(OPERATOR), OPERATOR, 1, revoke, community=C),  # an operator
        sign_envelope(key("f2"), "f2", 1, revoke, community=C),  # f2 for f1: impersonation
    ]
    for env in cases:
        got = screen(env, C, SETUP.operators, registered, retired)
        adm = g.admit(env)
        if isinstance(got, Refusal):
            assert got.code == adm.code, (env["command"], got, adm)
        else:
            assert got is None and adm.ok, (env["command"], got, adm)
    # without the retired keys (the kept key stale), the old key is only a bad signature
    old = screen(cases[0], C, SETUP.operators, REGISTERED)
    assert old is None  # the kept key is the old one: the front orders, the gate refuses
