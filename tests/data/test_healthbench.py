import json
import logging
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rubriclab.data.download import DownloadError, acquire, dataset_files
from rubriclab.data.errors import DataFormatError
from rubriclab.data.healthbench import (
    COLUMNS,
    LEFT_OUT_COLUMNS,
    THEMES,
    load_hard_ids,
    load_healthbench,
    load_srh_partial,
    render_task,
    sample_by_theme,
)
from rubriclab.data.prepare import write_prepared

HEALTHBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "healthbench"
NONHARD_THEMES = {"communication": 37, "complex_responses": 12, "context_seeking": 36, "emergency_referrals": 24,
                  "global_health": 52, "health_data_tasks": 9, "hedging": 38}


def mirror_file(name: str) -> Path:
    path = HEALTHBENCH / name
    if not path.is_file():
        pytest.fail(f"the HealthBench mirror file {path} is missing (CI lays ../shared/data beside the clone)")
    return path


@pytest.fixture(scope="module")
def nonhard():
    return load_healthbench([mirror_file("oss_eval_items_nonhard.jsonl")])


@pytest.fixture(scope="module")
def oss_eval():
    return load_healthbench([mirror_file("oss_eval_items.jsonl")])


@pytest.fixture(scope="module")
def hard_ids():
    return load_hard_ids(mirror_file("hard_prompt_ids_known.json"))


@pytest.fixture(scope="module")
def srh():
    return load_srh_partial(mirror_file("srh_subset_partial.jsonl"))


# --- made-up fixtures (NOT HealthBench data) ---------------------------------------------------

def fake_item(prompt_id: str, theme: str = "hedging", points=(5, -3), ideal: str | None = "Physician text.",
              turns: int = 1) -> dict:
    """A made-up item in the original HealthBench schema."""
    prompt = []
    for k in range(turns):
        prompt.append({"role": "user", "content": f"made-up question {k} of {prompt_id}"})
        if k < turns - 1:
            prompt.append({"role": "assistant", "content": f"made-up answer {k}"})
    return {
        "prompt": prompt,
        "rubrics": [{"criterion": f"made-up criterion {i}", "points": p, "tags": ["level:example", "axis:accuracy"]}
                    for i, p in enumerate(points)],
        "example_tags": [f"theme:{theme}", "physician_agreed_category:made-up"],
        "ideal_completions_data": None if ideal is None else {"ideal_completion": ideal,
                                                              "ideal_completions_group": "Group 1",
                                                              "ideal_completions_ref_completions": []},
        "prompt_id": prompt_id,
        "canary": "made-up canary",
    }


def fake_srh_item(prompt_id: str, theme: str) -> dict:
    """A made-up item in the SRH partial format (rubric entries without tags)."""
    return {"prompt": [{"role": "user", "content": f"made-up {prompt_id}"}], "prompt_id": prompt_id,
            "conversation_turns": 1, "theme": theme,
            "rubrics": [{"criterion": "made-up", "points": 4}, {"criterion": "made-up bad", "points": -2}],
            "oss_eval_index": 0, "known_hard": False, "full_item_available": False}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows),
                    encoding="utf-8")
    return path


def fake_items(tmp_path, per_theme_counts: dict[str, int], name="fake_oss_eval.jsonl") -> pd.DataFrame:
    rows = [fake_item(f"{theme}-{k:03d}", theme) for theme, n in per_theme_counts.items() for k in range(n)]
    return load_healthbench([write_jsonl(tmp_path / name, rows)])


def sample(items, **kwargs):
    kwargs.setdefault("per_theme", 5)
    kwargs.setdefault("seed", 0)
    kwargs.setdefault("exclude_ids", set())
    kwargs.setdefault("themes", sorted(set(items["theme"])))
    kwargs.setdefault("short_theme", "error")
    return sample_by_theme(items, **kwargs)


# --- registry and download ---------------------------------------------------------------------

def test_registry_lists_the_originals_and_the_mirror_only_helpers():
    specs = {spec["name"]: spec for spec in dataset_files("healthbench")}
    assert list(specs) == ["oss_eval.jsonl", "hard.jsonl", "consensus.jsonl", "hard_prompt_ids_known.json",
                           "oss_eval_items_meta.jsonl", "srh_subset_partial.jsonl"]
    base = "https://openaipublic.blob.core.windows.net/simple-evals/healthbench/"
    assert specs["oss_eval.jsonl"]["url"] == base + "2025-05-07-06-14-12_oss_eval.jsonl"
    assert specs["hard.jsonl"]["url"] == base + "hard_2025-05-08-21-00-10.jsonl"
    assert specs["consensus.jsonl"]["url"] == base + "consensus_2025-05-09-20-00-46.jsonl"
    assert [specs[n]["mirror_name"] for n in ("oss_eval.jsonl", "hard.jsonl", "consensus.jsonl")] == [
        "oss_eval_items.jsonl", "hard_prompt_ids_known.json", "consensus_items.jsonl"]
    for name in ("hard_prompt_ids_known.json", "oss_eval_items_meta.jsonl", "srh_subset_partial.jsonl"):
        assert specs[name]["url"] is None and specs[name]["mirror_name"] == name
    assert all(spec["sha256"] is None for spec in specs.values())
    for spec in specs.values():
        if spec["mirror_name"]:
            mirror_file(spec["mirror_name"])


def test_acquire_copies_from_the_mirror_and_refuses_what_it_lacks(tmp_path):
    specs = {spec["name"]: spec for spec in dataset_files("healthbench")}
    copied = acquire(specs["hard_prompt_ids_known.json"], tmp_path / "raw", HEALTHBENCH)
    assert copied == tmp_path / "raw" / "hard_prompt_ids_known.json"
    assert copied.read_bytes() == mirror_file("hard_prompt_ids_known.json").read_bytes()
    # The mirror stands in for hard.jsonl with the known Hard ids, under the original name.
    hard = acquire(specs["hard.jsonl"], tmp_path / "raw", HEALTHBENCH)
    assert hard.name == "hard.jsonl" and len(load_hard_ids(hard)) == 903
    with pytest.raises(DownloadError, match="no mirror copy"):
        acquire({**specs["hard.jsonl"], "mirror_name": None}, tmp_path / "raw", HEALTHBENCH)


def test_acquire_without_url_or_mirror_names_the_file(tmp_path):
    spec = dataset_files("healthbench", ["srh_subset_partial.jsonl"])[0]
    with pytest.raises(DownloadError) as caught:
        acquire(spec, tmp_path / "raw", None)
    message = str(caught.value)
    assert "srh_subset_partial.jsonl" in message
    assert "no public URL: only available from a data mirror" in message
    assert not (tmp_path / "raw").exists() or list((tmp_path / "raw").iterdir()) == []


# --- loading the real files --------------------------------------------------------------------

def test_oss_eval_items_counts(oss_eval):
    assert list(oss_eval.columns) == COLUMNS
    assert len(oss_eval) == 321
    assert oss_eval["n_criteria"].sum() == 3842
    assert oss_eval["has_ideal_completion"].sum() == 278
    assert oss_eval["theme"].value_counts().to_dict() == {
        "communication": 52, "complex_responses": 19, "context_seeking": 59, "emergency_referrals": 31,
        "global_health": 84, "health_data_tasks": 16, "hedging": 60}
    assert oss_eval["item_id"].is_unique
    assert (oss_eval["item_id"] == "healthbench:" + oss_eval["prompt_id"]).all()
    assert set(oss_eval["dataset"]) == {"healthbench"}
    assert oss_eval["rubric_tags_available"].all()
    assert oss_eval.attrs["duplicates"] == []


def test_nonhard_counts(nonhard, hard_ids):
    assert len(nonhard) == 208
    assert nonhard["theme"].value_counts().to_dict() == NONHARD_THEMES
    assert nonhard["n_criteria"].sum() == 2492
    assert nonhard["n_negative"].sum() == 738
    assert nonhard["has_ideal_completion"].sum() == 178
    assert (nonhard["ideal_completion"] != "").sum() == 178
    assert not nonhard["prompt_id"].isin(hard_ids).any()
    rubrics = [entry for text in nonhard["rubric_json"] for entry in json.loads(text)]
    levels = Counter(tag for entry in rubrics for tag in entry["tags"] if tag.startswith("level:"))
    assert levels == {"level:example": 2155, "level:cluster": 337}


def test_rows_match_the_file_line_by_line(oss_eval):
    path = mirror_file("oss_eval_items.jsonl")
    lines = path.read_text(encoding="utf-8").split("\n")
    assert set(oss_eval["source_file"]) == {"oss_eval_items.jsonl"}
    for record in oss_eval.itertuples():
        raw = json.loads(lines[record.source_line - 1])
        assert raw["prompt_id"] == record.prompt_id
        assert json.loads(record.prompt_json) == raw["prompt"]
        rubric = json.loads(record.rubric_json)
        assert [{k: e[k] for k in ("criterion", "points", "tags")} for e in rubric] == raw["rubrics"]
        # negative criteria are marked exactly when they take points away
        assert [e["negative"] for e in rubric] == [r["points"] < 0 for r in raw["rubrics"]]
        assert record.n_negative == sum(r["points"] < 0 for r in raw["rubrics"])
        assert f"theme:{record.theme}" in raw["example_tags"]
        ideal = (raw["ideal_completions_data"] or {}).get("ideal_completion") or ""
        assert record.ideal_completion == ideal


def test_negative_means_strictly_below_zero(tmp_path):
    path = write_jsonl(tmp_path / "made_up.jsonl", [fake_item("made-up-1", points=(5, 0, -3, -1), ideal=None)])
    row = load_healthbench([path]).iloc[0]
    assert [e["negative"] for e in json.loads(row["rubric_json"])] == [False, False, True, True]
    assert (row["n_criteria"], row["n_negative"]) == (4, 2)
    assert (row["ideal_completion"], row["has_ideal_completion"]) == ("", False)


def test_task_renders_every_turn(oss_eval):
    multi = oss_eval[oss_eval["prompt_json"].map(lambda text: len(json.loads(text))) == 5].iloc[0]
    conversation = json.loads(multi["prompt_json"])
    expected = "\n\n".join(f"{m['role']}: {m['content']}" for m in conversation)
    assert multi["task"] == expected == render_task(conversation)
    assert multi["task"].startswith("user: ")
    assert multi["task"].count("\n\nassistant: ") == 2 and multi["task"].count("\n\nuser: ") == 2


def test_duplicates_across_files_keep_the_first_and_are_recorded(hard_ids):
    oss, consensus = mirror_file("oss_eval_items.jsonl"), mirror_file("consensus_items.jsonl")
    items = load_healthbench([oss, consensus])
    duplicates = items.attrs["duplicates"]
    assert len(items) == 420 and len(duplicates) == 126
    assert {d["source_file"] for d in duplicates} == {"consensus_items.jsonl"}
    assert all(d["reason"].startswith("duplicate prompt_id, first in oss_eval_items.jsonl, line ") for d in duplicates)
    # the kept copy is the full oss_eval one, not the consensus one
    kept = items.set_index("prompt_id").loc[[d["prompt_id"] for d in duplicates]]
    assert set(kept["source_file"]) == {"oss_eval_items.jsonl"}
    # in the other order the consensus copy wins
    reversed_items = load_healthbench([consensus, oss])
    assert len(reversed_items) == 420
    assert set(reversed_items.set_index("prompt_id").loc[kept.index, "source_file"]) == {"consensus_items.jsonl"}

    _, left_out, manifest = sample(items, per_theme=5, exclude_ids=hard_ids, themes=list(THEMES))
    assert manifest["input_duplicates_dropped"] == 126
    assert manifest["left_out"]["items"]["duplicate prompt_id"] == 126
    assert (left_out["reason"].str.startswith("duplicate prompt_id")).sum() == 126


def test_hard_ids_from_both_formats(tmp_path, oss_eval, hard_ids):
    assert len(hard_ids) == 903
    meta = [json.loads(line) for line in mirror_file("oss_eval_items_meta.jsonl").read_text().splitlines()]
    known = {row["prompt_id"] for row in meta if row["known_hard"]}
    assert len(known) == 113
    assert set(oss_eval["prompt_id"]) & hard_ids == known

    hard_file = write_jsonl(tmp_path / "hard.jsonl", [fake_item("made-up-hard-1"), fake_item("made-up-hard-2")])
    assert load_hard_ids(hard_file) == {"made-up-hard-1", "made-up-hard-2"}
    both = load_hard_ids([mirror_file("hard_prompt_ids_known.json"), hard_file])
    assert both == hard_ids | {"made-up-hard-1", "made-up-hard-2"}


def test_srh_partial(srh):
    assert list(srh.columns) == COLUMNS
    assert len(srh) == 637
    assert not srh["rubric_tags_available"].any()
    assert not srh["has_ideal_completion"].any() and set(srh["ideal_completion"]) == {""}
    assert srh["theme"].value_counts().to_dict() == {
        "global_health": 215, "hedging": 132, "communication": 100, "context_seeking": 71,
        "health_data_tasks": 52, "complex_responses": 42, "emergency_referrals": 25}
    first = json.loads(srh.iloc[0]["rubric_json"])
    assert all(entry["tags"] == [] for entry in first)
    assert [e["negative"] for e in first] == [e["points"] < 0 for e in first]
    assert any(e["negative"] for e in first)


# --- malformed rows ----------------------------------------------------------------------------

def _drop(field):
    def mutate(row):
        del row[field]
    return mutate


def _drop_rubric(field):
    def mutate(row):
        del row["rubrics"][1][field]
    return mutate


def _set_points(value):
    def mutate(row):
        row["rubrics"][0]["points"] = value
    return mutate


def _set_tags(tags):
    def mutate(row):
        row["example_tags"] = tags
    return mutate


@pytest.mark.parametrize("mutate, message", [
    (_drop("prompt_id"), "missing field 'prompt_id'"),
    (_drop("prompt"), "missing field 'prompt'"),
    (_drop("rubrics"), "missing field 'rubrics'"),
    (_drop("example_tags"), "missing field 'example_tags'"),
    (_drop_rubric("criterion"), "rubrics[1]: missing field 'criterion'"),
    (_drop_rubric("points"), "rubrics[1]: missing field 'points'"),
    (_drop_rubric("tags"), "rubrics[1]: missing field 'tags'"),
    (_set_points("5"), "rubrics[0]: 'points' must be an integer"),
    (_set_points(5.0), "rubrics[0]: 'points' must be an integer"),
    (_set_points(True), "rubrics[0]: 'points' must be an integer"),
    (_set_tags(["physician_agreed_category:x"]), "exactly one 'theme:' tag, found 0"),
    (_set_tags(["theme:hedging", "theme:communication"]), "exactly one 'theme:' tag, found 2"),
])
def test_malformed_rows_name_file_and_line(tmp_path, mutate, message):
    bad = fake_item("made-up-2")
    mutate(bad)
    path = write_jsonl(tmp_path / "made_up.jsonl", [fake_item("made-up-1"), bad, fake_item("made-up-3")])
    with pytest.raises(DataFormatError) as caught:
        load_healthbench([path])
    assert caught.value.line == 2
    assert str(caught.value).startswith(f"{path}, line 2: ")
    assert message in str(caught.value)


def test_bad_json_names_file_and_line(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [fake_item("made-up-1")])
    bad = write_jsonl(tmp_path / "bad.jsonl", [fake_item("made-up-2"), "", '{"prompt_id": "x", '])
    with pytest.raises(DataFormatError) as caught:
        load_healthbench([good, bad])
    assert caught.value.path == str(bad) and caught.value.line == 3
    assert "invalid JSON" in str(caught.value)


def test_malformed_srh_and_hard_files(tmp_path):
    srh_row = fake_srh_item("made-up-1", "hedging")
    del srh_row["rubrics"][0]["points"]
    path = write_jsonl(tmp_path / "srh.jsonl", [fake_srh_item("made-up-0", "hedging"), srh_row])
    with pytest.raises(DataFormatError, match=r"srh.jsonl, line 2: rubrics\[0\]: missing field 'points'"):
        load_srh_partial(path)
    no_theme = fake_srh_item("made-up-1", "hedging")
    del no_theme["theme"]
    with pytest.raises(DataFormatError, match="line 1: missing field 'theme'"):
        load_srh_partial(write_jsonl(tmp_path / "srh2.jsonl", [no_theme]))
    repeated = write_jsonl(tmp_path / "srh3.jsonl", [fake_srh_item("made-up-1", "hedging")] * 2)
    with pytest.raises(DataFormatError, match="line 2: duplicate item healthbench:made-up-1"):
        load_srh_partial(repeated)

    ids = tmp_path / "hard_ids.json"
    ids.write_text('[\n"a",\n"b",\n3\n]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"hard_ids.json, line 4: a Hard id must be a non-empty string"):
        load_hard_ids(ids)


# --- sampling on made-up items -----------------------------------------------------------------

def test_sample_is_stratified_seeded_and_reproducible(tmp_path):
    items = fake_items(tmp_path, {"a": 20, "b": 9, "c": 12})
    first, left_out, manifest = sample(items, per_theme=8, seed=3)
    assert first["theme"].value_counts().to_dict() == {"a": 8, "b": 8, "c": 8}
    assert list(first.columns) == COLUMNS + ["split"] and set(first["split"]) == {"evaluation"}
    assert list(left_out.columns) == LEFT_OUT_COLUMNS
    assert set(left_out["reason"]) == {"not sampled"} and len(left_out) == 41 - 24
    assert set(first["item_id"]) | set(left_out["item_id"]) == set(items["item_id"])

    shuffled = items.sample(frac=1, random_state=1).reset_index(drop=True)
    again, _, again_manifest = sample(shuffled, per_theme=8, seed=3, themes=["c", "b", "a"])
    assert again["item_id"].tolist() == first["item_id"].tolist()
    assert {k: v for k, v in again_manifest.items() if k != "themes"} == {
        k: v for k, v in manifest.items() if k != "themes"}

    other, _, _ = sample(items, per_theme=8, seed=4)
    assert set(other["item_id"]) != set(first["item_id"])


def test_seed_use_per_theme_is_as_documented(tmp_path):
    items = fake_items(tmp_path, {"a": 20, "b": 11})
    drawn, _, _ = sample(items, per_theme=6, seed=7)
    for theme in ("a", "b"):
        eligible = sorted(items.loc[items["theme"] == theme, "item_id"])
        order = np.random.default_rng([7, zlib.crc32(theme.encode("utf-8"))]).permutation(len(eligible))
        expected = {eligible[i] for i in order[:6]}
        assert set(drawn.loc[drawn["theme"] == theme, "item_id"]) == expected
    # one theme's draw does not depend on the other themes
    only_a, _, _ = sample(items[items["theme"] == "a"], per_theme=6, seed=7)
    assert set(only_a["item_id"]) == set(drawn.loc[drawn["theme"] == "a", "item_id"])


def test_excluded_and_unselected_themes_are_left_out_with_reasons(tmp_path):
    items = fake_items(tmp_path, {"a": 10, "b": 10, "z": 4})
    hard = {f"a-{k:03d}" for k in range(4)} | {"healthbench:b-000"}
    drawn, left_out, manifest = sample(items, per_theme=5, exclude_ids=hard, themes=["a", "b"])
    assert not drawn["prompt_id"].isin({"a-000", "a-001", "a-002", "a-003", "b-000"}).any()
    reasons = left_out.set_index("prompt_id")["reason"]
    assert (reasons[["a-000", "a-001", "a-002", "a-003", "b-000"]] == "in HealthBench-Hard").all()
    assert (reasons[[f"z-{k:03d}" for k in range(4)]] == "theme not selected: z").all()
    assert manifest["left_out"]["items"] == {
        "in HealthBench-Hard": 5, "not sampled": 1 + 4, "theme not selected: z": 4}
    assert manifest["exclude_ids"] == 5


def test_bad_arguments_are_refused(tmp_path):
    items = fake_items(tmp_path, {"a": 3})
    with pytest.raises(ValueError, match="short_theme"):
        sample(items, short_theme="ignore")
    with pytest.raises(ValueError, match="per_theme"):
        sample(items, per_theme=0)
    with pytest.raises(ValueError, match="themes"):
        sample(items, themes=["a", "a"])


def test_top_up_without_a_table_draws_as_usual_when_no_theme_is_short(tmp_path):
    # The hub's full HealthBench: paper.yaml asks for top_up, but no theme is short and the
    # partial file, which exists only in a data mirror, is not there.
    items = fake_items(tmp_path, {"a": 8, "b": 6})
    drawn, left_out, manifest = sample(items, short_theme="top_up", top_up=None)
    as_error, left_as_error, _ = sample(items, short_theme="error")
    pd.testing.assert_frame_equal(drawn, as_error)
    pd.testing.assert_frame_equal(left_out, left_as_error)
    assert manifest["top_up_items"] == 0
    assert manifest["short_themes"] == {} and manifest["topped_up"] == {}
    assert manifest["left_out"]["top_up"] == {}


def test_top_up_without_a_table_raises_for_a_short_theme(tmp_path):
    items = fake_items(tmp_path, {"a": 8, "b": 3})
    with pytest.raises(ValueError, match="b: requested 5, available 3; short_theme is top_up, "
                                         "but there is no top-up table") as caught:
        sample(items, short_theme="top_up", top_up=None)
    assert "data mirror" in str(caught.value)


def test_top_up_that_is_still_short_raises(tmp_path):
    items = fake_items(tmp_path, {"a": 2})
    top = load_srh_partial(write_jsonl(tmp_path / "srh.jsonl", [fake_srh_item("extra-1", "a")]))
    with pytest.raises(ValueError, match="a: requested 5, available 2 \\+ 1 for top-up"):
        sample(items, per_theme=5, short_theme="top_up", top_up=top)


# --- the paper's sample on the real files ------------------------------------------------------

def real_sample(nonhard, hard_ids, policy, srh=None, seed=0):
    return sample_by_theme(nonhard, per_theme=15, seed=seed, exclude_ids=hard_ids, themes=list(THEMES),
                           short_theme=policy, top_up=srh)


def test_real_short_themes_raise_by_default(nonhard, hard_ids):
    with pytest.raises(ValueError) as caught:
        real_sample(nonhard, hard_ids, "error")
    message = str(caught.value)
    assert "health_data_tasks: requested 15, available 9" in message
    assert "complex_responses: requested 15, available 12" in message
    assert "hedging" not in message


def test_real_take_all_reports_the_shortfalls(nonhard, hard_ids, caplog):
    with caplog.at_level(logging.WARNING, logger="rubriclab.data.healthbench"):
        drawn, left_out, manifest = real_sample(nonhard, hard_ids, "take_all")
    assert manifest["short_themes"] == {"complex_responses": {"requested": 15, "available": 12},
                                        "health_data_tasks": {"requested": 15, "available": 9}}
    assert manifest["short_theme"] == "take_all" and manifest["topped_up"] == {}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("health_data_tasks" in m for m in warned) and any("complex_responses" in m for m in warned)
    counts = drawn["theme"].value_counts().to_dict()
    assert counts == {theme: min(15, n) for theme, n in NONHARD_THEMES.items()}
    assert len(drawn) == 96 == manifest["sample_items"]
    assert manifest["left_out"]["items"] == {"not sampled": 208 - 96}
    assert manifest["n_criteria"] == drawn["n_criteria"].sum()
    assert manifest["n_negative"] == drawn["n_negative"].sum()
    assert manifest["items_with_ideal_completion"] == drawn["has_ideal_completion"].sum()
    json.dumps(manifest)


def test_real_top_up_fills_from_srh(nonhard, hard_ids, srh, caplog):
    with caplog.at_level(logging.WARNING, logger="rubriclab.data.healthbench"):
        drawn, left_out, manifest = real_sample(nonhard, hard_ids, "top_up", srh)
    assert drawn["theme"].value_counts().to_dict() == {theme: 15 for theme in THEMES}
    assert manifest["topped_up"] == {"complex_responses": 3, "health_data_tasks": 6}
    assert manifest["counts_by_theme"]["health_data_tasks"] == {
        **manifest["counts_by_theme"]["health_data_tasks"], "total": 15, "full": 9, "topped_up": 6}
    assert manifest["short_themes"]["health_data_tasks"]["available"] == 9
    assert manifest["items_without_rubric_tags"] == 9
    topped = drawn[~drawn["rubric_tags_available"]]
    assert topped["theme"].value_counts().to_dict() == {"health_data_tasks": 6, "complex_responses": 3}
    assert set(topped["source_file"]) == {"srh_subset_partial.jsonl"}
    assert not drawn["prompt_id"].isin(hard_ids).any()
    assert not topped["prompt_id"].isin(nonhard["prompt_id"]).any()
    assert drawn["item_id"].is_unique
    assert sum("topped up with 6" in r.getMessage() for r in caplog.records) == 1
    top_reasons = manifest["left_out"]["top_up"]
    assert top_reasons["in HealthBench-Hard"] == 104
    assert top_reasons["full-format item available"] == 18  # 27 have a full copy, 9 of them Hard
    assert sum(top_reasons.values()) == 637 - 9
    # the full-format part equals the take_all sample
    take_all, _, _ = real_sample(nonhard, hard_ids, "take_all")
    assert set(drawn.loc[drawn["rubric_tags_available"], "item_id"]) == set(take_all["item_id"])


def test_real_sample_excludes_hard_from_the_full_file(oss_eval, hard_ids):
    drawn, left_out, manifest = real_sample(oss_eval, hard_ids, "take_all")
    assert not drawn["prompt_id"].isin(hard_ids).any()
    assert manifest["left_out"]["items"]["in HealthBench-Hard"] == 113
    nonhard_drawn, _, _ = real_sample(oss_eval[~oss_eval["prompt_id"].isin(hard_ids)], hard_ids, "take_all")
    assert drawn["item_id"].tolist() == nonhard_drawn["item_id"].tolist()
    reseeded, _, _ = real_sample(oss_eval, hard_ids, "take_all", seed=1)
    assert set(reseeded["item_id"]) != set(drawn["item_id"])


def test_outputs_write_with_write_prepared(tmp_path, nonhard, hard_ids, srh):
    drawn, left_out, manifest = real_sample(nonhard, hard_ids, "top_up", srh)
    out = tmp_path / "prepared"
    write_prepared(drawn, left_out, manifest, out / "healthbench.csv", out / "left_out.csv", out / "manifest.json")
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8")) == manifest
    back = pd.read_csv(out / "healthbench.csv", keep_default_na=False)
    assert back["item_id"].tolist() == drawn["item_id"].tolist()
    assert back["rubric_json"].map(json.loads).tolist() == drawn["rubric_json"].map(json.loads).tolist()
    assert len(pd.read_csv(out / "left_out.csv")) == len(left_out)
