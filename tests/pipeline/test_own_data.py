"""The pipeline on the shipped example of your own data (examples/own_data): carry's Figure 2
and the attribution table, named by the dataset's title, words and check ids."""

import shutil

import pandas as pd
import pytest
import yaml

from rubriclab.methods import attribute
from ..shared_runs import SharedRun
from tests.pipeline.test_workflow import REPO, run

pytestmark = pytest.mark.pipeline

JUDGE = "fake/hash"
CHECKS = ["confirms_new_date", "states_fee", "no_invented_policy", "answers_question"]


def _make_own_data_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("own_data")
    # The example's relative paths are the launching directory's: lay examples/ out there.
    shutil.copytree(REPO / "examples" / "own_data", workdir / "examples" / "own_data")
    config = yaml.safe_load((REPO / "examples" / "own_data" / "config.yaml").read_text())
    config["cache_dir"] = str(workdir / "cache")
    config["models"] = {role: JUDGE for role in ("judge", "agent", "generator", "reviser")}
    config["llm"] = {"per_model": {JUDGE: {"concurrency": 1, "backoff_s": 0.0}}}
    path = workdir / "test_config.yaml"
    path.write_text(yaml.safe_dump(config))
    run(workdir, path, "--", "own_data")
    run(workdir, path, "--report", str(workdir / "report.html"), "--", "own_data")
    return workdir


@pytest.fixture(scope="module")
def own_data_run_attempt(tmp_path_factory) -> SharedRun:
    """The own-data run, made once; its failure is reported by
    test_own_data_run_completes, and the tests that read it are skipped."""
    return SharedRun.made_by("the own-data run", lambda: _make_own_data_run(tmp_path_factory))


def test_own_data_run_completes(own_data_run_attempt):
    own_data_run_attempt.completed()


@pytest.fixture
def own_run(own_data_run_attempt):
    return own_data_run_attempt.read()


def test_figure_2_shows_the_dataset_of_your_own(own_run):
    table = pd.read_csv(own_run / "figures/carry/fig2_checklist_length.csv")
    assert set(table["dataset"]) == {"travel_replies"}
    assert set(table["length"]) == {1, 2, 3, 4}
    assert (table["n_correct"] == 6).all() and (table["n_flawed"] == 6).all()
    assert (own_run / "figures/carry/fig2_checklist_length.png").read_bytes()[:4] == b"\x89PNG"
    # the report's caption names the panel by the config's title
    assert "Panels: (a) Travel desk replies" in (own_run / "report.html").read_text()


def test_the_attribution_table_names_your_checks(own_run):
    md = (own_run / "figures/carry/attribution_travel_replies.md").read_text()
    assert md.startswith('# Attribution of the checklist "Travel desk reply checklist" on '
                         "Travel desk replies")
    assert "Good replies passed:" in md and "bad replies caught:" in md
    for check in CHECKS:
        assert f"| {check} " in md
    table = pd.read_csv(own_run / "figures/carry/attribution_travel_replies.csv")
    assert table["check_id"].tolist() == CHECKS


def test_the_table_is_what_the_methods_api_gives_on_the_same_verdicts(own_run):
    verdicts = pd.read_csv(own_run / "results/carry/fig2/travel_replies/verdicts.csv",
                           keep_default_na=False)
    per_check = verdicts[verdicts["rendering"] == "per_check"]
    assert set(per_check["verdict"]) <= {"yes", "no"}
    labels = per_check.drop_duplicates("item_id")[["item_id", "label"]]
    ours = attribute(per_check[["item_id", "check_id", "verdict"]], labels).checks
    table = pd.read_csv(own_run / "figures/carry/attribution_travel_replies.csv")
    assert table["credit"].to_numpy() == pytest.approx(ours["credit"].to_numpy())
    assert table["blame"].to_numpy() == pytest.approx(ours["blame"].to_numpy())
    assert table["unique_catches"].tolist() == ours["unique_catches"].tolist()
    # the prepared items are the example's rows, labels mapped from good / bad
    prepared = pd.read_csv(own_run / "data/prepared/travel_replies.csv", dtype=str)
    raw = pd.read_csv(REPO / "examples/own_data/replies.csv", dtype=str).set_index("reply_id")
    mapped = raw.loc[prepared["item_id"], "grade"].map({"good": "correct", "bad": "flawed"})
    assert prepared["label"].tolist() == mapped.tolist()


def test_figure_2_of_an_unknown_dataset_is_refused_before_any_job(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"carry": {"fig2": {"datasets": ["travel_replies"]}}}))
    result = run(tmp_path, config, "-n", check=False)
    assert result.returncode != 0
    assert "config key 'carry.fig2.datasets': ['travel_replies'] are neither" in \
        result.stdout + result.stderr
