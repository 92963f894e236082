"""The jobs a config makes, read from Snakemake's own DAG, so a plan follows the rules exactly.

A model job is one whose params name its `calls` (every rule that calls a model does, see
workflow/rules/common.smk `call_settings`). Jobs that call no model and depend on none (fetching
and preparing the data, the Recon environments, the HealthBench sample) are run for real before
planning; everything after them is planned.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class PlannedJob:
    """One job of the DAG: its rule, wildcards, params and files (Snakemake's own objects)."""

    index: int
    rule: str
    wildcards: Any
    params: Any
    input: Any
    output: Any
    log: Any
    resources: Any
    script: Path | None
    needs: tuple[int, ...]
    # False when Snakemake would not run it: its outputs exist and are up to date.
    needs_run: bool = True

    @property
    def calls_model(self) -> bool:
        return "calls" in self.params.keys()


@dataclass
class Workflow:
    jobs: list[PlannedJob]   # in an order where every job comes after the jobs it needs
    config: dict[str, Any]   # the validated config the rules and scripts see
    workdir: Path            # where the jobs run: runs/<name>/ for a named run
    launch_dir: Path | None = None  # where snakemake is started (-d)

    def model_free_prefix(self) -> list[PlannedJob]:
        """Jobs that call no model, need no job that does (directly or not), and that some
        model job needs (directly or not): what the prompts are rendered from."""
        free: dict[int, bool] = {}
        for job in self.jobs:
            free[job.index] = not job.calls_model and all(free[n] for n in job.needs)
        feeding: set[int] = set()
        for job in reversed(self.jobs):
            if job.calls_model or job.index in feeding:
                feeding.update(job.needs)
        return [job for job in self.jobs if free[job.index] and job.index in feeding]


def load_workflow(snakefile: Path, workdir: Path, configfiles: Iterable[Path],
                  config: Mapping[str, Any], targets: Iterable[str] = ()) -> Workflow:
    """Build the DAG of `targets` (default: the default target) in-process, nothing run."""
    snakefile = Path(snakefile).resolve()
    configfiles = [Path(p).resolve() for p in configfiles]
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    launched_in = Path.cwd()
    # Started in the run's folder as `snakemake` is (not with a workdir, which a named run
    # would refuse beside its own folder).
    os.chdir(workdir)
    try:
        return _load(snakefile, workdir, configfiles, config, targets)
    finally:
        os.chdir(launched_in)


@contextlib.contextmanager
def built_dag(snakefile: Path, configfiles: Iterable[Path], config: Mapping[str, Any],
              targets: Iterable[str] = ()):
    """Snakemake's own workflow object with its DAG of `targets` built, nothing run, in the
    current directory (a named run's `workdir:` moves it into runs/<name>/)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings, DAGSettings, OutputSettings, ResourceSettings, StorageSettings,
    )

    with contextlib.redirect_stderr(io.StringIO()), \
            SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=list(configfiles),
                                           config=dict(config)),
            storage_settings=StorageSettings(),
            snakefile=Path(snakefile).resolve(),
        )
        dag_api = workflow_api.dag(DAGSettings(targets=set(targets)))
        # Snakemake has no public call that returns the DAG's jobs: this is what its own
        # --printdag does (snakemake 9.27, pinned in pyproject.toml).
        workflow = dag_api.workflow_api._workflow
        workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        yield workflow


def all_jobs_in_order(dag: Any) -> list:
    """Every job the DAG's targets need, each after the jobs it needs."""
    return _toposorted(_all_jobs(dag), dag)


def _load(snakefile: Path, workdir: Path, configfiles: list[Path], config: Mapping[str, Any],
          targets: Iterable[str]) -> Workflow:
    with built_dag(snakefile, configfiles, config, targets) as workflow:
        # A named run (run: <name>) moves the workflow into runs/<name>/.
        run_dir = Path.cwd()
        dag = workflow.dag
        to_run = set(dag.needrun_jobs())
        order = all_jobs_in_order(dag)
        index = {job: i for i, job in enumerate(order)}
        jobs = [
            PlannedJob(
                index=index[job], rule=job.rule.name, wildcards=job.wildcards,
                params=job.params, input=job.input, output=job.output, log=job.log,
                resources=job.resources,
                script=(Path(job.rule.basedir.get_path_or_uri(secret_free=True)) / job.rule.script).resolve()
                if job.rule.script else None,
                needs=tuple(sorted(index[d] for d in dag.dependencies[job])),
                needs_run=job in to_run,
            )
            for job in order
        ]
        return Workflow(jobs=jobs, config=dict(workflow.config), workdir=run_dir.resolve(),
                        launch_dir=workdir)


def _all_jobs(dag: Any) -> list:
    seen, stack = set(), list(dag.targetjobs)
    while stack:
        job = stack.pop()
        if job in seen:
            continue
        seen.add(job)
        stack.extend(dag.dependencies[job])
    return list(seen)


def _toposorted(jobs: list, dag: Any) -> list:
    """Depth-first order, dependencies first; ties broken by rule name and output for a stable
    plan."""
    ordered, done = [], set()

    def key(job: Any) -> tuple:
        return (job.rule.name, [str(f) for f in job.output])

    def visit(job: Any) -> None:
        if job in done:
            return
        done.add(job)
        for dependency in sorted(dag.dependencies[job], key=key):
            visit(dependency)
        ordered.append(job)

    for job in sorted(jobs, key=key):
        visit(job)
    return ordered


def run_model_free_prefix(workflow: Workflow, snakefile: Path, configfiles: Iterable[Path],
                          config_args: list[str], cores: int) -> list[str]:
    """Build the outputs of the model-free prefix that are missing or stale (the prepared
    data every plan renders its prompts from); returns the targets built."""
    targets = sorted({str(f) for job in workflow.model_free_prefix() if job.needs_run
                      for f in job.output if job.rule != "all"})
    if not targets:
        return []
    # Targets first: --configfile and --config take every value that follows them.
    command = [sys.executable, "-m", "snakemake", *targets, "-s", str(Path(snakefile).resolve()),
               "--cores", str(cores)]
    configfile_args = [str(Path(path).resolve()) for path in configfiles]
    if configfile_args:
        command += ["--configfile", *configfile_args]
    if config_args:
        command += ["--config", *config_args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                          cwd=workflow.launch_dir or workflow.workdir)
    if done.returncode != 0:
        raise RuntimeError("plan: preparing the data (no model calls) failed:\n"
                           + (done.stderr or done.stdout)[-4000:])
    return targets
