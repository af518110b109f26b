"""``ostrom log export``: a node's log as an ostrom-trace/1 ``community`` log.

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
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ostrom.protocol.community import Community
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.version import TRACE_FORMAT
from ostrom.service.gate import Setup, member_json
from ostrom.service.identity import canonical
from ostrom.service.node import public_command
from ostrom.service.store import Store, StoreError

__all__ = ["ExportError", "export"]


class ExportError(Exception):
    """The log cannot be exported (unreadable, or it does not replay)."""


def _trace_lines(store: Store) -> Iterator[dict[str, Any]]:
    """The header, then one step per logged command."""
    try:
        params = Params.from_mapping(store.params)
        setup = Setup.from_json(store.setup)
    except (ParamError, ValueError) as exc:
        raise ExportError(f"{store.path}: the header does not load: {exc}") from None
    members = [f.member for f in setup.founders]
    yield {
        "format": TRACE_FORMAT,
        "layer": "community",
        "params": params.to_dict(),
        "setup": {"members": [member_json(m) for m in members]},
    }
    community = Community(params, members)
    for e in store.entries():
        command = e.envelope.get("command")
        obs = community.apply(command)
        if json.loads(canonical(obs)) != e.observation:
            raise ExportError(
                f"log[{e.pos}]: replaying {command!r} gives {obs['result']!r}, the node "
                f"logged {e.result!r}: the log does not replay"
            )
        yield {
            "command": public_command(command, obs["result"]),  # CR-1
            "result": obs["result"],
            "state": community.public_state(),
            "events": obs["events"],
        }


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
