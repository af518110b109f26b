"""The node over HTTP (service/app.py) through httpx's ASGI transport (no network): the
routes are the OpenAPI table's, and GET /openapi.json serves its document; CR-1 holds at every
endpoint during a real ballot's commit phase; every error is a stable JSON code; no
request, however hostile, gets a 500 or changes anything when refused."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.service import node as node_module
from ostrom.service import openapi
from ostrom.service.app import create_app
from ostrom.service.gate import GATE_ERRORS, Gate
from ostrom.service.node import REDACTED, Node
from service_world import (
    COMMUNITY,
    FOUNDERS,
    OPERATOR,
    PARAMS,
    SALT,
    SECRET_REASON,
    Signer,
    commit_phase,
    decided,
    setup,
)


def _node(tmp: Path) -> Node:
    return Node.open(tmp / "n.db", params=PARAMS, setup=setup(), fsync=False)


def _run(node: Node, body: Callable[[httpx.AsyncClient], Any]) -> Any:
    async def go() -> Any:
        transport = httpx.ASGITransport(app=create_app(node))
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            return await body(c)

    return asyncio.run(go())


def test_openapi_matches_the_routes(tmp_path: Path) -> None:
    # schema/openapi.json and docs/service.md's tables are generated from the same table
    # (ostrom docs; the registry's drift test, codegen/test_generated.py, checks them)
    node = _node(tmp_path)
    app = create_app(node)
    served = {(r.path, m) for r in app.routes for m in (r.methods or ()) if m != "HEAD"}  # type: ignore[attr-defined]
    assert served == {(e.path, e.method) for e in openapi.ENDPOINTS}

    async def body(c: httpx.AsyncClient) -> Any:
        return (await c.get("/openapi.json")).json()

    assert _run(node, body) == openapi.openapi()


def test_every_error_code_is_documented_in_the_openapi_document() -> None:
    doc = openapi.openapi()
    assert doc["components"]["schemas"]["Error"]["properties"]["error"]["enum"] == sorted(
        GATE_ERRORS
    )
    post = doc["paths"]["/commands"]["post"]["responses"]
    for code in ("malformed", "unsigned", "replayed", "too_large", "db_unavailable"):
        assert code in post[str(GATE_ERRORS[code].status)]["description"]


READS = [
    "/artifacts",
    "/artifacts/x",
    "/agents",
    "/slots",
    "/log?after=0&limit=1000",
    "/events?after=0&timeout=0",
    "/health",
]


async def _read_everything(c: httpx.AsyncClient) -> list[str]:
    paths = READS + [f"/agents/{a}" for a in (*FOUNDERS, "n", OPERATOR)]
    return [(await c.get(p)).text for p in paths]


def _leaks(texts: list[str]) -> list[str]:
    """What of a committed vote an outsider could read: the reason or salt of any reveal,
    a reveal_vote command with its vote, a non-null ``revealed`` tally."""
    found = []
    for t in texts:
        if SECRET_REASON in t or SALT in t:
            found.append("reason or salt")
        doc = json.loads(t)
        for e in doc.get("entries", []):
            if e["command"].get("op") == "reveal_vote" and e["command"].get("vote") != REDACTED:
                found.append(f"reveal at pos {e['pos']}")
        arts = doc.get("artifacts", {}) if "artifacts" in doc else {}
        for a in [*arts.values(), doc] if isinstance(arts, dict) else []:
            if isinstance(a, dict) and a.get("revealed"):
                found.append("revealed tally")
    return found


def _commit_phase_reads(tmp_path: Path) -> tuple[list[int], list[str], dict[str, Any]]:
    node, s = _node(tmp_path), Signer()

    async def body(c: httpx.AsyncClient) -> tuple[list[int], list[str]]:
        statuses = [(await c.post("/commands", json=e)).status_code for e in commit_phase(s)]
        return statuses, await _read_everything(c)

    statuses, texts = _run(node, body)
    return statuses, texts, node.public_state()


def test_cr1_no_endpoint_exposes_a_committed_vote_during_the_commit_phase(
    tmp_path: Path,
) -> None:
    statuses, texts, state = _commit_phase_reads(tmp_path)
    assert set(statuses) == {200}
    assert state["artifacts"]["x"]["phase"] == "commit"
    assert sorted(state["artifacts"]["x"]["committed"]) == sorted(FOUNDERS)
    assert _leaks(texts) == []
    assert SECRET_REASON not in json.dumps(state)


def test_cr1_check_catches_an_unredacted_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: public endpoints show refused reveals as they were sent."""
    monkeypatch.setattr(node_module, "public_command", lambda command, result: command)
    _, texts, _ = _commit_phase_reads(tmp_path)
    assert "reason or salt" in _leaks(texts)


def test_cr1_the_error_log_redacts_what_the_core_raised_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A core that raises on a reveal (a bug): the node logs the command it raised on to
    its error log (stderr), redacted as every output path (node.public_command, result
    unknown); before, the vote, reason and salt went to stderr as sent."""
    node, s = _node(tmp_path), Signer()
    envs = commit_phase(s)
    original = node.gate.apply_admitted

    def raising(envelope: Any, adm: Any) -> Any:
        if envelope["command"]["op"] == "reveal_vote":
            raise RuntimeError("a bug")
        return original(envelope, adm)

    monkeypatch.setattr(node.gate, "apply_admitted", raising)
    with caplog.at_level("ERROR", logger="ostrom.service.node"):
        replies = [node.submit(e) for e in envs]
    assert any(r.status == 500 for r in replies)
    assert "the core raised on" in caplog.text and REDACTED in caplog.text
    assert SECRET_REASON not in caplog.text and SALT not in caplog.text
    node.close()


def test_after_the_commit_phase_the_reveals_are_public(tmp_path: Path) -> None:
    node, s = _node(tmp_path), Signer()

    async def body(c: httpx.AsyncClient) -> list[dict[str, Any]]:
        for e in commit_phase(s) + decided(s):
            assert (await c.post("/commands", json=e)).status_code == 200
        return (await c.get("/log?limit=1000")).json()["entries"]  # type: ignore[no-any-return]

    entries = _run(node, body)
    reveals = [e for e in entries if e["command"]["op"] == "reveal_vote"]
    assert [e["result"] for e in reveals] == ["wrong_phase"] + ["ok"] * 5
    assert reveals[0]["command"]["reason"] == REDACTED
    assert all(e["command"]["reason"] == SECRET_REASON for e in reveals[1:])


def test_the_errors_of_the_write_path(tmp_path: Path) -> None:
    node, s = _node(tmp_path), Signer()
    env = s.env("f1", {"op": "object", "agent": "f1", "artifact": "a"})

    async def body(c: httpx.AsyncClient) -> list[tuple[int, str]]:
        out = []
        for content in (
            b"{",
            b"[1]",
            b"NaN",
            b'"\\ud800"',
            b"\xff",
            b"[" * 60000,
            b'{"agent": "\\ud800", "seq": 1, "command": {"op": "tick"}, "signature": "00"}',
            json.dumps({**env, "signature": "00" * 64}).encode(),
            json.dumps(env).encode(),
            json.dumps(env).encode(),
            json.dumps({**env, "command": {"op": "nope"}}).encode(),
        ):
            r = await c.post("/commands", content=content)
            out.append((r.status_code, r.json().get("error", r.json().get("result"))))
        r = await c.post("/commands", content=b" " * (openapi.BODY_LIMIT + 1))
        out.append((r.status_code, r.json()["error"]))

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(openapi.BODY_LIMIT // 1024 + 2):
                yield b" " * 1024

        r = await c.post("/commands", content=chunks())  # no Content-Length: counted as read
        out.append((r.status_code, r.json()["error"]))
        return out

    got = _run(node, body)
    assert got == [
        (400, "malformed"),
        (400, "malformed"),
        (400, "malformed"),
        (400, "malformed"),
        (400, "malformed"),
        (400, "malformed"),
        (400, "malformed"),
        (401, "bad_signature"),
        (200, "unknown_artifact"),
        (200, "unknown_artifact"),
        (403, "impersonation"),
        (413, "too_large"),
        (413, "too_large"),
    ]
    assert node.last_pos == 1


SEGMENT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"), exclude_characters="/?#% "),
    max_size=6,
)
PATHS = st.sampled_from([e.path.split("{")[0] for e in openapi.ENDPOINTS] + ["/", "/x/y"])
QUERY = st.dictionaries(
    st.sampled_from(["after", "limit", "timeout", "x"]),
    st.sampled_from(["0", "-1", "1e9", "nan", "99999999999999999999999", "", "abc", "3"]),
    max_size=3,
)
BODY = st.one_of(
    st.binary(max_size=64),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=4),
        max_leaves=12,
    ).map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD"]), PATHS, SEGMENT, QUERY, BODY
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fuzz_every_endpoint_no_500_stable_errors_nothing_changed(
    tmp_path_factory: pytest.TempPathFactory, requests: list[Any]
) -> None:
    node = _node(tmp_path_factory.mktemp("fz"))
    s = Signer()
    node.submit(
        s.env("f1", {"op": "propose", "agent": "f1", "artifact": "a", "slot": "s", "digest": "d"})
    )
    before = copy.deepcopy(node.public_state())

    async def body(c: httpx.AsyncClient) -> None:
        for method, path, seg, query, content in requests:
            url = path + (seg if path.endswith("/") and path != "/" else "")
            if "timeout" in query or path.startswith("/events"):
                query = {**query, "timeout": "0"}
            r = await c.request(method, url, params=query, content=content)
            assert r.status_code < 500 or r.status_code == 503, (method, url, r.text)
            if method != "HEAD":
                doc = r.json()
                if r.status_code >= 400:
                    assert set(doc) == {"error", "detail"} and doc["error"] in GATE_ERRORS

    _run(node, body)
    assert node.public_state() == before and node.last_pos == 1


#: Values a payload field may be sent with: text (with lone surrogates, which JSON can
#: spell and UTF-8 cannot encode), text around every bound, and every other JSON type.
TEXTISH = st.one_of(
    st.text(max_size=6),
    st.text(st.characters(categories=["Cs", "Ll"]), min_size=1, max_size=3),  # surrogates
    st.sampled_from(["", "é" * 32, "é" * 33, "t" * 64, "t" * 65, "t" * 256, "t" * 257, "s" * 2049]),
)
PAYLOAD_VALUE = st.one_of(
    TEXTISH,
    st.lists(TEXTISH, max_size=3),
    st.lists(st.just("tag"), min_size=32, max_size=33),
    st.none(),
    st.booleans(),
    st.integers(),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
#: Values an embedding may be sent with: numbers of the community's dimension (3) or not,
#: integers and floats, NaN and infinities (which JSON cannot carry), huge ones, booleans.
_COMPONENT = st.one_of(
    st.floats(-1, 1),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e9, -1e9, 1.0000001e9, 2**70, True]),
)
EMBEDDING_VALUE = st.one_of(
    st.lists(st.floats(-1, 1), min_size=3, max_size=3),
    st.lists(_COMPONENT, max_size=5),
    PAYLOAD_VALUE,
)
PAYLOAD = st.dictionaries(
    st.sampled_from(["content", "title", "tags", "source"]), PAYLOAD_VALUE, min_size=1
) | st.fixed_dictionaries(
    {"embedding": EMBEDDING_VALUE}, optional={"content": TEXTISH, "title": TEXTISH}
)
CONTENT_LIMIT = 64  # "é" * 32 and "t" * 64 are exactly at it, "é" * 33 and "t" * 65 over
EMBEDDING_DIM = 3


def _utf8(v: object) -> bool:
    if not isinstance(v, str):
        return False
    try:
        v.encode()
    except UnicodeEncodeError:
        return False
    return True


def _expected(payload: dict[str, Any], digest: str) -> str:
    """What the node must answer, from the rules as docs/service.md states them (written
    here independently of gate.payload_refusal)."""

    def text(v: object, lo: int, hi: int) -> bool:
        return _utf8(v) and lo <= len(v) <= hi  # type: ignore[arg-type]

    def number(v: object) -> bool:
        return type(v) in (int, float) and math.isfinite(v) and abs(v) <= 1e9  # type: ignore[arg-type]

    if "embedding" in payload:
        e = payload["embedding"]
        if isinstance(e, list) and any(isinstance(x, float) and not math.isfinite(x) for x in e):
            return "malformed"  # JSON has no NaN nor infinity: the body is not JSON
        if not (isinstance(e, list) and 1 <= len(e) <= 4096 and all(number(x) for x in e)):
            return "bad_embedding"
        if len(e) != EMBEDDING_DIM:
            return "embedding_dimension"
    checks: dict[str, Callable[[Any], bool]] = {
        "embedding": lambda v: True,  # checked above
        "content": lambda v: _utf8(v),
        "title": lambda v: text(v, 0, 256),
        "tags": lambda v: isinstance(v, list) and len(v) <= 32 and all(text(t, 1, 64) for t in v),
        "source": lambda v: text(v, 0, 2048),
    }
    if not all(checks[k](v) for k, v in payload.items()):
        return "bad_content"
    if len(payload.get("content", "").encode()) > CONTENT_LIMIT:
        return "content_too_large"
    canon = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if digest != hashlib.sha256(canon.encode()).hexdigest():
        return "digest_mismatch"
    return "ok"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["propose", "resubmit"]), PAYLOAD, st.booleans()),
        min_size=1,
        max_size=5,
    )
)
def test_fuzz_payload_fields_stable_codes_nothing_changed(
    tmp_path_factory: pytest.TempPathFactory, sends: list[Any]
) -> None:
    """The payload fields, the embedding among them, fuzzed in signed envelopes (authentic,
    in sequence: they reach the payload checks): never a 500; each refusal the code the
    rules give, with nothing changed (log, state, stored payloads); each acceptance served
    back as sent."""
    from ostrom.protocol.commands import payload_digest
    from ostrom.protocol.params import Params

    tmp = tmp_path_factory.mktemp("pl")
    params = Params(content_limit=CONTENT_LIMIT, embedding_dim=EMBEDDING_DIM)
    node = Node.open(tmp / "n.db", params=params, setup=setup(), fsync=False)
    s = Signer()

    async def body(c: httpx.AsyncClient) -> None:
        for i, (op, payload, honest) in enumerate(sends):
            try:
                digest = payload_digest(payload) if honest else "d"
            except (TypeError, ValueError, OverflowError):  # lone surrogates: no digest
                digest = "0" * 64
            who = FOUNDERS[i % len(FOUNDERS)]  # one proposal each: no rate limit
            cmd = {"op": op, "agent": who, "artifact": f"a{i}", "digest": digest, **payload}
            if op == "propose":
                cmd["slot"] = f"s{i}"
            env = s.env(who, cmd)
            before = (copy.deepcopy(node.public_state()), node.last_pos)
            stored = node.store.payload_count()
            r = await c.post("/commands", content=json.dumps(env).encode())  # ASCII JSON
            doc = r.json()
            want = _expected(payload, digest)
            if want != "ok":
                assert (r.status_code, doc["error"]) == (GATE_ERRORS[want].status, want), doc
                assert (node.public_state(), node.last_pos) == before
                assert node.store.payload_count() == stored
                s.seq[who] -= 1  # refused: the seq is free again
                continue
            assert r.status_code == 200, doc
            if op == "propose":  # a resubmit of an unknown artifact: refused by the protocol
                assert doc["result"] == "ok"
                served = (await c.get(f"/artifacts/a{i}/content")).json()
                assert served == {"artifact": f"a{i}", "digest": digest, **payload}

    _run(node, body)
    node.close()


def test_every_answer_matches_its_openapi_schema(tmp_path: Path) -> None:
    """The document does not lie: real answers of a ballot, a dispute and the reads
    validate against the response schemas the document declares."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

    doc = openapi.openapi()

    def check(path: str, method: str, status: int, body: Any) -> None:
        spec = doc["paths"][path][method]["responses"][str(status)]
        schema = spec["content"]["application/json"]["schema"]
        errors = list(Draft202012Validator({**doc, **schema}).iter_errors(body))
        assert not errors, (path, status, errors[0].message)

    node, s = _node(tmp_path), Signer()

    async def body(c: httpx.AsyncClient) -> None:
        envelope = Draft202012Validator({**doc, "$ref": "#/components/schemas/Envelope"})
        for e in commit_phase(s) + decided(s):
            assert not list(envelope.iter_errors(e)), e  # what the node takes, as documented
            r = await c.post("/commands", json=e)
            check("/commands", "post", r.status_code, r.json())
        assert list(envelope.iter_errors({**e, "command": {"op": "tick", "x": 1}}))
        r = await c.post("/commands", json=e)  # a retry
        check("/commands", "post", r.status_code, r.json())
        r = await c.post("/commands", json={**e, "seq": 99})
        check("/commands", "post", r.status_code, r.json())
        from ostrom.protocol.commands import payload_digest

        payload = {"content": "c", "title": "t", "tags": ["a"], "source": "s"}
        cmd = {"op": "propose", "agent": "f3", "artifact": "c", "slot": "c"}
        r = await c.post(
            "/commands", json=s.env("f3", {**cmd, "digest": payload_digest(payload), **payload})
        )
        check("/commands", "post", r.status_code, r.json())
        r = await c.post("/commands", json=s.env("f3", {**cmd, "digest": "d", **payload}))
        check("/commands", "post", r.status_code, r.json())
        for url, path in [
            ("/artifacts", "/artifacts"),
            ("/artifacts/x", "/artifacts/{artifact}"),
            ("/artifacts/nope", "/artifacts/{artifact}"),
            ("/artifacts/c/content", "/artifacts/{artifact}/content"),
            ("/artifacts/x/content", "/artifacts/{artifact}/content"),
            ("/artifacts/nope/content", "/artifacts/{artifact}/content"),
            ("/agents", "/agents"),
            ("/agents/f1", "/agents/{agent}"),
            (f"/agents/{OPERATOR}", "/agents/{agent}"),
            ("/agents/nobody", "/agents/{agent}"),
            ("/slots", "/slots"),
            ("/log?after=3&limit=5", "/log"),
            ("/log?after=x", "/log"),
            ("/events?after=0&timeout=0", "/events"),
            ("/health", "/health"),
        ]:
            r = await c.get(url)
            check(path, "get", r.status_code, r.json())

    _run(node, body)


def test_events_as_server_sent_events_redacted_and_resumable(tmp_path: Path) -> None:
    node, s = _node(tmp_path), Signer()
    envs = commit_phase(s)
    for e in envs:
        node.submit(e)

    async def body(c: httpx.AsyncClient) -> tuple[str, str, int]:
        sse = {"accept": "text/event-stream"}
        full = await c.get("/events?after=0&timeout=0.1&limit=1000", headers=sse)
        resumed = await c.get(
            "/events?timeout=0.1", headers={**sse, "last-event-id": str(len(envs) - 1)}
        )
        bad = await c.get("/events?timeout=0", headers={**sse, "last-event-id": "x"})
        return full.text, resumed.text, bad.status_code

    full, resumed, bad = _run(node, body)
    ids = [int(line[4:]) for line in full.splitlines() if line.startswith("id: ")]
    assert ids == list(range(1, len(envs) + 1))
    assert SECRET_REASON not in full and SALT not in full and REDACTED in full
    assert [line for line in resumed.splitlines() if line.startswith("id: ")] == [
        f"id: {len(envs)}"
    ]
    assert bad == 422


SENDERS = st.sampled_from([*FOUNDERS, OPERATOR, "n", "z"])
OPS = st.sampled_from(["tick", "propose", "object", "join", "forget_vote", "garbage"])


@settings(max_examples=40)
@given(st.lists(st.tuples(OPS, SENDERS, st.integers(0, 2), st.integers(-1, 1)), max_size=25))
def test_the_http_node_answers_what_the_gate_answers(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Any]
) -> None:
    """The node is a thin layer: over HTTP, every envelope gets the gate's answer (its
    observation, or its refusal code) and the node's state is the gate's."""
    from ostrom.service.identity import public_hex, sign_envelope
    from service_world import key

    node, ref = _node(tmp_path_factory.mktemp("eq")), Gate(PARAMS, setup())
    seqs: dict[str, int] = {}
    envs = []
    for op, who, i, skew in steps:
        seq = max(1, seqs.get(who, 0) + 1 + skew)  # -1: a replay, +1: a gap
        seqs[who] = max(seqs.get(who, 0), seq)
        cmd: dict[str, Any] = {"op": op, "agent": who, "artifact": f"a{i}"}
        if op == "tick":
            cmd = {"op": "tick"}
        elif op == "propose":
            cmd |= {"slot": f"s{i}", "digest": "d"}
        elif op == "join":
            cmd = {"op": "join", "agent": who}
        pk = public_hex(key(who)) if op == "join" else None
        envs.append(sign_envelope(key(who), who, seq, cmd, pk, community=COMMUNITY))

    async def body(c: httpx.AsyncClient) -> list[Any]:
        return [(await c.post("/commands", json=e)).json() for e in envs]

    replies = _run(node, body)
    for e, r in zip(envs, replies, strict=True):
        adm = ref.admit(e)
        obs = ref.apply(e)
        if adm.ok:
            assert (r["result"], r["events"]) == (
                obs["result"],
                json.loads(json.dumps(obs["events"])),
            )
        elif r.get("retry"):  # the identical envelope again: answered from the log
            assert adm.code == "replayed"
        else:
            assert r["error"] == adm.code
    assert node.public_state() == ref.public_state()
