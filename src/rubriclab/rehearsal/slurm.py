"""`make rehearse-cluster PROFILE=slurm`: part of the reduced rehearsal through profiles/slurm
on a real Slurm, its head killed once, against one machine.

Against the loopback model server (rubriclab.rehearsal.server), which counts every answer it
serves (what a provider bills), on a fresh cache (a PostgreSQL database every job reaches):

1. **one machine**: the targets with Snakemake's local executor (the default profile);
2. **slurm**: the same targets through `profiles/slurm/` (each job an sbatch job), on a cache
   of its own and a server of its own; once the server has answered `kill_after_answers`
   requests while sbatch jobs run, the head (snakemake and its local jobs) is killed with
   SIGKILL, as when the submitting host dies; its sbatch jobs go on. Once `squeue` shows none of
   them (a bounded wait, as docs/cluster.md says to do after a crash), the working folder is
   unlocked and the same command started again. It must finish; the server must have answered
   each distinct request once (answers / distinct requests = 1.000) over both invocations;
   every csv of the figures and results must equal the one-machine run's byte for byte; and
   the calls the cost report bills (rubriclab.llm.ledger: the ledgers and their attempts
   journals, and the PostgreSQL ledger table where the cache is there) must equal the
   server's answers.

Every wait is bounded. A head that stops making progress (nothing logged, none of its jobs in
the queue, for `stall_s`) is stopped and reported: the slurm executor plugin 2.8 reads job
states with `sacct` whenever that command exists, and on a cluster without an accounting
database it never sees a job end (issue 37).

The Slurm is whatever `sinfo` reaches (SLURM_CONF); benchmarks/cluster_rehearsal_postgres.py
`--profile slurm` starts a one-node one with a throw-away PostgreSQL (tests/slurm_cluster.py).
"""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from .invocations import (answer_counts, differing_tables, finish, fresh_server, run_command,
                          run_env, start)
from .run import REPO, RehearsalFailed, stop_group

SLURM_PROFILE = REPO / "profiles" / "slurm"
# Model jobs (two of them one group job of the `judge` group), jobs that call no model, and
# table rules that run on the submitting host: verify's calibration table and carry's Figure 2.
DEFAULT_TARGETS = ("figures/carry/fig2_checklist_length.csv",
                   "figures/verify/table_calibration.md")
# profiles/slurm as shipped reads job states with squeue (rubriclab.slurm_status). One setting of
# snakemake-executor-plugin-slurm 2.8 (its __init__.py, ExecutorSettings) is given on the
# command line: `init_seconds_before_status_checks`, 40 by default; the first status check
# waits that long and each check that sees no job end waits 10 s more (check_active_jobs). 5 s
# here keeps a rehearsal of short jobs short; a real cluster keeps the default.
FAST_CHECKS = ("--slurm-init-seconds-before-status-checks", "5")
COMMAND_TIMEOUT_S = 30.0
ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "RESIZING", "STAGE_OUT")


def queue(env: dict[str, str]) -> dict[str, str]:
    """This user's jobs the controller still holds as active: job id -> state."""
    try:
        done = subprocess.run(["squeue", "-h", "-u", getpass.getuser(), "-o", "%i %T"],
                              capture_output=True, text=True, env=env,
                              timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RehearsalFailed(f"squeue: {exc}") from exc
    if done.returncode != 0:
        raise RehearsalFailed(f"squeue exited {done.returncode}: {done.stderr.strip()}")
    jobs = dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) >= 2)
    return {job: state for job, state in jobs.items() if state in ACTIVE}


def wait_for_jobs(jobs: set[str], env: dict[str, str], deadline: float) -> float:
    """Seconds until `squeue` shows none of `jobs`; RehearsalFailed at the deadline."""
    started = time.monotonic()
    while left := set(queue(env)) & jobs:
        if time.monotonic() > deadline:
            raise RehearsalFailed(f"Slurm jobs {sorted(left)} still in the queue at the "
                                  "deadline")
        time.sleep(1.0)
    return round(time.monotonic() - started, 1)


def cancel(jobs: set[str], env: dict[str, str]) -> None:
    if jobs:
        subprocess.run(["scancel", *sorted(jobs)], capture_output=True, env=env,
                       timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)


class Head:
    """A snakemake head on the slurm profile, watched: ended, out of time, or stalled."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path, deadline: float,
                 stall_s: float, before: set[str]) -> None:
        self.command, self.env, self.log = command, env, log
        self.deadline, self.stall_s, self.before = deadline, stall_s, before
        self.jobs: set[str] = set()  # every sbatch job seen of this head
        self.process = start(command, env, log)
        self._busy_at, self._log_size = time.monotonic(), -1

    def ours(self) -> dict[str, str]:
        """The active jobs that were not in the queue before the rehearsal began."""
        found = {job: state for job, state in queue(self.env).items() if job not in self.before}
        self.jobs |= set(found)
        return found

    def check(self) -> bool:
        """True once the head has ended (RehearsalFailed where it failed); raises where it
        ran out of time or stalled."""
        code = self.process.poll()
        if code is not None:
            if code != 0:
                raise RehearsalFailed(f"the slurm run: snakemake exited {code}; the end of "
                                      f"{self.log}:\n" + self.log.read_text()[-3000:])
            return True
        now = time.monotonic()
        size = self.log.stat().st_size if self.log.exists() else 0
        if self.ours() or size != self._log_size:
            self._busy_at, self._log_size = now, size
        if now - self._busy_at > self.stall_s:
            self.stop()
            raise RehearsalFailed(
                f"the slurm run stalled: its head logged nothing for {self.stall_s:.0f} s while "
                "Slurm's queue held none of its jobs, so it does not see its jobs end. Is its "
                "status command sacct on a cluster without an accounting database (`sacct` "
                f"says: {_sacct_says(self.env)})? Give the slurm profile "
                f"`slurm-status-command: squeue`. The end of {self.log}:\n"
                + self.log.read_text()[-2000:])
        if now > self.deadline:
            self.stop()
            raise RehearsalFailed(f"the slurm run: still running at its deadline; see {self.log}")
        return False

    def wait(self) -> None:
        while not self.check():
            time.sleep(1.0)

    def kill(self) -> None:
        """SIGKILL to the head and its local jobs, as when the submitting host dies."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=COMMAND_TIMEOUT_S)

    def stop(self) -> None:
        if self.process.poll() is None:
            stop_group(self.process, grace_s=10.0)
        cancel(set(self.ours()), self.env)


def _sacct_says(env: dict[str, str]) -> str:
    try:
        done = subprocess.run(["sacct", "-n", "-X"], capture_output=True, text=True, env=env,
                              timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no answer ({exc})"
    return (done.stderr.strip() or "its job list") + f" (exit {done.returncode})"


def billed_calls(outputs: Path, cache: str) -> dict[str, Any]:
    """The calls the cost report bills for a run (rubriclab.llm.bill: this run's calls and
    every earlier process's, from the attempts journals and, with a PostgreSQL cache, the
    attempt rows of its ledger table), and those attempt rows alone."""
    from rubriclab.llm.bill import paid_attempts
    from rubriclab.llm.ledger import calls_per_distinct_request, database_ledger_rows, read_ledgers

    cache_url = cache if cache.startswith(("postgresql://", "postgres://")) else None
    paths = sorted((outputs / "results" / "ledger").glob("*.jsonl"))
    ledger, attempts = read_ledgers(paths), paid_attempts(paths, cache_url)
    made, distinct = calls_per_distinct_request(ledger, attempts, skip_fake=True)
    bill: dict[str, Any] = {"cost_report_calls": made, "cost_report_distinct": distinct}
    if cache_url is not None:
        bill["database_attempts"] = sum(1 for row in database_ledger_rows(cache_url)
                                        if row["attempt"])
    return bill


def one_machine(configfiles: list[Path], base: Path, cache: str, *, cores: int,
                data_mirror: str, targets: tuple[str, ...], timeout_s: float) -> dict[str, Any]:
    """The targets with the local executor, on a fresh server and cache."""
    workdir = base / "one-machine"
    with fresh_server() as server:
        command = run_command(configfiles, workdir, server, cores, data_mirror, None, targets)
        log = workdir / "snakemake.log"
        started = time.monotonic()
        finish(start(command, run_env(cache), log), log, "one machine", timeout_s)
        wall_s = time.monotonic() - started
        answers = answer_counts(server, workdir)
    return {"run": "one machine", "wall_s": round(wall_s, 1), "outputs": str(workdir),
            **answers}


def slurm_run(configfiles: list[Path], base: Path, cache: str, *, cores: int,
              data_mirror: str, targets: tuple[str, ...], kill_after_answers: int | None,
              timeout_s: float, stall_s: float,
              overrides: tuple[str, ...] = FAST_CHECKS) -> dict[str, Any]:
    """The targets through profiles/slurm, the head killed once after `kill_after_answers`
    answers (None: not killed) and started again once its jobs have left the queue."""
    workdir = base / "slurm"
    env = run_env(cache)
    report: dict[str, Any] = {"run": "slurm", "outputs": str(workdir),
                              "overrides": list(overrides)}
    with fresh_server() as server:
        command = run_command(configfiles, workdir, server, cores, data_mirror, SLURM_PROFILE,
                              targets, overrides)
        log = workdir / "snakemake.log"
        started = time.monotonic()
        deadline = started + timeout_s
        head = Head(command, env, log, deadline, stall_s, set(queue(env)))
        try:
            if kill_after_answers is not None:
                report.update(_kill_and_restart(head, server, kill_after_answers))
                head = Head(command, env, log, deadline, stall_s, head.before)
            head.wait()
        finally:
            head.stop()
        report["wall_s"] = round(time.monotonic() - started, 1)
        report["sbatch_jobs_after_restart" if kill_after_answers is not None
               else "sbatch_jobs"] = len(head.jobs)
        report.update(answer_counts(server, workdir))
    report.update(billed_calls(workdir, cache))
    return report


def _kill_and_restart(head: Head, server: Any, kill_after_answers: int) -> dict[str, Any]:
    while (server.stats_dict()["answers"] < kill_after_answers
           or "RUNNING" not in head.ours().values()):
        if head.check():
            raise RehearsalFailed(
                f"the slurm run ended before the server had answered {kill_after_answers} "
                f"requests with an sbatch job running (it answered "
                f"{server.stats_dict()['answers']}): give a smaller kill_after_answers")
        time.sleep(0.5)
    killed_at = server.stats_dict()["answers"]
    orphans = set(head.ours())
    head.kill()
    # Started again only once the killed head's jobs have ended, as after `squeue` shows none
    # of them (docs/cluster.md): a job still writing an output while the new head's job for
    # it starts would race it.
    waited = wait_for_jobs(orphans, head.env, head.deadline)
    # A killed Snakemake leaves its working folder locked: unlocked as a user would.
    subprocess.run([*head.command, "--unlock"], env=head.env, cwd=REPO, check=True,
                   timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {"killed_after_answers": killed_at, "sbatch_jobs_before_kill": len(head.jobs),
            "orphaned_jobs": len(orphans), "orphaned_jobs_waited_s": waited}


def rehearse_slurm(configfiles: list[Path], base: Path, cache_for: Any, *, cores: int,
                   data_mirror: str, targets: tuple[str, ...] = DEFAULT_TARGETS,
                   timeout_s: float = 1800, stall_s: float = 120,
                   kill_after_answers: int | None = None,
                   overrides: tuple[str, ...] = FAST_CHECKS) -> dict[str, Any]:
    """The checks; `cache_for(name)`: a fresh cache per run. The head is killed after
    `kill_after_answers` answers with an sbatch job running (default: the first answer, so
    during the first model job: the later model jobs are the restarted head's to submit)."""
    base.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"profile": "slurm", "cache": cache_for("kind"),
                              "targets": list(targets), "runs": []}
    one = one_machine(configfiles, base, cache_for("one-machine"), cores=cores,
                      data_mirror=data_mirror, targets=targets, timeout_s=timeout_s)
    report["runs"].append(one)
    slurm = slurm_run(configfiles, base, cache_for("slurm"), cores=cores,
                      data_mirror=data_mirror, targets=targets,
                      kill_after_answers=kill_after_answers or 1,
                      timeout_s=timeout_s, stall_s=stall_s, overrides=overrides)
    report["runs"].append(slurm)
    report["problems"] = problems(one, slurm)
    return report


def problems(one: dict[str, Any], slurm: dict[str, Any]) -> list[str]:
    found = [f"{run['run']}: {run['answers']} answers for {run['distinct_requests']} distinct "
             "requests" for run in (one, slurm) if run["answers"] != run["distinct_requests"]]
    found += [f"slurm against one machine: {p}"
              for p in differing_tables(Path(one["outputs"]), Path(slurm["outputs"]))]
    if slurm["cost_report_calls"] != slurm["answers"]:
        found.append(f"slurm: the cost report bills {slurm['cost_report_calls']} calls, the "
                     f"server answered {slurm['answers']}")
    if slurm.get("database_attempts", slurm["answers"]) != slurm["answers"]:
        found.append(f"slurm: the PostgreSQL ledger table holds {slurm['database_attempts']} "
                     f"paid attempts, the server answered {slurm['answers']}")
    if "killed_after_answers" in slurm and not slurm["orphaned_jobs"]:
        found.append("slurm: the head was killed with no sbatch job running")
    return found
