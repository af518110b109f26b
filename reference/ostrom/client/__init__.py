"""What an agent imports to talk to a node or a cluster (docs/service.md)."""

from ostrom.client.client import Ballot, Client, ClientError

__all__ = ["Ballot", "Client", "ClientError"]
