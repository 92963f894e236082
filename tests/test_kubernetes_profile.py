"""profiles/kubernetes/ as Snakemake reads it, without a cluster: the plugins' settings, the
same per-machine resources and groups as profiles/slurm, the bucket, image and namespace from
the environment, and the keys in a Kubernetes Secret, never in a file or a job's command."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest
import yaml

from rubriclab.rehearsal.run import PLACEHOLDER_KEYS

from .snakemake_run import DRY_RUN_BOUND_S, run_snakemake

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "kubernetes"
PAPER = REPO / "config" / "paper.yaml"
REDUCED = REPO / "tests" / "rehearsal" / "reduced.yaml"
SECRET = "sentinel-key-0e1f"  # every key's value here: it must turn up in no argument
SITE = {"RUBRICLAB_IMAGE": "registry.example/rubriclab:test",
        "RUBRICLAB_K8S_NAMESPACE": "rubriclab-test",
        "RUBRICLAB_S3_PREFIX": "s3://a-bucket/runs/test"}


def profile() -> dict:
    return yaml.safe_load((PROFILE / "profile.yaml").read_text())


@pytest.fixture
def site(monkeypatch):
    for name, value in SITE.items():
        monkeypatch.setenv(name, value)
    for name in (*PLACEHOLDER_KEYS, "SNAKEMAKE_STORAGE_S3_ACCESS_KEY",
                 "SNAKEMAKE_STORAGE_S3_SECRET_KEY"):
        monkeypatch.setenv(name, SECRET)
    monkeypatch.setenv("RUBRICLAB_CACHE", f"postgresql://lab:{SECRET}@db.example/cache")


def test_the_profile_has_the_slurm_profiles_resources_and_groups():
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "profile.yaml").read_text())
    mine = profile()
    for key in ("resources", "group-components"):
        assert mine[key] == slurm[key], key


def test_snakemake_reads_the_profile_with_the_site_from_the_environment(site):
    from snakemake.cli import parse_args
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

    _, args = parse_args(["--workflow-profile", str(PROFILE), "--dry-run"])
    assert args.executor == "kubernetes" and args.default_storage_provider == "s3"
    assert args.default_storage_prefix == SITE["RUBRICLAB_S3_PREFIX"]
    assert args.container_image == SITE["RUBRICLAB_IMAGE"]
    assert args.keep_storage_local_copies
    settings = ExecutorPluginRegistry().get_plugin("kubernetes").get_settings(args)
    assert settings.namespace == SITE["RUBRICLAB_K8S_NAMESPACE"]
    assert set(args.envvars) == {"RUBRICLAB_CACHE", *PLACEHOLDER_KEYS}
    # The only arguments that hold a key are the s3 plugin's, read from its environment
    # variables: they reach the pods as environment variables, never as arguments (below).
    holding = {name for name, value in vars(args).items() if SECRET in str(value)}
    assert holding == {"storage_s3_access_key", "storage_s3_secret_key"}


def test_keys_reach_the_pods_through_a_secret_and_no_command_line():
    """What the profile relies on in the two plugins (the versions pinned in pyproject.toml):
    the kubernetes executor keeps `envvars` out of the job's command (it puts them in a
    Secret, Executor.register_secret), and the s3 plugin's credentials are env_var settings,
    which Snakemake passes with the envvars and leaves out of a job's arguments
    (snakemake/spawn_jobs.py, get_storage_provider_args / get_storage_provider_envvars)."""
    import snakemake_executor_plugin_kubernetes as kubernetes
    from snakemake_interface_storage_plugins.registry import StoragePluginRegistry

    assert kubernetes.common_settings.pass_envvar_declarations_to_cmd is False
    assert callable(kubernetes.Executor.register_secret)
    fields = dataclasses.fields(StoragePluginRegistry().get_plugin("s3").settings_cls)
    passed_as_env = {field.name for field in fields if field.metadata.get("env_var")}
    assert {"access_key", "secret_key", "token", "endpoint_url"} <= passed_as_env
    text = (PROFILE / "profile.yaml").read_text()
    assert "storage-s3-access-key" not in text and "storage-s3-secret-key" not in text
    assert all(not str(key).startswith("storage-s3") for key in profile())


def _dry_run(tmp_path, *overrides):
    env = {**os.environ, **SITE, **{key: "placeholder" for key in PLACEHOLDER_KEYS},
           "RUBRICLAB_CACHE": "postgresql://lab@127.0.0.1:9/cache",
           # Nothing but this machine: a store that cannot answer, never a cloud endpoint.
           "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": "http://127.0.0.1:9",
           "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": "placeholder",
           "SNAKEMAKE_STORAGE_S3_SECRET_KEY": "placeholder", "AWS_EC2_METADATA_DISABLED": "true",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    data = str((REPO / ".." / "shared" / "data").resolve())
    return run_snakemake(
        [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
         "-d", str(tmp_path / "run"), "--workflow-profile", str(PROFILE), *overrides,
         "--configfile", str(PAPER), str(REDUCED), "--config", f"data_mirror={data}"],
        env=env, cwd=REPO, bound_s=DRY_RUN_BOUND_S)


def test_a_dry_run_through_the_profile_forms_its_groups_on_a_store(tmp_path):
    """The profile's executor, resources and groups, the store a folder (the fs plugin): the
    s3 plugin's own dry run is refused below."""
    done = _dry_run(tmp_path, "--default-storage-provider", "fs",
                    "--default-storage-prefix", str(tmp_path / "store"))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "profiles/kubernetes" in done.stderr


S3_REFUSED = (
    "snakemake-storage-plugin-s3 0.3.6 computes an object's local path once, in "
    "StorageObject.__post_init__, before Snakemake 9.27 adds the rules' wildcard constraints to "
    "its query (Rule.update_wildcard_constraints): every s3 output loses its constraints and "
    "this workflow's rules become ambiguous (docs/cluster.md, Kubernetes)")


@pytest.mark.long
def test_a_dry_run_through_the_profile_on_s3(tmp_path):
    done = _dry_run(tmp_path, "--storage-s3-retries", "0")
    if done.returncode != 0:
        # Refused for the known reason only; anything else is a failure of its own.
        said = done.stdout + done.stderr
        assert "AmbiguousRuleException" in said and "cdataset=generic" in said, said[-3000:]
        pytest.xfail(S3_REFUSED)
    pytest.fail("the s3 plugin's dry run now passes: drop this expectation and the note in "
                "docs/cluster.md")
