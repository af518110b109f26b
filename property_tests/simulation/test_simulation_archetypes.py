"""Statistical tests of the archetypes' behaviour (``ostrom.simulation.archetypes``).

The module docstring of ``archetypes`` is the specification; each test checks one of its
sentences.  Rates are measured on ``N`` draws from a fixed seed and compared with the rate
the specification gives, within ``Z`` binomial standard deviations (``assert_rate``): wide
enough that no seed fails by chance (P(|Z| > 4.5) < 1e-5), narrow enough that a behaviour
off by a few points is caught (for p = 0.3, N = 4,000: 4.5 SD = 0.032).  Where the
specification ties one archetype's act to another's reading (malicious inverts the honest
reading, adaptive is honest then malicious), the two are run on twin random streams
(same seed, same draws), so the check is exact, not statistical.

Everything is reached through the module (``arch.vote``...), so a monkeypatched
implementation is the one under test.
"""

from __future__ import annotations

import itertools
import math
import random
from statistics import NormalDist

import pytest

from ostrom.simulation import archetypes as arch
from ostrom.simulation.config import ACCEPT_THRESHOLD, ARCHETYPES, SimConfig

N = 4000
Z = 4.5
SEED = 20240601
CFG = SimConfig(agents=30, rounds=60, artifacts=120)
PHI = NormalDist().cdf


def assert_rate(hits: int, n: int, p: float, what: str) -> None:
    """``hits / n`` is within ``Z`` binomial SDs of ``p`` (exact when p is 0 or 1)."""
    sd = math.sqrt(p * (1 - p) / n)
    got = hits / n
    assert abs(got - p) <= Z * sd + 1e-12, (
        f"{what}: {got:.4f} over {n} draws, expected {p:.4f} ± {Z * sd:.4f}"
    )


def endorse_probability(quality: float, sd: float) -> float:
    """P(quality + N(0, sd) >= threshold)."""
    if sd == 0:
        return 1.0 if quality >= ACCEPT_THRESHOLD else 0.0
    return 1.0 - PHI((ACCEPT_THRESHOLD - quality) / sd)


def ballot(
    i: int = 0,
    quality: float = 0.9,
    *,
    kind: str = "review",
    now: int = 10,
    deliberated: bool = False,
    visible: tuple[bool, ...] = (),
) -> arch.Ballot:
    return arch.Ballot(
        f"x{i:05d}", quality, quality >= ACCEPT_THRESHOLD, kind, now, deliberated, visible
    )


def votes(
    archetype: str, b: arch.Ballot, n: int = N, cfg: SimConfig = CFG, seed: int = SEED
) -> list[arch.Act]:
    """``n`` votes of one agent on the same ballot (one random stream)."""
    rng = random.Random(seed)
    return [arch.vote(archetype, "a001", b, cfg, rng, seed) for _ in range(n)]


def flip(act: str) -> str:
    return {arch.ENDORSE: arch.OPPOSE, arch.OPPOSE: arch.ENDORSE}[act]


# --- honest --------------------------------------------------------------------------------


@pytest.mark.parametrize("deliberated", [False, True])
@pytest.mark.parametrize("quality", [0.05, 0.2, 0.4, 0.95, 0.99])
def test_honest_is_accurate_far_from_the_threshold(quality: float, deliberated: bool) -> None:
    acts = votes("honest", ballot(quality=quality, deliberated=deliberated))
    right: arch.Act = arch.ENDORSE if quality >= ACCEPT_THRESHOLD else arch.OPPOSE
    accuracy = acts.count(right) / N
    assert accuracy >= 0.99, f"honest accuracy {accuracy} at quality {quality}"
    assert set(acts) <= {arch.ENDORSE, arch.OPPOSE}  # an honest agent always votes


@pytest.mark.parametrize("deliberated", [False, True])
@pytest.mark.parametrize("quality", [0.6, 0.66, 0.7, 0.74, 0.8])
def test_honest_follows_a_gaussian_reading(quality: float, deliberated: bool) -> None:
    sd = CFG.deliberation_noise if deliberated else CFG.perception_noise
    acts = votes("honest", ballot(quality=quality, deliberated=deliberated))
    assert_rate(
        acts.count(arch.ENDORSE), N, endorse_probability(quality, sd), f"honest q={quality}"
    )


@pytest.mark.parametrize("quality", [0.62, 0.66, 0.75, 0.78])
def test_deliberation_reduces_errors_near_the_threshold(quality: float) -> None:
    right: arch.Act = arch.ENDORSE if quality >= ACCEPT_THRESHOLD else arch.OPPOSE
    err = {}
    for d in (False, True):
        acts = votes("honest", ballot(quality=quality, deliberated=d), seed=SEED + d)
        err[d] = 1 - acts.count(right) / N
    sd_diff = math.sqrt((err[False] * (1 - err[False]) + err[True] * (1 - err[True])) / N)
    assert err[False] - err[True] > 3 * sd_diff, f"errors without/with deliberation: {err}"


def test_noise_free_reading_is_the_threshold_rule() -> None:
    cfg = CFG.with_(perception_noise=0.0, deliberation_noise=0.0)
    for q in (0.0, 0.3, 0.69999, ACCEPT_THRESHOLD, 0.8, 0.99):
        (act,) = votes("honest", ballot(quality=q), n=1, cfg=cfg)
        assert act == (arch.ENDORSE if q >= ACCEPT_THRESHOLD else arch.OPPOSE), q


def test_honest_objects_and_disputes_when_its_reading_says_reject() -> None:
    rng = random.Random(SEED)
    for q, expect in ((0.1, arch.OPPOSE), (0.95, arch.ABSTAIN)):
        acts: list[str] = [
            arch.objects("honest", "a1", ballot(quality=q), CFG, rng, SEED) for _ in range(N)
        ]
        assert acts.count(expect) / N >= 0.99, (q, expect)
        assert set(acts) <= {arch.OPPOSE, arch.ABSTAIN}
        ds = [
            arch.disputes("honest", "a1", ballot(quality=q, kind="dispute"), CFG, rng, SEED)
            for _ in range(N)
        ]
        assert sum(ds) / N == pytest.approx(1.0 if expect == arch.OPPOSE else 0.0, abs=0.01)


# --- malicious, strategic, adaptive --------------------------------------------------------


def twin(
    archetype: str, b: arch.Ballot, agent: str = "a001", seed: int = SEED, n: int = 1
) -> list[tuple[arch.Act, arch.Act]]:
    """The act of ``archetype`` and the honest act, on twin random streams."""
    r1, r2 = random.Random(seed), random.Random(seed)
    return [
        (
            arch.vote(archetype, agent, b, CFG, r1, seed),
            arch.vote("honest", agent, b, CFG, r2, seed),
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("quality", [0.1, 0.65, 0.7, 0.72, 0.95])
def test_malicious_inverts_the_honest_reading(quality: float) -> None:
    for mine, honest in twin("malicious", ballot(quality=quality), n=500):
        assert mine == flip(honest)


def test_malicious_accepts_bad_rejects_good_and_attacks_good_ones() -> None:
    good, bad = ballot(quality=0.95), ballot(quality=0.1)
    assert votes("malicious", good).count(arch.OPPOSE) / N >= 0.99
    assert votes("malicious", bad).count(arch.ENDORSE) / N >= 0.99
    rng = random.Random(SEED)
    obj = [arch.objects("malicious", "a1", good, CFG, rng, SEED) for _ in range(N)]
    assert obj.count(arch.OPPOSE) / N >= 0.99
    assert [arch.objects("malicious", "a1", bad, CFG, rng, SEED) for _ in range(N)].count(
        arch.OPPOSE
    ) / N <= 0.01
    dgood = ballot(quality=0.95, kind="dispute")
    assert (
        sum(arch.disputes("malicious", "a1", dgood, CFG, rng, SEED) for _ in range(N)) >= 0.99 * N
    )


@pytest.mark.parametrize("share", [0.3, 0.6])
def test_strategic_attacks_a_share_of_ballots(share: float) -> None:
    cfg = CFG.with_(strategic_attack=share)
    attacked = sum(arch.attacks("strategic", "a007", ballot(i), cfg, SEED) for i in range(N))
    assert_rate(attacked, N, share, "strategic attack share")
    # and its vote is the inverted reading exactly on the attacked ballots
    r1, r2 = random.Random(SEED), random.Random(SEED)
    for i in range(500):
        b = ballot(i, quality=0.5 + (i % 50) / 100)
        mine = arch.vote("strategic", "a007", b, cfg, r1, SEED)
        honest = arch.vote("honest", "a007", b, cfg, r2, SEED)
        assert (mine != honest) == arch.attacks("strategic", "a007", b, cfg, SEED)


def test_strategic_attacks_are_deterministic_per_agent_and_artifact() -> None:
    def pattern(agent: str, seed: int = SEED, now: int = 10) -> list[bool]:
        return [arch.attacks("strategic", agent, ballot(i, now=now), CFG, seed) for i in range(N)]

    a = pattern("a007")
    assert a == pattern("a007")  # the same question, the same answer
    assert a == pattern("a007", now=400)  # not a function of the round
    b = pattern("a008")
    # two agents attack independently: overlap ≈ p², not p
    both = sum(x and y for x, y in zip(a, b, strict=True))
    p = CFG.strategic_attack
    assert_rate(both, N, p * p, "two strategic agents attacking the same ballot")
    assert pattern("a007", seed=SEED + 1) != a  # and the run's seed matters


def test_adaptive_is_honest_then_malicious() -> None:
    s = CFG.adaptive_switch
    for now in (0, 1, s - 1):
        for mine, honest in twin("adaptive", ballot(quality=0.72, now=now), n=300):
            assert mine == honest, now
        assert not arch.attacks("adaptive", "a1", ballot(now=now), CFG, SEED)
    for now in (s, s + 1, 10 * s):
        for mine, honest in twin("adaptive", ballot(quality=0.72, now=now), n=300):
            assert mine == flip(honest), now
        assert arch.attacks("adaptive", "a1", ballot(now=now), CFG, SEED)


def test_non_adversaries_never_attack() -> None:
    for k in ("honest", "sycophant", "broken", "lazy"):
        assert not any(arch.attacks(k, "a1", ballot(i), CFG, SEED) for i in range(200)), k


# --- sycophant -----------------------------------------------------------------------------


def test_sycophant_copies_the_visible_majority_and_the_first_on_a_tie() -> None:
    for n in range(1, 6):
        for seen in itertools.product((False, True), repeat=n):
            yes = sum(seen)
            no = n - yes
            follow = seen[0] if yes == no else yes > no
            expect = arch.ENDORSE if follow else arch.OPPOSE
            for q in (0.05, 0.95):  # whatever the quality
                rng = random.Random(SEED)
                state = rng.getstate()
                b = ballot(quality=q, visible=seen)
                assert arch.vote("sycophant", "a1", b, CFG, rng, SEED) == expect, (seen, q)
                assert rng.getstate() == state  # copying needs no reading


@pytest.mark.parametrize("quality", [0.3, 0.6, 0.75, 0.95])
def test_sycophant_reads_for_itself_when_nothing_is_visible(quality: float) -> None:
    acts = votes("sycophant", ballot(quality=quality))
    p = endorse_probability(quality, CFG.sycophant_noise)
    assert_rate(acts.count(arch.ENDORSE), N, p, f"sycophant q={quality}")
    assert set(acts) <= {arch.ENDORSE, arch.OPPOSE}


def test_sycophant_reading_is_noisier_than_honest() -> None:
    b = ballot(quality=0.95)  # honest errs 0.6% of the time, a sycophant 16%
    honest_err = votes("honest", b).count(arch.OPPOSE)
    syc_err = votes("sycophant", b).count(arch.OPPOSE)
    assert_rate(syc_err, N, 1 - endorse_probability(0.95, CFG.sycophant_noise), "sycophant")
    assert syc_err > 5 * honest_err


def test_sycophant_and_lazy_never_object_or_dispute() -> None:
    rng = random.Random(SEED)
    for k in ("sycophant", "lazy"):
        for q, seen, _ in itertools.product((0.05, 0.5, 0.95), ((), (False, False)), range(300)):
            b = ballot(quality=q, visible=seen)
            assert arch.objects(k, "a1", b, CFG, rng, SEED) == arch.ABSTAIN
            d = ballot(quality=q, kind="dispute", visible=seen)
            assert arch.disputes(k, "a1", d, CFG, rng, SEED) is False


# --- bloc ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [0.5, 0.2])
def test_bloc_members_vote_together_against_the_truth_on_a_share(target: float) -> None:
    cfg = CFG.with_(bloc_target=target)
    members = [f"a{i:03d}" for i in range(5)]
    rngs = [random.Random(SEED + i) for i in range(len(members))]
    against = 0
    for i in range(N):
        q = (i % 100) / 100
        good = q >= ACCEPT_THRESHOLD
        for kind in ("review", "dispute"):
            b = arch.Ballot(f"x{i:05d}", q, good, kind, i % 300, kind == "review")
            acts = {
                arch.vote("bloc", m, b, cfg, r, SEED) for m, r in zip(members, rngs, strict=True)
            }
            assert len(acts) == 1, f"bloc split on {b}"
            (act,) = acts
            wrong = act != (arch.ENDORSE if good else arch.OPPOSE)
            if kind == "review":
                against += wrong
                first = wrong
            else:
                assert wrong == first  # the same artifacts, whatever the ballot
    assert_rate(against, N, target, "bloc votes against the truth")


def test_bloc_uses_the_truth_not_a_reading() -> None:
    # an artifact just below the threshold that is (by the truth flag) good: the bloc
    # votes on the flag, with no noise, so every draw agrees
    b = arch.Ballot("x00001", 0.69, True, "review", 3, False)
    assert len(set(votes("bloc", b, n=200))) == 1


# --- broken and lazy -----------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.3, 0.7])
def test_broken_sends_garbage_at_its_malfunction_rate(p: float) -> None:
    cfg = CFG.with_(broken_malfunction=p)
    for q in (0.05, 0.95):
        acts = votes("broken", ballot(quality=q), cfg=cfg)
        assert_rate(acts.count(arch.GARBAGE), N, p, f"broken garbage q={q}")
        sane = [a for a in acts if a != arch.GARBAGE]
        assert set(sane) <= {arch.ENDORSE, arch.OPPOSE}
        assert_rate(sane.count(arch.ENDORSE), len(sane), 0.5, "broken coin flip")
    rng = random.Random(SEED)
    obj = [arch.objects("broken", "a1", ballot(quality=0.1), cfg, rng, SEED) for _ in range(N)]
    assert set(obj) <= {arch.GARBAGE, arch.ABSTAIN}
    assert_rate(obj.count(arch.GARBAGE), N, p, "broken objection garbage")
    d = ballot(quality=0.05, kind="dispute")
    assert not any(arch.disputes("broken", "a1", d, cfg, rng, SEED) for _ in range(N))


@pytest.mark.parametrize("p", [0.5, 0.8])
def test_lazy_abstains_and_rubber_stamps(p: float) -> None:
    cfg = CFG.with_(lazy_participation=p)
    for q in (0.05, 0.95):
        acts = votes("lazy", ballot(quality=q), cfg=cfg)
        assert set(acts) <= {arch.ENDORSE, arch.ABSTAIN}  # never reads, never opposes
        assert_rate(acts.count(arch.ABSTAIN), N, 1 - p, f"lazy abstention q={q}")


@pytest.mark.parametrize(
    ("archetype", "garbage", "silent"),
    [("broken", 0.3, 0.0), ("lazy", 0.0, 0.3), ("honest", 0.0, 0.0), ("malicious", 0.0, 0.0)],
)
def test_reveal_rates(archetype: str, garbage: float, silent: float) -> None:
    cfg = CFG.with_(broken_malfunction=0.3, lazy_reveal=0.7)
    rng = random.Random(SEED)
    acts = [arch.reveals(archetype, cfg, rng) for _ in range(N)]
    assert set(acts) <= {arch.ENDORSE, arch.ABSTAIN, arch.GARBAGE}
    assert_rate(acts.count(arch.GARBAGE), N, garbage, f"{archetype} bad reveals")
    assert_rate(acts.count(arch.ABSTAIN), N, silent, f"{archetype} non-reveals")


def test_every_archetype_votes_and_unknown_is_refused() -> None:
    rng = random.Random(SEED)
    for k in ARCHETYPES:
        assert arch.vote(k, "a1", ballot(), CFG, rng, SEED) in (
            arch.ENDORSE,
            arch.OPPOSE,
            arch.ABSTAIN,
            arch.GARBAGE,
        )
    with pytest.raises(ValueError, match="unknown archetype"):
        arch.vote("saboteur", "a1", ballot(), CFG, rng, SEED)


# --- who speaks first ----------------------------------------------------------------------


def test_order_puts_the_attacking_adversaries_first() -> None:
    kinds = {
        "a00": "honest",
        "a01": "honest",
        "a02": "malicious",
        "a03": "sycophant",
        "a04": "adaptive",
        "a05": "strategic",
        "a06": "bloc",
        "a07": "lazy",
        "a08": "broken",
        "a09": "strategic",
    }
    reviewers = sorted(kinds)
    rng = random.Random(SEED)
    firsts: set[tuple[str, ...]] = set()
    for i in range(400):
        b = ballot(i, now=(0 if i % 2 else CFG.adaptive_switch))

        def first(a: str, b: arch.Ballot = b) -> bool:
            return arch.speaks_first(kinds[a], a, b, CFG, SEED)

        out = arch.order(reviewers, first, rng)
        assert sorted(out) == reviewers  # a permutation
        gain = {a for a in reviewers if arch.attacks(kinds[a], a, b, CFG, SEED)}
        k = len(gain)
        assert set(out[:k]) == gain, (b, out, gain)
        assert "a02" in gain  # malicious always attacks
        assert ("a04" in gain) == (b.now >= CFG.adaptive_switch)
        assert ("a06" in gain) == arch.attacks("bloc", "a06", b, CFG, SEED)
        firsts.add(tuple(out[:k]))
    # each group is shuffled: the attackers do not always come in the same order
    assert len({f for f in firsts if set(f) == {"a02", "a04"}}) == 2
