"""The gate (service/gate.py): every refusal has its stable code and changes nothing;
admitted envelopes advance the sender's seq; a join registers its key; arbitrary bytes
never raise.  Each check names the mutation it is shown to catch where one exists."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.service import identity
from ostrom.service.gate import GATE_ERRORS, OPERATOR_OPS, Admission, Gate, Setup
from service_world import COMMUNITY, FOUNDERS, OPERATOR, PARAMS, Signer, commitment, key, setup


def _gate() -> Gate:
    return Gate(PARAMS, setup())


def _state(g: Gate) -> Any:
    return copy.deepcopy(g.public_state())


def _refused(g: Gate, env: object, code: str) -> None:
    before = _state(g)
    adm = g.admit(env)
    assert adm.code == code, adm
    assert adm.status == GATE_ERRORS[code].status
    assert dict(g.apply(env)) == {"result": code, "events": []}
    assert _state(g) == before


def test_operator_ops_are_the_commands_without_an_agent() -> None:
    assert {"tick", "recruit"} == OPERATOR_OPS


def test_a_founder_proposes_and_its_seq_advances() -> None:
    g, s = _gate(), Signer()
    env = s.env("f1", {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"})
    assert g.admit(env).ok
    assert g.apply(env)["result"] == "ok"
    assert g.last_seq("f1") == 1
    _refused(g, env, "replayed")  # the same envelope again


def test_each_gate_refusal() -> None:
    g, s = _gate(), Signer()
    prop = {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"}
    good = s.env("f1", prop)
    _refused(g, [1], "malformed")
    _refused(g, {**good, "extra": 1}, "malformed")
    _refused(g, {**good, "seq": 0}, "malformed")
    _refused(g, {**good, "seq": True}, "malformed")
    # a command that names nobody is nobody's: not the sender's (and the signature is not
    # over it either)
    _refused(g, {**good, "command": {"op": "nope"}}, "impersonation")
    unsigned = dict(good)
    del unsigned["signature"]
    _refused(g, unsigned, "unsigned")
    _refused(g, {**good, "signature": "00" * 64}, "bad_signature")
    _refused(g, {**good, "command": {**prop, "digest": "e"}}, "bad_signature")
    # f2 signs a command in f1's name: impersonation (and f1's key would not verify it)
    _refused(
        g, identity.sign_envelope(key("f2"), "f2", 1, prop, community=COMMUNITY), "impersonation"
    )
    # f2 claims to be f1 at envelope level, signing with its own key: bad signature
    _refused(
        g, identity.sign_envelope(key("f2"), "f1", 1, prop, community=COMMUNITY), "bad_signature"
    )
    _refused(
        g,
        identity.sign_envelope(key("z"), "z", 1, {**prop, "agent": "z"}, community=COMMUNITY),
        "unknown_agent",
    )
    _refused(
        g,
        identity.sign_envelope(key("f1"), "f1", 1, {"op": "tick"}, community=COMMUNITY),
        "not_operator",
    )
    _refused(
        g, identity.sign_envelope(key("f1"), "f1", 2, prop, community=COMMUNITY), "out_of_order"
    )
    _refused(
        g,
        identity.sign_envelope(key("f1"), "f1", 1, prop, "00" * 32, community=COMMUNITY),
        "malformed",
    )  # public_key outside a join
    assert g.apply(good)["result"] == "ok"
    _refused(g, good, "replayed")


def test_join_registers_the_key_and_only_then_the_agent_can_act() -> None:
    g, s = _gate(), Signer()
    j = s.env("new", {"op": "join", "agent": "new"}, join=True)
    assert g.apply(j)["result"] == "ok"
    assert g.key_of("new") == identity.public_hex(key("new"))
    assert "new" in g.community.agents
    # a second join (a new seq) is the Community's duplicate, not a key change
    j2 = identity.sign_envelope(
        key("new"),
        "new",
        2,
        {"op": "join", "agent": "new"},
        identity.public_hex(key("new")),
        community=COMMUNITY,
    )
    assert g.apply(j2)["result"] == "duplicate"
    # somebody else re-joining as "new" with their own key: bad signature, key unchanged
    j3 = identity.sign_envelope(
        key("evil"),
        "new",
        3,
        {"op": "join", "agent": "new"},
        identity.public_hex(key("evil")),
        community=COMMUNITY,
    )
    _refused(g, j3, "bad_signature")
    assert g.key_of("new") == identity.public_hex(key("new"))
    _refused(
        g,
        identity.sign_envelope(
            key("new"), "new", 1, {"op": "join", "agent": "new"}, community=COMMUNITY
        ),
        "replayed",
    )


def test_a_join_without_its_key_or_as_an_operator_is_refused() -> None:
    g = _gate()
    _refused(
        g,
        identity.sign_envelope(key("n"), "n", 1, {"op": "join", "agent": "n"}, community=COMMUNITY),
        "malformed",
    )
    pk = identity.public_hex(key(OPERATOR))
    _refused(
        g,
        identity.sign_envelope(
            key(OPERATOR), OPERATOR, 1, {"op": "join", "agent": OPERATOR}, pk, community=COMMUNITY
        ),
        "impersonation",
    )


def test_protocol_refusals_advance_the_seq() -> None:
    g, s = _gate(), Signer()
    env = s.env("f1", {"op": "object", "agent": "f1", "artifact": "none"})
    obs = g.apply(env)
    assert obs["result"] not in GATE_ERRORS and obs["result"] != "ok"
    assert g.last_seq("f1") == 1


def test_no_agent_can_vote_for_another() -> None:
    g, s = _gate(), Signer()
    g.apply(
        s.env("f1", {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"})
    )
    g.apply(s.env(OPERATOR, {"op": "tick"}))
    reviewer = sorted(g.community.orchestrator.public_artifact("x")["reviewers"])[0]  # type: ignore[index]
    other = next(f for f in FOUNDERS if f != reviewer)
    c = {
        "op": "commit_vote",
        "agent": reviewer,
        "artifact": "x",
        "commitment": commitment(reviewer, "x", 0, "accept"),
    }
    _refused(
        g, identity.sign_envelope(key(other), other, 1, c, community=COMMUNITY), "impersonation"
    )
    _refused(
        g, identity.sign_envelope(key(other), reviewer, 1, c, community=COMMUNITY), "bad_signature"
    )


def test_setup_round_trips_and_rejects_bad_documents() -> None:
    st_ = setup()
    assert Setup.from_json(st_.to_json()) == st_
    for bad in (
        None,
        {},
        {**st_.to_json(), "members": [{"id": ""}]},
        {**st_.to_json(), "keys": {}},
    ):
        with pytest.raises(ValueError):
            Setup.from_json(bad)


ENVELOPE = st.fixed_dictionaries(
    {},
    optional={
        "agent": st.sampled_from([*FOUNDERS, OPERATOR, "x", ""]) | st.integers(),
        "seq": st.integers(-2, 3) | st.booleans() | st.text(max_size=2),
        "command": st.dictionaries(
            st.sampled_from(["op", "agent", "artifact", "slot", "digest", "x"]),
            st.sampled_from(["tick", "propose", "join", "f1", "x"]) | st.integers(),
            max_size=5,
        ),
        "signature": st.text(max_size=3) | st.just("00" * 64),
        "public_key": st.just("00" * 32) | st.integers(),
    },
)


@settings(max_examples=300)
@given(st.lists(ENVELOPE | st.none() | st.lists(st.integers(), max_size=2), max_size=6))
def test_arbitrary_envelopes_never_raise_and_refusals_change_nothing(envs: list[Any]) -> None:
    g = _gate()
    for e in envs:
        before = _state(g)
        adm = g.admit(e)
        obs = g.apply(e)
        if not adm.ok:
            assert dict(obs) == {"result": adm.code, "events": []}
            assert _state(g) == before


def test_forged_sequences_of_valid_envelopes_only_apply_in_order() -> None:
    g, s = _gate(), Signer()
    envs = [s.env("f1", {"op": "object", "agent": "f1", "artifact": f"a{i}"}) for i in range(4)]
    assert g.admit(envs[2]).code == "out_of_order"
    for e in envs:
        assert g.admit(e).ok
        g.apply(e)
    assert [g.admit(e).code for e in envs] == ["replayed"] * 4


# --- the gate's checks, each shown to matter: a mutant gate that skips one lets an attack
# through, and the real gate lets none ------------------------------------------------------

ATTACKED = (
    "bad_signature",
    "impersonation",
    "replayed",
    "out_of_order",
    "not_operator",
    "unknown_agent",
    "unsigned",
)


def _mutant(skipped: str) -> type[Gate]:
    class Skips(Gate):
        def admit(self, envelope: object) -> Admission:
            a = super().admit(envelope)
            return Admission(None, "", a.agent, a.seq) if a.code == skipped else a

    return Skips


def attacks_through(gate_cls: type[Gate]) -> list[str]:
    """The attacks that changed the state of a gate of class ``gate_cls``."""
    through = []
    prop = {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"}
    scenarios: dict[str, Any] = {
        "forged": identity.sign_envelope(
            key("f2"), "f1", 2, {**prop, "artifact": "y"}, community=COMMUNITY
        ),
        "impersonation": identity.sign_envelope(
            key("f2"), "f2", 1, {**prop, "artifact": "y"}, community=COMMUNITY
        ),
        "replay": None,  # the operator's tick again
        "reorder": identity.sign_envelope(
            key("f1"), "f1", 5, {**prop, "artifact": "y"}, community=COMMUNITY
        ),
        "tick by an agent": identity.sign_envelope(
            key("f1"), "f1", 2, {"op": "tick"}, community=COMMUNITY
        ),
        "stranger": identity.sign_envelope(
            key("z"), "z", 1, {**prop, "agent": "z"}, community=COMMUNITY
        ),
        "unsigned": {"agent": "f1", "seq": 2, "command": {**prop, "artifact": "y"}},
    }
    for name, env in scenarios.items():
        g = gate_cls(PARAMS, setup())
        first = identity.sign_envelope(key("f1"), "f1", 1, prop, community=COMMUNITY)
        tick = identity.sign_envelope(
            key(OPERATOR), OPERATOR, 1, {"op": "tick"}, community=COMMUNITY
        )
        assert g.apply(first)["result"] == g.apply(tick)["result"] == "ok"
        before = _state(g)
        g.apply(tick if env is None else env)
        if _state(g) != before:
            through.append(name)
    return through


def test_the_gate_lets_no_attack_through() -> None:
    assert attacks_through(Gate) == []


@pytest.mark.parametrize("skipped", ATTACKED)
def test_a_gate_that_skips_one_check_lets_an_attack_through(skipped: str) -> None:
    assert attacks_through(_mutant(skipped)), f"skipping {skipped} went unnoticed"


def test_the_gate_is_a_replicated_core() -> None:
    """consensus.application runs the gate as it runs the orchestrator: replicas fed the
    same envelopes agree, and agree with one fresh gate replaying them (REPL-1)."""
    from ostrom.consensus.application import OrchestratorApp, reference_state
    from service_world import commit_phase, decided

    s = Signer()
    envs = commit_phase(s) + decided(s) + [{"agent": "f1", "seq": 1, "command": {}}]
    apps = [OrchestratorApp(core=lambda: Gate(PARAMS, setup())) for _ in range(3)]
    for e in envs:
        assert len({json.dumps(a.execute(e), sort_keys=True) for a in apps}) == 1
    assert len({a.digest() for a in apps}) == 1
    core = lambda: Gate(PARAMS, setup())  # noqa: E731
    assert reference_state(envs, PARAMS, (), core=core) == apps[0].state()


def test_set_agent_is_the_communitys_refusal_and_is_sequenced() -> None:
    """The registry is derived (protocol/community.py): a signed set_agent reaches the
    Community, which refuses it; like any admitted command it uses up its seq."""
    g, s = _gate(), Signer()
    obs = g.apply(s.env("f1", {"op": "set_agent", "agent": "f1", "tier": 3}))
    assert obs["result"] == "invalid_input" and g.last_seq("f1") == 1


def test_a_signed_malformed_command_is_the_senders_protocol_input() -> None:
    """Authenticated and in sequence, but not a command of the schema (an unknown op, a
    field of the wrong type): the Community answers invalid_input and counts a
    ``malformed`` violation against the sender (SAN-1's malfunction classifier needs to
    see it), and the seq is used: it is a logged command like any refusal."""
    g = _gate()
    before = g.public_state()
    malformed = {"event": "violation", "agent": "f1", "kind": "malformed"}
    cases: list[tuple[dict[str, Any], bool]] = [
        ({"op": "nope", "agent": "f1"}, False),  # an unknown op is no one's command
        ({"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": 3}, True),
        ({"op": "object", "agent": "f1"}, True),
    ]
    for seq, (cmd, counted) in enumerate(cases, start=1):
        obs = g.apply(identity.sign_envelope(key("f1"), "f1", seq, cmd, community=COMMUNITY))
        assert obs["result"] == "invalid_input"
        assert (malformed in obs["events"]) is counted
        assert g.last_seq("f1") == seq
    assert g.public_state()["artifacts"] == before["artifacts"]


def test_an_envelope_of_another_community_is_a_bad_signature() -> None:
    """ENV-1: the gate verifies for its own community; the same envelope signed for
    another (same founders, same keys) is refused and changes nothing."""
    g = _gate()
    prop = {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"}
    other = identity.new_community_id()
    _refused(g, identity.sign_envelope(key("f1"), "f1", 1, prop, community=other), "bad_signature")
    assert (
        g.apply(identity.sign_envelope(key("f1"), "f1", 1, prop, community=COMMUNITY))["result"]
        == "ok"
    )


def test_a_refused_join_of_a_new_name_changes_nothing() -> None:
    """ADM-1: a join for a name nobody registered, signed by any key, that the Community
    refuses (an unknown field, a bad subscription, a founder's name) leaves the gate as it
    was — the name's seq included — and ``untraced`` says so; the owner's own join
    with seq 1 then succeeds.  A registered agent's refused join is a sequenced command."""
    g = _gate()
    mallory = identity.public_hex(key("mallory"))
    for cmd in (
        {"op": "join", "agent": "victim", "pad": "x"},
        {"op": "join", "agent": "victim", "subscriptions": [""]},
    ):
        env = identity.sign_envelope(key("mallory"), "victim", 1, cmd, mallory, community=COMMUNITY)
        before = _state(g)
        obs = g.apply(env)
        assert obs["result"] == "invalid_input" and g.untraced(env, obs) == "join_refused"
        assert _state(g) == before and g.last_seq("victim") == 0
    own = Signer().env("victim", {"op": "join", "agent": "victim"}, join=True)
    obs = g.apply(own)
    assert obs["result"] == "ok" and g.untraced(own, obs) is None
    again = identity.sign_envelope(
        key("victim"), "victim", 2, {"op": "join", "agent": "victim"},
        identity.public_hex(key("victim")), community=COMMUNITY,
    )  # fmt: skip
    obs = g.apply(again)
    assert obs["result"] == "duplicate" and g.untraced(again, obs) is None
    assert g.last_seq("victim") == 2


def test_join_modes_admit_only_a_key_with_its_proof() -> None:
    """join_mode: pow asks a nonce of join_pow_bits bits over the community id and the
    joining key (a nonce of another key or community does not do); invite asks an
    operator's signature of the key (a non-operator's, or one for another key, does
    not).  A proof is part of the signed bytes: it cannot be swapped into another's join."""
    import dataclasses

    def join(name: str, admission: dict[str, Any] | None) -> dict[str, Any]:
        return identity.sign_envelope(
            key(name), name, 1, {"op": "join", "agent": name}, identity.public_hex(key(name)),
            community=COMMUNITY, admission=admission,
        )  # fmt: skip

    pk = identity.public_hex(key("p"))
    g = Gate(dataclasses.replace(PARAMS, join_mode="pow", join_pow_bits=10), setup())
    _refused(g, join("p", None), "admission_required")
    of_q = identity.solve_pow(COMMUNITY, identity.public_hex(key("q")), 10)
    if identity.pow_bits(COMMUNITY, pk, of_q) < 10:  # almost surely: q's proof is not p's
        _refused(g, join("p", {"nonce": of_q}), "admission_required")
    elsewhere = identity.solve_pow(identity.new_community_id(), pk, 10)
    if identity.pow_bits(COMMUNITY, pk, elsewhere) < 10:  # almost surely
        _refused(g, join("p", {"nonce": elsewhere}), "admission_required")
    nonce = identity.solve_pow(COMMUNITY, pk, 10)
    assert identity.pow_bits(COMMUNITY, pk, nonce) >= 10
    swapped = {**join("p", {"nonce": "0"}), "admission": {"nonce": nonce}}
    _refused(g, swapped, "bad_signature")
    assert g.apply(join("p", {"nonce": nonce}))["result"] == "ok"
    g = Gate(dataclasses.replace(PARAMS, join_mode="invite"), setup())
    ivy = identity.public_hex(key("i"))
    _refused(g, join("i", None), "admission_required")
    by_founder = identity.sign_invite(key("f1"), COMMUNITY, ivy)
    _refused(g, join("i", {"operator": "f1", "invite": by_founder}), "admission_required")
    for_p = identity.sign_invite(key(OPERATOR), COMMUNITY, pk)  # an invitation of another key
    _refused(g, join("i", {"operator": OPERATOR, "invite": for_p}), "admission_required")
    invite = identity.sign_invite(key(OPERATOR), COMMUNITY, ivy)
    _refused(g, join("i", {"operator": OPERATOR, "invite": "zz"}), "malformed")
    assert g.apply(join("i", {"operator": OPERATOR, "invite": invite}))["result"] == "ok"
    # a founder's commands need no proof, in any mode
    assert g.apply(Signer().env("f1", {"op": "propose", "agent": "f1", "artifact": "x",
                                       "slot": "s", "digest": "d"}))["result"] == "ok"  # fmt: skip
