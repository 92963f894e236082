"""The one-node Slurm of the tests (tests/slurm_cluster.py): started, an sbatch job run to its
end, stopped with nothing left running. Seconds: munged, slurmctld and slurmd start in about one.
Skipped where the packages or root are lacking, failed instead under RUBRICLAB_REQUIRE_SLURM=1
(.ci/run sets it once it has installed them)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.slurm_cluster import SlurmCluster, missing


@pytest.fixture
def slurm_cluster():
    why = missing()
    if why:
        if os.environ.get("RUBRICLAB_REQUIRE_SLURM") == "1":
            pytest.fail(f"RUBRICLAB_REQUIRE_SLURM=1, but {why}")
        pytest.skip(why)
    cluster = SlurmCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_an_sbatch_job_runs_to_its_end_and_nothing_is_left(slurm_cluster, tmp_path):
    cluster = slurm_cluster
    out = tmp_path / "job.out"
    job = cluster.run("sbatch", "--parsable", "-o", str(out), "--wrap",
                      "echo ran on $SLURMD_NODENAME").stdout.strip()
    cluster.wait_for_empty_queue(30, {job})
    assert out.read_text().strip() == f"ran on {cluster.node}"
    # No accounting database: sacct fails, which the slurm profile must not rely on.
    sacct = cluster.run("sacct", check=False)
    assert sacct.returncode != 0 and "accounting storage is disabled" in sacct.stderr
    # A job still running when the cluster stops is cancelled and its processes are gone.
    sleeper = cluster.run("sbatch", "--parsable", "-o", str(tmp_path / "sleep.out"),
                          "--wrap", "sleep 600").stdout.strip()
    deadline = time.monotonic() + 30
    while cluster.run("squeue", "-h", "-j", sleeper, "-o", "%T").stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, "the sleeping job never started"
        time.sleep(0.2)
    assert cluster.leftover_pids()  # its slurmstepd and its script carry the cluster's conf
    daemons = [p.pid for p in cluster._daemons.values()]
    cluster.stop()
    assert cluster.leftover_pids() == []
    for pid in daemons:
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def _zombie(pid: int) -> bool:
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                           text=True).stdout.strip()
    return state.startswith("Z")


def test_two_clusters_do_not_share_ports(slurm_cluster):
    other = SlurmCluster()
    try:
        other.start()
        ports = [line for line in other.conf.read_text().splitlines() if "Port=" in line]
        assert not set(ports) & set(
            line for line in slurm_cluster.conf.read_text().splitlines() if "Port=" in line)
        assert other.run("sinfo", "-h", "-o", "%t").stdout.strip() == "idle"
    finally:
        other.stop()
