"""The plan's prices: standard, batch and prompt caching, and the one each row's config pays."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from rubriclab.llm import Request
from rubriclab.llm.pricing import price
from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.compare import bill_against_plan
from rubriclab.plan.planner import THINKING_SHARES, PlannedRow
from rubriclab.plan.markdown import plan_markdown
from rubriclab.plan.report import COMPLETION_TOKENS_PER_S, SECONDS_PER_REQUEST, plan_table

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


def test_a_role_that_opts_out_of_batches_is_priced_as_it_is_sent():
    row = judged(MINI, 20)
    revising = replace(row, to_pay_requests=[replace(r, role="reviser")
                                             for r in row.to_pay_requests])
    llm = LLMConfig.from_dict({"per_model": {MINI: {"batch": True}},
                               "roles": {"reviser": {"batch": False}}})
    judging, revised = plan_table([row, revising], llm).itertuples()
    assert judging.pricing == "batch" and revised.pricing == "standard"
    assert revised.configured_cost_usd == revised.cost_usd


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


OPUS = "anthropic/claude-opus-4-1-20250805"
OPUS_PRICE = {"input": 15, "output": 75, "cache_write": 18.75, "cache_read": 1.5}


def thinking_row(model: str, n: int, cap_each: int, rule: str = "judge") -> PlannedRow:
    row = judged(model, n)
    expected = round(THINKING_SHARES["expected"] * cap_each * n)
    return replace(row, rule=rule, label=f"{rule}[{model}]",
                   completion_tokens_to_pay=row.completion_tokens_to_pay + expected,
                   thinking_tokens_cap=cap_each * n)


def markdown_for(rows, llm: dict) -> tuple[pd.DataFrame, str]:
    table = plan_table(rows, LLMConfig.from_dict(llm))
    return table, plan_markdown(table, config_name="c.yaml", digest="d", free_text_share=0.25)


def test_a_configured_price_prices_the_plan():
    llm = {"per_model": {OPUS: {"price": OPUS_PRICE, "prompt_cache": False}}}
    table, markdown = markdown_for([judged(OPUS, 20)], llm)
    opus = table.iloc[0]
    assert opus["price_source"] == "config"
    assert opus["cost_usd"] == pytest.approx(1e-6 * (15 * opus["prompt_tokens_to_pay"]
                                                     + 75 * opus["completion_tokens_to_pay"]))
    assert f"US dollars per million tokens: `{OPUS}`" in markdown  # named as configured


def test_an_unknown_price_prints_no_total_and_names_the_model_and_the_key():
    table, markdown = markdown_for([judged(OPUS, 20), judged(MINI, 20)], {})
    assert table.set_index("model").loc[OPUS, "price_source"] == "unknown"
    assert "at least" not in markdown and "≥" not in markdown
    bullets = [line for line in markdown.splitlines() if line.startswith("- **")]
    standard = next(b for b in bullets if b.startswith("- **Standard:**"))
    configured = next(b for b in bullets if b.startswith("- **As this config runs:**"))
    assert "no total" in standard and "$" not in standard.split(" for ")[0]
    assert "no total" in configured
    unknown = next(b for b in bullets if b.startswith("- **Unknown price:**"))
    assert f"`{OPUS}` (judge)" in unknown and "llm.per_model.<model>.price" in unknown
    assert MINI not in unknown


def test_with_every_price_known_the_plan_prints_its_totals_and_their_range():
    llm = {"per_model": {OPUS: {"price": OPUS_PRICE}}}
    rows = [thinking_row(OPUS, 20, 2048), thinking_row("gemini/gemini-2.5-flash", 30, 1024),
            thinking_row("openai/gpt-5", 10, 8192)]
    table, markdown = markdown_for(rows, llm)
    assert "no total" not in markdown and "Unknown price" not in markdown
    for prefix in ("cost", "batch_cost", "configured_cost"):
        low, expected, high = (table[f"{prefix}_low_usd"], table[f"{prefix}_usd"],
                               table[f"{prefix}_high_usd"])
        known = expected.notna()  # (batch: only where the model layer has a batch API)
        assert known.any() and (low[known] < expected[known]).all()
        assert (expected[known] < high[known]).all()
    configured = next(line for line in markdown.splitlines()
                      if line.startswith("- **As this config runs:**"))
    total = table["configured_cost_usd"].sum()
    assert (f"${total:,.2f} (low ${table['configured_cost_low_usd'].sum():,.2f}, "
            f"high ${table['configured_cost_high_usd'].sum():,.2f})") in configured
    # the assumption is stated, with the thinking it puts on the bill
    assert f"expected {THINKING_SHARES['expected']:.0%} of the cap" in markdown
    assert f"{int(table['thinking_tokens_to_pay'].sum()):,} expected thinking tokens" in markdown


def test_high_is_every_request_thinking_to_its_cap():
    (row,) = [thinking_row("gemini/gemini-2.5-flash", 10, 2048)]
    table = plan_table([row], LLMConfig())
    answers = row.completion_tokens_to_pay - round(THINKING_SHARES["expected"] * 10 * 2048)
    assert table.iloc[0]["cost_high_usd"] == pytest.approx(
        price("gemini/gemini-2.5-flash", row.prompt_tokens_to_pay, answers + 10 * 2048))


def test_hours_are_the_models_requests_and_tokens_of_every_rule_over_its_limits():
    rows = [judged(MINI, 600), replace(judged(MINI, 1200), rule="other", label="other")]
    tokens = sum(r.prompt_tokens_to_pay + r.completion_tokens_to_pay for r in rows)
    by_requests = {"per_model": {MINI: {"requests_per_minute": 100,
                                        "tokens_per_minute": 10 * tokens}}}
    table = plan_table(rows, LLMConfig.from_dict(by_requests))
    # 1,800 requests at 100 a minute: 18 minutes, the two rules sharing the limit
    assert table["hours"].sum() == pytest.approx(1800 / 100 / 60)
    assert list(table["hours"]) == pytest.approx([600 / 100 / 60, 1200 / 100 / 60])
    assert set(table["hours_bound"]) == {"requests_per_minute"}
    by_tokens = {"per_model": {MINI: {"requests_per_minute": 10_000,
                                      "tokens_per_minute": tokens / 30}}}
    table = plan_table(rows, LLMConfig.from_dict(by_tokens))
    assert table["hours"].sum() == pytest.approx(30 / 60)
    assert set(table["hours_bound"]) == {"tokens_per_minute"}
    # no limit: at the model's concurrency, as before
    table = plan_table(rows, LLMConfig.from_dict({"defaults": {"concurrency": 4}}))
    seconds = sum(r.to_pay * SECONDS_PER_REQUEST
                  + r.completion_tokens_to_pay / COMPLETION_TOKENS_PER_S for r in rows)
    assert table["hours"].sum() == pytest.approx(seconds / 4 / 3600)
    assert set(table["hours_bound"]) == {"concurrency"}
    # limits a model cannot reach at its concurrency: the concurrency binds
    generous = {"per_model": {MINI: {"concurrency": 1, "requests_per_minute": 10_000,
                                     "tokens_per_minute": 100 * tokens}}}
    table = plan_table(rows, LLMConfig.from_dict(generous))
    assert table["hours"].sum() == pytest.approx(seconds / 3600)
    assert set(table["hours_bound"]) == {"concurrency"}


def test_the_hours_line_states_the_batch_window_beside_the_hours():
    llm = {"per_model": {MINI: {"batch": True, "requests_per_minute": 100}}}
    _, markdown = markdown_for([judged(MINI, 600), judged(SONNET, 10)], llm)
    hours = next(line for line in markdown.splitlines() if line.startswith("- **Hours**"))
    assert f"`{MINI}` 0.1 (requests a minute)" in hours and "(concurrency)" in hours
    assert f"(`{MINI}`)" in hours and "up to 24 h a batch" in hours


def test_an_anthropic_batch_prices_prompt_caching_at_the_documented_hit_rates():
    from rubriclab.plan.report import BATCH_CACHE_HIT_RATES, prompt_caching

    row = judged(SONNET, 20)
    caching = prompt_caching(row)
    assert caching.read_tokens > 0 and caching.write_tokens > 0
    (batched,) = plan_table([row], LLMConfig.from_dict(
        {"per_model": {SONNET: {"batch": True}}})).itertuples()
    hits = BATCH_CACHE_HIT_RATES["expected"]
    assert batched.batch_cost_usd == pytest.approx(price(
        SONNET, row.prompt_tokens_to_pay, row.completion_tokens_to_pay, batch=True,
        cache_read_tokens=round(hits * caching.read_tokens),
        cache_write_tokens=caching.write_tokens + round((1 - hits) * caching.read_tokens)))
    # no better than both discounts with every hit, no worse than a batch without caching
    assert (batched.prompt_cached_cost_usd / 2 < batched.batch_cost_usd
            < price(SONNET, row.prompt_tokens_to_pay, row.completion_tokens_to_pay, batch=True))
    (uncached,) = plan_table([row], LLMConfig.from_dict(
        {"per_model": {SONNET: {"batch": True, "prompt_cache": False}}})).itertuples()
    assert uncached.batch_cost_usd == pytest.approx(batched.cost_usd / 2)
