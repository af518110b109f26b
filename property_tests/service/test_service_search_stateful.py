"""READ-1 as a state machine (Hypothesis stateful) on a real node and its SQLite store:
proposals with content (some sharing a payload), ticks, votes to a decision, updates that
supersede, disputes and urgent reports, resubmissions and forgetting, interleaved with
searches.  Every answer is compared with a model computed independently of the node's
filter: from the Community's public state (which artifacts are active, superseded,
hidden, their current digest) and the payloads the test itself sent, with its own
tokenizer.  The hits must be exactly the artifacts the model lets through that match a
term (all of them when k allows, else k of them), best first, never a proposed,
rejected, expired, retracted, disputed, hidden or forgotten one, and superseded ones
only with ``include=history``.  Searches are ranked by FTS5's own query or by the hot
terms' postings (service/bm25.py), the rule ``hot_terms`` switching between them.

Dense retrieval takes the same filter: every payload carries an embedding (one axis per
word of ``WORDS``, so the model knows which payloads a query vector is near), and
searches by a query vector alone and by words and a vector together (reciprocal rank
fusion) are checked against the same model — only artifacts READ-1 lets through, and,
for a vector alone, every one of them with an embedding (all are near something) up to
k; fused, each hit ranked in at least one of the two rankings, the ranks those of the
filtered lists (1, 2, ... without gaps a filtered artifact would leave).

The check is shown to fail: three mutants of the filter (``search.eligible``) — one that
returns superseded versions without history, one that serves artifacts under review
(fast track, commit, reveal, disputed), one that serves rejected, expired and retracted
ones — are each caught with a READ-1 failure (marked ``mutation``: ``make mutate`` and
``make test-slow`` run them, ``make test`` does not).  A filter that let ``forgotten``
through is an equivalent mutant: a forgotten artifact carries no payload any more
(FORGET-PURGE deletes its ``artifact_content`` rows, and its payload unless a standing
artifact carries it too), so no match leads to it; the invariant
``forgotten_artifacts_carry_nothing`` checks that half of "never forgotten content", and
test_service_content.py greps the files for it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mutant_check import assert_mutant_caught
from ostrom.protocol.commands import payload_digest
from ostrom.protocol.params import Params
from ostrom.service import search as search_module
from ostrom.service.node import Node
from ostrom.service.search import MAX_K, SearchQuery
from service_world import FOUNDERS, OPERATOR, SALT, SECRET_REASON, Signer, commitment, setup

#: Forgetting reachable with the five founders; resubmission without a cooldown;
#: embeddings of one number per word of WORDS.
WORDS = ("alpha", "beta", "gamma", "delta")
PARAMS = Params(min_active_agents=3, cooldown=0, content_limit=1024, embedding_dim=len(WORDS))
SLOTS = ("s1", "s2", "s3")
_FORGETTABLE = ("active", "superseded", "rejected", "expired", "retracted")


def _tokens(payload: dict[str, Any]) -> set[str]:
    """The model's own tokenizer: lowercase ASCII words and numbers of the indexed fields."""
    text = " ".join(str(payload.get(f) or "") for f in ("content", "title", "source"))
    text += " " + " ".join(payload.get("tags") or ())
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class SearchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ostrom-search-"))
        self.node = Node.open(self.dir / "n.db", params=PARAMS, setup=setup(), fsync=False)
        self.signer = Signer()
        self.n = 0
        #: (artifact, digest) -> the payload an accepted propose or resubmit carried
        self.carried: dict[tuple[str, str], dict[str, Any]] = {}
        self.sent: list[dict[str, Any]] = []  # every payload proposed (to share one)

    def teardown(self) -> None:
        self.node.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- commands ---------------------------------------------------------------------------

    def _send(self, sender: str, command: dict[str, Any]) -> dict[str, Any]:
        r = self.node.submit(self.signer.env(sender, command))
        assert r.status == 200, r.body
        return r.body

    def _public(self) -> dict[str, Any]:
        arts: dict[str, Any] = self.node.gate.community.public_state()["artifacts"]
        return arts

    def _payload(self, words: list[str], share: int | None) -> dict[str, Any]:
        if share is not None and self.sent:
            return self.sent[share % len(self.sent)]
        self.n += 1
        payload: dict[str, Any] = {"content": f"{' '.join(words)} u{self.n}"}
        if self.n % 3 == 0:
            payload["title"] = f"title {words[0]}"
        if self.n % 4 != 0:  # most payloads carry an embedding: its word counts, and noise
            payload["embedding"] = [words.count(w) + self.n / 1000 for w in WORDS]
        self.sent.append(payload)
        return payload

    @rule(
        agent=st.sampled_from(FOUNDERS),
        slot=st.sampled_from(SLOTS),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        share=st.none() | st.integers(0, 50),
    )
    def propose(self, agent: str, slot: str, words: list[str], share: int | None) -> None:
        x = f"a{len(self._public())}"
        payload = self._payload(words, share)
        digest = payload_digest(payload)
        cmd = {"op": "propose", "agent": agent, "artifact": x, "slot": slot, "digest": digest}
        if self._send(agent, {**cmd, **payload})["result"] == "ok":
            self.carried[(x, digest)] = payload

    @rule(n=st.integers(1, 4))
    def tick(self, n: int) -> None:
        for _ in range(n):
            self._send(OPERATOR, {"op": "tick"})

    @rule(vote=st.sampled_from(["accept", "reject"]))
    def commit_all(self, vote: str) -> None:
        """Every reviewer of an open commit phase commits ``vote``."""
        for x, a in self._public().items():
            if a["phase"] != "commit":
                continue
            for r in sorted(set(a["reviewers"]) - set(a["committed"])):
                c = commitment(r, x, a["round"], vote)
                self._send(r, {"op": "commit_vote", "agent": r, "artifact": x, "commitment": c})

    @rule()
    def reveal_all(self) -> None:
        """Every committed reviewer of an open reveal phase reveals (both votes tried: the
        one that opens the commitment counts, the other is a refused reveal)."""
        for x, a in self._public().items():
            if a["phase"] != "reveal":
                continue
            for r in sorted(set(a["committed"]) - set(a["revealed"] or {})):
                for vote in ("accept", "reject"):
                    cmd = {
                        "op": "reveal_vote",
                        "agent": r,
                        "artifact": x,
                        "vote": vote,
                        "reason": SECRET_REASON,
                        "salt": SALT,
                    }
                    if self._send(r, cmd)["result"] == "ok":
                        break

    @rule(vote=st.sampled_from(["accept", "reject"]))
    def review_to_a_decision(self, vote: str) -> None:
        """Ticks, with every open ballot's reviewers committing ``vote`` and revealing it,
        until no review is in flight (at most 12 rounds: deliberation, commit, reveal)."""
        for _ in range(12):
            self.commit_all(vote)
            self.reveal_all()
            self._send(OPERATOR, {"op": "tick"})
            if not any(
                a["state"] in ("proposed", "deliberation", "commit", "reveal", "fast_track")
                for a in self._public().values()
            ):
                return

    def _pick(self, data: st.DataObject, states: tuple[str, ...]) -> tuple[str, Any] | None:
        arts = sorted((x, a) for x, a in self._public().items() if a["state"] in states)
        return data.draw(st.sampled_from(arts)) if arts else None

    @rule(data=st.data(), urgent=st.booleans())
    def dispute(self, data: st.DataObject, urgent: bool) -> None:
        picked = self._pick(data, ("active",))
        if picked is None:
            return
        x, a = picked
        agent = next(f for f in FOUNDERS if f != a["submitter"])
        op = "urgent_report" if urgent else "dispute"
        self._send(agent, {"op": op, "agent": agent, "artifact": x, "reason": "wrong"})

    @rule(data=st.data(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
    def resubmit(self, data: st.DataObject, words: list[str]) -> None:
        picked = self._pick(data, ("rejected", "expired", "retracted"))
        if picked is None:
            return
        x, a = picked
        payload = self._payload(words, None)
        digest = payload_digest(payload)
        cmd = {"op": "resubmit", "agent": a["submitter"], "artifact": x, "digest": digest}
        if self._send(a["submitter"], {**cmd, **payload})["result"] == "ok":
            self.carried[(x, digest)] = payload

    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        """Every founder votes to forget one artifact; the next tick decides."""
        picked = self._pick(data, _FORGETTABLE)
        if picked is None:
            return
        x, _ = picked
        for f in FOUNDERS:
            self._send(f, {"op": "forget_vote", "agent": f, "artifact": x})
        self._send(OPERATOR, {"op": "tick"})

    # --- searches ---------------------------------------------------------------------------

    def _model(self, words: set[str], history: bool, slot: str | None) -> set[str]:
        """READ-1, computed from the Community's public state and the payloads sent."""
        out = set()
        for x, a in self._public().items():
            shown = a["state"] == "active" or (history and a["state"] == "superseded")
            if not shown or a["hidden"] or (slot is not None and a["slot"] != slot):
                continue
            payload = self.carried.get((x, a["digest"]))
            if payload is not None and _tokens(payload) & words:
                out.add(x)
        return out

    def _check(self, q: str, k: int, history: bool, slot: str | None) -> None:
        query = SearchQuery.parse(q, k, "history" if history else None, slot)
        answer = self.node.search(query)
        expected = self._model(set(query.terms), history, slot)
        hits = answer["hits"]
        got = [h["artifact"] for h in hits]
        public = self._public()
        assert answer["position"] == self.node.last_pos, "READ-1: the answer's position"
        assert len(got) == len(set(got)), f"READ-1: an artifact twice in {got}"
        assert set(got) <= expected, (
            f"READ-1: returned {sorted(set(got) - expected)} "
            f"({[public[x]['state'] for x in sorted(set(got) - expected)]}) for {q!r}, "
            f"history={history}, slot={slot}"
        )
        assert len(got) == min(k, len(expected)), (
            f"READ-1: {len(got)} hits of {sorted(expected)} for {q!r} (k={k})"
        )
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True), f"READ-1: not best first: {scores}"
        for h in hits:
            a = public[h["artifact"]]
            assert (h["state"], h["slot"], h["submitter"], h["decision"]) == (
                a["state"],
                a["slot"],
                a["submitter"],
                a["decision"],
            ), f"READ-1: the hit is not the public state's: {h}"
            assert h["content"] == self.carried[(h["artifact"], a["digest"])]["content"], (
                "READ-1: the hit's content is not what it carries now"
            )
            if h["state"] == "superseded":
                by = h["superseded_by"]
                assert by is None or public[by]["slot"] == h["slot"], "READ-1: superseded_by"

    @rule(hot=st.booleans())
    def hot_terms(self, hot: bool) -> None:
        """Rank from here on by the hot terms' postings (every term kept, caught up and
        dropped as the store changes: service/bm25.py) or by FTS5's own query."""
        store = self.node.store
        if hot:
            store.postings.hot_df = 1
        else:
            store.postings = store.postings.never_hot()

    @rule(
        words=st.lists(st.sampled_from((*WORDS, "u1", "u2", "u3", "title", "none")), min_size=1),
        k=st.integers(1, 5) | st.just(MAX_K),
        history=st.booleans(),
        slot=st.none() | st.sampled_from(SLOTS),
    )
    def search(self, words: list[str], k: int, history: bool, slot: str | None) -> None:
        self._check(" ".join(words).upper(), k, history, slot)

    def _dense_model(self, history: bool, slot: str | None) -> set[str]:
        """READ-1 for a query vector: every artifact it lets through whose payload carries
        an embedding (all the embeddings are non-zero: each is near something)."""
        out = set()
        for x, a in self._public().items():
            shown = a["state"] == "active" or (history and a["state"] == "superseded")
            if not shown or a["hidden"] or (slot is not None and a["slot"] != slot):
                continue
            payload = self.carried.get((x, a["digest"]))
            if payload is not None and "embedding" in payload:
                out.add(x)
        return out

    def _check_dense(
        self, words: list[str] | None, vector: list[float], k: int, history: bool, slot: str | None
    ) -> None:
        q = None if words is None else " ".join(words)
        query = SearchQuery.parse(
            q, k, "history" if history else None, slot, vector=vector, dim=len(WORDS)
        )
        answer = self.node.search(query)
        hits = answer["hits"]
        got = [h["artifact"] for h in hits]
        dense = self._dense_model(history, slot)
        lexical = set() if words is None else self._model(set(query.terms), history, slot)
        expected = dense | lexical
        assert len(got) == len(set(got)), f"READ-1: an artifact twice in {got}"
        assert set(got) <= expected, (
            f"READ-1: dense returned {sorted(set(got) - expected)} for {vector}, "
            f"history={history}, slot={slot}"
        )
        if words is None:
            assert len(got) == min(k, len(dense)), f"READ-1: {len(got)} of {sorted(dense)}"
        else:
            assert len(got) == min(k, len(expected)), f"READ-1: {len(got)} of {expected}"
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True), f"READ-1: not best first: {scores}"
        for field, pool in (("dense", dense), ("lexical", lexical)):
            ranks = sorted(h["ranks"][field] for h in hits if h["ranks"][field] is not None)
            for h in hits:
                assert h["ranks"][field] is None or h["artifact"] in pool, (
                    f"READ-1: {h['artifact']} ranked {field} outside what READ-1 lets through"
                )
            if len(got) == len(expected):  # all returned: the filtered ranking, no gap
                assert ranks == list(range(1, len(pool) + 1)), f"READ-1: {field} ranks {ranks}"
        if words is None:
            assert [h["ranks"]["dense"] for h in hits] == list(range(1, len(got) + 1))

    @rule(
        words=st.none() | st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
        axis=st.sampled_from(WORDS),
        k=st.integers(1, 5) | st.just(MAX_K),
        history=st.booleans(),
        slot=st.none() | st.sampled_from(SLOTS),
    )
    def search_dense(
        self, words: list[str] | None, axis: str, k: int, history: bool, slot: str | None
    ) -> None:
        vector = [1.0 if w == axis else 0.1 for w in WORDS]
        self._check_dense(words, vector, k, history, slot)

    @invariant()
    def forgotten_artifacts_carry_nothing(self) -> None:
        for (x, digest), _ in self.carried.items():
            if self._public()[x]["state"] == "forgotten":
                assert self.node.store.payload(x, digest) is None, f"READ-1: {x} forgotten"

    @invariant()
    def search_index_is_the_public_states(self) -> None:
        """The search index the node keeps command by command is, after every step, the
        one rebuilt from the public state and the stored payloads (READ-1 in SQL)."""
        assert self.node.search_index_agrees(), "READ-1: the search index drifted"

    @invariant()
    def every_word_both_ways(self) -> None:
        for history in (False, True):
            self._check(" ".join(WORDS), MAX_K, history, None)
            # fused: every artifact READ-1 lets through, both rankings complete
            self._check_dense(list(WORDS), [1.0] * len(WORDS), MAX_K, history, None)


SearchMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
TestSearch = SearchMachine.TestCase


# --- the filter's mutants -------------------------------------------------------------------

_eligible = search_module.eligible


def _superseded_without_history(art: dict[str, Any] | None, history: bool) -> bool:
    return _eligible(art, True)


def _under_review_served(art: dict[str, Any] | None, history: bool) -> bool:
    return _eligible(art, history) or (
        art is not None and art["state"] in ("fast_track", "commit", "reveal", "disputed")
    )


def _decided_against_served(art: dict[str, Any] | None, history: bool) -> bool:
    return _eligible(art, history) or (
        art is not None and art["state"] in ("rejected", "expired", "retracted")
    )


@pytest.mark.mutation
@pytest.mark.parametrize(
    "mutant", [_superseded_without_history, _under_review_served, _decided_against_served]
)
def test_the_machine_catches_a_wrong_filter(monkeypatch: pytest.MonkeyPatch, mutant: Any) -> None:
    """Each mutant of READ-1's filter fails the machine with a READ-1 failure."""
    import ostrom.service.node as node_module

    monkeypatch.setattr(node_module, "eligible", mutant)
    assert_mutant_caught(SearchMachine, mutant.__name__, "READ-1")


@pytest.mark.mutation
def test_the_machine_catches_a_purge_that_keeps_the_carrier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other half of "never forgotten content": a store that forgets nothing of a
    forgotten artifact is caught with a READ-1 failure."""
    from ostrom.service.store import Store

    monkeypatch.setattr(Store, "_purge", lambda self, artifact: 0)
    assert_mutant_caught(SearchMachine, "purge_keeps_carrier", "READ-1")


@pytest.mark.mutation
def test_the_machine_catches_an_unfiltered_dense_ranking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dense searches' check can fail too: a node that filters the lexical ranking by
    READ-1 but not the dense one (``Store.neighbours``' candidates) is caught with a READ-1
    failure."""
    real = Node._readable

    def unfiltered(self: Node, ranked: Any, query: Any, depth: int, view: Any) -> Any:
        if getattr(ranked, "__name__", "") != "neighbours":
            return real(self, ranked, query, depth, view)
        arts = view.state["artifacts"]
        out = []
        for cid, score in ranked:
            _, carriers = self.store.carriers(cid)
            out += [(x, arts.get(x), score) for x in carriers]
        return out[:depth]

    monkeypatch.setattr(Node, "_readable", unfiltered)
    assert_mutant_caught(SearchMachine, "dense_unfiltered", "READ-1")


# --- the search index's mutants -------------------------------------------------------------


def _index_frozen(self: Node, artifacts: set[str]) -> None:
    """Never updated after the node opened."""


def _index_adds_only(self: Node, artifacts: set[str]) -> None:
    """Updates only artifacts not in it yet: one once let through stays in."""
    _node_index(self, {x for x in artifacts if x not in self._indexed})


_node_index = Node._index


@pytest.mark.mutation
@pytest.mark.parametrize("mutant", [_index_frozen, _index_adds_only])
def test_the_machine_catches_a_stale_search_index(
    monkeypatch: pytest.MonkeyPatch, mutant: Any
) -> None:
    """A search index that is not kept in step with the public state is caught with a
    READ-1 failure (the invariant, or a search that misses or serves an artifact)."""
    monkeypatch.setattr(Node, "_index", mutant)
    assert_mutant_caught(SearchMachine, mutant.__name__, "READ-1")
