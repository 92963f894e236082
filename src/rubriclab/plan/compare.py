"""The bill against the plan: a run's ledger beside the plan made before it, per rule job."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.llm.ledger import MODEL_COLUMNS, model_cells

# How far a run may stray from its plan (issue 11): exact rows to the request, estimated rows
# within 10%, prompt tokens within 5%.
ESTIMATED_REQUESTS_TOLERANCE = 0.10
PROMPT_TOKENS_TOLERANCE = 0.05
# A share of a handful is no measure: a rule that makes only a few requests (verify's reply
# rubric grades only the trials that pass, a few in a small run) may be off by this many.
SMALL_RULE_REQUESTS = 10
SMALL_RULE_PROMPT_TOKENS = 5_000


def read_plan(path: Path) -> pd.DataFrame:
    plan = pd.read_csv(path)
    missing = {"rule", "label", "model", "basis", "requests", "prompt_tokens"} - set(plan.columns)
    if missing:
        raise ValueError(f"{path}: not a plan table (no column(s) {sorted(missing)})")
    return plan


def plan_against_ledger(plan: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """Per ledger label and model: planned and made requests and prompt tokens. A label only
    one side has is kept, with zeros on the other (and named in `problems`).

    The plan asks each request once; the prompt tokens of askings again (re-asks of an answer
    not in the format, a cut-off answer asked again with more room) are what the model's
    answers cost on top, so they are kept apart (`repeat_prompt_tokens`) from those the plan
    is held to (`made_prompt_tokens`, the first askings)."""
    # (read_ledgers gives a ledger written before the column 0 repeats: it did not tell them.)
    made = ledger.assign(paid=~ledger["cached"].astype(bool),
                         first_prompt_tokens=ledger["prompt_tokens"]
                         - ledger["repeat_prompt_tokens"]).groupby(
        ["rule", "model"], sort=True).agg(
        made_requests=("key", "size"), made_prompt_tokens=("first_prompt_tokens", "sum"),
        repeat_prompt_tokens=("repeat_prompt_tokens", "sum"), paid_requests=("paid", "sum"))
    made = made.reset_index().rename(columns={"rule": "label"})
    planned = plan.rename(columns={"requests": "planned_requests",
                                   "prompt_tokens": "planned_prompt_tokens",
                                   "to_pay": "planned_to_pay",
                                   "configured_cost_usd": "planned_cost_usd"})
    keep = ["rule", "label", "model", "basis", "planned_requests", "planned_to_pay",
            "planned_prompt_tokens", "planned_cost_usd"]
    both = planned[[c for c in keep if c in planned.columns]].merge(
        made, on=["label", "model"], how="outer", indicator="side")
    both["rule"] = both["rule"].fillna(both["label"].str.split("[").str[0])
    for column in ("planned_requests", "planned_prompt_tokens", "made_requests",
                   "made_prompt_tokens", "repeat_prompt_tokens", "paid_requests"):
        if column in both:
            both[column] = both[column].fillna(0).astype(int)
    both["basis"] = both["basis"].fillna("unplanned")
    return both


def by_rule(both: pd.DataFrame) -> pd.DataFrame:
    """Per Snakemake rule and model, with the relative differences."""
    grouped = both.groupby(["rule", "model"], sort=True)
    table = grouped[["planned_requests", "made_requests", "planned_prompt_tokens",
                     "made_prompt_tokens", "repeat_prompt_tokens"]].sum()
    table["basis"] = grouped["basis"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    table["requests_off"] = _relative(table["made_requests"], table["planned_requests"])
    table["prompt_tokens_off"] = _relative(table["made_prompt_tokens"],
                                           table["planned_prompt_tokens"])
    return table.reset_index()


def _relative(made: pd.Series, planned: pd.Series) -> pd.Series:
    return (made - planned) / planned.where(planned > 0)


def problems(both: pd.DataFrame) -> list[str]:
    """Where the run strayed from its plan further than the tolerances."""
    found = []
    for row in both.itertuples(index=False):
        if row.side == "right_only" and row.made_requests > SMALL_RULE_REQUESTS:
            found.append(f"{row.label} ({row.model}): {row.made_requests} requests the plan "
                         "did not foresee")
        elif row.side == "left_only" and row.planned_requests:
            found.append(f"{row.label} ({row.model}): planned {row.planned_requests} requests, "
                         "none made")
        elif row.basis == "exact" and row.made_requests != row.planned_requests:
            found.append(f"{row.label} ({row.model}): exact plan of {row.planned_requests} "
                         f"requests, {row.made_requests} made")
    for row in by_rule(both).itertuples(index=False):
        off = abs(row.made_requests - row.planned_requests)
        if row.basis != "exact" and off > max(SMALL_RULE_REQUESTS,
                                              ESTIMATED_REQUESTS_TOLERANCE * row.planned_requests):
            found.append(f"{row.rule} ({row.model}): {row.made_requests} requests made, "
                         f"{row.planned_requests} estimated ({row.requests_off:+.1%})")
        off = abs(row.made_prompt_tokens - row.planned_prompt_tokens)
        if off > max(SMALL_RULE_PROMPT_TOKENS,
                     PROMPT_TOKENS_TOLERANCE * row.planned_prompt_tokens):
            found.append(f"{row.rule} ({row.model}): {row.made_prompt_tokens:,} prompt tokens "
                         f"of first askings, {row.planned_prompt_tokens:,} planned "
                         f"({row.prompt_tokens_off:+.1%})")
    return found


def comparison_markdown(both: pd.DataFrame) -> list[str]:
    table = by_rule(both)
    lines = ["Made prompt tokens: of each request's first asking, as the plan counts them; "
             "re-asks and askings again after a cut-off answer are the last column, on top.",
             "",
             "| rule | model | basis | planned requests | made | off | planned prompt tokens "
             "| made | off | asked again |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in table.itertuples(index=False):
        lines.append(
            f"| {row.rule} | `{row.model}` | {row.basis} | {row.planned_requests:,} |"
            f" {row.made_requests:,} | {_pct(row.requests_off)} | {row.planned_prompt_tokens:,} |"
            f" {row.made_prompt_tokens:,} | {_pct(row.prompt_tokens_off)} |"
            f" {row.repeat_prompt_tokens:,} |")
    return lines


def _pct(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:+.1%}"


def bill_against_plan(plan: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """Per Snakemake rule and model: the planned requests and dollars beside those made and
    paid. A paid sum with a call of unknown price is unknown (NaN), never a partial sum."""
    both = plan_against_ledger(plan, ledger)
    paid = ~ledger["cached"].astype(bool)
    costs = ledger.assign(paid_cost=ledger["cost_usd"].where(paid, 0.0)).groupby(
        ["rule", "model"])["paid_cost"].agg(lambda s: s.sum() if s.notna().all() else float("nan"))
    both = both.merge(costs.rename("paid_cost_usd").reset_index().rename(
        columns={"rule": "label"}), on=["label", "model"], how="left")
    if "planned_cost_usd" not in both:
        both["planned_cost_usd"] = float("nan")
    grouped = both.groupby(["rule", "model"], sort=True)
    table = grouped[["planned_requests", "planned_to_pay", "made_requests",
                     "paid_requests"]].sum()
    for column in ("planned_cost_usd", "paid_cost_usd"):
        table[column] = grouped[column].agg(
            lambda s: s.sum() if s.notna().all() else float("nan"))
    return table.reset_index()


def bill_markdown(plan: pd.DataFrame | None, ledger: pd.DataFrame, *,
                  plan_note: str = "", labels: ModelLabels | None = None) -> str:
    """The cost report's section that puts the bill beside the plan; `labels`: the run's
    display names of the models."""
    lines = ["## The bill against the plan", ""]
    if plan is None:
        lines += [plan_note or "No plan for this config: `rubriclab plan` (make plan) writes "
                  "one before a run.", ""]
        return "\n".join(lines)
    table = bill_against_plan(plan, ledger)
    lines += [plan_note, "", "Planned cost: as the config prices each row (batch mode, prompt "
              "caching where a prefix qualifies, else standard).", "",
              f"| rule {MODEL_COLUMNS} planned requests | made | planned to pay | paid "
              "| planned cost | paid cost |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in table.itertuples(index=False):
        lines.append(
            f"| {row.rule} {model_cells(row.model, labels)} {row.planned_requests:,} | {row.made_requests:,} |"
            f" {row.planned_to_pay:,} | {row.paid_requests:,} | {_usd(row.planned_cost_usd)} |"
            f" {_usd(row.paid_cost_usd)} |")
    lines.append("")
    return "\n".join(lines)


def _usd(value: float) -> str:
    return "unknown" if pd.isna(value) else f"${value:,.2f}"
