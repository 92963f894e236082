"""Named runs: their folder, and the shared folders made absolute for jobs working inside it."""

from pathlib import Path

import pytest

from rubriclab.config import ConfigError
from rubriclab.runs import anchor_to_launch_dir, enter_named_run, run_directory


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
