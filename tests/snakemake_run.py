"""Snakemake as a subprocess in the tests, bounded without poisoning what comes after.

A run is started in a session of its own, so a run past its bound is killed with every job it
started (not only the snakemake process), and its directory lock is taken off with
`snakemake --unlock`: a later run of the same folder is not refused as locked. A run past its
bound raises `RunTimedOut`, an AssertionError whose message has the run's log tail.
"""

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

# Bounds on an event (the run ends), not guesses of how long it takes: tests/pipeline's shared
# run took 83 s on a quiet 2-core machine and 173 s with four busy processes beside it, and a
# machine at load 20-30 is slower again by a factor no calibration taken once foresees (the load
# changes during the session). These only stop a run that hangs. CI stops its whole job after
# 90 minutes: a run that hangs still fails its own test, with its log, before CI stops the job
# without one. A dry run or a plan parses the workflow and forms the DAG (seconds) but no job.
RUN_BOUND_S = 3600.0
DRY_RUN_BOUND_S = 1200.0

LOG_TAIL_CHARS = 4000


class RunTimedOut(AssertionError):
    """A snakemake run went past its bound; it was killed with its jobs and unlocked."""


class SnakemakeRun(subprocess.CompletedProcess):
    """A finished run: CompletedProcess's fields, and how long it took."""

    def __init__(self, args, returncode: int, stdout: str, stderr: str, seconds: float):
        super().__init__(args, returncode, stdout, stderr)
        self.seconds = seconds

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        return self.stderr[-chars:]

    def failure(self) -> str:
        return (f"snakemake failed ({self.returncode}) after {self.seconds:.0f} s:\n"
                f"{self.log_tail()}")


def start(cmd: Sequence[str], *, cwd: Path | None = None, env: dict | None = None,
          stdout=subprocess.PIPE, stderr=subprocess.PIPE) -> subprocess.Popen:
    """Start `cmd` in a session (and process group) of its own."""
    process = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=stdout, stderr=stderr,
                               text=True, start_new_session=True)
    process.launched_in = (cwd, env)  # for the --unlock after a kill
    return process


def finish(process: subprocess.Popen, *, bound_s: float = RUN_BOUND_S,
           started: float | None = None) -> SnakemakeRun:
    """Wait up to `bound_s` for a process from `start`. Past it (or on Ctrl-C in the test) the
    whole group is killed, the folder unlocked, and RunTimedOut names the run with its log."""
    started = time.monotonic() if started is None else started
    try:
        stdout, stderr = process.communicate(timeout=bound_s)
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = output_after_kill(process)
        unlocked = unlock(process)
        raise RunTimedOut(
            f"snakemake ran past its bound of {bound_s:.0f} s; killed with its jobs, "
            f"{unlocked}:\n{' '.join(map(str, process.args))}\n"
            f"{(stderr or '')[-LOG_TAIL_CHARS:]}") from None
    except BaseException:
        kill_group(process)
        output_after_kill(process)
        unlock(process)
        raise
    return SnakemakeRun(process.args, process.returncode, stdout or "", stderr or "",
                        time.monotonic() - started)


def run_snakemake(cmd: Sequence[str], *, cwd: Path | None = None, env: dict | None = None,
                  bound_s: float = RUN_BOUND_S) -> SnakemakeRun:
    """subprocess.run(cmd, capture_output=True, text=True), bounded as the module says."""
    started = time.monotonic()
    process = start(cmd, cwd=cwd, env=env)
    return finish(process, bound_s=bound_s, started=started)


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group ended on its own


def output_after_kill(process: subprocess.Popen) -> tuple[str, str]:
    """What the killed run wrote. A process that left the group (a session of its own) can
    still hold the pipes open: then the output is given up after a bound, not waited for."""
    try:
        return process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.wait()
        return "", "(no output: a process outside the run's group holds its pipes open)"


def unlock_cmd(cmd: Sequence[str]) -> list[str]:
    """The same snakemake command (Snakefile, folder, config) with --unlock in front of the
    rest; a dry run's -n and a report's --report are left out."""
    cmd = [str(part) for part in cmd]
    at = cmd.index("snakemake") + 1
    rest, kept, skip = cmd[at:], [], False
    for part in rest:
        if skip:
            skip = False
        elif part in ("-n", "--dry-run", "--dryrun"):
            pass
        elif part == "--report":
            skip = True
        else:
            kept.append(part)
    return [*cmd[:at], "--unlock", *kept]


def unlock(process: subprocess.Popen) -> str:
    """Take a killed run's lock off its folder; says how that went, for the failure message."""
    cwd, env = process.launched_in
    try:
        done = subprocess.run(unlock_cmd(process.args), cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=DRY_RUN_BOUND_S)
    except subprocess.TimeoutExpired:
        return f"and `snakemake --unlock` itself ran past {DRY_RUN_BOUND_S:.0f} s"
    if done.returncode != 0:
        return f"but `snakemake --unlock` failed ({done.returncode}): {done.stderr[-1000:]}"
    return "its folder unlocked"
