"""The replicated node: the service's gate executed by PBFT replicas in separate processes.

docs/cluster.md describes the processes, the wire between them and the fault tests.
"""
