"""``ostrom log export``: a node's log as an ostrom-trace/2 ``community`` log.

The trace's states are not read from the node: they are recomputed by replaying the
logged commands on a fresh ``Community`` built from the database's header, and each
replayed observation must equal the one the node logged (``ExportError`` otherwise).
So ``ostrom validate-trace`` on the export checks the running node's behaviour, not a
re-run of the reference: a node that answered anything else than the reference would
fail here, and a reference that diverged from the spec fails there.  The replay uses the
commands as logged; the trace shows them as every output path does (``node.public_command``,
CR-1): a refused reveal's vote, reason and salt are redacted, so an export can be shared
without exposing a vote that is still secret.  The trace still validates: a redacted
reveal carries no vote the spec could accept, and it was refused.

A step carries the public state as a *delta* (``TRACE_DELTA_FORMAT``, docs/conformance.md
"Trace logs"): the clock, and the artifacts and registry entries that differ from the
step before (the first step's delta is against the empty state: every founder).  A step
of ``TRACE_FORMAT`` carried the whole state, so a trace of n commands grew as n times the
state, which grows with n (issue 42: 776 MB for 2,000 commands).

Which artifacts can have changed is read from the step itself: the command's artifact
and every artifact its events name (a transition, a supersession, a recruitment or a
timeout inside a tick is an event); only those are rebuilt and compared.  That rule is
checked, not trusted: at steps 1, 2, 4, 8, ... and at the last step the artifacts the
trace holds so far are compared with the whole public state (``ExportError`` on any
difference), which costs at most twice the last state, so the export stays linear;
property_tests/service/test_service_export.py compares the deltas with the whole states
at every step of random histories.  The registry is rebuilt at every step (an agent's
reputation can move with no event naming it) and only what changed is written: its
cost per step is the registry's size, as the trace spec's registry check is
(spec/CommunityTrace.tla: RegOK).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ostrom.protocol.community import Community
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.version import TRACE_DELTA_FORMAT
from ostrom.service.gate import IDENTITY_OPS, Setup, elided_result, member_json
from ostrom.service.identity import canonical
from ostrom.service.node import public_command
from ostrom.service.store import Store, StoreError

__all__ = ["ExportError", "export"]


class ExportError(Exception):
    """The log cannot be exported (unreadable, or it does not replay)."""


def _named_artifacts(command: Any, events: Any) -> set[str]:
    """The artifacts a step can have changed: its command's and its events' (module
    docstring; ``_check_all`` catches one this misses)."""
    out: set[str] = set()
    if isinstance(command, dict) and isinstance(command.get("artifact"), str):
        out.add(command["artifact"])
    for ev in events:
        x = ev.get("artifact") if isinstance(ev, dict) else None
        if isinstance(x, str):
            out.add(x)
    return out


def _check_all(community: Community, artifacts: dict[str, Any], pos: int) -> None:
    """The artifacts the deltas wrote so far are the whole public state's."""
    whole = community.orchestrator.public_state()["artifacts"]
    if whole != artifacts:
        missed = sorted(
            x for x in whole.keys() | artifacts.keys() if whole.get(x) != artifacts.get(x)
        )
        raise ExportError(
            f"log[{pos}]: the trace's deltas missed a change of {missed[:5]}: the export "
            "cannot tell which artifacts a step changed (an error of ostrom log export)"
        )


def _trace_lines(store: Store) -> Iterator[dict[str, Any]]:
    """The header, then one step per logged command, its state as a delta."""
    try:
        params = Params.from_mapping(store.params)
        setup = Setup.from_json(store.setup)
    except (ParamError, ValueError) as exc:
        raise ExportError(f"{store.path}: the header does not load: {exc}") from None
    members = [f.member for f in setup.founders]
    yield {
        "format": TRACE_DELTA_FORMAT,
        "layer": "community",
        "params": params.to_dict(),
        "setup": {"members": [member_json(m) for m in members]},
    }
    community = Community(params, members)
    artifacts: dict[str, Any] = {}  # every artifact as the trace has written it so far
    agents: dict[str, Any] = {}
    k, check_at, pos = 0, 1, -1
    for e in store.entries():
        pos = e.pos
        command = e.envelope.get("command")
        if isinstance(command, dict) and command.get("op") in IDENTITY_OPS:
            continue  # a key's rotation or revocation: the gate's, not a Community step
        if "elided" in e.envelope and elided_result(e.envelope) != "invalid_input":
            # ROW-1: an oversized refusal with a violation, kept as its hash: its effect
            obs = community.refused(e.agent, elided_result(e.envelope))
        else:
            obs = community.apply(command)
        if json.loads(canonical(obs)) != e.observation:
            raise ExportError(
                f"log[{e.pos}]: replaying {command!r} gives {obs['result']!r}, the node "
                f"logged {e.result!r}: the log does not replay"
            )
        changed: dict[str, Any] = {}
        for x in sorted(_named_artifacts(command, obs["events"])):
            entry = community.orchestrator.public_artifact(x)
            if entry is not None and entry != artifacts.get(x):
                changed[x] = artifacts[x] = entry
        registry = community.public_agents()
        moved = {a: g for a, g in registry.items() if agents.get(a) != g}
        agents = registry
        k += 1
        if k == check_at:
            _check_all(community, artifacts, e.pos)
            check_at *= 2
        yield {
            "command": public_command(command, obs["result"]),  # CR-1
            "result": obs["result"],
            "delta": {"now": community.now, "artifacts": changed, "agents": moved},
            "events": obs["events"],
        }
    if k and k != check_at // 2:
        _check_all(community, artifacts, pos)


def export(db: str | Path, out: Path) -> int:
    """Write the trace of ``db`` to ``out``; the number of steps."""
    try:
        store = Store.open(db)
    except StoreError as exc:
        raise ExportError(str(exc)) from None
    steps = -1  # the header is not a step
    tmp = out.with_name(out.name + ".part")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for line in _trace_lines(store):
                fh.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
                steps += 1
        tmp.replace(out)
    except (StoreError, sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged file
        raise ExportError(f"{db}: {exc}") from None
    finally:
        store.close()
        tmp.unlink(missing_ok=True)
    return steps
