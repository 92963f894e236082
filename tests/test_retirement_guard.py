"""The checks before the first job refuse a retired model and warn of one retiring before the
run may end (issue 33, item 2)."""

import json
from datetime import date, timedelta

import pytest

from rubriclab.config import ConfigError, config_digest, validate_config
from rubriclab.validate import check_before_first_job, retirement_problems, run_horizon

TODAY = date(2026, 12, 4)
FLASH = "gemini/gemini-2.5-flash"  # 2026-12-01 by litellm's map
GPT5 = "openai/gpt-5"  # 2026-12-11 by litellm's map


@pytest.fixture
def judged_by(schema, embedded, tmp_path, monkeypatch):
    """A validated config whose judge is `model` (keys set, no preflight), run in tmp_path."""
    monkeypatch.chdir(tmp_path)
    for variable in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(variable, "test-key")

    def make(model, **per_model):
        embedded["models"]["judge"] = model
        embedded["carry"]["judges"] = None
        embedded["cache_dir"] = str(tmp_path / "cache")
        embedded["llm"]["preflight"] = False
        embedded["llm"]["per_model"] = {model: per_model} if per_model else {}
        return validate_config(embedded, schema)
    return make


def _check(config):
    warned = []
    check_before_first_job(config, warn=warned.append, today=TODAY)
    return warned


def test_a_retired_model_is_refused_naming_the_model_the_day_and_the_keys(judged_by):
    with pytest.raises(ConfigError) as caught:
        _check(judged_by(FLASH))
    heading, line = str(caught.value).splitlines()
    assert "no longer serve" in heading
    assert line.strip().startswith(f"model '{FLASH}' (models.judge) retired on 2026-12-01 "
                                   "(litellm's price map, deprecation_date)")
    assert "models.judge" in line and f"llm.per_model['{FLASH}'].retires" in line


def test_a_configured_day_overrides_the_map_either_way(judged_by):
    assert _check(judged_by(FLASH, retires="2027-06-01")) == []
    with pytest.raises(ConfigError, match=r"retired on 2026-12-04 \(config llm.per_model"):
        _check(judged_by(GPT5, retires=TODAY))


def test_tomorrow_is_warned_of_not_refused(judged_by):
    (warning,) = _check(judged_by(GPT5, retires=TODAY + timedelta(days=1)))
    assert warning.startswith(f"model '{GPT5}' (models.judge) retires on 2026-12-05")


def test_a_model_retiring_within_the_default_horizon_is_warned_of(judged_by):
    (warning,) = _check(judged_by(GPT5))
    assert warning.startswith(f"model '{GPT5}' (models.judge) retires on 2026-12-11 (litellm's "
                              "price map, deprecation_date), within 30 days (the default horizon")
    assert f"llm.per_model['{GPT5}'].retires" in warning


def test_a_model_no_one_dates_and_the_jobs_not_about_to_run_pass(judged_by):
    assert _check(judged_by("openai/gpt-nonexistent")) == []
    config = judged_by(FLASH)
    assert retirement_problems(config, job_params=[["local/default"]], today=TODAY) == ([], [])


def test_the_plan_of_this_config_sets_the_horizon(judged_by, tmp_path):
    config = judged_by(GPT5)
    plan = tmp_path / "results" / "plan" / "plan.json"
    plan.parent.mkdir(parents=True)
    plan.write_text(json.dumps({"config_digest": config_digest(config), "worst_case_hours": 48}))
    assert run_horizon(config)[0] == 48
    assert _check(config) == []  # 7 days off, a 2-day run
    plan.write_text(json.dumps({"config_digest": config_digest(config), "worst_case_hours": 200}))
    (warning,) = _check(config)
    assert "within the run's worst case of 200 h (results/plan/plan.json)" in warning
    plan.write_text(json.dumps({"config_digest": "another", "worst_case_hours": 48}))
    assert run_horizon(config)[0] == 30 * 24
