"""JUnit XML of an ``ostrom conform`` run, for CI systems.

One ``<testsuite>`` per layer, one ``<testcase>`` per vector (``classname`` is
``layer.action``, ``name`` the vector id, ``file`` the vector file).  A vector whose
observation differs is a ``<failure>``; a driver that crashed, timed out or answered
garbage is an ``<error>`` of that type; a vector of a layer the driver does not implement
is ``<skipped>``.  The message names the first diverging step and its command; the body
holds the diff, the driver's stderr goes to ``<system-err>``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ostrom.conformance.report import Report, VectorResult, display_path

__all__ = ["to_junit", "write_junit"]

# characters XML 1.0 cannot hold (a driver's garbage must not make the file unreadable)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _testcase(report: Report, res: VectorResult) -> ET.Element:
    v = res.vector
    case = ET.Element(
        "testcase",
        {
            "classname": f"{v.layer}.{v.action}",
            "name": v.id,
            "file": display_path(report.suite.root / v.rel),
            "time": f"{res.seconds:.3f}",
        },
    )
    if res.status == "not_implemented":
        ET.SubElement(case, "skipped", {"message": f"layer {v.layer} not implemented"})
    elif res.failing:
        tag = "failure" if res.status == "failed" else "error"
        message = f"{res.headline()}: {res.message}" if res.message else res.headline()
        body = "\n".join(x for x in (message, res.diff) if x)
        elem = ET.SubElement(case, tag, {"type": res.status, "message": _clean(message)})
        elem.text = _clean(body)
        if res.stderr:
            ET.SubElement(case, "system-err").text = _clean(res.stderr)
    return case


def to_junit(report: Report) -> ET.Element:
    """The ``<testsuites>`` element of ``report``."""
    root = ET.Element("testsuites", {"name": "ostrom conform"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    layers: dict[str, list[VectorResult]] = {}
    for res in report.results:
        layers.setdefault(res.vector.layer, []).append(res)
    for layer, results in layers.items():
        counts = {
            "tests": len(results),
            "failures": sum(r.status == "failed" for r in results),
            "errors": sum(r.failing and r.status != "failed" for r in results),
            "skipped": sum(r.status == "not_implemented" for r in results),
        }
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": layer,
                **{k: str(n) for k, n in counts.items()},
                "time": f"{sum(r.seconds for r in results):.3f}",
            },
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("implementation", report.implementation),
            ("command", " ".join(report.command)),
            ("vectors", display_path(report.suite.root)),
        ):
            ET.SubElement(props, "property", {"name": name, "value": _clean(value)})
        for res in results:
            suite.append(_testcase(report, res))
        for k, n in counts.items():
            totals[k] += n
    root.attrib.update({k: str(n) for k, n in totals.items()})
    root.set("time", f"{report.seconds:.3f}")
    return root


def write_junit(report: Report, path: Path) -> None:
    """Write the JUnit XML of ``report`` to ``path`` (creating its directory)."""
    tree = ET.ElementTree(to_junit(report))
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
