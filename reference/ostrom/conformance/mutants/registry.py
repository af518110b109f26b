"""The mutant registry: every deliberate bug of the project, once, under one name.

A mutant is one small bug that a check must catch, played at up to three levels:

* **spec** — a TLC model of ``models/manifest.json`` whose cfg replaces one operator of a spec by
  a broken one of its MC module (``RevealMatches <- MutRevealMatches``); the model must report
  its property's invariant or temporal property violated;
* **code** — a subclass in ``property_tests/<module>.py`` overriding one method; the Hypothesis
  state machine of that layer must fail the check of ``check`` first;
* **driver** — ``python -m ostrom.conformance.driver --mutant NAME`` serves the reference with the
  bug (:mod:`ostrom.conformance.mutants.drivers`); the conformance vectors of its layer must fail
  it, and for the layers with a trace spec ``ostrom validate-trace`` must reject its logs (the
  kill matrix, :mod:`ostrom.conformance.killmatrix`).

Names are ``<layer>-<bug>`` in kebab case, the layer one of the conformance layers; the driver
mutant has the registry's name, the manifest's mutant models name it (``"mutant": NAME``), the
Hypothesis mutant modules build their ``MUTANTS`` from it (:func:`code_mutants`), and
docs/checking.md's table is generated from it (:func:`docs_table`; ``ostrom docs`` writes it).
``property_tests/conformance/test_mutant_registry.py`` fails when any of them drifts from this list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from ostrom.verify.tlc.manifest import Manifest

__all__ = [
    "MUTANTS",
    "CodeMutant",
    "Mutant",
    "by_name",
    "code_mutants",
    "docs_table",
    "markdown",
]

T = TypeVar("T")


@dataclass(frozen=True)
class CodeMutant:
    """A Hypothesis-level mutant: class ``cls`` of ``property_tests/<module>.py``, known to that
    module's ``MUTANTS`` (and to spec/properties.toml's ``code_mutants``) as ``key``; the state
    machine must fail the check of property ``check`` first."""

    module: str
    cls: str
    check: str
    key: str = ""

    @property
    def name(self) -> str:
        """The key of the mutant in its module's ``MUTANTS`` (the class name unless given)."""
        return self.key or self.cls


@dataclass(frozen=True)
class Mutant:
    """One bug: its name, layer, the property ids (or check labels) it violates, what it does,
    and where it is played (manifest models, a code mutant, a driver mutant)."""

    name: str
    layer: str
    properties: tuple[str, ...]
    bug: str
    models: tuple[str, ...] = ()
    code: CodeMutant | None = None
    driver: bool = False


def _m(
    name: str,
    props: str,
    bug: str,
    *,
    models: tuple[str, ...] = (),
    code: CodeMutant | None = None,
    driver: bool = False,
) -> Mutant:
    return Mutant(name, name.split("-", 1)[0], tuple(props.split()), bug, models, code, driver)


def _code(module: str, cls: str, check: str, key: str = "") -> CodeMutant:
    return CodeMutant(module, cls, check, key)


#: Every mutant, grouped by layer; the driver mutants in the order of the kill matrix.
MUTANTS: Final[tuple[Mutant, ...]] = (
    # --- lifecycle: the orchestrator and spec/Lifecycle.tla -----------------------------------
    _m(
        "lifecycle-ignored-objection",
        "LC-SAFE-1",
        "an objection answers ok but leaves the artifact in fast_track (LC-SAFE-1)",
        code=_code("mutants", "ObjectionIgnored", "LC-SAFE-1"),
        driver=True,
    ),
    _m(
        "lifecycle-unchecked-reveal",
        "CR-2",
        "a reveal is counted without checking it opens the voter's commitment (CR-2)",
        models=("lifecycle-mutant-binding",),
        code=_code("mutants", "RevealUnchecked", "CR-2"),
        driver=True,
    ),
    _m(
        "lifecycle-stale-reveal",
        "CR-2",
        "a reveal of an older ballot round's commitment is counted in the current ballot (CR-2)",
        models=("lifecycle-mutant-stale-reveal",),
        code=_code("mutants", "StaleRoundAccepted", "CR-2"),
        driver=True,
    ),
    _m(
        "lifecycle-tier-off-by-one",
        "LC-SAFE-4",
        "every tier guard admits agents one tier below the event's minimum (LC-SAFE-4)",
        models=("lifecycle-mutant-tier",),
        code=_code("mutants", "TierOffByOne", "LC-SAFE-4"),
        driver=True,
    ),
    _m(
        "lifecycle-dispute-unbounded",
        "LC-SAFE-3",
        "the max_disputes bound is dropped: a third dispute opens (LC-SAFE-3)",
        models=("lifecycle-mutant-dispute-bound",),
        code=_code("mutants", "DisputeUnbounded", "LC-SAFE-3"),
        driver=True,
    ),
    _m(
        "lifecycle-no-supersede",
        "LC-SAFE-2",
        "supersession is skipped: a slot keeps two active artifacts (LC-SAFE-2)",
        models=("lifecycle-mutant-supersede",),
        code=_code("mutants", "NoSupersede", "LC-SAFE-2"),
        driver=True,
    ),
    _m(
        "lifecycle-hidden-never-cleared",
        "LC-SAFE-5",
        "a kept urgent-reported artifact stays hidden after its review (LC-SAFE-5)",
        models=("lifecycle-mutant-hidden",),
        code=_code("mutants", "HiddenNeverCleared", "LC-SAFE-5"),
        driver=True,
    ),
    _m(
        "lifecycle-forget-while-disputed",
        "LC-SAFE-6",
        "a reached forget decision is executed while a dispute is open (LC-SAFE-6)",
        models=("lifecycle-mutant-forget-disputed",),
        code=_code("mutants", "ForgetWhileDisputed", "LC-SAFE-6"),
        driver=True,
    ),
    _m(
        "lifecycle-no-side-rule",
        "TALLY-1 LC-SAFE-1",
        "tallies without the side rule: one heavy voter decides a ballot (TALLY-1)",
        models=("lifecycle-mutant-side-rule",),
        code=_code("community_mutants", "NoSideRule", "TALLY-1"),
        driver=True,
    ),
    _m(
        "lifecycle-commitment-leaked",
        "CR-1",
        "the public state shows each reviewer's commitment hash during the commit phase (CR-1)",
        code=_code("mutants", "CommitmentLeaked", "CR-1"),
        driver=True,
    ),
    _m(
        "lifecycle-arbitration-stuck",
        "LC-LIVE-1",
        "the arbitration timeout never fires: the artifact stays in arbitration (LC-LIVE-1)",
        code=_code("mutants", "ArbitrationNeverTimesOut", "LC-LIVE-1"),
        driver=True,
    ),
    _m(
        "lifecycle-sanction-ignored",
        "LC-SAFE-4",
        "a suspended, banned or quarantined agent's commands are accepted (LC-SAFE-4)",
        driver=True,
    ),
    _m(
        "lifecycle-rate-limit-ignored",
        "LC-SAFE-4",
        "propose ignores the per-round rate limit (propose_rate; σ2's lower one) (LC-SAFE-4)",
        driver=True,
    ),
    _m(
        "lifecycle-refusal-counts",
        "REFUSAL",
        "a refused duplicate proposal still uses up the proposer's rate (REFUSAL)",
        code=_code("mutants", "RefusalBumpsCounter", "REFUSAL"),
        driver=True,
    ),
    _m(
        "lifecycle-tally-without-quorum",
        "LC-SAFE-1",
        "the tally ignores the quorum: a ballot with fewer than quorum valid reveals is decided "
        "(LC-SAFE-1)",
        models=("lifecycle-mutant-quorum",),
    ),
    _m(
        "lifecycle-arbitration-expires",
        "TABLE",
        "the arbitration deadline records the status quo as expired, a row the transition table "
        "does not have (TABLE: spec and table agree)",
        models=("lifecycle-mutant-table",),
    ),
    _m(
        "lifecycle-timeout-unfair",
        "LC-LIVE-1",
        "Timeout has no fairness: an artifact may stay in a transient state forever (LC-LIVE-1)",
        models=("lifecycle-mutant-fairness",),
    ),
    # --- community: the layers wired together ----------------------------------------------------
    _m(
        "community-sanction-not-enforced",
        "LC-SAFE-4",
        "a sanction reached by a violation is not enforced until the next tick: a suspended "
        "agent still acts (LC-SAFE-4)",
        code=_code("community_mutants", "SanctionsNotEnforced", "LC-SAFE-4"),
        driver=True,
    ),
    _m(
        "community-join-at-tier-one",
        "REP-2 LC-SAFE-4",
        "a newcomer is registered at tier 1, so a fresh identity may review (REP-2, LC-SAFE-4)",
        code=_code("community_mutants", "JoinAtTierOne", "LC-SAFE-4"),
        driver=True,
    ),
    _m(
        "community-no-population-floor",
        "FG-1",
        "the forget decision ignores min_active_agents: a tiny active population forgets (FG-1)",
        code=_code("community_mutants", "NoPopulationGuard", "FG-1"),
        driver=True,
    ),
    _m(
        "community-stale-tiers",
        "LC-SAFE-4",
        "the registry keeps each agent's first tier: reputation never promotes or demotes "
        "(LC-SAFE-4)",
        code=_code("community_mutants", "StaleTiers", "LC-SAFE-4"),
        driver=True,
    ),
    _m(
        "community-forget-while-disputed",
        "LC-SAFE-6",
        "the forget decision does not wait for a pending dispute, through the community's "
        "orchestrator (LC-SAFE-6)",
        code=_code("community_mutants", "ForgetWhileDisputed", "LC-SAFE-6"),
    ),
    # --- voting ---------------------------------------------------------------------------------
    _m(
        "voting-no-side-rule",
        "TALLY-1",
        "the verdicts ignore min_side: a single heavy vote decides (TALLY-1)",
        driver=True,
    ),
    _m(
        "voting-roundless-commitment",
        "CR-2",
        "the commitment hash leaves out the ballot round, so stale reveals open it (CR-2)",
        driver=True,
    ),
    # --- reputation -------------------------------------------------------------------------------
    _m(
        "reputation-plain-decay",
        "REP-1",
        "decay scales the counts r, s (the plain rule), moving an inactive agent's E (REP-1)",
        code=_code("reputation_mutants", "PlainDecayBook", "REP-1"),
        driver=True,
    ),
    _m(
        "reputation-no-farming-cap",
        "FARM-CAP REP-2",
        "voting weight jumps to its raw value: no farming cap on its growth (FARM-CAP, REP-2)",
        code=_code("reputation_mutants", "NoFarmingCapBook", "FARM-CAP"),
        driver=True,
    ),
    _m(
        "reputation-no-dwell",
        "TIER-DWELL",
        "promotion needs reputation only, no time in the tier below (TIER-DWELL)",
        code=_code("reputation_mutants", "NoDwellBook", "TIER-DWELL"),
    ),
    # --- sanctions: SanctionBook and spec/Sanctions.tla --------------------------------------
    _m(
        "sanctions-window-off-by-one",
        "SAN-2",
        "violations stay in the window one round too long (W + 1 rounds) (SAN-2)",
        models=("sanctions-mutant-expire-late",),
        code=_code("sanctions_mutants", "ExpiresLate", "SAN-2"),
        driver=True,
    ),
    _m(
        "sanctions-quarantine-escalates",
        "SAN-1",
        "a quarantined agent's violations still raise its sanction level (SAN-1)",
        models=("sanctions-mutant-quarantine-escalates",),
        code=_code("sanctions_mutants", "QuarantineEscalates", "SAN-1"),
        driver=True,
    ),
    _m(
        "sanctions-never-released",
        "SAN-1",
        "a repaired agent is never released from quarantine (SAN-1: quarantine ends in bound)",
        models=("sanctions-mutant-never-release",),
        code=_code("sanctions_mutants", "NeverReleased", "SAN-1"),
        driver=True,
    ),
    _m(
        "sanctions-window-ignored",
        "SAN-2",
        "violations never expire: every violation since the start counts (SAN-2)",
        code=_code("sanctions_mutants", "WindowIgnored", "SAN-2"),
    ),
    _m(
        "sanctions-suspension-one-short",
        "SAN-SUSP",
        "a suspension lasts T_susp - 1 rounds (SAN-SUSP)",
        code=_code("sanctions_mutants", "SuspensionOneShort", "SAN-SUSP"),
    ),
    _m(
        "sanctions-ban-lifted",
        "SAN-BAN",
        "a ban falls with the window like any other level (SAN-BAN)",
        code=_code("sanctions_mutants", "BanLifted", "SAN-BAN"),
    ),
    # --- forgetting ---------------------------------------------------------------------------
    _m(
        "forgetting-quorum-over-voters",
        "FG-1",
        "the forget quorum counts only the voters' weight: a lone voter forgets (FG-1)",
        code=_code("forgetting_mutants", "QuorumOverVoters", "FG-1"),
        driver=True,
    ),
    _m(
        "forgetting-hidden-ignored",
        "LC-SAFE-6",
        "the forget decision ignores the hidden flag (hidden under review) (LC-SAFE-6)",
        code=_code("forgetting_mutants", "HiddenIgnored", "LC-SAFE-6"),
        driver=True,
    ),
    _m(
        "forgetting-float-tally",
        "FG-EXACT",
        "S ≥ Q is compared in floats, not integers: the threshold case flips (FG-EXACT)",
        code=_code("forgetting_mutants", "FloatTally", "FG-EXACT"),
        driver=True,
    ),
    _m(
        "forgetting-votable-is-forgettable",
        "LC-SAFE-6",
        "every state that admits a forget vote also admits the decision (LC-SAFE-6)",
        code=_code("forgetting_mutants", "VotableIsForgettable", "LC-SAFE-6"),
    ),
    # --- pbft: the replica, spec/PBFT.tla and the code-level spec/PBFTReplicaSystem.tla ---------
    _m(
        "pbft-prepares-twice",
        "BFT-SAFE-1",
        "a backup accepts a second, conflicting PRE-PREPARE for a (view, seq) and prepares "
        "twice in the view (BFT-SAFE-1)",
        code=_code("consensus_mutants", "PreparesTwice", "BFT-SAFE-1", "prepares_twice"),
        driver=True,
    ),
    _m(
        "pbft-prepared-one-short",
        "BFT-SAFE-1",
        "prepared with one matching PREPARE fewer than 2f (BFT-SAFE-1)",
        models=("pbft-mutant-prepared-short",),
        code=_code("consensus_mutants", "PreparedOneShort", "BFT-SAFE-1", "prepared_one_short"),
    ),
    _m(
        "pbft-new-primary-ignores-certificates",
        "BFT-SAFE-1",
        "the new primary's O ignores the prepared certificates of V: null everywhere (BFT-SAFE-1)",
        models=("pbft-mutant-ignore-certificates",),
        code=_code(
            "consensus_mutants",
            "NewPrimaryIgnoresCertificates",
            "BFT-SAFE-1",
            "new_primary_ignores_certificates",
        ),
    ),
    _m(
        "pbft-commit-quorum-2f",
        "BFT-SAFE-1",
        "committed-local with 2f COMMITs instead of 2f+1 (BFT-SAFE-1)",
        models=("pbft-mutant-commit-2f",),
        code=_code("consensus_mutants", "CommitQuorum2f", "BFT-SAFE-1", "commit_quorum_2f"),
    ),
    _m(
        "pbft-no-view-change",
        "BFT-LIVE-1",
        "timeouts are ignored, so a faulty primary stops the service (BFT-LIVE-1)",
        models=("pbft-mutant-no-view-change",),
        code=_code("consensus_mutants", "NoViewChange", "BFT-LIVE-1", "no_view_change"),
    ),
    _m(
        "pbft-skip-gaps",
        "BFT-SAFE-2",
        "every committed request is executed in sequence order without waiting for the gaps "
        "below it (BFT-SAFE-2)",
        models=("pbft-mutant-skip-gaps",),
    ),
    _m(
        "pbft-signature-unchecked",
        "BFT-SAFE-2",
        "signatures are not verified: a Byzantine replica's forged request is executed "
        "(BFT-SAFE-2)",
        code=_code("consensus_mutants", "SignatureUnchecked", "BFT-SAFE-2", "signature_unchecked"),
    ),
    _m(
        "pbft-tentative-no-rollback",
        "REPL-1",
        "tentative execution without its rollback (REPL-1)",
        code=_code("consensus_mutants", "TentativeNoRollback", "REPL-1", "tentative_no_rollback"),
    ),
    _m(
        "pbft-drop-own-view-change",
        "BFT-LIVE-1",
        "a replica forgets the NEW-VIEW that installed the view it leaves and re-sends or "
        "answers view changes only while active (BFT-LIVE-1)",
        models=("pbft-replica-mutant-drop-own-view-change",),
    ),
    _m(
        "pbft-first-checkpoint-vote-wins",
        "BFT-LIVE-1",
        "a replica keeps the first CHECKPOINT digest it hears from each replica, so a lying "
        "one blocks stability (BFT-LIVE-1)",
        models=("pbft-replica-mutant-first-checkpoint-vote-wins",),
    ),
    _m(
        "pbft-current-view-votes",
        "BFT-LIVE-1",
        "a replica re-sends only the PRE-PREPAREs and votes of its current view (BFT-LIVE-1)",
        models=("pbft-replica-mutant-current-view-votes",),
    ),
    _m(
        "pbft-redelivery",
        "BFT-NET-1",
        "an out-of-order delivery leaves the delivered message on its link, to be delivered "
        "again (BFT-NET-1)",
        models=("pbft-replica-mutant-redelivery",),
    ),
    _m(
        "pbft-uncounted-reorder",
        "BFT-NET-1",
        "an out-of-order delivery does not spend the reorder budget (BFT-NET-1)",
        models=("pbft-replica-mutant-uncounted-reorder",),
    ),
    _m(
        "pbft-endless-duplicates",
        "BFT-NET-1",
        "a duplication does not spend the duplicate budget (BFT-NET-1)",
        models=("pbft-replica-mutant-endless-duplicates",),
    ),
    _m(
        "pbft-any-round-done",
        "BFT-LIVE-1",
        "a round after the heal is done once any honest replica has retransmitted, not all "
        "(BFT-LIVE-1)",
        models=("pbft-replica-mutant-any-round-done",),
    ),
    _m(
        "pbft-endless-rounds",
        "BFT-LIVE-1",
        "a round after the heal that changed nothing starts another (BFT-LIVE-1)",
        models=("pbft-replica-mutant-endless-rounds",),
    ),
    _m(
        "pbft-amnesia",
        "BFT-SAFE-1",
        "a replica restarts without its database and forgets what it promised (BFT-SAFE-1)",
        models=("pbft-replica-mutant-amnesia",),
    ),
    _m(
        "pbft-idle-restart",
        "BFT-FAULT-1",
        "a crash-restart loses nothing: the replica keeps its volatile state (BFT-FAULT-1)",
        models=("pbft-replica-mutant-idle-restart",),
    ),
    _m(
        "pbft-unguarded-timeout",
        "BFT-FAULT-1",
        "a timer expires on a replica that is not waiting, or at the view bound (BFT-FAULT-1)",
        models=("pbft-replica-mutant-unguarded-timeout",),
    ),
    _m(
        "pbft-view-change-drops-certificates",
        "BFT-SAFE-1 BFT-SAFE-2",
        "an honest VIEW-CHANGE carries no prepared certificates (BFT-SAFE-1)",
        models=("pbft-refinement-mutant-vc-drops-certificates", "pbft-local-mutant-empty-p"),
    ),
)


def by_name() -> dict[str, Mutant]:
    """The registry as name -> mutant."""
    return {m.name: m for m in MUTANTS}


def _code_entries(module: str) -> Iterator[CodeMutant]:
    for m in MUTANTS:
        if m.code is not None and m.code.module == module:
            yield m.code


def code_mutants(
    module: str, namespace: Mapping[str, object], base: type[T]
) -> dict[str, tuple[type[T], str]]:
    """The ``MUTANTS`` of ``property_tests/<module>.py``: key -> (class, the id of the check
    that must catch it), for the registry's code mutants of that module, looked up in the
    module's ``namespace`` (its ``globals()``). A class the registry names that the module does
    not define as a subclass of ``base`` is an error at import."""
    out: dict[str, tuple[type[T], str]] = {}
    for code in _code_entries(module):
        cls = namespace.get(code.cls)
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise LookupError(
                f"the mutant registry names {module}.{code.cls}, not a {base.__name__} there"
            )
        out[code.name] = (cls, code.check)
    return out


def markdown(substitutions: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The registry as the Markdown table of docs/checking.md; ``substitutions`` (model ->
    ``Op -> MutOp``, from the manifest) are shown beside each TLC model."""
    subs = substitutions or {}
    out = [
        "| mutant | properties | the bug | TLC model (operator replaced) | Hypothesis mutant "
        "| driver `--mutant` |",
        "|---|---|---|---|---|---|",
    ]
    for m in MUTANTS:
        models = "<br>".join(
            f"`{x}`" + "".join(f" `{op} <- {new}`" for op, new in subs.get(x, {}).items())
            for x in m.models
        )
        code = f"`{m.code.module}.{m.code.cls}`" if m.code else "—"
        driver = "yes" if m.driver else "—"
        props = ", ".join(m.properties)
        out.append(f"| `{m.name}` | {props} | {m.bug} | {models or '—'} | {code} | {driver} |")
    return "\n".join(out)


def docs_table(manifest: Manifest) -> str:
    """The table with the substitutions of ``manifest``'s mutant models (models/manifest.json:
    ``ostrom docs`` writes it into docs/checking.md)."""
    subs = {m.name: m.overrides.substitute for m in manifest.models if m.overrides is not None}
    return markdown(subs)
