"""A plan's table: requests, tokens, dollars (standard, batch, prompt caching) and hours."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rubriclab.llm.batch import BATCH_PROVIDERS
from rubriclab.llm.pricing import is_free, price, provider_of
from rubriclab.llm.prompt_cache import cacheable_prefixes, min_cacheable_tokens, prefix_text
from rubriclab.llm.settings import LLMConfig

from .planner import PlannedRow

# Hours assume each request takes SECONDS_PER_REQUEST plus its completion tokens at
# COMPLETION_TOKENS_PER_S, `concurrency` at a time per model (llm.defaults / per_model).
SECONDS_PER_REQUEST = 1.0
COMPLETION_TOKENS_PER_S = 50.0
# OpenAI's and Anthropic's batch APIs promise results within 24 hours.
BATCH_WINDOW_H = 24

PLAN_COLUMNS = [
    "rule", "label", "model", "basis", "requests", "cached", "answered_earlier", "to_pay",
    "prompt_tokens", "prompt_tokens_to_pay", "completion_tokens_to_pay", "cache_qualifying",
    "cache_write_tokens", "cache_read_tokens", "cost_usd", "batch_cost_usd",
    "prompt_cached_cost_usd", "pricing", "configured_cost_usd", "hours",
]
# How the config has a row's requests priced: llm.per_model.<model>.batch, and prompt_cache
# (on by default) where a prefix qualifies.
STANDARD, BATCH, PROMPT_CACHING = "standard", "batch", "prompt caching"


# Where the data and the cache are read from changes no request.
_NOT_DIGESTED = ("data_mirror", "cache_dir")


def config_digest(config: Mapping[str, Any]) -> str:
    """Of the effective config: a plan is the plan of exactly this config."""
    kept = {k: v for k, v in config.items() if k not in _NOT_DIGESTED}
    canonical = json.dumps(kept, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass
class PromptCaching:
    qualifying: int = 0
    write_tokens: int = 0
    read_tokens: int = 0


def prompt_caching(row: PlannedRow) -> PromptCaching:
    """Requests of the row whose shared prefix the provider caches when marked (as the model
    layer marks them: rubriclab.llm.prompt_cache), and the prompt tokens written to and read
    from the provider's cache: the first request with a prefix writes it, later ones read it."""
    result = PromptCaching()
    requests = row.to_pay_requests
    if not requests or min_cacheable_tokens(row.model) is None:
        return result
    ratio = row.prompt_tokens_to_pay / max(1, sum(sum(len(m.content) for m in r.messages)
                                                 for r in requests))
    # A prefix's tokens at the row's tokens per character (counting each of thousands of
    # distinct prefixes would take most of a paper-scale plan).
    marked = cacheable_prefixes(requests,
                                count_tokens=lambda _model, text: round(len(text) * ratio))
    written: set[str] = set()
    for request, chars in zip(requests, marked, strict=True):
        if not chars:
            continue
        result.qualifying += 1
        prefix = prefix_text(request, chars)
        tokens = round(chars * ratio)
        if prefix in written:
            result.read_tokens += tokens
        else:
            written.add(prefix)
            result.write_tokens += tokens
    return result


def plan_table(rows: Sequence[PlannedRow], llm: LLMConfig) -> pd.DataFrame:
    records = []
    for row in rows:
        caching = prompt_caching(row)
        prompt, completion = row.prompt_tokens_to_pay, row.completion_tokens_to_pay
        settings = llm.settings_for(row.model)
        seconds = row.to_pay * SECONDS_PER_REQUEST + completion / COMPLETION_TOKENS_PER_S
        costs = {STANDARD: _price(row.model, prompt, completion),
                 BATCH: _price(row.model, prompt, completion, batch=True)
                 if provider_of(row.model) in BATCH_PROVIDERS else math.nan,
                 PROMPT_CACHING: _price(row.model, prompt, completion,
                                        cache_read_tokens=caching.read_tokens,
                                        cache_write_tokens=caching.write_tokens)}
        pricing = (BATCH if settings.batch
                   else PROMPT_CACHING if settings.prompt_cache and caching.qualifying
                   else STANDARD)
        records.append(dict(
            rule=row.rule, label=row.label, model=row.model, basis=row.basis,
            requests=row.requests, cached=row.cached, answered_earlier=row.answered_earlier,
            to_pay=row.to_pay, prompt_tokens=row.prompt_tokens, prompt_tokens_to_pay=prompt,
            completion_tokens_to_pay=completion, cache_qualifying=caching.qualifying,
            cache_write_tokens=caching.write_tokens, cache_read_tokens=caching.read_tokens,
            cost_usd=costs[STANDARD], batch_cost_usd=costs[BATCH],
            prompt_cached_cost_usd=costs[PROMPT_CACHING], pricing=pricing,
            configured_cost_usd=costs[pricing],
            hours=seconds / max(1, settings.concurrency) / 3600,
        ))
    return pd.DataFrame(records, columns=PLAN_COLUMNS)


def _price(model: str, prompt: int, completion: int, **kind: Any) -> float:
    """NaN where the price is unknown (never $0), or where there is no batch API."""
    value = price(model, prompt, completion, **kind)
    return math.nan if value is None else value


def by_rule_and_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per Snakemake rule and model; a sum with an unknown part is unknown."""
    grouped = table.groupby(["rule", "model"], sort=True)
    summed = grouped[["requests", "cached", "answered_earlier", "to_pay", "prompt_tokens",
                      "prompt_tokens_to_pay", "completion_tokens_to_pay", "cache_qualifying",
                      "hours"]].sum()
    for column in ("cost_usd", "batch_cost_usd", "prompt_cached_cost_usd",
                   "configured_cost_usd"):
        summed[column] = grouped[column].sum(min_count=1).where(
            ~grouped[column].apply(lambda s: s.isna().any()))
    for column in ("basis", "pricing"):
        summed[column] = grouped[column].agg(
            lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    summed["jobs"] = grouped.size()
    return summed.reset_index()


def _dollars(value: float) -> str:
    return "unknown" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"${value:,.2f}"


def _total(series: pd.Series, where: pd.Series | None = None) -> str:
    """A column's total: unknown if any part of it is (with the known part shown)."""
    values = series if where is None else series[where]
    known = values.dropna().sum()
    unknown = int(values.isna().sum())
    if unknown:
        return f"≥ ${known:,.2f} + {unknown} rows unknown"
    return f"${known:,.2f}"


def plan_markdown(table: pd.DataFrame, *, config_name: str, digest: str,
                  free_text_share: float | None) -> str:
    summary = by_rule_and_model(table)
    paid = summary[summary["to_pay"] > 0]
    batch_capable = {m for m in table["model"]
                     if not is_free(m) and provider_of(m) in BATCH_PROVIDERS}
    lines = [
        f"# Plan: {config_name}",
        "",
        f"Config digest `{digest}`. Requests each rule will make per model, before any model "
        "is called: `cached` are answered by the call cache, `earlier` by an earlier job of "
        "the same run (the same request), `to pay` reach a model. *exact* rows are rendered "
        "from real inputs by the rules' own code; *estimated* rows rest on stand-in answers "
        "(revisions, responses, edits, the agent's turns)"
        + (f", free-text answers taken to fill {free_text_share:.0%} of their budget."
           if free_text_share is not None else ", the rehearsal's own answers.")
        + " Prompt tokens: litellm's counter for the model. Dollars: litellm's price map; "
        "unknown where it has no price (never $0). Batch: the provider's batch API "
        "(`llm.per_model.<model>.batch: true`), n/a where litellm cannot submit one "
        f"(it can for: {', '.join(sorted(BATCH_PROVIDERS))}). Prompt caching: "
        "Anthropic prefixes long enough to cache, marked by the model layer. Hours at the "
        f"configured concurrency, {SECONDS_PER_REQUEST:g} s a request plus "
        f"{COMPLETION_TOKENS_PER_S:g} completion tokens a second.",
        "",
        "| rule | model | basis | jobs | requests | cached | earlier | to pay | prompt tokens "
        "| completion tokens | cost | batch | prompt caching (qualifying) | hours |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary.itertuples(index=False):
        caching = _dollars(r.prompt_cached_cost_usd)
        if r.cache_qualifying:
            caching += f" ({r.cache_qualifying:,})"
        lines.append(
            f"| {r.rule} | `{r.model}` | {r.basis} | {r.jobs} | {r.requests:,} | {r.cached:,} |"
            f" {r.answered_earlier:,} | {r.to_pay:,} | {r.prompt_tokens_to_pay:,} |"
            f" {r.completion_tokens_to_pay:,} | {_dollars(r.cost_usd)} |"
            f" {'n/a' if math.isnan(r.batch_cost_usd) else _dollars(r.batch_cost_usd)} |"
            f" {caching} | {r.hours:.2f} |")
    totals = summary[["requests", "cached", "answered_earlier", "to_pay",
                      "prompt_tokens_to_pay", "completion_tokens_to_pay"]].sum()
    lines.append(
        f"| **total** | | | {summary['jobs'].sum()} | {totals.requests:,} | {totals.cached:,} |"
        f" {totals.answered_earlier:,} | {totals.to_pay:,} | {totals.prompt_tokens_to_pay:,} |"
        f" {totals.completion_tokens_to_pay:,} | {_total(summary['cost_usd'])} | | "
        f"{_total(summary['prompt_cached_cost_usd'])} | |")
    lines.append("")
    hours = paid.groupby("model")["hours"].sum()
    standard = _total(paid["cost_usd"])
    batch_mixed = paid["batch_cost_usd"].where(paid["model"].isin(batch_capable),
                                               paid["cost_usd"])
    lines += [
        f"- **Standard:** {standard} for {int(totals.to_pay):,} requests, "
        f"{int(totals.prompt_tokens_to_pay):,} prompt and "
        f"{int(totals.completion_tokens_to_pay):,} completion tokens.",
        f"- **With batch mode** for every model whose provider has a batch API "
        f"({', '.join(f'`{m}`' for m in sorted(batch_capable)) or 'none'}): "
        f"{_total(batch_mixed)}; a batch is answered within {BATCH_WINDOW_H} h.",
        f"- **With prompt caching:** {_total(summary['prompt_cached_cost_usd'])} "
        f"({int(summary['cache_qualifying'].sum()):,} requests qualify).",
        f"- **As this config runs:** {_total(paid['configured_cost_usd'])} "
        f"({_pricing_note(table)}); the run's figures/cost_report.md sets its bill beside "
        "this.",
        f"- **Hours** per model at its concurrency: "
        + ", ".join(f"`{m}` {h:.1f}" for m, h in hours.sort_values(ascending=False).items())
        + (f"; the run takes at least {hours.max():.1f} h (models run side by side)."
           if len(hours) else "."),
        "",
    ]
    return "\n".join(lines)


def _pricing_note(table: pd.DataFrame) -> str:
    """Which models the config has batched, and which prompt-cached, among those to pay."""
    to_pay = table[table["to_pay"] > 0]
    parts = []
    for pricing, what in ((BATCH, "batch mode for"), (PROMPT_CACHING, "prompt caching for")):
        models = sorted(set(to_pay.loc[to_pay["pricing"] == pricing, "model"]))
        if models:
            parts.append(f"{what} {', '.join(f'`{m}`' for m in models)}")
    return "; ".join(parts) or "standard prices: no batch mode, no prefix to cache"


def write_plan(table: pd.DataFrame, markdown: str, workdir: Path, digest: str) -> list[Path]:
    """results/plan/plan.csv (per job, for the cost report), plan.json, figures/plan.md."""
    out = workdir / "results" / "plan"
    out.mkdir(parents=True, exist_ok=True)
    (workdir / "figures").mkdir(parents=True, exist_ok=True)
    paths = [out / "plan.csv", out / "plan.json", workdir / "figures" / "plan.md"]
    table.to_csv(paths[0], index=False)
    paths[1].write_text(json.dumps({"config_digest": digest}, indent=1) + "\n", encoding="utf-8")
    paths[2].write_text(markdown, encoding="utf-8")
    return paths
