"""A local model's hours in the plan: measured on this machine (an earlier run's ledgers, or a
calibration kept beside the cache), never silently assumed."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rubriclab.llm.ledger import PAID_UNKNOWN
from rubriclab.llm.settings import LLMConfig
from rubriclab.plan import speed as speed_module
from rubriclab.plan.markdown import plan_markdown
from rubriclab.plan.report import plan_table
from rubriclab.plan.speed import (MIN_CALLS, SPEED_FILE, Speed, answered_calls, fit_speed,
                                  measured_speed, speed_from_ledgers)

from .test_report import judged

LOCAL = "local/default"
# 0.2 s a request, 400 prompt tokens a second, 20 completion tokens a second
TRUE = (0.2, 1 / 400, 1 / 20)


def calls(n: int = 30, model: str = LOCAL, **row) -> list[dict]:
    rows = []
    for i in range(n):
        prompt, completion = 100 + 37 * i, 1 + (i % 5) * 9
        rows.append({"rule": "judge", "model": model, "key": f"k{i}", "cached": False,
                     "outcome": "ok", "prompt_tokens": prompt, "completion_tokens": completion,
                     "latency_s": TRUE[0] + prompt * TRUE[1] + completion * TRUE[2],
                     "attempts": 1, "run": "r1", **row})
    return rows


def test_the_fit_recovers_the_seconds_per_request_and_per_token():
    fitted = fit_speed(pd.DataFrame(calls()), "test")
    assert (fitted.per_request_s, fitted.per_prompt_token_s, fitted.per_completion_token_s) \
        == pytest.approx(TRUE, rel=1e-6)
    assert fitted.calls == 30
    assert fitted.seconds(10, 4000, 100) == pytest.approx(10 * 0.2 + 4000 / 400 + 100 / 20)
    assert "400 prompt tokens/s" in fitted.describe() and "20.0 completion" in fitted.describe()


def test_too_few_calls_measure_nothing():
    assert fit_speed(pd.DataFrame(calls(MIN_CALLS - 1)), "test") is None
    timed_out = pd.DataFrame(calls(MIN_CALLS, latency_s=0.0))
    assert fit_speed(timed_out, "test") is None


def test_only_calls_that_computed_an_answer_count():
    rows = (calls(5) + calls(5, cached=True) + calls(5, attempts=0)  # a base run's copy
            + calls(5, outcome="failed") + calls(5, model="fake/hash", run="r3")
            # in flight when its process ended: no answer, no tokens known
            + calls(5, outcome=PAID_UNKNOWN, run="r2"))
    kept = answered_calls(pd.DataFrame(rows), LOCAL)
    assert len(kept) == 5 and not kept["cached"].any()
    assert set(kept["outcome"]) == {"ok"}
    # every model's, where none is named
    assert len(answered_calls(pd.DataFrame(rows))) == 10


def write_ledger(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_an_earlier_runs_ledgers_and_journals_give_the_speed(tmp_path):
    assert speed_from_ledgers(tmp_path, LOCAL) is None
    write_ledger(tmp_path / "results/ledger/judge.jsonl", calls(6))
    # a killed run's calls, in the journal only (no rerun deletes it)
    write_ledger(tmp_path / "results/ledger/attempts/judge.jsonl",
                 [{**r, "run": "r0", "key": f"old{i}"} for i, r in enumerate(calls(6))])
    measured = speed_from_ledgers(tmp_path, LOCAL)
    assert measured.calls == 12 and "ledgers of an earlier run" in measured.source
    assert measured.per_prompt_token_s == pytest.approx(TRUE[1], rel=1e-6)


def test_ledgers_first_then_a_kept_calibration_then_a_new_one(tmp_path, monkeypatch):
    monkeypatch.setattr(speed_module, "_fingerprint", lambda model, llm: "sha-of-the-gguf")
    llm = LLMConfig(cache_dir=tmp_path / "cache")
    made = []

    def calibrator(model, config):
        made.append(model)
        return Speed(0.5, 0.01, 0.05, calls=6, source="calibrated here")

    workdir = tmp_path / "run"
    assert measured_speed(LOCAL, workdir, llm, may_calibrate=False,
                          calibrator=calibrator) is None and not made
    first = measured_speed(LOCAL, workdir, llm, calibrator=calibrator)
    assert first.source == "calibrated here" and made == [LOCAL]
    assert (llm.cache_dir / SPEED_FILE).is_file()
    again = measured_speed(LOCAL, workdir, llm, calibrator=calibrator)
    assert again == first and made == [LOCAL]  # read back, not timed again
    # another thread count is another machine's figure
    other = LLMConfig.from_dict({"per_model": {LOCAL: {"n_threads": 7}}},
                                cache_dir=tmp_path / "cache")
    measured_speed(LOCAL, workdir, other, calibrator=calibrator)
    assert made == [LOCAL, LOCAL]
    # an earlier run's ledgers win over any calibration
    write_ledger(workdir / "results/ledger/judge.jsonl", calls(20))
    assert "ledgers" in measured_speed(LOCAL, workdir, llm, calibrator=calibrator).source


def test_a_local_models_hours_are_its_measured_speed_and_the_plan_says_whence():
    row = judged(LOCAL, 50)
    measured = Speed(*TRUE, calls=30, source="measured from the ledgers of an earlier run")
    table = plan_table([row], LLMConfig(), {LOCAL: measured})
    expected = measured.seconds(50, row.prompt_tokens_to_pay, row.completion_tokens_to_pay)
    assert table.iloc[0]["hours"] == pytest.approx(expected / 3600)
    assert table.iloc[0]["hours_bound"] == "measured"
    markdown = plan_markdown(table, config_name="c.yaml", digest="d", free_text_share=0.25)
    assert f"`{LOCAL}` measured on this machine:** 0.20 s a request" in markdown
    assert "ledgers of an earlier run" in markdown and "(measured speed)" in markdown
    assumed = plan_table([row], LLMConfig(), {LOCAL: None})
    assert assumed.iloc[0]["hours_bound"] == "assumed"
    markdown = plan_markdown(assumed, config_name="c.yaml", digest="d", free_text_share=0.25)
    assert f"`{LOCAL}` not measured:**" in markdown and "(assumed speed: not measured)" in markdown
