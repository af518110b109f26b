"""Trace validation: an implementation's log checked against the TLA+ specs with TLC.

One module per traced layer.
"""
