"""The generators of the conformance vectors, one family per module."""
