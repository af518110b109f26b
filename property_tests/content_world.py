"""The content walk of the node tests, through HTTP, against any face: a node's app or a
cluster's front (test_service_content.py, test_service_search.py, test_cluster_face.py).

A founder's proposal with its payload to active (fast track), an update through formal
review, the founders' forget: each a list of signed envelopes (``Signer``) posted with
``post_all``, which asserts every one is answered 200.
"""

from __future__ import annotations

from typing import Any

import httpx

from ostrom.protocol.commands import payload_digest
from ostrom.protocol.params import Params
from service_world import FOUNDERS, OPERATOR, Signer, commitment, reveal

#: Forgetting is reachable with the five founders (the default floor is 12 active agents).
FORGET_PARAMS = Params(min_active_agents=3, content_limit=1024, embedding_dim=4)


def propose(agent: str, x: str, slot: str, **payload: Any) -> dict[str, Any]:
    return {
        "op": "propose",
        "agent": agent,
        "artifact": x,
        "slot": slot,
        "digest": payload_digest(payload),
        **payload,
    }


def post_all(c: httpx.AsyncClient, envs: list[dict[str, Any]]) -> Any:
    async def go() -> list[dict[str, Any]]:
        out = []
        for e in envs:
            r = await c.post("/commands", json=e)
            assert r.status_code == 200, r.text
            out.append(r.json())
        return out

    return go()


def to_active(s: Signer, x: str, slot: str, **payload: Any) -> list[dict[str, Any]]:
    """A founder's proposal: fast track, active after T_fast (3 ticks) without objection."""
    return [s.env("f1", propose("f1", x, slot, **payload))] + [
        s.env(OPERATOR, {"op": "tick"}) for _ in range(4)
    ]


async def update(c: httpx.AsyncClient, s: Signer, x: str, slot: str, **payload: Any) -> None:
    """f2's proposal for an occupied slot: formal review, every reviewer accepts, active
    (superseding the slot's active artifact)."""
    await post_all(c, [s.env("f2", propose("f2", x, slot, **payload))])
    await post_all(c, [s.env(OPERATOR, {"op": "tick"}) for _ in range(5)])  # to commit
    art = (await c.get(f"/artifacts/{x}")).json()
    assert art["phase"] == "commit", art
    votes = {r: commitment(r, x, art["round"], "accept") for r in art["reviewers"]}
    await post_all(
        c,
        [
            s.env(r, {"op": "commit_vote", "agent": r, "artifact": x, "commitment": v})
            for r, v in votes.items()
        ],
    )
    await post_all(c, [s.env(OPERATOR, {"op": "tick"}) for _ in range(2)])  # to reveal
    await post_all(c, [s.env(r, {**reveal(r, x), "vote": "accept"}) for r in votes])
    await post_all(c, [s.env(OPERATOR, {"op": "tick"}) for _ in range(3)])


def forget(s: Signer, x: str) -> list[dict[str, Any]]:
    """Every founder votes to forget ``x``; the next tick decides (FG-1: S >= Q)."""
    return [s.env(f, {"op": "forget_vote", "agent": f, "artifact": x}) for f in FOUNDERS] + [
        s.env(OPERATOR, {"op": "tick"})
    ]
