"""docs/deployment.md's table of limits, from where each limit is defined.

Every number in the table is read from its one source when ``ostrom docs`` runs: the
options of ``ostrom serve`` and ``ostrom cluster up`` (their click defaults and help), the
community parameters a node enforces (``protocol/params.py``, in the database's header),
and the fixed bounds of the service and the cluster's front (module constants).  Nothing
is copied by hand, so the table cannot drift from the code (``ostrom docs --check``).
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from ostrom.cli.cluster import up
from ostrom.cli.service import serve
from ostrom.cluster import front
from ostrom.cluster.wire import MAX_FRAME
from ostrom.consensus.messages import max_request_bytes
from ostrom.protocol.commands import MAX_EMBEDDING
from ostrom.protocol.params import DEFAULTS, table
from ostrom.service import budget, limits, node, openapi, search

__all__ = ["limits_table"]

#: The options of ``ostrom serve`` that bound what a client can make the node do.
SERVE_LIMITS = (
    "header_timeout",
    "body_timeout",
    "max_connections",
    "max_reads",
    "read_queue",
    "read_share",
    "refusal_burst",
    "refusal_rate",
    "snapshot_every",
    "snapshot_ratio",
)
#: The options of ``ostrom cluster up`` that shape the cluster's capacity.
CLUSTER_LIMITS = ("n", "batch_size", "clients", "timeout_ms", "synchronous")
#: The community parameters the node (not the protocol) enforces.
NODE_PARAMS = ("content_limit", "refused_row_bytes", "embedding_dim", "join_mode", "join_pow_bits")


def _kib(n: int) -> str:
    """``n`` bytes, with KiB or MiB where it is a whole number of them."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n:,} ({n // size} {unit})"
    return f"{n:,}"


def _options(cmd: click.Command, names: Iterable[str], prog: str) -> list[str]:
    rows = []
    by_name = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    for name in names:
        opt = by_name[name]
        flag = max(opt.opts, key=len)
        rows.append(f"| `{prog} {flag}` | {opt.default} | {(opt.help or '').strip()} |")
    return rows


def limits_table() -> str:
    """The table of every limit a deployment meets, with its default."""
    rows = ["| limit | default | what it bounds |", "|---|---|---|"]
    rows += _options(serve, SERVE_LIMITS, "ostrom serve")
    rows += _options(up, CLUSTER_LIMITS, "ostrom cluster up")
    params = {p.name: p for p in table()}
    for name in NODE_PARAMS:
        p = params[name]
        default = _kib(p.default) if p.unit == "bytes" else p.default
        rows.append(f"| parameter `{name}` | {default} | {p.doc} |")
    fixed = (
        (
            "node body limit",
            _kib(openapi.BODY_LIMIT),
            "largest request body at the default content_limit (64 KiB + 6 × content_limit "
            "+ the embedding's numbers): 413 too_large before parsing (service/openapi.py: "
            "body_limit)",
        ),
        ("POST /search body", _kib(openapi.SEARCH_BODY_LIMIT), "largest search request body"),
        ("GET /log limit", f"{openapi.MAX_LIMIT:,}", "most log entries one GET /log returns"),
        (
            "GET /events wait",
            f"{openapi.MAX_WAIT:g} s",
            "longest a long poll or an idle event stream waits (a proxy's read timeout must "
            "be longer)",
        ),
        ("search k", f"{search.MAX_K}", "most hits one search returns"),
        ("search query", _kib(search.MAX_QUERY_BYTES), "bytes of q (413 query_too_large)"),
        ("search terms", f"{search.MAX_TERMS}", "distinct words of q (413 query_too_large)"),
        ("embedding", f"{MAX_EMBEDDING:,}", "numbers in an embedding or query vector"),
        (
            "listen backlog",
            f"{limits.BACKLOG} to {limits.MAX_BACKLOG:,}",
            "connections the kernel queues: what the descriptor limit leaves above "
            f"--max-connections and {limits.OTHER_FDS}",
        ),
        (
            "descriptor reserve",
            f"backlog + {limits.OTHER_FDS}",
            "descriptors kept free below the limit: --max-connections is lowered to the "
            f"descriptor limit minus this (at least {limits.RESERVED_FDS})",
        ),
        ("refusal senders", f"{budget.MAX_SENDERS:,}", "addresses and keys whose budgets are kept"),
        (
            "write probe first wait",
            f"{node.PROBE_FIRST_S:g} s",
            "after a failed append (a full disk) the node refuses every write at once (503 "
            "db_unavailable, Retry-After) until a probe of the disk commits: the first "
            "probe is due this long after the failure (service/node.py: Degraded)",
        ),
        (
            "write probe longest wait",
            f"{node.PROBE_MAX_S:g} s",
            "each failed probe doubles the wait to the next, up to this",
        ),
        (
            "write probe size",
            f"{_kib(node.PROBE_MIN_BYTES)} to {_kib(node.PROBE_MAX_BYTES)}",
            "bytes a probe commits (and frees again): the failed group's rows, within these",
        ),
        ("cluster front body", _kib(front.MAX_BODY), "largest request body the front reads"),
        (
            "cluster request",
            _kib(max_request_bytes(4, DEFAULTS.watermark_window)),
            "largest command the front orders, for n = 4 and the default watermark window "
            "(consensus/messages.py: max_request_bytes; 413 too_large beyond)",
        ),
        ("cluster frame", _kib(MAX_FRAME), "largest message between replicas"),
        (
            "cluster front queue count",
            f"{front.MAX_QUEUED:,}",
            "commands waiting to be ordered (503 busy beyond)",
        ),
        (
            "cluster front queue",
            _kib(front.MAX_QUEUED_BYTES),
            "bytes of commands waiting to be ordered (503 busy beyond)",
        ),
    )
    rows += [f"| {name} | {default} | {doc} |" for name, default, doc in fixed]
    return "\n".join(rows) + "\n"
