"""config/paper.yaml runs the papers' own models: transfer's Table A.3 (read from a fixture of the
seed's table) by name wherever litellm's price map has them, each priced, none retiring within
30 days, and a stand-in only where the named model cannot run, declared in `stand_ins`."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from rubriclab.llm.litellm_import import import_litellm
from rubriclab.llm.pricing import is_priced
from rubriclab.llm.settings import LLMConfig

ROOT = Path(__file__).resolve().parents[1]
TABLE_A3 = Path(__file__).parent / "fixtures" / "transfer_table_a3.md"
PAPER = ROOT / "config" / "paper.yaml"

# Table A.3's names of models, and the litellm model string that names each at its provider
# (the map key litellm resolves it to is checked below, so a renamed or dropped entry fails).
LITELLM_NAME = {
    "Gemini 3.8 Flash": "gemini/gemini-3.8-flash",
    "Qwen3.8-27B": "nebius/Qwen/Qwen3.8-27B",
    "Deepseek-V4-Flash": "deepseek/deepseek-v4-flash",
    "Opus-5": "anthropic/claude-opus-5",
    "GPT-5.6-Terra": "openai/gpt-5.6-terra",
    "Claude Sonnet 4.6": "anthropic/claude-sonnet-4-6",
    "Grok 4.20 (non-reasoning)": "xai/grok-4.20-0309-non-reasoning",
    "GLM-5.3-Flash": "zai/glm-5.3-flash",
    "GPT-5": "openai/gpt-5",
    # Served by OpenRouter, which litellm's map does not price: paper.yaml prices them.
    "Qwen3-30B-A3B": "openrouter/qwen/qwen3-30b-a3b",
    "Llama-4-Scout-17B-16E": "openrouter/meta-llama/llama-4-scout",
    "QwQ-32B": "openrouter/qwen/qwq-32b",
}
# Table A.3's rows that name models, and where paper.yaml sets each.
ROWS = {
    "Judge J (scores a response against a rubric)": ["judge"],
    "Negative criteria restated as positive": ["restater"],
    "LLM-matching framings (Figure A.1)": ["matcher"],
    "Generators": ["generators"],
    "Response model for the IT metrics (Figure 5)": ["response_model"],
    "Response panel (GenRubric, Figure 4)": ["panel"],
    "Bad response R^{\\mathrm{bad}} (Discrimination Between High/Low Quality Responses)":
        ["degrader"],
}
WITHIN_DAYS = 30


def table_a3() -> dict[str, list[str]]:
    """{setting: [model names]} of Table A.3's rows that name models."""
    rows = {}
    for line in TABLE_A3.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] not in ROWS:
            continue
        choice = re.split(r", (?:reasoning effort|asked to)", cells[1])[0]
        rows[cells[0]] = [name.strip() for name in re.split(r",\s*(?![^()]*\))", choice)]
    return rows


@pytest.fixture(scope="module")
def paper():
    return yaml.safe_load(PAPER.read_text(encoding="utf-8"))


def map_entry(model: str) -> dict | None:
    litellm = import_litellm()
    try:
        info = dict(litellm.get_model_info(model=model))
    except Exception:  # noqa: BLE001 - litellm raises several kinds for a model not in its map
        return None
    # get_model_info leaves out deprecation_date: the map's own entry has it
    return {**litellm.model_cost.get(info["key"], {}), **info}


def retirement(model: str, paper: dict) -> dt.date | None:
    configured = ((paper["llm"].get("per_model") or {}).get(model) or {}).get("retires")
    if configured:
        return dt.date.fromisoformat(str(configured))
    entry = map_entry(model) or {}
    date = entry.get("deprecation_date")
    return dt.date.fromisoformat(date) if date else None


def usable(model: str) -> bool:
    """In litellm's map, and not retiring within WITHIN_DAYS of today."""
    entry = map_entry(model)
    if entry is None:
        return False
    date = entry.get("deprecation_date")
    return not date or dt.date.fromisoformat(date) > dt.date.today() + dt.timedelta(WITHIN_DAYS)


def test_the_fixture_holds_table_a3_rows_that_name_models():
    rows = table_a3()
    assert set(rows) == set(ROWS)
    assert rows["Generators"] == ["Qwen3.8-27B", "Deepseek-V4-Flash", "Opus-5"]
    assert len(rows["Response panel (GenRubric, Figure 4)"]) == 8
    assert "Grok 4.20 (non-reasoning)" in rows["Response panel (GenRubric, Figure 4)"]


def test_table_a3_models_are_paper_yaml_s_wherever_the_map_has_them(paper):
    transfer, stand_ins = paper["transfer"], paper.get("stand_ins") or {}
    for setting, names in table_a3().items():
        configured = []
        for key in ROWS[setting]:
            value = transfer[key]
            configured += [value] if isinstance(value, str) else list(value)
        assert len(configured) == len(names), (setting, configured)
        for name, model in zip(names, configured, strict=True):
            wanted = LITELLM_NAME[name]
            if wanted.startswith("openrouter/") or usable(wanted):
                assert model == wanted, f"{setting}: {name} should run as {wanted}, not {model}"
            else:
                assert stand_ins.get(model) == name, (
                    f"{setting}: {name} ({wanted}) cannot run, so {model} must be declared in "
                    f"stand_ins as standing in for {name!r}")


def test_every_paper_model_is_priced_and_none_retires_within_30_days(paper):
    from rubriclab.rehearsal.run import model_strings

    llm = LLMConfig.from_dict(paper["llm"])
    horizon = dt.date.today() + dt.timedelta(WITHIN_DAYS)
    for model in model_strings(paper):
        assert is_priced(model, configured=llm.settings_for(model).price), model
        date = retirement(model, paper)
        assert date is None or date > horizon, f"{model} retires {date}"


def test_carry_reads_haiku_sonnet_opus_as_one_claude_generation(paper):
    """carry names Haiku, Sonnet and Opus without versions: the generation transfer runs
    (Opus-5 beside Claude Sonnet 4.6), Sonnet the main judge, Opus the main reviser."""
    judges = paper["carry"]["judges"]
    assert judges == ["anthropic/claude-haiku-4-5-20251001", "anthropic/claude-sonnet-4-6",
                      "anthropic/claude-opus-5"]
    assert paper["models"]["judge"] == LITELLM_NAME["Claude Sonnet 4.6"]
    assert paper["models"]["reviser"] == LITELLM_NAME["Opus-5"]
    assert sorted(paper["models"]["revisers"]) == sorted(judges)


def test_a_stand_in_is_labelled_as_one(paper):
    from rubriclab.labels import ModelLabels

    labels = ModelLabels(paper["labels"], stand_ins=paper["stand_ins"])
    assert labels("openai/gpt-5.1") == "GPT-5.1 (stand-in for GPT-5)"
    assert labels("openai/gpt-5.1|2") == "GPT-5.1 (stand-in for GPT-5) #2"
    assert labels("openai/gpt-5.6-terra") == "GPT-5.6-Terra"
