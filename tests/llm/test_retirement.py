"""Retirement days (issue 33, item 2): litellm's map, the config's override, and the rule."""

from datetime import date, datetime, timezone

import pytest

from rubriclab.llm.retirement import (CONFIG, FINE, LITELLM, RETIRED, RETIRING, classify,
                                      retirement_date)
from rubriclab.llm.settings import LLMConfig

TODAY = date(2026, 12, 4)


@pytest.mark.parametrize("model, day", [
    ("gemini/gemini-2.5-flash", date(2026, 12, 1)),  # not Vertex's bare gemini-2.5-flash
    ("anthropic/claude-sonnet-4-5-20250929", date(2026, 11, 30)),
    ("deepseek/deepseek-chat", date(2026, 7, 24)),
    ("openai/gpt-5", date(2026, 12, 11)),
    ("openai/gpt-4o-mini-2024-07-18", date(2027, 1, 14)),
])
def test_litellm_map_dates_the_models(model, day):
    assert retirement_date(model, None) == (day, LITELLM)


def test_a_configured_day_wins_and_own_models_never_retire():
    assert retirement_date("openai/gpt-5", date(2027, 6, 1)) == (date(2027, 6, 1), CONFIG)
    assert retirement_date("openai/gpt-nonexistent", None) == (None, None)
    assert retirement_date("fake/hash", date(2020, 1, 1)) == (None, None)
    assert retirement_date("local/default", None) == (None, None)


def test_retired_from_its_day_on_retiring_within_the_horizon():
    assert classify(date(2026, 12, 4), 0, TODAY) == RETIRED
    assert classify(date(2026, 11, 30), 0, TODAY) == RETIRED
    assert classify(date(2026, 12, 5), 0, TODAY) == FINE  # tomorrow is not yet
    assert classify(date(2026, 12, 5), 24, TODAY) == RETIRING
    assert classify(date(2026, 12, 11), 30 * 24, TODAY) == RETIRING
    assert classify(date(2027, 1, 14), 30 * 24, TODAY) == FINE
    assert classify(None, 1e6, TODAY) == FINE
    late = datetime(2026, 12, 4, 20, tzinfo=timezone.utc)  # 4 h before tomorrow
    assert classify(date(2026, 12, 5), 5, late) == RETIRING
    assert classify(date(2026, 12, 5), 3, late) == FINE


@pytest.mark.parametrize("value", ["2027-06-01", date(2027, 6, 1),
                                   datetime(2027, 6, 1, 12, 0)])
def test_retires_takes_a_date_or_an_iso_string(value):
    llm = LLMConfig.from_dict({"per_model": {"openai/gpt-5": {"retires": value}}})
    assert llm.settings_for("openai/gpt-5").retires == date(2027, 6, 1)
    assert llm.settings_for("openai/gpt-4o").retires is None


@pytest.mark.parametrize("value", ["soon", "2027-13-01", 20270601, ["2027-06-01"]])
def test_a_bad_retires_is_refused_naming_its_key(value):
    with pytest.raises(ValueError) as caught:
        LLMConfig.from_dict({"per_model": {"openai/gpt-5": {"retires": value}}})
    assert str(caught.value).startswith("llm.per_model['openai/gpt-5'].retires: expected a "
                                        "date as YYYY-MM-DD")
    with pytest.raises(ValueError, match="llm.defaults: retires is set per model"):
        LLMConfig.from_dict({"defaults": {"retires": "2027-06-01"}})


def test_a_malformed_map_date_is_no_date_with_a_warning(monkeypatch, caplog):
    from rubriclab.llm.litellm_import import import_litellm
    from rubriclab.llm.retirement import _map_date

    model = "openai/rubriclab-malformed-deprecation"
    monkeypatch.setitem(import_litellm().model_cost, model, {"deprecation_date": "next spring"})
    _map_date.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="rubriclab.llm"):
            assert retirement_date(model, None) == (None, None)
    finally:
        _map_date.cache_clear()
    (record,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert model in record.getMessage() and "'next spring'" in record.getMessage()
