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
