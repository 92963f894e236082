"""A tiered price (litellm's `*_above_200k_tokens` rates) applies per request, as providers bill
it: the plan never applies it to a row's summed tokens (which doubled Grok's bill)."""

from __future__ import annotations

import pytest

from rubriclab.llm import Request
from rubriclab.llm.pricing import price, price_requests, tier_thresholds
from rubriclab.llm.settings import LLMConfig
from rubriclab.plan.planner import PlannedRow
from rubriclab.plan.report import plan_table

GROK = "xai/grok-4.20-0309-non-reasoning"  # $1.25 / $2.50, twice that above 200k prompt tokens


def row_of(prompts: list[int], completion_each: int) -> PlannedRow:
    """A row whose requests' prompts are `prompts` tokens (four characters a token)."""
    requests = [Request.chat(GROK, [{"role": "user", "content": "x" * (4 * p)}], max_tokens=200)
                for p in prompts]
    n = len(prompts)
    return PlannedRow(rule="respond", label="respond[grok]", model=GROK, basis="exact",
                      requests=n, cached=0, answered_earlier=0, to_pay=n,
                      prompt_tokens=sum(prompts), prompt_tokens_to_pay=sum(prompts),
                      completion_tokens_to_pay=completion_each * n, to_pay_requests=requests)


def test_the_map_gives_grok_a_tier_above_200k_prompt_tokens():
    assert tier_thresholds(GROK) == (200_000.0,)
    assert price(GROK, 300_000, 0) == pytest.approx(2 * 300_000 * price(GROK, 1, 0))


def test_a_row_of_many_small_requests_costs_the_sum_of_their_prices():
    row = row_of([1_000] * 1_000, 100)
    (planned,) = plan_table([row], LLMConfig()).itertuples()
    one = price(GROK, 1_000, 100)
    assert planned.cost_usd == pytest.approx(1_000 * one)
    # the summed tokens (a million prompt tokens) would cross the tier: twice the bill
    assert price(GROK, 1_000_000, 100_000) == pytest.approx(2 * 1_000 * one)
    assert planned.cost_high_usd == pytest.approx(planned.cost_usd)  # Grok does not think


def test_only_the_requests_above_the_tier_pay_its_rates():
    prompts = [300_000] + [2_000] * 99
    each = price_requests(GROK, prompts, 100 * 100)
    assert each == pytest.approx(price(GROK, 300_000, 100) + 99 * price(GROK, 2_000, 100))
    assert price_requests(GROK, prompts, 100 * 100, batch=True) == pytest.approx(
        price(GROK, 300_000, 100, batch=True) + 99 * price(GROK, 2_000, 100, batch=True))
    (planned,) = plan_table([row_of(prompts, 100)], LLMConfig()).itertuples()
    assert planned.cost_usd == pytest.approx(each, rel=1e-6)


def test_a_model_of_one_rate_is_priced_on_its_sums_as_before():
    mini = "openai/gpt-4o-mini-2024-07-18"
    assert tier_thresholds(mini) == ()
    assert price_requests(mini, [1_000] * 10, 50) == price(mini, 10_000, 50)
