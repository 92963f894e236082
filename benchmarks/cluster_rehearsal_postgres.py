"""make rehearse-cluster against a PostgreSQL server started for it (benchmarks/README.md,
"Several hosts, one machine"): the throw-away server of the cache tests
(tests/llm/postgres_server.py: initdb into a temporary folder, a Unix socket there, as the
postgres user when root), one fresh database per check, stopped at the end.

    PYTHONPATH=src .venv/bin/python benchmarks/cluster_rehearsal_postgres.py \
        --workdir rehearsal-cluster-pg --cores 2 --data-mirror ../shared/data
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "llm"))

from postgres_server import PostgresServer, missing  # noqa: E402

from rubriclab.rehearsal.cluster import main  # noqa: E402


def run(argv: list[str]) -> int:
    why = missing()
    if why:
        print(f"no PostgreSQL server here: {why}", file=sys.stderr)
        return 1
    # Stopped on SIGTERM too (a SystemExit runs the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = PostgresServer().start()
    try:
        return main([*argv, "--cache", server.url()])
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
