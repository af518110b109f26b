"""The memories compared: the ostrom node, and three stores without governance.

Every store receives the same writes (the world's proposals, in their rounds) and answers
the same searches.  A search returns ``Hit`` s, best first; each hit says which slot it is
about, its value, when it was written, whether it is marked transient and whether the
store marks it current (``None``: the store has no such mark).

* ``ostrom``: a real node (``service.Node`` on a SQLite file, its FTS5 index and its
  dense index), every command signed and submitted through the node's gate.  The
  agents play the protocol as in the plasticity experiment (``plasticity.protocol``):
  the reviewers the orchestrator drew commit and reveal their reading, an artifact in
  arbitration is decided by a tier-3 agent if there is one, one ``tick`` a round.  Its
  search is the node's governed search: by default current knowledge only (READ-1); in
  the ``history`` view superseded versions too, marked (``state``).
* ``ungoverned``: every sentence ever written, no marks.
* ``add_only_recency``: every sentence ever written with its round; its reader takes the
  newest retrieved sentence about the slot that is not marked transient (the strongest
  fair form of the "latest applicable stable update" rule: it honours the marking, which
  a Mem0-style store does not see).
* ``last_writer_wins``: one sentence per slot, the last written (a key-value memory).

The three baselines rank with ``index.Lexical`` (the node's own BM25 query) and
``index.Lsa`` (the same vectors the node receives).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ostrom.consensus.crypto import derive_key
from ostrom.protocol.commands import payload_digest
from ostrom.protocol.community import Member
from ostrom.protocol.params import DEFAULTS
from ostrom.protocol.voting import commitment, make_salt
from ostrom.service.gate import Founder, Setup
from ostrom.service.identity import public_hex, sign_envelope
from ostrom.service.node import Node
from ostrom.service.search import SearchQuery
from ostrom.simulation.plasticity.config import PROPOSE_RATE
from ostrom.simulation.plasticity.mechanisms import ask, plugged_policy
from ostrom.simulation.plasticity.protocol import FOUNDER_EVIDENCE, FOUNDER_REPUTATION, REASON
from ostrom.simulation.retrieval.index import Lexical, Lsa
from ostrom.simulation.retrieval.world import Proposal, World
from ostrom.simulation.world import stream

__all__ = ["MODES", "Hit", "Memory", "make_store"]

#: The retrieval modes: BM25 over words, cosine over LSA vectors, and (ostrom only; the
#: baselines hold every version anyway) BM25 with superseded versions included and marked.
MODES = ("lexical", "dense", "history")

#: The community every envelope of the experiment is signed for (ENV-1).
COMMUNITY = "7e" * 16
OPERATOR = "operator"
TRANSIENT_TAG = "transient"


@dataclass(frozen=True)
class Hit:
    doc: str
    slot: str
    value: str
    round: int
    transient: bool
    current: bool | None


class Memory(Protocol):
    name: str

    def step(self, round: int, proposals: list[Proposal]) -> None: ...

    def search(self, query: str, mode: str, k: int) -> list[Hit]: ...

    def choose(self, hits: list[Hit], slot: str) -> Hit | None: ...

    def extras(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class _Baseline:
    """The three ungoverned stores (module docstring): they differ in what they keep and
    in their reader's rule, nothing else."""

    def __init__(self, name: str, world: World, lsa: Lsa) -> None:
        self.name = name
        self.lsa = lsa
        self.lexical = Lexical()
        self.docs: dict[str, Hit] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.of_slot: dict[str, str] = {}
        for p in world.initial.values():
            self._write(p, -1)

    def _write(self, p: Proposal, round: int) -> None:
        if self.name == "last_writer_wins" and p.slot in self.of_slot:
            old = self.of_slot.pop(p.slot)
            self.lexical.remove(old)
            del self.docs[old], self.vectors[old]
        self.docs[p.id] = Hit(p.id, p.slot, p.value, round, p.transient, None)
        self.vectors[p.id] = self.lsa.vector(p.text)
        self.of_slot[p.slot] = p.id
        self.lexical.add(p.id, p.text)

    def step(self, round: int, proposals: list[Proposal]) -> None:
        for p in proposals:
            self._write(p, round)

    def search(self, query: str, mode: str, k: int) -> list[Hit]:
        if mode == "dense":
            ids = list(self.vectors)
            sims = np.array([self.vectors[d] for d in ids]) @ self.lsa.vector(query)
            order = sorted(range(len(ids)), key=lambda i: (-sims[i], i))[:k]
            return [self.docs[ids[i]] for i in order]
        return [self.docs[d] for d in self.lexical.search(query, k)]

    def choose(self, hits: list[Hit], slot: str) -> Hit | None:
        mine = [h for h in hits if h.slot == slot]
        if not mine:
            return None
        if self.name == "add_only_recency":
            stable = [h for h in mine if not h.transient] or mine
            return max(stable, key=lambda h: h.round)  # ties: max keeps the first
        return mine[0]

    def extras(self) -> dict[str, Any]:
        return {"documents": len(self.docs)}

    def close(self) -> None:
        self.lexical.db.close()


class OstromStore:
    """The node (module docstring)."""

    name = "ostrom"

    def __init__(self, world: World, lsa: Lsa, seed: int, noise: float, policy: str = "") -> None:
        self.world = world
        self.lsa = lsa
        self.noise = noise
        self.plug = plugged_policy(policy, seed, "retrieval")
        self.rng_vote = stream(seed, "retrieval-votes")
        self.rng_salt = stream(seed, "retrieval-salts")
        self.rng_arb = stream(seed, "retrieval-arbiters")
        names = (*world.agents, OPERATOR)
        self.keys = {a: derive_key(seed, f"retrieval:{a}") for a in names}
        self.seq: Counter[str] = Counter()
        founders = tuple(
            Founder(
                Member(a, tier=1, reputation=FOUNDER_REPUTATION, evidence=FOUNDER_EVIDENCE),
                public_hex(self.keys[a]),
            )
            for a in world.agents
        )
        setup = Setup(founders, {OPERATOR: public_hex(self.keys[OPERATOR])}, COMMUNITY)
        params = dataclasses.replace(DEFAULTS, seed=seed, embedding_dim=lsa.rank)
        self.tmp = tempfile.TemporaryDirectory(prefix="ostrom-retrieval-")
        self.node = Node.open(
            Path(self.tmp.name) / "memory.db", params=params, setup=setup, fsync=False
        )
        self.proposal: dict[str, Proposal] = {}
        self.secrets: dict[tuple[str, int, str], tuple[str, str]] = {}
        self.todo: dict[str, list[str]] = {"commit": [], "reveal": [], "arbitration": []}
        self.counts: Counter[str] = Counter()
        self.round = -1
        self._setup()

    # --- the node -------------------------------------------------------------------

    def _apply(self, sender: str, command: dict[str, Any]) -> str:
        self.seq[sender] += 1
        env = sign_envelope(
            self.keys[sender], sender, self.seq[sender], command, community=COMMUNITY
        )
        reply = self.node.submit(env)
        body = reply.body
        result = str(body.get("result", body.get("error")))
        self.counts[f"{command['op']}:{result}"] += 1
        if reply.status != 200:  # the gate refused: the seq was not used
            self.seq[sender] -= 1
            return result
        for ev in body["events"]:
            x, to = ev.get("artifact"), ev.get("to")
            if x is None or to is None or ev.get("event") in ("commit_vote", "reveal_vote"):
                continue
            if to in self.todo:
                self.todo[to].append(x)
        return result

    def _propose(self, p: Proposal, agent: str) -> str:
        payload: dict[str, Any] = {
            "content": p.text,
            "embedding": [round(float(x), 6) for x in self.lsa.vector(p.text)],
        }
        if p.transient:
            payload["tags"] = [TRANSIENT_TAG]
        self.proposal[p.id] = p
        cmd = {"op": "propose", "agent": agent, "artifact": p.id, "slot": p.slot}
        cmd |= {"digest": payload_digest(payload), **payload}
        return self._apply(agent, cmd)

    def _tick(self) -> None:
        self._apply(OPERATOR, {"op": "tick"})

    def _setup(self) -> None:
        agents = self.world.agents
        per_round = len(agents) * PROPOSE_RATE
        initial = list(self.world.initial.values())
        for start in range(0, len(initial), per_round):
            for i, p in enumerate(initial[start : start + per_round]):
                if self._propose(p, agents[i % len(agents)]) != "ok":
                    raise RuntimeError(f"setup: {p.id} refused")
            self._tick()
        for _ in range(DEFAULTS.T_fast + 1):
            self._tick()
        orch = self.node.gate.community.orchestrator
        missing = [s for s in self.world.slots if orch.serve(s) is None]
        if missing:
            raise RuntimeError(f"setup: {len(missing)} slots not active, e.g. {missing[0]}")
        self.todo = {k: [] for k in self.todo}
        self.offset = orch.now

    def _public(self, x: str) -> dict[str, Any]:
        pub = self.node.gate.community.orchestrator.public_artifact(x)
        assert pub is not None
        return pub

    def _reads(self, agent: str, x: str, round: int, ballot: str) -> bool:
        """``agent``'s reading of artifact ``x``: the plasticity experiment's judgment rule
        (``plasticity.mechanisms.judge``: an adversary accepts every false value and
        rejects the true one; an honest agent accepts what it believes and is not marked
        transient, flipped with probability ``noise``), or a plugged policy's."""
        p = self.proposal[x]
        return ask(
            self.world,
            self.plug,
            ballot,
            agent,
            x,
            p.slot,
            p.value,
            p.transient,
            round,
            self.rng_vote,
            self.noise,
        )

    # --- one round ------------------------------------------------------------------

    def step(self, round: int, proposals: list[Proposal]) -> None:
        self.round = round
        for p in proposals:
            result = self._propose(p, p.submitter)
            if result != "ok":
                self.counts[f"refused:{p.role}:{result}"] += 1
        todo, self.todo = self.todo, {k: [] for k in self.todo}
        for x in todo["commit"]:
            pub = self._public(x)
            if pub["phase"] != "commit" or pub["ballot"] != "review":
                continue
            for agent in pub["reviewers"]:
                vote = "accept" if self._reads(agent, x, round, "review") else "reject"
                salt = make_salt(self.rng_salt)
                h = commitment(agent, x, pub["round"], vote, REASON, salt)
                cmd = {"op": "commit_vote", "agent": agent, "artifact": x, "commitment": h}
                if self._apply(agent, cmd) == "ok":
                    self.secrets[(x, pub["round"], agent)] = (vote, salt)
        for x in todo["reveal"]:
            pub = self._public(x)
            if pub["phase"] != "reveal":
                continue
            for agent in pub["committed"]:
                secret = self.secrets.pop((x, pub["round"], agent), None)
                if secret is not None:
                    vote, salt = secret
                    cmd = {"op": "reveal_vote", "agent": agent, "artifact": x, "vote": vote}
                    self._apply(agent, cmd | {"reason": REASON, "salt": salt})
        for x in todo["arbitration"]:
            pub = self._public(x)
            if pub["state"] != "arbitration":
                continue
            excluded = set(pub["reviewers"]) | {pub["submitter"]}
            pool = sorted(
                a
                for a, r in self.node.gate.community.agents.items()
                if r.tier >= 3 and not r.barred and a not in excluded
            )
            if not pool:
                self.counts["no_arbiter"] += 1
                continue
            agent = self.rng_arb.choice(pool)
            outcome = "accept" if self._reads(agent, x, round, "arbitration") else "reject"
            self._apply(
                agent, {"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome}
            )
        self._tick()

    # --- reading --------------------------------------------------------------------

    def _hit(self, h: dict[str, Any]) -> Hit:
        x = h["artifact"]
        p = self.proposal[x]
        return Hit(x, p.slot, p.value, p.round, p.transient, h["state"] == "active")

    def search(self, query: str, mode: str, k: int) -> list[Hit]:
        if mode == "dense":
            vec = [float(x) for x in self.lsa.vector(query)]
            q = SearchQuery.parse(None, k, vector=vec, dim=self.lsa.rank)
        else:
            q = SearchQuery.parse(query, k, "history" if mode == "history" else None)
        return [self._hit(h) for h in self.node.search(q)["hits"]]

    def choose(self, hits: list[Hit], slot: str) -> Hit | None:
        """The reader's rule: the best hit about the slot that the node marks current."""
        for h in hits:
            if h.slot == slot and h.current:
                return h
        return None

    def extras(self) -> dict[str, Any]:
        return {"commands": dict(sorted(self.counts.items()))}

    def close(self) -> None:
        self.node.close()
        self.tmp.cleanup()


def make_store(
    name: str, world: World, lsa: Lsa, seed: int, noise: float, policy: str = ""
) -> Memory:
    """The store ``name``; ``policy`` (a plugged agent policy) reaches the node's reviewers
    only: the baselines have nobody who decides."""
    if name == "ostrom":
        return OstromStore(world, lsa, seed, noise, policy)
    return _Baseline(name, world, lsa)
