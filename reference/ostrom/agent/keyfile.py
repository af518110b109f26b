"""An agent's key file, rotated without a moment when the file and the node disagree for good.

``rotate_key_file(client, path)`` makes a new key, writes it to ``PATH.next`` (created new,
``O_EXCL|O_NOFOLLOW``, mode 600: ``identity.save_key``), has the node bind it (the signed
``rotate_key``, KEY-1), and only then renames ``PATH.next`` over ``PATH`` (atomic, so the
file holds the old key or the new one, never a torn one).  A refusal removes
``PATH.next``; a node that cannot be reached leaves it, since the rotation may have been
applied.  ``recover_key_file`` settles such a leftover (the MCP command calls it at start
and before every rotation): the node's registered key decides which file is the agent's.
"""

from __future__ import annotations

import os
from pathlib import Path

from ostrom.client import Client, ClientError
from ostrom.service.identity import KeyFileError, load_key, new_key, public_hex, save_key

__all__ = ["pending_path", "recover_key_file", "rotate_key_file"]


def pending_path(path: Path) -> Path:
    """Where a rotation's new key waits until the node has bound it."""
    return path.with_name(path.name + ".next")


def _install(pending: Path, path: Path) -> None:
    """``pending`` becomes ``path`` (atomically, durably: the directory is synced)."""
    os.replace(pending, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover_key_file(client: Client, path: Path) -> str:
    """Settle a rotation that stopped between the node's answer and the rename: if the
    node has bound ``PATH.next``'s key it replaces ``PATH`` (and the client signs with
    it); if the node still has ``PATH``'s key it is removed.  What was done, in words
    (``"none"`` without a leftover).  ``KeyFileError`` if the node has neither key."""
    pending = pending_path(path)
    if not pending.exists() and not pending.is_symlink():
        return "none"
    new = load_key(pending)
    registered = client.agent_info().get("public_key")
    if registered == public_hex(new):
        _install(pending, path)
        client.key = new
        return "installed the rotated key"
    if registered == public_hex(client.key):
        pending.unlink()
        return "removed a rotation the node never applied"
    raise KeyFileError(f"{path}: the node has neither this key nor {pending.name}'s")


def rotate_key_file(client: Client, path: Path) -> str:
    """Rotate the agent's key held in ``path`` (module docstring); the new public key."""
    recover_key_file(client, path)
    pending, key = pending_path(path), new_key()
    save_key(key, pending)  # O_EXCL, O_NOFOLLOW, mode 600
    try:
        body = client.rotate_key(key)
    except ClientError as exc:
        if exc.code != "unreachable":
            pending.unlink()  # refused: nothing changed on the node
        raise
    if body.get("result") != "ok":  # pragma: no cover - the gate answers ok or refuses
        pending.unlink()
        raise ClientError(str(body.get("result")), "the rotation was not applied")
    _install(pending, path)
    return public_hex(key)
