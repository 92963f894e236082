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
from rubriclab.sizing import group_within

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
    """The rule's declared group (Snakemake's `rule.group` is None outside cluster runs); one
    given as a function of the wildcards (the judge group, sized when the DAG is built) is
    asked with none."""
    group = rule._group
    return group({}) if callable(group) else group


def _profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "profile.yaml").read_text())


@pytest.mark.parametrize("name", ["default", "slurm", "cluster-generic", "kubernetes"])
def test_each_profile_key_is_a_snakemake_option(name):
    from snakemake.cli import get_argument_parser

    options = {opt for action in get_argument_parser()._actions for opt in action.option_strings}
    unknown = [key for key in _profile(name) if f"--{key}" not in options]
    assert not unknown, f"profiles/{name}: not snakemake options: {unknown}"


@pytest.mark.parametrize("name", ["slurm", "cluster-generic", "kubernetes"])
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


def dry_run(tmp_path, *args: str, profile: str | None = None, **env: str):
    """`snakemake -n` of paper.yaml plus `args` (more config files) in tmp_path/run, with the
    shared data; through the named profile, with placeholder keys and `env`."""
    if profile is not None:
        args = ("--workflow-profile", str(PROFILES / profile), "--configfile", str(PAPER), *args)
        env = {**{key: "placeholder" for key in PLACEHOLDER_KEYS},
               "RUBRICLAB_CACHE": str(tmp_path / "cache"), **env}
    else:
        args = ("--configfile", str(PAPER), *args)
    data = str((REPO / ".." / "shared" / "data").resolve())
    return run_snakemake(
        [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
         "-d", str(tmp_path / "run"), *args, "--config", f"data_mirror={data}"],
        env={**os.environ, **env, "PYTHONPATH": os.pathsep.join(
            [str(REPO / "src"), os.environ.get("PYTHONPATH", "")])},
        cwd=REPO, bound_s=DRY_RUN_BOUND_S)


def test_a_dry_run_through_the_cluster_generic_profile_forms_its_groups(tmp_path):
    """A dry run forms the group jobs as a cluster run would (a local run ignores groups): a
    group that a path of jobs leaves and re-enters is refused here ("depends on itself")."""
    done = dry_run(tmp_path, str(REDUCED), profile="cluster-generic",
                   RUBRICLAB_STORE=str(tmp_path / "store"),
                   RUBRICLAB_HOSTS_SPOOL=str(tmp_path / "spool"))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "profiles/cluster-generic" in done.stderr  # the profile was read


# --- localrules derived from the rules; runtimes within cluster.max_runtime_min (issue 37) ----

def test_every_rule_writing_figures_without_a_model_is_local_derived_from_the_rules(
        paper_workflow):
    """A rule that writes under figures/ (a figure, a table, the browser, the reports) and has no
    ledger output (calls no model) runs on the submitting host; a rule with a ledger never does.
    Derived from the rules, so a new figure or table rule cannot be forgotten."""
    workflow, _ = paper_workflow
    local = set(workflow._localrules)
    drawing = {rule.name for rule in workflow.rules
               if "ledger" not in rule.output.keys()
               and any(str(path).startswith("figures/") for path in rule.output)}
    assert {"verify_calibration", "carry_gate_agreement", "cost_report"} <= drawing
    assert not drawing - local, f"write figures/ but are not in localrules: {drawing - local}"
    calling = {rule.name for rule in workflow.rules if "ledger" in rule.output.keys()}
    assert calling and not calling & local, f"call a model but are local: {calling & local}"
    # the collections and the config record too
    assert {"carry_collect", "carry_fig2_rates", "effective_config"} <= local


def _dry_run_groups(workdir: Path, configfiles: list[Path], config: dict, judge_components: int):
    """Snakemake's DAG of `configfiles` under the slurm profile's executor, group-components
    (judge=N) and pools, in process, nothing run: {job or group job: asked runtime}. With one
    core, as in a dry run, each layer of a group holds one job: the longest any group of these
    jobs can ask."""
    import contextlib
    import io

    import immutables
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (ConfigSettings, DAGSettings, GroupSettings,
                                          OutputSettings, ResourceSettings, StorageSettings)

    profile = _profile("slurm")
    pools = {key: int(value) for key, value in (i.split("=") for i in profile["resources"])}
    launched = Path.cwd()
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()), \
                SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, dryrun=True)) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=1, nodes=profile["jobs"],
                                                   resources=immutables.Map(pools)),
                config_settings=ConfigSettings(configfiles=configfiles, config=config),
                storage_settings=StorageSettings(), snakefile=REPO / "Snakefile")
            dag_api = workflow_api.dag(DAGSettings())
            # A dry run validated against the profile's executor (snakemake 9.27's
            # pseudo_executor), which forms the group jobs as a cluster run does.
            dag_api.execute_workflow(
                executor=profile["executor"], pseudo_executor="dryrun",
                group_settings=GroupSettings(
                    group_components=immutables.Map({"judge": judge_components})))
            workflow = dag_api.workflow_api._workflow
            groups = set(workflow.dag._group.values())
            asked = {f"group {g.groupid} of {len(g.jobs)} jobs": g.resources["runtime"]
                     for g in groups}
            asked.update({f"{job.rule.name} {dict(job.wildcards)}": job.resources["runtime"]
                          for job in workflow.dag.jobs if job.rule.name not in AGGREGATES})
            return asked, workflow.config["cluster"]["max_runtime_min"]
    finally:
        os.chdir(launched)


def test_no_job_nor_group_job_of_the_paper_config_asks_past_the_partition_limit(tmp_path):
    """paper.yaml's batch-mode judges ask 27 h each: eight of them in one group would ask up to
    8 x 27 h (Snakemake sums a group's layers; GroupResources.basic_layered), which no partition
    takes; so they run ungrouped, each within cluster.max_runtime_min."""
    data = str((REPO / ".." / "shared" / "data").resolve())
    group_components = int(dict(i.split("=") for i in _profile("slurm")["group-components"])["judge"])
    asked, limit = _dry_run_groups(tmp_path, [PAPER], {"data_mirror": data}, group_components)
    assert limit == 2880
    assert any(runtime == 1620 for runtime in asked.values())  # the batch-mode judges
    over = {what: runtime for what, runtime in asked.items() if runtime > limit}
    assert not over, f"ask past cluster.max_runtime_min={limit}: {over}"


def test_short_judge_jobs_stay_grouped_within_the_limit(tmp_path):
    """Without batch mode a judge job asks 6 h: eight of them fit 48 h and form one group job;
    nine could not, and each runs on its own."""
    data = str((REPO / ".." / "shared" / "data").resolve())
    no_batch = {"data_mirror": data, "llm": {"roles": {"judge": {"batch": False}}}}
    asked, limit = _dry_run_groups(tmp_path / "8", [PAPER], no_batch, 8)
    grouped = {what: runtime for what, runtime in asked.items() if what.startswith("group judge")}
    assert grouped and max(grouped.values()) <= limit
    assert max(grouped.values()) > API_RUNTIME_MIN  # several judge jobs in one group job
    asked, _ = _dry_run_groups(tmp_path / "9", [PAPER], no_batch, 9)
    assert not [what for what in asked if what.startswith("group judge")]
    assert max(asked.values()) <= limit


def test_group_within_and_a_job_past_the_limit():
    assert group_within("judge", 360, 8, 2880) == "judge"
    assert group_within("judge", 360, 8, 1440) is None
    assert group_within("judge", 1620, 8, 2880) is None
    assert group_within("judge", 1620, 1, 2880) == "judge"
    llm = LLMConfig.from_dict({"per_model": {"openai/gpt-5": {"batch": True,
                                                              "batch_max_wait_s": 93600}}})
    assert model_job_size(llm, "openai/gpt-5", "judge", 2880)["runtime"] == 1620
    with pytest.raises(ValueError, match=r"cluster.max_runtime_min.*at most 82800 s"):
        model_job_size(llm, "openai/gpt-5", "judge", 1440)
    with pytest.raises(ValueError, match="cluster.max_runtime_min"):
        model_job_size(llm, "local/default", "judge", 600)


def test_a_rule_asking_past_the_limit_is_refused_when_the_workflow_is_read(tmp_path):
    """paper.yaml's batch-mode judges (27 h) on a 24-hour partition: a dry run stops, naming
    the key and the fix."""
    extra = tmp_path / "partition.yaml"
    extra.write_text("cluster: {max_runtime_min: 1440}\n")
    done = dry_run(tmp_path, str(extra))
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "cluster.max_runtime_min' (1440 min)" in said
    assert "batch_max_wait_s to at most 82800 s" in said


def test_a_dry_run_through_the_slurm_profile_reads_its_status_command(tmp_path):
    done = dry_run(tmp_path, str(REDUCED), profile="slurm")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert _profile("slurm")["slurm-status-command"] == "squeue"
