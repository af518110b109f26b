"""Verification tools: TLC and its output, trace validation per layer, the Z3 threshold
theorems, the property registry. Imports the protocol and consensus, never conformance.
"""
