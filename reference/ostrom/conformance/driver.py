"""The reference driver: ``python -m ostrom.conformance.driver`` speaks ostrom-driver/1 on
stdin/stdout.

One JSON object per line in, exactly one JSON object per line out, in order
(docs/conformance.md, "The driver protocol")::

    → {"type": "hello", "protocol": "ostrom-driver/1"}
    ← {"type": "hello", "protocol": "ostrom-driver/1", "implementation": "...", "layers": [...]}
    → {"type": "reset", "layer": "lifecycle", "params": {...}, "setup": {...}}
    ← {"type": "ready"}
    → {"type": "step", "command": {"op": "tick"}}
    ← {"type": "observation", "result": "ok", "events": [...], "state": {...}}
    → {"type": "bye"}                                   (no reply; the driver exits 0)

Anything the driver cannot act on — a line that is not a JSON object, an unknown
``type``, a reset before the handshake, an unknown layer, bad params or setup, a step
before any reset — gets ``{"type": "error", "message": "..."}`` and the driver goes on
reading.  It never crashes on input; empty lines are ignored (no reply).  Diagnostics go
to stderr only.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

from ostrom import __version__
from ostrom.conformance import DRIVER_PROTOCOL, LAYERS, TRACE_FORMAT
from ostrom.conformance.layer import Layer, LayerFactory

__all__ = ["Driver", "serve"]

#: Layers whose steps ``--log`` writes: every layer with a trace spec (ostrom validate-trace
#: dispatches on the log header's ``layer``).
LOGGED_LAYERS: Final = frozenset({"lifecycle", "community", "sanctions", "pbft"})

IMPLEMENTATION: Final = f"ostrom-reference {__version__}"

_EPILOG = """\
protocol (docs/conformance.md):
  -> {"type": "hello", "protocol": "ostrom-driver/1"}
  <- {"type": "hello", "protocol": "ostrom-driver/1", "implementation": ..., "layers": [...]}
  -> {"type": "reset", "layer": "lifecycle", "params": {}, "setup": {"agents": [...]}}
  <- {"type": "ready"}
  -> {"type": "step", "command": {"op": "tick"}}
  <- {"type": "observation", "result": "ok", "events": [...], "state": {...}}
  -> {"type": "bye"}
Malformed lines get {"type": "error", "message": ...}; the driver keeps reading.

examples:
  echo '{"type":"hello","protocol":"ostrom-driver/1"}' | python -m ostrom.conformance.driver
  ostrom conform -- python -m ostrom.conformance.driver --layers lifecycle,voting
  ostrom conform -- python -m ostrom.conformance.driver --mutant lifecycle-ignored-objection
  python -m ostrom.conformance.driver --log run.jsonl < session.jsonl; ostrom validate-trace
  run.jsonl
"""


class TraceLog:
    """``--log FILE``: an ostrom-trace/1 log of every step of a logged layer.

    The first reset of a logged layer writes ``FILE``; the k-th (k ≥ 2) writes
    ``FILE``'s name with ``.k`` before its suffix (``run.jsonl`` -> ``run.2.jsonl``), so
    each file holds exactly one trace: a header line, then one line per step.  Lines are
    flushed at once, so a driver that is killed leaves a valid prefix.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._fh: IO[str] | None = None

    def start(self, layer: str, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.close()
        self.count += 1
        path = self.path
        if self.count > 1:
            path = path.with_name(f"{path.stem}.{self.count}{path.suffix}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("w", encoding="utf-8")
        header = {"format": TRACE_FORMAT, "layer": layer, "params": params, "setup": setup}
        self._write(header)

    def step(self, command: Any, result: str, state: Any, events: Any = None) -> None:
        if self._fh is not None:
            line = {"command": command, "result": result, "state": state}
            if events is not None:
                line["events"] = events
            self._write(line)

    def stop(self) -> None:
        """The current trace ends (a reset of a layer that is not logged)."""
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _write(self, obj: Mapping[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(_dumps(obj) + "\n")
        self._fh.flush()


def _dumps(obj: Any) -> str:
    # ASCII: a lone surrogate ("\\ud800" is valid JSON) must not make a write fail
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class Driver:
    """The protocol state machine: ``handle(line)`` returns the reply (None: no reply).

    ``factories`` are the layers served (name -> adapter factory); ``done`` turns true
    after ``bye``.
    """

    def __init__(
        self,
        factories: Mapping[str, LayerFactory],
        implementation: str = IMPLEMENTATION,
        log: TraceLog | None = None,
    ) -> None:
        self.factories = dict(factories)
        self.implementation = implementation
        self.log = log
        self.greeted = False
        self.done = False
        self._layer: Layer | None = None
        self._logging = False

    def handle(self, line: str) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError) as exc:
            return _error(f"not JSON: {exc}")
        if not isinstance(msg, dict):
            return _error("a message must be a JSON object")
        kind = msg.get("type")
        try:
            if kind == "hello":
                return self._hello(msg)
            if kind == "bye":
                self.done = True
                return None
            if not self.greeted:
                return _error("the handshake comes first: send hello")
            if kind == "reset":
                return self._reset(msg)
            if kind == "step":
                return self._step(msg)
            return _error(f"unknown message type {kind!r}")
        except Exception as exc:  # never crash on input: the runner reports the error
            return _error(f"{type(exc).__name__}: {exc}")

    def _hello(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        if msg.get("protocol") != DRIVER_PROTOCOL:
            return _error(
                f"unsupported protocol {msg.get('protocol')!r}; I speak {DRIVER_PROTOCOL}"
            )
        self.greeted = True
        return {
            "type": "hello",
            "protocol": DRIVER_PROTOCOL,
            "implementation": self.implementation,
            "layers": [name for name in LAYERS if name in self.factories],
        }

    def _reset(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        self._layer = None
        self._logging = False
        name = msg.get("layer")
        if not isinstance(name, str) or name not in self.factories:
            return _error(f"layer {name!r} is not implemented here")
        params = msg.get("params", {})
        setup = msg.get("setup", {})
        if not isinstance(params, dict) or not isinstance(setup, dict):
            return _error("params and setup must be objects")
        layer = self.factories[name]()
        try:
            layer.reset(params, setup)
        except (ValueError, TypeError, KeyError) as exc:
            return _error(f"cannot build {name}: {exc}")
        self._layer = layer
        if self.log is not None:
            if name in LOGGED_LAYERS:
                self.log.start(name, params, setup)
                self._logging = True
            else:
                self.log.stop()
        return {"type": "ready"}

    def _step(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        if self._layer is None:
            return _error("no layer: send a successful reset first")
        if "command" not in msg:
            return _error("a step needs a command")
        obs = self._layer.step(msg["command"])
        if self._logging and self.log is not None:
            self.log.step(msg["command"], obs["result"], obs["state"], obs.get("events"))
        return {"type": "observation", **obs}


def _error(message: str) -> dict[str, Any]:
    return {"type": "error", "message": message}


def serve(driver: Driver, stdin: IO[str], stdout: IO[str]) -> int:
    """Read lines until ``bye`` or EOF, answering each; 0 when done."""
    try:
        for line in stdin:
            reply = driver.handle(line)
            if reply is not None:
                try:
                    text = _dumps(reply)
                except (TypeError, ValueError) as exc:
                    text = _dumps(_error(f"unserialisable reply: {exc}"))
                stdout.write(text + "\n")
                stdout.flush()
            if driver.done:
                break
    finally:
        if driver.log is not None:
            driver.log.close()
    return 0


def _factories(layers: str | None, mutant: str | None) -> tuple[dict[str, LayerFactory], str]:
    from ostrom.conformance.layers import ADAPTERS

    factories = dict(ADAPTERS)
    implementation = IMPLEMENTATION
    if mutant is not None:
        from ostrom.conformance.mutants import MUTANTS

        if mutant not in MUTANTS:
            names = ", ".join(MUTANTS) or "none"
            raise SystemExit(f"error: unknown mutant {mutant!r} (known: {names})")
        m = MUTANTS[mutant]
        factories[m.layer] = m.factory
        implementation = f"{IMPLEMENTATION} mutant {mutant}"
    if layers is not None:
        wanted = [x.strip() for x in layers.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in factories]
        if unknown:
            raise SystemExit(
                f"error: unknown layer(s) {', '.join(unknown)} (known: {', '.join(factories)})"
            )
        factories = {k: v for k, v in factories.items() if k in wanted}
    return factories, implementation


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ostrom.conformance.driver",
        description="The ostrom reference implementation as a conformance driver: "
        "ostrom-driver/1 JSON lines on stdin/stdout (one reply per request, in order).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--layers",
        metavar="A,B",
        help="announce only these layers in the handshake (default: every layer: "
        + ", ".join(LAYERS)
        + "; pbft only where its adapter is installed)",
    )
    parser.add_argument(
        "--mutant",
        metavar="NAME",
        help="serve a deliberately broken variant of one layer (ostrom.conformance.mutants); "
        "--list-mutants names them",
    )
    parser.add_argument(
        "--list-mutants", action="store_true", help="print the mutants, one per line, and exit"
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        type=Path,
        help="write an ostrom-trace/1 log (header, then command/result/state per step) of "
        "every lifecycle or community vector to FILE (the k-th reset to FILE.k), for "
        "ostrom validate-trace",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_mutants:
        from ostrom.conformance.mutants import MUTANTS

        for name, m in MUTANTS.items():
            print(f"{name}\t{m.layer}\t{m.description}")
        return 0
    factories, implementation = _factories(args.layers, args.mutant)
    log = TraceLog(args.log) if args.log is not None else None
    driver = Driver(factories, implementation, log)
    # UTF-8 whatever the locale; undecodable bytes become U+FFFD instead of a crash
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return serve(driver, stdin, sys.stdout)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
