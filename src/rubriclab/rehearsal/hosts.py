"""A stand-in batch system for the cluster-generic profile: each job a separate process.

`profiles/cluster-generic/` submits every job with `python -m rubriclab.rehearsal.hosts submit
<jobscript>`, asks after it with `status <id>` and cancels with `cancel <id>...`, the three
commands a site's own scheduler (qsub/qstat/qdel, ssh to a host, ...) would take. A job runs in
an empty folder of its own under the spool (`RUBRICLAB_HOSTS_SPOOL`), detached from the
Snakemake that submitted it, as on another host: it sees no file of the run's working folder,
only what Snakemake's storage plugin copies in and out, the call cache and the model server.
The spool holds, per job, the jobscript copied at submission (as sbatch copies it), the job's
output (`log`), its process id and, once it ends, its exit status (`exit`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from rubriclab.processes import process_running

SPOOL_VARIABLE = "RUBRICLAB_HOSTS_SPOOL"


def spool_dir() -> Path:
    value = os.environ.get(SPOOL_VARIABLE)
    if not value:
        raise SystemExit(f"{SPOOL_VARIABLE} is not set: the folder where the stand-in "
                         "scheduler keeps its jobs (profiles/cluster-generic/, docs/cluster.md)")
    return Path(value)


def submit(jobscript: Path, spool: Path) -> str:
    """Start `jobscript` in a new empty folder, detached; returns the job id."""
    if not jobscript.is_file():
        raise SystemExit(f"hosts submit: no jobscript at {jobscript}")
    job_id = uuid.uuid4().hex[:12]
    job = spool / job_id
    (job / "work").mkdir(parents=True)
    script = job / "jobscript.sh"
    shutil.copyfile(jobscript, script)
    # The exit status is written by the shell that ran the job, whatever the job did; a
    # status of a job killed with its shell is read from its missing process instead.
    runner = (f'cd {_q(job / "work")} && sh {_q(script)} > {_q(job / "log")} 2>&1; '
              f'echo $? > {_q(job / "exit.part")} && mv {_q(job / "exit.part")} {_q(job / "exit")}')
    process = subprocess.Popen(["sh", "-c", runner], start_new_session=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    (job / "pid").write_text(str(process.pid))
    return job_id


def status(job_id: str, spool: Path) -> str:
    """The state of a job as cluster-generic's status command answers: success, failed or
    running."""
    job = spool / job_id
    if not (job / "pid").is_file():
        raise SystemExit(f"hosts status: no job {job_id!r} in {spool}")
    exit_file = job / "exit"
    if exit_file.is_file():
        return "success" if exit_file.read_text().strip() == "0" else "failed"
    if process_running(int((job / "pid").read_text())):
        return "running"
    # Ended without writing its status (killed with its shell): read it once more, as the
    # shell may have written it after the check above.
    if exit_file.is_file():
        return "success" if exit_file.read_text().strip() == "0" else "failed"
    return "failed"


def cancel(job_ids: list[str], spool: Path) -> None:
    for job_id in job_ids:
        pid_file = spool / job_id / "pid"
        if pid_file.is_file():
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass


def _q(path: Path) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rubriclab.rehearsal.hosts",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("submit").add_argument("jobscript", type=Path)
    sub.add_parser("status").add_argument("job_id")
    sub.add_parser("cancel").add_argument("job_ids", nargs="+")
    args = parser.parse_args(argv)
    spool = spool_dir()
    if args.command == "submit":
        print(submit(args.jobscript, spool))
    elif args.command == "status":
        print(status(args.job_id, spool))
    else:
        cancel(args.job_ids, spool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
