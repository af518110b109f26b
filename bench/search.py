"""Search and content at scale (``make bench-search``, ``bench/run.py --only search``).

Issue 40, part 7, on this machine:

* **search** — p50/p99 of GET /search over loopback HTTP (``ostrom serve`` in its own
  process) and of ``Node.search`` in process, at 10k, 100k and 1M artifacts, for queries
  of common, middling and rare words and of two words (a common and a rare one).  Target:
  p99 <= ``TARGET_P99_MS`` at 1M; the growth from 10k to 1M is stated (the figure at 1M
  over the figure at 10k, for a 100-fold store).
* **proposals** — ``Node.submit`` of proposals with ``CONTENT_BYTES`` of content per
  second against digest-only proposals, the same harness as bench/service.py (in process,
  fsync off, one command at a time, signed in advance); target: within a factor 2.  Each
  kind's CPU ms and KiB written per proposal too, and the content on a store whose FTS5
  index is not fed (a diagnostic): where the content's extra cost goes.
* **size** — the database's bytes per artifact at each size (the file and its WAL).
* **purge** — the cost of forgetting one artifact (FORGET-PURGE: its payload deleted, the
  index merged, the WAL checkpointed) at 10k and 100k artifacts, and at 1M.

The stores.  Content is generated from a seeded vocabulary of ``VOCABULARY`` words with
Zipf's law (the word of rank r has frequency proportional to 1/r^``ZIPF_S``; shorter
words are the frequent ones), ``WORDS`` per artifact from a log-uniform range (a few
hundred to a few thousand bytes), a title, and tags on some.  32 founders (tier 2: their
proposals take the fast track and are active ``T_fast`` rounds later) propose in rounds of
``ROUND`` proposals, an operator ticks between rounds; a share ``UPDATE_SHARE`` of the
proposals are new versions of a slot already used (each supersedes the slot's value when
it activates: READ-1 must filter the old versions out), and the last ``PENDING_SHARE`` is
proposed after the final ticks (still under review: READ-1 filters those too).

The bulk path.  Posting 1M artifacts over HTTP at ~2,500 commands/s takes too long to
benchmark, so the store is built by the node's own write path without HTTP:
``Node.submit_many`` in groups of ``GROUP`` (what the HTTP layer's group commit calls,
with bigger groups), fsync off, every envelope signed and checked by the gate.  The file
is therefore exactly what the protocol produces (the same log, snapshots and tables);
``verify_bulk_path`` checks it on a sample anyway: a store of ``VERIFY_ARTIFACTS``
artifacts built by posting each command over HTTP answers every sample query exactly as
the bulk-built one does (same hits, same scores, same position).  Built stores are
cached under ``build/search/`` keyed by every parameter of the generator (a re-run only
measures); each store's build time and size are kept beside it and reported.

Usage: python bench/search.py [--sizes 10000,100000,1000000] [--skip-http]
       python bench/search.py --proposals   (the proposals part alone, a few minutes)
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import math
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from ostrom.consensus.crypto import derive_key  # noqa: E402
from ostrom.protocol.commands import payload_digest  # noqa: E402
from ostrom.protocol.community import Member  # noqa: E402
from ostrom.protocol.params import Params  # noqa: E402
from ostrom.service.gate import Founder, Setup  # noqa: E402
from ostrom.service.identity import canonical, public_hex, sign_envelope  # noqa: E402
from ostrom.service.node import Node  # noqa: E402
from ostrom.service.search import SearchQuery  # noqa: E402
from record import save  # noqa: E402

SEED: Final = b"bench-search"
FOUNDERS: Final = tuple(f"f{i}" for i in range(32))
OPERATOR: Final = "op"
PARAMS: Final = Params(propose_rate=1000)
SIZES: Final = (10_000, 100_000, 1_000_000)
#: The generator (every constant below is part of a cached store's key); 2: the stores of
#: schema 5, whose envelopes are signed for a community (a store of 1 no longer opens).
GENERATOR: Final = 2
VOCABULARY: Final = 50_000
ZIPF_S: Final = 1.0
WORDS: Final = (60, 700)
ROUND: Final = 16_000
UPDATE_SHARE: Final = 0.15
PENDING_SHARE: Final = 0.01
GROUP: Final = 1_000
#: The queries: each class's vocabulary ranks, and how many queries of each.
CLASSES: Final = {"common": (0, 20), "middling": (100, 1_000), "rare": (10_000, VOCABULARY)}
QUERIES: Final = 40
REPEATS: Final = 5
HTTP_REPEATS: Final = 3
#: Seconds of timed queries per class, beyond which a class is not repeated again.
BUDGET_S: Final = 60.0
K: Final = 10
TARGET_P99_MS: Final = 50.0
#: Proposals with content against digest-only ones.
CONTENT_BYTES: Final = 4096
PROPOSALS: Final = 4_000
TARGET_CONTENT_RATIO: Final = 2.0
VERIFY_ARTIFACTS: Final = 3_000
BUILD: Final = ROOT / "build" / "search"


#: The benchmark community's id (every envelope is signed for it: ENV-1).
COMMUNITY = "be" * 16


def setup() -> Setup:
    founders = tuple(
        Founder(Member(f, tier=2, reputation=0.9, evidence=20.0), public_hex(derive_key(SEED, f)))
        for f in FOUNDERS
    )
    return Setup(founders, {OPERATOR: public_hex(derive_key(SEED, OPERATOR))}, COMMUNITY)


# --- the text generator -------------------------------------------------------------------


def vocabulary(seed: int = 1) -> list[str]:
    """``VOCABULARY`` distinct pronounceable words, shortest first (rank 0 is the most
    frequent under Zipf's law, and frequent words are short, as in a natural language)."""
    rng = random.Random(seed)
    onsets = [
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "j",
        "k",
        "l",
        "m",
        "n",
        "p",
        "r",
        "s",
        "t",
        "v",
        "w",
        "z",
        "br",
        "ch",
        "cl",
        "dr",
        "fl",
        "gr",
        "pl",
        "pr",
        "sh",
        "st",
        "th",
        "tr",
    ]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "ou"]
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        n = 1 + min(3, int(rng.expovariate(1.2)))
        w = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(n))
        words.add(w + rng.choice(codas))
    return sorted(words, key=lambda w: (len(w), w))


class Texts:
    """Seeded payloads: Zipf-distributed words, a log-uniform length, a title, tags."""

    def __init__(self, seed: int) -> None:
        self.vocab = vocabulary()
        acc, self.cum = 0.0, []
        for r in range(len(self.vocab)):
            acc += 1.0 / (r + 1) ** ZIPF_S
            self.cum.append(acc)
        self.rng = random.Random(seed)

    def words(self, n: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=n)

    def payload(self) -> dict[str, Any]:
        lo, hi = WORDS
        n = int(math.exp(self.rng.uniform(math.log(lo), math.log(hi))))
        w = self.words(n)
        sentences = [" ".join(w[i : i + 12]).capitalize() + "." for i in range(0, n, 12)]
        out: dict[str, Any] = {
            "content": " ".join(sentences),
            "title": " ".join(self.words(self.rng.randint(3, 7))).capitalize(),
        }
        if self.rng.random() < 0.3:
            out["tags"] = sorted(set(self.rng.choices(self.vocab[200:5000], k=2)))
        return out


# --- the workload -------------------------------------------------------------------------


class Signer:
    """Each principal's key and next seq."""

    def __init__(self) -> None:
        self.keys = {p: derive_key(SEED, p) for p in (*FOUNDERS, OPERATOR)}
        self.seq = dict.fromkeys(self.keys, 0)

    def env(self, sender: str, command: dict[str, Any]) -> dict[str, Any]:
        self.seq[sender] += 1
        return sign_envelope(
            self.keys[sender], sender, self.seq[sender], command, community=COMMUNITY
        )


def workload(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """The signed envelopes that build a store of ``n`` artifacts (module docstring)."""
    texts = Texts(seed)
    rng = random.Random(seed + 1)
    signer = Signer()
    slots: list[str] = []
    pending = max(1, int(n * PENDING_SHARE))

    def propose(i: int) -> dict[str, Any]:
        if slots and rng.random() < UPDATE_SHARE:
            slot = rng.choice(slots)
        else:
            slot = f"s{len(slots)}"
            slots.append(slot)
        payload = texts.payload()
        agent = FOUNDERS[i % len(FOUNDERS)]
        cmd = {"op": "propose", "agent": agent, "artifact": f"a{i}", "slot": slot}
        cmd |= {"digest": payload_digest(payload), **payload}
        return signer.env(agent, cmd)

    tick = {"op": "tick"}
    for i in range(n - pending):
        yield propose(i)
        if (i + 1) % ROUND == 0:
            yield signer.env(OPERATOR, tick)
    for _ in range(PARAMS.T_fast + 2):  # every proposal so far reaches its decision
        yield signer.env(OPERATOR, tick)
    for i in range(n - pending, n):
        yield propose(i)


def store_key(n: int) -> str:
    """The cache key of a store: every parameter the generator and the workload read."""
    spec = {
        "generator": GENERATOR,
        "n": n,
        "vocabulary": VOCABULARY,
        "zipf_s": ZIPF_S,
        "words": WORDS,
        "round": ROUND,
        "update_share": UPDATE_SHARE,
        "pending_share": PENDING_SHARE,
        "founders": len(FOUNDERS),
        "params": PARAMS.to_dict(),
        "seed": SEED.decode(),
    }
    return hashlib.sha256(canonical(spec)).hexdigest()[:12]


def build(n: int, db: Path, *, group: int = GROUP, progress: bool = True) -> dict[str, Any]:
    """Build the store of ``n`` artifacts at ``db`` by the bulk path (module docstring);
    the build's seconds and size."""
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=False)
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    done = 0

    def flush() -> None:
        for r in node.submit_many(batch):
            if r.status != 200 or r.body["result"] != "ok":
                raise SystemExit(f"bulk build: a command was refused: {r.body}")
        batch.clear()

    try:
        for env in workload(n):
            batch.append(env)
            if env["command"]["op"] == "propose":
                done += 1
                if progress and done % 50_000 == 0:
                    dt = time.perf_counter() - t0
                    print(f"  {n:,}: {done:,} artifacts, {dt:.0f} s", file=sys.stderr, flush=True)
            if len(batch) >= group:
                flush()
        if batch:
            flush()
        commands = node.last_pos
    finally:
        node.close()
    seconds = time.perf_counter() - t0
    return {"artifacts": n, "commands": commands, "build_seconds": round(seconds, 1)}


def bytes_by_table(db: Path, n: int) -> dict[str, int]:
    """Bytes per artifact of each table of the file (its indexes and FTS5's shadow tables
    counted with it), largest first: where the database's size goes."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat d "
            "LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1"
        ).fetchall()
    finally:
        conn.close()
    merged: dict[str, int] = {}
    for name, size in rows:
        base = re.sub(r"_(data|idx|docsize|config|content)$", "", str(name))
        key = base if base == "content_fts" else str(name)
        merged[key] = merged.get(key, 0) + int(size)
    return {k: round(v / n) for k, v in sorted(merged.items(), key=lambda kv: -kv[1])}


def disk_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


def cached_store(n: int) -> tuple[Path, dict[str, Any]]:
    """The store of ``n`` artifacts under ``build/search/`` (built if missing), and what
    its build cost."""
    BUILD.mkdir(parents=True, exist_ok=True)
    db = BUILD / f"search-{n}-{store_key(n)}.db"
    info = db.with_suffix(".json")
    if db.exists() and info.exists():
        return db, json.loads(info.read_text(encoding="utf-8"))
    for stale in db.parent.glob(db.name + "*"):
        stale.unlink()
    print(f"building the store of {n:,} artifacts at {db}", file=sys.stderr, flush=True)
    out = build(n, db)
    out["disk_bytes"] = disk_bytes(db)
    out["bytes_per_artifact"] = round(out["disk_bytes"] / n)
    info.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return db, out


# --- the queries --------------------------------------------------------------------------


def queries(seed: int = 11) -> dict[str, list[str]]:
    """``QUERIES`` query texts per class: one word of the class's ranks (and ``two``: a
    common word and a rare one)."""
    vocab = vocabulary()
    rng = random.Random(seed)
    out = {
        name: [vocab[rng.randrange(lo, hi)] for _ in range(QUERIES)]
        for name, (lo, hi) in CLASSES.items()
    }
    out["two"] = [f"{c} {r}" for c, r in zip(out["common"], reversed(out["rare"]), strict=True)]
    return out


def percentiles(ms: Sequence[float]) -> dict[str, float]:
    xs = sorted(ms)
    q = statistics.quantiles(xs, n=100, method="inclusive")
    return {
        "p50_ms": round(statistics.median(xs), 2),
        "p99_ms": round(q[98], 2),
        "max_ms": round(xs[-1], 2),
        "samples": len(xs),
    }


def timed(
    run: Callable[[str], Any],
    qs: dict[str, list[str]],
    repeats: int,
    budget_s: float,
    loads: Callable[[], int] | None = None,
) -> dict[str, Any]:
    """p50/p99 per class and over all, of up to ``repeats`` passes over each class's
    queries (after one untimed pass: the page cache and SQLite's are warm, as on a serving
    node); a class stops repeating once its passes took ``budget_s`` (the samples are
    counted in the result).  ``loads``: the count of hot terms' lists read whole
    (``Postings.loads``): the samples are split by whether one was read (``by_postings``:
    ``read``, a term's first search or one after the cap dropped it; ``kept``)."""
    for texts in qs.values():
        t0 = time.perf_counter()
        for q in texts:
            run(q)
            if time.perf_counter() - t0 > budget_s / 2:
                break
    per: dict[str, list[float]] = {name: [] for name in qs}
    split: dict[str, list[float]] = {"read": [], "kept": []}
    for name, texts in qs.items():
        for _ in range(repeats):
            for q in texts:
                before = loads() if loads is not None else 0
                t = time.perf_counter()
                run(q)
                ms = 1000 * (time.perf_counter() - t)
                per[name].append(ms)
                if loads is not None:
                    split["read" if loads() > before else "kept"].append(ms)
            if sum(per[name]) >= 1000 * budget_s:
                break
    out: dict[str, Any] = {name: percentiles(ms) for name, ms in per.items()}
    out["all"] = percentiles([x for ms in per.values() for x in ms])
    if loads is not None:
        out["by_postings"] = {
            k: percentiles(ms) if len(ms) > 1 else {"samples": len(ms)} for k, ms in split.items()
        }
    return out


def _fts5_only(node: Node) -> Any:
    """Make ``node`` rank every query by FTS5's own query (no term is hot); the postings
    it kept, to put back."""
    kept = node.store.postings
    node.store.postings = kept.never_hot()
    return kept


def in_process(db: Path, qs: dict[str, list[str]]) -> dict[str, Any]:
    """Node.search's p50/p99 per class; the same queries by FTS5's own query alone, one
    pass back to back (what a search cost before the hot terms' postings), whose answers
    must be the fast path's; the first search of each common word (its postings read)."""
    t = time.perf_counter()
    node = Node.open(db, fsync=False)
    opened = time.perf_counter() - t

    def run(q: str) -> Any:
        return node.search(SearchQuery.parse(q, K))

    try:
        kept = _fts5_only(node)
        fts5 = timed(run, qs, 1, BUDGET_S)
        straight = {q: run(q)["hits"] for texts in qs.values() for q in texts}
        node.store.postings = kept
        cold: list[float] = []
        for q in dict.fromkeys(qs["common"]):
            t = time.perf_counter()
            run(q)
            cold.append(1000 * (time.perf_counter() - t))
        hits = {q: len(run(q)["hits"]) for q in qs["common"]}
        out = timed(run, qs, REPEATS, BUDGET_S, lambda: node.store.postings.loads)
        fast = {q: run(q)["hits"] for texts in qs.values() for q in texts}
        same = all(
            [(h["artifact"], h["score"]) for h in fast[q]]
            == [(h["artifact"], h["score"]) for h in straight[q]]
            for q in straight
        )
        if not same:
            raise SystemExit("the hot terms' fast path answers differently from FTS5's query")
        out["fts5_only"] = {c: fts5[c] for c in ("all", *CLASSES, "two")}
        out["fast_path_same_answers"] = {"queries": len(straight), "same_answers": same}
        out["first_search_of_a_common_word"] = percentiles(cold)
        out["postings_kept"] = node.store.postings.kept()
    finally:
        node.close()
    out["open_seconds"] = round(opened, 2)
    out["common_hits_min"] = min(hits.values())
    return out


class Server:
    """``ostrom serve`` on a database in its own process (fsync off, no tick timer)."""

    def __init__(self, db: Path) -> None:
        cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(db), "--port", "0"]
        cmd += ["--fsync", "off"]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "reference")}
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stderr is not None
        m = None
        for line in self.proc.stderr:  # opening a big store takes a while
            m = re.search(r"http://([^:/\s]+):(\d+)", line)
            if m is not None:
                break
        if m is None:
            self.stop()
            raise RuntimeError("ostrom serve did not start")
        self.address = (m.group(1), int(m.group(2)))
        self.conn = http.client.HTTPConnection(*self.address, timeout=600)

    def _request(self, method: str, path: str, body: bytes | None = None) -> Any:
        """One request; once more on a new connection if the server had closed the idle
        one (its keep-alive of 5 s runs out while a busy machine keeps this process
        waiting: a command sent again is answered as a retry, a search is a read)."""
        headers = {} if body is None else {"Content-Type": "application/json"}
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body, headers)
                r = self.conn.getresponse()
                data = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(*self.address, timeout=600)
                if attempt == 2:
                    raise
        if r.status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {r.status}: {data[:200]!r}")
        return json.loads(data)

    def get(self, path: str) -> Any:
        return self._request("GET", path)

    def post(self, path: str, body: bytes) -> Any:
        return self._request("POST", path, body)

    def search(self, q: str) -> Any:
        return self.get("/search?" + urllib.parse.urlencode({"q": q, "k": K}))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def over_http(db: Path, qs: dict[str, list[str]]) -> dict[str, Any]:
    server = Server(db)
    try:
        return timed(server.search, qs, HTTP_REPEATS, BUDGET_S)
    finally:
        server.stop()


# --- the bulk path checked against HTTP ----------------------------------------------------


def _answers(search: Callable[[str], Any], qs: dict[str, list[str]]) -> list[Any]:
    return [
        (q, search(q)["position"], [(h["artifact"], h["score"]) for h in search(q)["hits"]])
        for texts in qs.values()
        for q in texts
    ]


def verify_bulk_path(tmp: Path) -> dict[str, Any]:
    """The bulk path's store and one built by posting every command over HTTP, one at a
    time, from the same workload: every sample query answers the same on both."""
    bulk = tmp / "bulk.db"
    build(VERIFY_ARTIFACTS, bulk, progress=False)
    http_db = tmp / "http.db"
    Node.open(http_db, params=PARAMS, setup=setup(), fsync=False).close()  # the header
    server = Server(http_db)
    try:
        for env in workload(VERIFY_ARTIFACTS):
            r = server.post("/commands", canonical(env))
            assert r["result"] == "ok", r
        qs = queries()
        via_http = _answers(server.search, qs)
    finally:
        server.stop()
    node = Node.open(bulk, fsync=False)
    try:
        via_bulk = _answers(lambda q: node.search(SearchQuery.parse(q, K)), qs)
    finally:
        node.close()
    same = via_http == via_bulk
    if not same:
        raise SystemExit("the bulk-built store answers differently from the HTTP-built one")
    return {
        "artifacts": VERIFY_ARTIFACTS,
        "queries": len(via_bulk),
        "hits_compared": sum(len(h) for _, _, h in via_bulk),
        "same_answers": same,
    }


# --- proposals with content -----------------------------------------------------------------


#: The kinds of proposal timed: with the digest alone, with ``CONTENT_BYTES`` of content, and
#: (a diagnostic, not a configuration of the node) with the same content on a store whose
#: FTS5 index is not fed: what the content costs besides its search index.
KINDS: Final = ("digest_only", "content_4k", "content_4k_unindexed")


def _proposals(kind: str, texts: Texts, n: int) -> list[dict[str, Any]]:
    """``n`` signed proposals of ``kind`` (a tick after every 500), signed in advance."""
    signer = Signer()
    envs = []
    for i in range(n):
        agent = FOUNDERS[i % len(FOUNDERS)]
        cmd = {"op": "propose", "agent": agent, "artifact": f"a{i}", "slot": f"s{i}"}
        if kind == "digest_only":
            cmd["digest"] = hashlib.sha256(f"d{i}".encode()).hexdigest()
        else:
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < CONTENT_BYTES:
                words += texts.words(64)
            payload = {"content": " ".join(words).encode()[:CONTENT_BYTES].decode()}
            cmd |= {"digest": payload_digest(payload), **payload}
        envs.append(signer.env(agent, cmd))
        if i % 500 == 499:
            envs.append(signer.env(OPERATOR, {"op": "tick"}))
    return envs


def _written() -> int | None:
    """Bytes this process has written so far (Linux's /proc/self/io ``wchar``: every
    write(2), the WAL's and the checkpoints' included), None where there is no such file."""
    try:
        lines = Path("/proc/self/io").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    return next((int(v) for k, _, v in (ln.partition(": ") for ln in lines) if k == "wchar"), None)


def proposal_rates(tmp: Path, n: int = PROPOSALS, runs: int = 3) -> dict[str, Any]:
    """Proposals/s through ``Node.submit`` (in process, fsync off, one at a time, signed in
    advance: bench/service.py's harness) with ``CONTENT_BYTES`` of content and with the
    digest alone; ``runs`` alternating runs each, the median.  Beside the wall-clock rate,
    each kind's CPU milliseconds per proposal (this process's: what a loaded machine
    inflates least) and KiB written per proposal; and the content on a store whose FTS5
    index is not fed (its insert trigger dropped on that store alone), so that the
    content's cost splits into its search index and the rest."""
    texts = Texts(23)
    rates: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    written: dict[str, list[float]] = {k: [] for k in KINDS}
    load = round(os.getloadavg()[0], 2)
    for run in range(runs):
        for kind in KINDS:
            envs = _proposals(kind, texts, n)
            db = tmp / f"p{run}{kind}.db"
            node = Node.open(db, params=PARAMS, setup=setup(), fsync=False)
            if kind == "content_4k_unindexed":  # on its own connection: the node re-reads
                with closing(sqlite3.connect(db, isolation_level=None)) as conn:
                    conn.execute("DROP TRIGGER content_fts_insert")
            w, c, t = _written(), time.process_time(), time.perf_counter()
            for e in envs:
                assert node.submit(e).status == 200
            rates[kind].append(n / (time.perf_counter() - t))
            cpu[kind].append(1000 * (time.process_time() - c) / n)
            if w is not None and (w2 := _written()) is not None:
                written[kind].append((w2 - w) / n / 1024)
            node.close()
            with closing(sqlite3.connect(db)) as conn:  # each payload kept, indexed or not
                kept = conn.execute("SELECT count(*) FROM content").fetchone()[0]
                indexed = conn.execute("SELECT count(*) FROM content_fts_docsize").fetchone()[0]
            want = {"digest_only": (0, 0), "content_4k": (n, n), "content_4k_unindexed": (n, 0)}
            assert (kept, indexed) == want[kind], (kind, kept, indexed)
    rate = {k: statistics.median(v) for k, v in rates.items()}
    ms = {k: statistics.median(v) for k, v in cpu.items()}
    digest_only, content = rate["digest_only"], rate["content_4k"]
    return {
        "proposals": n,
        "content_bytes": CONTENT_BYTES,
        "runs": runs,
        "load_average_before": load,
        "digest_only_per_s": round(digest_only, 1),
        "content_per_s": round(content, 1),
        "content_unindexed_per_s": round(rate["content_4k_unindexed"], 1),
        "ratio": round(digest_only / content, 2),
        "target_ratio": TARGET_CONTENT_RATIO,
        "met": digest_only / content <= TARGET_CONTENT_RATIO,
        "cpu_ms_per_proposal": {k: round(v, 3) for k, v in ms.items()},
        "cpu_ratio": round(ms["content_4k"] / ms["digest_only"], 2),
        "kib_written_per_proposal": {
            k: round(statistics.median(v), 1) for k, v in written.items() if v
        },
    }


# --- the cost of a purge ----------------------------------------------------------------------


def purge_cost(db: Path, n: int, tmp: Path, forgets: int = 3) -> dict[str, Any]:
    """Seconds to forget one artifact of a copy of the store of ``n`` artifacts: every
    founder's forget vote, then the tick that forgets it — its payload deleted through the
    index, the index merged, the WAL checkpointed (FORGET-PURGE).  The tick alone is timed
    (the votes are ordinary commands), against a tick that forgets nothing."""
    copy = tmp / f"purge{n}.db"
    subprocess.run(["cp", "--sparse=always", str(db), str(copy)], check=True)
    node = Node.open(copy, fsync=True)
    signer = Signer()
    for p in signer.seq:
        signer.seq[p] = node.gate.last_seq(p)
    try:
        arts = node.gate.community.orchestrator.public_state()["artifacts"]
        victims = [x for x, a in sorted(arts.items()) if a["state"] == "active"][:forgets]
        plain, forgetting = [], []
        for x in victims:
            t = time.perf_counter()
            assert node.submit(signer.env(OPERATOR, {"op": "tick"})).status == 200
            plain.append(time.perf_counter() - t)
            for f in FOUNDERS:
                r = node.submit(signer.env(f, {"op": "forget_vote", "agent": f, "artifact": x}))
                assert r.status == 200, r.body
            t = time.perf_counter()
            r = node.submit(signer.env(OPERATOR, {"op": "tick"}))
            forgetting.append(time.perf_counter() - t)
            assert any(e.get("to") == "forgotten" for e in r.body["events"]), r.body
    finally:
        node.close()
        for leftover in copy.parent.glob(copy.name + "*"):
            leftover.unlink()
    return {
        "artifacts": n,
        "forget_tick_s": round(statistics.median(forgetting), 3),
        "plain_tick_s": round(statistics.median(plain), 3),
        "purge_s": round(statistics.median(forgetting) - statistics.median(plain), 3),
    }


def merge_instead(db: Path, n: int, tmp: Path) -> dict[str, Any]:
    """Would FTS5's incremental ``merge`` do instead of ``optimize``?  On a copy of the
    store: a payload with a term no other holds is added and merged into the index's
    big segment, then deleted as a purge deletes it (``secure_delete`` on, the trigger
    writes FTS5's delete marker); then ``merge`` (-16: merge the level with the most
    segments now), the WAL checkpointed and truncated, and the files searched for the
    term; then ``optimize`` and the same search.  Seconds of each."""
    copy = tmp / f"merge{n}.db"
    subprocess.run(["cp", "--sparse=always", str(db), str(copy)], check=True)
    conn = sqlite3.connect(str(copy), isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        # a payload with a term no other holds, merged into the index's one big segment
        # where most entries of a grown store sit (an old payload's place)
        term = "zqxwvkjunique"
        conn.execute(
            "INSERT INTO content (digest, content) VALUES ('bench-merge', ?)",
            (f"forgettable {term} text",),
        )
        conn.execute("INSERT INTO content_fts (content_fts) VALUES ('optimize')")
        conn.execute("DELETE FROM content WHERE digest = 'bench-merge'")
        out: dict[str, Any] = {"artifacts": n}
        for how in ("merge", "optimize"):
            t = time.perf_counter()
            if how == "merge":
                conn.execute("INSERT INTO content_fts (content_fts, rank) VALUES ('merge', -16)")
            else:
                conn.execute("INSERT INTO content_fts (content_fts) VALUES ('optimize')")
            out[f"{how}_s"] = round(time.perf_counter() - t, 3)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            out[f"term_left_after_{how}"] = _holds(copy, term.encode())
        assert not out["term_left_after_optimize"], "optimize left the term: the check is wrong"
    finally:
        conn.close()
        for leftover in copy.parent.glob(copy.name + "*"):
            leftover.unlink()
    return out


def _holds(db: Path, needle: bytes) -> bool:
    """Whether any file of the database holds ``needle`` (read in chunks)."""
    for f in db.parent.glob(db.name + "*"):
        with f.open("rb") as fh:
            tail = b""
            while chunk := fh.read(1 << 24):
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle) :]
    return False


# --- the whole benchmark ----------------------------------------------------------------------


def growth(rows: Sequence[dict[str, Any]], where: str) -> dict[str, Any]:
    """How the p50 and p99 grew from the smallest store to the largest, over all queries
    and per class."""
    lo, hi = rows[0][where], rows[-1][where]
    out: dict[str, Any] = {"from": rows[0]["artifacts"], "to": rows[-1]["artifacts"]}
    for c in ("all", *CLASSES, "two"):
        for p in ("p50_ms", "p99_ms"):
            key = (
                p.replace("_ms", "_factor") if c == "all" else f"{c}_{p.replace('_ms', '')}_factor"
            )
            out[key] = round(hi[c][p] / lo[c][p], 2)
    return out


def measure(
    sizes: Sequence[int] = SIZES, *, http: bool = True, prior: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything, for ``sizes``; the rows of other sizes, the bulk path's check and the
    proposal rates are taken from ``prior`` (an earlier result) when it has them and the
    smallest size is not measured again (``--sizes 1000000`` after a run at 10k and 100k)."""
    qs = queries()
    out: dict[str, Any] = {
        "k": K,
        "queries_per_class": QUERIES,
        "repeats": {"in_process": REPEATS, "http": HTTP_REPEATS},
        "classes": {**{c: list(r) for c, r in CLASSES.items()}, "two": "common + rare"},
        "target_p99_ms": TARGET_P99_MS,
        "budget_s_per_class": BUDGET_S,
    }
    prior = prior or {}
    again = min(SIZES) in sizes or "proposals" not in prior
    by_size = {r["artifacts"]: r for r in prior.get("sizes", ())}
    with tempfile.TemporaryDirectory(dir=BUILD.parent if BUILD.parent.exists() else None) as d:
        tmp = Path(d)
        out["bulk_path"] = verify_bulk_path(tmp) if again else prior["bulk_path"]
        out["proposals"] = proposal_rates(tmp) if again else prior["proposals"]
        for n in sizes:
            db, built = cached_store(n)
            print(f"measuring {n:,} artifacts", file=sys.stderr, flush=True)
            row: dict[str, Any] = {"artifacts": n, "store": built}
            row["load_average_before"] = round(os.getloadavg()[0], 2)
            row["bytes_per_artifact_by_table"] = bytes_by_table(db, n)
            row["in_process"] = in_process(db, qs)
            if http:
                row["http"] = over_http(db, qs)
            row["purge"] = purge_cost(db, n, tmp, forgets=3 if n < 1_000_000 else 1)
            if n < 1_000_000:  # reading the whole file back takes minutes at 1M
                row["merge_instead"] = merge_instead(db, n, tmp)
            by_size[n] = row
            out["sizes"] = [by_size[n] for n in sorted(by_size)]
            save("search", summarise(dict(out)))  # each size kept as soon as it is measured
    out["sizes"] = [by_size[n] for n in sorted(by_size)]
    return summarise(out)


def summarise(out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with its growth and target computed from its rows (``--summarise`` redoes
    only this on the committed results)."""
    rows = out["sizes"]
    where = "http" if all("http" in r for r in rows) else "in_process"
    out.pop("growth", None)
    if len(rows) > 1:
        out["growth"] = {w: growth(rows, w) for w in dict.fromkeys(("in_process", where))}
    big = next((r for r in rows if r["artifacts"] == max(SIZES)), None)
    out["target"] = {"artifacts": max(SIZES), "where": where, "measured": big is not None}
    if big is not None:
        out["target"]["p99_ms"] = big[where]["all"]["p99_ms"]
        out["target"]["met"] = big[where]["all"]["p99_ms"] <= TARGET_P99_MS
    return out


def figures_table(results: dict[str, Any]) -> str:
    """The markdown of docs/design.md §11 "Search at scale", from ``bench/results/search.json``
    (property_tests/service/test_service_search.py checks that the docs hold it)."""
    ms = "p50 / p99 ms"
    lines = [
        f"| artifacts | build | bytes per artifact | in process, {ms} | HTTP, {ms} "
        "| common words, HTTP p99 ms | rare words, HTTP p99 ms | purge of one forgotten |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results["sizes"]:
        inp, http = row["in_process"]["all"], row.get("http", {}).get("all")
        lines.append(
            f"| {row['artifacts']:,} | {row['store']['build_seconds']:,.0f} s "
            f"| {row['store']['bytes_per_artifact']:,} "
            f"| {inp['p50_ms']} / {inp['p99_ms']} "
            + (f"| {http['p50_ms']} / {http['p99_ms']} " if http else "| — ")
            + (f"| {row['http']['common']['p99_ms']} " if http else "| — ")
            + (f"| {row['http']['rare']['p99_ms']} " if http else "| — ")
            + f"| {row['purge']['purge_s']} s |"
        )
    for row in results["sizes"]:
        inp = row["in_process"]
        if "fts5_only" not in inp:
            continue
        f, c, cold = inp["fts5_only"], inp["common"], inp["first_search_of_a_common_word"]
        same = inp["fast_path_same_answers"]
        lines += [
            "",
            f"At {row['artifacts']:,} in process, back to back (load average "
            f"{row['load_average_before']}): common words p50 / p99 {c['p50_ms']} / "
            f"{c['p99_ms']} ms from the hot terms' postings, {f['common']['p50_ms']} / "
            f"{f['common']['p99_ms']} ms by FTS5's own query; all queries "
            f"{inp['all']['p50_ms']} / {inp['all']['p99_ms']} against "
            f"{f['all']['p50_ms']} / {f['all']['p99_ms']} ms; the same answers for all "
            f"{same['queries']} queries: {'yes' if same['same_answers'] else 'no'}. "
            f"A common word's first search (its postings read): p50 {cold['p50_ms']} ms, "
            f"max {cold['max_ms']} ms; postings kept: {inp['postings_kept']['postings']:,} "
            f"of {inp['postings_kept']['terms']} terms"
            + (
                f" ({inp['postings_kept']['bytes'] / 1e6:,.1f} MB)."
                if "bytes" in inp["postings_kept"]
                else "."
            ),
        ]
        split = inp.get("by_postings")
        if split is not None:

            def pcs(p: dict[str, Any]) -> str:
                return f" (p50 / p99 {p['p50_ms']} / {p['p99_ms']} ms)" if "p50_ms" in p else ""

            lines[-1] += (
                " Timed queries that read a hot term's list whole (dropped for the cap since): "
                f"{split['read']['samples']}{pcs(split['read'])}; from kept postings: "
                f"{split['kept']['samples']}{pcs(split['kept'])}."
            )
    big = results["sizes"][-1]
    if "bytes_per_artifact_by_table" in big:
        parts = [f"{t} {b:,}" for t, b in big["bytes_per_artifact_by_table"].items() if b >= 10]
        lines += ["", f"Bytes per artifact at {big['artifacts']:,}, by table: {', '.join(parts)}."]
    p = results["proposals"]
    lines += [
        "",
        f"Proposals with {p['content_bytes']:,} bytes of content: {p['content_per_s']:,} per "
        f"second, against {p['digest_only_per_s']:,} digest-only (a factor {p['ratio']}, "
        f"target at most {p['target_ratio']}: {'met' if p['met'] else 'not met'}).",
    ]
    if "cpu_ms_per_proposal" in p:  # the split of the content's cost (bench/search.py)
        ms, kib = p["cpu_ms_per_proposal"], p.get("kib_written_per_proposal", {})
        written = (
            f"; KiB written per proposal {kib['digest_only']}, {kib['content_4k']} and "
            f"{kib['content_4k_unindexed']}"
            if kib
            else ""
        )
        lines[-1] += (
            f" CPU ms per proposal: {ms['digest_only']} digest-only, {ms['content_4k']} with "
            f"content (a factor {p['cpu_ratio']}), {ms['content_4k_unindexed']} with content "
            f"but no FTS5 index fed ({p['content_unindexed_per_s']:,} per second){written}; "
            f"load average {p['load_average_before']}."
        )
    for where, g in results.get("growth", {}).items():
        lines.append(
            f"Growth {where.replace('_', ' ')} from {g['from']:,} to {g['to']:,} artifacts: "
            f"p50 ×{g['p50_factor']}, p99 ×{g['p99_factor']} (p99 of common words "
            f"×{g['common_p99_factor']}, middling ×{g['middling_p99_factor']}, rare "
            f"×{g['rare_p99_factor']})."
        )
    t = results["target"]
    lines.append(
        f"Target p99 ≤ {results['target_p99_ms']} ms at {t['artifacts']:,} artifacts: "
        + (
            f"{t['p99_ms']} ms, {'met' if t['met'] else 'not met'}."
            if t["measured"]
            else "not measured (that store was not built: see the text below)."
        )
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument(
        "--build-only", action="store_true", help="build the stores, measure nothing"
    )
    parser.add_argument(
        "--by-table", action="store_true", help="add each store's bytes per table to the results"
    )
    parser.add_argument(
        "--proposals",
        action="store_true",
        help="measure only the proposals with and without content, into the results",
    )
    parser.add_argument(
        "--summarise", action="store_true", help="recompute growth and target of the results"
    )
    parser.add_argument("--table", action="store_true", help="print the docs' table of the results")
    args = parser.parse_args()
    if args.by_table:  # the stores' files only: no timing
        path = ROOT / "bench" / "results" / "search.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key in ("benchmark", "python", "machine"):
            doc.pop(key)
        for row in doc["sizes"]:
            db = BUILD / f"search-{row['artifacts']}-{store_key(row['artifacts'])}.db"
            row["bytes_per_artifact_by_table"] = bytes_by_table(db, row["artifacts"])
        save("search", doc)
        return
    if args.proposals:  # the proposals part alone, into the committed results
        path = ROOT / "bench" / "results" / "search.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key in ("benchmark", "python", "machine"):
            doc.pop(key)
        BUILD.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=BUILD) as d:
            doc["proposals"] = proposal_rates(Path(d))
        save("search", doc)
        return
    if args.summarise:
        doc = json.loads((ROOT / "bench" / "results" / "search.json").read_text(encoding="utf-8"))
        for key in ("benchmark", "python", "machine"):
            doc.pop(key)
        save("search", summarise(doc))
        return
    if args.table:
        doc = json.loads((ROOT / "bench" / "results" / "search.json").read_text(encoding="utf-8"))
        print(figures_table(doc))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.build_only:
        for n in sizes:
            print(json.dumps(cached_store(n)[1]))
        return
    prior_path = ROOT / "bench" / "results" / "search.json"
    prior = json.loads(prior_path.read_text(encoding="utf-8")) if prior_path.exists() else None
    save("search", measure(sizes, http=not args.skip_http, prior=prior))


if __name__ == "__main__":
    main()
