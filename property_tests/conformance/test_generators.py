"""The generators of the reference's vectors, each on its own: the hand-written examples
(one module per layer over a registry), the ``Recorder`` they drive and the random
lifecycle logs.  (The random walks take half a minute to explore: the committed suite's
check regenerates them, test_conformance_vectors.py.)

test_conformance_vectors.py checks that the committed suite is what the generators give
and that it covers every command and error code; here each generator is checked for what
it promises: deterministic, every vector valid and replaying on the reference, a script
whose reference changed stops generation instead of writing a vector that shows
something else.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from ostrom.conformance.generators.examples import (
    EXAMPLES,
    LC_PARAMS,
    WORLD,
    build_examples,
    community,
    forgetting,
    lifecycle,
    reputation,
    sanctions,
    voting,
)
from ostrom.conformance.generators.examples.steps import propose, salt, tick
from ostrom.conformance.generators.random_log import random_lifecycle_log
from ostrom.conformance.generators.recorder import GenerationError, Recorder
from ostrom.conformance.vectors import replay, vector_errors

LAYER_MODULES: dict[str, ModuleType] = {
    "lifecycle": lifecycle,
    "voting": voting,
    "reputation": reputation,
    "sanctions": sanctions,
    "forgetting": forgetting,
    "community": community,
}


def _recorder(name: str = "probe") -> Recorder:
    return Recorder(
        "lifecycle",
        "propose",
        name,
        "a probe",
        ["LC-1"],
        "test",
        dict(LC_PARAMS),
        {"agents": WORLD},
    )


def test_each_layers_examples_are_in_its_module() -> None:
    """The package registers the scripts one module per layer (its docstring): an
    example of a layer defined in another module would be built in the wrong order."""
    assert {ex.layer for ex in EXAMPLES} == set(LAYER_MODULES)
    for ex in EXAMPLES:
        assert ex.script.__module__ == LAYER_MODULES[ex.layer].__name__, ex.name
    ids = [f"{ex.layer}/{ex.action}/{ex.name}" for ex in EXAMPLES]
    assert len(ids) == len(set(ids))


@pytest.fixture(scope="module")
def examples() -> list[dict[str, Any]]:
    return build_examples()


def test_the_examples_are_deterministic_valid_and_replay(examples: list[dict[str, Any]]) -> None:
    assert build_examples() == examples
    for vector in examples:
        rel = f"{vector['id']}.json"
        assert vector_errors(vector, rel) == [], vector["id"]
        assert replay(vector) is None, vector["id"]


def test_a_step_that_does_not_go_as_written_stops_generation() -> None:
    r = _recorder()
    propose(r, "ivy", "x")
    tick(r)
    with pytest.raises(GenerationError, match=r"lifecycle/propose/probe: step 2 .*expected ok"):
        r.do({"op": "propose", "agent": "nobody", "artifact": "y", "slot": "s", "digest": "d"})
    with pytest.raises(GenerationError, match="step 2: the world changed"):
        r.check(False, "the world changed")
    assert len(r.steps) == 2  # the refused step was not recorded


def test_a_recorder_without_steps_writes_no_vector() -> None:
    with pytest.raises(GenerationError, match="no steps"):
        _recorder().vector()


def test_salts_are_per_agent_and_draw() -> None:
    salts = {salt(a, k) for a in ("ana", "ben") for k in range(3)}
    assert len(salts) == 6 and all(len(s) == 64 for s in salts)


def test_a_random_log_is_deterministic_in_its_seed() -> None:
    one, again, other = (random_lifecycle_log(40, s) for s in (3, 3, 4))
    assert one == again and one != other
    assert len(one.steps) == 40
