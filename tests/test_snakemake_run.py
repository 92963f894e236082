"""tests/snakemake_run.py: a run past its bound takes its jobs with it and leaves no lock."""

import sys
import time
from pathlib import Path

import pytest

from .snakemake_run import DRY_RUN_BOUND_S, RunTimedOut, finish, run_snakemake, start, unlock_cmd

pytestmark = pytest.mark.pipeline

# One job that says it started (its pid) and then waits far past any bound the test sets.
SNAKEFILE = """
rule hang:
    output: "never"
    shell: "echo $$ > job.pid && exec sleep 3000"
"""


def alive(pid: int) -> bool:
    """Running, not a zombie that nothing has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def locks(folder: Path) -> list[Path]:
    found = folder / ".snakemake" / "locks"
    return list(found.iterdir()) if found.is_dir() else []


@pytest.mark.long
def test_a_run_past_its_bound_is_killed_with_its_jobs_and_its_folder_unlocked(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"),
           "-d", str(tmp_path), "--cores", "1"]
    process = start(cmd)
    pid_file = tmp_path / "job.pid"
    deadline = time.monotonic() + DRY_RUN_BOUND_S  # a bound on the event: the job started
    while not (pid_file.is_file() and pid_file.read_text().strip()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.05)
    job = int(pid_file.read_text())
    assert alive(job) and locks(tmp_path)

    with pytest.raises(RunTimedOut, match="killed with its jobs, its folder unlocked"):
        finish(process, bound_s=0.1)

    deadline = time.monotonic() + 60  # the kill is sent; its delivery is the kernel's
    while alive(job) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(job), "the job outlived the killed run"
    assert not locks(tmp_path)
    again = run_snakemake([*cmd, "-n"], bound_s=DRY_RUN_BOUND_S)
    assert again.returncode == 0, again.log_tail()
    assert "rule hang" in again.stdout  # planned again, not refused as locked


def test_the_unlock_keeps_the_folder_and_config_and_drops_a_dry_run_and_a_report():
    cmd = ["python", "-m", "snakemake", "-s", "Snakefile", "-d", "work", "-n",
           "--configfile", "a.yaml", "--report", "out.html", "--config", "x=1", "--", "target"]
    assert unlock_cmd(cmd) == ["python", "-m", "snakemake", "--unlock", "-s", "Snakefile",
                               "-d", "work", "--configfile", "a.yaml", "--config", "x=1", "--",
                               "target"]
