"""The forgetting model: the Co-Forgetting paper's evaluation, against ground truth.

A knowledge base whose items carry a hidden value over time (useful, superseded, stale,
never useful); agents read items (reads drive decay), judge relevance with noise and cast
forget votes through the real orchestrator — or a baseline decides instead.  Modules, one
job each:

* ``config``     — what a run is: scenario (population), mechanism, ablations, governance;
* ``world``      — the generative model: topics, items and their labels, queries, reads;
* ``relevance``  — R, the protocol's lexical scorer against the recent queries;
* ``judges``     — what each agent votes (the protocol's agent side, with noise);
* ``mechanisms`` — the protocol on the orchestrator, and the five baselines;
* ``consensus``  — the same workload under PBFT with a faulty replica, and Algorithm 1;
* ``metrics``    — footprint, reduction, accuracy, precision, recall against the labels;
* ``run``        — one run; ``experiment`` and ``report`` — the experiment and its tables.
"""
