"""An agent's key file across a rotation (agent/keyfile.py, KEY-1), against ``ostrom
serve`` over loopback: the file is replaced only once the node bound the new key; a
refused rotation leaves no ``.next``; a leftover ``.next`` is settled by asking the node
(installed if the node bound it, removed if not, an error if the node has neither)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ostrom.agent.keyfile import pending_path, recover_key_file, rotate_key_file
from ostrom.client import Client, ClientError
from ostrom.service.identity import KeyFileError, load_key, new_key, public_hex, save_key
from service_world import key, serve_founders

pytestmark = pytest.mark.system
AGENT = "f2"


def test_the_key_file_follows_the_node(tmp_path: Path) -> None:
    path = tmp_path / "f2.key"
    save_key(key(AGENT), path)
    with serve_founders(tmp_path) as url, Client(url, AGENT, load_key(path)) as client:
        assert recover_key_file(client, path) == "none"
        new = rotate_key_file(client, path)
        assert public_hex(load_key(path)) == new == client.agent_info()["public_key"]
        assert path.stat().st_mode & 0o777 == 0o600 and not pending_path(path).exists()
        # a .next the node never bound (a rotation cut before it was sent): removed
        save_key(new_key(), pending_path(path))
        assert recover_key_file(client, path) == "removed a rotation the node never applied"
        assert public_hex(load_key(path)) == new
        # a planted .next is never written through: the rotation refuses to start
        pending_path(path).symlink_to(tmp_path / "elsewhere")
        with pytest.raises(KeyFileError):
            rotate_key_file(client, path)
        pending_path(path).unlink()
        # a refused rotation (the agent revoked) removes its .next, the file is unchanged
        client.revoke_key()
        with pytest.raises(ClientError) as refused:
            rotate_key_file(client, path)
        assert refused.value.code == "key_revoked"
        assert not pending_path(path).exists() and public_hex(load_key(path)) == new
        # a .next whose key the node does not have, and a file whose key it does not have
        save_key(new_key(), pending_path(path))
        client.key = new_key()
        with pytest.raises(KeyFileError):
            recover_key_file(client, path)
