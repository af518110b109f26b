"""Generated figures for the docs: the lifecycle diagram, reputation plots."""
