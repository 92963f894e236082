"""rubriclab.methods.logs on files the tools wrote themselves (tests/fixtures/judge_logs: Inspect
AI's mockllm, promptfoo's echo provider, lm-eval's dummy model; README.md there says how).

Each test counts the file's verdicts from its raw JSON, apart from the reader, and compares."""

import json
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from rubriclab.cli import main
from rubriclab.methods import InputError, attribute
from rubriclab.methods.logs import read_judged, read_log

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "judge_logs"
INSPECT_JSON = LOGS / "inspect" / "tiny.json"
INSPECT_EVAL = LOGS / "inspect" / "tiny.eval"
PROMPTFOO = LOGS / "promptfoo" / "results.json"
LM_EVAL = LOGS / "lm_eval" / "samples_tiny_mc.jsonl"


def passes(table: pd.DataFrame) -> dict:
    """{check: (passes, items)} of a long verdict table."""
    return {check: (int((group["verdict"] == "pass").sum()), len(group))
            for check, group in table.groupby("check_id")}


def test_the_fixtures_are_the_tools_own_and_small():
    raw = json.loads(INSPECT_JSON.read_text())
    assert raw["eval"]["model"] == "mockllm/model"
    assert raw["eval"]["packages"]["inspect_ai"]
    assert json.loads(PROMPTFOO.read_text())["results"]["results"][0]["provider"]["id"] == "echo"
    assert "doc_hash" in json.loads(LM_EVAL.read_text().splitlines()[0])
    for path in (INSPECT_JSON, INSPECT_EVAL, PROMPTFOO, LM_EVAL):
        assert path.stat().st_size < 200_000


def test_inspect_scores_C_pass_and_I_fail_per_scorer():
    raw = json.loads(INSPECT_JSON.read_text())
    expected = {}
    for sample in raw["samples"]:
        for scorer, score in sample["scores"].items():
            n_pass, n = expected.get(scorer, (0, 0))
            assert score["value"] in ("C", "I")
            expected[scorer] = (n_pass + (score["value"] == "C"), n + 1)
    log = read_log(INSPECT_JSON, "inspect")
    assert passes(log.checks) == expected
    assert set(expected) == {"includes", "match"} and expected["includes"] != expected["match"]
    assert list(dict.fromkeys(log.checks["item_id"])) == [s["id"] for s in raw["samples"]]


def test_the_eval_archive_reads_like_the_json_or_says_how_to_convert_it():
    try:
        with zipfile.ZipFile(INSPECT_EVAL) as archive:
            archive.read("header.json")
        readable = True
    except NotImplementedError:  # zstd members: Python before 3.14
        readable = False
    if readable:
        got = read_log(INSPECT_EVAL, "inspect").checks.sort_values(["item_id", "check_id"])
        want = read_log(INSPECT_JSON, "inspect").checks.sort_values(["item_id", "check_id"])
        assert got.reset_index(drop=True).equals(want.reset_index(drop=True))
    else:
        with pytest.raises(InputError, match="inspect log convert tiny.eval --to json"):
            read_log(INSPECT_EVAL, "inspect")


def test_promptfoo_assertions_are_checks_and_success_the_items_verdict():
    raw = json.loads(PROMPTFOO.read_text())["results"]["results"]
    log = read_log(PROMPTFOO, "promptfoo")
    expected = {}
    for entry in raw:
        for component in entry["gradingResult"]["componentResults"]:
            metric = component["assertion"]["metric"]
            n_pass, n = expected.get(metric, (0, 0))
            expected[metric] = (n_pass + component["pass"], n + 1)
    assert passes(log.checks) == expected
    overall = read_judged(PROMPTFOO, "promptfoo")
    assert dict(zip(overall["item_id"], overall["verdict"] == "pass")) == \
        {e["vars"]["item_id"]: e["success"] for e in raw}
    # promptfoo's success is all-must-pass over the assertions here (no threshold set)
    all_pass = log.checks.groupby("item_id")["verdict"].agg(lambda v: (v == "pass").all())
    assert all_pass.to_dict() == dict(zip(overall["item_id"], overall["verdict"] == "pass"))
    assert 0 < sum(e["success"] for e in raw) < len(raw)


def test_lm_eval_metrics_of_1_pass_and_0_fail():
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines()]
    log = read_log(LM_EVAL, "lm-eval")
    expected = {m: (sum(d[m] == 1 for d in lines), len(lines)) for m in lines[0]["metrics"]}
    assert passes(log.checks) == expected
    assert sorted(set(log.checks["item_id"]), key=int) == [str(d["doc_id"]) for d in lines]
    acc = read_judged(LM_EVAL, "lm-eval", check="acc")
    assert (acc["verdict"] == "pass").sum() == expected["acc"][0]


def human_labels(tmp_path, items, verdicts):
    path = tmp_path / "labels.csv"
    pd.DataFrame({"item_id": items, "human": verdicts}).to_csv(path, index=False)
    return path


def test_correct_reads_a_promptfoo_result(tmp_path, capsys):
    raw = json.loads(PROMPTFOO.read_text())["results"]["results"]
    items = [e["vars"]["item_id"] for e in raw]
    labels = human_labels(tmp_path, items[:4], ["pass", "fail", "pass", "fail"])
    code = main(["correct", str(PROMPTFOO), str(labels), "--format", "promptfoo",
                 "--coverage-check", "0"])
    assert code == 0, capsys.readouterr().err
    k = sum(e["success"] for e in raw)
    assert f"| {k} of {len(raw)}" in capsys.readouterr().out


def test_correct_needs_one_check_of_an_inspect_log(tmp_path, capsys):
    raw = json.loads(INSPECT_JSON.read_text())
    items = [s["id"] for s in raw["samples"]]
    labels = human_labels(tmp_path, items[:4], ["pass", "pass", "fail", "fail"])
    argv = ["correct", str(INSPECT_JSON), str(labels), "--format", "inspect",
            "--coverage-check", "0"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"rubriclab correct: {INSPECT_JSON}: holds 2 checks "
                                       "(includes, match): name the one to correct with "
                                       "--check\n")
    assert main([*argv, "--check", "match"]) == 0
    k = sum(s["scores"]["match"]["value"] == "C" for s in raw["samples"])
    assert f"| {k} of {len(items)}" in capsys.readouterr().out
    assert main([*argv[:-2], "--check", "exact"]) == 2
    assert "has no check 'exact'; its checks: includes, match" in capsys.readouterr().err
    assert main(["correct", str(INSPECT_JSON), "--format", "inspect"]) == 2
    assert "a judge log holds no people's labels: give LABELED" in capsys.readouterr().err


def test_attribute_reads_per_check_verdicts_from_a_log(tmp_path, capsys):
    lines = [json.loads(line) for line in LM_EVAL.read_text().splitlines()]
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item_id": [str(d["doc_id"]) for d in lines],
                  "label": ["correct", "flawed"] * (len(lines) // 2)}).to_csv(labels, index=False)
    assert main(["attribute", str(LM_EVAL), str(labels), "--format", "lm-eval"]) == 0
    printed = capsys.readouterr().out
    assert "| acc " in printed and "| acc_norm " in printed
    result = attribute(read_log(LM_EVAL, "lm-eval").checks, pd.read_csv(labels, dtype=str))
    fails = {m: sum(d[m] == 0 for d in lines) for m in ("acc", "acc_norm")}
    assert dict(zip(result.checks["check_id"], result.checks["fail_counts"])) == fails


def edited(tmp_path, source: Path, change) -> Path:
    path = tmp_path / source.name
    shutil.copy(source, path)
    if source.suffix == ".jsonl":
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        change(lines)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    else:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return path


def _partial(data):
    data["samples"][2]["scores"]["match"]["value"] = "P"


def _errored(data):
    data["results"]["results"][1].update(failureReason=2, error="timeout", gradingResult=None)


def _bleu(lines):
    lines[3]["acc"] = 0.37


def _cancelled(data):
    data["status"] = "cancelled"


@pytest.mark.parametrize("source, fmt, change, message", [
    (INSPECT_JSON, "inspect", _partial, "sample 'q3', scorer 'match': the score 'P' is neither "
                                        "pass nor fail (C / I / N, 1 / 0, yes / no, true / "
                                        "false)"),
    (INSPECT_JSON, "inspect", _cancelled, "the eval's status is 'cancelled', not 'success'"),
    (PROMPTFOO, "promptfoo", _errored, "test 'T2' errored (timeout): it has no verdict"),
    (LM_EVAL, "lm-eval", _bleu, "line 4 (doc_id 3), metric 'acc': 0.37 is neither 1 (pass) "
                                "nor 0 (fail)"),
])
def test_a_score_that_is_no_verdict_is_refused_with_its_place(source, fmt, change, message,
                                                              tmp_path):
    path = edited(tmp_path, source, change)
    with pytest.raises(InputError) as caught:
        read_log(path, fmt)
    assert str(caught.value) == f"{path}: {message}" or message in str(caught.value)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize("source, fmt, words", [
    (PROMPTFOO, "inspect", "is not an Inspect eval log"),
    (INSPECT_JSON, "promptfoo", "is not a promptfoo results file"),
    (INSPECT_JSON, "lm-eval", "line 1 is not JSON"),
    (PROMPTFOO, "lm-eval", "line 1 is not JSON"),
])
def test_the_wrong_format_is_named(source, fmt, words):
    with pytest.raises(InputError, match=words):
        read_log(source, fmt)


def test_check_without_a_log_format_is_refused(capsys):
    assert main(["correct", str(PROMPTFOO), "--check", "acc"]) == 2
    assert "--check: picks a check of a judge log: give --format too" in capsys.readouterr().err


def test_gate_reads_the_calibration_verdicts_from_a_log(tmp_path, capsys):
    raw = json.loads(INSPECT_JSON.read_text())
    revision, labels = tmp_path / "revision.csv", tmp_path / "labels.csv"
    revision.write_text("check_id,origin,action,new_text\nincludes,hand,keep,\n"
                        "match,hand,delete,\n")
    labels.write_text("item_id,label\n" + "".join(
        f"{s['id']},{'correct' if s['scores']['includes']['value'] == 'C' else 'flawed'}\n"
        for s in raw["samples"]))
    assert main(["gate", str(revision), str(INSPECT_JSON), str(labels), "--format", "inspect",
                 "--gate", "S"]) == 0
    printed = capsys.readouterr().out
    # includes alone catches every flawed item, so match holds no unique catch
    assert "delete of match: no unique catch" in printed
