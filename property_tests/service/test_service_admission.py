"""Who may write, and where: attacks on real ``ostrom serve`` processes over loopback.

The attacks of issue 41, items 2 to 4 (docs/security.md, "who may write"), each bounded in
count and time, each against a node process started for it:

* ENV-1 — an envelope one node accepted, replayed to another node started from the same
  founders file, is refused there (before: applied on both: nothing signed named the
  community);
* ADM-1 — a join signed by any key for a name nobody registered, refused by the
  Community, leaves no trace: the real owner joins afterwards with the reference client
  (before: its join was ``replayed`` for ever and the client could not recover);
* ADM-2 — refused commands cost their sender a budget: a flood of refused 50 KiB joins
  from one key, or from a fresh key each time, is cut off with 429 and writes nothing to
  the log, while a registered agent on the same address, and one whose name a forger
  signs for, keep writing (before: every refused join was logged, 17.5 MB for 300);
* the join modes — ``pow`` and ``invite`` let in only a key with the proof.

Each test fails on the code before the fix (shown when it was written: see the report of
the change that added it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ostrom import layout
from ostrom.client import Client, ClientError
from ostrom.consensus.crypto import derive_key
from ostrom.service.identity import (
    load_key,
    public_hex,
    sign_envelope,
    sign_invite,
    solve_pow,
)
from service_world import serving_port

ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}
SEED = b"admission-tests"
FOUNDER = "f1"


def key(name: str) -> Any:
    return derive_key(SEED, name)


def founders_file(tmp: Path) -> Path:
    """One founder, f1, whose key is ``key("f1")``: the same file for every node."""
    p = tmp / "founders.toml"
    if not p.exists():
        p.write_text(
            f'[[founder]]\nid = "{FOUNDER}"\ntier = 2\nreputation = 0.9\nevidence = 20\n'
            f'public_key = "{public_hex(key(FOUNDER))}"\n'
        )
    return p


@contextlib.contextmanager
def node(tmp: Path, name: str, *options: str, params: str | None = None) -> Iterator[str]:
    """``ostrom serve`` of database ``tmp/name.db`` (the shared founders file, ``params``
    as its parameter file) on a free port; its URL."""
    cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(tmp / f"{name}.db")]
    cmd += ["--founders", str(founders_file(tmp)), "--fsync", "off", "--port", "0"]
    if params is not None:
        (tmp / f"{name}.toml").write_text(params)
        cmd += ["--params", str(tmp / f"{name}.toml")]
    proc = subprocess.Popen(
        [*cmd, *options], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=ENV
    )
    with serving_port(proc) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """Two nodes from the same founders file, each with a refusal budget of 8 (the tests
    that share them write from distinct loopback addresses, so their budgets are apart):
    the directory and their URLs."""
    tmp = tmp_path_factory.mktemp("pair")
    with node(tmp, "a", "--refusal-burst", "8") as a, node(tmp, "b", "--refusal-burst", "8") as b:
        yield tmp, a, b


def http_from(address: str) -> httpx.Client:
    """An HTTP client whose connections come from loopback ``address`` (127.0.0.0/8)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)


def community(url: str) -> str:
    return str(httpx.get(url + "/health", timeout=10).json()["community"])


def post(url: str, envelope: object, http: httpx.Client | None = None) -> httpx.Response:
    if http is not None:
        return http.post(url + "/commands", json=envelope)
    return httpx.post(url + "/commands", json=envelope, timeout=10)


def last_pos(url: str) -> int:
    return int(httpx.get(url + "/health", timeout=10).json()["last_pos"])


def propose(agent: str, artifact: str) -> dict[str, Any]:
    return {"op": "propose", "agent": agent, "artifact": artifact, "slot": artifact, "digest": "d"}


# --- ENV-1: one community's envelope is nobody else's -------------------------------------------


@pytest.mark.system
def test_an_envelope_accepted_by_one_node_is_refused_by_another(
    pair: tuple[Path, str, str],
) -> None:
    """Two nodes from the same founders file: a founder's proposal and a newcomer's join,
    accepted by node A, replayed byte for byte to node B, are refused there (401
    bad_signature) and B's log gains nothing; each node has its own community id."""
    _, a, b = pair
    ca, cb = community(a), community(b)
    assert ca != cb and re.fullmatch(r"[0-9a-f]{32}", ca)
    sent = [
        sign_envelope(key(FOUNDER), FOUNDER, 1, propose(FOUNDER, "x"), community=ca),
        sign_envelope(
            key("n"),
            "n",
            1,
            {"op": "join", "agent": "n"},
            public_hex(key("n")),
            community=ca,
        ),
    ]
    pos_a, pos_b = last_pos(a), last_pos(b)
    for env in sent:
        r = post(a, env)
        assert r.status_code == 200 and r.json()["result"] == "ok", r.text
    for env in sent:
        r = post(b, env)
        assert r.status_code == 401 and r.json()["error"] == "bad_signature", r.text
    assert last_pos(a) == pos_a + 2 and last_pos(b) == pos_b
    # the reference client learns each node's id and signs for it
    with Client(b, FOUNDER, key(FOUNDER)) as c:
        assert c.community_id() == cb
        assert c.send(propose(FOUNDER, "y"))["result"] == "ok"
    assert last_pos(b) == pos_b + 1


# --- ADM-1: nobody blocks a name -----------------------------------------------------------------


@pytest.mark.system
def test_a_refused_join_for_a_name_leaves_no_trace(pair: tuple[Path, str, str]) -> None:
    """An attacker's key signs joins for "victim" that the Community refuses (an unknown
    field, a bad subscription): 409 join_refused, nothing logged, the name's seq unused.
    The victim then joins with the reference client, and its seq starts at 1."""
    _, url, _ = pair
    cid = community(url)
    pos = last_pos(url)
    for cmd in (
        {"op": "join", "agent": "victim", "pad": "x"},
        {"op": "join", "agent": "victim", "subscriptions": [""]},
    ):
        # seq 1 both times: the first left the name's seq where it was
        mallory = key("mallory")
        env = sign_envelope(mallory, "victim", 1, cmd, public_hex(mallory), community=cid)
        r = post(url, env)
        assert r.status_code == 409 and r.json()["error"] == "join_refused", r.text
    assert last_pos(url) == pos
    assert httpx.get(url + "/agents/victim", timeout=10).status_code == 404
    with Client(url, "victim", key("victim")) as c:
        assert c.join()["result"] == "ok"
        assert c.send(propose("victim", "v"))["result"] == "ok"
    info = httpx.get(url + "/agents/victim", timeout=10).json()
    assert info["next_seq"] == 3 and info["public_key"] == public_hex(key("victim"))


# --- ADM-2: refusals cost a budget ------------------------------------------------------------


def _refused_join(cid: str, k: Any, name: str, seq: int, pad: int) -> dict[str, Any]:
    """A join the Community refuses (an unknown field of ``pad`` bytes), signed by ``k``."""
    cmd = {"op": "join", "agent": name, "pad": "x" * pad}
    return sign_envelope(k, name, seq, cmd, public_hex(k), community=cid)


def _db_bytes(tmp: Path, name: str) -> int:
    return sum(p.stat().st_size for p in tmp.glob(f"{name}.db*") if p.is_file())


def flood(tmp: Path, name: str, url: str, joins: int, burst: int, address: str) -> None:
    """``joins`` refused ~50 KiB joins from one key, then as many from a fresh key each,
    all from loopback ``address``, against node ``name`` (database ``tmp/name.db``, a
    refusal budget of ``burst``, 1 a second); meanwhile a registered agent on the same
    address writes, and a forger signs in its name with a wrong key."""
    cid = community(url)
    with http_from(address) as http:
        honest = sign_envelope(key("h"), "h", 1, {"op": "join", "agent": "h"},
                               public_hex(key("h")), community=cid)  # fmt: skip
        assert post(url, honest, http).json()["result"] == "ok"
        pos, before, t0 = last_pos(url), _db_bytes(tmp, name), time.monotonic()
        statuses: Counter[int] = Counter()
        for _ in range(joins):
            statuses[post(url, _refused_join(cid, key("m"), "m", 1, 50_000), http).status_code] += 1
        spent = time.monotonic() - t0
        # one key: the budget, plus what refilled meanwhile, and then 429s
        assert set(statuses) == {409, 429}, statuses
        assert statuses[409] <= burst + spent + 1, (statuses, spent)
        # a fresh key each time: the address's budget is spent already
        fresh = Counter(
            post(url, _refused_join(cid, key(f"s{i}"), f"s{i}", 1, 50_000), http).status_code
            for i in range(joins)
        )
        assert fresh[409] <= time.monotonic() - t0 - spent + 1, (fresh, spent)
        # forgeries in h's name (a wrong key) are charged to the address, not to h
        for i in range(burst + 2):
            forged = sign_envelope(key("m"), "h", 2, propose("h", f"f{i}"), community=cid)
            assert post(url, forged, http).status_code in (401, 429)
        for i in range(2):  # h, registered, on the same address, is never throttled
            env = sign_envelope(key("h"), "h", 2 + i, propose("h", f"h{i}"), community=cid)
            r = post(url, env, http)
            assert r.status_code == 200 and r.json()["result"] == "ok", r.text
    assert last_pos(url) == pos + 2  # h's two proposals, nothing of the flood
    grown = _db_bytes(tmp, name) - before
    # 2 x joins x 50 KiB were sent; the log grew by h's two rows only
    assert grown < 256 * 1024, grown
    print(f"\n{2 * joins} refused 50 KiB joins: database grew {grown} bytes; {statuses} {fresh}")


@pytest.mark.system
def test_a_flood_of_refused_joins_is_cut_off_and_logs_nothing(
    pair: tuple[Path, str, str],
) -> None:
    tmp, _, b = pair
    flood(tmp, "b", b, joins=40, burst=8, address="127.0.0.3")


@pytest.mark.system
@pytest.mark.slow
def test_three_hundred_refused_joins_as_in_the_issue(tmp_path: Path) -> None:
    with node(tmp_path, "n", "--refusal-burst", "32") as url:
        flood(tmp_path, "n", url, joins=300, burst=32, address="127.0.0.1")


def test_the_refusal_budget_in_process() -> None:
    """ADM-2 on the app itself (no process; the system tests above are the attack): a key
    refused ``burst`` times is answered 429 with Retry-After, so is a fresh key from the
    same address; a registered founder on that address is not, nor after forgeries in its
    name; a bucket refills at ``rate`` and forgets its least recent sender past
    ``max_senders``."""
    import asyncio
    import tempfile

    from ostrom.service.app import create_app
    from ostrom.service.budget import RefusalBudget
    from ostrom.service.node import Node
    from service_world import COMMUNITY, PARAMS, Signer, setup
    from service_world import key as world_key

    b = RefusalBudget(burst=2, rate=0.5, max_senders=2)
    b.charge(("a",), 0.0)
    b.charge(("a",), 0.0)
    assert b.wait(("a",), 0.0) == pytest.approx(2.0) and b.wait(("a",), 2.0) == 0.0
    b.charge(("b",), 0.0)
    b.charge(("c",), 0.0)  # "a" was charged least recently: forgotten, full again
    assert b.wait(("a",), 0.0) == 0.0
    with pytest.raises(ValueError):
        RefusalBudget(burst=0)

    async def attack(http: httpx.AsyncClient) -> None:
        def refused(name: str) -> dict[str, Any]:
            k = world_key(name)
            cmd = {"op": "join", "agent": name, "pad": "x"}
            return sign_envelope(k, name, 1, cmd, public_hex(k), community=COMMUNITY)

        codes = [(await http.post("/commands", json=refused("m"))).status_code for _ in range(5)]
        assert codes == [409, 409, 409, 429, 429], codes
        r = await http.post("/commands", json=refused("fresh"))
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert r.json()["error"] == "too_many_refusals"
        for i in range(5):  # forgeries in f1's name: 401, then 429, never charged to f1
            forged = sign_envelope(
                world_key("m"), "f1", 1, propose("f1", f"z{i}"), community=COMMUNITY
            )
            assert (await http.post("/commands", json=forged)).status_code in (401, 429)
        r = await http.post("/commands", json=Signer().env("f1", propose("f1", "x")))
        assert r.status_code == 200 and r.json()["result"] == "ok", r.text
        r = await http.post("/commands", content=b"not json")
        # charged to the address, which is over its budget: 429, like an envelope from it
        # (before: 400 malformed past any budget, so garbage was never cut off)
        assert r.status_code == 429 and r.json()["error"] == "too_many_refusals"

    with tempfile.TemporaryDirectory() as d:
        node = Node.open(Path(d) / "n.db", params=PARAMS, setup=setup(), fsync=False)
        try:
            app = create_app(node, refusals=RefusalBudget(burst=3, rate=0.01))

            async def go() -> None:
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://n") as c:
                    await attack(c)

            asyncio.run(go())
            assert node.last_pos == 1  # f1's proposal, nothing of the refused joins
        finally:
            node.close()


# --- join modes ----------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.slow
def test_pow_and_invite_let_in_only_a_key_with_the_proof(tmp_path: Path) -> None:
    """join_mode = pow (12 bits): no proof, or a proof for another key, is 403
    admission_required; a solved one joins.  join_mode = invite: an invitation signed by
    the node's operator joins, one signed by anyone else does not."""
    with node(tmp_path, "p", params='join_mode = "pow"\njoin_pow_bits = 12\n') as url:
        cid = community(url)
        with Client(url, "pat", key("pat")) as c:
            with pytest.raises(ClientError) as no_proof:
                c.join()
            assert no_proof.value.code == "admission_required"
            theirs = solve_pow(cid, public_hex(key("other")), 12)
            with pytest.raises(ClientError) as wrong:
                c.join(admission={"nonce": theirs})
            assert wrong.value.code == "admission_required"
            nonce = solve_pow(cid, public_hex(key("pat")), 12)
            assert c.join(admission={"nonce": nonce})["result"] == "ok"
        assert last_pos(url) == 1
    with node(tmp_path, "i", params='join_mode = "invite"\n') as url:
        cid = community(url)
        operator = load_key(tmp_path / "i.db.operator.key")
        with Client(url, "ivy", key("ivy")) as c:
            forged = sign_invite(key("m"), cid, public_hex(key("ivy")))
            with pytest.raises(ClientError) as bad:
                c.join(admission={"operator": "node", "invite": forged})
            assert bad.value.code == "admission_required"
            invite = sign_invite(operator, cid, public_hex(key("ivy")))
            assert c.join(admission={"operator": "node", "invite": invite})["result"] == "ok"
        assert json.loads(httpx.get(url + "/log", timeout=10).text)["last_pos"] == 1
