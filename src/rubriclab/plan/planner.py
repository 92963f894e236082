"""Every request a config's run would make, counted before any model is called.

The planner runs each model job's own script (workflow/scripts) in-process, in DAG order, with
the model layer's stand-in hook (`rubriclab.llm.client.answered_by`): every `LLMClient.run`
hands its prepared requests to the planner instead of a model. So the requests are rendered
by the very functions the rules use, keyed as the run would key them, and checked against the
cache.

A request is answered with the cached answer where the cache has one, and otherwise with a
stand-in answer (see `StandIn`) that lets later jobs render theirs. A job's rows are *exact*
when all of its inputs are real files (prepared data, or outputs of jobs already run) and it
asks its model once, and *estimated* when they rest on stand-in answers (revisions, responses,
interventions, the judging of those, the agent's later turns).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import random
import runpy
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rubriclab.llm import standins
from rubriclab.llm.client import answered_by
from rubriclab.llm.formats import UnparseableAnswer, get_format
from rubriclab.llm.pricing import thinking_cap
from rubriclab.llm.request import Completion, Outcome, Request, Usage
from rubriclab.llm.tokens import prompt_tokens

from .dag import PlannedJob, Workflow

# Prompt tokens are counted for every request of a batch of up to COUNT_EVERY_UP_TO requests,
# and for SAMPLES_PER_LARGE_BATCH drawn at random from a larger one, the rest scaled by the
# tokens per character of those counted (litellm's token counter takes 0.1-1 ms a request, and
# a paper-scale plan has 430,000 in some 3,400 batches, all but 43 of them counted whole).
# A sample misjudges a small batch of mixed texts (HealthBench's 105 conversations, half of
# them counted, came out 5% short), and every k-th request of a large one can fall in step
# with its order (transfer's judging, response by criterion: 7% short at k = 1,078).
COUNT_EVERY_UP_TO = 1000
SAMPLES_PER_LARGE_BATCH = 200
# How much of its thinking cap (rubriclab.llm.pricing.thinking_cap: the effort's thinking
# budget where the provider takes one, else the model's reasoning_tokens room) a request is
# taken to spend: providers bill thinking as completion tokens, and how much a model thinks is
# known only once it has. Low: a short thought; expected: a quarter of the cap (short answers
# such as verdicts rarely need the whole budget); high: every request thinks to its cap, the
# most the run can be billed.
THINKING_SHARES = {"low": 0.10, "expected": 0.25, "high": 1.0}


@dataclass
class StandIn:
    """What answers a request the cache cannot: the stand-in answers the rehearsal's server
    gives too (rubriclab.llm.standins), a valid answer to every request format of the pipeline
    of the papers' shape (rubrics as long as asked, one verdict per criterion).

    Free-text answers (responses, edited responses) are where a real model differs most from
    it: with `free_text_share` set, they are taken to fill that share of their token budget
    (the planned prompts that quote them grow to match); unset, they are the rehearsal's own
    short texts, which is right for planning a rehearsal.
    """

    free_text_share: float | None = None
    # Per model, the share a pilot measured (rubriclab.plan.measured), in place of
    # free_text_share (where that is set).
    free_text_shares: Mapping[str, float] | None = None
    # The server answers each asking of the same messages afresh (a model sampled again), so
    # seeds and trials that send equal messages as distinct requests get distinct answers
    # there; the stand-in counts askings the same way. One request asked again (a cache hit
    # in the run) gets its first answer.
    _answers: dict[Request, str] = field(default_factory=dict, repr=False)
    _askings: collections.Counter = field(default_factory=collections.Counter, repr=False)

    def answer(self, request: Request) -> str:
        known = self._answers.get(request)
        if known is not None:
            return known
        served, messages = standins.served_name(request.model), request.message_dicts()
        prompt = hashlib.sha256(json.dumps([served, messages], ensure_ascii=False)
                                .encode("utf-8")).digest()
        nth = self._askings[prompt]
        self._askings[prompt] += 1
        _, text = standins.answer(messages, served, nth)
        if self.free_text_share is not None and get_format(request.response_format).free_text:
            share = (self.free_text_shares or {}).get(request.model, self.free_text_share)
            words = max(1, int(request.max_tokens * share * 0.75))
            text = f"{text} {_filler(words)}"
        self._answers[request] = text
        return text


@functools.lru_cache(maxsize=64)
def _filler(words: int) -> str:
    """`words` words of plain prose (about 0.75 words a token)."""
    filler = ("The answer goes on to explain the point in plain words, as a careful reply "
              "would. ").split()
    return " ".join(filler[i % len(filler)] for i in range(words))


@dataclass
class RowTotals:
    requests: int = 0
    cached: int = 0              # answered by the cache before the run
    answered_earlier: int = 0    # the same request made by an earlier job of this run
    prompt_chars: int = 0
    prompt_chars_to_pay: int = 0
    thinking_cap_to_pay: int = 0
    answers_sampled: int = 0
    answer_tokens_sampled: int = 0
    requests_list: list[Request] = field(default_factory=list)
    # The DAG jobs that made these requests, and the askings (job, n-th LLMClient.run of the
    # job) in which some of them to pay were sent to a batch (llm.per_model.<model>.batch).
    jobs: set[int] = field(default_factory=set)
    batch_askings: set[tuple[int, int]] = field(default_factory=set)

    @property
    def completion_tokens_to_pay(self) -> int:
        """Thinking (the expected share of its cap), and answers as long as the stand-in
        answers sampled (4 characters a token)."""
        to_pay = len(self.requests_list)
        mean = self.answer_tokens_sampled / self.answers_sampled if self.answers_sampled else 0
        return round(to_pay * mean + THINKING_SHARES["expected"] * self.thinking_cap_to_pay)


@dataclass
class Planner:
    """The stand-in hook's other side: records each request and answers it."""

    stand_in: StandIn
    rows: dict[tuple[str, str, str], RowTotals] = field(default_factory=dict)
    # Requests already made by an earlier job of the run: answered from the cache by then.
    # (The request itself, not its key: keying 350,000 requests would take most of a plan.)
    seen: set[Request] = field(default_factory=set)
    # (rule, ledger label, model) -> [characters, tokens] of the prompts counted.
    counted: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    use_cache: bool = True
    # False while planning a job whose answers no later job reads: answers are left out.
    answers_needed: bool = True
    # Per job being planned: how many times it asked, and the labels it recorded under.
    runs_in_job: int = 0
    labels_in_job: set[tuple[str, str, str]] = field(default_factory=set)
    current_rule: str = ""
    current_job: int = -1

    def answer(self, client: Any, requests: Sequence[Request], label: str) -> list[Completion]:
        self.runs_in_job += 1
        rule = client.ledger.rule if client.ledger is not None else label
        completions = []
        counted_positions = _positions_to_count(len(requests))
        for position, request in enumerate(requests):
            row_key = (self.current_rule, rule, request.model)
            totals = self.rows.setdefault(row_key, RowTotals())
            self.labels_in_job.add(row_key)
            totals.jobs.add(self.current_job)
            chars = sum(len(m.content) for m in request.messages)
            totals.requests += 1
            totals.prompt_chars += chars
            sampled = counted_positions is None or position in counted_positions
            if sampled:
                counted = self.counted.setdefault(row_key, [0, 0])
                counted[0] += chars
                counted[1] += prompt_tokens(request.model, request.message_dicts())
            key = client.key_for(request) if self.use_cache else ""
            # Answers stored under an older key of the same request count as cached too.
            hit = client.lookup(request, key, migrate=False) if self.use_cache else None
            # A stand-in answer is made where a later job reads it, and for a sample of the
            # rest (their expected length).
            text = None
            if hit is not None:
                totals.cached += 1
                text = hit.text
            elif request in self.seen:
                totals.answered_earlier += 1
            else:
                totals.prompt_chars_to_pay += chars
                totals.thinking_cap_to_pay += thinking_cap(request)
                totals.requests_list.append(request)
                config = getattr(client, "config", None)  # (a test's client may have none)
                if config is not None and config.batch_for(request.model, request.role):
                    totals.batch_askings.add((self.current_job, self.runs_in_job))
                if self.answers_needed or sampled:
                    text = self.stand_in.answer(request)
                    totals.answers_sampled += 1
                    totals.answer_tokens_sampled += max(1, len(text) // 4)
            self.seen.add(request)
            if not self.answers_needed and hit is None:
                completions.append(Completion(request=request, key=key, outcome="unparseable",
                                              error="not answered: no later job reads it"))
                continue
            if text is None:
                text = self.stand_in.answer(request)
            completions.append(_completion(request, key, text, hit is not None))
        return completions

    def tokens(self, row_key: tuple[str, str, str], chars: float) -> int:
        counted_chars, counted_tokens = self.counted.get(row_key, (0, 0))
        return round(chars * counted_tokens / counted_chars) if counted_chars else 0


def _positions_to_count(size: int) -> set[int] | None:
    """The positions of a batch whose prompt tokens are counted; None: every one. The draw is
    seeded by the batch's size, so a plan of the same config counts the same requests."""
    if size <= COUNT_EVERY_UP_TO:
        return None
    return set(random.Random(size).sample(range(size), SAMPLES_PER_LARGE_BATCH))


def _completion(request: Request, key: str, text: str, cached: bool) -> Completion:
    outcome: Outcome
    try:
        parsed, outcome, error = get_format(request.response_format).parse(text), "ok", ""
    except UnparseableAnswer as exc:
        parsed, outcome, error = None, "unparseable", str(exc)
    return Completion(request=request, key=key, outcome=outcome, text=text, parsed=parsed,
                      usage=Usage(), cost_usd=None, cached=cached, error=error)


@dataclass
class PlannedRow:
    """One rule job's requests of one model."""

    rule: str            # the Snakemake rule
    label: str           # the ledger's rule column (the rule and its wildcards)
    model: str
    basis: str           # "exact" or "estimated"
    requests: int
    cached: int
    answered_earlier: int
    to_pay: int
    prompt_tokens: int           # of every request (as the ledger counts them)
    prompt_tokens_to_pay: int
    completion_tokens_to_pay: int   # thinking at its expected share (THINKING_SHARES)
    to_pay_requests: list[Request] = field(default_factory=list, repr=False)
    thinking_tokens_cap: int = 0    # the most the requests to pay can think, together
    # Where the row sits in the run's DAG, for the batch waits on its critical path
    # (rubriclab.plan.hours): the jobs (PlannedJob.index) whose requests it counts, per job the
    # model jobs it waits for (directly or not; each job its own, not the row's union), and
    # the askings (job, n-th LLMClient.run of the job) that sent some of its requests to pay
    # to a batch.
    jobs: tuple[int, ...] = ()
    after: dict[int, tuple[int, ...]] = field(default_factory=dict)
    batch_askings: tuple[tuple[int, int], ...] = ()
    # The share of its cap the expected thinking takes (in completion_tokens_to_pay):
    # THINKING_SHARES' expected one, or the model's as a pilot measured it (`with_measures`).
    thinking_share: float = THINKING_SHARES["expected"]
    # Where the answers' lengths come from: "stand-in" (the stand-in answers, free text at
    # its share of the budget), "pilot" (a pilot's answers of the same ledger label and
    # model), "pilot (<stem>)" (of the same label stem and model).
    answers: str = "stand-in"

    def completion_tokens_at(self, share: float) -> int:
        """Completion tokens to pay with thinking at `share` of its cap."""
        return max(0, self.completion_tokens_to_pay
                   + round((share - self.thinking_share) * self.thinking_tokens_cap))

    def thinking_shares(self) -> dict[str, float]:
        """Low, expected and high share of the cap: THINKING_SHARES, with the expected one
        measured where a pilot measured it (the low and high then widened to hold it)."""
        return {"low": min(THINKING_SHARES["low"], self.thinking_share),
                "expected": self.thinking_share,
                "high": max(THINKING_SHARES["high"], self.thinking_share)}


def with_measures(rows: Sequence[PlannedRow], measures: Any) -> list[PlannedRow]:
    """The rows with what a pilot measured (`rubriclab.plan.measured.PilotMeasures`) in place
    of the assumptions: each model's thinking share where measured, and each row's answers at
    the pilot's visible answer tokens per request of the same ledger label and model (else of
    the same label stem), where measured; the rest as planned."""
    measured = []
    for row in rows:
        share = measures.thinking_share(row.model)
        share = row.thinking_share if share is None else share
        answers = row.completion_tokens_to_pay - round(row.thinking_share
                                                       * row.thinking_tokens_cap)
        source = row.answers
        found = measures.answer_length(row.label, row.model)
        if found is not None:
            per_request = found[0].answer_tokens_for(may_think=row.thinking_tokens_cap > 0)
            if per_request is not None:
                answers, source = round(row.to_pay * per_request), found[1]
        measured.append(replace(
            row, thinking_share=share, answers=source,
            completion_tokens_to_pay=max(0, answers) + round(share * row.thinking_tokens_cap)))
    return measured


def plan_workflow(workflow: Workflow, stand_in: StandIn, cache: Any = None) -> list[PlannedRow]:
    """Run every model job (and any job between model jobs) on stand-ins; the rows.

    `cache` (the run's call cache) is looked up only when it holds answers."""
    planner = Planner(stand_in, use_cache=cache is not None and len(cache) > 0)
    needed = _jobs_to_plan(workflow)
    read_later = {n for job in needed for n in job.needs}
    shadow = Path(tempfile.mkdtemp(prefix="plan-", dir=workflow.workdir))
    shadowed: set[str] = set()  # outputs that exist only as the plan's stand-ins
    basis: dict[tuple[str, str, str], str] = {}
    previous = Path.cwd()
    os.chdir(workflow.workdir)
    try:
        with answered_by(planner):
            for job in needed:
                planner.runs_in_job = 0
                planner.labels_in_job = set()
                planner.current_rule = job.rule
                planner.current_job = job.index
                stand_in_inputs = any(str(f) in shadowed for f in job.input)
                planner.answers_needed = job.index in read_later
                _execute(job, workflow.config, shadow, shadowed)
                if job.needs_run:
                    shadowed.update(str(f) for f in job.output)
                exact = not stand_in_inputs and planner.runs_in_job <= 1
                for row_key in planner.labels_in_job:
                    basis[row_key] = "exact" if exact else "estimated"
    finally:
        os.chdir(previous)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
        shutil.rmtree(shadow, ignore_errors=True)
    upstream = _model_jobs_upstream(workflow)
    rows = []
    for (rule, label, model), totals in planner.rows.items():
        if totals.requests == totals.cached:
            row_basis = "exact"  # every answer is in the cache already
        else:
            row_basis = basis[(rule, label, model)]
        rows.append(PlannedRow(
            rule=rule, label=label, model=model, basis=row_basis, requests=totals.requests,
            cached=totals.cached, answered_earlier=totals.answered_earlier,
            to_pay=totals.requests - totals.cached - totals.answered_earlier,
            prompt_tokens=planner.tokens((rule, label, model), totals.prompt_chars),
            prompt_tokens_to_pay=planner.tokens((rule, label, model),
                                                totals.prompt_chars_to_pay),
            completion_tokens_to_pay=totals.completion_tokens_to_pay,
            to_pay_requests=totals.requests_list,
            thinking_tokens_cap=totals.thinking_cap_to_pay,
            jobs=tuple(sorted(totals.jobs)),
            after={j: tuple(sorted(upstream[j])) for j in sorted(totals.jobs)},
            batch_askings=tuple(sorted(totals.batch_askings))))
    return rows


def _model_jobs_upstream(workflow: Workflow) -> dict[int, frozenset[int]]:
    """Per job of the DAG, the jobs calling a model that it needs, directly or not."""
    upstream: dict[int, frozenset[int]] = {}
    calls_model = {job.index: job.calls_model for job in workflow.jobs}
    for job in workflow.jobs:  # every job after the jobs it needs
        found: set[int] = set()
        for n in job.needs:
            found |= upstream[n]
            if calls_model[n]:
                found.add(n)
        upstream[job.index] = frozenset(found)
    return upstream


def _jobs_to_plan(workflow: Workflow) -> list[PlannedJob]:
    """Model jobs, and jobs between them (needing a model job's output, needed by one)."""
    prefix = {job.index for job in workflow.model_free_prefix()}
    after_model: set[int] = set()
    for job in workflow.jobs:
        if job.calls_model or any(n in after_model for n in job.needs):
            after_model.add(job.index)
    feeding: set[int] = set()
    for job in reversed(workflow.jobs):
        if job.calls_model or job.index in feeding:
            feeding.update(job.needs)
    chosen = []
    for job in workflow.jobs:
        if job.index in prefix:
            continue
        if job.calls_model or (job.index in after_model and job.index in feeding):
            if job.script is None:
                raise ValueError(f"plan: rule {job.rule} has no script to plan it by")
            chosen.append(job)
    return chosen


def _execute(job: PlannedJob, config: dict, shadow: Path, shadowed: set[str]) -> None:
    """Run the job's script as Snakemake would, its outputs and logs in `shadow`, its inputs
    from `shadow` where an earlier planned job made them."""
    from snakemake.iocontainers import Namedlist

    def files(names: Any, where: Any) -> Any:
        mapped = Namedlist()
        mapped.extend(where(str(f)) for f in names)
        mapped._take_names(names._get_names())
        return mapped

    def into_shadow(path: str) -> str:
        target = shadow / path
        target.parent.mkdir(parents=True, exist_ok=True)
        return str(target)

    context = _ScriptContext(
        input=files(job.input, lambda p: str(shadow / p) if p in shadowed else p),
        output=files(job.output, into_shadow), log=files(job.log, into_shadow),
        params=job.params, wildcards=job.wildcards, config=config, threads=1,
        resources=job.resources, rule=job.rule)
    # A script sets up logging for its job (rubriclab.runtime.configure_logging: handlers on
    # the silenced stderr and the shadow log, an excepthook into them): the plan's own are put
    # back after it, or the plan's errors would be written only where no one reads them.
    root = logging.getLogger()
    handlers, level, excepthook = root.handlers[:], root.level, sys.excepthook
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            runpy.run_path(str(job.script), init_globals={"snakemake": context},
                           run_name="__main__")
        except Exception as exc:
            raise RuntimeError(f"plan: rule {job.rule} ({dict(job.wildcards)}) failed on its "
                               f"stand-in inputs: {type(exc).__name__}: {exc}") from exc
        finally:
            for handler in root.handlers:
                if handler not in handlers:
                    handler.close()
            root.handlers[:] = handlers
            root.setLevel(level)
            sys.excepthook = excepthook


@dataclass
class _ScriptContext:
    """The attributes of Snakemake's `snakemake` object that the scripts use."""

    input: Any
    output: Any
    log: Any
    params: Any
    wildcards: Any
    config: dict
    threads: int
    resources: Any
    rule: str
