"""A plan's table: requests, tokens, dollars (standard, batch, prompt caching) and hours.

Its words, figures/plan.md, are rubriclab.plan.markdown's."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rubriclab.llm.pricing import (is_free, is_priced, price, price_requests, provider_of,
                                   tier_thresholds)
from rubriclab.llm.prompt_cache import cacheable_prefixes, min_cacheable_tokens, prefix_text
from rubriclab.llm.providers import provider_for
from rubriclab.llm.settings import BATCH_PROVIDERS, LLMConfig

from .hours import batch_critical_path, limit_hours
from .planner import PlannedRow
from .retirement import add_retirement
from .speed import Speed

# Besides the rate limits (llm.per_model.<model>.requests_per_minute / tokens_per_minute), hours
# are bounded by each request taking SECONDS_PER_REQUEST plus its completion tokens at
# COMPLETION_TOKENS_PER_S, `concurrency` at a time per model (llm.defaults / per_model). A local
# model's hours are its measured speed instead (rubriclab.plan.speed), where there is one.
SECONDS_PER_REQUEST = 1.0
COMPLETION_TOKENS_PER_S = 50.0
# Prompt caching inside an Anthropic batch: "The pricing discounts from prompt caching and
# Message Batches can stack ... since batch requests are processed asynchronously and
# concurrently, cache hits are provided on a best-effort basis. Users typically experience cache
# hit rates ranging from 30% to 98%" (docs.anthropic.com/en/docs/build-with-claude/
# batch-processing). A marked request that misses writes the prefix again. The plan's expected
# bill takes the low end of that range, its low bill the high end, its high bill no hit at all.
BATCH_CACHE_HIT_RATES = {"low": 0.98, "expected": 0.30, "high": 0.0}
# OpenAI's, Anthropic's and Gemini's batch APIs promise results within 24 hours.
BATCH_WINDOW_H = 24

PLAN_COLUMNS = [
    "rule", "label", "model", "basis", "requests", "cached", "answered_earlier", "to_pay",
    "prompt_tokens", "prompt_tokens_to_pay", "completion_tokens_to_pay", "cache_qualifying",
    "cache_write_tokens", "cache_read_tokens", "cost_usd", "batch_cost_usd",
    "prompt_cached_cost_usd", "pricing", "configured_cost_usd", "hours",
    # thinking (expected share of the cap, and the cap), the range, and where prices come from
    "thinking_tokens_to_pay", "thinking_tokens_cap", "cost_low_usd", "cost_high_usd",
    "batch_cost_low_usd", "batch_cost_high_usd", "configured_cost_low_usd",
    "configured_cost_high_usd", "price_source", "hours_bound",
    # where the answers' lengths come from: stand-in, or a pilot (rubriclab.plan.measured)
    "answers",
    # the day the model's provider stops serving it, or empty (rubriclab.plan.retirement)
    "retires",
]
# How the config has a row's requests priced: llm.per_model.<model>.batch, and prompt_cache
# (on by default) where a prefix qualifies.
STANDARD, BATCH, PROMPT_CACHING = "standard", "batch", "prompt caching"
COST_COLUMNS = ("cost_usd", "batch_cost_usd", "prompt_cached_cost_usd", "configured_cost_usd",
                "cost_low_usd", "cost_high_usd", "batch_cost_low_usd", "batch_cost_high_usd",
                "configured_cost_low_usd", "configured_cost_high_usd")
PRICE_KEY = "llm.per_model.<model>.price"


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


def _batched(row: PlannedRow, llm: LLMConfig) -> bool:
    """Whether the config sends this row's requests to a batch (its model's `batch`, unless
    their role opts out: llm.roles.<role>.batch: false)."""
    if not row.to_pay_requests:
        return llm.settings_for(row.model).batch
    return any(llm.batch_for(row.model, r.role) for r in row.to_pay_requests)


def batch_cache_hit_rates(model: str, measured: Any = None) -> dict[str, float]:
    """BATCH_CACHE_HIT_RATES, with the expected rate the model's as a pilot measured it
    (rubriclab.plan.measured), where it did (the low bill's rate then at least that)."""
    rate = None if measured is None else measured.batch_cache_hit_rate(model)
    if rate is None:
        return BATCH_CACHE_HIT_RATES
    return {"low": max(BATCH_CACHE_HIT_RATES["low"], rate), "expected": rate,
            "high": BATCH_CACHE_HIT_RATES["high"]}


def plan_table(rows: Sequence[PlannedRow], llm: LLMConfig,
               speeds: Mapping[str, Speed | None] | None = None,
               measured: Any = None) -> pd.DataFrame:
    """`speeds`: the measured speed of each local model (None: not measured), and of each
    model a pilot timed; `measured`: a pilot's measures (rubriclab.plan.measured), whose
    batch prompt-cache hit rates replace the expected one."""
    records = []
    for row in rows:
        caching = prompt_caching(row)
        prompt = row.prompt_tokens_to_pay
        settings = llm.settings_for(row.model)
        configured = settings.price
        each = prompt_tokens_each(row) if configured is None and tier_thresholds(row.model) \
            else None  # a tiered price applies per request (rubriclab.llm.pricing)
        batchable = provider_of(row.model) in BATCH_PROVIDERS
        pricing = (BATCH if _batched(row, llm)
                   else PROMPT_CACHING if settings.prompt_cache and caching.qualifying
                   else STANDARD)
        cached_in_batch = settings.prompt_cache and caching.qualifying > 0
        costs = {}
        for level, share in row.thinking_shares().items():
            completion = row.completion_tokens_at(share)
            hits = batch_cache_hit_rates(row.model, measured)[level] if cached_in_batch else 0.0
            costs[level] = {
                STANDARD: _price(row.model, prompt, completion, configured=configured,
                                 each=each),
                BATCH: _price(row.model, prompt, completion, batch=True, configured=configured,
                              each=each,
                              cache_read_tokens=round(hits * caching.read_tokens),
                              cache_write_tokens=caching.write_tokens
                              + round((1 - hits) * caching.read_tokens) if cached_in_batch
                              else 0)
                if batchable else math.nan,
                PROMPT_CACHING: _price(row.model, prompt, completion, each=each,
                                       cache_read_tokens=caching.read_tokens,
                                       cache_write_tokens=caching.write_tokens,
                                       configured=configured)}
        expected = costs["expected"]
        source = ("free" if is_free(row.model) else "config" if configured is not None
                  else "litellm" if is_priced(row.model) else "unknown")
        records.append(dict(
            rule=row.rule, label=row.label, model=row.model, basis=row.basis,
            requests=row.requests, cached=row.cached, answered_earlier=row.answered_earlier,
            to_pay=row.to_pay, prompt_tokens=row.prompt_tokens, prompt_tokens_to_pay=prompt,
            completion_tokens_to_pay=row.completion_tokens_to_pay,
            cache_qualifying=caching.qualifying, cache_write_tokens=caching.write_tokens,
            cache_read_tokens=caching.read_tokens, cost_usd=expected[STANDARD],
            batch_cost_usd=expected[BATCH], prompt_cached_cost_usd=expected[PROMPT_CACHING],
            pricing=pricing, configured_cost_usd=expected[pricing], hours=math.nan,
            thinking_tokens_to_pay=round(row.thinking_share * row.thinking_tokens_cap),
            thinking_tokens_cap=row.thinking_tokens_cap,
            cost_low_usd=costs["low"][STANDARD], cost_high_usd=costs["high"][STANDARD],
            batch_cost_low_usd=costs["low"][BATCH], batch_cost_high_usd=costs["high"][BATCH],
            configured_cost_low_usd=costs["low"][pricing],
            configured_cost_high_usd=costs["high"][pricing], price_source=source,
            hours_bound="", answers=row.answers,
        ))
    table = pd.DataFrame(records, columns=PLAN_COLUMNS)
    _add_hours(table, llm, speeds or {})
    # the batch waits in series on the run's DAG, as the config sends each row
    table.attrs["batch_path"] = batch_critical_path(rows, lambda row: _batched(row, llm))
    add_retirement(table, llm)
    return table


def _add_hours(table: pd.DataFrame, llm: LLMConfig,
               speeds: Mapping[str, Speed | None]) -> None:
    """Hours without batch mode, each model bound by its provider's limits as the provider
    counts them (rubriclab.plan.hours.limit_hours). A model's rate limits hold for the whole
    run (every job of the model shares them), so its requests and tokens are summed over all
    its rules and divided by each limit; its concurrency bounds it too, as one job at a time
    (`SECONDS_PER_REQUEST`, `COMPLETION_TOKENS_PER_S`, or the latency a pilot measured). The
    slowest of these binds, and each row gets its share of that time (`hours`, at the
    expected thinking). A local model answers one request at a time in its job (one llama.cpp
    context), at its measured speed where there is one (`speeds`), else at the assumed one
    (bound "assumed").

    `table.attrs["hours"]`, per model: hours at the expected and at the high thinking level
    (every request thinking to its cap) and their bounds, for all its rows without batch mode
    and for the rows the config sends as ordinary calls ("run_..."; its batched rows wait on
    batch windows instead)."""
    table.attrs["speeds"] = {}
    table.attrs["hours"] = {}
    for model, rows in table.groupby("model").groups.items():
        part = table.loc[rows]
        settings = llm.settings_for(model)
        speed = speeds.get(model)
        local = provider_for(str(model)).embedded
        if speed is not None:
            table.attrs["speeds"][model] = speed.describe()
        reads = part["cache_read_tokens"] if settings.prompt_cache else 0 * part["to_pay"]

        def hours(which: pd.Series, completion: pd.Series) -> tuple[str, pd.Series]:
            """The binding bound of these rows' requests, and each row's share of its hours."""
            to_pay, prompt = part["to_pay"][which], part["prompt_tokens_to_pay"][which]
            completion = completion[which]
            if speed is not None:  # local: its speed here; an API model: a pilot's latency
                seconds = speed.seconds(to_pay, prompt, completion)
                if local:
                    return "measured", (seconds / 3600).astype(float)
            else:
                seconds = to_pay * SECONDS_PER_REQUEST + completion / COMPLETION_TOKENS_PER_S
            by_bound = limit_hours(model, settings, to_pay, prompt, reads[which], completion,
                                   seconds)
            bound = max(by_bound, key=lambda name: by_bound[name].sum())
            return ("assumed" if local else bound), by_bound[bound].astype(float)

        everything = part["to_pay"] >= 0
        unbatched = part["pricing"] != BATCH
        expected = part["completion_tokens_to_pay"]
        high = (expected - part["thinking_tokens_to_pay"] + part["thinking_tokens_cap"])
        bound, row_hours = hours(everything, expected)
        table.loc[rows, "hours"] = row_hours
        table.loc[rows, "hours_bound"] = bound
        high_bound, high_hours = hours(everything, high)
        run_hours = hours(unbatched, expected)[1] if unbatched.any() else row_hours[:0]
        run_high = hours(unbatched, high)[1] if unbatched.any() else row_hours[:0]
        table.attrs["hours"][model] = dict(
            expected=float(row_hours.sum()), bound=bound, high=float(high_hours.sum()),
            high_bound=high_bound, thinks=bool(part["thinking_tokens_cap"].sum() > 0),
            batched=bool((~unbatched & (part["to_pay"] > 0)).any()),
            run_expected=float(run_hours.sum()), run_high=float(run_high.sum()))


def _price(model: str, prompt: int, completion: int, *, each: list[int] | None = None,
           **kind: Any) -> float:
    """NaN where the price is unknown (never $0), or where there is no batch API. `each`: the
    prompt tokens of each request (summing to `prompt`), for a price that depends on a
    request's size (tiers: `price_requests`)."""
    value = (price(model, prompt, completion, **kind) if each is None
             else price_requests(model, each, completion, **kind))
    return math.nan if value is None else value


def prompt_tokens_each(row: PlannedRow) -> list[int]:
    """Each request's prompt tokens, at the row's tokens per character (as `prompt_caching`
    counts prefixes), summing to the row's prompt tokens to pay; each at the row's mean where
    the row has no requests to read."""
    total, n = row.prompt_tokens_to_pay, row.to_pay
    chars = [sum(len(m.content) for m in r.messages) for r in row.to_pay_requests]
    if len(chars) != n or not sum(chars):
        chars = [1] * n
    if not n:
        return []
    exact = [total * c / sum(chars) for c in chars]
    each = [math.floor(x) for x in exact]
    for i in sorted(range(n), key=lambda i: each[i] - exact[i])[:total - sum(each)]:
        each[i] += 1  # largest remainders first: the sum is the row's
    return each


def by_rule_and_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per Snakemake rule and model; a sum with an unknown part is unknown."""
    grouped = table.groupby(["rule", "model"], sort=True)
    summed = grouped[["requests", "cached", "answered_earlier", "to_pay", "prompt_tokens",
                      "prompt_tokens_to_pay", "completion_tokens_to_pay", "cache_qualifying",
                      "thinking_tokens_to_pay", "thinking_tokens_cap", "hours"]].sum()
    for column in COST_COLUMNS:
        summed[column] = grouped[column].sum(min_count=1).where(
            ~grouped[column].apply(lambda s: s.isna().any()))
    for column in ("basis", "pricing", "price_source", "hours_bound", "answers"):
        summed[column] = grouped[column].agg(
            lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    summed["jobs"] = grouped.size()
    return summed.reset_index()


def worst_case_hours(table: pd.DataFrame) -> float:
    """The longest the run may take as its config sends it (an upper bound): the batch waits
    in series on the critical path of its DAG at their providers' worst windows
    (rubriclab.plan.hours.batch_critical_path), plus every model's requests sent as ordinary
    calls at the high thinking level (every request thinking to its cap), added up: models
    may run one after another (generators, then responders, then a judge), so the bound
    takes none of it to overlap."""
    path = table.attrs.get("batch_path")
    info = table.attrs.get("hours") or {}
    ordinary = sum(h["run_high"] for h in info.values())
    return float((path.worst_h if path is not None else 0.0) + ordinary)


def write_plan(table: pd.DataFrame, markdown: str, workdir: Path, digest: str) -> list[Path]:
    """results/plan/plan.csv (per job, for the cost report), plan.json, figures/plan.md."""
    out = workdir / "results" / "plan"
    out.mkdir(parents=True, exist_ok=True)
    (workdir / "figures").mkdir(parents=True, exist_ok=True)
    paths = [out / "plan.csv", out / "plan.json", workdir / "figures" / "plan.md"]
    table.to_csv(paths[0], index=False)
    paths[1].write_text(json.dumps({"config_digest": digest,
                                    "worst_case_hours": worst_case_hours(table)}, indent=1)
                        + "\n", encoding="utf-8")
    paths[2].write_text(markdown, encoding="utf-8")
    return paths
