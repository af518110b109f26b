"""The replicated node: the service's gate executed by PBFT replicas in separate processes.

docs/cluster.md describes the processes, the wire between them and the fault tests.

The API, re-exported here: the supervisor's ``create``, ``start_cluster``, ``Cluster``,
``cluster_status`` and ``down``; ``ClusterConfig`` and ``load_config`` (``config.load``);
the ``Front``; ``AuditError`` (the check itself is ``audit.audit``); the fault tests'
``FaultProxy``.  They load on first use (PEP 562): a replica process imports
``ostrom.cluster.replica_process`` and must not load the supervisor and the HTTP front
with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.cluster.app import ClusterApp
    from ostrom.cluster.audit import AuditError
    from ostrom.cluster.config import ClusterConfig, ConfigError, ReplicaConfig
    from ostrom.cluster.config import load as load_config
    from ostrom.cluster.front import Front
    from ostrom.cluster.proxy import FaultProxy
    from ostrom.cluster.replica_process import run_node
    from ostrom.cluster.supervisor import Cluster, cluster_status, create, down, start_cluster

__all__ = [
    "AuditError",
    "Cluster",
    "ClusterApp",
    "ClusterConfig",
    "ConfigError",
    "FaultProxy",
    "Front",
    "ReplicaConfig",
    "cluster_status",
    "create",
    "down",
    "load_config",
    "run_node",
    "start_cluster",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "Cluster": "ostrom.cluster.supervisor:Cluster",
    "create": "ostrom.cluster.supervisor:create",
    "start_cluster": "ostrom.cluster.supervisor:start_cluster",
    "cluster_status": "ostrom.cluster.supervisor:cluster_status",
    "down": "ostrom.cluster.supervisor:down",
    "ClusterConfig": "ostrom.cluster.config:ClusterConfig",
    "ReplicaConfig": "ostrom.cluster.config:ReplicaConfig",
    "ConfigError": "ostrom.cluster.config:ConfigError",
    "load_config": "ostrom.cluster.config:load",
    "ClusterApp": "ostrom.cluster.app:ClusterApp",
    "Front": "ostrom.cluster.front:Front",
    "AuditError": "ostrom.cluster.audit:AuditError",
    "FaultProxy": "ostrom.cluster.proxy:FaultProxy",
    "run_node": "ostrom.cluster.replica_process:run_node",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
