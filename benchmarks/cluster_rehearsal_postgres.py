"""make rehearse-cluster against a PostgreSQL server started for it (benchmarks/README.md,
"Several hosts, one machine"): the throw-away server of the cache tests
(tests/llm/postgres_server.py: initdb into a temporary folder, a Unix socket there, as the
postgres user when root), one fresh database per check, stopped at the end.

With `--profile slurm` (`make rehearse-cluster PROFILE=slurm`) it also starts a one-node Slurm
for the run (tests/slurm_cluster.py: munged, slurmctld and slurmd on 127.0.0.1 from a slurm.conf
in a temporary folder, no accounting database; root and Debian's slurmctld, slurmd,
slurm-client and munge packages needed), unless `--existing-slurm` says to use the one `sinfo`
reaches, and stops it at the end.

    PYTHONPATH=src .venv/bin/python benchmarks/cluster_rehearsal_postgres.py \
        --workdir rehearsal-cluster-pg --cores 2 --data-mirror ../shared/data [--profile slurm]
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "llm"))
sys.path.insert(0, str(REPO / "tests"))

from postgres_server import PostgresServer, missing  # noqa: E402
from slurm_cluster import SlurmCluster  # noqa: E402
from slurm_cluster import missing as slurm_missing  # noqa: E402

from rubriclab.rehearsal.cluster import main  # noqa: E402


def run(argv: list[str]) -> int:
    why = missing()
    if why:
        print(f"no PostgreSQL server here: {why}", file=sys.stderr)
        return 1
    slurm = "--profile" in argv and argv[argv.index("--profile") + 1:][:1] == ["slurm"]
    existing = "--existing-slurm" in argv
    argv = [arg for arg in argv if arg != "--existing-slurm"]
    if slurm and not existing and slurm_missing():
        print(f"no one-node Slurm here: {slurm_missing()}", file=sys.stderr)
        return 1
    # Stopped on SIGTERM too (a SystemExit runs the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with contextlib.ExitStack() as stack:
        server = PostgresServer()
        stack.callback(server.stop)
        server.start()
        if slurm and not existing:
            cluster = SlurmCluster()
            stack.callback(cluster.stop)
            cluster.start()
            print(f"one-node Slurm started in {cluster.started_s} s ({cluster.conf})",
                  file=sys.stderr)
            os.environ.update(cluster.exported())
        return main([*argv, "--cache", server.url()])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
