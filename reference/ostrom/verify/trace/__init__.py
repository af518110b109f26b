"""Trace validation: an implementation's log checked against the TLA+ specs with TLC.

``validate`` is ``ostrom validate-trace`` (the header's layer picks the module); ``log``
reads and writes trace logs; ``tlc`` runs TLC and collects the trace specs' prints;
``verdict`` holds the verdicts and the frame every layer runs its batches through; one
compiler per traced layer: ``lifecycle`` (lifecycle and community logs, run and explained
by ``lifecycle_check``, with ``regvar`` deriving the spec copy they extend), ``sanctions``,
``pbft``.  Nothing here imports ``ostrom.conformance``.
"""
