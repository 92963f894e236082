import json
from pathlib import Path

import pandas as pd
import pytest

from rubriclab.data.prepare import prepare, write_prepared
from rubriclab.data.summedits import load_summedits

SUMMEDITS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "summedits"


def make_items(groups=40, per_group=5, domains=("a", "b")) -> pd.DataFrame:
    """groups x per_group items; in each group the first two are correct, the rest flawed."""
    rows = []
    for g in range(groups):
        domain = domains[g % len(domains)]
        for k in range(per_group):
            rows.append({
                "item_id": f"toy:{domain}:g{g:03d}_{k}",
                "dataset": "toy",
                "domain": domain,
                "group": f"g{g:03d}",
                "task": f"document {g}",
                "output": f"summary {g}.{k}",
                "label": "correct" if k < 2 else "flawed",
                "flaw_type": "" if k < 2 else "entity_modification",
                "source_file": f"toy_{domain}.json",
                "source_line": 10 * g + k + 1,
            })
    return pd.DataFrame(rows)


EVALUATION = {"correct": 10, "flawed": 15}
CALIBRATION = {"correct": 8, "flawed": 12}


def run(items, seed=0, **kwargs):
    kwargs.setdefault("evaluation", EVALUATION)
    kwargs.setdefault("calibration", CALIBRATION)
    return prepare(items, seed=seed, **kwargs)


def test_exact_counts_per_split_and_label():
    prepared, left_out, manifest = run(make_items())
    counts = prepared.groupby(["split", "label"]).size().to_dict()
    assert counts == {("evaluation", "correct"): 10, ("evaluation", "flawed"): 15,
                      ("calibration", "correct"): 8, ("calibration", "flawed"): 12}
    assert manifest["counts"] == {"evaluation": EVALUATION, "calibration": CALIBRATION}
    assert manifest["requested"] == {"evaluation": EVALUATION, "calibration": CALIBRATION}


def test_prepared_keeps_the_input_columns_and_is_sorted():
    items = make_items()
    prepared, left_out, _ = run(items)
    assert list(prepared.columns) == list(items.columns) + ["split"]
    assert list(left_out.columns) == ["item_id", "source_file", "source_line", "reason"]
    keys = list(zip(prepared["split"], prepared["item_id"]))
    assert keys == sorted(keys)
    assert prepared["split"].iloc[0] == "calibration" and prepared["split"].iloc[-1] == "evaluation"


def test_same_seed_same_table_and_different_seed_different_selection():
    items = make_items()
    first = run(items, seed=3)
    again = run(items, seed=3)
    pd.testing.assert_frame_equal(first[0], again[0])
    pd.testing.assert_frame_equal(first[1], again[1])
    assert first[2] == again[2]
    other = run(items, seed=4)
    assert set(other[0]["item_id"]) != set(first[0]["item_id"])


def test_input_row_order_does_not_matter():
    items = make_items()
    shuffled = items.sample(frac=1, random_state=1).reset_index(drop=True)
    pd.testing.assert_frame_equal(run(items)[0], run(shuffled)[0])
    pd.testing.assert_frame_equal(run(items)[1], run(shuffled)[1])


@pytest.mark.parametrize("seed", range(5))
def test_no_group_is_in_both_splits(seed):
    prepared, left_out, _ = run(make_items(), seed=seed)
    evaluation_groups = set(prepared.loc[prepared["split"] == "evaluation", "group"])
    calibration_groups = set(prepared.loc[prepared["split"] == "calibration", "group"])
    assert evaluation_groups and calibration_groups
    assert not evaluation_groups & calibration_groups


def test_every_input_row_is_prepared_or_left_out_once_with_a_reason():
    items = make_items()
    prepared, left_out, manifest = run(items, max_task_chars=11, domains=["a", "b"])
    used = list(prepared["item_id"]) + list(left_out["item_id"])
    assert sorted(used) == sorted(items["item_id"])
    assert (left_out["reason"].str.len() > 0).all()
    reasons = set(left_out["reason"])
    assert reasons <= {"shares its group with an evaluation item", "not sampled",
                       "task longer than max_task_chars=11"}
    assert "shares its group with an evaluation item" in reasons and "not sampled" in reasons
    assert sum(manifest["left_out"].values()) == len(left_out)
    assert manifest["input_rows"] == len(items) == manifest["prepared_rows"] + len(left_out)
    merged = left_out.merge(items, on="item_id", suffixes=("", "_input"))
    assert (merged["source_line"] == merged["source_line_input"]).all()


def test_short_pool_raises_naming_split_label_requested_and_available():
    items = make_items(groups=10, per_group=1)  # one correct item per group: 10 correct, 0 flawed
    items.loc[5:, "label"] = "flawed"  # 5 correct, 5 flawed, every item its own group
    prepare(items, seed=0, evaluation={"correct": 3, "flawed": 3}, calibration={"correct": 2, "flawed": 2})
    with pytest.raises(ValueError) as caught:
        prepare(items, seed=0, evaluation={"correct": 3, "flawed": 3}, calibration={"correct": 1, "flawed": 3})
    assert str(caught.value) == "toy: split 'calibration' needs 3 'flawed' items but only 2 are available"
    with pytest.raises(ValueError, match="split 'evaluation' needs 6 'correct' items but only 5 are available"):
        prepare(items, seed=0, evaluation={"correct": 6, "flawed": 0}, calibration={"correct": 0, "flawed": 0})


def test_filters_are_recorded_with_their_reasons():
    items = make_items(groups=30)
    long_task = items["group"] == "g000"
    items.loc[long_task, "task"] = "x" * 500
    items.loc[items["item_id"] == "toy:b:g001_4", "output"] = "   "
    items.loc[items["item_id"] == "toy:b:g003_3", "output"] = "summary 3.2"  # duplicates g003_2
    prepared, left_out, manifest = run(
        items, max_task_chars=100, domains=["b"],
        evaluation={"correct": 4, "flawed": 5}, calibration={"correct": 2, "flawed": 3})
    reason = dict(zip(left_out["item_id"], left_out["reason"]))
    assert reason["toy:a:g000_0"] == "domain not selected: a"  # first reason wins over the long task
    assert reason["toy:b:g001_4"] == "empty output"
    assert reason["toy:b:g003_3"] == "duplicate of toy:b:g003_2"
    assert set(prepared["domain"]) == {"b"}
    assert manifest["left_out"]["domain not selected: a"] == 75
    assert manifest["left_out"]["empty output"] == 1
    assert manifest["left_out"]["duplicate (task, output) pair"] == 1
    assert manifest["filters"] == {"max_task_chars": 100, "domains": ["b"]}

    prepared, left_out, manifest = run(items, max_task_chars=100)
    reason = dict(zip(left_out["item_id"], left_out["reason"]))
    assert all(reason[i] == "task longer than max_task_chars=100" for i in items.loc[long_task, "item_id"])
    assert manifest["left_out"]["task longer than max_task_chars=100"] == 5


def test_manifest_counts_by_domain_and_json():
    prepared, left_out, manifest = run(make_items())
    json.dumps(manifest)
    by_domain = manifest["counts_by_domain"]
    for split, counts in manifest["counts"].items():
        for label, n in counts.items():
            assert sum(d[label] for d in by_domain[split].values()) == n
    expected = prepared.groupby(["split", "domain", "label"]).size()
    for (split, domain, label), n in expected.items():
        assert by_domain[split][domain][label] == n
    assert manifest["dataset"] == "toy" and manifest["seed"] == 0


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="evaluation counts"):
        run(make_items(), evaluation={"correct": 1})
    items = make_items()
    items.loc[0, "label"] = "maybe"
    with pytest.raises(ValueError, match="maybe"):
        run(items)


def test_write_prepared_round_trips(tmp_path):
    items = make_items()
    items["task"] = items["task"] + '\nwith "quotes", commas\nand newlines'
    prepared, left_out, manifest = run(items)
    out = tmp_path / "prepared"
    write_prepared(prepared, left_out, manifest, out / "toy.csv", out / "toy_left_out.csv", out / "toy.json")
    back = pd.read_csv(out / "toy.csv", keep_default_na=False)
    assert back["task"].equals(prepared["task"])
    assert list(back["item_id"]) == list(prepared["item_id"])
    assert len(pd.read_csv(out / "toy_left_out.csv")) == len(left_out)
    assert json.loads((out / "toy.json").read_text(encoding="utf-8")) == manifest


@pytest.mark.skipif(not SUMMEDITS.is_dir(), reason=f"no SummEdits mirror at {SUMMEDITS}")
def test_real_summedits_sample():
    items = load_summedits(sorted(SUMMEDITS.glob("summedits_*.json")))
    prepared, left_out, manifest = prepare(
        items, seed=0, evaluation={"correct": 40, "flawed": 40}, calibration={"correct": 20, "flawed": 20})
    assert len(prepared) == 120 and len(prepared) + len(left_out) == len(items) == 4681
    evaluation_groups = set(prepared.loc[prepared["split"] == "evaluation", "group"])
    assert not evaluation_groups & set(prepared.loc[prepared["split"] == "calibration", "group"])
    assert manifest["left_out"]["duplicate (task, output) pair"] == 30
