"""Key rotation and revocation through a cluster's front (KEY-1, KEY-2): an ordered
command like any other, against a real cluster of four replica processes.

The front keeps each agent's registered key once f+1 replicas agree on it; after a
rotation the kept key is stale, and the front looks the key up again when a signature
fails under it (cluster/front.py: ``screened``).  Checked: the old key is refused
``key_retired``, the new one writes, a revocation signed by the retired key is ordered
and stops the new key (``key_revoked``), an operator's rotate_key gives the agent a key
again, and every replica ends with the same state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cluster_world import converge, founders_file
from ostrom.cluster.supervisor import Cluster, create
from ostrom.consensus.crypto import derive_key
from ostrom.service.identity import public_hex, sign_envelope
from service_world import OPERATOR, key

pytestmark = [pytest.mark.system, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("rotation")
    create(tmp / "c", n=4, seed=7, synchronous="OFF", founders_file=founders_file(tmp / "f"))
    c = Cluster(tmp / "c")
    try:
        c.start(timeout=90)
        yield c
    finally:
        c.stop()


def test_rotate_and_revoke_through_the_front(cluster: Cluster) -> None:
    c, cid = cluster, cluster.cfg.community
    k2, k3 = derive_key(b"rotation", "k2"), derive_key(b"rotation", "k3")
    seqs: dict[str, int] = {}

    def env(signer: Any, sender: str, command: dict[str, Any]) -> dict[str, Any]:
        seqs[sender] = seqs.get(sender, 0) + 1
        return sign_envelope(signer, sender, seqs[sender], command, community=cid)

    def prop(i: int) -> dict[str, Any]:
        return {"op": "propose", "agent": "f1", "artifact": f"r{i}", "slot": f"r{i}", "digest": "d"}

    with httpx.Client(timeout=60) as http:

        def post(body: dict[str, Any]) -> tuple[int, Any]:
            r = http.post(c.url + "/commands", json=body)
            return r.status_code, r.json().get("result", r.json().get("error"))

        assert post(env(key("f1"), "f1", prop(0))) == (200, "ok")  # the front keeps f1's key
        rotate = {"op": "rotate_key", "agent": "f1", "public_key": public_hex(k2)}
        assert post(env(key("f1"), "f1", rotate)) == (200, "ok")
        assert post(env(k2, "f1", prop(1))) == (200, "ok")  # the kept key was stale
        old = env(key("f1"), "f1", prop(2))
        seqs["f1"] -= 1
        assert post(old) == (403, "key_retired")
        revoke = {"op": "revoke_key", "agent": "f1"}
        assert post(env(key("f1"), "f1", revoke)) == (200, "ok")  # by the retired key
        assert post(env(k2, "f1", prop(3))) == (403, "key_revoked")
        seqs["f1"] -= 1
        rekey = {"op": "rotate_key", "agent": "f1", "public_key": public_hex(k3)}
        assert post(env(key(OPERATOR), OPERATOR, rekey)) == (200, "ok")
        assert post(env(k3, "f1", prop(4)))[0] == 200  # applied (the protocol's rate limit
        # may refuse a fourth proposal: the key is what is checked here)
        info = http.get(c.url + "/agents/f1", params={"consistent": 1}).json()
    assert info["public_key"] == public_hex(k3) and "revoked" not in info
    assert len(info["retired_keys"]) == 2
    converge(c, list(range(c.cfg.n)), 0)  # every replica at the same state
