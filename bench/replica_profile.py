"""One cluster replica under cProfile with a CPU-time clock (``bench/cluster.py``).

``python -m cProfile`` times with the wall clock, so on a shared machine a replica's
profile is mostly time spent waiting for a CPU or in ``epoll``; this runs
``replica_process.main`` with ``time.process_time`` as the profiler's clock and dumps
the stats when the replica stops (SIGTERM: its clean stop).

Usage: python -m replica_profile OUT.prof --cluster FILE --id I
"""

from __future__ import annotations

import cProfile
import sys
import time

from ostrom.cluster.replica_process import main

if __name__ == "__main__":
    out, argv = sys.argv[1], sys.argv[2:]
    prof = cProfile.Profile(time.process_time)
    code = 1
    try:
        code = prof.runcall(main, argv)
    finally:
        prof.dump_stats(out)
    sys.exit(code)
