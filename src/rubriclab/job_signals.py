"""Snakemake's SIGINT and SIGTERM passed on to the jobs it runs on this machine.

Snakemake itself, on SIGTERM (`kill`, a supervisor, a scheduler's time limit) or on SIGINT
sent to its process alone, schedules no new job but lets the running ones go on to their end:
a model job would make every one of its remaining paid calls first. Passed on as SIGTERM, the
signal makes each model job stop sending, store the answers of its calls in flight and end
(rubriclab.llm.stopping); Snakemake's own handling then goes on as before. Ctrl-C at a
terminal reaches the jobs directly (they are in its process group); the SIGTERM passed on
after it asks the same stop again, which a job ignores.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import psutil

# How Snakemake runs a `script:` job: python with a copy of the script under this folder.
SCRIPT_FOLDER = str(Path(".snakemake") / "scripts")


def script_jobs(parent: psutil.Process | None = None) -> list[psutil.Process]:
    """The running `script:` jobs among a process's descendants (this process's)."""
    parent = parent or psutil.Process()
    jobs = []
    for process in parent.children(recursive=True):
        try:
            if any(SCRIPT_FOLDER in part for part in process.cmdline()):
                jobs.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return jobs


def pass_stop_signals_to_jobs(say: Callable[[str], None]) -> None:
    """From now on, SIGINT and SIGTERM to this process are first sent on, as SIGTERM, to its
    running script jobs, then handled as before. Call it in the main thread, once the
    handlers to keep are in place (Snakemake's `onstart`, after its scheduler set its own)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _passing_on(sig, signal.getsignal(sig), say))


def _passing_on(sig: signal.Signals, previous, say: Callable[[str], None]):
    def handler(signum: int, frame) -> None:
        jobs = script_jobs()
        for job in jobs:
            try:
                job.send_signal(signal.SIGTERM)
            except psutil.NoSuchProcess:
                continue
        say(f"received {sig.name}: asked the {len(jobs)} running jobs to stop; each model "
            "job stores the answers of its calls in flight first (llm.stop_grace_s)")
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)
        # SIG_IGN: ignored, as before

    return handler
