"""The node: the sans-IO ``Community`` behind signed commands, a durable log and HTTP.

docs/service.md describes what a node promises.  One job per module: ``identity``
(envelopes, Ed25519, key files), ``gate`` (admitting a signed command; the error table),
``store`` (the SQLite log), ``snapshot`` (the whole state as JSON), ``node`` (the write
path, retries, rollback, the event fan-out), ``openapi`` (the route table and the OpenAPI
document), ``app`` (the Starlette app), ``server`` (the HTTP server with its timeouts
and connection cap, for the node and the cluster's front; its ``limits``), ``founders``
(the founders file), ``export`` (the log as a trace).  Only ``app`` and ``server`` need
the web stack (the ``service`` extra).

The API, re-exported here: the ``Node`` and its ``Operator``, the ``Gate`` (``Setup``,
``Founder``, ``GATE_ERRORS``), ``create_app``, the ``Store``, ``restore`` (a snapshot), the
envelope and key functions of ``identity``, ``load_founders`` and the routes
(``ENDPOINTS``); the functions named like their module (``snapshot.snapshot``,
``export.export``, ``openapi.openapi``) stay in it, where the name means one thing.  They load
on first use (PEP 562): ``create_app`` needs the web stack of the ``service`` extra, which a
cluster replica or a tool importing ``ostrom.service.gate`` must not pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.service.app import create_app
    from ostrom.service.export import ExportError
    from ostrom.service.founders import FoundersError, load_founders
    from ostrom.service.gate import GATE_ERRORS, Founder, Gate, Setup
    from ostrom.service.identity import (
        KeyFileError,
        load_key,
        new_key,
        public_hex,
        save_key,
        sign_envelope,
        verify_envelope,
    )
    from ostrom.service.node import Node, Operator
    from ostrom.service.openapi import ENDPOINTS
    from ostrom.service.snapshot import CodecError, restore
    from ostrom.service.store import Store, StoreError

__all__ = [
    "ENDPOINTS",
    "GATE_ERRORS",
    "CodecError",
    "ExportError",
    "Founder",
    "FoundersError",
    "Gate",
    "KeyFileError",
    "Node",
    "Operator",
    "Setup",
    "Store",
    "StoreError",
    "create_app",
    "load_founders",
    "load_key",
    "new_key",
    "public_hex",
    "restore",
    "save_key",
    "sign_envelope",
    "verify_envelope",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "Node": "ostrom.service.node:Node",
    "Operator": "ostrom.service.node:Operator",
    "Gate": "ostrom.service.gate:Gate",
    "Setup": "ostrom.service.gate:Setup",
    "Founder": "ostrom.service.gate:Founder",
    "GATE_ERRORS": "ostrom.service.gate:GATE_ERRORS",
    "create_app": "ostrom.service.app:create_app",
    "Store": "ostrom.service.store:Store",
    "StoreError": "ostrom.service.store:StoreError",
    "restore": "ostrom.service.snapshot:restore",
    "CodecError": "ostrom.service.snapshot:CodecError",
    "sign_envelope": "ostrom.service.identity:sign_envelope",
    "verify_envelope": "ostrom.service.identity:verify_envelope",
    "new_key": "ostrom.service.identity:new_key",
    "load_key": "ostrom.service.identity:load_key",
    "save_key": "ostrom.service.identity:save_key",
    "public_hex": "ostrom.service.identity:public_hex",
    "KeyFileError": "ostrom.service.identity:KeyFileError",
    "load_founders": "ostrom.service.founders:load_founders",
    "FoundersError": "ostrom.service.founders:FoundersError",
    "ExportError": "ostrom.service.export:ExportError",
    "ENDPOINTS": "ostrom.service.openapi:ENDPOINTS",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
