"""The stand-in batch system of the cluster-generic profile: a job runs detached in an empty
folder of its own, and its status is read from its exit, not from the submitter."""

from __future__ import annotations

import time
from pathlib import Path

from rubriclab.rehearsal.hosts import cancel, status, submit


def _wait(job_id: str, spool: Path, bound: int = 600) -> str:
    for _ in range(bound):  # a bound on polls, not a timed assertion
        state = status(job_id, spool)
        if state != "running":
            return state
        time.sleep(0.05)
    return "running"


def test_a_job_runs_in_an_empty_folder_and_succeeds(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("ls -A > listing\npwd > where\n")
    job_id = submit(script, tmp_path / "spool")
    assert _wait(job_id, tmp_path / "spool") == "success"
    work = tmp_path / "spool" / job_id / "work"
    assert (work / "listing").read_text() in ("", "listing\n")
    assert Path((work / "where").read_text().strip()) == work.resolve()


def test_a_failing_job_is_failed_and_a_cancelled_one_too(tmp_path):
    failing = tmp_path / "fail.sh"
    failing.write_text("exit 3\n")
    assert _wait(submit(failing, tmp_path / "spool"), tmp_path / "spool") == "failed"
    slow = tmp_path / "slow.sh"
    slow.write_text("sleep 60\n")
    job_id = submit(slow, tmp_path / "spool")
    assert status(job_id, tmp_path / "spool") == "running"
    cancel([job_id], tmp_path / "spool")
    assert _wait(job_id, tmp_path / "spool") == "failed"


def test_the_jobscript_is_copied_at_submission(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("echo first > said\n")
    job_id = submit(script, tmp_path / "spool")
    script.write_text("echo second > said\n")
    assert _wait(job_id, tmp_path / "spool") == "success"
    assert (tmp_path / "spool" / job_id / "work" / "said").read_text() == "first\n"
