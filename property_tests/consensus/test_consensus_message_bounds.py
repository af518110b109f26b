"""No protocol message an honest replica builds exceeds the frame limit when its requests
stay within ``messages.max_request_bytes`` (issue 41, item 6).

The largest messages carry requests inside certificates inside VIEW-CHANGEs inside a
NEW-VIEW.  This builds the largest ones the bound allows — a VIEW-CHANGE with a full
window of prepared certificates, each with a request of exactly the bound, and a NEW-VIEW
of ``n`` such VIEW-CHANGEs and a full window of PRE-PREPAREs, every field at its longest —
and checks that it encodes within ``MAX_MESSAGE_BYTES`` and decodes back.  It also
shows why the bound is needed: the front's old batch limit (half the frame) made a
VIEW-CHANGE of two certificates unsendable.
"""

from __future__ import annotations

import pytest

from ostrom.cluster.config import MIN_REQUEST_BYTES
from ostrom.consensus.crypto import Signer, make_keys
from ostrom.consensus.messages import (
    MAX_INT,
    MAX_MESSAGE_BYTES,
    MESSAGE_TYPES,
    Checkpoint,
    Commit,
    FetchState,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    decode,
    max_request_bytes,
    message_bounds,
)
from ostrom.consensus.replica import Replica

CLIENT = "c" * 32  # the longest principal name


def _request(signers: dict[str, Signer], size: int) -> Signed:
    """A signed request of exactly ``size`` encoded bytes."""
    base = signers[CLIENT].sign(Request(CLIENT, MAX_INT, {"batch": [""]}))
    pad = size - len(base.encoded)
    assert pad >= 0
    return signers[CLIENT].sign(Request(CLIENT, MAX_INT, {"batch": ["x" * pad]}))


def _largest_new_view(n: int, window: int, request_bytes: int) -> Signed:
    f = (n - 1) // 3
    names = [f"r{i}" for i in range(n)]
    _, signers = make_keys(b"bounds", [*names, CLIENT])
    req = _request(signers, request_bytes)
    digest = "f" * 64
    pps = [
        signers["r0"].sign(PrePrepare(MAX_INT, MAX_INT - s, digest, req, n - 1))
        for s in range(window)
    ]
    prepares = tuple(
        signers[names[i]].sign(Prepare(MAX_INT, MAX_INT, digest, n - 1)) for i in range(2 * f)
    )
    proof = tuple(
        signers[names[i]].sign(Checkpoint(MAX_INT, digest, n - 1)) for i in range(2 * f + 1)
    )
    certs = tuple(PreparedCert(pp, prepares) for pp in pps)
    vcs = tuple(
        signers[names[i]].sign(ViewChange(MAX_INT, MAX_INT, proof, certs, n - 1)) for i in range(n)
    )
    return signers["r0"].sign(NewView(MAX_INT, vcs, tuple(pps), n - 1))


@pytest.mark.parametrize(
    ("n", "window"),
    [
        (4, 32),
        pytest.param(7, 32, marks=pytest.mark.slow),
        pytest.param(4, 8, marks=pytest.mark.slow),
    ],
)
def test_the_largest_new_view_fits_a_frame(n: int, window: int) -> None:
    bound = max_request_bytes(n, window)
    assert bound >= MIN_REQUEST_BYTES
    nv = _largest_new_view(n, window, bound)
    size = len(nv.encoded)
    assert size <= MAX_MESSAGE_BYTES, (size, MAX_MESSAGE_BYTES)
    bounds = message_bounds(n, window)
    assert size <= bounds[NewView.TAG]  # the one source's bound holds
    for vc in nv.message.view_changes if isinstance(nv.message, NewView) else ():
        assert len(vc.encoded) <= bounds[ViewChange.TAG]
    assert size > MAX_MESSAGE_BYTES // 2  # the bound is not needlessly small
    assert decode(nv.encoded) == nv


@pytest.mark.slow
def test_the_old_batch_limit_made_view_changes_unsendable() -> None:
    """Two certificates of requests of half a frame (the front's old limit) already
    make a VIEW-CHANGE larger than a frame: a view change needing it never completes."""
    _, signers = make_keys(b"bounds", ["r0", "r1", CLIENT])
    req = _request(signers, MAX_MESSAGE_BYTES // 2)
    certs = tuple(
        PreparedCert(signers["r0"].sign(PrePrepare(0, s, "f" * 64, req, 0)), ()) for s in (1, 2)
    )
    vc = signers["r1"].sign(ViewChange(1, 0, (), certs, 1))
    assert len(vc.encoded) > MAX_MESSAGE_BYTES


# --- every message type a replica sends, against the bounds' one source ---------------

#: (n, window, frame): the cluster's defaults, a larger group, and a small test frame
#: (the loopback catch-up test's: a window of 4 and 512 KiB).
CONFIGS = [(4, 32, MAX_MESSAGE_BYTES), (7, 32, MAX_MESSAGE_BYTES), (4, 4, 512 * 1024)]


@pytest.mark.parametrize(("n", "window", "frame"), CONFIGS)
def test_every_message_type_has_a_bound_within_the_frame(n: int, window: int, frame: int) -> None:
    """A new message type without a bound, or a bound above the frame, fails here."""
    bounds = message_bounds(n, window, frame)
    sent = set(MESSAGE_TYPES) - {PreparedCert.TAG}  # never sent on its own
    assert set(bounds) == sent
    for tag, bound in bounds.items():
        assert bound <= frame, (tag, bound, frame)
    assert bounds[Request.TAG] == max_request_bytes(n, window, frame) >= MIN_REQUEST_BYTES


def test_the_fixed_size_messages_fit_their_bound() -> None:
    n = 7
    names = [f"r{i}" for i in range(n)]
    _, signers = make_keys(b"bounds", names)
    bounds = message_bounds(n, 32)
    digest = "f" * 64
    for m in (
        Prepare(MAX_INT, MAX_INT, digest, MAX_INT),
        Commit(MAX_INT, MAX_INT, digest, MAX_INT),
        Checkpoint(MAX_INT, digest, MAX_INT),
        FetchState(MAX_INT, MAX_INT),
    ):
        assert len(signers["r6"].sign(m).encoded) <= bounds[m.TAG], m.TAG


def _serving_replica(frame: int, requests: int) -> tuple[Replica, dict[str, Signer]]:
    """r0 of a group whose stable checkpoint follows ``requests`` requests of the largest
    size, ready to serve a FETCH-STATE (what a STATE-TRANSFER is cut from)."""
    n, window = 4, 4
    names = [f"r{i}" for i in range(n)]
    ring, signers = make_keys(b"bounds", [*names, CLIENT])
    r0 = Replica(
        0, n, 1, ring, signers["r0"], checkpoint_k=2, watermark_window=window, max_message=frame
    )
    big = _request(signers, r0.max_request)
    r0.history = [big] * requests
    r0.last_exec = r0.stable_seq = requests
    r0.stable_app_digest = "a" * 64
    r0.stable_proof = tuple(
        signers[names[i]].sign(Checkpoint(requests, "f" * 64, i)) for i in range(r0.q)
    )
    return r0, signers


def test_a_state_transfer_is_cut_to_the_frame() -> None:
    frame = 512 * 1024
    r0, signers = _serving_replica(frame, 60)  # 60 requests of the bound: several frames
    assert sum(len(r.encoded) for r in r0.history if r is not None) > 2 * frame
    after, sizes = 0, []
    while after < r0.stable_seq:
        r0.retransmit()  # a new period: one pass through the log per peer
        out = r0.on_message(signers["r1"].sign(FetchState(after, 1)))
        (st,) = [s.payload for s in out.sends]
        assert isinstance(st, Signed) and isinstance(st.message, StateTransfer)
        assert st.message.after_seq == after and st.message.requests
        sizes.append(len(st.encoded))
        after += len(st.message.requests)
    assert max(sizes) <= frame
    assert min(sizes[:-1]) > frame - r0.max_request  # each chunk but the last is full
    # the cut's size is exact: the same bytes as the signed message's
    bound = message_bounds(4, 4, frame)[StateTransfer.TAG]
    assert bound == frame
