"""The call ledger (one JSON line per request a stage made) and the cost report built from it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pandas as pd

from .request import Completion

LEDGER_COLUMNS = [
    "rule", "model", "key", "cached", "outcome", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "attempts", "reasks", "error", "batch", "cache_read_tokens",
    "cache_write_tokens",
]
# Columns added later, with the value a ledger written before them means.
_LATER_COLUMNS = {"batch": False, "cache_read_tokens": 0, "cache_write_tokens": 0}


@dataclass
class Ledger:
    """Appends one line per completed request; each line is flushed as it is written."""

    path: Path
    rule: str

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = open(self.path, "w", encoding="utf-8")

    def record(self, completion: Completion) -> None:
        if self._fh is None:
            raise RuntimeError(f"ledger {self.path} is closed")
        row = {
            "rule": self.rule,
            "model": completion.request.model,
            "key": completion.key,
            "cached": completion.cached,
            "outcome": completion.outcome,
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "cost_usd": completion.cost_usd,
            "latency_s": round(completion.latency_s, 4),
            "attempts": completion.attempts,
            "reasks": completion.reasks,
            "error": completion.error,
            "batch": completion.batch,
            "cache_read_tokens": completion.usage.cache_read_tokens,
            "cache_write_tokens": completion.usage.cache_write_tokens,
        }
        self._fh.write(json.dumps(row) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_ledgers(paths: list[Path]) -> pd.DataFrame:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}, line {line_no}: not a ledger row ({exc})") from exc
    frame = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
    return frame.fillna(_LATER_COLUMNS).infer_objects()


def summarize(ledger: pd.DataFrame) -> pd.DataFrame:
    """Per rule and model: requests, cache hits, uncached calls, failures, tokens, cost.

    Tokens and cost count what this run spent (uncached requests); `cached_cost_usd` is what the
    cached answers cost when they were first paid for.
    """
    df = ledger.copy()
    df["uncached"] = ~df["cached"].astype(bool)
    df["spent_prompt_tokens"] = df["prompt_tokens"].where(df["uncached"], 0)
    df["spent_completion_tokens"] = df["completion_tokens"].where(df["uncached"], 0)
    df["spent_cache_read_tokens"] = df["cache_read_tokens"].where(df["uncached"], 0)
    df["spent_cache_write_tokens"] = df["cache_write_tokens"].where(df["uncached"], 0)
    df["batch_call"] = df["uncached"] & df["batch"].astype(bool)
    df["spent_cost"] = df["cost_usd"].where(df["uncached"], 0.0)
    df["saved_cost"] = df["cost_usd"].where(~df["uncached"], 0.0)
    df["cost_unknown"] = df["uncached"] & df["cost_usd"].isna()
    grouped = df.groupby(["rule", "model"], sort=True)
    summary = pd.DataFrame({
        "requests": grouped.size(),
        "cache_hits": grouped["cached"].sum().astype(int),
        "uncached_calls": grouped["uncached"].sum().astype(int),
        "unparseable": grouped["outcome"].apply(lambda s: int((s == "unparseable").sum())),
        "failed": grouped["outcome"].apply(lambda s: int((s == "failed").sum())),
        "reasks": grouped["reasks"].sum().astype(int),
        "prompt_tokens": grouped["spent_prompt_tokens"].sum().astype(int),
        "completion_tokens": grouped["spent_completion_tokens"].sum().astype(int),
        "batch_calls": grouped["batch_call"].sum().astype(int),
        "cache_read_tokens": grouped["spent_cache_read_tokens"].sum().astype(int),
        "cache_write_tokens": grouped["spent_cache_write_tokens"].sum().astype(int),
        "cost_usd": grouped["spent_cost"].sum(min_count=0),
        "cost_unknown_calls": grouped["cost_unknown"].sum().astype(int),
        "cached_cost_usd": grouped["saved_cost"].sum(min_count=0),
    }).reset_index()
    return summary


def _fmt_cost(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"${value:,.4f}"


def cost_report_markdown(summary: pd.DataFrame) -> str:
    lines = [
        "# Cost report",
        "",
        "Every model request of the stages that produced the current results. `uncached` calls",
        "reached a model in the run that wrote those results; cache hits cost nothing.",
        "Tokens and cost count uncached calls only; `cost of cached` is what the cached answers",
        "cost when first paid for. Costs come from litellm's price map (local models cost $0).",
        "`batch` counts uncached calls answered through the provider's batch API (priced at its",
        "batch rates); `prompt cache read / written` are the prompt tokens the provider read",
        "from or wrote to its prompt cache (priced at its cache rates).",
        "",
        "| rule | model | requests | cache hits | uncached | unparseable | failed | re-asks |"
        " prompt tokens | completion tokens | cost | cost of cached | batch |"
        " prompt cache read / written |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in summary.itertuples(index=False):
        cost = _fmt_cost(row.cost_usd)
        if row.cost_unknown_calls:
            cost += f" (+{row.cost_unknown_calls} calls of unknown price)"
        lines.append(
            f"| {row.rule} | `{row.model}` | {row.requests} | {row.cache_hits} |"
            f" {row.uncached_calls} | {row.unparseable} | {row.failed} | {row.reasks} |"
            f" {row.prompt_tokens:,} | {row.completion_tokens:,} | {cost} |"
            f" {_fmt_cost(row.cached_cost_usd)} | {row.batch_calls} |"
            f" {row.cache_read_tokens:,} / {row.cache_write_tokens:,} |"
        )
    totals = summary[["requests", "cache_hits", "uncached_calls", "unparseable", "failed",
                      "reasks", "prompt_tokens", "completion_tokens", "batch_calls",
                      "cache_read_tokens", "cache_write_tokens"]].sum()
    lines.append(
        f"| **total** | | {totals.requests} | {totals.cache_hits} | {totals.uncached_calls} |"
        f" {totals.unparseable} | {totals.failed} | {totals.reasks} | {totals.prompt_tokens:,} |"
        f" {totals.completion_tokens:,} | {_fmt_cost(summary['cost_usd'].sum())} |"
        f" {_fmt_cost(summary['cached_cost_usd'].sum())} | {totals.batch_calls} |"
        f" {totals.cache_read_tokens:,} / {totals.cache_write_tokens:,} |"
    )
    lines.append("")
    return "\n".join(lines)
