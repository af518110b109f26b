"""cluster.toml (ostrom/cluster/config.py): round trip, clear errors, hostile files."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.cluster.config import ConfigError, load, parse
from ostrom.cluster.keys import KeyFileError, load_ring, load_signer
from ostrom.cluster.supervisor import create


def test_round_trip_and_keys(tmp_path: Path) -> None:
    cfg = create(tmp_path, n=4, batch_size=3, seed=7)
    again = load(tmp_path / "cluster.toml")
    assert again == cfg
    assert cfg.batch_size == 3 and cfg.f == 1 and len(cfg.replicas) == 4
    assert cfg.founders == tmp_path / "founders.toml"
    from ostrom.service.founders import load_founders

    setup = load_founders(cfg.founders)
    assert len(setup.founders) == 4 and list(setup.operators) == ["ops"]
    ring = load_ring(cfg.keys)
    s = load_signer(cfg.keys, "r2")
    from ostrom.consensus.messages import Checkpoint

    assert ring.verify(s.sign(Checkpoint(1, "0" * 64, 2)))
    assert (cfg.keys / "r2.key").stat().st_mode & 0o077 == 0
    # fresh keys differ between clusters; --seed keys repeat
    other = create(tmp_path / "b", n=4)
    assert load_signer(other.keys, "r2").sign(Checkpoint(1, "0" * 64, 2)) != s.sign(
        Checkpoint(1, "0" * 64, 2)
    )


BASE = """
[cluster]
n = 4
f = 1
community = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
[front]
host = "127.0.0.1"
port = 7000
http_port = 7001
""" + "".join(f'\n[[replica]]\nid = {i}\nhost = "127.0.0.1"\nport = {7100 + i}\n' for i in range(4))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("n = 4", "n = 3"), "below 3f\\+1"),
        (("f = 1", "f = true"), "cluster.f"),
        (("port = 7101", "port = 70000"), "replica 1.port"),
        (("id = 3", "id = 2"), "ids"),
        (("[front]", "[front]\nwhat = 1"), "unknown key 'what'"),
        (("n = 4", 'n = "4"'), "cluster.n"),
        (("[cluster]", '[cluster]\nsynchronous = "SOMETIMES"'), "synchronous"),
        (("[cluster]", "[cluster]\nbatch_size = 0"), "batch_size"),
        (('community = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"\n', ""), "cluster.community is missing"),
        (('community = "c0', 'community = "C0'), "cluster.community must be"),
    ],
)
def test_clear_errors(edit: tuple[str, str], message: str) -> None:
    text = BASE.replace(*edit, 1)
    with pytest.raises(ConfigError, match=message):
        parse(text.encode(), base=Path("."))


def test_base_parses() -> None:
    cfg = parse(BASE.encode(), base=Path("/x"))
    assert cfg.replica(2).db == Path("/x/r2.sqlite3")
    assert cfg.replica(2).dial == cfg.replica(2).listen
    assert cfg.founders is None


@given(st.binary(max_size=400))
def test_hostile_bytes_give_config_error(data: bytes) -> None:
    with contextlib.suppress(ConfigError):
        parse(data, base=Path("."))


@given(st.text(max_size=200))
def test_hostile_text_inside_a_valid_file(junk: str) -> None:
    text = BASE.replace("[front]", f"[front]\nhttp_host = {junk!r}", 1)
    with contextlib.suppress(ConfigError):
        parse(text.encode("utf-8", "surrogatepass"), base=Path("."))


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "nope.toml")
    with pytest.raises(KeyFileError):
        load_ring(tmp_path)
    (tmp_path / "r0.key").write_text("zz")
    with pytest.raises(KeyFileError):
        load_signer(tmp_path, "r0")
    with pytest.raises(KeyFileError):
        load_signer(tmp_path, "../etc")


# --- the community a cluster runs: --founders and --params (ostrom serve's files) ---------

FOUNDERS = """
[[founder]]
id = "alice"
tier = 3
reputation = 0.95
evidence = 40
public_key = "{key}"

[[operator]]
id = "clock"
public_key = "{key}"
"""


def _community_files(tmp_path: Path) -> tuple[Path, Path]:
    from ostrom.consensus.crypto import derive_key
    from ostrom.service.identity import public_hex

    key = public_hex(derive_key(b"cluster-config", "alice"))
    founders = tmp_path / "my-founders.toml"
    founders.write_text(FOUNDERS.format(key=key))
    params = tmp_path / "my-params.toml"
    params.write_text("propose_rate = 7\ncooldown = 3\n")
    return founders, params


def test_the_cluster_runs_the_given_founders_and_params(tmp_path: Path) -> None:
    """The files are checked, copied into the cluster directory and named by cluster.toml;
    the core every replica (and the audit) builds runs exactly them."""
    from ostrom.cluster.app import Retries, core_factory
    from ostrom.protocol.params import Params

    founders, params = _community_files(tmp_path)
    d = tmp_path / "c"
    cfg = create(d, n=4, seed=1, founders_file=founders, params_file=params)
    assert cfg.founders == d / "founders.toml" and cfg.params == d / "params.toml"
    assert cfg.founders.read_bytes() == founders.read_bytes()
    assert cfg.params.read_bytes() == params.read_bytes()
    assert load(d / "cluster.toml") == cfg  # the one source: every process reads this
    assert 'params = "params.toml"' in (d / "cluster.toml").read_text()
    assert not (cfg.keys / "ops.key").exists()  # no generated founders or operator
    core = core_factory(cfg)()
    assert isinstance(core, Retries)
    gate = core.gate
    assert gate.params == Params.from_toml(params) and gate.params.propose_rate == 7
    assert [f.member.id for f in gate.setup.founders] == ["alice"]
    assert gate.is_operator("clock")
    # the copy is what counts: editing the caller's file later changes nothing
    params.write_text("propose_rate = 9\n")
    again = core_factory(load(d / "cluster.toml"))()
    assert isinstance(again, Retries) and again.gate.params.propose_rate == 7


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        ("params", "propose_rate = 0\n", "propose_rate"),
        ("params", "no_such_param = 1\n", "no_such_param"),
        ("params", "= =\n", "not valid TOML"),
        ("params", b"\xff\xfe", "not valid TOML"),
        ("params", None, "cannot read"),
        ("founders", "[[founder]]\nid = 'x'\ntier = 3\n", "public_key"),
        ("founders", "[[operator]]\nid = 1\n", "operator"),
        ("founders", None, "cannot read"),
        # only the Community checks this one: the trial gate at `up` must
        (
            "founders",
            "[[founder]]\nid = 'x'\ntier = 3\npublic_key = '" + "a" * 64 + "'\n",
            "threshold",
        ),
    ],
)
def test_a_bad_community_file_creates_nothing(
    tmp_path: Path, which: str, text: str | bytes | None, message: str
) -> None:
    founders, params = _community_files(tmp_path)
    bad = tmp_path / "bad.toml"
    if isinstance(text, bytes):
        bad.write_bytes(text)
    elif text is not None:
        bad.write_text(text)
    if which == "founders":
        founders = bad
    else:
        params = bad
    with pytest.raises(ConfigError, match=message):
        create(tmp_path / "c", n=4, seed=1, founders_file=founders, params_file=params)
    assert not (tmp_path / "c").exists()


def test_a_replica_refuses_a_params_file_it_cannot_use(tmp_path: Path) -> None:
    """Validated at replica start too: a replica whose cluster's params file became
    unusable stops with one line instead of executing with other parameters."""
    from ostrom.cluster.app import core_factory

    founders, params = _community_files(tmp_path)
    cfg = create(tmp_path / "c", n=4, seed=1, founders_file=founders, params_file=params)
    assert cfg.params is not None
    cfg.params.write_text("propose_rate = -1\n")
    with pytest.raises(ConfigError, match="propose_rate"):
        core_factory(cfg)
    from click.testing import CliRunner

    from ostrom.cli.main import main

    r = CliRunner().invoke(main, ["node", "--id", "0", "--cluster", str(cfg.path)])
    assert r.exit_code == 2 and "propose_rate" in r.output and "Traceback" not in r.output
    assert not cfg.replica(0).db.exists()  # refused before its store was created
    cfg.params.unlink()
    with pytest.raises(ConfigError, match="no such file"):
        core_factory(cfg)
