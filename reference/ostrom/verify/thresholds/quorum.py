"""BFT-QUORUM-1: two PBFT quorums share an honest replica, for every n ≥ 3f+1."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import z3

from ostrom.protocol.params import Params
from ostrom.verify.thresholds.result import Status, TheoremResult
from ostrom.verify.thresholds.solver import Explain, Objective, _check, _Claim, _int

__all__ = ["QuorumRule", "bft_quorum_1", "flat_rule", "implementation_rule"]

QuorumRule = Callable[[Any, Any], Any]


def implementation_rule(n: Any, f: Any) -> Any:
    """``ostrom.consensus.replica.quorum`` = ``(n + f + 2) // 2`` on Z3 integers (Z3's
    integer division floors for a positive divisor: the same function on naturals)."""
    return (n + f + 2) / 2


def flat_rule(n: Any, f: Any) -> Any:
    """A flat 2f+1 quorum, right only when n = 3f+1."""
    return 2 * f + 1


def bft_quorum_1(
    params: Params | None = None, *, rule: QuorumRule = implementation_rule
) -> list[TheoremResult]:
    """BFT-QUORUM-1 for all n ≥ 3f+1, f ≥ 0 — unbounded integers, no parameter of the
    table involved, so both modes check the same.  ``rule`` is the quorum size as a
    function of Z3 integers (default: the replicas' ``quorum``); ``flat_rule`` makes the
    intersection and ceil checks fail.  Two quorums of q among n replicas share at least
    2q − n (inclusion–exclusion); 2q − n ≥ f+1 means one of them is honest.
    """
    del params
    n, f, ceil = z3.Ints("n f ceil")
    q = rule(n, f)
    dom = [f >= 0, n >= 3 * f + 1]
    smallest: list[Objective] = [("min", n), ("min", f)]

    def nfq(model: Any, size: Any = q) -> tuple[int, int, int]:
        return _int(model, n), _int(model, f), _int(model, size)

    def overlap(size: Any) -> Explain:
        def explain(model: Any) -> tuple[str, dict[str, Any]]:
            nv, fv, qv = nfq(model, size)
            a, b = list(range(qv)), list(range(nv - qv, nv))
            shared = sorted(set(a) & set(b))

            def names(xs: Sequence[int]) -> str:
                return ", ".join(f"r{i}" for i in xs) or "none"

            text = (
                f"n = {nv} replicas, f = {fv}: the quorums {{{names(a)}}} and "
                f"{{{names(b)}}} of {qv} share {len(shared)} replica(s) ({names(shared)}), "
                f"fewer than f+1 = {fv + 1}: every shared replica may be faulty, so two "
                f"conflicting requests can each gather a quorum."
            )
            cex = {"n": nv, "f": fv, "quorum": qv, "quorum_a": a, "quorum_b": b, "shared": shared}
            return text, cex

        return explain

    def mismatch(what: str) -> Explain:
        def explain(model: Any) -> tuple[str, dict[str, Any]]:
            nv, fv, qv = nfq(model)
            want = {"ceil": -(-(nv + fv + 1) // 2), "2f+1": 2 * fv + 1, "n-f": nv - fv}[what]
            label = {"ceil": "⌈(n+f+1)/2⌉", "2f+1": "2f+1", "n-f": "n − f"}[what]
            text = f"n = {nv}, f = {fv}: the rule gives {qv}, {label} = {want}."
            if what == "n-f":
                text += f" With {fv} silent replicas the {nv - fv} honest ones never commit."
            return text, {"n": nv, "f": fv, "quorum": qv, what: want}

        return explain

    def claim(check: str, title: str, statement: str, expected: Status = Status.PROVED) -> _Claim:
        return _Claim("BFT-QUORUM-1", check, "bft_quorum_1", title, statement, expected)

    every = "for every n ≥ 3f+1, f ≥ 0 (unbounded integers)"
    return [
        _check(
            claim(
                "intersection",
                "two quorums share f+1 replicas",
                "for all n ≥ 3f+1, f ≥ 0, q = the rule: 2q − n ≥ f+1, so two quorums share "
                "an honest replica",
            ),
            dom,
            2 * q - n >= f + 1,
            proved=f"Z3 proved 2q − n ≥ f+1 {every}.",
            explain=overlap(q),
            objectives=smallest,
            prefer=[f >= 1],
        ),
        _check(
            claim(
                "availability",
                "the honest replicas alone form a quorum",
                "for all n ≥ 3f+1, f ≥ 0: q ≤ n − f (the replicas that are not faulty can "
                "commit without the faulty ones: liveness)",
            ),
            dom,
            q <= n - f,
            proved=f"Z3 proved q ≤ n − f {every}.",
            explain=mismatch("n-f"),
            objectives=smallest,
        ),
        _check(
            claim(
                "ceil",
                "the rule is ⌈(n+f+1)/2⌉",
                "for all n ≥ 3f+1, f ≥ 0: the rule equals ⌈(n+f+1)/2⌉ (docs/design.md §6), "
                "with the ceiling as integer constraints 2c ≥ n+f+1 ∧ 2c ≤ n+f+2",
            ),
            [*dom, 2 * ceil >= n + f + 1, 2 * ceil <= n + f + 2],
            q == ceil,
            proved=f"Z3 proved the rule equals ⌈(n+f+1)/2⌉ {every}.",
            explain=mismatch("ceil"),
            objectives=smallest,
            prefer=[f >= 1],
        ),
        _check(
            claim("classic", "q = 2f+1 when n = 3f+1", "for all f ≥ 0: n = 3f+1 ⇒ q = 2f+1"),
            [f >= 0, n == 3 * f + 1],
            q == 2 * f + 1,
            proved="Z3 proved q = 2f+1 whenever n = 3f+1.",
            explain=mismatch("2f+1"),
            objectives=smallest,
        ),
        _check(
            claim(
                "flat-2f+1",
                "contrast: a flat 2f+1 quorum for every n ≥ 3f+1",
                "for all n ≥ 3f+1, f ≥ 1: two quorums of 2f+1 share f+1 replicas — expected "
                "FALSE when n > 3f+1 (Z3 finds the smallest n, f)",
                Status.REFUTED,
            ),
            [f >= 1, n >= 3 * f + 1],
            2 * flat_rule(n, f) - n >= f + 1,
            proved="Z3 proved the flat rule safe: unexpected, it fails for n > 3f+1.",
            explain=overlap(flat_rule(n, f)),
            objectives=smallest,
        ),
    ]
