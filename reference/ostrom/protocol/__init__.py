"""The normative protocol core: sans-IO, deterministic, importing nothing outside itself.

Each module mirrors a TLA+ spec in ``spec/`` action for action (docs/design.md).
"""
