"""The node: the sans-IO ``Community`` behind signed commands, a durable log and HTTP.

docs/service.md describes what a node promises; the modules each do one job (identity and
signing, the gate that admits a signed command, the SQLite log, the ASGI app).
"""
