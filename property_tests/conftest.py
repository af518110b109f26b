"""Hypothesis profiles, selected with ``pytest --hypothesis-profile=NAME`` (default ``ci``).

``ci`` is repeatable (derandomized, no example database) and bounded so that the whole
suite stays fast; ``deep`` explores far more and longer histories for a nightly run;
``fast`` (``make test-fast``, the inner loop) explores a sixth of ``ci``, and the tests
marked ``budget`` — those that assert what ``ci``'s budget reaches (every state a machine
must reach, every mutant it must catch) — are skipped under it.
The stateful lifecycle tests read ``max_examples`` and ``stateful_step_count`` from the
active profile, so switching profiles changes how deep they go.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants, _constants_from_source
from hypothesis.internal.floats import float_to_int
from sortedcontainers import SortedSet  # type: ignore[import-untyped]

import durations
from ostrom.verify.tlc import jar

_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    stateful_step_count=80,
    suppress_health_check=_QUIET,
    print_blob=False,
)
settings.register_profile(
    "deep",
    derandomize=False,
    database=None,
    deadline=None,
    max_examples=3000,
    stateful_step_count=150,
    suppress_health_check=_QUIET,
)
settings.register_profile(
    "fast",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=50,
    stateful_step_count=40,
    suppress_health_check=_QUIET,
    print_blob=False,
)
settings.load_profile("ci")  # the pytest plugin loads --hypothesis-profile after this

#: The profiles under which the ``budget`` tests hold (what ``ci`` reaches, ``deep`` does too).
BUDGET_PROFILES = ("ci", "deep")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the modules longest first (durations.py), then skip the ``budget`` tests under
    a profile smaller than ``ci`` (``make test-fast``)."""
    _longest_modules_first(items)
    profile = config.getoption("hypothesis_profile", None) or "ci"
    if profile in BUDGET_PROFILES:
        return
    skip = pytest.mark.skip(reason=f"asserts what the ci profile reaches; profile {profile}")
    for item in items:
        if item.get_closest_marker("budget") is not None:
            item.add_marker(skip)


def _longest_modules_first(items: list[pytest.Item]) -> None:
    """Whole modules, longest measured first, each in its own order (the LPT rule: the
    workers of ``--dist loadfile`` take modules in this order, so the last to finish is a
    short one).  Deterministic, as xdist requires: every worker must collect one order."""
    seconds = durations.load()
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)

    def key(item: pytest.Item) -> tuple[float, int]:
        module = item.nodeid.split("::")[0]
        return (-seconds.get(module, durations.UNKNOWN), first[module])

    items.sort(key=key)  # stable: a module's tests keep their order


# --- one pool of "local constants" in every process ---------------------------------------
#
# Hypothesis draws about one value in twenty from a pool of literals it reads from the
# project's own modules, and it builds that pool from the modules loaded *when the test
# runs* (``sys.modules``, rescanned whenever it grows).  So a derandomized test's examples
# depended on which tests had run before it in the process: what they had imported lazily
# (the CLI's commands, the service, an example agent, tmp_path modules).  Under
# pytest-xdist the two workers ran different tests before the PBFT machines, and
# test_pbft_reaches and test_attack_machine_reaches missed witnesses they reached in one
# process (test_pbft_reaches missed rejected:superseded after test_consensus_attacks
# alone).  The pool is fixed here instead, from the source files of the package and of
# the tests' helper modules (not imported: nothing is run or counted by coverage), so a
# test draws the same examples whatever ran before it, in one process or two.

_ROOT = Path(__file__).resolve().parent.parent


def _constants_pool() -> Constants:
    pool = Constants(
        integers=SortedSet(),
        floats=SortedSet(key=float_to_int),
        bytes=SortedSet(),
        strings=SortedSet(),
    )
    files = sorted((_ROOT / "reference" / "ostrom").rglob("*.py"))
    files += sorted(p for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("test_"))
    for path in files:
        source = path.read_bytes()
        if len(source) <= 512 * 1024:  # Hypothesis's own limit
            pool = pool | _constants_from_source(source, limit=True)
    return pool


_POOL = _constants_pool()
# Hypothesis is pinned (pyproject.toml); these are its internals, checked so that an
# upgrade that moves them fails here rather than bringing the order dependence back.
assert callable(providers._get_local_constants), "hypothesis: _get_local_constants moved"
providers._get_local_constants = lambda: _POOL
providers.CONSTANTS_CACHE.cache.clear()


# --- markers: `tlc` (runs TLC, needs java), `venv`, `slow` (see pyproject.toml) ----------
#
# `make test-fast` runs `-m "not tlc and not venv and not slow"`.  A test that starts TLC
# must carry the `tlc` marker (on the test or as the module's `pytestmark`): while an
# unmarked test runs, TLC's start (`find_java`, wherever it was imported) fails the test
# with a message saying so, so the fast run never starts java by accident and a missing
# marker shows at once.


def _unmarked_tlc(real: Callable[[], Path]) -> Callable[[], Path]:
    def find_java() -> Path:
        java = real()  # a missing java or jar still reports as it would
        pytest.fail("this test runs TLC: mark it @pytest.mark.tlc", pytrace=False)
        return java  # pragma: no cover

    return find_java


def _holding(find_java: object) -> list[ModuleType]:
    """The loaded modules whose ``find_java`` is ``find_java``."""
    found = []
    for module in list(sys.modules.values()):
        try:
            if getattr(module, "find_java", None) is find_java:
                found.append(module)
        except Exception:  # a lazy module may fail on attribute access; it holds no TLC
            continue
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if item.get_closest_marker("tlc") is not None:
        yield
        return
    real = jar.find_java
    guarded = _unmarked_tlc(real)
    for module in _holding(real):
        module.find_java = guarded  # type: ignore[attr-defined]
    try:
        yield
    finally:  # modules first imported during the test took the guard too
        for module in _holding(guarded):
            module.find_java = real  # type: ignore[attr-defined]


# --- how the suite may be spread over processes ---------------------------------------------
#
# Several modules share a costly module fixture (the TLC rows, the crash run, the kill
# matrix), and the reachability tests read counters that the same module's state machines
# filled in this process.  Under pytest-xdist a module must therefore run whole, on one
# worker: ``--dist loadfile``.  (``--dist loadgroup`` with ``xdist_group`` marks no longer
# groups anything with pytest 9: xdist 3.8 renames ``item._nodeid``, which pytest 9 no
# longer reads, so every test was dealt out alone and both workers ran the TLC rows.)


def pytest_configure(config: pytest.Config) -> None:
    workers = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    if workers and dist not in ("loadfile", "no"):
        raise pytest.UsageError(
            f"run the suite with --dist loadfile, not --dist {dist}: each module must run "
            "whole on one worker (property_tests/conftest.py)"
        )
    # xdist would reorder the modules by their number of tests; keep the collection's
    # order, longest measured first (_longest_modules_first)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# --- the browser of the tests marked ``browser`` -----------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Debian's chromedriver (scripts/setup.sh
    installs both; nothing is downloaded), for the tests marked ``browser``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for tool in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: scripts/setup.sh installs Debian's chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
