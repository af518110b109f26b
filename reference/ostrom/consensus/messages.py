"""PBFT messages (Castro & Liskov, TOCS 2002 §4), their canonical encoding and digests.

Every message is a frozen dataclass; what travels is a ``Signed`` envelope around it
(``crypto.py`` signs the canonical bytes).  The encoding is sorted-key compact JSON of a
tagged tree, so that digests and signatures are the same in every implementation of the
protocol (the conformance suite relies on it) and ``decode`` can refuse anything that is
not exactly a well-typed message: a Byzantine replica may put arbitrary bytes on the wire.

Replicas are numbered ``0..n-1`` and sign as ``"r<i>"``; clients sign as their own name.
A *null request* (``request=None``, digest ``NULL_DIGEST``) fills a sequence number in a
new view for which no prepared certificate survives; executing it changes nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cached_property
from typing import Any, ClassVar, Final, Union

# The canonical encoding every signer and verifier hashes (one definition, shared with the
# vote commitments): re-exported here for the consensus modules.
from ostrom.protocol.encoding import canonical as canonical
from ostrom.protocol.encoding import is_hex64

__all__ = [
    "MAX_INT",
    "MAX_MESSAGE_BYTES",
    "MESSAGE_TYPES",
    "NULL_DIGEST",
    "AnyMessage",
    "Checkpoint",
    "Commit",
    "FetchState",
    "Malformed",
    "Message",
    "NewView",
    "PrePrepare",
    "Prepare",
    "PreparedCert",
    "Reply",
    "Request",
    "Signed",
    "StateTransfer",
    "ViewChange",
    "canonical",
    "check_tree",
    "decode",
    "encode",
    "max_request_bytes",
    "message_bounds",
    "message_from_tree",
    "replica_name",
    "request_digest",
    "sha256_hex",
    "signed_from_tree",
]

NULL_DIGEST: Final = hashlib.sha256(b"ostrom-pbft-null-request").hexdigest()


class Malformed(ValueError):
    """The bytes or tree are not a well-typed message (counted as ``malformed``)."""


#: The largest message a replica reads (bytes).  The largest honest messages are a
#: NEW-VIEW (up to n VIEW-CHANGEs with up to a window of prepared certificates each,
#: every certificate carrying its request) and a STATE-TRANSFER (the requests since the
#: receiver's last execution): a NEW-VIEW stays below it if every request does below
#: ``max_request_bytes``; a STATE-TRANSFER is cut into chunks of at most a frame
#: (``Replica.max_message``, docs/consensus.md).
MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
#: At least the encoded size of a signed PREPARE, COMMIT or CHECKPOINT (345 bytes at
#: most: 64-bit integers, a 32-character name).
_SMALL_SIGNED: Final = 512
#: At least what a signed PRE-PREPARE adds around its request, a certificate around its
#: parts, a signed VIEW-CHANGE or NEW-VIEW around its lists (359 bytes at most).
_WRAPPER: Final = 512
#: The deepest JSON tree accepted.  An honest NEW-VIEW nests about 13 levels above its
#: requests' operations (envelope, NEW-VIEW, VIEW-CHANGE, certificate, PRE-PREPARE,
#: request); the rest is the operation's own depth.
_MAX_DEPTH: Final = 48
#: Integers must fit a signed 64-bit word, so that every implementation reads the same.
MAX_INT: Final = 2**63 - 1


def message_bounds(n: int, watermark_window: int, frame: int = MAX_MESSAGE_BYTES) -> dict[str, int]:
    """The largest encoded signed message of each type an honest replica sends, for a
    cluster of ``n`` replicas, its window and its frame (one source: the replica, the
    front and test_consensus_message_bounds.py read it).  Each is within ``frame``:

    * a REQUEST is refused above ``max_request_bytes`` (by the front and by every
      replica: ``too_large``), so a PRE-PREPARE, a VIEW-CHANGE (a certificate per
      sequence number of its window) and a NEW-VIEW (``n`` VIEW-CHANGEs) are bounded by
      the formulas of ``max_request_bytes``;
    * a STATE-TRANSFER is cut to ``frame`` (``Checkpoints._chunk``);
    * a REPLY whose result would not fit ``frame`` carries the result's digest instead
      (``NormalCase._reply``);
    * PREPARE, COMMIT, CHECKPOINT and FETCH-STATE have fields of bounded size.

    A prepared certificate is never sent on its own (``signer_matches`` refuses it)."""
    w, e, s = watermark_window, _WRAPPER, _SMALL_SIGNED
    r = max_request_bytes(n, w, frame)
    view_change = e + n * s + w * (r + 2 * e + n * s)
    return {
        Request.TAG: r,
        PrePrepare.TAG: e + r,
        Prepare.TAG: s,
        Commit.TAG: s,
        Checkpoint.TAG: s,
        FetchState.TAG: s,
        ViewChange.TAG: view_change,
        NewView.TAG: e + n * view_change + w * (r + e),
        StateTransfer.TAG: frame,
        Reply.TAG: frame,
    }


def max_request_bytes(n: int, watermark_window: int, frame: int = MAX_MESSAGE_BYTES) -> int:
    """The largest signed REQUEST (its encoded bytes) such that the largest NEW-VIEW an
    honest primary can send stays within ``frame`` bytes (``MAX_MESSAGE_BYTES``, or a
    cluster's smaller ``max_frame_bytes``; 0 or less: none does).

    A VIEW-CHANGE carries a certificate per prepared sequence number above its stable
    checkpoint — at most ``watermark_window`` of them, each a signed PRE-PREPARE with its
    request and 2f signed PREPAREs — and its checkpoint proof; a NEW-VIEW carries the
    VIEW-CHANGEs it was built from (up to ``n``) and a PRE-PREPARE per sequence number
    they span (at most ``watermark_window``).  With ``R`` the request, ``W`` the window,
    ``S`` and ``E`` the bounds above: VIEW-CHANGE <= E + n·S + W·(R + 2E + n·S), NEW-VIEW
    <= E + n·VIEW-CHANGE + W·(R + E).  A message beyond the limit is unsendable (the
    frame refuses it) and unreadable (``decode`` refuses it): a view change that needs
    it never completes (issue 41, item 6)."""
    w, e, s = watermark_window, _WRAPPER, _SMALL_SIGNED
    fixed = e + n * (e + n * s + w * (2 * e + n * s)) + w * e
    return (frame - fixed) // (w * (n + 1))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replica_name(i: int) -> str:
    """The principal name under which replica ``i`` signs."""
    return f"r{i}"


def _is_nat(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class Message:
    """Base of every protocol message: canonical tree, bytes and digest (cached).

    The cache is safe because messages are frozen; ``cached_property`` writes the
    instance ``__dict__`` directly, which a frozen dataclass allows.
    """

    TAG: ClassVar[str] = ""

    def tree(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TAG}
        for fld in dataclasses.fields(self):  # type: ignore[arg-type]
            out[fld.name] = _tree(getattr(self, fld.name))
        return out

    @cached_property
    def encoded(self) -> bytes:
        return canonical(self.tree())

    @cached_property
    def msg_digest(self) -> str:
        return sha256_hex(self.encoded)


def _tree(v: Any) -> Any:
    if isinstance(v, Message | Signed):
        return v.tree()
    if isinstance(v, tuple):
        return [_tree(x) for x in v]
    return v


@dataclasses.dataclass(frozen=True, eq=True)
class Signed:
    """A message with its sender's Ed25519 signature over ``message.encoded``."""

    message: AnyMessage
    sender: str
    signature: bytes

    def tree(self) -> dict[str, Any]:
        return {
            "type": "Signed",
            "message": self.message.tree(),
            "sender": self.sender,
            "signature": self.signature.hex(),
        }

    @cached_property
    def encoded(self) -> bytes:
        return canonical(self.tree())


@dataclasses.dataclass(frozen=True)
class Request(Message):
    """⟨REQUEST, o, t, c⟩: operation ``o`` (an orchestrator command) from client ``c``.

    ``timestamp`` orders one client's requests; a replica executes a request only if its
    timestamp exceeds the last one it executed for that client (exactly-once semantics).
    """

    TAG: ClassVar[str] = "Request"
    client: str
    timestamp: int
    operation: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class PrePrepare(Message):
    """⟨PRE-PREPARE, v, n, d⟩ with the client's signed request ``m`` (None: null request)."""

    TAG: ClassVar[str] = "PrePrepare"
    view: int
    seq: int
    digest: str
    request: Signed | None
    replica: int


@dataclasses.dataclass(frozen=True)
class Prepare(Message):
    """⟨PREPARE, v, n, d, i⟩ from backup ``i``."""

    TAG: ClassVar[str] = "Prepare"
    view: int
    seq: int
    digest: str
    replica: int


@dataclasses.dataclass(frozen=True)
class Commit(Message):
    """⟨COMMIT, v, n, d, i⟩ from a replica that has prepared (v, n, d)."""

    TAG: ClassVar[str] = "Commit"
    view: int
    seq: int
    digest: str
    replica: int


@dataclasses.dataclass(frozen=True)
class Reply(Message):
    """⟨REPLY, v, t, c, i, r⟩: result ``r`` of the client's request with timestamp ``t``."""

    TAG: ClassVar[str] = "Reply"
    view: int
    timestamp: int
    client: str
    replica: int
    result: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Checkpoint(Message):
    """⟨CHECKPOINT, n, d, i⟩: replica ``i``'s state digest after executing ``seq``."""

    TAG: ClassVar[str] = "Checkpoint"
    seq: int
    state_digest: str
    replica: int


@dataclasses.dataclass(frozen=True)
class PreparedCert(Message):
    """A prepared certificate: a signed pre-prepare and matching signed prepares."""

    TAG: ClassVar[str] = "PreparedCert"
    pre_prepare: Signed
    prepares: tuple[Signed, ...]


@dataclasses.dataclass(frozen=True)
class ViewChange(Message):
    """⟨VIEW-CHANGE, v+1, n, C, P, i⟩: ``C`` proves the stable checkpoint ``n``,
    ``P`` holds one prepared certificate per sequence number above it."""

    TAG: ClassVar[str] = "ViewChange"
    new_view: int
    last_stable_seq: int
    checkpoint_proof: tuple[Signed, ...]
    prepared: tuple[PreparedCert, ...]
    replica: int


@dataclasses.dataclass(frozen=True)
class NewView(Message):
    """⟨NEW-VIEW, v+1, V, O⟩: the view-change messages and the pre-prepares they imply."""

    TAG: ClassVar[str] = "NewView"
    view: int
    view_changes: tuple[Signed, ...]
    pre_prepares: tuple[Signed, ...]
    replica: int


@dataclasses.dataclass(frozen=True)
class FetchState(Message):
    """A lagging replica asks for the requests it misses up to a stable checkpoint."""

    TAG: ClassVar[str] = "FetchState"
    after_seq: int
    replica: int


@dataclasses.dataclass(frozen=True)
class StateTransfer(Message):
    """The executed requests after ``after_seq`` up to a stable checkpoint, with its proof.

    The receiver recomputes the hash chain of the requests and checks it against the
    certified checkpoint digest *before* executing anything, so a Byzantine sender can
    only waste its time (PBFT §6.2 transfers state pages; replaying the certified log is
    the same guarantee for a deterministic state machine).
    """

    TAG: ClassVar[str] = "StateTransfer"
    after_seq: int
    requests: tuple[Signed | None, ...]
    app_digest: str
    checkpoint_proof: tuple[Signed, ...]
    replica: int


#: Any PBFT message a replica signs, sends or receives.
AnyMessage = Union[  # noqa: UP007 - a runtime alias used before the classes exist
    Request,
    PrePrepare,
    Prepare,
    Commit,
    Reply,
    Checkpoint,
    PreparedCert,
    ViewChange,
    NewView,
    FetchState,
    StateTransfer,
]

MESSAGE_TYPES: Final[dict[str, type[Message]]] = {
    c.TAG: c
    for c in (
        Request,
        PrePrepare,
        Prepare,
        Commit,
        Reply,
        Checkpoint,
        PreparedCert,
        ViewChange,
        NewView,
        FetchState,
        StateTransfer,
    )
}

# --- decoding: a strict schema per field kind --------------------------------------------

_KIND: Final[dict[str, dict[str, str]]] = {
    "Request": {"client": "str", "timestamp": "nat", "operation": "object"},
    "PrePrepare": {
        "view": "nat",
        "seq": "nat",
        "digest": "hex",
        "request": "signed?",
        "replica": "nat",
    },
    "Prepare": {"view": "nat", "seq": "nat", "digest": "hex", "replica": "nat"},
    "Commit": {"view": "nat", "seq": "nat", "digest": "hex", "replica": "nat"},
    "Reply": {
        "view": "nat",
        "timestamp": "nat",
        "client": "str",
        "replica": "nat",
        "result": "object",
    },
    "Checkpoint": {"seq": "nat", "state_digest": "hex", "replica": "nat"},
    "PreparedCert": {"pre_prepare": "signed", "prepares": "signed*"},
    "ViewChange": {
        "new_view": "nat",
        "last_stable_seq": "nat",
        "checkpoint_proof": "signed*",
        "prepared": "cert*",
        "replica": "nat",
    },
    "NewView": {
        "view": "nat",
        "view_changes": "signed*",
        "pre_prepares": "signed*",
        "replica": "nat",
    },
    "FetchState": {"after_seq": "nat", "replica": "nat"},
    "StateTransfer": {
        "after_seq": "nat",
        "requests": "signed?*",
        "app_digest": "hex",
        "checkpoint_proof": "signed*",
        "replica": "nat",
    },
}


def _field(kind: str, v: Any) -> Any:
    if kind == "nat":
        if not _is_nat(v):
            raise Malformed(f"not a natural number: {v!r}")
        return v
    if kind == "str":
        if not isinstance(v, str):
            raise Malformed(f"not a string: {v!r}")
        return v
    if kind == "hex":
        if not is_hex64(v):
            raise Malformed(f"not a sha256 hex digest: {v!r}")
        return v
    if kind == "object":
        if not isinstance(v, dict):
            raise Malformed(f"not an object: {v!r}")
        return v
    if kind == "signed":
        return _signed(v)
    if kind == "signed?":
        return None if v is None else _signed(v)
    if kind.endswith("*"):
        if not isinstance(v, list):
            raise Malformed(f"not a list: {v!r}")
        inner = kind[:-1]
        if inner == "cert":
            return tuple(_cert(x) for x in v)
        return tuple(_field(inner, x) for x in v)
    raise AssertionError(kind)  # pragma: no cover


def _cert(v: Any) -> PreparedCert:
    m = _message(v)
    if not isinstance(m, PreparedCert):
        raise Malformed("not a prepared certificate")
    return m


def check_tree(tree: Any) -> None:
    """``Malformed`` unless ``tree`` is JSON every implementation reads alike.

    Iterative (no recursion, whatever the depth): at most ``_MAX_DEPTH`` levels; objects
    with string keys, lists, strings without lone surrogates (they have no UTF-8
    encoding, so no canonical form and no signature), integers within 64 bits, finite
    floats, booleans and null.
    """
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise Malformed(f"nested deeper than {_MAX_DEPTH} levels")
        # the exact types json.loads makes first (a decoded frame holds nothing else): the
        # same checks as below, without the chain of isinstance and encode calls
        kind = type(node)
        if kind is str:
            if not node.isascii():  # ASCII always encodes
                _check_text(node)
            continue
        if kind is dict:
            for k, v in node.items():
                if type(k) is not str:
                    if not isinstance(k, str):
                        raise Malformed("an object key that is not a string")
                    _check_text(k)
                elif not k.isascii():
                    _check_text(k)
                stack.append((v, depth + 1))
            continue
        if kind is list:
            stack.extend((v, depth + 1) for v in node)
            continue
        if kind is int:
            if not -MAX_INT - 1 <= node <= MAX_INT:
                raise Malformed("an integer outside 64 bits")
            continue
        if node is None or kind is bool:
            continue
        # anything else (subclasses, floats, foreign objects): the general rule
        if isinstance(node, str):
            _check_text(node)
        elif isinstance(node, bool) or node is None:
            pass
        elif isinstance(node, int):
            if not -MAX_INT - 1 <= node <= MAX_INT:
                raise Malformed("an integer outside 64 bits")
        elif isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                raise Malformed("a float that is not finite")
        elif isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(k, str):
                    raise Malformed("an object key that is not a string")
                _check_text(k)
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        else:
            raise Malformed(f"not a JSON value: {type(node).__name__}")


def _check_text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Malformed("a string with a lone surrogate") from exc


def message_from_tree(tree: Any) -> AnyMessage:
    """The message a decoded JSON tree denotes; ``Malformed`` unless exactly well-typed."""
    check_tree(tree)
    return _message(tree)


def _message(tree: Any) -> AnyMessage:
    if not isinstance(tree, dict) or not isinstance(tree.get("type"), str):
        raise Malformed("not a tagged object")
    tag = tree["type"]
    schema = _KIND.get(tag)
    if schema is None:
        raise Malformed(f"unknown message type {tag!r}")
    if set(tree) != {"type", *schema}:
        raise Malformed(f"{tag}: wrong fields {sorted(tree)}")
    cls = MESSAGE_TYPES[tag]
    msg = cls(**{k: _field(kind, tree[k]) for k, kind in schema.items()})
    return msg  # type: ignore[return-value]


def signed_from_tree(tree: Any) -> Signed:
    """The signed envelope a decoded JSON tree denotes; ``Malformed`` unless exactly
    well-typed (``check_tree`` first: no input can exhaust the stack or fail to encode)."""
    check_tree(tree)
    return _signed(tree)


def _signed(tree: Any) -> Signed:
    if not isinstance(tree, dict) or tree.get("type") != "Signed":
        raise Malformed("not a signed envelope")
    if set(tree) != {"type", "message", "sender", "signature"}:
        raise Malformed("signed envelope: wrong fields")
    sender, sig = tree["sender"], tree["signature"]
    if not isinstance(sender, str) or not isinstance(sig, str):
        raise Malformed("signed envelope: bad sender or signature")
    try:
        raw = bytes.fromhex(sig)
    except ValueError as exc:
        raise Malformed("signature is not hex") from exc
    return Signed(_message(tree["message"]), sender, raw)


def encode(signed: Signed) -> bytes:
    """The wire bytes of a signed message."""
    return signed.encoded


def decode(data: bytes) -> Signed:
    """Parse wire bytes; ``Malformed`` for anything that is not a well-typed envelope.

    Every input either becomes a ``Signed`` or raises ``Malformed``: oversized input,
    bytes that are not UTF-8, JSON that is not (``NaN``, an integer literal longer than
    Python will convert, nesting deeper than the parser's stack) are all ``Malformed``.
    """
    if len(data) > MAX_MESSAGE_BYTES:
        raise Malformed(f"more than {MAX_MESSAGE_BYTES} bytes")
    try:
        tree = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: JSONDecodeError, and the limit on integer literal length
        raise Malformed("not JSON") from exc
    return signed_from_tree(tree)


def _no_constant(name: str) -> Any:
    raise Malformed(f"{name} is not JSON")


def request_digest(request: Signed | None) -> str:
    """``D(m)``: the digest of a signed request's message, ``NULL_DIGEST`` for null."""
    return NULL_DIGEST if request is None else request.message.msg_digest
