"""ostrom: a formally specified, model-checked governance protocol for shared knowledge bases.

The package is two stacks (docs/design.md §1).  The **product** is what a team runs for
its agents: the sans-IO protocol core, the PBFT replica core, the node, the cluster, the
client and the ``ostrom`` command's product commands; ``pip install ostrom`` installs it
with its runtime dependencies only.  The **tools** check the product against the TLA+
specs in ``spec/``: model checking and mutation, conformance, the trace explorer, the
site, the evaluation model, the generators of the docs and the consensus test harness;
each needs an extra (``pip install 'ostrom[check]'``, ...).  The product never imports a
tool (``.importlinter``, contract ``product-no-tools``, built from the two tuples below).
"""

from __future__ import annotations

from typing import Final

__all__ = ["PRODUCT", "TOOLS", "__version__"]

#: The package's version (semver), the one source of pyproject.toml's: it changes with
#: every release; the protocol's version (``ostrom.protocol.version.PROTOCOL_VERSION``)
#: only when a rule, message or format changes (docs/design.md §9, "Versions").
__version__ = "0.1.0"

#: The product's packages and modules (below ``ostrom``), from the core up.
PRODUCT: Final = (
    "protocol",
    "consensus",
    "service",
    "cluster",
    "client",
    "agent",
    "cli",
    "children",
)

#: The tools' packages and modules, each with the one job it does.
TOOLS: Final = (
    "verify",  # TLC, trace validation, Z3 thresholds, spec and code mutation
    "conformance",  # the vectors, the driver protocol, the runner, the kill matrix
    "explore",  # the trace explorer's pages
    "site",  # the documentation site
    "simulation",  # the evaluation model (the papers' experiments)
    "codegen",  # every generated file and docs block
    "harness",  # the consensus test harness: simulated network, Byzantine strategies
    "layout",  # where the repository's (or the installed package's) files are
    "docblocks",  # generated blocks inside hand-written files
)
