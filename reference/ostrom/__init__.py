"""ostrom: a formally specified, model-checked governance protocol for shared knowledge bases.

The package is the Python reference implementation of the TLA+ specs in ``spec/``.
"""

__version__ = "0.1.0"
