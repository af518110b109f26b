"""The retrieval experiment (``ostrom.simulation.retrieval``): config, world, rankings,
stores, metrics and a small run of every store.

What must hold, and could fail:

* the world is a pure function of the workload and the seed, never of the store, and it
  has **no persona leak**: the valid updates' and the conflicts' submitters come from one
  distribution (the plasticity world drew them from different kinds of agents);
* the baselines keep what their names say (every version; one per slot) and the
  add-only store's reader takes the newest stable hit;
* ostrom's default search is the node's READ-1: every hit it returns is current, and its
  reader's answer is the value the orchestrator serves — checked against a store whose
  search leaks history (a mutant the check catches);
* the metrics are computed as documented (by hand on made-up hits).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.simulation.config import ConfigError
from ostrom.simulation.experiments import build_family
from ostrom.simulation.retrieval.config import CONDITIONS, STORES, RetrievalConfig, from_mapping
from ostrom.simulation.retrieval.experiment import PRESENTATION, retrieval_cells
from ostrom.simulation.retrieval.index import Lexical, Lsa
from ostrom.simulation.retrieval.run import corpus, measure, run_retrieval
from ostrom.simulation.retrieval.stores import Hit, OstromStore, make_store
from ostrom.simulation.retrieval.world import CONFLICT, VALID, make_world

#: A run small enough for make test (a few seconds for the node), big enough for every
#: (kind, k) cell to hold trials.
SMALL = RetrievalConfig(entities=5, rounds=36, counts=(0, 1, 2), trials_per_round=1)


# --- config -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field,value",
    [
        ("agents", 3),
        ("adversary_share", 1.5),
        ("stale_prob", float("nan")),
        ("reviewer_noise", 0.9),
        ("counts", (1, 2)),
        ("counts", (0, 2, 1)),
        ("store", "mem0"),
        ("order", "sideways"),
        ("phrasing", 3),
        ("transient", "yes"),
        ("window", 2),
        ("rounds", 20),
        ("entities", 1),
        ("lsa_rank", 10**6),
    ],
)
def test_bad_config_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        RetrievalConfig().with_(**{field: value})


@settings(max_examples=100)
@given(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=4), max_size=3))
def test_from_mapping_never_raises_anything_else(doc: dict[str, Any]) -> None:
    with contextlib.suppress(ConfigError):
        from_mapping(doc)


def test_conditions_label_the_cells() -> None:
    for name, (order, transient, phrasing) in CONDITIONS.items():
        cfg = RetrievalConfig(order=order, transient=transient, phrasing=phrasing)
        assert cfg.condition == name
        assert cfg.label == f"ostrom [{name}]"


# --- the world --------------------------------------------------------------------------


def test_world_is_a_function_of_workload_and_seed_not_of_the_store() -> None:
    worlds = [make_world(SMALL.with_(store=s), 3) for s in STORES]
    assert all(w.proposals == worlds[0].proposals for w in worlds)
    assert all(w.trials == worlds[0].trials for w in worlds)
    assert make_world(SMALL, 4).proposals != worlds[0].proposals


def test_trials_follow_the_design() -> None:
    for order in ("after", "before"):
        w = make_world(SMALL.with_(order=order), 1)
        assert w.trials and not w.dropped
        by_trial: dict[int, list[Any]] = {}
        for ps in w.proposals.values():
            for p in ps:
                by_trial.setdefault(p.trial, []).append(p)
        for t in w.trials:
            ps = sorted(by_trial[t.index], key=lambda p: p.round)
            assert len(ps) == t.k + 1
            valid = [p for p in ps if p.role == VALID]
            assert [p.value for p in valid] == [t.new]
            assert valid[0].round == t.update_round
            assert (ps[0] if order == "after" else ps[-1]).role == VALID  # order
            conflicts = {p.value for p in ps if p.role == CONFLICT}
            assert conflicts <= ({t.wrong} if t.kind == "same_slot" else {t.old})
            assert w.truth(t.slot, t.measure_round) == t.new
            assert w.truth(t.slot, t.t0 - 1) == t.old
            entity, attribute = w.about[t.slot]
            assert all(entity in p.text.lower() and attribute in p.text.lower() for p in ps)


def test_no_persona_leak_submitters_do_not_say_what_is_true() -> None:
    """The valid updates' submitters and the conflicts' come from one distribution: the
    adversaries' share among each is the population's, within sampling error (over many
    seeds).  The plasticity world fails this by construction (its valid updates come only
    from up-to-date honest agents)."""
    cfg = RetrievalConfig(adversary_share=0.3)
    roles: Counter[tuple[str, str]] = Counter()
    for seed in range(1, 9):
        w = make_world(cfg, seed)
        for ps in w.proposals.values():
            for p in ps:
                roles[(p.role, w.kind[p.submitter])] += 1
    for role in (VALID, CONFLICT):
        n = roles[(role, "adversary")] + roles[(role, "honest")]
        share = roles[(role, "adversary")] / n
        assert abs(share - 0.3) < 4 * (0.3 * 0.7 / n) ** 0.5, (role, share, n)


def test_staleness_is_a_moment_not_a_kind() -> None:
    """Every honest agent is stale in some trials and fresh in others (no agent is a
    'stale agent' reputation could learn)."""
    w = make_world(RetrievalConfig(), 2)
    honest = [a for a in w.agents if w.kind[a] == "honest"]
    stale_in = Counter(a for a, _ in w.stale)
    assert all(0 < stale_in[a] < len(w.trials) for a in honest)
    assert not any(w.kind[a] == "adversary" for a, _ in w.stale)


def test_fixed_phrasing_keeps_one_template_per_slot() -> None:
    w = make_world(SMALL.with_(phrasing="fixed"), 1)
    for ps in w.proposals.values():
        for p in ps:
            first = w.initial[p.slot].text.replace(w.initial[p.slot].value, "<v>")
            assert p.text.replace(p.value, "<v>") == first


# --- rankings ---------------------------------------------------------------------------


def test_lexical_ranks_like_bm25_and_forgets_removed_rows() -> None:
    idx = Lexical()
    for i in range(20):  # a corpus in which "the", "of", "is" are common, as in prose
        idx.add(f"filler{i}", f"The name of thing {i} is something else.")
    idx.add("a", "The deploy region of orlan is vemut.")
    idx.add("b", "The cache size of zorba is kitu.")
    idx.add("c", "Orlan has brema as its deploy region.")
    assert idx.search("What is the deploy region of orlan?", 5)[:2] in (["a", "c"], ["c", "a"])
    assert "b" not in idx.search("deploy region orlan", 5)
    idx.remove("a")
    assert idx.search("What is the deploy region of orlan?", 5)[0] == "c"
    assert idx.search("...", 5) == []


def test_lsa_vectors_are_unit_and_similar_texts_are_near() -> None:
    texts = ["the deploy region of orlan is vemut", "orlan deploy region brema", "cache size zorba"]
    lsa = Lsa(texts * 3, 4)
    v = [lsa.vector(t) for t in texts]
    assert all(abs(float((x * x).sum()) - 1) < 1e-9 for x in v)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])
    assert abs(float((lsa.vector("zzz unknown") ** 2).sum()) - 1) < 1e-9


# --- metrics ----------------------------------------------------------------------------


def test_measure_by_hand() -> None:
    w = make_world(SMALL, 1)
    t = next(t for t in w.trials if t.kind == "same_slot" and t.k > 0)

    def hit(value: str, slot: str = t.slot) -> Hit:
        return Hit("x", slot, value, 0, False, None)

    hits = [hit("other", "s999.00"), hit(t.old), hit(t.new)]
    m = measure(t, w, hits, {"top": hits[0], "store": hits[1]})
    assert m["hit"] == 1.0 and m["mrr"] == pytest.approx(1 / 3)
    assert m["top.acc"] == 0.0 and m["store.acc"] == 0.0 and m["store.stale"] == 1.0
    m = measure(t, w, hits[:2], {"top": None, "store": hit(t.wrong)})
    assert m["hit"] == 0.0 and m["mrr"] == 0.0 and m["store.wrong"] == 1.0


# --- stores -----------------------------------------------------------------------------


def _lsa(world: Any, cfg: RetrievalConfig) -> Lsa:
    return Lsa(corpus(world), cfg.lsa_rank)


def test_baselines_keep_what_their_names_say() -> None:
    w = make_world(SMALL, 1)
    lsa = _lsa(w, SMALL)
    stores = {s: make_store(s, w, lsa, 1, 0.0) for s in STORES[1:]}
    written = len(w.initial)
    for r in range(SMALL.rounds):
        for s in stores.values():
            s.step(r, w.proposals.get(r, []))
        written += len(w.proposals.get(r, []))
    assert stores["ungoverned"].extras()["documents"] == written
    assert stores["add_only_recency"].extras()["documents"] == written
    assert stores["last_writer_wins"].extras()["documents"] == len(w.slots)
    slot = w.trials[0].slot
    old = Hit("a", slot, "x", 3, False, None)
    new_transient = Hit("b", slot, "y", 9, True, None)
    newer = Hit("c", slot, "z", 7, False, None)
    assert stores["add_only_recency"].choose([old, new_transient, newer], slot) is newer
    assert stores["ungoverned"].choose([old, new_transient, newer], slot) is old
    for s in stores.values():
        s.close()


class _LeakyOstrom(OstromStore):
    """A mutant: its default search includes superseded versions (READ-1 broken)."""

    def search(self, query: str, mode: str, k: int) -> list[Hit]:
        return super().search(query, "history" if mode == "lexical" else mode, k)


def _read1_violations(store: OstromStore, cfg: RetrievalConfig) -> int:
    """Play the world on ``store``; after each round, for every slot a trial measures,
    count default-search hits that are not current and reader answers that are not what
    the orchestrator serves."""
    w = store.world
    bad = 0
    orch = store.node.gate.community.orchestrator
    for r in range(cfg.rounds):
        store.step(r, w.proposals.get(r, []))
        for t in (t for t in w.trials if t.measure_round == r):
            hits = store.search(w.query(t.slot), "lexical", cfg.top_k)
            bad += sum(1 for h in hits if not h.current)
            served = orch.serve(t.slot)
            chosen = store.choose(hits, t.slot)
            if chosen is not None and (served is None or chosen.doc != served["artifact"]):
                bad += 1
    return bad


def test_ostrom_default_search_is_read1_and_the_mutant_is_caught() -> None:
    cfg = SMALL.with_(store="ostrom")
    w = make_world(cfg, 1)
    lsa = _lsa(w, cfg)
    good = OstromStore(w, lsa, 1, cfg.reviewer_noise)
    try:
        assert _read1_violations(good, cfg) == 0
    finally:
        good.close()
    leaky = _LeakyOstrom(w, lsa, 1, cfg.reviewer_noise)
    try:
        assert _read1_violations(leaky, cfg) > 0
    finally:
        leaky.close()


# --- runs -------------------------------------------------------------------------------


@settings(max_examples=1, deadline=None)
@given(st.just(1))
def test_runs_are_deterministic(seed: int) -> None:
    a = run_retrieval(SMALL.with_(store="ostrom"), seed)
    b = run_retrieval(SMALL.with_(store="ostrom"), seed)
    assert a.final == b.final and a.extras == b.extras


def test_every_store_runs_and_reports_every_cell() -> None:
    for store in STORES:
        r = run_retrieval(SMALL.with_(store=store, phrasing="fixed"), 2)
        assert r.final["trials"] > 0 and r.final["dropped"] == 0
        for mode in ("lexical", "dense", "history"):
            for k in SMALL.counts:
                assert f"{mode}.store.acc.same_slot.k{k}" in r.final
            assert 0.0 <= r.final[f"{mode}.store.acc"] <= r.final[f"{mode}.hit"] + 1e-12 or (
                store == "add_only_recency"  # its reader may answer from a hit not ranked
            )
        if store == "last_writer_wins":  # the last write is served: after k >= 1 conflicts,
            # never the valid update (the recency collapse)
            assert r.final["lexical.store.acc.same_slot.k2"] == 0.0


def test_experiment_cells_and_bad_sizes() -> None:
    exp = build_family("retrieval", seeds=2, rounds=60)
    assert len(exp.cells) == len(STORES) * len(CONDITIONS)
    assert exp.scenarios == ("adv=0.00", "adv=0.20")
    for cell in exp.cells:
        assert cell.config.rounds == 60
        assert cell.vs == (() if cell.label.startswith("ostrom") else (cell.vs[0],))
    with pytest.raises(ConfigError, match="artifacts"):
        build_family("retrieval", artifacts=5)
    with pytest.raises(ConfigError, match="governance"):
        build_family("retrieval", governance="majority")


def test_the_committed_evidence_keeps_every_figure_the_tables_read() -> None:
    """The evidence leaves out only what ``evidence_skip`` names (the node's command
    counts), not results.md's skip-list, which drops every per-cell figure: the first
    committed retrieval evidence lost all of them that way."""
    skip = PRESENTATION.evidence_skip
    assert skip == ("commands.",)
    for metric in (*PRESENTATION.main_metrics, "lexical.store.acc.same_slot.k2", "dense.hit"):
        assert not metric.startswith(skip), metric
    assert any(p.startswith("lexical.") for p in PRESENTATION.md_skip_prefixes)
    labels = [label for label, _, _ in retrieval_cells()]
    assert labels == [c.label for c in build_family("retrieval").cells]
