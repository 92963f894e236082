"""A plan's table in words (figures/plan.md): requests, tokens and dollars per rule and model,
the totals standard, in batch mode, with prompt caching and as the config runs, what a pilot
measured, the prices still unknown, and the hours each model and the run may take."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.llm.ledger import MODEL_COLUMNS, model_cells
from rubriclab.llm.pricing import is_free, provider_of
from rubriclab.llm.providers import provider_for
from rubriclab.llm.settings import BATCH_PROVIDERS

from .hours import BATCH_WINDOWS
from .planner import THINKING_SHARES
from .report import (BATCH, BATCH_CACHE_HIT_RATES, BATCH_WINDOW_H, COMPLETION_TOKENS_PER_S,
                     PRICE_KEY, PROMPT_CACHING, SECONDS_PER_REQUEST, by_rule_and_model,
                     worst_case_hours)
from .retirement import retirement_lines


def _dollars(value: float) -> str:
    return "unknown" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"${value:,.2f}"


def _known(series: pd.Series) -> bool:
    return not series.isna().any()


def _sum(series: pd.Series) -> str:
    return f"${series.sum():,.2f}" if _known(series) else "no total: a price is unknown (below)"


def _range(low: pd.Series, expected: pd.Series, high: pd.Series) -> str:
    """A total at the expected thinking with the low and high beside it; no total where any
    part is unknown (an "at least" is no bill)."""
    if not (_known(low) and _known(expected) and _known(high)):
        return "no total: a price is unknown (below)"
    return f"${expected.sum():,.2f} (low ${low.sum():,.2f}, high ${high.sum():,.2f})"


def plan_markdown(table: pd.DataFrame, *, config_name: str, digest: str,
                  free_text_share: float | None, finished_jobs: Mapping[str, int] | None = None,
                  measured: Any = None, labels: ModelLabels | None = None) -> str:
    """`measured`: the pilot whose measures the table was planned with (stated at the top);
    `labels`: the config's display names of the models (the `model` column; the billed model
    string stands beside it)."""
    summary = by_rule_and_model(table)
    paid = summary[summary["to_pay"] > 0]
    batch_capable = {m for m in table["model"]
                     if not is_free(m) and provider_of(m) in BATCH_PROVIDERS}
    configured = sorted(set(table.loc[table["price_source"] == "config", "model"]))
    shares = THINKING_SHARES
    lines = [
        f"# Plan: {config_name}",
        "",
        *_pilot_lines(table, measured),
        f"Config digest `{digest}`. Requests each rule will make per model, before any model "
        "is called: `cached` are answered by the call cache, `earlier` by an earlier job of "
        "the same run (the same request), `to pay` reach a model. *exact* rows are rendered "
        "from real inputs by the rules' own code; *estimated* rows rest on stand-in answers "
        "(revisions, responses, edits, the agent's turns)"
        + (f", free-text answers taken to fill {free_text_share:.0%} of their budget."
           if free_text_share is not None else ", the rehearsal's own answers.")
        + _finished_note(finished_jobs)
        + " Prompt tokens: litellm's counter for the model. Dollars: the model's configured "
        f"price (`{PRICE_KEY}`, US dollars per million tokens"
        + (f": {', '.join(f'`{m}`' for m in configured)}" if configured else "")
        + "; where it gives no cache_read, cached input is priced at its input rate, the most "
        "a provider bills), else litellm's price map; unknown where neither prices it (never "
        "$0). Batch: the provider's batch API (`llm.per_model.<model>.batch: true`), n/a "
        "where the model layer cannot submit one (it can for: "
        f"{', '.join(sorted(BATCH_PROVIDERS))}). Prompt caching: Anthropic prefixes long "
        "enough to cache, marked by the model layer; inside an Anthropic batch the two "
        "discounts stack, but cache hits are best-effort (30% to 98% typical, as Anthropic "
        f"documents it): the batch column takes {BATCH_CACHE_HIT_RATES['expected']:.0%} of "
        f"the hits, the low total {BATCH_CACHE_HIT_RATES['low']:.0%}, the high none, and a "
        "miss writes its prefix again.",
        "",
        "Thinking tokens, billed as completion tokens, are the one large assumption: each "
        "request's cap is the thinking budget litellm sends for its reasoning effort (Gemini "
        "2.5 and Anthropic: low / medium / high 1,024 / 2,048 / 4,096; minimal 1 on Gemini "
        "2.5 Flash), else the model's room for thinking (`reasoning_tokens`: OpenAI, xAI, "
        "OpenRouter models; DeepSeek's chat model only when given an effort; Claude without "
        "an effort does not think). Every dollar below is at the expected "
        f"{shares['expected']:.0%} of the cap, with the low ({shares['low']:.0%}) and high "
        f"({shares['high']:.0%}: every request thinks to its cap) totals beside it: "
        f"{int(summary['thinking_tokens_to_pay'].sum()):,} expected thinking tokens of "
        f"{int(summary['completion_tokens_to_pay'].sum()):,} completion tokens to pay, at "
        f"most {int(summary['thinking_tokens_cap'].sum()):,}.",
        "",
        f"| rule {MODEL_COLUMNS} basis | jobs | requests | cached | earlier | to pay | prompt tokens "
        "| completion tokens (thinking) | cost | batch | prompt caching (qualifying) | hours |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary.itertuples(index=False):
        caching = _dollars(r.prompt_cached_cost_usd)
        if r.cache_qualifying:
            caching += f" ({r.cache_qualifying:,})"
        lines.append(
            f"| {r.rule} {model_cells(r.model, labels)} {r.basis}{_answers_note(r.answers)} | {r.jobs} |"
            f" {r.requests:,} | {r.cached:,} |"
            f" {r.answered_earlier:,} | {r.to_pay:,} | {r.prompt_tokens_to_pay:,} |"
            f" {r.completion_tokens_to_pay:,} ({r.thinking_tokens_to_pay:,}) |"
            f" {_dollars(r.cost_usd)} |"
            f" {'n/a' if math.isnan(r.batch_cost_usd) else _dollars(r.batch_cost_usd)} |"
            f" {caching} | {r.hours:.2f} |")
    totals = summary[["requests", "cached", "answered_earlier", "to_pay",
                      "prompt_tokens_to_pay", "completion_tokens_to_pay",
                      "thinking_tokens_to_pay"]].sum()
    lines.append(
        f"| **total** | | | | {summary['jobs'].sum()} | {totals.requests:,} | {totals.cached:,} |"
        f" {totals.answered_earlier:,} | {totals.to_pay:,} | {totals.prompt_tokens_to_pay:,} |"
        f" {totals.completion_tokens_to_pay:,} ({totals.thinking_tokens_to_pay:,}) |"
        f" {_sum(paid['cost_usd'])} | | {_sum(paid['prompt_cached_cost_usd'])} | |")
    lines.append("")

    levels = ("cost_low_usd", "cost_usd", "cost_high_usd")

    def mixed(column: str) -> pd.Series:
        """Batch prices for the models that have a batch API, standard for the rest."""
        return paid[f"batch_{column}"].where(paid["model"].isin(batch_capable),
                                             paid[column])

    lines += [
        f"- **Standard:** {_range(*(paid[c] for c in levels))}"
        f" for {int(totals.to_pay):,} requests, {int(totals.prompt_tokens_to_pay):,} prompt and "
        f"{int(totals.completion_tokens_to_pay):,} completion tokens.",
        f"- **With batch mode** for every model whose provider has a batch API "
        f"({', '.join(f'`{m}`' for m in sorted(batch_capable)) or 'none'}): "
        f"{_range(*(mixed(c) for c in levels))}; a "
        f"batch is answered within {BATCH_WINDOW_H} h.",
        f"- **With prompt caching:** {_sum(paid['prompt_cached_cost_usd'])} "
        f"({int(summary['cache_qualifying'].sum()):,} requests qualify).",
        f"- **As this config runs:** {_range(*(paid[f'configured_{c}'] for c in levels))} "
        f"({_pricing_note(table)}); the run's figures/cost_report.md sets its bill beside "
        "this.",
        *_unknown_prices(paid, batch_capable),
        *_hours_lines(table),
        *retirement_lines(table, worst_case_hours(table)),
        "",
    ]
    return "\n".join(lines)


def _answers_note(answers: str) -> str:
    """Beside a row's basis: where its answers' lengths come from, unless the stand-ins."""
    return "" if answers == "stand-in" else f"; answers: {answers}"


def _pilot_lines(table: pd.DataFrame, measured: Any) -> list[str]:
    """What a pilot measured and the plan used in place of its assumptions, and what stayed
    assumed (rubriclab.plan.measured)."""
    if measured is None:
        return []
    to_pay = table[table["to_pay"] > 0]
    models = sorted(set(to_pay["model"]))
    from_pilot = int((to_pay["answers"] != "stand-in").sum())
    digest = (f"config digest `{measured.digest}`" if measured.digest
              else "no results/effective_config.yaml there, so no config digest")
    n_models = len(measured.calls_by_model)

    def listed(values: Mapping[str, str], otherwise: str) -> str:
        return "; ".join(f"`{m}` {v}" for m, v in sorted(values.items())) or otherwise

    thinking = {m: f"{measured.thinking[m].share:.0%} ({measured.thinking[m].calls:,} calls)"
                for m in models if m in measured.thinking}
    hits = {m: f"{measured.batch_cache[m].rate:.0%} ({measured.batch_cache[m].calls:,} calls)"
            for m in models if m in measured.batch_cache}
    free = {m: f"{measured.free_text[m].share:.0%} ({measured.free_text[m].calls:,} answers)"
            for m in models if m in measured.free_text}
    latency = {m: measured.latency[m].describe().replace(f"{measured.latency[m].source}, ", "")
               for m in models if m in measured.latency}
    absent = [f"`{m}`" for m in models if m not in measured.calls_by_model]
    return [
        f"**Measured by a pilot** in `{measured.workdir}` ({digest}; {measured.calls:,} calls "
        f"that reached a model, of {n_models} model{'s' if n_models != 1 else ''}, in "
        f"{measured.ledger_files} ledger files; answers' texts: {measured.answers_from}). "
        "In place of the assumptions stated below (rubriclab.plan.measured):",
        f"- answers' lengths: {from_pilot} of {len(to_pay)} rows to pay (`answers`: `pilot`, "
        "the pilot's answers of the same ledger label and model; `pilot (<rule>)`, of the same "
        "rule; `stand-in`: as assumed);",
        "- the share of its budget a free-text answer fills, for the stand-in answers that later "
        f"prompts quote (a response a judge reads): {listed(free, 'none measured')};",
        "- expected thinking, as a share of each request's cap (the low and high totals keep "
        f"theirs): {listed(thinking, 'none measured')};",
        "- expected batch prompt-cache hit rate (prompt tokens read over read and written; a "
        "prefix's first write counts as a miss, so it errs low): "
        f"{listed(hits, 'none measured')};",
        "- latency, in place of "
        f"{SECONDS_PER_REQUEST:g} s a request plus {COMPLETION_TOKENS_PER_S:g} completion "
        f"tokens a second in the hours: {listed(latency, 'none measured')}.",
        "- Still assumed: everything not named above"
        + (f", and every figure of the models the pilot did not call ({', '.join(absent)})"
           if absent else "") + ".",
        "",
    ]


def _finished_note(finished_jobs: Mapping[str, int] | None) -> str:
    if not finished_jobs:
        return ""
    jobs = ", ".join(f"{rule} ×{n}" for rule, n in sorted(finished_jobs.items()))
    return (f" The outputs of {sum(finished_jobs.values())} model jobs are already made and "
            f"up to date ({jobs}): the rows after them are planned on those real outputs, not "
            "on stand-ins.")


def _unknown_prices(paid: pd.DataFrame, batch_capable: set[str]) -> list[str]:
    """The models whose price is unknown, and the key that prices them."""
    lines = []
    unknown = paid.loc[paid["cost_usd"].isna()].groupby("model")["rule"].agg(sorted)
    if len(unknown):
        lines.append(
            "- **Unknown price:** "
            + "; ".join(f"`{m}` ({', '.join(rules)})" for m, rules in unknown.items())
            + f". Price each in the config: `{PRICE_KEY}: {{input: ..., output: ...}}` "
            "(US dollars per million tokens; optional cache_read, cache_write, batch_input, "
            "batch_output), from the provider's list price.")
    no_batch = paid.loc[paid["model"].isin(batch_capable) & paid["batch_cost_usd"].isna()
                        & paid["cost_usd"].notna(), "model"]
    if len(no_batch):
        lines.append(
            "- **Unknown batch price:** "
            + ", ".join(f"`{m}`" for m in sorted(set(no_batch)))
            + f": give `batch_input` and `batch_output` in `{PRICE_KEY}`.")
    uncached = paid.loc[paid["prompt_cached_cost_usd"].isna() & paid["cost_usd"].notna()
                        & (paid["cache_qualifying"] > 0), "model"]
    if len(uncached):
        lines.append(
            "- **Unknown prompt-caching price:** "
            + ", ".join(f"`{m}`" for m in sorted(set(uncached)))
            + f": give `cache_write` (and `cache_read`) in `{PRICE_KEY}`.")
    return lines


_BOUND_NAMES = {"requests_per_minute": "requests a minute",
                "tokens_per_minute": "tokens a minute",
                "input_tokens_per_minute": "input tokens a minute",
                "output_tokens_per_minute": "output tokens a minute",
                "concurrency": "concurrency", "measured": "measured speed",
                "assumed": "assumed speed: not measured"}


def _hours_lines(table: pd.DataFrame) -> list[str]:
    paid = table[table["to_pay"] > 0]
    if paid.empty:
        return ["- **Hours:** nothing to pay, nothing to wait for."]
    per_model = paid.groupby("model").agg(hours=("hours", "sum"), bound=("hours_bound", "first"),
                                          batch=("pricing", lambda s: (s == BATCH).any()))
    per_model = per_model.sort_values("hours", ascending=False)
    names = _BOUND_NAMES
    info = table.attrs.get("hours") or {}

    def at_high(model: str) -> str:
        h = info.get(model)
        if not h or not h["thinks"]:
            return ""
        bound = (f" ({names.get(h['high_bound'], h['high_bound'])})"
                 if h["high_bound"] != h["bound"] else "")
        return f", {h['high']:.1f} at high thinking{bound}"

    slowest_high = max([info[m]["high"] for m in per_model.index if m in info],
                       default=per_model["hours"].max())
    batched = [m for m, r in per_model.iterrows() if r.batch]
    return [
        "- **Hours** per model without batch mode, at its configured rate limits, each counted "
        "as its provider counts it and shared by every job of the run (all its rules' requests "
        "and tokens over each limit: `requests_per_minute`; `tokens_per_minute`, prompt + "
        "completion tokens, as OpenAI counts its TPM; `input_tokens_per_minute`, prompt tokens, "
        "of which Anthropic counts the uncached ones only; `output_tokens_per_minute`, "
        "completion tokens, thinking included, Anthropic's OTPM), and at its concurrency "
        f"({SECONDS_PER_REQUEST:g} s a request plus {COMPLETION_TOKENS_PER_S:g} completion "
        "tokens a second, one job at a time), whichever is slowest; at the expected thinking, "
        "and for a model that thinks at the high level too (every request thinking to its "
        "cap): "
        + ", ".join(f"`{m}` {r.hours:.1f} ({names.get(r.bound, r.bound)}){at_high(m)}"
                    for m, r in per_model.iterrows())
        + f"; the slowest model takes {per_model['hours'].max():.1f} h ({slowest_high:.1f} h at "
        "high thinking; models run side by side)."
        + (f" In batch mode ({', '.join(f'`{m}`' for m in batched)}) a model waits on its "
           f"provider's batch window instead: up to {BATCH_WINDOW_H} h a batch."
           if batched else ""),
        *_batch_hours_lines(table, batched),
        *_local_speed_lines(table, per_model),
    ]


def _batch_hours_lines(table: pd.DataFrame, batched: list[str]) -> list[str]:
    """The run as its config sends it: the batch waits in series on the critical path of its
    DAG, at their providers' typical and worst windows, beside the ordinary calls."""
    if not batched:
        return []
    path = table.attrs.get("batch_path")
    info = table.attrs.get("hours") or {}
    if path is None or not path.waits:
        return []
    n = len(path.waits)
    windows = {m.split("/", 1)[0] for w in path.waits for m in w.models}
    known = {p: BATCH_WINDOWS[p] for p in sorted(windows) if p in BATCH_WINDOWS}
    undocumented = [w.name for w in known.values() if w.typical_h is None]
    if path.typical_h is not None:
        typical = (f"typically {path.typical_h:.0f} h ("
                   + "; ".join(f"{w.name}: {w.typical_h:g} h, {w.source}"
                               for w in known.values()) + ")")
    else:
        documented = [w for w in known.values() if w.typical_h is not None]
        one = len(undocumented) == 1
        typical = (f"no typical time: {', '.join(undocumented)} document{'s' if one else ''} "
                   f"only {'its' if one else 'their'} {BATCH_WINDOW_H}-hour window, so only the "
                   "worst is given"
                   + "".join(f" ({w.name}'s waits typically take under {w.typical_h:g} h: "
                             f"{w.source})" for w in documented))
    ordinary = [h for h in info.values() if h["run_expected"] > 0]
    run_expected = max([h["run_expected"] for h in ordinary], default=0.0)
    run_high = max([h["run_high"] for h in ordinary], default=0.0)
    return [
        f"- **Hours as this config runs** (batch mode for {', '.join(f'`{m}`' for m in batched)}):"
        f" {n} batch wait{'s' if n != 1 else ''} in series on the critical path of the run's "
        f"DAG ({path.describe()}); at worst {n} × {BATCH_WINDOW_H} h = {path.worst_h:.0f} h "
        f"({', '.join(w.name for w in known.values())}: results within {BATCH_WINDOW_H} "
        f"hours), {typical}. The requests sent as ordinary calls take {run_expected:.1f} h "
        f"({run_high:.1f} h at high thinking) for the slowest model beside them. Worst case: "
        f"{worst_case_hours(table):.0f} h (the batch waits at worst plus every model's "
        "ordinary calls at high thinking, added up as if none overlapped; "
        "`worst_case_hours` in results/plan/plan.json).",
    ]


def _local_speed_lines(table: pd.DataFrame, per_model: pd.DataFrame) -> list[str]:
    """Where each local model's hours come from: its measured speed, or none."""
    speeds = table.attrs.get("speeds", {})
    lines = []
    for model, r in per_model.iterrows():
        if not provider_for(str(model)).embedded:
            continue
        if model in speeds:
            lines.append(f"- **`{model}` measured on this machine:** {speeds[model]} "
                         "(rubriclab.plan.speed); its hours are its requests, prompt and "
                         "completion tokens to pay at that speed, one request at a time.")
        else:
            lines.append(f"- **`{model}` not measured:** no ledger of an earlier run here and "
                         "no calibration (`rubriclab plan` calibrates unless given "
                         "--no-calibration), so its hours assume "
                         f"{SECONDS_PER_REQUEST:g} s a request plus {COMPLETION_TOKENS_PER_S:g} "
                         "completion tokens a second; a 2-core machine can take several "
                         "times that.")
    return lines


def _pricing_note(table: pd.DataFrame) -> str:
    """Which models the config has batched, and which prompt-cached, among those to pay."""
    to_pay = table[table["to_pay"] > 0]
    parts = []
    for pricing, what in ((BATCH, "batch mode for"), (PROMPT_CACHING, "prompt caching for")):
        models = sorted(set(to_pay.loc[to_pay["pricing"] == pricing, "model"]))
        if models:
            parts.append(f"{what} {', '.join(f'`{m}`' for m in models)}")
    return "; ".join(parts) or "standard prices: no batch mode, no prefix to cache"
