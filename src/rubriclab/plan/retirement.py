"""The plan's retirement days: each row's model's day (`retires` of results/plan/plan.csv), and
the paid models retired, or retiring within the plan's worst-case duration, named in the plan
and by `rubriclab plan` (rubriclab.llm.retirement says where each day comes from)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from rubriclab.llm.pricing import is_free
from rubriclab.llm.retirement import (LITELLM, RETIRED, RETIRING, classify, now_utc,
                                      retirement_date, retires_key, source_text)
from rubriclab.llm.settings import LLMConfig


def add_retirement(table: pd.DataFrame, llm: LLMConfig) -> None:
    """Fill the `retires` column (an ISO date, or empty where none is known) and keep each
    model's (day, source) in table.attrs["retirement"]."""
    dated = {model: retirement_date(model, llm.settings_for(model).retires)
             for model in table["model"].unique()}
    table["retires"] = [day.isoformat() if day else ""
                        for day in (dated[m][0] for m in table["model"])]
    table.attrs["retirement"] = dated


def _paid_models(table: pd.DataFrame) -> list[str]:
    return sorted(m for m in table.loc[table["to_pay"] > 0, "model"].unique() if not is_free(m))


def _dated(table: pd.DataFrame, model: str) -> tuple[date | None, str | None]:
    kept = table.attrs.get("retirement", {})
    return kept.get(model, (None, None))


def retirement_warnings(table: pd.DataFrame, hours: float,
                        today: date | None = None) -> list[str]:
    """One line per paid model retired by `today`, or retiring within `hours` of it."""
    lines = []
    for model in _paid_models(table):
        day, source = _dated(table, model)
        status = classify(day, hours, today)
        if status == RETIRED:
            lines.append(f"model {model!r} retired on {day} ({source_text(model, source)}): "
                         "the run stops before its first job; name a model its provider "
                         f"serves, or set {retires_key(model)} to a later day if it still "
                         "serves this one")
        elif status == RETIRING:
            lines.append(f"model {model!r} retires on {day} ({source_text(model, source)}), "
                         f"within the plan's worst case of {hours:,.0f} h from "
                         f"{now_utc(today).date()}: calls after that day will fail")
    return lines


def retirement_lines(table: pd.DataFrame, hours: float, today: date | None = None) -> list[str]:
    """The plan's line naming every paid model's retirement day and where it comes from."""
    models = _paid_models(table)
    if not models:
        return []
    parts = []
    for model in models:
        day, source = _dated(table, model)
        status = classify(day, hours, today)
        where = "litellm" if source == LITELLM else "config" if source else ""
        text = f"`{model}` {day} ({where})" if day else f"`{model}` no date known"
        parts.append(text + (" **retired**" if status == RETIRED else
                             " **retires within the worst case**" if status == RETIRING else ""))
    return [
        "- **Retirement** (the day each paid model's provider stops serving it: "
        "`llm.per_model.<model>.retires` where the config gives one, else litellm's price "
        f"map, `deprecation_date`; from {now_utc(today).date()}, against the plan's worst "
        f"case of {hours:,.0f} h): " + ", ".join(parts) + ". A retired model stops the run "
        "before its first job; one retiring within the worst case is warned of."]
