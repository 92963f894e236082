"""Items through datasets.load_dataset: local files (the mirror's, the offline test of that
path) and a dataset on a loopback stand-in for the Hugging Face Hub, fetched by name at a
pinned commit."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rubriclab.data.errors import DataFormatError
from rubriclab.data.healthbench import load_healthbench
from rubriclab.data.hub import HubSplit, check_source, load_items, load_tables
from rubriclab.data.ragtruth import load_ragtruth
from rubriclab.data.summedits import load_summedits, load_summedits_tables
from tests.data import hub_stub

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
needs_mirror = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no data mirror at {SHARED_DATA}")
COMMIT = "3f1c" * 10
LOCATION = ["source_file", "source_line"]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def summedits_row(id_, label, domain="news", **extra):
    return {"id": id_, "doc": f"document of {id_.split('_')[0]}", "summary": f"summary {id_}",
            "label": label, "edit_types": [] if label else ["antonym_swap"], "domain": domain,
            **extra}


def without_location(items: pd.DataFrame) -> pd.DataFrame:
    return items.drop(columns=LOCATION).reset_index(drop=True)


# --- local files through the json builder: the same items as the loaders' own parsers -------

@needs_mirror
def test_mirror_summedits_through_load_dataset_gives_the_loaders_items(tmp_path):
    path = SHARED_DATA / "summedits" / "summedits_news.json"
    source = {"name": "json", "data_files": [str(path)], "split": "train"}
    from_hub = load_summedits_tables(load_tables(source, key="k", cache_dir=tmp_path), domain="news")
    from_file = load_summedits([path])
    assert len(from_hub) == len(from_file) == 819
    pd.testing.assert_frame_equal(without_location(from_hub), without_location(from_file))
    assert set(from_hub["source_file"]) == {"json:train"}
    assert from_hub["source_line"].tolist() == list(range(1, 820))


@needs_mirror
def test_mirror_healthbench_through_load_dataset_gives_the_loaders_items(tmp_path):
    path = SHARED_DATA / "healthbench" / "oss_eval_items_nonhard.jsonl"
    source = {"name": "json", "data_files": [str(path)], "split": "train"}
    from_hub = load_items("healthbench", source, cache_dir=tmp_path)
    from_file = load_healthbench([path])
    assert len(from_hub) == 208
    pd.testing.assert_frame_equal(without_location(from_hub), without_location(from_file))


@needs_mirror
def test_mirror_ragtruth_pair_through_load_dataset_gives_the_loaders_items(tmp_path):
    """RAGTruth's derived responses and sources files as two splits of one dataset."""
    folder = SHARED_DATA / "ragtruth"
    files = {"responses": str(folder / "ragtruth_test_responses.jsonl"),
             "sources": str(folder / "ragtruth_test_sources.jsonl")}
    source = {"name": "json", "data_files": files, "split": ["sources", "responses"]}
    from_hub = load_items("ragtruth", source, cache_dir=tmp_path)
    from_file = load_ragtruth([Path(files["sources"]), Path(files["responses"])])
    assert len(from_hub) == 2617
    pd.testing.assert_frame_equal(without_location(from_hub), without_location(from_file))


def test_a_bad_row_is_named_by_dataset_split_and_row(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(jsonl([summedits_row("d1_og", 1), summedits_row("d1_1", 5)]))
    source = {"name": "json", "data_files": [str(path)], "split": "train"}
    with pytest.raises(DataFormatError) as error:
        load_items("summedits", source, cache_dir=tmp_path / "cache")
    assert str(error.value) == ("Hugging Face dataset json, split train, row 2: field 'label' "
                                "must be 0 or 1, got 5")


def test_a_table_without_domain_files_needs_a_domain_per_row(tmp_path):
    path = tmp_path / "mine.jsonl"
    row = summedits_row("d1_og", 1)
    del row["domain"]
    path.write_bytes(jsonl([row]))
    with pytest.raises(DataFormatError, match=r"split train, row 1: field 'domain' must be"):
        load_items("summedits", {"name": "json", "data_files": [str(path)], "split": "train"},
                   cache_dir=tmp_path / "cache")


def test_a_local_folder_in_the_hub_layout_drops_in_by_its_path(tmp_path):
    folder = tmp_path / "my_summedits"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "test.jsonl").write_bytes(jsonl([summedits_row("d1_og", 1, "podcast"),
                                                        summedits_row("d1_1", 0, "podcast")]))
    items = load_items("summedits", {"name": str(folder), "split": "test"},
                       cache_dir=tmp_path / "cache")
    assert items["item_id"].tolist() == ["summedits:podcast:d1_og", "summedits:podcast:d1_1"]
    assert items["label"].tolist() == ["correct", "flawed"]


@pytest.mark.parametrize("source, message", [
    ({"name": "someone/summedits", "split": "test"}, r"\.revision': .*needs a pinned revision"),
    ({"name": "someone/summedits", "revision": "main", "split": "test"}, r"\.revision': 'main' is not a 40-digit commit"),
    ({"name": "json", "revision": COMMIT, "split": "train", "data_files": ["x"]}, r"\.revision': 'json' is not on the Hub"),
    ({"name": "json", "split": "train"}, r"\.data_files': the json builder reads"),
    ({"name": "json", "split": ["a", "b"], "data_files": {"a": "x"}},
     r"\.data_files': no files for split\(s\) \['b'\]"),
])
def test_a_source_that_cannot_be_loaded_as_written_is_named(source, message):
    with pytest.raises(ValueError, match=r"config key 'datasets.summedits.hub" + message):
        check_source(source, "datasets.summedits.hub")


def test_hub_split_names_its_source():
    split = HubSplit("someone/summedits", COMMIT, "test")
    assert split.name == "someone/summedits@3f1c3f1c3f1c:test"
    assert str(split) == f"Hugging Face dataset someone/summedits at {COMMIT}, split test"


# --- by name from a loopback Hub ------------------------------------------------------------

CHILD = """
import json, sys
from rubriclab.data.hub import load_items
items = load_items("summedits", json.loads(sys.argv[1]))
print(json.dumps(items[["item_id", "label", "source_file", "source_line"]].values.tolist()))
"""


def load_in_child(source: dict, env: dict) -> subprocess.CompletedProcess:
    """load_items in a fresh interpreter: datasets reads HF_ENDPOINT when it is imported."""
    return subprocess.run([sys.executable, "-c", CHILD, json.dumps(source)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def hub(tmp_path):
    rows = [summedits_row("d1_og", 1), summedits_row("d1_1", 0), summedits_row("d2_og", 1, "samsum")]
    server, handler, url = hub_stub.serve({"someone/summedits": (COMMIT, {
        "README.md": b"---\nlicense: apache-2.0\n---\n# A SummEdits copy\n",
        "data/test.jsonl": jsonl(rows)})})
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("HF_", "HUGGINGFACE_")) and "proxy" not in key.lower()}
    env.update(HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"), HF_HUB_DISABLE_TELEMETRY="1",
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    try:
        yield handler, env
    finally:
        server.shutdown()
        server.server_close()


def test_a_hub_dataset_is_fetched_by_name_at_its_pinned_commit(hub):
    handler, env = hub
    source = {"name": "someone/summedits", "revision": COMMIT, "split": "test"}
    result = load_in_child(source, env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == [
        ["summedits:news:d1_og", "correct", "someone/summedits@3f1c3f1c3f1c:test", 1],
        ["summedits:news:d1_1", "flawed", "someone/summedits@3f1c3f1c3f1c:test", 2],
        ["summedits:samsum:d2_og", "correct", "someone/summedits@3f1c3f1c3f1c:test", 3]]
    fetched = [path for method, path in handler.requests if method == "GET" and "/resolve/" in path]
    assert f"/datasets/someone/summedits/resolve/{COMMIT}/data/test.jsonl" in fetched
    assert all(f"/{COMMIT}" in path for method, path in handler.requests
               if "/resolve/" in path or "/api/datasets/" in path)

    # once fetched, the pinned commit loads offline from the Hugging Face cache
    handler.repos.clear()
    offline = load_in_child(source, {**env, "HF_HUB_OFFLINE": "1"})
    assert offline.returncode == 0, offline.stderr[-3000:]
    assert offline.stdout.splitlines()[-1] == result.stdout.splitlines()[-1]


def test_an_unknown_commit_is_a_download_error_naming_the_config_key(hub):
    _, env = hub
    source = {"name": "someone/summedits", "revision": "0" * 40, "split": "test"}
    result = load_in_child(source, env)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rubriclab.data.download.DownloadError: config key "
                           "'datasets.summedits.hub': could not load Hugging Face dataset "
                           f"someone/summedits at {'0' * 40}, split test:"), last


def test_loading_is_refused_before_any_request_when_the_revision_is_not_pinned(hub):
    handler, env = hub
    with pytest.raises(ValueError, match="needs a pinned revision"):
        load_tables({"name": "someone/summedits", "split": "test"}, key="datasets.summedits.hub")
    assert handler.requests == []

