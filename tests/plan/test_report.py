"""The plan's prices: standard, batch and prompt caching, and the one each row's config pays."""

from __future__ import annotations

import math

import pandas as pd

from rubriclab.llm import Request
from rubriclab.llm.pricing import price
from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.compare import bill_against_plan
from rubriclab.plan.planner import PlannedRow
from rubriclab.plan.report import plan_markdown, plan_table

SONNET = "anthropic/claude-sonnet-4-5-20250929"
MINI = "openai/gpt-4o-mini-2024-07-18"
# Far past Sonnet 4.5's 1,024-token minimum at any tokens per character.
SHARED_ITEM = "The source document, line by line.\n" * 400


def judged(model: str, n: int) -> PlannedRow:
    """n checks of one item: the item is the prefix they share."""
    requests = [Request.chat(model, [{"role": "user",
                                      "content": f"{SHARED_ITEM}Check {i}: is it faithful?"}],
                             max_tokens=4) for i in range(n)]
    prompt = sum(sum(len(m.content) for m in r.messages) for r in requests) // 4
    return PlannedRow(rule="judge", label=f"judge[{model}]", model=model, basis="exact",
                      requests=n, cached=0, answered_earlier=0, to_pay=n, prompt_tokens=prompt,
                      prompt_tokens_to_pay=prompt, completion_tokens_to_pay=n,
                      to_pay_requests=requests)


def table_for(llm: dict):
    return plan_table([judged(SONNET, 20), judged(MINI, 20)],
                      LLMConfig.from_dict(llm)).set_index("model")


def test_each_row_is_priced_as_its_config_sends_it():
    table = table_for({"per_model": {MINI: {"batch": True}}})
    sonnet, mini = table.loc[SONNET], table.loc[MINI]
    # prompt caching is on by default, and the Anthropic rows' shared item qualifies
    assert sonnet["pricing"] == "prompt caching" and sonnet["cache_qualifying"] == 20
    assert sonnet["configured_cost_usd"] == sonnet["prompt_cached_cost_usd"]
    assert sonnet["configured_cost_usd"] < 0.5 * sonnet["cost_usd"]
    assert mini["pricing"] == "batch"
    assert math.isclose(mini["configured_cost_usd"], price(
        MINI, int(mini["prompt_tokens_to_pay"]), int(mini["completion_tokens_to_pay"]),
        batch=True))
    assert math.isclose(mini["configured_cost_usd"], 0.5 * mini["cost_usd"])


def test_without_batch_or_prompt_caching_the_config_pays_standard_prices():
    table = table_for({"defaults": {"prompt_cache": False}})
    assert set(table["pricing"]) == {"standard"}
    assert (table["configured_cost_usd"] == table["cost_usd"]).all()
    markdown = plan_markdown(table.reset_index(), config_name="c.yaml", digest="d",
                             free_text_share=0.25)
    assert "**As this config runs:** $" in markdown
    assert "standard prices: no batch mode, no prefix to cache" in markdown


def test_the_bill_is_set_beside_the_price_the_config_pays():
    table = table_for({"per_model": {MINI: {"batch": True}}}).reset_index()
    markdown = plan_markdown(table, config_name="c.yaml", digest="d", free_text_share=0.25)
    assert f"batch mode for `{MINI}`; prompt caching for `{SONNET}`" in markdown
    ledger = [dict(rule=f"judge[{SONNET}]", model=SONNET, key=f"k{i}", cached=False,
                   outcome="ok", prompt_tokens=1, completion_tokens=1, cost_usd=0.001,
                   repeat_prompt_tokens=0)
              for i in range(20)]
    bill = bill_against_plan(table, pd.DataFrame(ledger)).set_index("model")
    assert bill.loc[SONNET, "planned_cost_usd"] == table.set_index("model").loc[
        SONNET, "configured_cost_usd"]
