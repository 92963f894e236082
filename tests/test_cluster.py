"""Running on a cluster (docs/cluster.md): every rule sized, the per-machine resources local,
the small judge jobs grouped, the figures and tables local, and the cluster profiles valid
Snakemake options naming the workflow's resources, groups and the keys jobs need."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest
import yaml

from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.dag import built_dag
from rubriclab.rehearsal.run import PLACEHOLDER_KEYS
from rubriclab.sizing import API_RUNTIME_MIN, BATCH_COLLECT_MIN, LOCAL_MEM_MB, model_job_size

from .snakemake_run import DRY_RUN_BOUND_S, run_snakemake

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "profiles"
PAPER = REPO / "config" / "paper.yaml"
REDUCED = REPO / "tests" / "rehearsal" / "reduced.yaml"
# Rules that only gather other rules' outputs (no job of their own to size).
AGGREGATES = {"all", "own_data"}
JUDGE_GROUP = {"carry_fig2_judge", "verify_reply_rubric", "verify_judge_labels"}


@pytest.fixture(scope="module")
def paper_workflow(tmp_path_factory):
    """Snakemake's workflow object and DAG for paper.yaml at the reduced sizes, nothing run."""
    workdir = tmp_path_factory.mktemp("dag")
    launched = Path.cwd()
    os.chdir(workdir)
    try:
        data = str((REPO / ".." / "shared" / "data").resolve())
        with built_dag(REPO / "Snakefile", [PAPER, REDUCED], {"data_mirror": data}) as workflow:
            jobs = list(workflow.dag.jobs)
            yield workflow, jobs
    finally:
        os.chdir(launched)


def test_every_rule_declares_mem_mb_and_runtime(paper_workflow):
    workflow, _ = paper_workflow
    missing = [rule.name for rule in workflow.rules if rule.name not in AGGREGATES
               and not {"mem_mb", "runtime"} <= set(rule.resources)]
    assert not missing, f"rules without mem_mb or runtime: {missing}"


def test_every_job_gets_a_positive_size_and_model_jobs_follow_their_config(paper_workflow):
    workflow, jobs = paper_workflow
    llm = LLMConfig.from_dict(workflow.config["llm"])
    sized = [job for job in jobs if job.rule.name not in AGGREGATES]
    assert sized
    for job in sized:
        assert job.resources["mem_mb"] > 0 and job.resources["runtime"] > 0, job
    # carry's judges batch (paper.yaml): they wait for a batch up to batch_max_wait_s;
    # the revisers' chains never batch (llm.roles.reviser.batch: false).
    judges = [job for job in jobs if job.rule.name == "carry_judge"]
    chains = [job for job in jobs if job.rule.name == "carry_chain"]
    assert judges and chains
    for job in judges:
        model = job.params.judge
        expected = (math.ceil(llm.settings_for(model).batch_max_wait_s / 60) + BATCH_COLLECT_MIN
                    if llm.batch_for(model, "judge") else API_RUNTIME_MIN)
        assert job.resources["runtime"] == expected, model
    assert any(llm.batch_for(job.params.judge, "judge") for job in judges)
    assert {job.resources["runtime"] for job in chains} == {API_RUNTIME_MIN}


def test_model_job_size_reads_batch_mode_from_model_and_role():
    llm = LLMConfig.from_dict({"per_model": {"openai/gpt-5": {"batch": True,
                                                              "batch_max_wait_s": 3600}},
                               "roles": {"reviser": {"batch": False}}})
    assert model_job_size(llm, "openai/gpt-5", "judge")["runtime"] == 60 + BATCH_COLLECT_MIN
    assert model_job_size(llm, "openai/gpt-5", "reviser")["runtime"] == API_RUNTIME_MIN
    assert model_job_size(llm, "local/default", "judge")["mem_mb"] == LOCAL_MEM_MB


def test_the_machine_resources_are_local_in_scope(paper_workflow):
    workflow, _ = paper_workflow
    assert workflow.resource_scopes["local_llm"] == "local"
    assert workflow.resource_scopes["api_calls"] == "local"


def test_the_small_judge_jobs_share_a_group_and_no_other_rule_does(paper_workflow):
    workflow, _ = paper_workflow
    grouped = {rule.name for rule in workflow.rules if _group(rule) == "judge"}
    assert grouped == JUDGE_GROUP


def test_figures_and_tables_are_local_and_model_jobs_never_are(paper_workflow):
    workflow, jobs = paper_workflow
    local = set(workflow._localrules)
    names = {rule.name for rule in workflow.rules}
    drawing = {name for name in names if name.endswith(("_figure", "_table", "_plot", "table1"))}
    assert drawing and drawing <= local
    # The verdict browser reads the run's cache, which a SQLite run keeps on the submitting host.
    assert {"all", "fetch_raw", "cost_report", "replication", "verdict_browser"} <= local
    model_rules = {job.rule.name for job in jobs if "calls" in job.params.keys()}
    assert model_rules and not (model_rules & local)


def _group(rule) -> str | None:
    """The rule's declared group (Snakemake's `rule.group` is None outside cluster runs)."""
    return rule._group


def _profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "profile.yaml").read_text())


@pytest.mark.parametrize("name", ["default", "slurm", "cluster-generic"])
def test_each_profile_key_is_a_snakemake_option(name):
    from snakemake.cli import get_argument_parser

    options = {opt for action in get_argument_parser()._actions for opt in action.option_strings}
    unknown = [key for key in _profile(name) if f"--{key}" not in options]
    assert not unknown, f"profiles/{name}: not snakemake options: {unknown}"


@pytest.mark.parametrize("name", ["slurm", "cluster-generic"])
def test_cluster_profiles_name_the_resources_groups_and_keys(name, paper_workflow):
    workflow, _ = paper_workflow
    profile, default = _profile(name), _profile("default")
    pools = dict(item.split("=") for item in profile["resources"])
    assert pools == dict(item.split("=") for item in default["resources"])
    groups = {item.split("=")[0] for item in profile["group-components"]}
    assert groups <= {_group(rule) for rule in workflow.rules if _group(rule)}
    assert set(profile["envvars"]) == {"RUBRICLAB_CACHE", *PLACEHOLDER_KEYS}
    __import__(f"snakemake_executor_plugin_{profile['executor'].replace('-', '_')}")


def test_the_default_profile_passes_no_keys():
    assert "envvars" not in _profile("default")


def test_the_cluster_generic_profile_moves_files_through_storage():
    profile = _profile("cluster-generic")
    assert profile["default-storage-provider"] == "fs"
    assert "input-output" not in profile["shared-fs-usage"]
    assert "persistence" not in profile["shared-fs-usage"]
    assert profile["cluster-generic-submit-cmd"].endswith("rubriclab.rehearsal.hosts submit")
    __import__("snakemake_storage_plugin_fs")


def test_a_dry_run_through_the_cluster_generic_profile_forms_its_groups(tmp_path):
    """A dry run forms the group jobs as a cluster run would (a local run ignores groups): a
    group that a path of jobs leaves and re-enters is refused here ("depends on itself")."""
    env = {**os.environ, **{key: "placeholder" for key in PLACEHOLDER_KEYS},
           "RUBRICLAB_CACHE": str(tmp_path / "cache"), "RUBRICLAB_STORE": str(tmp_path / "store"),
           "RUBRICLAB_HOSTS_SPOOL": str(tmp_path / "spool"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    data = str((REPO / ".." / "shared" / "data").resolve())
    done = run_snakemake(
        [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
         "-d", str(tmp_path / "run"), "--workflow-profile", str(PROFILES / "cluster-generic"),
         "--configfile", str(PAPER), str(REDUCED), "--config", f"data_mirror={data}"],
        env=env, cwd=REPO, bound_s=DRY_RUN_BOUND_S)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "profiles/cluster-generic" in done.stderr  # the profile was read
