"""`make rehearse-cluster PROFILE=slurm` on a one-node Slurm (tests/slurm_cluster.py) and a
throw-away PostgreSQL cache: verify's calibration table and carry's Figure 2 through
profiles/slurm, the head killed once and started again, against one machine
(rubriclab.rehearsal.slurm). And the hang of issue 37: a head left to read job states with
sacct on a cluster without accounting is stopped by a bounded wait, with a message that says so.

Long lane: a few minutes. Skipped where Slurm, root or PostgreSQL are lacking; failed instead
under RUBRICLAB_REQUIRE_SLURM=1 / RUBRICLAB_REQUIRE_POSTGRES=1 (.ci/run)."""

from __future__ import annotations

import os
import time

import pytest

from rubriclab.rehearsal.cluster import cache_locations
from rubriclab.rehearsal.run import REPO, RehearsalFailed
from rubriclab.rehearsal.slurm import FAST_CHECKS, rehearse_slurm, slurm_run
from tests.llm.postgres_server import PostgresServer
from tests.llm.postgres_server import missing as postgres_missing
from tests.slurm_cluster import SlurmCluster
from tests.slurm_cluster import missing as slurm_missing

pytestmark = pytest.mark.long
CONFIGS = [REPO / "config" / "paper.yaml", REPO / "tests" / "rehearsal" / "reduced.yaml"]


def _needed(why: str | None, variable: str) -> None:
    if why:
        if os.environ.get(variable) == "1":
            pytest.fail(f"{variable}=1, but {why}")
        pytest.skip(why)


@pytest.fixture
def slurm_and_postgres(monkeypatch):
    _needed(slurm_missing(), "RUBRICLAB_REQUIRE_SLURM")
    _needed(postgres_missing(), "RUBRICLAB_REQUIRE_POSTGRES")
    cluster, server = SlurmCluster(), PostgresServer()
    try:
        server.start()
        cluster.start()
        for name, value in cluster.exported().items():
            monkeypatch.setenv(name, value)
        yield cluster, server
    finally:
        cluster.stop()
        server.stop()


def test_slurm_rehearsal_holds_with_its_head_killed(slurm_and_postgres, shared_data, tmp_path):
    cluster, server = slurm_and_postgres
    report = rehearse_slurm(CONFIGS, tmp_path, cache_locations(server.url(), tmp_path),
                            cores=2, data_mirror=str(shared_data), timeout_s=1500)
    one, slurm = report["runs"]
    assert report["problems"] == [], report
    assert one["answers"] > 0 and one["answers_per_request"] == 1.0, one
    # The head was killed with sbatch jobs in the queue, after part of the answers, and the
    # run started again finished.
    assert slurm["orphaned_jobs"] >= 1, slurm
    assert 0 < slurm["killed_after_answers"] < slurm["answers"], slurm
    assert slurm["sbatch_jobs_after_restart"] >= 1, slurm
    # One answer per distinct request at the server over both invocations.
    assert slurm["answers"] == slurm["distinct_requests"] == one["distinct_requests"], slurm
    assert slurm["answers_per_request"] == 1.0
    # The bill: the cost report's calls (ledgers and attempts journals) and the PostgreSQL
    # ledger table's paid attempts, against the server's answers.
    assert slurm["cost_report_calls"] == slurm["answers"], slurm
    assert slurm["database_attempts"] == slurm["answers"], slurm
    assert cluster.queue() == []


def test_a_head_reading_job_states_with_sacct_is_stopped_not_left_hanging(
        slurm_and_postgres, shared_data, tmp_path):
    """Without accounting, sacct never reports the job's end: the rehearsal stops the head
    after its bounded stall (or the profile's own check stops it first) and says why."""
    cluster, server = slurm_and_postgres
    started = time.monotonic()
    with pytest.raises(RehearsalFailed, match="(?i)sacct") as failed:
        slurm_run(CONFIGS, tmp_path, cache_locations(server.url(), tmp_path)("sacct"),
                  cores=2, data_mirror=str(shared_data), targets=("data/prepared/summedits.csv",),
                  kill_after_answers=None, timeout_s=600, stall_s=45,
                  overrides=("--slurm-status-command", "sacct", *FAST_CHECKS))
    assert time.monotonic() - started < 600
    assert cluster.queue() == []
    print(failed.value)
