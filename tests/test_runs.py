"""Named runs: their folder, and the shared folders made absolute for jobs working inside it."""

import json
import os
from pathlib import Path

import pytest

from rubriclab.config import ConfigError
from rubriclab.reuse import mark_ledger_reused
from rubriclab.runs import (
    EVALUATE_IN_VARIABLE,
    anchor_to_launch_dir,
    base_run_directory,
    enter_named_run,
    run_directory,
    targets_in_run,
)


def test_the_unnamed_run_keeps_the_working_directory(tmp_path):
    config = {"run": None, "cache_dir": None, "data_mirror": "../data"}
    assert enter_named_run(config, tmp_path, None, environ={}) == (config, None)
    assert run_directory(None, tmp_path) is None


def test_a_named_run_gets_runs_name_and_absolute_shared_folders(tmp_path):
    environ = {"RUBRICLAB_MODELS_DIR": "models", "RUBRICLAB_DATA_MIRROR": "/abs/mirror"}
    config = {"run": "reviser-sonnet", "cache_dir": None, "data_mirror": "../shared/data"}
    anchored, folder = enter_named_run(config, tmp_path, None, environ=environ)
    assert folder == tmp_path.resolve() / "runs" / "reviser-sonnet"
    assert anchored["cache_dir"] == str(tmp_path.resolve() / ".cache" / "rubriclab")
    assert Path(anchored["data_mirror"]) == tmp_path.resolve() / ".." / "shared" / "data"
    assert environ == {"RUBRICLAB_MODELS_DIR": str(tmp_path.resolve() / "models"),
                       "RUBRICLAB_DATA_MIRROR": "/abs/mirror"}
    assert config["cache_dir"] is None  # the caller's config is not changed


def test_rubriclab_cache_in_the_environment_wins_over_cache_dir(tmp_path):
    environ = {"RUBRICLAB_CACHE": "shared-cache"}
    anchored = anchor_to_launch_dir({"cache_dir": None, "data_mirror": None}, tmp_path, environ)
    assert anchored["cache_dir"] is None
    assert environ["RUBRICLAB_CACHE"] == str(tmp_path.resolve() / "shared-cache")
    mine = anchor_to_launch_dir({"cache_dir": "/elsewhere/cache", "data_mirror": None}, tmp_path, {})
    assert mine["cache_dir"] == "/elsewhere/cache"


@pytest.mark.parametrize("name", ["../up", "a/b", ".hidden", "", ".."])
def test_a_run_name_must_be_a_plain_folder_name(tmp_path, name):
    with pytest.raises(ConfigError, match="config key 'run'"):
        run_directory(name, tmp_path)


def test_a_named_run_and_directory_together_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="--directory cannot be given too"):
        enter_named_run({"run": "x", "cache_dir": None, "data_mirror": None}, tmp_path,
                        str(tmp_path), environ={})


def test_the_child_that_reads_a_base_run_works_in_the_base_folder(tmp_path):
    config = {"run": "reviser-b", "cache_dir": None, "data_mirror": None}
    base = tmp_path / "runs" / "baseline"
    _, folder = enter_named_run(config, tmp_path, None, environ={EVALUATE_IN_VARIABLE: str(base)})
    assert folder == base


def test_base_run_names_a_finished_run_of_the_launching_directory(tmp_path):
    (tmp_path / "runs" / "baseline" / ".snakemake" / "metadata").mkdir(parents=True)
    (tmp_path / ".snakemake" / "metadata").mkdir(parents=True)
    assert base_run_directory({"run": "x", "base_run": None}, tmp_path) is None
    assert base_run_directory({"run": "x", "base_run": "baseline"}, tmp_path) == \
        tmp_path.resolve() / "runs" / "baseline"
    assert base_run_directory({"run": "x", "base_run": "."}, tmp_path) == tmp_path.resolve()


@pytest.mark.parametrize("config, message", [
    ({"run": None, "base_run": "baseline"}, "needs a named run"),
    ({"run": "baseline", "base_run": "baseline"}, "is this run itself"),
    ({"run": "x", "base_run": "basline"}, "holds no finished jobs"),
])
def test_a_base_run_that_cannot_be_read_is_refused_by_name(tmp_path, config, message):
    (tmp_path / "runs" / "baseline" / ".snakemake" / "metadata").mkdir(parents=True)
    with pytest.raises(ConfigError, match=message) as error:
        base_run_directory(config, tmp_path)
    if "finished" in message:
        assert "named runs in" in str(error.value) and "baseline" in str(error.value)


def test_a_reused_ledger_shows_every_request_answered_without_a_call(tmp_path):
    path = tmp_path / "ledger.jsonl"
    rows = [{"key": "a", "cached": False, "attempts": 2, "cost_usd": 0.5, "run": "r1"},
            {"key": "b", "cached": True, "attempts": 0, "cost_usd": 0.1, "run": "r1"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    os.utime(path, (1_000_000, 1_000_000))
    mark_ledger_reused(path)
    marked = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["key"], r["cached"], r["attempts"], r["cost_usd"], r["run"]) for r in marked] == \
        [("a", True, 0, 0.5, "r1"), ("b", True, 0, 0.1, "r1")]
    assert path.stat().st_mtime == 1_000_000  # the jobs after it stay up to date


def test_a_target_in_the_runs_own_folder_is_read_inside_it():
    targets = ["runs/smoke/figures/carry/fig3.png", "figures/plan.md", "carry_fig2_plot",
               "/abs/runs/smoke/figures/x.png", "runs/readme.md"]
    assert targets_in_run(targets, "smoke") == [
        "figures/carry/fig3.png", "figures/plan.md", "carry_fig2_plot",
        "/abs/runs/smoke/figures/x.png", "runs/readme.md"]


@pytest.mark.parametrize("run", [None, "other"])
def test_a_target_in_another_runs_folder_is_refused_with_what_to_type(run):
    with pytest.raises(ConfigError) as caught:
        targets_in_run(["runs/smoke/figures/carry/fig3.png"], run)
    message = str(caught.value)
    assert "is a file of run 'smoke'" in message
    assert ("--configfile runs/smoke/results/effective_config.yaml -- figures/carry/fig3.png"
            in message and "--config run=smoke -- figures/carry/fig3.png" in message)
