"""Crash harness: ``ostrom serve`` as a real process, SIGKILLed at random points.

Why a harness and not a mock: the node's durability promise (docs/service.md
"Durability") is about what survives the death of the *process* — SQLite's WAL, fsync,
the reply sent only after the commit, the client's retry of the same envelope.  Only a
real process killed with SIGKILL (no handler, no flush, no atexit) tests that.

One run (``run``):

* a founders file (founders at tiers 1-3, one operator) with keys derived from the seed;
* ``ostrom serve`` started as a subprocess (its own session, stdout/stderr to files,
  ``PYTHONPATH`` carrying this tree's code), readiness by polling ``GET /health`` with a
  deadline, always killed in a ``finally``;
* a few worker threads, each driving its own agents with ``ostrom.client.Client``
  (joins, proposals, commit/reveal votes in the right phases, disputes, forget votes)
  and one operator thread that ticks;
* the main thread sleeps a seeded random time, sends SIGKILL, checks the database
  files the dead process left (a copy: the check never touches the node's file), and
  restarts the node with ``--verify`` (the node's own full replay, every observation and
  snapshot compared) — many times.

What is checked after every kill (``check``), against what the harness recorded:
every acknowledged command is in the log exactly once, at the position it was
acknowledged with, with the very envelope that was signed and the observation that was
answered; per agent in acknowledged order; positions contiguous; every row is an
envelope the harness signed (nothing half-applied or invented); and the node's own
``replay(verify=True)`` of the copy agrees with every logged observation.  At the end
the node's public state equals a fresh replay of its log.

A command in flight when the kill lands is *unknown*: ``Client.send`` retries the same
envelope across the restart, and the node answers it from its log (``retry: true``) or
applies it now — never twice (an (agent, seq) is one row; the check counts duplicates).

Randomness: ``random.Random(seed)`` for kill points, workload choices and torn-write
offsets.  Thread interleaving is the OS's, so two runs with one seed differ in detail,
not in what is checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ostrom import layout
from ostrom.client import Client, ClientError
from ostrom.consensus.crypto import derive_key
from ostrom.protocol.voting import ALL_VOTES, BALLOT_VOTES, BallotKind
from ostrom.service.founders import parse_founders
from ostrom.service.gate import Setup
from ostrom.service.identity import canonical, public_hex, sign_envelope
from ostrom.service.node import Node, replay
from ostrom.service.store import Entry, Store, StoreError

SEED = b"crash-harness"
OPERATOR = "op"
ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


def key(principal: str) -> Any:
    return derive_key(SEED, principal)


# --- the world --------------------------------------------------------------------------------


def founders_toml(founders: list[str]) -> str:
    """A founders file: tiers cycle 3, 2, 1 (every founder can review), one operator."""
    out = []
    for i, f in enumerate(founders):
        out.append(
            f'[[founder]]\nid = "{f}"\ntier = {3 - i % 3}\npublic_key = "{public_hex(key(f))}"\n'
            "reputation = 0.95\nevidence = 40\n"
        )
    out.append(f'[[operator]]\nid = "{OPERATOR}"\npublic_key = "{public_hex(key(OPERATOR))}"\n')
    return "\n".join(out)


def parse_setup(toml: str) -> Setup:
    """The ``Setup`` a founders file makes (for in-process replays of the same world)."""
    return parse_founders(tomllib.loads(toml))


# --- the node process -------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port free now (the node is restarted on the same one: clients keep
    their URL across restarts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NodeProcess:
    """``ostrom serve`` in a subprocess; ``start`` / ``kill`` many times, on one port."""

    def __init__(
        self, db: Path, founders: Path | None, port: int, logs: Path, snapshot_every: int
    ) -> None:
        self.db, self.founders, self.port, self.logs = db, founders, port, logs
        self.snapshot_every = snapshot_every
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.url = f"http://127.0.0.1:{port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "ostrom",
            "serve",
            "--db",
            str(self.db),
            *(["--founders", str(self.founders)] if self.founders else []),
            "--port",
            str(self.port),
            "--snapshot-every",
            str(self.snapshot_every),
            "--snapshot-ratio",
            "0",  # exactly every K: many snapshots for the kills to land around
            "--verify",  # the node's own full replay at every start
        ]

    def spawn(self) -> None:
        self.starts += 1
        out = (self.logs / f"serve-{self.starts}.out").open("wb")
        err = (self.logs / f"serve-{self.starts}.err").open("wb")
        with out, err:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=err,
                env=ENV,
                cwd=self.logs,
                start_new_session=True,
            )

    def stderr(self) -> str:
        p = self.logs / f"serve-{self.starts}.err"
        return p.read_text(errors="replace") if p.exists() else ""

    def wait_ready(self, deadline_s: float = 30.0) -> None:
        """Poll GET /health until it answers (``RuntimeError`` with the node's stderr if
        the process exits or the deadline passes)."""
        deadline = time.monotonic() + deadline_s
        with httpx.Client(base_url=self.url, timeout=1.0) as http:
            while time.monotonic() < deadline:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise RuntimeError(f"node exited {self.proc.returncode}: {self.stderr()}")
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/health").status_code == 200:
                        return
                time.sleep(0.02)
        raise RuntimeError(f"node not ready in {deadline_s} s: {self.stderr()}")

    def start(self, attempts: int = 3) -> None:
        """Spawn and wait until ready (a port still held by the dead process: retry)."""
        for i in range(attempts):
            self.spawn()
            try:
                self.wait_ready()
                return
            except RuntimeError:
                self.kill()
                if i == attempts - 1 or "address already in use" not in self.stderr().lower():
                    raise
                time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL (no handler, no flush) and reap; a no-op when not running."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None


# --- what the harness records ------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """A command the harness signed, before it was sent (so in-flight ones are known)."""

    agent: str
    seq: int
    envelope: dict[str, Any]


@dataclass(frozen=True)
class Ack:
    """A command the node acknowledged (a 200): where and what it answered."""

    agent: str
    seq: int
    envelope: dict[str, Any]
    pos: int
    result: str
    events: list[Any]
    retry: bool


class Ledger:
    """Thread-safe record of every signed and every acknowledged command."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acked = threading.Condition(self._lock)
        self.sent: dict[tuple[str, int], Sent] = {}
        self.acks: list[Ack] = []
        self.agent_acks = 0  # the acknowledgements of the agents' commands (ticks excluded)
        self.unknown = 0  # the client gave up: applied or not, nobody was told
        self.gate_refused: Counter[str] = Counter()
        self.why_unknown: Counter[str] = Counter()  # the client's last error, per unknown

    def signed(self, s: Sent) -> None:
        with self._lock:
            self.sent[(s.agent, s.seq)] = s

    def acked(self, a: Ack) -> None:
        with self._acked:
            self.acks.append(a)
            if a.agent != OPERATOR:
                self.agent_acks += 1
                self._acked.notify_all()

    def wait_agent_acks(self, n: int, timeout: float) -> bool:
        """Wait until the agents' commands have ``n`` acknowledgements; False at the timeout."""
        with self._acked:
            return self._acked.wait_for(lambda: self.agent_acks >= n, timeout)

    def view(self) -> tuple[dict[tuple[str, int], Sent], list[Ack]]:
        with self._lock:
            return dict(self.sent), list(self.acks)


class RecordingClient(Client):
    """``Client`` that tells the ledger each envelope before sending it.

    Ed25519 signatures are deterministic, so the envelope signed here is byte for byte
    the one ``Client.send`` signs and posts: the check compares the log's rows with it."""

    def __init__(self, url: str, agent: str, ledger: Ledger, **kw: Any) -> None:
        super().__init__(url, agent, key(agent), **kw)
        self.ledger = ledger

    def send(
        self,
        command: Mapping[str, Any],
        *,
        public_key: str | None = None,
        admission: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        seq = self._seq if self._seq is not None else self.resync()
        self._seq = seq
        env = sign_envelope(
            self.key,
            self.agent,
            seq,
            command,
            public_key,
            community=self.community_id(),
            admission=admission,
        )
        self.ledger.signed(Sent(self.agent, seq, env))
        try:
            out = super().send(command, public_key=public_key, admission=admission)
        except ClientError as exc:
            with self.ledger._lock:
                if exc.code == "unreachable":
                    self.ledger.unknown += 1
                    self.ledger.why_unknown[exc.detail[-60:]] += 1
                else:
                    self.ledger.gate_refused[exc.code] += 1
            raise
        self.ledger.acked(
            Ack(
                self.agent,
                seq,
                env,
                int(out["pos"]),
                str(out["result"]),
                list(out["events"]),
                bool(out["retry"]),
            )
        )
        return out


# --- the check -----------------------------------------------------------------------------------


@dataclass
class Findings:
    """What ``check`` found wrong (all zero: the log is what was acknowledged)."""

    lost: int = 0  # an acknowledged (agent, seq) with no row
    duplicated: int = 0  # an (agent, seq) or an envelope in more than one row
    mismatched: int = 0  # a row that is not what was acknowledged (position, envelope, answer)
    out_of_order: int = 0  # one agent's acknowledged commands not in seq/position order
    unexplained: int = 0  # a row of an envelope the harness never signed
    gaps: int = 0  # positions not 1..n
    applied_unacknowledged: int = 0  # in-flight/unknown commands the node did apply (fine)
    details: list[str] = field(default_factory=list)

    def bad(self) -> int:
        return (
            self.lost
            + self.duplicated
            + self.mismatched
            + self.out_of_order
            + self.unexplained
            + self.gaps
        )


def _same(a: Any, b: Any) -> bool:
    return canonical(a) == canonical(b)


def check(entries: list[Entry], sent: Mapping[tuple[str, int], Sent], acks: list[Ack]) -> Findings:
    """Compare the log's rows with what the harness signed and was acknowledged."""
    f = Findings()
    if [e.pos for e in entries] != list(range(1, len(entries) + 1)):
        f.gaps += 1
        f.details.append("positions are not 1..n")
    rows: dict[tuple[str, int], list[Entry]] = {}
    envs: Counter[bytes] = Counter()
    for e in entries:
        rows.setdefault((e.agent, e.seq), []).append(e)
        envs[canonical(e.envelope)] += 1
        s = sent.get((e.agent, e.seq))
        if s is None or not _same(s.envelope, e.envelope):
            f.unexplained += 1
            f.details.append(f"log[{e.pos}]: ({e.agent}, {e.seq}) was never signed so")
    f.duplicated += sum(len(v) - 1 for v in rows.values() if len(v) > 1)
    f.duplicated += sum(n - 1 for n in envs.values() if n > 1)
    acked = set()
    last: dict[str, tuple[int, int]] = {}
    for a in acks:
        acked.add((a.agent, a.seq))
        found = rows.get((a.agent, a.seq), [])
        if not found:
            f.lost += 1
            f.details.append(f"acknowledged ({a.agent}, {a.seq}) at {a.pos} is not in the log")
            continue
        e = found[0]
        if (
            e.pos != a.pos
            or not _same(e.envelope, a.envelope)
            or e.result != a.result
            or not _same(e.observation.get("events"), a.events)
        ):
            f.mismatched += 1
            f.details.append(f"log[{e.pos}] is not what ({a.agent}, {a.seq}) was answered")
        prev = last.get(a.agent)
        if prev is not None and not (prev[0] < a.seq and prev[1] < a.pos):
            f.out_of_order += 1
            f.details.append(f"{a.agent}: seq {a.seq} at {a.pos} after {prev}")
        last[a.agent] = (a.seq, a.pos)
    f.applied_unacknowledged = sum(1 for k in rows if k not in acked)
    return f


def read_copy(db: Path, into: Path) -> list[Entry]:
    """Copy the dead node's files (db, -wal; not -shm: SQLite rebuilds it), open the copy
    with the node's store, replay it with the node's ``replay(verify=True)`` (every logged
    observation and snapshot compared) and return its rows."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / db.name
    for suffix in ("", "-wal"):
        src = db.with_name(db.name + suffix)
        dst = copy.with_name(copy.name + suffix)
        dst.unlink(missing_ok=True)
        if src.exists():
            shutil.copyfile(src, dst)
    store = Store.open(copy)
    try:
        replay(store, verify=True)
        return list(store.entries())
    finally:
        store.close()


# --- the workload --------------------------------------------------------------------------------


class Worker(threading.Thread):
    """Drives a few agents: join, propose, commit/reveal votes, dispute, forget votes."""

    def __init__(
        self,
        n: int,
        url: str,
        agents: list[str],
        joiners: set[str],
        ledger: Ledger,
        stop: threading.Event,
        seed: int,
        budget: int,
    ) -> None:
        super().__init__(daemon=True, name=f"crash-worker-{n}")
        self.n, self.rng, self.stop, self.budget = n, random.Random(seed), stop, budget
        self.clients = {
            a: RecordingClient(url, a, ledger, timeout=5.0, retries=9, backoff=0.05) for a in agents
        }
        self.unjoined = [a for a in agents if a in joiners]
        self.proposed = 0
        self.errors = 0

    def run(self) -> None:
        try:
            while not self.stop.is_set() and self.budget > 0:
                try:
                    self.step()
                except (ClientError, httpx.HTTPError, KeyError, ValueError):
                    self.errors += 1  # the node is down, or a refusal: carry on
                    self.stop.wait(0.05)
        finally:
            for c in self.clients.values():
                c.close()

    def step(self) -> None:
        rng = self.rng
        if self.unjoined:
            c = self.clients[self.unjoined[0]]
            self.budget -= 1
            c.join()
            self.unjoined.pop(0)
            return
        agent = rng.choice(sorted(self.clients))
        c = self.clients[agent]
        arts: dict[str, Any] = c.artifacts()["artifacts"]
        todo: list[tuple[str, str]] = []  # (op, artifact)
        for x, a in sorted(arts.items()):
            if a["phase"] == "commit" and agent in a["reviewers"] and agent not in a["committed"]:
                todo.append(("commit_vote", x))
            b = c.ballots.get(x)
            if a["phase"] == "reveal" and b is not None and b.round == a["round"]:
                todo.append(("reveal_vote", x))
            if a["state"] == "active" and rng.random() < 0.1:
                todo.append(("dispute", x))
            if a["state"] == "active" and rng.random() < 0.1:
                todo.append(("forget_vote", x))
        live = sum(1 for a in arts.values() if a["state"] not in ("active", "rejected"))
        if not todo or (live < 6 and rng.random() < 0.3):
            self.proposed += 1
            todo = [("propose", f"w{self.n}-{self.proposed}")]
        self.budget -= 1
        op, x = rng.choice(todo)
        if op == "commit_vote":
            # the ballot's own two values; one vote in twenty is another ballot's, which
            # commits (the commitment hides it) and is refused at the reveal (CR-2)
            values = BALLOT_VOTES[BallotKind(arts[x]["ballot"])]
            wrong = rng.random() < 0.05
            c.commit_vote(x, rng.choice(sorted(ALL_VOTES - set(values)) if wrong else values), "r")
        elif op == "reveal_vote":
            c.reveal_vote(x)
            c.ballots.pop(x)
        elif op == "dispute":
            c.dispute(x, "stale")
        elif op == "forget_vote":
            c.forget_vote(x, 0.9)
        else:
            c.propose(x, f"s-{x}", f"{rng.getrandbits(64):016x}")


class Ticker(threading.Thread):
    """The operator: one tick every ``interval`` seconds (phases move on)."""

    def __init__(self, url: str, ledger: Ledger, stop: threading.Event, interval: float):
        super().__init__(daemon=True, name="crash-ticker")
        self.client = RecordingClient(url, OPERATOR, ledger, timeout=5.0, retries=9, backoff=0.05)
        self.stop, self.interval = stop, interval

    def run(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                with contextlib.suppress(ClientError, httpx.HTTPError):
                    self.client.tick()
        finally:
            self.client.close()


# --- one run --------------------------------------------------------------------------------------


@dataclass
class CrashReport:
    """The figures of one run (docs/service.md "Crash tests")."""

    seed: int
    kills: int = 0
    kills_during_start: int = 0
    restarts: int = 0
    acknowledged: int = 0
    answered_from_log: int = 0  # acks with retry: true (in flight at a kill, applied before)
    unknown: int = 0
    applied_unacknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    mismatched: int = 0
    out_of_order: int = 0
    unexplained: int = 0
    gaps: int = 0
    gate_refused: dict[str, int] = field(default_factory=dict)
    why_unknown: dict[str, int] = field(default_factory=dict)
    log_length: int = 0
    final_state_equal: bool = False
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)

    def add(self, f: Findings) -> None:
        """Keep the worst check seen (each check covers every earlier acknowledgement)."""
        for name in ("lost", "duplicated", "mismatched", "out_of_order", "unexplained", "gaps"):
            setattr(self, name, max(getattr(self, name), getattr(f, name)))
        self.details.extend(f.details[:5])

    def json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


@contextlib.contextmanager
def world(tmp: Path, founders: int, snapshot_every: int) -> Iterator[NodeProcess]:
    """The founders file and a node process, killed whatever happens."""
    names = [f"f{i}" for i in range(1, founders + 1)]
    ff = tmp / "founders.toml"
    ff.write_text(founders_toml(names))
    logs = tmp / "logs"
    logs.mkdir(exist_ok=True)
    node = NodeProcess(tmp / "node.db", ff, free_port(), logs, snapshot_every)
    try:
        yield node
    finally:
        node.kill()


PROGRESS_TIMEOUT = 120.0  # seconds a kill waits for the agents' progress
FINISH_TIMEOUT = 300.0  # seconds the workers get to spend their budget after the last kill


def run(
    tmp: Path,
    *,
    seed: int,
    kills: int,
    workers: int = 4,
    founders: int = 6,
    joiners: int = 8,
    commands: int = 400,
    uptime: tuple[float, float] = (0.3, 1.2),
    tick_interval: float = 0.05,
    snapshot_every: int = 25,
    doctor: Callable[[Path, int, list[Ack]], None] | None = None,
) -> CrashReport:
    """Start a node, drive it, SIGKILL it ``kills`` times at seeded random points (a
    fifth of them during the restart itself, before it is ready), check after each kill
    and at the end.  Kill ``k`` waits for ``k × commands / (2 (kills + 1))`` of the
    agents' commands to be acknowledged, and the agents spend their whole budget before
    the end, so the work done does not depend on the machine's speed.
    ``doctor(db, k, acks)``, for the tests of the check, edits the dead node's file after
    kill ``k``."""
    t0 = time.monotonic()
    rng = random.Random(seed)
    report = CrashReport(seed=seed)
    ledger = Ledger()
    stop = threading.Event()
    fnames = [f"f{i}" for i in range(1, founders + 1)]
    jnames = [f"j{i}" for i in range(1, joiners + 1)]
    threads: list[threading.Thread] = []
    progress = commands // (2 * (kills + 1))  # agents' acknowledgements between two kills
    with world(tmp, founders, snapshot_every) as node:
        node.start()
        try:
            for w in range(workers):
                mine = [a for i, a in enumerate(fnames + jnames) if i % workers == w]
                threads.append(
                    Worker(
                        w,
                        node.url,
                        mine,
                        set(jnames),
                        ledger,
                        stop,
                        rng.getrandbits(32),
                        commands // workers,
                    )
                )
            threads.append(Ticker(node.url, ledger, stop, tick_interval))
            for t in threads:
                t.start()
            for k in range(1, kills + 1):
                # A kill comes after a seeded pause AND after the agents' work has moved on
                # (a share of the budget per kill): on a slow machine the run takes longer,
                # it does not kill an idle node ten times and acknowledge little.
                time.sleep(rng.uniform(*uptime))
                if not _wait_progress(ledger, k * progress, threads[:-1]):
                    report.details.append(
                        f"kill {k}: fewer than {k * progress} acknowledgements after "
                        f"{PROGRESS_TIMEOUT} s"
                    )
                node.kill()
                report.kills += 1
                sent, acks = ledger.view()  # after the death: every ack here was committed
                if doctor is not None:
                    doctor(node.db, k, acks)
                entries = read_copy(node.db, tmp / "check")
                report.add(check(entries, sent, acks))
                if rng.random() < 0.2:  # a kill during the restart (replay, --verify)
                    node.spawn()
                    time.sleep(rng.uniform(0.0, 0.6))
                    node.kill()
                    report.kills_during_start += 1
                node.start()
                report.restarts += 1
                if _health(node.url)["last_pos"] < len(entries):  # the restart lost rows
                    report.gaps += 1
                    report.details.append(f"restart {k}: fewer rows than the dead node had")
            for t in threads[:-1]:  # the workers spend what is left of their budget
                t.join(timeout=FINISH_TIMEOUT)
            stop.set()
            for t in threads:
                t.join(timeout=60)
            assert not any(t.is_alive() for t in threads), "a client thread did not stop"
            # one more write before the last kill: the node checkpoints its WAL to nothing
            # when it opens (FORGET-PURGE), so a run whose agents were done before the last
            # restart would leave an empty WAL, and the torn-write test nothing to cut
            last = RecordingClient(node.url, OPERATOR, ledger, timeout=5.0, retries=9, backoff=0.05)
            try:
                with contextlib.suppress(ClientError, httpx.HTTPError):
                    last.tick()
            finally:
                last.close()
            sent, acks = ledger.view()
            final = _public(node.url)
            node.kill()
            entries = read_copy(node.db, tmp / "check")
            f = check(entries, sent, acks)
            report.add(f)
            store = Store.open(tmp / "check" / node.db.name)
            try:
                gate, _, _ = replay(store, verify=True)
                want = json.loads(canonical(gate.public_state()))
            finally:
                store.close()
            report.final_state_equal = final == {k: want[k] for k in final}
            report.applied_unacknowledged = f.applied_unacknowledged
            report.acknowledged = len(acks)
            report.answered_from_log = sum(1 for a in acks if a.retry)
            report.unknown = ledger.unknown
            report.gate_refused = dict(ledger.gate_refused)
            report.why_unknown = dict(ledger.why_unknown)
            report.log_length = len(entries)
        finally:
            stop.set()
            node.kill()
            for t in threads:
                t.join(timeout=30)
    report.seconds = round(time.monotonic() - t0, 1)
    return report


def _wait_progress(ledger: Ledger, n: int, workers: list[threading.Thread]) -> bool:
    """Wait for ``n`` acknowledgements of the agents' commands, or for every worker to
    have spent its budget; False only at PROGRESS_TIMEOUT."""
    deadline = time.monotonic() + PROGRESS_TIMEOUT
    while time.monotonic() < deadline:
        if ledger.wait_agent_acks(n, 0.25) or not any(t.is_alive() for t in workers):
            return True
    return False


def _health(url: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=10.0) as http:
        body: dict[str, Any] = http.get("/health").json()
        return body


def _public(url: str) -> dict[str, Any]:
    """The node's public state through its read endpoints."""
    with httpx.Client(base_url=url, timeout=10.0) as http:
        arts = http.get("/artifacts").json()
        agents = http.get("/agents").json()
    return {
        "now": arts["now"],
        "artifacts": arts["artifacts"],
        "agents": agents["agents"],
        "principals": agents["principals"],
    }


# --- torn writes ---------------------------------------------------------------------------------


@dataclass
class TornReport:
    """Outcomes of starting a node on a truncated copy of a dead node's files."""

    cases: int = 0
    recovered: int = 0  # came up with a prefix of the log (the last complete transaction)
    recovered_full: int = 0  # ... the whole log (the cut was past the last commit)
    refused: int = 0  # refused with a one-line message (exit 2 for the CLI)
    wrong: int = 0  # anything else: a traceback, half a transaction, not a prefix
    details: list[str] = field(default_factory=list)


#: Where a cut lands: the WAL, the main file as the dead node left it (its pages mostly
#: in the WAL), or the main file after a checkpoint moved every page into it.
TARGETS = ("wal", "db", "checkpointed")


def truncated_copy(db: Path, into: Path, target: str, offset: int | None) -> Path:
    """Copy db and -wal into ``into``; truncate ``target`` (``TARGETS``) at ``offset``
    (None: no cut), which must be inside the file (a cut never extends it)."""
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    copy = into / db.name
    for suffix in ("", "-wal"):
        src = db.with_name(db.name + suffix)
        if src.exists():
            shutil.copyfile(src, copy.with_name(copy.name + suffix))
    if target == "checkpointed":
        checkpoint(copy)
    victim = copy.with_name(copy.name + "-wal") if target == "wal" else copy
    if offset is not None:
        assert 0 <= offset < victim.stat().st_size, (target, offset)
        with victim.open("r+b") as fh:
            fh.truncate(offset)
    return copy


def checkpoint(db: Path) -> None:
    """Move every page of the WAL into the main file (what a clean stop does)."""
    with contextlib.closing(sqlite3.connect(db)) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def target_size(db: Path, target: str, into: Path) -> int:
    """The size of the file a cut of ``target`` lands in."""
    if target == "wal":
        return db.with_name(db.name + "-wal").stat().st_size
    if target == "db":
        return db.stat().st_size
    return truncated_copy(db, into, "checkpointed", None).stat().st_size


def offsets(size: int, rng: random.Random, n: int, page: int = 4096) -> list[int]:
    """``n`` seeded cut points in a file of ``size`` bytes: the header, page and WAL frame
    boundaries (±1) and uniform ones."""
    special = [0, 1, 16, 31, 32, 50, 99, 100, 101]
    frame = page + 24  # a WAL frame: 24-byte header + one page, after a 32-byte file header
    for i in range(1, 6):
        special += [i * page - 1, i * page + 1, 32 + i * frame, 32 + i * frame - 1]
    pool = sorted({o for o in special if 0 <= o < size})
    out = rng.sample(pool, min(len(pool), n // 3))
    while len(out) < n:
        out.append(rng.randrange(size))
    return out


def torn_in_process(db: Path, original: list[Entry], into: Path, target: str, off: int) -> str:
    """Open a truncated copy as the node does (``Node.open(verify=True)``): "refused",
    "recovered" (a strict prefix) or "full"; anything else raises ``AssertionError``."""
    copy = truncated_copy(db, into, target, off)
    try:
        node = Node.open(copy, verify=True)
    except StoreError as exc:
        assert "\n" not in str(exc), f"{target}@{off}: a multi-line refusal {exc}"
        return "refused"
    try:
        got = list(node.store.entries())
    finally:
        node.close()
    assert_prefix(got, original, f"{target}@{off}")
    return "full" if len(got) == len(original) else "recovered"


def assert_prefix(got: list[Entry], original: list[Entry], where: str) -> None:
    assert len(got) <= len(original), f"{where}: more rows than were written"
    for a, b in zip(got, original, strict=False):
        assert (a.pos, a.agent, a.seq, a.result) == (b.pos, b.agent, b.seq, b.result), where
        assert _same(a.envelope, b.envelope) and _same(a.observation, b.observation), where


def torn_cli(db: Path, original: list[Entry], into: Path, target: str, off: int) -> str:
    """Start ``ostrom serve --verify`` on a truncated copy: it exits 2 with one line, or
    comes up with a prefix of the log."""
    copy = truncated_copy(db, into, target, off)
    node = NodeProcess(copy, None, free_port(), into, 1000)
    try:
        node.spawn()
        assert node.proc is not None
        deadline = time.monotonic() + 30
        with httpx.Client(base_url=node.url, timeout=1.0) as http:
            while time.monotonic() < deadline:
                code = node.proc.poll()
                if code is not None:
                    err = node.stderr().strip()
                    assert code == 2, f"{target}@{off}: exit {code}: {err}"
                    assert "Traceback" not in err and len(err.splitlines()) == 1, err
                    assert err.startswith("error: "), err
                    return "refused"
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/health").status_code == 200:
                        break
                time.sleep(0.02)
            else:
                raise AssertionError(f"{target}@{off}: neither up nor refused in 30 s")
    finally:
        node.kill()
    store = Store.open(copy)
    try:
        got = list(store.entries())
    finally:
        store.close()
    assert_prefix(got, original, f"{target}@{off} (serve)")
    return "full" if len(got) == len(original) else "recovered"


# --- the figures in docs/service.md ------------------------------------------------------------

#: The committed reports of the runs docs/service.md quotes (copied from the
#: ``crash-report.json`` / ``torn-report.json`` that
#: ``pytest -s property_tests/service/test_crash.py`` writes into its temporary directory).
RESULTS = layout.ROOT / "bench" / "results" / "crash.json"

_ROWS = (
    ("kills (SIGKILL while serving)", "kills"),
    ("... of which followed by a kill during the restart", "kills_during_start"),
    ("restarts (each with `--verify`)", "restarts"),
    ("commands acknowledged", "acknowledged"),
    ("... answered from the log on a retry (`retry: true`)", "answered_from_log"),
    ("commands a client gave up on (unknown; none applied twice)", "unknown"),
    ("log rows at the end", "log_length"),
    ("**acknowledged commands lost**", "lost"),
    ("**duplicated**", "duplicated"),
    ("mismatched, out of order, unexplained, gaps", "other"),
    ("final state = a fresh replay of the log", "final_state_equal"),
    ("seconds", "seconds"),
)


def figures_table(results: Mapping[str, Any]) -> str:
    """The markdown table of docs/service.md "Crash tests", from ``RESULTS``."""
    runs = [r for r in ("ci", "slow") if r in results]
    lines = ["| | " + " | ".join(f"{r} run (seed {results[r]['seed']})" for r in runs) + " |"]
    lines.append("|---|" + "---|" * len(runs))
    for label, name in _ROWS:
        cells = []
        for r in runs:
            rep = results[r]
            if name == "other":
                keys = ("mismatched", "out_of_order", "unexplained", "gaps")
                v: Any = sum(int(rep[k]) for k in keys)
            else:
                v = rep[name]
            cells.append("yes" if v is True else "no" if v is False else f"{v:,}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    torn = results.get("torn", {})
    if torn:
        lines.append("")
        lines.append("| torn write (target: outcome) | cases |")
        lines.append("|---|---|")
        lines += [f"| {k} | {v} |" for k, v in sorted(torn.items())]
    return "\n".join(lines)
