import json
from pathlib import Path

import pytest

from rubriclab.data.errors import DataFormatError
from rubriclab.data.ragtruth import load_ragtruth

RAGTRUTH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ragtruth"
FAITHJUDGE = [RAGTRUTH / "faithjudge_eval_data" / f"ragtruth_{t}.jsonl" for t in ("qa", "summary", "data2txt")]
DERIVED = [RAGTRUTH / "ragtruth_test_responses.jsonl", RAGTRUTH / "ragtruth_test_sources.jsonl"]
ORIGINAL_FIXTURE = Path(__file__).parent / "fixtures" / "ragtruth_original"
COLUMNS = ["item_id", "dataset", "domain", "group", "task", "output", "label", "flaw_type",
           "model", "upstream_split", "source_file", "source_line"]
COMPARED = ["domain", "group", "task", "output", "label", "flaw_type", "model"]

needs_mirror = pytest.mark.skipif(not RAGTRUTH.is_dir(), reason=f"no RAGTruth mirror at {RAGTRUTH}")


@pytest.fixture(scope="module")
def faithjudge():
    return load_ragtruth(FAITHJUDGE)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@needs_mirror
def test_faithjudge_summary_counts():
    items = load_ragtruth([FAITHJUDGE[1]])
    assert list(items.columns) == COLUMNS
    assert len(items) == 900
    assert (items["label"] == "flawed").sum() == 241
    assert set(items["domain"]) == {"Summary"}
    assert items["group"].nunique() == 150


@needs_mirror
def test_all_faithjudge_files(faithjudge):
    assert len(faithjudge) == 2617
    assert (faithjudge["label"] == "flawed").sum() == 1079
    assert faithjudge["item_id"].is_unique
    assert faithjudge["group"].nunique() == 439
    per_task = faithjudge.groupby("domain")["label"].apply(lambda s: (len(s), int((s == "flawed").sum())))
    assert per_task.to_dict() == {"QA": (817, 259), "Summary": (900, 241), "Data2txt": (900, 579)}
    assert (faithjudge.groupby("model")["label"].apply(lambda s: int((s == "flawed").sum()))["gpt-4-0613"]) == 48


@needs_mirror
def test_faithjudge_rows_match_the_file(faithjudge):
    path = FAITHJUDGE[0]
    first_source = read_jsonl(path)[0]
    rows = faithjudge[(faithjudge["source_file"] == path.name) & (faithjudge["source_line"] == 1)]
    assert list(rows["model"]) == [r["model"] for r in first_source["responses"]]
    assert list(rows["output"]) == [r["response"] for r in first_source["responses"]]
    question, passages = first_source["source"]["question"], first_source["source"]["passages"]
    assert set(rows["task"]) == {f"Question: {question}\n\nPassages:\n{passages}"}
    assert set(rows["item_id"]) == {f"ragtruth:QA-{first_source['source_id']}-{r['model']}"
                                    for r in first_source["responses"]}
    for (_, item), response in zip(rows.iterrows(), first_source["responses"]):
        expected = ";".join(sorted({span["label_type"] for span in response["labels"]}))
        assert item["flaw_type"] == expected
        assert item["label"] == ("flawed" if response["labels"] else "correct")


@needs_mirror
def test_data2txt_task_is_the_business_json(faithjudge):
    source = read_jsonl(FAITHJUDGE[2])[0]
    task = faithjudge[faithjudge["group"] == f"Data2txt-{source['source_id']}"]["task"].iloc[0]
    assert json.loads(task) == source["source"]
    assert task == json.dumps(source["source"], ensure_ascii=False, indent=1)


@needs_mirror
def test_derived_pair_gives_the_same_items_as_faithjudge(faithjudge):
    derived = load_ragtruth(DERIVED)
    assert len(derived) == 2617
    assert set(derived["item_id"]) == set(faithjudge["item_id"])
    left = faithjudge.set_index("item_id")[COMPARED].sort_index()
    right = derived.set_index("item_id")[COMPARED].sort_index()
    assert left.equals(right)
    assert set(derived["source_file"]) == {"ragtruth_test_responses.jsonl"}


@needs_mirror
def test_original_format_built_from_faithjudge_rows_gives_the_same_items(tmp_path, faithjudge):
    """Rewrite a few real FaithJudge sources in the ParticleMedia schema and load them back."""
    task_types = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}
    sources, responses = [], []
    for path in FAITHJUDGE:
        task_type = task_types[path.stem.removeprefix("ragtruth_")]
        for source in read_jsonl(path)[:4]:
            sid = str(source["source_id"])
            sources.append({"source_id": sid, "task_type": task_type, "source": "?",
                            "source_info": source["source"], "prompt": "?"})
            for r in source["responses"]:
                responses.append({"id": str(len(responses)), "source_id": sid, "model": r["model"],
                                  "temperature": 0.7, "labels": r["labels"], "split": "test",
                                  "quality": "good", "response": r["response"]})
    original = load_ragtruth([write_jsonl(tmp_path / "response.jsonl", responses),
                              write_jsonl(tmp_path / "source_info.jsonl", sources)])
    assert len(original) == len(responses) > 60
    expected = faithjudge.set_index("item_id").loc[original["item_id"], COMPARED]
    assert original.set_index("item_id")[COMPARED].equals(expected)
    assert set(original["upstream_split"]) == {"test"}


def test_made_up_original_fixture():
    items = load_ragtruth([ORIGINAL_FIXTURE / "source_info.jsonl", ORIGINAL_FIXTURE / "response.jsonl"])
    assert list(items["item_id"]) == [
        "ragtruth:QA-900001-gpt-4-0613", "ragtruth:QA-900001-llama-2-7b-chat",
        "ragtruth:Summary-900002-gpt-4-0613", "ragtruth:Summary-900002-mistral-7B-instruct",
        "ragtruth:Data2txt-900003-llama-2-13b-chat"]
    assert list(items["label"]) == ["correct", "flawed", "correct", "flawed", "flawed"]
    assert list(items["flaw_type"]) == [
        "", "Evident Conflict", "", "Evident Baseless Info;Evident Conflict", "Subtle Baseless Info"]
    assert list(items["source_line"]) == [1, 2, 3, 4, 5]
    assert set(items["source_file"]) == {"response.jsonl"}
    assert items["task"].iloc[0] == (
        "Question: how tall is the made-up test tower\n\nPassages:\npassage 1:MADE-UP FIXTURE. The test "
        "tower in Testville is 42 metres tall.\n\npassage 2:The test tower was opened in 1999.")
    assert items["task"].iloc[2].startswith("MADE-UP FIXTURE. The Testville council")
    assert items["task"].iloc[4] == '{\n "name": "Made-Up Café",\n "city": "Testville",\n "state": "ZZ",\n' \
        ' "business_stars": 4.0,\n "hours": {\n  "Monday": "9:0-17:0"\n },\n "attributes": {\n' \
        '  "WiFi": "free",\n  "OutdoorSeating": null\n }\n}'
    assert list(items["group"]) == ["QA-900001"] * 2 + ["Summary-900002"] * 2 + ["Data2txt-900003"]


# --- malformed input --------------------------------------------------------------------------

def faithjudge_source(source_id=1, response="The park opens in May.", labels=()):
    return {"source_id": source_id, "source": "An article about a park.",
            "responses": [{"model": "m1", "response": response, "labels": list(labels)}]}


def span(start, end, text, label_type="Evident Conflict"):
    return {"start": start, "end": end, "text": text, "meta": None, "label_type": label_type,
            "implicit_true": False, "due_to_null": False}


def error_for(paths) -> str:
    with pytest.raises(DataFormatError) as caught:
        load_ragtruth(paths)
    return str(caught.value)


def test_bad_json_on_line_3(tmp_path):
    path = tmp_path / "ragtruth_summary.jsonl"
    text = json.dumps(faithjudge_source(1)) + "\n" + json.dumps(faithjudge_source(2)) + "\n{oops\n"
    path.write_text(text)
    assert error_for([path]).startswith(f"{path}, line 3: invalid JSON")


def test_span_offsets_must_match_the_text(tmp_path):
    good = faithjudge_source(1, "The park opens in May.", [span(18, 21, "May")])
    bad = faithjudge_source(2, "The park opens in May.", [span(17, 21, "May")])
    path = write_jsonl(tmp_path / "ragtruth_summary.jsonl", [good, bad])
    message = error_for([path])
    assert message.startswith(f"{path}, line 2: responses[0]: labels[0]: response[17:21] is ' May'")
    outside = faithjudge_source(3, "Short.", [span(2, 40, "ort.")])
    path = write_jsonl(tmp_path / "ragtruth_summary.jsonl", [good, outside])
    assert "line 2: responses[0]: labels[0]: offsets 2:40 are outside the response" in error_for([path])


def test_faithjudge_source_must_fit_the_task_type(tmp_path):
    path = write_jsonl(tmp_path / "ragtruth_qa.jsonl", [faithjudge_source(1)])
    assert "line 1: a QA source must be an object" in error_for([path])
    path = write_jsonl(tmp_path / "faithjudge_summary.jsonl", [faithjudge_source(1)])
    assert "must be named ragtruth_<qa|summary|data2txt>.jsonl" in error_for([path])


def test_missing_and_mistyped_fields(tmp_path):
    row = faithjudge_source(1)
    del row["responses"][0]["labels"]
    path = write_jsonl(tmp_path / "ragtruth_summary.jsonl", [faithjudge_source(2), row])
    assert error_for([path]).endswith("line 2: responses[0]: missing field 'labels'")
    path = write_jsonl(tmp_path / "ragtruth_summary.jsonl", [faithjudge_source(source_id=None)])
    assert "line 1: field 'source_id' must be an int or a non-empty string" in error_for([path])


def test_duplicate_item_ids_name_both_locations(tmp_path):
    first = write_jsonl(tmp_path / "ragtruth_summary.jsonl", [faithjudge_source(7), faithjudge_source(8)])
    (tmp_path / "copy").mkdir()
    second = write_jsonl(tmp_path / "copy" / "ragtruth_summary.jsonl", [faithjudge_source(8)])
    message = error_for([first, second])
    assert message == (f"{second}, line 1: duplicate item ragtruth:Summary-8-m1, "
                       f"first seen in {first}, line 2")


@needs_mirror
def test_faithjudge_and_derived_together_are_duplicates():
    message = error_for([FAITHJUDGE[1], *DERIVED])
    assert "ragtruth_summary.jsonl" in message and "ragtruth_test_responses.jsonl" in message


def derived_pair(tmp_path, responses, sources):
    return [write_jsonl(tmp_path / "ragtruth_test_responses.jsonl", responses),
            write_jsonl(tmp_path / "ragtruth_test_sources.jsonl", sources)]


def derived_response(source_id="5", **changes):
    row = {"uid": f"Summary-{source_id}-m1", "task_type": "Summary", "source_id": source_id, "model": "m1",
           "response": "Fine.", "labels": [], "hallucinated": 0, "hallucinated_excl_implicit_true": 0,
           "label_types": []}
    return {**row, **changes}


SUMMARY_SOURCE = {"source_id": "5", "task_type": "Summary", "question": None, "context": "An article."}


def test_derived_response_needs_its_source(tmp_path):
    paths = derived_pair(tmp_path, [derived_response("5"), derived_response("6")], [SUMMARY_SOURCE])
    assert error_for(paths).endswith("ragtruth_test_responses.jsonl, line 2: no source Summary 6 in the sources files")
    assert "pass the matching ragtruth_test_sources.jsonl" in error_for(paths[:1])


def test_derived_response_must_agree_with_its_own_fields(tmp_path):
    paths = derived_pair(tmp_path, [derived_response(hallucinated=1)], [SUMMARY_SOURCE])
    assert "line 1: field 'hallucinated' is 1 but the response has 0 spans" in error_for(paths)
    paths = derived_pair(tmp_path, [derived_response(uid="Summary-5-m2")], [SUMMARY_SOURCE])
    assert "line 1: field 'uid' is 'Summary-5-m2'" in error_for(paths)
    paths = derived_pair(tmp_path, [derived_response(task_type="Dialogue")], [SUMMARY_SOURCE])
    assert "line 1: field 'task_type' must be one of" in error_for(paths)


def test_duplicate_sources_are_rejected(tmp_path):
    paths = derived_pair(tmp_path, [derived_response()], [SUMMARY_SOURCE, SUMMARY_SOURCE])
    assert "ragtruth_test_sources.jsonl, line 2: duplicate source ('Summary', '5')" in error_for(paths)


def test_unknown_format_is_rejected(tmp_path):
    path = write_jsonl(tmp_path / "other.jsonl", [{"question": "?", "answer": "!"}])
    assert error_for([path]).startswith(f"{path}, line 1: not a known RAGTruth format")


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_file_is_refused_by_name(tmp_path, content):
    path = tmp_path / "ragtruth_qa.jsonl"
    path.write_text(content)
    assert error_for([path]) == f"{path}: the file is empty: a data file needs at least one row " \
                                "(fetch it again: delete it and rerun)"
