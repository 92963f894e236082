"""A named run built on another (`base_run:`): the jobs it shares with that run are not run again.

An ablation (`run: reviser-b`, `base_run: baseline`, the reviser swapped) changes a few jobs of
the baseline; the rest would make the same files again. Before Snakemake schedules the named
run, its workflow is loaded, with the run's own config, in the base run's folder, and Snakemake
is asked which jobs are up to date there (its own rerun triggers: outputs present and newer than
their inputs, same rule code, params, input files and software environment, nothing left
incomplete). Those jobs' outputs, logs and metadata records are copied into the run's folder,
so the run's own DAG finds them up to date and runs only the jobs the change touches.

The loading happens in a child process (`python -m rubriclab.reuse`), since a Snakemake workflow
cannot load a second one in the middle of its own parsing. `RUBRICLAB_EVALUATE_RUN_IN` tells the
child's common.smk to work in the base folder (rubriclab.runs.enter_named_run) and not to reuse
again. A job whose params mention the run's name (the effective config) never matches, and a
file already in the run's folder is never replaced.

A copied ledger keeps its rows, each marked as a cache hit that made no call: the run's answers
for that stage came from the base run, which paid for them (its own cost report says so).

What was copied is recorded in the run's folder (`COPIED_RECORD`: each file and its time stamp),
so the report marks the figures and tables that are the base run's (`copied_from_base`). A dry
run (`snakemake -n`) copies nothing and writes nothing: it says how many jobs a real run would
copy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from .runs import EVALUATE_IN_VARIABLE

# Loading even the paper-scale workflow and copying its outputs takes seconds.
CHILD_TIMEOUT_S = 900
# In the named run's folder: the files copied from its base run, with their time stamps.
COPIED_RECORD = "logs/base_run_copied.json"


@dataclass
class Reuse:
    """What was copied from the base run into the named run's folder."""

    base: str
    jobs: int = 0                 # jobs of the run's DAG (rule `all` aside)
    reused: list[str] = field(default_factory=list)   # "rule: first output" of each copied job
    already_there: int = 0        # up to date in the base, but the run has its own outputs
    to_run: int = 0               # not up to date in the base under this config
    dry: bool = False             # a dry run: nothing copied
    # each copied output (relative to the run's folder) -> its modification time in ns
    copied_files: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        if self.dry:
            return (f"base_run {self.base} (dry run: nothing is copied): of this config's "
                    f"{self.jobs} jobs, {len(self.reused)} are up to date there and a real run "
                    f"copies them here, {self.to_run} are to run (missing there or changed)"
                    + (f", {self.already_there} have their outputs here already"
                       if self.already_there else "")
                    + "; the dry run's job list below counts the ones to copy as to run")
        return (f"base_run {self.base}: of this config's {self.jobs} jobs, {len(self.reused)} "
                f"were up to date there and are copied here, {self.to_run} are to run (missing "
                "there or changed)" + (f", {self.already_there} had their outputs here already"
                                       if self.already_there else ""))


def reuse_base_run(snakefile: str | Path, config: Mapping[str, Any], launch_dir: str | Path,
                   base: Path, into: Path, dry: bool = False) -> Reuse:
    """Copy into `into` every job of this config's workflow that is up to date in `base`
    (the parent side: the child process does the work and reports what it copied), and
    record the copies there; `dry`: count them, copy and write nothing."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False,
                                     prefix=".base_run-config-") as fh:
        yaml.safe_dump(dict(config), fh, sort_keys=False)
        configfile = fh.name
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rubriclab.reuse", "--snakefile", str(snakefile),
             "--configfile", configfile, "--base", str(base), "--into", str(into),
             *(["--dry"] if dry else [])],
            cwd=launch_dir, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
            env={**os.environ, EVALUATE_IN_VARIABLE: str(base)})
    finally:
        os.unlink(configfile)
    if done.returncode != 0:
        raise RuntimeError(f"config key 'base_run': reading which jobs are up to date in {base} "
                           f"failed:\n{(done.stderr or done.stdout)[-4000:]}")
    reuse = Reuse(**json.loads(done.stdout.strip().splitlines()[-1]))
    if reuse.copied_files:
        record_copies(into, str(config.get("base_run")), reuse.copied_files)
    return reuse


def record_copies(into: Path, base_name: str, files: Mapping[str, int]) -> Path:
    """Add copied files to the run's record of them (COPIED_RECORD); earlier copies stay."""
    path = into / COPIED_RECORD
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    record.setdefault("files", {}).update(
        {name: {"base_run": base_name, "mtime_ns": mtime} for name, mtime in files.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def copied_from_base(path: str | Path, run_dir: str | Path = ".") -> str | None:
    """The base run a file of the run's folder was copied from, or None: never copied, or
    made again since (its time stamp is no longer the copy's)."""
    record_path = Path(run_dir) / COPIED_RECORD
    if not record_path.is_file():
        return None
    entry = json.loads(record_path.read_text(encoding="utf-8")).get("files", {}).get(str(path))
    target = Path(run_dir) / path
    if entry is None or not target.exists() or target.stat().st_mtime_ns != entry["mtime_ns"]:
        return None
    return entry["base_run"]


def copy_up_to_date_jobs(workflow: Any, base: Path, into: Path, dry: bool = False) -> Reuse:
    """The child side: `workflow` is Snakemake's, loaded in `base` with its DAG built.
    `dry`: find the jobs to copy, copy nothing."""
    from snakemake.persistence.file import FilePersistence

    from .plan.dag import all_jobs_in_order

    persistence = workflow.persistence
    if not isinstance(persistence, FilePersistence):
        raise RuntimeError("config key 'base_run' reads Snakemake's metadata from its default "
                           f"file store; this run uses {type(persistence).__name__}")
    dag = workflow.dag
    to_run = set(dag.needrun_jobs())
    target = None if dry else FilePersistence(nolock=True, path=into / ".snakemake")
    reuse = Reuse(base=str(base), dry=dry)
    for job in all_jobs_in_order(dag):
        if not job.output:  # the target rule
            continue
        reuse.jobs += 1
        keys = [persistence._get_key(f) for f in job.output]
        records = [persistence.metadata(f) for f in job.output]
        # A job Snakemake would not run whose metadata is missing or too old to hold its
        # params is not known to match: it runs again.
        if (job in to_run or persistence._filter_incomplete_keys(keys)
                or any(r is None or (r.record_format_version or 0) < 6 for r in records)):
            reuse.to_run += 1
            continue
        if any((into / str(f)).exists() for f in job.output):
            reuse.already_there += 1
            continue
        reuse.reused.append(f"{job.rule.name}: {job.output[0]}")
        if target is None:  # a dry run
            continue
        benchmark = [str(job.benchmark)] if job.benchmark else []
        for path in [*map(str, job.output), *map(str, job.log), *benchmark]:
            _copy(base / path, into / path)
        for name, path in job.output.items():
            if name == "ledger":
                mark_ledger_reused(into / str(path))
        for key, record in zip(keys, records):
            target._write_record(key, record)
        for f in job.output:
            reuse.copied_files[str(f)] = (into / str(f)).stat().st_mtime_ns
    return reuse


def _copy(source: Path, destination: Path) -> None:
    if not source.exists():  # a log the job did not write
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, destination, copy_function=shutil.copy2)
    else:
        shutil.copy2(source, destination)


def mark_ledger_reused(path: Path) -> None:
    """Rows of a ledger copied from the base run: every request answered without a call in
    this run (the base run made, and paid for, the calls). The file keeps its time stamp, so
    the jobs after it stay up to date."""
    stat = path.stat()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    text = "".join(json.dumps({**row, "cached": True, "attempts": 0}) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rubriclab.reuse", description=__doc__)
    parser.add_argument("--snakefile", required=True)
    parser.add_argument("--configfile", required=True)
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--into", required=True, type=Path)
    parser.add_argument("--dry", action="store_true", help="count the jobs to copy, copy none")
    args = parser.parse_args(argv)
    if os.environ.get(EVALUATE_IN_VARIABLE) != str(args.base):
        parser.error(f"{EVALUATE_IN_VARIABLE} must name the base folder (rubriclab.reuse sets it)")
    from .plan.dag import built_dag

    with built_dag(Path(args.snakefile), [Path(args.configfile).resolve()], {}) as workflow:
        reuse = copy_up_to_date_jobs(workflow, args.base.resolve(), args.into.resolve(),
                                     dry=args.dry)
    print(json.dumps(asdict(reuse)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
