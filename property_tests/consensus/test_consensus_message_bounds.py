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
    Checkpoint,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Request,
    Signed,
    ViewChange,
    decode,
    max_request_bytes,
)

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
