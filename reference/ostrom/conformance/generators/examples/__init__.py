"""Hand-written histories (source ``reference:examples``): small, each named for what it shows.

Every script drives the reference adapter through a ``Recorder`` and asserts the result
it is about (``expect=``), so a change of the reference that would make a vector show
something else stops generation instead of silently rewriting the vector.  Together the
scripts use every command of every layer and every error code the layer can answer
(property_tests/conformance/test_conformance_vectors.py checks this).


The scripts live in one module per layer (``lifecycle``, ``voting``, ``reputation``,
``sanctions``, ``forgetting``, ``community``) over the shared ``worlds``, ``steps`` and
``registry``; importing this package registers them in that order.
"""

from __future__ import annotations

from ostrom.conformance.generators.examples import (
    community,
    forgetting,
    lifecycle,
    reputation,
    sanctions,
    voting,
)
from ostrom.conformance.generators.examples.registry import (
    EXAMPLES,
    SOURCE,
    Example,
    build_examples,
)
from ostrom.conformance.generators.examples.worlds import CM_PARAMS, LC_PARAMS, MEMBERS, WORLD

__all__ = [
    "CM_PARAMS",
    "EXAMPLES",
    "LC_PARAMS",
    "MEMBERS",
    "SOURCE",
    "WORLD",
    "Example",
    "build_examples",
    "community",
    "forgetting",
    "lifecycle",
    "reputation",
    "sanctions",
    "voting",
]
