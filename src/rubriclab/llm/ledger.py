"""The call ledger (one JSON line per request a stage made) and the cost report built from it.

A stage's ledger is one of its Snakemake outputs, so it holds the requests behind the current
results (Snakemake deletes it before a rerun, and after a failure). Every call that reached a
model is also appended to the stage's attempts journal (`attempts_path`), which no run deletes:
what a killed or replaced run paid stays on the bill. A request a killed process had sent and
never recorded is written to that journal when its answer journal is taken over
(`rubriclab.llm.journal`): at its answer's cost where the answer arrived, else as
"paid-unknown" (it may have been billed; its cost is unknown).
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd

from rubriclab.labels import ModelLabels

from .providers import provider_for
from .redact import redact
from .request import Completion

LEDGER_COLUMNS = [
    "rule", "model", "key", "cached", "outcome", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "attempts", "reasks", "error", "run", "batch", "cache_read_tokens",
    "cache_write_tokens", "repeat_prompt_tokens",
]
# Columns added later, with the value a ledger written before them means (an older ledger
# did not tell a re-ask's prompt tokens from the first asking's).
_LATER_COLUMNS = {"batch": False, "cache_read_tokens": 0, "cache_write_tokens": 0,
                  "repeat_prompt_tokens": 0}


def attempts_path(ledger_path: str | Path) -> Path:
    """The journal beside a ledger: every call that reached a model, across runs."""
    ledger_path = Path(ledger_path)
    return ledger_path.parent / "attempts" / ledger_path.name


PAID_UNKNOWN = "paid-unknown"


def recovered_attempt_row(sent: dict, answer: dict | None) -> dict:
    """The attempts-journal row of a request a process sent and never recorded (it ended
    first): what its answer cost, or, with no answer, a call of unknown cost."""
    row: dict[str, Any] = {column: None for column in LEDGER_COLUMNS}
    row.update(rule=sent.get("rule"), model=sent["model"], key=sent["key"], cached=False,
               attempts=1, reasks=0, run=sent.get("run"), batch=bool(sent.get("batch")),
               latency_s=0.0,
               cache_read_tokens=0, cache_write_tokens=0, repeat_prompt_tokens=0)
    if answer is not None:
        row.update(outcome="ok", prompt_tokens=answer["prompt_tokens"],
                   completion_tokens=answer["completion_tokens"], cost_usd=answer["cost_usd"],
                   error="Recovered: answered, but its process ended before recording it")
    else:
        row.update(outcome=PAID_UNKNOWN, prompt_tokens=0, completion_tokens=0, cost_usd=None,
                   error="PaidUnknown: in flight when its process ended; it may have been billed")
    return row


def append_attempts(path: Path, rows: list[dict]) -> None:
    """Append rows to an attempts journal (one write, fsynced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(row) + "\n" for row in rows))
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class Ledger:
    """Appends one line per completed request; each line is flushed as it is written."""

    path: Path
    rule: str

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._fh: IO[str] | None = open(self.path, "w", encoding="utf-8")
        journal = attempts_path(self.path)
        journal.parent.mkdir(parents=True, exist_ok=True)
        self._journal: IO[str] | None = open(journal, "a", encoding="utf-8")

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
            # A provider's error message may echo the key it was sent.
            "error": redact(completion.error),
            "run": self.run,
            "batch": completion.batch,
            "cache_read_tokens": completion.usage.cache_read_tokens,
            "cache_write_tokens": completion.usage.cache_write_tokens,
            "repeat_prompt_tokens": completion.repeat_prompt_tokens,
        }
        line = json.dumps(row) + "\n"
        self._fh.write(line)
        self._fh.flush()
        attempt = bool(not completion.cached and completion.attempts)
        if attempt and self._journal is not None:
            self._journal.write(line)
            self._journal.flush()
        if self._database is not None:
            self._database.add(row, attempt)

    _database = None

    def send_rows_to(self, cache_url: str, reconnect_s: float | None = None) -> None:
        """Also write every row (and, marked, every row of the attempts journal) to the
        PostgreSQL cache database at `cache_url`, where the rows of every host of a run meet
        (`database_ledger_rows`). The files stay the record: a row the server refuses is
        logged and skipped; rows sent while the server is lost (a restart) are kept and sent
        once it is back, waiting for it at close up to `reconnect_s` (llm.cache_reconnect_s)."""
        from .ledger_pg import LedgerRows
        from .settings import CACHE_RECONNECT_S

        self._database = LedgerRows(cache_url, str(self.path.absolute()),
                                    CACHE_RECONNECT_S if reconnect_s is None else reconnect_s)

    def close(self) -> None:
        for fh in (self._fh, self._journal):
            if fh is not None:
                fh.close()
        self._fh = self._journal = None
        if self._database is not None:
            self._database.close()
            self._database = None


def database_ledger_rows(cache_url: str, ledger: str | Path | None = None) -> list[dict]:
    """The ledger rows written to the PostgreSQL cache database at `cache_url` (of one ledger
    file, by its absolute path, or all), oldest first: dicts with `host`, `ledger`, `attempt`
    (the row is also in that ledger's attempts journal: the call reached a model),
    `written_at` and `row`."""
    from .ledger_pg import read_ledger_rows

    return read_ledger_rows(cache_url, None if ledger is None else str(Path(ledger).absolute()))


def read_ledgers(paths: list[Path]) -> pd.DataFrame:
    rows = []
    for path in paths:
        path = Path(path)
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}, line {line_no}: not a ledger row ({exc})") from exc
    return ledger_frame(rows)


def ledger_frame(rows: list[dict]) -> pd.DataFrame:
    """Ledger rows as a table, a row written before a later column with its old meaning."""
    frame = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
    for column, value in _LATER_COLUMNS.items():  # as objects: no column is all-missing float
        frame[column] = frame[column].astype(object).where(frame[column].notna(), value)
    return frame.infer_objects()


def read_earlier_attempts(ledger_paths: list[Path]) -> pd.DataFrame:
    """The journaled calls of these ledgers' stages; `summarize` keeps those of earlier runs."""
    journals = [attempts_path(p) for p in ledger_paths if attempts_path(p).is_file()]
    return read_ledgers(journals)


def summarize(ledger: pd.DataFrame, attempts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per rule and model: requests, cache hits, calls made, failures, tokens, cost; and the
    calls that earlier runs of the stage paid for (journal rows of runs not in `ledger`).

    Tokens and cost count what this run spent (requests that reached a model); a call whose
    cost is unknown (no price, or a call that failed) is counted as such, never as $0.
    `cached_cost_usd` is what the cached answers cost when they were first paid for.
    """
    df = ledger.copy()
    df["uncached"] = ~df["cached"].astype(bool) & (df["attempts"].fillna(0) > 0)
    df["spent_prompt_tokens"] = df["prompt_tokens"].where(df["uncached"], 0)
    df["spent_completion_tokens"] = df["completion_tokens"].where(df["uncached"], 0)
    df["spent_cache_read_tokens"] = df["cache_read_tokens"].where(df["uncached"], 0)
    df["spent_cache_write_tokens"] = df["cache_write_tokens"].where(df["uncached"], 0)
    df["batch_call"] = df["uncached"] & df["batch"].astype(bool)
    df["spent_cost"] = df["cost_usd"].where(df["uncached"], 0.0)
    df["saved_cost"] = df["cost_usd"].where(df["cached"].astype(bool), 0.0)
    df["cost_unknown"] = df["uncached"] & df["cost_usd"].isna()
    df["cached_cost_unknown"] = df["cached"].astype(bool) & df["cost_usd"].isna()
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
        "cached_cost_unknown_calls": grouped["cached_cost_unknown"].sum().astype(int),
    })
    earlier = _earlier_attempts(df, attempts)
    summary = summary.join(earlier, how="outer")
    for column in ("earlier_calls", "earlier_cost_unknown_calls", "requests", "cache_hits",
                   "uncached_calls", "unparseable", "failed", "reasks", "prompt_tokens",
                   "completion_tokens", "cost_unknown_calls", "cached_cost_unknown_calls",
                   "batch_calls", "cache_read_tokens", "cache_write_tokens"):
        summary[column] = summary[column].fillna(0).astype(int)
    for column in ("earlier_cost_usd", "cost_usd", "cached_cost_usd"):
        summary[column] = summary[column].fillna(0.0)
    return summary.reset_index()


def _earlier_attempts(current: pd.DataFrame, attempts: pd.DataFrame | None) -> pd.DataFrame:
    columns = ["earlier_calls", "earlier_cost_usd", "earlier_cost_unknown_calls"]
    if attempts is None or attempts.empty:
        empty = pd.MultiIndex.from_arrays([[], []], names=["rule", "model"])
        return pd.DataFrame(columns=columns, index=empty)
    earlier = _earlier_calls(current, attempts).copy()
    earlier["unknown"] = earlier["cost_usd"].isna()
    grouped = earlier.groupby(["rule", "model"], sort=True)
    return pd.DataFrame({"earlier_calls": grouped.size(),
                         "earlier_cost_usd": grouped["cost_usd"].sum(min_count=0),
                         "earlier_cost_unknown_calls": grouped["unknown"].sum().astype(int)})


def _made(ledger: pd.DataFrame) -> pd.DataFrame:
    """This run's requests that reached a model."""
    return ledger[~ledger["cached"].astype(bool) & (ledger["attempts"].fillna(0) > 0)]


def _earlier_calls(ledger: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """The attempts-journal rows of runs not in `ledger`: each a call earlier runs paid for.
    Except a batch request a killed process left as paid-unknown (journaled before its batch
    was submitted) whose answer a later run collected from that batch: one call, counted where
    its answer was read, at its cost."""
    earlier = attempts[~attempts["run"].isin(set(ledger["run"].dropna()))]
    answered: set[str] = set()
    for rows in (_made(ledger), attempts):
        read = rows["batch"].astype(bool) & (rows["outcome"] != PAID_UNKNOWN)
        answered.update(rows.loc[read, "key"])
    collected = ((earlier["outcome"] == PAID_UNKNOWN) & earlier["batch"].astype(bool)
                 & earlier["key"].isin(answered))
    return earlier[~collected]


def calls_per_distinct_request(ledger: pd.DataFrame, attempts: pd.DataFrame | None = None,
                               skip_fake: bool = False) -> tuple[int, int]:
    """Calls made (this run's requests that reached a model, and earlier runs' calls) and the
    distinct requests (keys) among them: equal when no request was paid for twice.
    `skip_fake`: leave out `fake/` models, whose answers are not cached (llm.cache_fake_answers
    false), so each asking of a request is a call of its own, and costs nothing."""
    made = _made(ledger)
    earlier = None
    if attempts is not None and not attempts.empty:
        earlier = _earlier_calls(ledger, attempts)
    if skip_fake:
        made = made.loc[_durable(made["model"])]
        if earlier is not None:
            earlier = earlier.loc[_durable(earlier["model"])]
    keys = list(made["key"]) + (list(earlier["key"]) if earlier is not None else [])
    return len(keys), len(set(keys))


def _durable(models: pd.Series) -> pd.Series:
    """Which rows are of models whose answers are kept (not fake/ ones)."""
    return models.astype(str).map(lambda m: provider_for(m).durable).astype(bool)


def _fmt_cost(value: float | None, unknown: int = 0) -> str:
    known = 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else value
    if not unknown:
        return f"${known:,.4f}"
    if not known:
        return f"unknown ({unknown} calls)"
    return f"${known:,.4f} + unknown ({unknown} calls)"


MODEL_COLUMNS = "| model | model string |"


def model_cells(model: str, labels: ModelLabels | None = None) -> str:
    """A bill's two model cells: the display name a reader knows the model by (the config's
    `labels:` and `stand_ins:`), then the exact model string that is billed, as code."""
    label = (labels or ModelLabels())(model).replace("|", "\\|")
    return f"| {label} | `{model}` |"


def cost_report_markdown(summary: pd.DataFrame, calls: tuple[int, int] | None = None,
                         fake_skipped: bool = False, labels: ModelLabels | None = None) -> str:
    """The cost report's table per rule and model; `labels`: the run's display names
    (rubriclab.labels; the defaults where None)."""
    lines = [
        "# Cost report",
        "",
        "Every model request of the stages that produced the current results. `uncached` calls",
        "reached a model in the run that wrote those results; cache hits cost nothing.",
        "Tokens and cost count uncached calls only; `cost of cached` is what the cached answers",
        "cost when first paid for; `earlier runs` are calls that runs of the same stage paid for",
        "before (killed, failed or replaced runs), from the stage's attempts journal (with a",
        "PostgreSQL cache also from the attempts every host wrote to its database, each once),",
        "with the calls a killed process had in flight (`paid-unknown`: of unknown cost). Costs come",
        "from litellm's price map (local models cost $0); a call of unknown price (no price in",
        "the map, or a call that failed) is counted as unknown, never as $0.",
        "`model` is the name the figures give a model (and so are the models in a job's name);",
        "`model string`, the exact model billed.",
        "`batch` counts uncached calls answered through the provider's batch API (priced at its",
        "batch rates); `prompt cache read / written` are the prompt tokens the provider read",
        "from or wrote to its prompt cache (priced at its cache rates).",
        "",
    ]
    if calls is not None:
        made, distinct = calls
        ratio = f"{made / distinct:.3f}" if distinct else "n/a"
        lines += [f"Calls made / distinct requests: {made} / {distinct} = {ratio} (1.000: no "
                  "request was paid for twice"
                  + ("; fake models left out: their answers are not cached "
                     "(llm.cache_fake_answers), so they answer each asking anew, for free"
                     if fake_skipped else "") + ").", ""]
    lines += [
        f"| rule {MODEL_COLUMNS} requests | cache hits | uncached | unparseable | failed | re-asks |"
        " prompt tokens | completion tokens | cost | cost of cached | earlier runs' calls |"
        " their cost | batch | prompt cache read / written |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    labels = labels or ModelLabels()
    # a job's name holds the models it works on ("carry_judge[recon/<model>]"): named by label
    models = [*summary["model"].astype(str), *labels.overrides, *labels.stand_ins]
    for row in summary.itertuples(index=False):
        lines.append(
            f"| {labels.in_text(str(row.rule), models)} {model_cells(row.model, labels)}"
            f" {row.requests} | {row.cache_hits} |"
            f" {row.uncached_calls} | {row.unparseable} | {row.failed} | {row.reasks} |"
            f" {row.prompt_tokens:,} | {row.completion_tokens:,} |"
            f" {_fmt_cost(row.cost_usd, row.cost_unknown_calls)} |"
            f" {_fmt_cost(row.cached_cost_usd, row.cached_cost_unknown_calls)} |"
            f" {row.earlier_calls} | {_fmt_cost(row.earlier_cost_usd, row.earlier_cost_unknown_calls)} |"
            f" {row.batch_calls} | {row.cache_read_tokens:,} / {row.cache_write_tokens:,} |"
        )
    totals = summary[["requests", "cache_hits", "uncached_calls", "unparseable", "failed",
                      "reasks", "prompt_tokens", "completion_tokens", "cost_unknown_calls",
                      "cached_cost_unknown_calls", "earlier_calls",
                      "earlier_cost_unknown_calls", "batch_calls", "cache_read_tokens",
                      "cache_write_tokens"]].sum()
    lines.append(
        f"| **total** | | | {totals.requests} | {totals.cache_hits} | {totals.uncached_calls} |"
        f" {totals.unparseable} | {totals.failed} | {totals.reasks} | {totals.prompt_tokens:,} |"
        f" {totals.completion_tokens:,} |"
        f" {_fmt_cost(summary['cost_usd'].sum(), totals.cost_unknown_calls)} |"
        f" {_fmt_cost(summary['cached_cost_usd'].sum(), totals.cached_cost_unknown_calls)} |"
        f" {totals.earlier_calls} |"
        f" {_fmt_cost(summary['earlier_cost_usd'].sum(), totals.earlier_cost_unknown_calls)} |"
        f" {totals.batch_calls} | {totals.cache_read_tokens:,} / {totals.cache_write_tokens:,} |"
    )
    lines.append("")
    return "\n".join(lines)
