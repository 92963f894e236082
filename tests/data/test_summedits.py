import json
from pathlib import Path

import pytest

from rubriclab.data.errors import DataFormatError
from rubriclab.data.summedits import load_summedits

SUMMEDITS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "summedits"
DOMAINS = ["ectsum", "news", "podcast", "qmsumm", "sales_call", "sales_email", "samsum", "scitldr"]
PARTIAL = "summedits_billsum_partial_opencompass.jsonl"
COLUMNS = ["item_id", "dataset", "domain", "group", "task", "output", "label", "flaw_type",
           "upstream_split", "source_file", "source_line"]

needs_mirror = pytest.mark.skipif(not SUMMEDITS.is_dir(), reason=f"no SummEdits mirror at {SUMMEDITS}")


def row(id_, label=1, **extra):
    return {"id": id_, "doc": "A document.", "summary": "A summary.", "label": label,
            "original_summary": "A summary.", "edit_types": [], **extra}


@needs_mirror
def test_news_counts_and_columns():
    items = load_summedits([SUMMEDITS / "summedits_news.json"])
    assert list(items.columns) == COLUMNS
    assert len(items) == 819
    assert (items["label"] == "correct").sum() == 321
    assert (items["label"] == "flawed").sum() == 498
    assert items["upstream_split"].value_counts().to_dict() == {"test": 686, "evaluation": 133}
    assert items["group"].nunique() == 25
    assert items["item_id"].is_unique
    first = items.iloc[0]
    assert first["item_id"] == "summedits:news:63f9455b8d931ba6e664fb84_og"
    assert first["group"] == "63f9455b8d931ba6e664fb84"
    assert (first["dataset"], first["domain"], first["source_file"]) == ("summedits", "news", "summedits_news.json")


@needs_mirror
def test_source_line_points_at_the_start_of_each_row():
    path = SUMMEDITS / "summedits_scitldr.json"
    lines = path.read_text(encoding="utf-8").split("\n")
    items = load_summedits([path])
    ids = items["item_id"].str.split(":").str[-1]
    for line, id_ in zip(items["source_line"], ids):
        assert lines[line - 1].strip() == "{"
        assert json.dumps(id_) in lines[line]


@needs_mirror
def test_all_domains_and_partial_billsum():
    items = load_summedits([SUMMEDITS / f"summedits_{d}.json" for d in DOMAINS] + [SUMMEDITS / PARTIAL])
    complete = items[items["domain"] != "billsum"]
    assert len(complete) == 4681
    assert (complete["label"] == "correct").sum() == 1648
    assert complete["group"].nunique() == 163
    billsum = items[items["domain"] == "billsum"]
    assert len(billsum) == 212
    assert (billsum["label"] == "correct").sum() == 87
    assert billsum["group"].nunique() == 7
    assert set(billsum["upstream_split"]) == {""}
    assert list(billsum["source_line"][:3]) == [1, 2, 3]
    assert items["item_id"].is_unique


@needs_mirror
def test_flaw_type_is_set_for_flawed_rows_only():
    items = load_summedits([SUMMEDITS / f"summedits_{d}.json" for d in DOMAINS])
    original = {}
    for d in DOMAINS:
        for r in json.loads((SUMMEDITS / f"summedits_{d}.json").read_text(encoding="utf-8")):
            original[f"summedits:{d}:{r['id']}"] = r
    for item_id, label, flaw_type in zip(items["item_id"], items["label"], items["flaw_type"]):
        r = original[item_id]
        assert label == ("correct" if r["label"] == 1 else "flawed")
        assert flaw_type == ("" if r["label"] == 1 else ";".join(r["edit_types"]))
    # some consistent rows carry edit types upstream; they must not become flaws
    assert sum(1 for r in original.values() if r["label"] == 1 and r["edit_types"]) > 0


def test_array_and_json_lines_give_the_same_items(tmp_path):
    rows = [row("doc1_og"), row("doc1_0", label=0, edit_types=["antonym_swap", "entity_modification"])]
    (tmp_path / "array").mkdir()
    (tmp_path / "lines").mkdir()
    (tmp_path / "array" / "summedits_toy.json").write_text(json.dumps(rows, indent=4))
    (tmp_path / "lines" / "summedits_toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from_array = load_summedits([tmp_path / "array" / "summedits_toy.json"])
    from_lines = load_summedits([tmp_path / "lines" / "summedits_toy.jsonl"])
    keep = ["item_id", "group", "label", "flaw_type", "task", "output"]
    assert from_array[keep].equals(from_lines[keep])
    assert list(from_array["flaw_type"]) == ["", "antonym_swap;entity_modification"]
    assert list(from_array["source_line"]) == [2, 10]
    assert list(from_lines["source_line"]) == [1, 2]


def test_empty_array_gives_no_rows(tmp_path):
    path = tmp_path / "summedits_empty.json"
    path.write_text("[\n]\n")
    items = load_summedits([path])
    assert len(items) == 0 and list(items.columns) == COLUMNS


def error_for(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_summedits([path])
    return str(caught.value)


def test_bad_json_line_is_reported(tmp_path):
    path = tmp_path / "summedits_billsum_partial_opencompass.jsonl"
    text = json.dumps(row("a_og")) + "\n" + json.dumps(row("a_0")) + "\n" + '{"id": "a_1", "doc": \n'
    message = error_for(path, text)
    assert message.startswith(f"{path}, line 3: invalid JSON")


def test_missing_field_in_array_reports_the_line_where_the_element_starts(tmp_path):
    first = json.dumps(row("a_og"), indent=2).replace("\n", "\n  ")  # 8 lines: lines 2-9
    broken = row("a_0")
    del broken["summary"]
    text = "[\n  " + first + ",\n  " + json.dumps(broken) + ",\n  " + json.dumps(row("a_1")) + "\n]\n"
    assert text.split("\n")[9].strip().startswith('{"id": "a_0"')  # element 2 starts on line 10
    message = error_for(tmp_path / "summedits_toy.json", text)
    assert "summedits_toy.json, line 10: missing field 'summary'" in message


def test_missing_summary_on_line_9(tmp_path):
    compact = [json.dumps(row(f"a_{k}")) for k in range(3)]
    broken = row("a_3")
    del broken["summary"]
    # line 1 "[", three one-line elements on lines 2-4, blank lines 5-8, the bad element on 9
    text = "[\n" + ",\n".join(compact) + ",\n\n\n\n\n" + json.dumps(broken, indent=2) + "\n]"
    message = error_for(tmp_path / "summedits_toy.json", text)
    assert message == f"{tmp_path / 'summedits_toy.json'}, line 9: missing field 'summary'"


@pytest.mark.parametrize("label, shown", [(2, "2"), ("x", "'x'"), (True, "True"), (None, "None")])
def test_label_must_be_0_or_1(tmp_path, label, shown):
    text = json.dumps(row("a_og")) + "\n" + json.dumps(row("a_0", label=label)) + "\n"
    message = error_for(tmp_path / "summedits_toy.jsonl", text)
    assert message.endswith(f"summedits_toy.jsonl, line 2: field 'label' must be 0 or 1, got {shown}")


def test_wrong_types_are_rejected(tmp_path):
    assert "field 'edit_types' must be a list" in error_for(
        tmp_path / "summedits_a.jsonl", json.dumps(row("a_0", edit_types="antonym_swap")) + "\n")
    assert "field 'summary' must be a string" in error_for(
        tmp_path / "summedits_b.jsonl", json.dumps({**row("a_0"), "summary": 3}) + "\n")
    assert "field 'split' must be a string" in error_for(
        tmp_path / "summedits_c.jsonl", json.dumps(row("a_0", split=1)) + "\n")
    assert "line 2: expected a JSON object" in error_for(tmp_path / "summedits_d.json", "[\n[1, 2]\n]")


def test_broken_array_structure_is_reported(tmp_path):
    elements = json.dumps(row("a_og")) + "\n" + json.dumps(row("a_0"))  # missing comma
    assert "line 3: expected ',' or ']'" in error_for(tmp_path / "summedits_toy.json", "[\n" + elements + "\n]")
    bad_element = '[\n{"id": "a_og",\n "doc": oops}\n]'
    assert "summedits_toy.json, line 2: invalid JSON" in error_for(tmp_path / "summedits_toy.json", bad_element)
    assert "line 1: expected a JSON array or JSON lines" in error_for(tmp_path / "summedits_toy.json", '"text"')


def test_file_name_must_name_the_domain(tmp_path):
    message = error_for(tmp_path / "news.json", json.dumps([row("a_og")]))
    assert "news.json" in message and "summedits_<domain>" in message


def test_duplicate_items_across_files_name_both_locations(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "summedits_toy.jsonl").write_text(json.dumps(row("x_og")) + "\n")
    with pytest.raises(DataFormatError) as caught:
        load_summedits([tmp_path / "a" / "summedits_toy.jsonl", tmp_path / "b" / "summedits_toy.jsonl"])
    message = str(caught.value)
    assert str(tmp_path / "a" / "summedits_toy.jsonl") in message
    assert str(tmp_path / "b" / "summedits_toy.jsonl") in message
