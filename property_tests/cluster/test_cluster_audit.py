"""The cluster's audit (ostrom/cluster/audit.py) fails on doctored logs.

Each check is fed logs built from signed requests, once as a correct run would leave
them (it passes) and once doctored (it must fail): two replicas that executed different
requests at one sequence number (BFT-SAFE-1), a replica missing an acknowledged command,
a replica whose reported state is not its log's, and an executor that drops the last
command of every batch (REPL-1 against the single node's replay).  The audit of real
stores after real faults is in test_cluster_faults.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ostrom.cluster.app import batch_operation, core_factory, execute_operation
from ostrom.cluster.audit import (
    AuditError,
    ReplicaLog,
    check_acknowledged,
    check_repl1,
    check_safety,
    committed_commands,
    read_log,
)
from ostrom.cluster.config import parse
from ostrom.cluster.payloads import ordered_form
from ostrom.consensus.application import Core
from ostrom.consensus.crypto import derive_key, make_keys
from ostrom.consensus.messages import Request, Signed
from ostrom.service.identity import public_hex, sign_envelope

CFG = parse(
    b"""
[cluster]
n = 4
f = 1
community = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
[front]
host = "127.0.0.1"
port = 1
http_port = 2
"""
    + b"".join(
        f'[[replica]]\nid = {i}\nhost = "127.0.0.1"\nport = {10 + i}\n'.encode() for i in range(4)
    ),
    base=Path("."),
)
FACTORY = core_factory(CFG)
_, SIGNERS = make_keys(1, ["c0", "c1"])


def req(client: str, ts: int, commands: list[Any]) -> Signed:
    return SIGNERS[client].sign(Request(client, ts, batch_operation(commands)))


def join(i: int) -> dict[str, Any]:
    """The signed envelope of agent a<i>'s join (what the gate admits)."""
    agent = f"a{i}"
    key = derive_key(b"audit", agent)
    return sign_envelope(
        key, agent, 1, {"op": "join", "agent": agent}, public_hex(key), community=CFG.community
    )


HISTORY: tuple[Signed | None, ...] = (
    req("c0", 1, [join(0), join(1)]),
    None,  # a null request (a view change filled a gap)
    req("c1", 1, [join(2)]),
    req("c0", 1, [join(0), join(1)]),  # a duplicate timestamp: executed once
    req("c0", 2, [join(3), join(5), join(4)]),
)


def logs(**over: tuple[Signed | None, ...]) -> dict[int, ReplicaLog]:
    out = {i: ReplicaLog(i, HISTORY, 0, 0) for i in range(4)}
    for k, h in over.items():
        i = int(k[1:])
        out[i] = ReplicaLog(i, h, 0, 0)
    return out


def test_the_commands_of_a_log() -> None:
    cmds = committed_commands(logs()[0])
    assert cmds == [join(0), join(1), join(2), join(3), join(5), join(4)]


def test_safety_passes_on_prefixes_and_fails_on_a_conflict() -> None:
    check_safety(logs(r2=HISTORY[:3]))  # a replica behind: a prefix is fine
    doctored = (*HISTORY[:2], req("c1", 1, [join(9)]), *HISTORY[3:])
    with pytest.raises(AuditError, match=r"BFT-SAFE-1: replicas 0 and 1 .* sequence number 3"):
        check_safety(logs(r1=doctored))
    with pytest.raises(AuditError, match="sequence number 2"):
        check_safety(logs(r3=(HISTORY[0], HISTORY[2])))  # a request where a null was


def test_acknowledged_fails_when_a_replica_lacks_one() -> None:
    acked = [join(0), join(4), join(5)]
    check_acknowledged(logs(), acked)
    with pytest.raises(AuditError, match="replica 2 has not executed 2"):
        check_acknowledged(logs(r2=HISTORY[:4]), acked)


def test_an_acknowledged_proposal_is_found_without_its_payload() -> None:
    """The front orders a propose without its payload (cluster/payloads.py): the command
    acknowledged with its content is the one executed without it; another one is not."""
    from ostrom.protocol.commands import payload_digest

    key = derive_key(b"cli", "u0")
    payload = {"content": "the text"}
    cmd = {"op": "propose", "agent": "u0", "artifact": "x", "slot": "s"}
    acked = sign_envelope(
        key, "u0", 2, {**cmd, "digest": payload_digest(payload), **payload}, community=CFG.community
    )
    ordered = ordered_form(acked)
    assert "content" not in ordered["command"] and ordered["signature"] == acked["signature"]
    history = (*HISTORY, req("c1", 2, [ordered]))
    check_acknowledged(logs(r0=history, r1=history, r2=history, r3=history), [acked])
    other = sign_envelope(
        key, "u0", 2, {**cmd, "digest": payload_digest({"content": "x"})}, community=CFG.community
    )
    with pytest.raises(AuditError, match="has not executed 1"):
        check_acknowledged(logs(r0=history, r1=history, r2=history, r3=history), [other])


def test_repl1_passes_and_fails_on_a_wrong_reported_state() -> None:
    digests = check_repl1(logs(), FACTORY)
    assert len(set(digests.values())) == 1
    live = {i: (5, d) for i, d in digests.items()}
    check_repl1(logs(), FACTORY, live)
    live[1] = (5, "0" * 64)
    with pytest.raises(AuditError, match="REPL-1: replica 1 reported"):
        check_repl1(logs(), FACTORY, live)
    live[1] = (4, "0" * 64)  # reported at another point of its log: not comparable
    check_repl1(logs(), FACTORY, live)


def test_repl1_catches_an_executor_that_drops_a_command() -> None:
    def lossy(core: Core, operation: Any) -> dict[str, Any]:
        cmds = operation["batch"]
        return execute_operation(core, batch_operation(cmds[:-1] if len(cmds) > 1 else cmds))

    with pytest.raises(AuditError, match="differs from the single node's replay"):
        check_repl1(logs(), FACTORY, execute=lossy)


def test_a_missing_or_damaged_store_is_an_audit_failure(tmp_path: Path) -> None:
    cfg = parse(
        b'[cluster]\nn = 1\nf = 0\nkeys = "k"\ncommunity = "' + b"c0" * 16 + b'"\n'
        b'[front]\nhost = "h"\nport = 1\nhttp_port = 2\n'
        b'[[replica]]\nid = 0\nhost = "h"\nport = 3\n',
        base=tmp_path,
    )
    from ostrom.cluster.keys import generate

    generate(cfg.keys, ["r0"], seed=1)
    with pytest.raises(AuditError, match="replica 0: its store is refused"):
        read_log(cfg, 0)
    cfg.replica(0).db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    with pytest.raises(AuditError, match="replica 0: its store is refused"):
        read_log(cfg, 0)
