"""The node: the sans-IO ``Community`` behind signed commands, a durable log and HTTP.

docs/service.md describes what a node promises.  One job per module: ``identity``
(envelopes, Ed25519, key files), ``gate`` (admitting a signed command; the error table),
``store`` (the SQLite log), ``snapshot`` (the whole state as JSON), ``node`` (the write
path, retries, rollback, the event fan-out), ``openapi`` (the route table and the OpenAPI
document), ``app`` (the Starlette app), ``founders`` (the founders file), ``export``
(the log as a trace).  Only ``app`` needs the web stack (the ``service`` extra).
"""
