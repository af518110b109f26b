"""A readable ostrom agent: join a node, propose, and review what it is recruited for.

Setting up a node with one founder (a founder can review from the start; a community
without founders cannot, docs/service.md):

    ostrom keygen alice.key            # prints alice's public key, e.g. 3f0c...
    ostrom keygen ops.key              # an operator, who may sign `tick`
    cat > founders.toml <<EOF
    [[founder]]
    id = "alice"
    tier = 3
    reputation = 0.9
    evidence = 20
    public_key = "<alice's public key>"

    [[operator]]
    id = "ops"
    public_key = "<ops's public key>"
    EOF
    ostrom serve --founders founders.toml --tick-interval 1 &

Then, with this script (``ostrom keygen bob.key`` for a newcomer):

    python examples/agent.py --agent bob --key bob.key join
    python examples/agent.py --agent bob --key bob.key propose fact-1 paris-population \
        "Paris has 2,102,650 inhabitants (INSEE, 2023)." --title "Population of Paris"
    python examples/agent.py --agent alice --key alice.key review --rounds 20

With the default parameters a ballot needs three reveals (``quorum = 3``): give the
founders file at least three reviewing founders (tier >= 1) or the proposal expires for
want of a quorum, as the protocol says it should.

``review`` follows the node's event stream (a long poll of GET /events): when this agent
is among an artifact's reviewers it commits a vote in the commit phase (the client keeps
the vote, reason and salt; only the hash is sent) and reveals it in the reveal phase.
The vote here is a placeholder policy — a real agent would judge the artifact's content,
which it reads from the node (GET /artifacts/{id}/content; the digest binds it).
"""

from __future__ import annotations

import argparse
import sys

from ostrom.client import Client, ClientError
from ostrom.service.identity import load_key


def judge(artifact: dict[str, object], content: str | None) -> tuple[str, str]:
    """The agent's judgement of an artifact and its content: (vote, reason).  Replace
    with a real one."""
    if content is None:
        return "reject", f"digest {artifact.get('digest')}: no content to check"
    return "accept", f"{len(content)} characters, consistent with the cited evidence"


def content_of(client: Client, artifact: str) -> str | None:
    """The artifact's content, or None (proposed by digest only, or forgotten)."""
    try:
        return str(client.content(artifact).get("content", ""))
    except ClientError:
        return None


def review(client: Client, rounds: int, wait: float) -> None:
    """Vote on every ballot this agent is recruited for, for ``rounds`` polls."""
    after = 0
    for _ in range(rounds):
        entries = client.events(after=after, timeout=wait)
        if entries:
            after = entries[-1]["pos"]
        for x, a in client.artifacts()["artifacts"].items():
            if client.agent not in a["reviewers"]:
                continue
            if a["phase"] == "commit" and client.agent not in a["committed"]:
                vote, reason = judge(a, content_of(client, x))
                print(f"{x}: commit {vote}", client.commit_vote(x, vote, reason)["result"])
            elif (
                a["phase"] == "reveal"
                and x in client.ballots
                and not (a["revealed"] or {}).get(client.agent)
            ):
                print(f"{x}: reveal", client.reveal_vote(x)["result"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--key", required=True, help="private key file (ostrom keygen)")
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("join")
    p = sub.add_parser("propose")
    p.add_argument("artifact")
    p.add_argument("slot")
    p.add_argument("content", help="the artifact's text (its digest is computed from it)")
    p.add_argument("--title")
    r = sub.add_parser("review")
    r.add_argument("--rounds", type=int, default=10)
    r.add_argument("--wait", type=float, default=5.0, help="seconds per long poll")
    args = ap.parse_args(argv)
    with Client(args.url, args.agent, load_key(args.key)) as client:
        try:
            if args.what == "review":
                review(client, args.rounds, args.wait)
                return 0
            if args.what == "join":
                out = client.join()
            else:
                out = client.propose(
                    args.artifact, args.slot, content=args.content, title=args.title
                )
            print(out)  # a protocol refusal is an observation: {"result": "duplicate", ...}
            return 0 if out["result"] == "ok" else 1
        except ClientError as exc:  # the node's gate refused (or was unreachable)
            print(f"refused: {exc}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
