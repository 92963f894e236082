"""What a pilot measured, read for the plan of a larger run (`rubriclab plan --measured-from`).

A pilot is a small paid run of every model of the paper config (`config/pilot.yaml`, `make
pilot`). Its working directory keeps the ledger of every stage (`results/ledger/*.jsonl`) and
the attempts journals beside them (`results/ledger/attempts/*.jsonl`: every call that reached a
model, across runs); its cache keeps each answer's text and the request as it was sent. This
module reads them into measures per model and per ledger label (a rule and its wildcards, the
ledger's `rule` column, as `carry_judge[summedits/judge]`) or label stem (the part before "[",
`carry_judge`); `rubriclab.plan.planner.with_measures` and `rubriclab.plan.report` put them in
place of the plan's assumptions. Only calls that reached a model count (no cache hit, no copy
from a base run, no failure), each (key, run) once.

- **Answers' lengths** (`AnswerLength`): completion tokens per request, and of them the visible
  answer's (its text in the pilot's cache, counted with litellm's counter for the model); per
  label and model, else per label stem and model.
- **Free text** (`FreeTextShare`): per model, the visible tokens of its free-text answers
  (responses, edits) over their answer budgets (`max_tokens`): the share of its budget a
  free-text answer fills, in place of `--free-text-share` for the stand-in answers that later
  prompts quote (a response a judge reads).
- **Thinking** (`ThinkingShare`): the ledger records completion tokens, thinking included, and
  no reasoning tokens; a call's thinking is its completion tokens less its visible answer's,
  and its share is that over the request's thinking cap (`rubriclab.llm.pricing.thinking_cap`
  of the request the cache stored). Per model: the thinking of its calls over their caps.
  Calls whose answer is not in the cache (unparseable answers, a cache not found) have no
  visible text: they count towards completion tokens only.
- **Batch prompt-cache hits** (`CacheHits`): per model, over its batch calls that read or wrote
  the provider's prompt cache, the prompt tokens read from it over those read and written. The
  first request of each prefix must write it, which this counts as a miss (the plan counts
  first writes apart), so a pilot's few requests a prefix understate the rate: the bill errs
  high, not low.
- **Latency** (`rubriclab.plan.speed.Speed`): per model, seconds per request, prompt token and
  completion token fitted to its calls outside batches (a batch call's latency is not the
  call's; its answer waited in the provider's batch window).

A figure rests on at least `MIN_CALLS` calls (latency: `speed.MIN_CALLS`); with fewer it is not
measured, and the plan keeps its assumption there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .speed import LEDGER_FOLDER, Speed, answered_calls, fit_speed, ledger_paths
from .speed import MIN_CALLS as MIN_LATENCY_CALLS

log = logging.getLogger("rubriclab.plan")

# The fewest calls a length, thinking share or hit rate is measured on.
MIN_CALLS = 3
EFFECTIVE_CONFIG = Path("results") / "effective_config.yaml"


class PilotError(ValueError):
    """A pilot with nothing to measure: no ledgers, or no call that reached a model."""


@dataclass(frozen=True)
class AnswerLength:
    calls: int                    # calls measured
    completion_tokens: float      # per call, thinking included
    answer_tokens: float | None   # visible answer per call, over those whose text is known
    answers_known: int            # calls whose answer text (and request) the cache held

    def answer_tokens_for(self, may_think: bool) -> float | None:
        """The visible answer's tokens per request; where no answer text is known, the
        completion tokens where the request cannot think (they are all answer); else None."""
        if self.answer_tokens is not None:
            return self.answer_tokens
        return None if may_think else self.completion_tokens


@dataclass(frozen=True)
class ThinkingShare:
    calls: int             # calls with a thinking cap and a known visible answer
    thinking_tokens: int
    cap_tokens: int

    @property
    def share(self) -> float:
        return self.thinking_tokens / self.cap_tokens


@dataclass(frozen=True)
class FreeTextShare:
    calls: int             # free-text answers whose text the cache held
    answer_tokens: int
    budget_tokens: int     # their requests' max_tokens

    @property
    def share(self) -> float:
        return self.answer_tokens / self.budget_tokens


@dataclass(frozen=True)
class CacheHits:
    calls: int             # batch calls that read or wrote the provider's prompt cache
    read_tokens: int
    write_tokens: int

    @property
    def rate(self) -> float:
        return self.read_tokens / (self.read_tokens + self.write_tokens)


@dataclass
class PilotMeasures:
    workdir: Path
    digest: str | None            # of the pilot's effective config (None: none recorded)
    ledger_files: int
    calls: int                    # calls that reached a model
    calls_by_model: dict[str, int]
    answers_from: str             # where answer texts were read, or why none were
    by_label: dict[tuple[str, str], AnswerLength] = field(default_factory=dict)
    by_stem: dict[tuple[str, str], AnswerLength] = field(default_factory=dict)
    thinking: dict[str, ThinkingShare] = field(default_factory=dict)
    free_text: dict[str, FreeTextShare] = field(default_factory=dict)
    batch_cache: dict[str, CacheHits] = field(default_factory=dict)
    latency: dict[str, Speed] = field(default_factory=dict)

    def answer_length(self, label: str, model: str) -> tuple[AnswerLength, str] | None:
        """The measure for a plan row's ledger label and model: of the same label ("pilot"),
        else of its stem ("pilot (<stem>)"), else None."""
        if (label, model) in self.by_label:
            return self.by_label[(label, model)], "pilot"
        stem = label_stem(label)
        if (stem, model) in self.by_stem:
            return self.by_stem[(stem, model)], f"pilot ({stem})"
        return None

    def thinking_share(self, model: str) -> float | None:
        measured = self.thinking.get(model)
        return None if measured is None else measured.share

    def free_text_shares(self) -> dict[str, float]:
        """Per model measured, the share of its budget a free-text answer fills."""
        return {model: measured.share for model, measured in self.free_text.items()}

    def batch_cache_hit_rate(self, model: str) -> float | None:
        measured = self.batch_cache.get(model)
        return None if measured is None else measured.rate


def label_stem(label: str) -> str:
    """A ledger label's rule part: `carry_judge[summedits/x]` -> `carry_judge`."""
    return label.split("[", 1)[0]


def read_pilot(workdir: str | Path, *, cache: Any = None,
               count_tokens: Callable[[str, str], int] | None = None) -> PilotMeasures:
    """The measures of the pilot run in `workdir`. `cache`: where to read the answers' texts
    (anything with `get(key)`); default: the cache the pilot's effective config names,
    opened read-only. `count_tokens(model, text)`: default litellm's counter."""
    workdir = Path(workdir)
    calls, files = _calls(workdir)
    digest, config = _effective_config(workdir)
    opened = None
    if cache is None:
        opened, answers_from = _open_cache(workdir, config)
        cache = opened
    else:
        answers_from = str(getattr(cache, "location", "the given cache"))
    try:
        calls = _with_answers(calls, cache, count_tokens)
    finally:
        if opened is not None:
            opened.close()
    if cache is not None and not calls["answer_known"].any():
        answers_from += " (none of the pilot's answers is in it)"
    measures = PilotMeasures(
        workdir=workdir, digest=digest, ledger_files=files, calls=len(calls),
        calls_by_model=calls.groupby("model").size().astype(int).to_dict(),
        answers_from=answers_from)
    calls["stem"] = calls["rule"].astype(str).map(label_stem)
    for column, target in (("rule", measures.by_label), ("stem", measures.by_stem)):
        for (label, model), part in calls.groupby([column, "model"], sort=True):
            if len(part) >= MIN_CALLS:
                target[(label, model)] = _answer_length(part)
    for model, part in calls.groupby("model", sort=True):
        thinking = part[part["answer_known"] & (part["cap"] > 0)]
        if len(thinking) >= MIN_CALLS:
            measures.thinking[model] = ThinkingShare(
                len(thinking), int(thinking["thinking_tokens"].sum()),
                int(thinking["cap"].sum()))
        free = part[part["answer_known"] & part["free_text"] & (part["max_tokens"] > 0)]
        if len(free) >= MIN_CALLS:
            measures.free_text[model] = FreeTextShare(
                len(free), int(free["answer_tokens"].sum()), int(free["max_tokens"].sum()))
        batch = part[part["batch"].astype(bool)
                     & (part["cache_read_tokens"] + part["cache_write_tokens"] > 0)]
        if len(batch) >= MIN_CALLS:
            measures.batch_cache[model] = CacheHits(
                len(batch), int(batch["cache_read_tokens"].sum()),
                int(batch["cache_write_tokens"].sum()))
        speed = fit_speed(part[~part["batch"].astype(bool)],
                          f"measured by the pilot in {workdir}", min_calls=MIN_LATENCY_CALLS)
        if speed is not None:
            measures.latency[model] = speed
    return measures


def _calls(workdir: Path) -> tuple[pd.DataFrame, int]:
    """The pilot's calls that reached a model (each key of each run once), and how many
    ledger files held them."""
    from rubriclab.llm.ledger import read_ledgers

    folder = workdir / LEDGER_FOLDER
    if not folder.is_dir():
        raise PilotError(f"no pilot ledgers: {folder} does not exist (give the pilot's working "
                         "directory, e.g. runs/pilot after `make pilot`)")
    paths = ledger_paths(workdir)
    ledger = read_ledgers(paths)
    if ledger.empty:
        raise PilotError(f"no pilot ledgers: {folder} holds no ledger rows "
                         f"({len(paths)} .jsonl files)")
    made = answered_calls(ledger).reset_index(drop=True)
    if made.empty:
        raise PilotError(f"nothing to measure in {folder}: of its {len(ledger)} ledger rows, "
                         "no call reached a model (all cached, copied or failed)")
    for column in ("prompt_tokens", "completion_tokens", "cache_read_tokens",
                   "cache_write_tokens"):
        made[column] = made[column].fillna(0).astype(int)
    made["latency_s"] = made["latency_s"].fillna(0.0).astype(float)
    return made, len(paths)


def _effective_config(workdir: Path) -> tuple[str | None, dict | None]:
    """The pilot's effective config and its digest (as `rubriclab.config.config_digest`
    gives a plan's), or (None, None) where the run recorded none."""
    import yaml

    from rubriclab.config import config_digest

    path = workdir / EFFECTIVE_CONFIG
    if not path.is_file():
        return None, None
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PilotError(f"the pilot's effective config {path} cannot be read: "
                         f"{' '.join(str(exc).split())}") from None
    if not isinstance(config, dict):
        raise PilotError(f"the pilot's effective config {path} is not a mapping of settings "
                         f"(a {type(config).__name__})")
    return config_digest(config), config


def _open_cache(workdir: Path, config: dict | None) -> tuple[Any, str]:
    """The pilot's cache, read-only, as its effective config names it (a relative folder is the
    pilot's working directory's), and where it is; (None, why not) where it cannot be opened."""
    from rubriclab.llm.storage import open_cache
    from rubriclab.llm.settings import LLMConfig

    config = config or {}
    try:
        llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
        if not llm.cache_url and not llm.cache_dir.is_absolute():
            llm = replace(llm, cache_dir=workdir / llm.cache_dir)
        return open_cache(llm, read_only=True), llm.cache_location
    except Exception as exc:  # no cache there, or a server not reachable: lengths only
        log.warning("the pilot's cache could not be read (%s): answers' lengths from "
                    "completion tokens only, thinking not measured", exc)
        return None, f"no cache read ({type(exc).__name__}: {exc})"


def _with_answers(calls: pd.DataFrame, cache: Any,
                  count_tokens: Callable[[str, str], int] | None) -> pd.DataFrame:
    """Each call's thinking cap, visible answer tokens and thinking tokens, where the cache
    holds its answer (else answer_known False)."""
    from rubriclab.llm.formats import get_format
    from rubriclab.llm.pricing import thinking_cap
    from rubriclab.llm.request import request_from_dict

    if count_tokens is None:
        from rubriclab.llm.tokens import text_tokens
        count_tokens = text_tokens
    caps, answers, known, budgets, free = [], [], [], [], []
    for row in calls.itertuples(index=False):
        entry = cache.get(row.key) if cache is not None else None
        if entry is None:
            caps.append(0)
            answers.append(0)
            known.append(False)
            budgets.append(0)
            free.append(False)
            continue
        request = request_from_dict(json.loads(entry.request_json))
        cap = thinking_cap(request)
        completion = int(row.completion_tokens)
        caps.append(cap)
        budgets.append(request.max_tokens)
        try:
            free.append(get_format(request.response_format).free_text)
        except (KeyError, ValueError):  # a format this version does not know
            free.append(False)
        # A request that cannot think answers with every completion token.
        answers.append(completion if cap == 0
                       else min(completion, count_tokens(row.model, entry.text)))
        known.append(True)
    calls = calls.copy()
    calls["cap"] = caps
    calls["answer_tokens"] = answers
    calls["answer_known"] = known
    calls["max_tokens"] = budgets
    calls["free_text"] = free
    calls["thinking_tokens"] = (calls["completion_tokens"] - calls["answer_tokens"]).where(
        calls["answer_known"], 0)
    return calls


def _answer_length(part: pd.DataFrame) -> AnswerLength:
    known = part[part["answer_known"]]
    return AnswerLength(
        calls=len(part), completion_tokens=float(part["completion_tokens"].mean()),
        answer_tokens=float(known["answer_tokens"].mean()) if len(known) else None,
        answers_known=len(known))
