"""LifecycleRegVar: spec/Lifecycle.tla with its registry constants made variables.

Trace validation replays logged ``set_agent`` commands, which change the registry between
steps; in Lifecycle.tla the registry is a set of constants.  ``registry_variable_spec``
derives, by one mechanical textual edit, the copy LifecycleTrace.tla EXTENDS.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REGISTRY_CONSTANTS", "REGVAR_MODULE", "registry_variable_spec"]

#: The generated copy of Lifecycle.tla with the registry as variables.
REGVAR_MODULE: Final = "LifecycleRegVar"
#: Lifecycle.tla's registry constants that the trace spec turns into variables (Agents
#: stays a constant: every id of the log; an unregistered id is a barred tier-0 agent).
REGISTRY_CONSTANTS: Final = ("Tier", "Weight", "Barred", "Subscriptions", "RepOK")


def registry_variable_spec(text: str, module: str = REGVAR_MODULE) -> str:
    """Lifecycle.tla with the registry as variables (LifecycleTrace.tla EXTENDS the result).

    The one mechanical edit: the module is renamed; the lines declaring the
    ``REGISTRY_CONSTANTS`` are dropped from CONSTANTS and declared as VARIABLES instead
    (just before the first ASSUME); every ``ASSUME`` becomes a definition
    ``LifecycleAssumption<k> ==`` (an ASSUME cannot read a variable), the word replaced by
    blanks so that the indentation of its conjunctions is unchanged, and
    ``LifecycleAssumptions`` conjoins them.  Every other line is Lifecycle.tla's.
    """
    lines = text.splitlines()
    head = re.compile(r"^(-+\s*MODULE\s+)Lifecycle(\s+-+)\s*$")
    if not lines or not head.match(lines[0]):
        raise ValueError("spec/Lifecycle.tla does not start with its MODULE line")
    out = [head.sub(rf"\g<1>{module}\g<2>", lines[0])]
    decl = re.compile(r"^\s+(" + "|".join(REGISTRY_CONSTANTS) + r"),\s*(\\\*.*)?$")
    dropped: list[str] = []
    count = 0
    declared = False
    for line in lines[1:]:
        m = decl.match(line)
        if m and not declared:
            dropped.append(m.group(1))
            continue
        if line.startswith("ASSUME"):
            if not declared:
                if sorted(dropped) != sorted(REGISTRY_CONSTANTS):
                    raise ValueError(f"registry constants not found in CONSTANTS: {dropped}")
                out.append(
                    f"VARIABLES {', '.join(REGISTRY_CONSTANTS)}  "
                    "\\* trace validation: the registry (LifecycleTrace.tla)"
                )
                out.append("")
                declared = True
            count += 1
            out.append(f"LifecycleAssumption{count} ==")
            out.append(" " * len("ASSUME") + line[len("ASSUME") :])
            continue
        if line.startswith("====="):
            conj = " /\\ ".join(f"LifecycleAssumption{k}" for k in range(1, count + 1))
            out.append(f"LifecycleAssumptions == {conj}")
        out.append(line)
    if not declared:
        raise ValueError("spec/Lifecycle.tla has no ASSUME after its CONSTANTS")
    return "\n".join(out) + "\n"
