"""What the slurm rehearsal (rubriclab.rehearsal.slurm) calls a failure, on made-up runs: a
request paid twice, a table that differs, a bill unlike the server's count, a head killed with
no job to orphan."""

from __future__ import annotations

from rubriclab.rehearsal.slurm import problems


def _runs(tmp_path, **slurm):
    for name in ("one", "slurm"):
        (tmp_path / name / "figures").mkdir(parents=True)
        (tmp_path / name / "figures" / "t.csv").write_text("a\n1\n")
    one = {"run": "one machine", "outputs": str(tmp_path / "one"), "answers": 10,
           "distinct_requests": 10}
    run = {"run": "slurm", "outputs": str(tmp_path / "slurm"), "answers": 10,
           "distinct_requests": 10, "cost_report_calls": 10, "database_attempts": 10,
           "killed_after_answers": 3, "orphaned_jobs": 2, **slurm}
    return one, run


def test_a_run_that_holds_has_no_problems(tmp_path):
    assert problems(*_runs(tmp_path)) == []


def test_each_failure_is_named(tmp_path):
    one, slurm = _runs(tmp_path, answers=11, cost_report_calls=9, database_attempts=8,
                       orphaned_jobs=0)
    (tmp_path / "slurm" / "figures" / "t.csv").write_text("a\n2\n")
    assert problems(one, slurm) == [
        "slurm: 11 answers for 10 distinct requests",
        "slurm against one machine: figures/t.csv: differs",
        "slurm: the cost report bills 9 calls, the server answered 11",
        "slurm: the PostgreSQL ledger table holds 8 paid attempts, the server answered 11",
        "slurm: the head was killed with no sbatch job running"]
