"""What an agent imports to talk to a node or a cluster (docs/service.md)."""
