"""The bill against the plan: where a run strays from its plan, and by how much."""

from __future__ import annotations

import math

import pandas as pd

from rubriclab.plan.compare import (bill_against_plan, by_rule, comparison_markdown,
                                    plan_against_ledger, problems)


def plan_rows(*rows):
    return pd.DataFrame([dict(rule=r, label=label, model=m, basis=b, requests=n,
                              prompt_tokens=t, to_pay=n, configured_cost_usd=c)
                         for r, label, m, b, n, t, c in rows])


def ledger_rows(label, model, n, tokens_each, cached=0, cost_each=0.01):
    return [dict(rule=label, model=model, key=f"{label}{i}", cached=i < cached, outcome="ok",
                 prompt_tokens=tokens_each, completion_tokens=1, cost_usd=cost_each,
                 repeat_prompt_tokens=0)
            for i in range(n)]


def test_an_exact_row_must_match_to_the_request():
    plan = plan_rows(("judge", "judge[a]", "m", "exact", 10, 1000, 0.1))
    assert problems(plan_against_ledger(plan, pd.DataFrame(ledger_rows("judge[a]", "m", 10, 100)))) == []
    found = problems(plan_against_ledger(plan, pd.DataFrame(ledger_rows("judge[a]", "m", 11, 100))))
    assert any("exact plan of 10 requests, 11 made" in p for p in found)


def test_an_estimated_rule_may_be_off_by_ten_percent_and_tokens_by_five():
    plan = plan_rows(("chain", "chain[a]", "m", "estimated", 50, 50_000, 0.1),
                     ("chain", "chain[b]", "m", "estimated", 50, 50_000, 0.1))
    near = ledger_rows("chain[a]", "m", 52, 1000) + ledger_rows("chain[b]", "m", 52, 960)
    assert problems(plan_against_ledger(plan, pd.DataFrame(near))) == []
    far = ledger_rows("chain[a]", "m", 60, 1000) + ledger_rows("chain[b]", "m", 56, 1000)
    found = problems(plan_against_ledger(plan, pd.DataFrame(far)))
    assert any("116 requests made, 100 estimated (+16.0%)" in p for p in found)
    assert any("prompt tokens" in p and "+16.0%" in p for p in found)
    table = by_rule(plan_against_ledger(plan, pd.DataFrame(far)))
    assert table.loc[0, "requests_off"] == 0.16


def test_a_few_requests_of_a_small_estimated_rule_are_within_its_slack():
    plan = plan_rows(("reply", "reply", "m", "estimated", 24, 7000, 0.1))
    assert problems(plan_against_ledger(plan, pd.DataFrame(ledger_rows("reply", "m", 16, 300)))) == []
    assert problems(plan_against_ledger(plan, pd.DataFrame(ledger_rows("reply", "m", 40, 300))))


def test_a_request_the_plan_did_not_foresee_is_named():
    plan = plan_rows(("judge", "judge[a]", "m", "exact", 2, 200, 0.1))
    ledger = pd.DataFrame(ledger_rows("judge[a]", "m", 2, 100)
                          + ledger_rows("other[x]", "m", 30, 10))
    assert any("other[x] (m): 30 requests the plan did not foresee" in p
               for p in problems(plan_against_ledger(plan, ledger)))


def test_the_bill_is_what_uncached_calls_cost_and_unknown_when_one_is():
    plan = plan_rows(("judge", "judge[a]", "m", "exact", 4, 400, 0.04),
                     ("judge", "judge[b]", "n", "exact", 2, 200, float("nan")))
    ledger = (ledger_rows("judge[a]", "m", 4, 100, cached=1, cost_each=0.01)
              + ledger_rows("judge[b]", "n", 2, 100, cost_each=None))
    bill = bill_against_plan(plan, pd.DataFrame(ledger)).set_index("model")
    assert bill.loc["m", "paid_requests"] == 3
    assert math.isclose(bill.loc["m", "paid_cost_usd"], 0.03)
    assert math.isnan(bill.loc["n", "paid_cost_usd"]) and math.isnan(bill.loc["n", "planned_cost_usd"])


def test_tokens_of_askings_again_are_shown_on_top_not_held_to_the_plan():
    """The plan asks each request once: re-asks are what the model's answers cost on top."""
    plan = plan_rows(("chain", "chain[a]", "m", "estimated", 20, 20_000, 0.1))
    ledger = pd.DataFrame(ledger_rows("chain[a]", "m", 20, 1000))
    ledger.loc[:3, "prompt_tokens"] += 2100  # four re-asks resent the conversation
    ledger.loc[:3, "repeat_prompt_tokens"] = 2100
    both = plan_against_ledger(plan, ledger)
    assert problems(both) == []
    row = by_rule(both).iloc[0]
    assert (row.made_prompt_tokens, row.repeat_prompt_tokens) == (20_000, 8_400)
    assert "| 20,000 | +0.0% | 8,400 |" in "\n".join(comparison_markdown(both))
    # held to the plan, the same tokens would be 42% over it
    ledger["repeat_prompt_tokens"] = 0
    assert any("+42.0%" in p for p in problems(plan_against_ledger(plan, ledger)))
