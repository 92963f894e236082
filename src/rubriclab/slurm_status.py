"""Whether the slurm executor can read its jobs' states on this cluster, checked before the first job.

The slurm executor plugin (snakemake-executor-plugin-slurm 2.8.0) learns that a job ended only
from its status command, `sacct` or `squeue`; when neither can tell it, the run waits forever
(issue 37). What the plugin does, read from its 2.8.0 source
(snakemake_executor_plugin_slurm/__init__.py, `Executor.check_active_jobs`, and
job_status_query.py):

- The command is `--slurm-status-command` (profiles/slurm sets `squeue`), else `sacct` where
  the command exists (`_get_status_command_default`).
- Chosen `squeue`, it still switches to `sacct` when `sacct` exists and `MinJobAge` is below
  3 x `--slurm-init-seconds-before-status-checks` (40 s by default: 120 s), or unreadable.
- `sacct` without an accounting database (`AccountingStorageType=accounting_storage/none`)
  fails ("Slurm accounting storage is disabled"); the plugin logs that at debug level only
  (`query_job_status`) and reports no job as ended.
- A job that `squeue` no longer lists (slurmctld forgets it `MinJobAge` seconds after it ends)
  is taken to be still running (`status_lookup_id is None: yield j`): squeue must list an
  ended job until the next poll. Polls come at most 180 s apart (`max_sleep_time`), and one
  query may take up to 60 s (`asyncio.wait_for(..., timeout=60)`), so `MinJobAge` must be at
  least 240 s (Slurm's default is 300 s: https://slurm.schedmd.com/slurm.conf.html#OPT_MinJobAge;
  Slurm 22.05 raises 0 to 2).

`status_problems` is pure, over `scontrol show config`'s text; `check_slurm_status` runs it on
the submitting host (the Snakefile's onstart, when the executor is slurm).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

# snakemake-executor-plugin-slurm 2.8.0, __init__.py, Executor.check_active_jobs.
PLUGIN_MAX_POLL_S = 180  # max_sleep_time between two status checks
PLUGIN_QUERY_TIMEOUT_S = 60  # job_status_query.query_job_status: wait_for(timeout=60)
PLUGIN_INIT_S = 40  # ExecutorSettings.init_seconds_before_status_checks default
NO_ACCOUNTING = "accounting_storage/none"
SCONTROL_TIMEOUT_S = 30


class SlurmStatusError(RuntimeError):
    """The slurm executor could not see this run's jobs end; the message says what to set."""


@dataclass(frozen=True)
class SlurmConfig:
    """What `scontrol show config` says about reading job states."""

    accounting: str  # AccountingStorageType, e.g. accounting_storage/none
    min_job_age_s: int | None  # MinJobAge in seconds (None: not reported)


def parse_show_config(text: str) -> SlurmConfig:
    """AccountingStorageType and MinJobAge from `scontrol show config`'s `Key = value` lines."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values.setdefault(key.strip(), value.strip())
    if "AccountingStorageType" not in values:
        raise ValueError("`scontrol show config` printed no AccountingStorageType line: is this "
                         "the output of Slurm's scontrol?")
    return SlurmConfig(accounting=values["AccountingStorageType"],
                       min_job_age_s=_seconds(values.get("MinJobAge")))


def _seconds(value: str | None) -> int | None:
    """`300 sec`, `1h`, `3600` as seconds (the units the plugin's get_min_job_age reads)."""
    if value is None:
        return None
    match = re.match(r"^(\d+)\s*([a-zA-Z]*)", value)
    if not match:
        raise ValueError(f"`scontrol show config`: MinJobAge {value!r} is not a number of seconds")
    number, unit = int(match.group(1)), match.group(2).lower()
    if unit in ("h", "hour", "hours"):
        return number * 3600
    if unit in ("min", "mins", "minute", "minutes"):
        return number * 60
    return number


def min_job_age_needed(init_s: int = PLUGIN_INIT_S) -> int:
    """The shortest MinJobAge at which `squeue` sees every job of the run end: the plugin's
    longest wait between polls plus one query, and never below the age at which the plugin
    itself falls back to `sacct` (3 x init_s)."""
    return max(PLUGIN_MAX_POLL_S + PLUGIN_QUERY_TIMEOUT_S, 3 * init_s)


def effective_command(chosen: str | None, config: SlurmConfig, *, sacct: bool, squeue: bool,
                      init_s: int = PLUGIN_INIT_S) -> str | None:
    """The command the plugin 2.8.0 will really poll with (check_active_jobs' fallbacks)."""
    command = chosen or ("sacct" if sacct else "squeue" if squeue else None)
    age = config.min_job_age_s
    if command == "squeue" and sacct and (age is None or age < 3 * init_s):
        command = "sacct"
    if command == "sacct" and not sacct:
        command = "squeue"
    return command


def status_problems(config: SlurmConfig, chosen: str | None, *, sacct: bool, squeue: bool,
                    init_s: int = PLUGIN_INIT_S) -> list[str]:
    """One line per reason the plugin could not see a job end, naming the setting and the fix."""
    command = effective_command(chosen, config, sacct=sacct, squeue=squeue, init_s=init_s)
    needed = min_job_age_needed(init_s)
    age = config.min_job_age_s
    age_text = "unreported" if age is None else f"{age} s"
    if not (sacct or squeue):
        return ["neither `sacct` nor `squeue` is on this host's PATH: the slurm executor polls "
                "one of them for job states; run from a host with Slurm's client commands "
                "(slurm-client)"]
    if command == "squeue" and not squeue:
        return ["`squeue` is not on this host's PATH: set `slurm-status-command: sacct` in the "
                "profile"]
    if command == "sacct" and config.accounting == NO_ACCOUNTING:
        if chosen == "squeue":
            return [f"AccountingStorageType is {NO_ACCOUNTING} (no accounting database) and "
                    f"MinJobAge is {age_text}, below {3 * init_s} s, so the slurm plugin "
                    "switches from squeue to sacct, which cannot read job states without "
                    f"accounting: ask your admin to set MinJobAge={needed} or more in "
                    "slurm.conf (the default is 300)"]
        return [f"AccountingStorageType is {NO_ACCOUNTING} (no accounting database), so "
                "`sacct` cannot read job states and the run would never see a job end: use "
                "`--slurm-status-command squeue` (profiles/slurm sets `slurm-status-command: "
                f"squeue`), with MinJobAge={needed} or more in slurm.conf"]
    if command == "squeue" and (age is None or age < needed):
        fix = ("set `slurm-status-command: sacct` in the profile (this cluster has accounting)"
               if config.accounting != NO_ACCOUNTING and sacct else
               f"ask your admin to set MinJobAge={needed} or more in slurm.conf")
        return [f"MinJobAge is {age_text}: slurmctld forgets an ended job after that long, but "
                f"the slurm plugin polls `squeue` as rarely as every {PLUGIN_MAX_POLL_S} s "
                f"(+ up to {PLUGIN_QUERY_TIMEOUT_S} s a query), so a job could end unseen and "
                f"the run wait forever: {fix}"]
    return []


def check_slurm_status(executor: str | None, settings: object,
                       run: Callable[[list[str]], str] | None = None,
                       which: Callable[[str], str | None] = shutil.which) -> None:
    """The Snakefile's onstart on the submitting host: raise SlurmStatusError, one line per
    problem, when the executor is `slurm` and its status command cannot read job states.
    `settings` is the executor's settings (`status_command`, `init_seconds_before_status_checks`);
    other executors are not checked."""
    if executor != "slurm":
        return
    if which("scontrol") is None:
        raise SlurmStatusError("the slurm executor: `scontrol` is not on this host's PATH; run "
                               "from a host with Slurm's client commands (slurm-client)")
    text = (run or _scontrol)(["scontrol", "show", "config"])
    config = parse_show_config(text)
    init_s = getattr(settings, "init_seconds_before_status_checks", None) or PLUGIN_INIT_S
    problems = status_problems(config, getattr(settings, "status_command", None),
                               sacct=which("sacct") is not None,
                               squeue=which("squeue") is not None, init_s=init_s)
    if problems:
        raise SlurmStatusError("the slurm executor cannot read job states on this cluster "
                               "(docs/cluster.md, 'Slurm with and without accounting'):\n"
                               + "\n".join(f"  {line}" for line in problems))


def _scontrol(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=SCONTROL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as err:
        raise SlurmStatusError(f"`{' '.join(command)}` gave no answer in {SCONTROL_TIMEOUT_S} s: "
                               "is slurmctld reachable from this host?") from err
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise SlurmStatusError(f"`{' '.join(command)}` failed ({done.returncode}): "
                               f"{said[-1] if said else 'no message'}; is this host a Slurm "
                               "submit host (its slurm.conf, or SLURM_CONF)?")
    return done.stdout

