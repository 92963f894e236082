"""The plan's retirement days (issue 33, item 2): plan.csv's `retires`, and the models named
as retired or retiring within the plan's worst case."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date

import pandas as pd
import pytest

from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.report import PLAN_COLUMNS, plan_table, worst_case_hours, write_plan
from rubriclab.plan.retirement import retirement_lines, retirement_warnings

from .test_report import MINI, SONNET, judged

TODAY = date(2026, 12, 4)


def test_plan_csv_ends_with_each_rows_retirement_day_and_plan_json_with_the_worst_case(
        tmp_path):
    rows = [judged(SONNET, 5), judged(MINI, 5), replace(judged(MINI, 5), model="fake/hash")]
    table = plan_table(rows, LLMConfig())
    written = write_plan(table, "# plan\n", tmp_path, "digest")
    csv = pd.read_csv(written[0], keep_default_na=False)
    assert PLAN_COLUMNS[-1] == "retires" and list(csv.columns) == PLAN_COLUMNS
    assert list(csv["retires"]) == ["2026-11-30", "2027-01-14", ""]
    plan = json.loads(written[1].read_text())
    assert plan["config_digest"] == "digest"
    assert plan["worst_case_hours"] == pytest.approx(worst_case_hours(table))
    assert plan["worst_case_hours"] > 0


def test_retired_and_retiring_paid_models_are_named_with_their_day_and_source():
    rows = [judged(SONNET, 5), judged(MINI, 5), replace(judged(MINI, 5), model="openai/gpt-5")]
    llm = LLMConfig.from_dict({"per_model": {"openai/gpt-5": {"retires": "2026-12-06"}}})
    table = plan_table(rows, llm)
    assert list(table["retires"]) == ["2026-11-30", "2027-01-14", "2026-12-06"]
    (line,) = retirement_lines(table, 24.0, TODAY)
    assert f"`{SONNET}` 2026-11-30 (litellm) **retired**" in line
    assert f"`{MINI}` 2027-01-14 (litellm)," in line  # far off: no flag
    assert "`openai/gpt-5` 2026-12-06 (config)." in line  # two days off, a day's worst case
    retired, = retirement_warnings(table, 24.0, TODAY)
    assert retired.startswith(f"model '{SONNET}' retired on 2026-11-30 (litellm's price map, "
                              "deprecation_date)")
    assert f"llm.per_model['{SONNET}'].retires" in retired
    warnings = retirement_warnings(table, 72.0, TODAY)
    assert len(warnings) == 2 and warnings[1].startswith(
        "model 'openai/gpt-5' retires on 2026-12-06 (config llm.per_model['openai/gpt-5']"
        ".retires), within the plan's worst case of 72 h from 2026-12-04")
    assert "**retires within the worst case**" in retirement_lines(table, 72.0, TODAY)[0]
