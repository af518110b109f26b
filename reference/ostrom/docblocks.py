"""Generated blocks inside hand-written files: one way to find and replace them.

A generated block sits between ``BEGIN generated: NAME`` and ``END generated: NAME``
markers, each inside a comment of the file's language (``<!-- {} -->`` in Markdown,
``// {}`` in JavaScript, ``\\* {}`` in a TLC configuration).  ``ostrom docs`` rewrites the
blocks from their sources (the transition table, the parameter table, the exit codes ...;
the registry of ``ostrom.codegen.registry``); its test fails when a committed block differs
from what its source gives.
"""

from __future__ import annotations

import re

__all__ = ["blocks", "replace_block"]


def replace_block(text: str, name: str, body: str, comment: str = "<!-- {} -->") -> str:
    """``text`` with the lines between the markers of block ``name`` replaced by ``body``;
    ``ValueError`` if the block is not there."""
    begin, end = (re.escape(comment.format(f"{w} generated: {name}")) for w in ("BEGIN", "END"))
    pattern = re.compile(rf"({begin}\n).*?({end})", re.S)
    if not pattern.search(text):
        raise ValueError(f"no generated block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def blocks(text: str, comment: str = "<!-- {} -->", kind: str = "generated") -> dict[str, str]:
    """Every block of ``text`` between ``BEGIN <kind>: NAME`` and ``END <kind>: NAME``
    markers: name -> body (the lines between them, as ``replace_block`` takes them), in the
    order they appear."""
    before, after = (re.escape(part) for part in comment.split("{}"))
    k = re.escape(kind)
    pattern = re.compile(
        rf"{before}BEGIN {k}: (?P<name>[^\n]+?){after}\n(?P<body>.*?)"
        rf"{before}END {k}: (?P=name){after}",
        re.S,
    )
    return {m.group("name"): m.group("body") for m in pattern.finditer(text)}
