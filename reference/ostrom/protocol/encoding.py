"""The canonical encoding: the one byte string every hash and signature is taken over.

Sorted-key, compact, UTF-8 JSON (``ensure_ascii=False``: a non-ASCII character is its UTF-8
bytes, not a ``\\u`` escape).  Vote commitments (protocol/voting.py: ``commitment``) and the
PBFT messages' digests and signatures (consensus/messages.py) both use it; docs/rules.md
gives the byte-level rule other implementations follow.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["HEX64_PATTERN", "canonical", "is_hex64"]

#: 64 lowercase hex digits, as a JSON Schema / ECMA-262 pattern (with a length of 64).
HEX64_PATTERN: Final = "^[0-9a-f]{64}$"
_HEX64: Final = re.compile(r"[0-9a-f]{64}")


def canonical(obj: Any) -> bytes:
    """Sorted-key compact JSON in UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def is_hex64(value: object) -> bool:
    """64 lowercase hex digits (commitments, salts, digests; uppercase is refused, so that
    a value has exactly one spelling inside the canonical encoding)."""
    return isinstance(value, str) and len(value) == 64 and _HEX64.fullmatch(value) is not None
