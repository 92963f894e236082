"""A throw-away one-node Slurm cluster for the tests: its own munged, slurmctld and slurmd on
127.0.0.1, from a slurm.conf written into a temporary folder (SLURM_CONF points at it; /etc is
not touched), stopped after with every job it ran.

What it does, as one would by hand (Debian's Slurm 22.05: `apt-get install slurmctld slurmd
slurm-client munge`; see /work/shared/DESIGN.md and docs/cluster.md, "A one-node Slurm as
tested"):

1. a munged of its own, as the `munge` user, on a socket in the folder (`munged -F --socket=...`,
   the package's /etc/munge/munge.key), which slurm.conf names (`AuthInfo=socket=...`): a munged
   the machine already runs is neither needed nor touched;
2. slurm.conf with the node's CPUs and RealMemory from `slurmd -C`, two free ports for
   SlurmctldPort and SlurmdPort (two clusters on one machine cannot collide), state, spool, log
   and pid files in the folder (the controller's owned by the `slurm` user, which slurmctld
   drops to), no accounting database (`AccountingStorageType=accounting_storage/none`);
3. slurmctld and slurmd (as root) in the foreground (-D) as children of this process, waiting (bounded)
   until `sinfo` shows the node idle;
4. an `srun` wrapper that sets SLURM_CONF again (`exported()` puts it first on PATH): the slurm
   executor's jobstep plugin removes SLURM_CONF from the environment of the srun it runs in
   each job, and without /etc/slurm/slurm.conf that srun finds no cluster;
5. on stop: every job cancelled (bounded wait for an empty queue), the daemons stopped by their
   pids (SIGTERM, a bounded wait, then SIGKILL), and any process still carrying this cluster's
   SLURM_CONF in its environment (a job's slurmstepd, its job script) killed by pid.

`missing()` says why no cluster can be started here (a binary, root, the munge or slurm user,
munge's key), so that the tests skip with that message, or fail where RUBRICLAB_REQUIRE_SLURM=1
says the machine must have one (as .ci/run does once it has installed the packages).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
COMMAND_TIMEOUT_S = 30.0
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "sbatch", "srun", "squeue", "scancel", "scontrol")
MUNGE_KEY = Path("/etc/munge/munge.key")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing() -> str | None:
    """Why no one-node cluster can be started here, or None."""
    lacking = [name for name in (*DAEMONS, *CLIENTS) if _binary(name) is None]
    if lacking:
        return (f"no Slurm/munge binaries {', '.join(lacking)} (install Debian's packages: "
                "apt-get install slurmctld slurmd slurm-client munge; .ci/run does)")
    if os.geteuid() != 0:
        return "not root: slurmd runs jobs as their users and must be started as root"
    for user in ("munge", "slurm"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            return f"there is no `{user}` user (the munge and slurm packages create them)"
    if not MUNGE_KEY.is_file():
        return f"munge's key {MUNGE_KEY} is missing (the munge package creates it)"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def node_hardware() -> dict[str, int]:
    """CPUs and RealMemory of this machine as slurmd sees them (`slurmd -C`)."""
    done = subprocess.run([_binary("slurmd") or "slurmd", "-C"], capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S, check=True)
    found = {key: int(value) for key, value in re.findall(r"\b(CPUs|RealMemory)=(\d+)",
                                                          done.stdout)}
    if set(found) != {"CPUs", "RealMemory"}:
        raise RuntimeError(f"`slurmd -C` did not give CPUs and RealMemory: {done.stdout!r}")
    return found


class SlurmCluster:
    """One node, one partition (`debug`, the default); `env()` reaches it."""

    def __init__(self, name: str = "rubriclab") -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rubriclab-slurm-"))
        self.conf = self.folder / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]
        self.name = name
        self.bin = self.folder / "bin"
        self._daemons: dict[str, subprocess.Popen] = {}
        self.started_s: float | None = None

    # --- clients ----------------------------------------------------------------------------

    def exported(self) -> dict[str, str]:
        """The variables that point Slurm's clients at this cluster: SLURM_CONF, and PATH with
        the folder of the srun wrapper first (see `_write_srun`)."""
        return {"SLURM_CONF": str(self.conf),
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        return {**(os.environ if base is None else base), **self.exported()}

    def run(self, *argv: str, timeout: float = COMMAND_TIMEOUT_S,
            check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        done = subprocess.run([_binary(argv[0]) or argv[0], *argv[1:]], capture_output=True,
                              text=True, timeout=timeout, env=self.env(),
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: "
                               f"{done.stderr.strip()} {self.logs()}")
        return done

    def queue(self) -> list[str]:
        """The ids of the jobs the controller still holds as pending or running."""
        done = self.run("squeue", "-h", "-o", "%i %T")
        return [line.split()[0] for line in done.stdout.splitlines()
                if line.split() and line.split()[1] in ("PENDING", "RUNNING", "CONFIGURING",
                                                        "COMPLETING", "SUSPENDED")]

    def wait_for_empty_queue(self, timeout_s: float, jobs: set[str] | None = None) -> float:
        """Seconds until none of `jobs` (default: any job) is pending or running; raises
        TimeoutError naming them past `timeout_s`."""
        started = time.monotonic()
        while True:
            left = [job for job in self.queue() if jobs is None or job in jobs]
            if not left:
                return time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(f"Slurm jobs {left} still in the queue after "
                                   f"{timeout_s:.0f} s")
            time.sleep(0.5)

    def logs(self) -> str:
        tails = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            for path in self.folder.rglob(name):
                tails.append(f"\n--- {path}:\n" + path.read_text(errors="replace")[-1500:])
        return "".join(tails)

    # --- start ------------------------------------------------------------------------------

    def _folders(self) -> dict[str, Path]:
        folders = {name: self.folder / name for name in ("munge", "ctld", "d")}
        os.chmod(self.folder, 0o755)  # the munge and slurm users reach their folders in it
        for name, path in folders.items():
            path.mkdir(mode=0o755)
        munge, slurm = pwd.getpwnam("munge"), pwd.getpwnam("slurm")
        os.chown(folders["munge"], munge.pw_uid, munge.pw_gid)
        # slurmctld drops to SlurmUser: its state, log and pid files are that user's.
        os.chown(folders["ctld"], slurm.pw_uid, slurm.pw_gid)
        return folders

    def _write_conf(self, folders: dict[str, Path]) -> None:
        hardware = node_hardware()
        ctld, d = folders["ctld"], folders["d"]
        self.conf.write_text("\n".join([
            f"ClusterName={self.name}",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=slurm",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={folders['munge'] / 'munge.socket'}",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            # No accounting database, as many small and test clusters run: `sacct` fails here.
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            # How long squeue shows a finished job (Slurm's default, written out): the slurm
            # executor reads job ends from squeue only where this is at least three times its
            # first status check's wait (snakemake_executor_plugin_slurm 2.8, __init__.py,
            # check_active_jobs: "Falling back to 'sacct'").
            "MinJobAge=300",
            f"StateSaveLocation={ctld / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={ctld / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={ctld / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'slurmd.log'}",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={hardware['CPUs']} "
            f"RealMemory={hardware['RealMemory']} State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            ""]))
        (ctld / "state").mkdir()
        os.chown(ctld / "state", pwd.getpwnam("slurm").pw_uid, pwd.getpwnam("slurm").pw_gid)
        (d / "spool").mkdir()

    def _write_srun(self) -> None:
        """An `srun` that sets SLURM_CONF again. Inside an sbatch job the slurm executor's
        jobstep plugin runs the rule through srun with every SLURM_* variable but the job's
        identity removed from its environment, SLURM_CONF among them
        (snakemake-executor-plugin-slurm-jobstep 0.6.1, __init__.py, run_job: `keep_slurm`);
        a cluster whose slurm.conf is at the default /etc/slurm/slurm.conf does not mind, this
        one (its conf in a temporary folder, /etc untouched) would fail every job with "srun:
        fatal: Could not establish a configuration source"."""
        self.bin.mkdir()
        srun = self.bin / "srun"
        srun.write_text(f"#!/bin/sh\nSLURM_CONF='{self.conf}' exec "
                        f"'{_binary('srun') or '/usr/bin/srun'}' \"$@\"\n")
        srun.chmod(0o755)

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> None:
        with open(self.folder / f"{name}.out", "w", encoding="utf-8") as log:
            self._daemons[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL, env=self.env(),
                                                   start_new_session=True, user=user,
                                                   group=user)

    def _wait(self, what: str, ready, deadline: float) -> None:
        while not ready():
            for name, process in self._daemons.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited {process.returncode} while waiting for "
                                       f"{what}: {self._outputs()} {self.logs()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} after {START_TIMEOUT_S:.0f} s: {self._outputs()}"
                                   f" {self.logs()}")
            time.sleep(0.2)

    def _outputs(self) -> str:
        return " ".join(f"[{p.name}: {p.read_text(errors='replace')[-800:]}]"
                        for p in sorted(self.folder.glob("*.out")))

    def start(self) -> SlurmCluster:
        why = missing()
        if why:
            raise RuntimeError(f"no one-node Slurm here: {why}")
        started = time.monotonic()
        deadline = started + START_TIMEOUT_S
        try:
            folders = self._folders()
            self._write_conf(folders)
            self._write_srun()
            munge = folders["munge"]
            self._spawn("munged", [_binary("munged") or "munged",
                                   "--foreground", f"--socket={munge / 'munge.socket'}",
                                   f"--pid-file={munge / 'munged.pid'}",
                                   f"--log-file={munge / 'munged.log'}",
                                   f"--seed-file={munge / 'munged.seed'}"], user="munge")
            self._wait("munged socket", (munge / "munge.socket").exists, deadline)
            self._spawn("slurmctld", [_binary("slurmctld") or "slurmctld", "-D", "-i",
                                      "-f", str(self.conf)])
            self._wait("slurmctld answering", lambda: self.run(
                "scontrol", "ping", check=False).stdout.count("UP") > 0, deadline)
            self._spawn("slurmd", [_binary("slurmd") or "slurmd", "-D", "-N", self.node,
                                   "-f", str(self.conf)])
            self._wait(f"node {self.node} idle", lambda: self.run(
                "sinfo", "-h", "-n", self.node, "-o", "%t", check=False).stdout.strip()
                == "idle", deadline)
        except BaseException:
            self.stop()
            raise
        self.started_s = round(time.monotonic() - started, 1)
        return self

    # --- stop -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Every job cancelled, the daemons stopped, nothing of this cluster left running."""
        if self._daemons.get("slurmctld") and self._daemons["slurmctld"].poll() is None:
            try:
                jobs = self.queue()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    self.wait_for_empty_queue(STOP_TIMEOUT_S)
            except (RuntimeError, TimeoutError, subprocess.TimeoutExpired):
                pass  # the processes are killed below whatever the controller says
        for name in ("slurmd", "slurmctld", "munged"):
            process = self._daemons.pop(name, None)
            if process is not None:
                _stop(process)
        for pid in self.leftover_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)

    def leftover_pids(self) -> list[int]:
        """Processes that carry this cluster's SLURM_CONF (its daemons' children, its jobs)."""
        marker = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if marker in environ.split(b"\0"):
                found.append(int(entry.name))
        return found

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop(process: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            process.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue
