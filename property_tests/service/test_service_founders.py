"""The founders file (service/founders.py) and the command line around the node
(cli/service.py): every bad file or argument is one line and exit 2, nothing created."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ostrom.cli.main import main
from ostrom.service.founders import FoundersError, load_founders, parse_founders
from ostrom.service.identity import public_hex
from service_world import key

PK = public_hex(key("a"))
GOOD = f"""
[[founder]]
id = "a"
tier = 3
public_key = "{PK}"
reputation = 0.9
evidence = 20
pretrusted = true
subscriptions = ["geo"]

[[operator]]
id = "ops"
public_key = "{public_hex(key("ops"))}"
"""


def test_a_good_file_loads(tmp_path: Path) -> None:
    (tmp_path / "f.toml").write_text(GOOD)
    s = load_founders(tmp_path / "f.toml")
    (f,) = s.founders
    assert (f.member.id, f.member.tier, f.member.pretrusted, f.public_key) == ("a", 3, True, PK)
    assert set(s.operators) == {"ops"}


@pytest.mark.parametrize(
    "text,match",
    [
        ("x = 1", "unknown key"),
        ("founder = 1", "arrays of tables"),
        ('[[founder]]\nid = "a"\ntier = 1\n', "public_key"),
        (f'[[founder]]\nid = "a"\ntier = 9\npublic_key = "{PK}"\n', "tier"),
        (f'[[founder]]\nid = "a"\nreputation = 2\npublic_key = "{PK}"\n', "reputation"),
        (f'[[founder]]\nid = "a"\nevidence = 1\npublic_key = "{PK}"\n', "evidence"),
        (f'[[founder]]\nid = ""\npublic_key = "{PK}"\n', "id"),
        (f'[[founder]]\nid = "a"\ncolour = "red"\npublic_key = "{PK}"\n', "a member"),
        (f'[[founder]]\nid = "a"\npublic_key = "{PK.upper()}"\n', "public_key"),
        (
            f'[[founder]]\nid = "a"\npublic_key = "{PK}"\n[[operator]]\nid = "a"\n'
            f'public_key = "{PK}"\n',
            "unique",
        ),
        ('[[operator]]\nid = "o"\n', "exactly id and public_key"),
        ("[[founder", "not valid TOML"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "f.toml").write_text(text)
    with pytest.raises(FoundersError, match=match):
        load_founders(tmp_path / "f.toml")


def test_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    for p in (tmp_path / "missing.toml", tmp_path / "bin.toml", tmp_path):
        with pytest.raises(FoundersError):
            load_founders(p)


TOMLISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4) | st.just(PK),
    lambda c: (
        st.lists(c, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "tier",
                    "public_key",
                    "reputation",
                    "evidence",
                    "pretrusted",
                    "subscriptions",
                    "founder",
                    "operator",
                    "x",
                ]
            ),
            c,
            max_size=5,
        )
    ),
    max_leaves=15,
)


@given(TOMLISH)
def test_any_document_loads_or_is_a_founders_error(doc: Any) -> None:
    with contextlib.suppress(FoundersError):
        parse_founders(doc)


def _serve(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["serve", "--db", str(tmp_path / "n.db"), *args])


def test_serve_refuses_bad_inputs_before_creating_anything(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("[[founder]]\n")
    (tmp_path / "p.toml").write_text("w_min = 7\n")
    # well-formed, but the Community refuses it: a tier-3 founder at the default prior
    (tmp_path / "low.toml").write_text(
        "[[founder]]\nid = 'x'\ntier = 3\npublic_key = '" + "a" * 64 + "'\n"
    )
    for args in (
        ["--founders", str(tmp_path / "bad.toml")],
        ["--founders", str(tmp_path / "low.toml")],
        ["--params", str(tmp_path / "p.toml")],
        ["--operator-key", str(tmp_path / "bad.toml")],
    ):
        r = _serve(tmp_path, *args)
        assert r.exit_code == 2, r.output
        assert "error:" in r.output and "Traceback" not in r.output
        assert not (tmp_path / "n.db").exists() and not (tmp_path / "n.db.operator.key").exists()


def test_serve_refuses_a_corrupt_or_mismatched_database(tmp_path: Path) -> None:
    (tmp_path / "n.db").write_bytes(b"not a database" * 100)
    r = _serve(tmp_path)
    assert r.exit_code == 2 and "error:" in r.output
    (tmp_path / "n.db").unlink()
    with sqlite3.connect(tmp_path / "n.db") as db:
        db.execute("CREATE TABLE other (x)")
    r = _serve(tmp_path)
    assert r.exit_code == 2 and "not a node database" in r.output


def test_keygen_and_log_export_errors(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["keygen", str(tmp_path / "k")])
    assert r.exit_code == 0 and len(r.output.strip()) == 64
    r = CliRunner().invoke(main, ["keygen", str(tmp_path / "k")])
    assert r.exit_code == 2 and "exists" in r.output
    r = CliRunner().invoke(main, ["log", "export", "--db", str(tmp_path / "none.db")])
    assert r.exit_code == 2 and "no such database" in r.output


def test_serve_refuses_founders_other_than_the_databases(tmp_path: Path) -> None:
    from ostrom.service.node import Node
    from service_world import PARAMS, setup

    Node.open(tmp_path / "n.db", params=PARAMS, setup=setup(), fsync=False).close()
    (tmp_path / "f.toml").write_text(GOOD)
    r = _serve(tmp_path, "--founders", str(tmp_path / "f.toml"))
    assert r.exit_code == 2 and "other founders" in r.output
    r = _serve(tmp_path, "--tick-interval", "1")  # no operator key for this database
    assert r.exit_code == 2 and "operator key" in r.output
