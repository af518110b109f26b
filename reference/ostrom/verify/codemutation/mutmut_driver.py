"""The two things ostrom asks of mutmut that its command line does not give as data.

Run as a script (not as ``ostrom....``) in a target's workspace, the directory holding
the ``[tool.mutmut]`` table, with the venv's Python:

``generate``
    make the mutants of the target's file, as ``mutmut run`` does before it tests them,
    and print their names as a JSON list (the seeded sample is drawn from it);
``report``
    print every mutant of the run as JSON: name, mutmut's exit code and status, the diff
    of the mutated function and the seconds its tests took.

It imports only the standard library and mutmut (pinned to 3.8.1 in pyproject.toml:
these are mutmut's internal functions, and property_tests/verify/test_codemutation.py fails
when an upgrade moves them).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = []


def _generate() -> list[str]:
    from mutmut.__main__ import create_mutants
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.utils.file_utils import (
        copy_also_copy_files,
        copy_src_dir,
        setup_source_paths,
        walk_mutatable_files,
    )

    os.makedirs("mutants", exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(1)
    names: list[str] = []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        names.extend(data.exit_code_by_key)
    return sorted(names)


def _report() -> list[dict[str, Any]]:
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    out: list[dict[str, Any]] = []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, code in sorted(data.exit_code_by_key.items()):
            out.append(
                {
                    "id": name,
                    "exit_code": code,
                    "status": status_by_exit_code[code],
                    "diff": get_diff_for_mutant(name, path=path),
                    "seconds": data.durations_by_key.get(name),
                }
            )
    return out


def main(argv: list[str]) -> int:
    """``generate`` or ``report``; the JSON goes to stdout, mutmut's own chatter to stderr."""
    if argv not in (["generate"], ["report"]):
        print("usage: mutmut_driver.py generate|report", file=sys.stderr)
        return 2
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # mutmut prints progress while it generates
    try:
        result: Any = _generate() if argv == ["generate"] else _report()
    finally:
        sys.stdout = real_stdout
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
