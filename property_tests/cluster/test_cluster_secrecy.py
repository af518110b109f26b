"""CR-1 in the cluster (docs/security.md, "secrecy of votes"): what an early reveal sent
to a real cluster exposes, and to whom.

No output path of the cluster shows a command: the front answers a refused reveal with
its result and events only, ``cluster status`` with counts and digests.  Every replica,
a Byzantine one included, sees the reveal in full, because it must execute it; and every
honest replica keeps it in its store, because its history is what a restart replays and
what the checkpoints' digests and the certificates bind (a redacted copy would not
replay, nor verify).  The test shows both: nothing in the answers, the reveal in every
store.  The defence against the second is the agents': an honest agent never reveals
before the reveal phase (agent/ballots.py: ``plan``).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from cluster_world import founders_file
from ostrom.cluster.supervisor import Cluster, cluster_status, create, front_status
from service_world import SALT, SECRET_REASON, Signer, commit_phase

#: a cluster and a ballot (about 10 s): it changes nothing that a fix could break, it
#: shows what the cluster exposes (docs/security.md), so it runs with make test-slow
pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_an_early_reveal_is_in_no_answer_and_in_every_store(tmp_path: Path) -> None:
    d = tmp_path / "c"
    cfg = create(d, n=4, seed=4, synchronous="OFF", founders_file=founders_file(tmp_path / "f"))
    cluster = Cluster(d)
    try:
        cluster.start(timeout=60)
        answers = []
        with httpx.Client(timeout=60) as http:
            for env in commit_phase(Signer(cfg.community)):  # ENV-1: the cluster's
                r = http.post(cluster.url + "/commands", json=env)
                assert r.status_code == 200, r.text
                answers.append(r.text)
        assert json.loads(answers[-1])["result"] == "wrong_phase"  # the early reveal
        shown = [*answers, json.dumps(front_status(cfg)), json.dumps(cluster_status(cfg))]
        for text in shown:
            assert SECRET_REASON not in text and SALT not in text, text
    finally:
        cluster.stop()
    for replica in cfg.replicas:
        stored = b"".join(p.read_bytes() for p in d.glob(replica.db.name + "*"))  # and WAL
        assert SECRET_REASON.encode() in stored, f"r{replica.id} does not keep it"
