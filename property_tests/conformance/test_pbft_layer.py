"""The pbft layer of the conformance suite: vectors, determinism, the mutant, bad commands.

* every vector replays identically on ``PBFTLayer`` (result, events and state, exactly),
  and the committed ``vectors/pbft`` are what the generator writes today;
* generation is deterministic (two runs, byte-identical files) and fast;
* the ``pbft-prepares-twice`` mutant diverges on the vector named for it;
* a command that is not well-formed gives ``invalid_input`` and changes nothing;
* the encoding and key derivation documented in docs/conformance.md hold.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ostrom.conformance import VECTOR_FORMAT
from ostrom.conformance.generators.pbft_vectors import ACTIONS, generate_pbft_vectors
from ostrom.conformance.layer import Layer
from ostrom.conformance.pbft_layer import PBFTLayer
from ostrom.conformance.pbft_mutants import CATCHING_VECTOR, PBFT_MUTANTS
from ostrom.conformance.vectors import vector_errors as errors
from ostrom.consensus.crypto import derive_key, public_bytes
from ostrom.consensus.messages import NULL_DIGEST, Prepare, Request, canonical
from ostrom.consensus.replica import CounterApp
from ostrom.verify.tlc.itf import read_itf

# one xdist worker holds the module's fixture (--dist loadfile, conftest.py)

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "vectors" / "pbft"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], float]:
    out = tmp_path_factory.mktemp("vectors")
    start = time.perf_counter()
    paths = generate_pbft_vectors(out)
    return out, paths, time.perf_counter() - start


def _vectors(paths: list[Path]) -> dict[str, dict[str, Any]]:
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in paths if "traces" not in p.parts]
    return {d["id"]: d for d in docs}


def replay(layer: Layer, vector: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The first step whose observation differs from the vector's (index, what we got)."""
    layer.reset(vector["params"], vector["setup"])
    for i, step in enumerate(vector["steps"]):
        got = json.loads(json.dumps(layer.step(step["command"])))
        if got != step["expect"]:
            return i, got
    return None


# --- the vectors ----------------------------------------------------------------------------


def test_vectors_replay_on_the_reference(generated: tuple[Path, list[Path], float]) -> None:
    _out, paths, _t = generated
    vectors = _vectors(paths)
    assert 20 <= len(vectors) <= 45
    for vid, vec in vectors.items():
        assert replay(PBFTLayer(), vec) is None, vid


def test_vector_shape(generated: tuple[Path, list[Path], float]) -> None:
    out, paths, _t = generated
    vectors = _vectors(paths)
    per_action = Counter(v["action"] for v in vectors.values())
    assert set(per_action) == set(ACTIONS), per_action
    for vid, v in vectors.items():
        assert v["format"] == VECTOR_FORMAT and v["layer"] == "pbft"
        assert vid == f"pbft/{v['action']}/{Path(vid).name}"
        assert (out / f"{vid}.json").exists()
        assert v["source"] in ("reference:simulation", "reference:examples")
        assert errors(v, f"{vid}.json") == []
        assert v["steps"] and v["description"]
        setup = v["setup"]
        assert {"n", "f", "id", "key_seed", "clients", "base_timeout"} == set(setup)
        for step in v["steps"]:
            for ev in step["expect"]["events"]:
                assert ev["event"] in ("send", "execute", "reject")
            assert "private" not in json.dumps(step["expect"]["state"])


def test_events_are_in_canonical_order(generated: tuple[Path, list[Path], float]) -> None:
    """rejects (by reason), executes (in order), sends (by canonical bytes)."""
    rank = {"reject": 0, "execute": 1, "send": 2}
    for v in _vectors(generated[1]).values():
        for step in v["steps"]:
            evs = step["expect"]["events"]
            assert [rank[e["event"]] for e in evs] == sorted(rank[e["event"]] for e in evs)
            sends = [canonical(e) for e in evs if e["event"] == "send"]
            assert sends == sorted(sends)
            reasons = [e["reason"] for e in evs if e["event"] == "reject"]
            assert reasons == sorted(reasons)
            seqs = [e["seq"] for e in evs if e["event"] == "execute"]
            assert seqs == sorted(seqs)


def test_generation_is_deterministic_and_fast(
    generated: tuple[Path, list[Path], float], tmp_path: Path
) -> None:
    out, paths, seconds = generated
    again = generate_pbft_vectors(tmp_path)
    assert [p.relative_to(tmp_path) for p in again] == [p.relative_to(out) for p in paths]
    for a, b in zip(paths, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a
    assert seconds < 20


def test_generation_removes_stale_files(tmp_path: Path) -> None:
    stale = tmp_path / "pbft" / "commit" / "gone.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    generate_pbft_vectors(tmp_path)
    assert not stale.exists()


def test_committed_vectors_are_current(generated: tuple[Path, list[Path], float]) -> None:
    if not COMMITTED.exists():
        pytest.skip("vectors/pbft not generated in this checkout")
    out, paths, _t = generated
    fresh = {p.relative_to(out / "pbft"): p.read_bytes() for p in paths}
    committed = {p.relative_to(COMMITTED): p.read_bytes() for p in COMMITTED.rglob("*.json")}
    assert sorted(committed) == sorted(fresh)
    stale = [str(k) for k in fresh if committed[k] != fresh[k]]
    assert not stale, f"regenerate vectors/pbft: {stale}"


def test_traces_are_itf(generated: tuple[Path, list[Path], float]) -> None:
    traces = [p for p in generated[1] if "traces" in p.parts]
    assert len(traces) == 2
    for p in traces:
        doc = read_itf(p)
        assert doc["vars"] == ["view", "status", "last_exec", "stable"]
        states = doc["states"]
        assert [s["#meta"]["index"] for s in states] == list(range(len(states)))
        last = states[-1]
        assert all(v >= 1 for _r, v in last["last_exec"]["#map"])
        assert {k for k, _v in last["view"]["#map"]} == {0, 1, 2, 3}


# --- the mutant -----------------------------------------------------------------------------


def test_prepares_twice_is_caught(generated: tuple[Path, list[Path], float]) -> None:
    layer, factory, description = PBFT_MUTANTS["pbft-prepares-twice"]
    assert layer == "pbft" and CATCHING_VECTOR in description
    vectors = _vectors(generated[1])
    caught = replay(factory(), vectors[CATCHING_VECTOR])
    assert caught is not None
    index, got = caught
    assert index == 1  # the conflicting PRE-PREPARE
    prepares = [
        e
        for e in got["events"]
        if e["event"] == "send" and e["message"]["message"]["type"] == "Prepare"
    ]
    assert len(prepares) == 1  # the second PREPARE in view 0 at seq 1
    killed = sorted(vid for vid, v in vectors.items() if replay(factory(), v) is not None)
    assert CATCHING_VECTOR in killed


def test_mutant_registry_shape() -> None:
    for name, (layer, factory, description) in PBFT_MUTANTS.items():
        assert name.startswith("pbft-") and layer == "pbft" and description
        built: Layer = factory()
        assert built.name == "pbft"


# --- bad commands and setups -----------------------------------------------------------------

SETUP: dict[str, Any] = {
    "n": 4,
    "f": 1,
    "id": 1,
    "key_seed": 7,
    "clients": ["c0", "c1"],
    "base_timeout": 100,
}


def _prepare_tree() -> dict[str, Any]:
    key = derive_key(7, "r2")
    msg = Prepare(0, 1, "0" * 64, 2)
    return {
        "type": "Signed",
        "message": msg.tree(),
        "sender": "r2",
        "signature": key.sign(msg.encoded).hex(),
    }


BAD_COMMANDS: list[Callable[[], Any]] = [
    lambda: {},
    lambda: {"op": "deliver"},
    lambda: {"op": None},
    lambda: {"op": "message"},
    lambda: {"op": "message", "message": "Signed"},
    lambda: {"op": "message", "message": [1, 2]},
    lambda: {"op": "message", "message": _prepare_tree(), "to": 1},
    lambda: {"op": "request", "message": _prepare_tree()},
    lambda: {"op": "request", "message": {"type": "Signed"}},
    lambda: {"op": "timeout", "replica": 1},
    lambda: {"op": "retransmit", "now": True},
]


@pytest.mark.parametrize("make", BAD_COMMANDS)
def test_malformed_commands_are_invalid_input(make: Callable[[], Any]) -> None:
    layer = PBFTLayer()
    layer.reset({}, SETUP)
    layer.step({"op": "message", "message": _prepare_tree()})  # some state first
    before = layer.state()
    rejected = Counter(layer.replica.rejected)
    obs = layer.step(make())
    assert dict(obs) == {"result": "invalid_input", "events": [], "state": before}
    assert layer.state() == before and layer.replica.rejected == rejected


def test_ill_typed_message_is_the_replicas_malformed() -> None:
    layer = PBFTLayer()
    layer.reset({}, SETUP)
    obs = layer.step({"op": "message", "message": {"type": "Signed", "message": {}}})
    assert obs["result"] == "ok"
    assert obs["events"] == [{"event": "reject", "reason": "malformed"}]


@pytest.mark.parametrize(
    "setup, params",
    [
        ({**SETUP, "n": 3}, {}),
        ({**SETUP, "id": 4}, {}),
        ({**SETUP, "key_seed": "7"}, {}),
        ({**SETUP, "clients": ["r1"]}, {}),
        ({**SETUP, "base_timeout": 0}, {}),
        ({**SETUP, "colour": "red"}, {}),
        (SETUP, {"checkpoint_k": 0}),
        (SETUP, {"no_such_param": 1}),
    ],
)
def test_bad_setup_is_refused(setup: dict[str, Any], params: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        PBFTLayer().reset(params, setup)


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError):
        PBFTLayer().step({"op": "timeout"})


# --- what docs/conformance.md promises an implementer ---------------------------------------


def test_documented_key_derivation_and_encoding() -> None:
    """The worked example of docs/conformance.md, "The pbft layer"."""
    seed = hashlib.sha256(b"7|r0").digest()
    key = derive_key(7, "r0")
    assert key.private_bytes_raw() == seed
    assert public_bytes(key).hex() == DOC_R0_PUBLIC
    msg = Prepare(0, 1, "0" * 64, 2)
    assert canonical(msg.tree()) == DOC_PREPARE_BYTES
    assert derive_key(7, "r2").sign(msg.encoded).hex() == DOC_PREPARE_SIGNATURE
    req = Request("c0", 1, {"op": "add", "key": "a", "value": 1})
    assert req.msg_digest == DOC_REQUEST_DIGEST
    app = CounterApp()
    assert app.digest() == DOC_GENESIS == hashlib.sha256(b"ostrom-pbft-genesis").hexdigest()
    assert app.execute(req.operation) == {"n": 1}
    assert app.digest() == DOC_APP_DIGEST_1
    assert NULL_DIGEST == DOC_NULL == hashlib.sha256(b"ostrom-pbft-null-request").hexdigest()


DOC_R0_PUBLIC = "650550ae44f65e99417ebcdf04c979e85cc268d9b15a73179921f0b283927879"
DOC_PREPARE_BYTES = (
    b'{"digest":"0000000000000000000000000000000000000000000000000000000000000000",'
    b'"replica":2,"seq":1,"type":"Prepare","view":0}'
)
DOC_PREPARE_SIGNATURE = (
    "d6c46e64f9365ae29f46c982f8d02d7483faed93e54ca5f3ea3306bb9fa74d6b"
    "53233cfed09b5b02ad0ff2c18a13a37e37b0733d9b317278a196ea4eac11be0a"
)
DOC_REQUEST_DIGEST = "0e97fd1608c78dd31b0f9d6a670a9ee15d2ccdde992fb2376a465dcf766e70c2"
DOC_GENESIS = "5d4a665aafe7080e1d8542b0fcb5d907384dd5482704311ded038f163cbd8f70"
DOC_APP_DIGEST_1 = "15f912e79a76bb7c074f4ffec4c5a2748abbea0e9502dd7afd0f5f0047c73a7d"
DOC_NULL = "06159d66b50cc3282e1bceaf18a142b1c10966146dcdf726f594b1644291a91f"
