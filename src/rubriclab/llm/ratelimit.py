"""Requests and tokens per minute per model, shared by every process of a run.

Providers limit requests and tokens per minute per model (and account), not per job; so every
job that calls a model draws on one schedule, updated in short transactions: with a PostgreSQL
cache, a row per model in its database, shared by every host of the run
(`rubriclab.llm.ratelimit_pg`); else a small SQLite file beside the cache
(`rate_limits.sqlite`, `SQLiteRateLimiter`), shared by the processes of one host. The
algorithm is `next_start`, which both stores call; `rubriclab.llm.storage` chooses the store.

The schedule is the generic cell rate algorithm: per model, a "theoretical arrival time" for
requests and one for tokens (seconds of one clock: the host's wall clock on SQLite, the
database server's on PostgreSQL). A request of `t`
estimated tokens is given the earliest start at which neither is more than `BURST_S` ahead,
and moves them on by 60 / requests_per_minute and 60 * t / tokens_per_minute seconds; the
caller sleeps until its start. So over any window of W seconds a model gets at most
W * limit / 60 plus one `BURST_S` of requests (and tokens), whichever job asks. Tokens are the
request's prompt estimate plus its whole completion budget; once answered, the difference to
the usage the provider reports is given back (or taken).

Providers that count input and output apart (Anthropic's ITPM and OTPM, Gemini's input TPM)
get a cell each for `input_tokens_per_minute` (the prompt estimate, settled to the input the
provider counts: for Anthropic the uncached input, `limited_input_tokens`) and
`output_tokens_per_minute` (the whole completion budget, settled to the completion tokens).

A 429 pauses the model for every process: its "not before" time moves to when the provider's
Retry-After (or the client's own backoff) ends, and no process starts a request before it.
Every wait is bounded by the request's deadline: a start past it is refused, not booked.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .sqlite_files import LazyWalFile
from .settings import ModelSettings

# How far ahead of its rate a model may run: a burst of one second's worth of requests.
BURST_S = 1.0
# Providers whose input-token limit leaves out prompt tokens read from their prompt cache:
# Anthropic counts "uncached input only" against ITPM (cache_read_input_tokens do not count,
# cache writes do; docs.anthropic.com/en/api/rate-limits). Others count every prompt token.
CACHE_READS_FREE_OF_INPUT_LIMIT = frozenset({"anthropic"})
LIMITS = ("requests_per_minute", "tokens_per_minute", "input_tokens_per_minute",
           "output_tokens_per_minute")
# Each limit's cell, as the stores name its column.
CELLS = dict(zip(LIMITS, ("requests_at", "tokens_at", "input_at", "output_at")))


def limited_input_tokens(model: str, prompt_tokens: float, cache_read_tokens: float) -> float:
    """The prompt tokens the provider counts against its input-token limit."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    if provider in CACHE_READS_FREE_OF_INPUT_LIMIT:
        return max(0, prompt_tokens - cache_read_tokens)
    return prompt_tokens

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedule (
    model TEXT PRIMARY KEY,
    requests_at REAL NOT NULL,
    tokens_at REAL NOT NULL,
    not_before REAL NOT NULL
)
"""
# Input and output tokens apart (input_tokens_per_minute, output_tokens_per_minute): a table of
# its own, so that a schedule file written before these limits is read as it is.
_IO_SCHEMA = """
CREATE TABLE IF NOT EXISTS io_schedule (
    model TEXT PRIMARY KEY,
    input_at REAL NOT NULL,
    output_at REAL NOT NULL
)
"""


class RateLimitWait(RuntimeError):
    """The model's shared rate limit (or a provider's pause) would start a request past its
    deadline."""


@dataclass(frozen=True)
class Booking:
    """A start booked for one request: when it may go, and the tokens it was booked for."""

    model: str
    start: float  # wall-clock time (time.time())
    tokens: int
    input_tokens: int = 0   # booked on input_tokens_per_minute
    output_tokens: int = 0  # booked on output_tokens_per_minute

    def wait_s(self, now: float | None = None) -> float:
        return max(0.0, self.start - (time.time() if now is None else now))


def estimate_prompt_tokens(messages: list[dict[str, str]]) -> int:
    """More prompt tokens than a tokenizer counts for nearly any text (one per three
    characters, English and code run about four), plus a few per message."""
    return sum(-(-len(str(m.get("content", ""))) // 3) + 4 for m in messages) + 3


def next_start(model: str, at: dict[str, float], not_before: float,
               limits: dict[str, float | None], amounts: dict[str, float], now: float,
               latest: float) -> float:
    """The generic cell rate algorithm, for one request to `model`: its earliest start, at
    which no cell of a limit set in `limits` (by name, the limit's theoretical arrival time in
    `at`) is more than `BURST_S` ahead, and not before a provider's pause (`not_before`); each
    such cell in `at` moved on by the request's `amounts` (60 * amount / limit seconds).
    RateLimitWait, `at` left as it was, where that start is past `latest`. Every time (`now`,
    `latest`, the cells, the start) is in one clock, whichever the caller keeps them in."""
    start = max(now, not_before)
    for name, limit in limits.items():
        if limit is not None:
            start = max(start, at[name] - BURST_S)
    if start > latest:
        why = ("the provider's pause (a 429)" if start == not_before else
               f"its shared rate limit ({_limits(limits)})")
        raise RateLimitWait(
            f"model {model!r}: {why} would start this request in {start - now:.1f} s, past "
            f"its deadline ({max(0.0, latest - now):.1f} s left)")
    for name, limit in limits.items():
        if limit is not None:
            at[name] = max(at[name], start) + 60.0 * amounts[name] / limit
    return start


class RateLimiter:
    """The shared schedule of every model, whichever store keeps it: the algorithm
    (`next_start`) and what it is asked, here; its store, in a subclass (`SQLiteRateLimiter`,
    `rubriclab.llm.ratelimit_pg.PostgresRateLimiter`), chosen by `rubriclab.llm.storage`.
    Every time it takes or gives is the caller's wall clock (time.time())."""

    location: str

    def close(self) -> None:
        raise NotImplementedError

    def not_before(self, model: str) -> float:
        """Wall-clock time before which no request to `model` may start (0: none)."""
        raise NotImplementedError

    def _book(self, model: str, limits: dict[str, float | None], amounts: dict[str, float],
              latest: float) -> float:
        """`next_start` on the model's stored cells, stored back, in one transaction: the
        start booked (wall clock)."""
        raise NotImplementedError

    def _shift(self, model: str, shifts: dict[str, float]) -> None:
        """Move the model's cells (by limit name) by so many seconds."""
        raise NotImplementedError

    def _pause(self, model: str, seconds: float) -> None:
        """No start to `model` for `seconds` from now (a later pause kept where there is)."""
        raise NotImplementedError

    def book(self, model: str, settings: ModelSettings, tokens: int, latest: float, *,
             input_tokens: int | None = None, output_tokens: int | None = None) -> Booking:
        """Book the earliest start for a request of `tokens` (prompt estimate plus completion
        budget), no later than `latest` (wall clock): RateLimitWait if none is.
        `input_tokens` and `output_tokens` (the prompt estimate and the completion budget; each
        `tokens` if not given) are booked on the limits counted apart."""
        limits = {name: getattr(settings, name) for name in LIMITS}
        for name, value in limits.items():
            if value is not None and not value > 0:
                raise ValueError(f"model {model!r}: {name} must be above 0, got {value!r}")
        booked = dict(input_tokens=tokens if input_tokens is None else input_tokens,
                      output_tokens=tokens if output_tokens is None else output_tokens)
        amounts: dict[str, float] = {
            "requests_per_minute": 1, "tokens_per_minute": tokens,
            "input_tokens_per_minute": booked["input_tokens"],
            "output_tokens_per_minute": booked["output_tokens"]}
        if all(value is None for value in limits.values()):  # only a provider's pause can hold it
            now = time.time()
            start = max(now, self.not_before(model))
            if start > latest:
                raise RateLimitWait(
                    f"model {model!r}: the provider's pause (a 429) would start this request "
                    f"in {start - now:.1f} s, past its deadline ({max(0.0, latest - now):.1f} s "
                    "left)")
            return Booking(model, start, tokens, **booked)
        return Booking(model, self._book(model, limits, amounts, latest), tokens, **booked)

    def settle(self, booking: Booking, settings: ModelSettings, used_tokens: int, *,
               used_input: int | None = None, used_output: int | None = None) -> None:
        """The provider counted `used_tokens` (prompt + completion) for a booked request, and of
        them `used_input` against its input-token limit (`limited_input_tokens`) and
        `used_output` completion tokens: give back what was booked beyond them, or take what
        it used beyond its booking."""
        shifts = {}
        for name, used, booked in (
                ("tokens_per_minute", used_tokens, booking.tokens),
                ("input_tokens_per_minute", used_input, booking.input_tokens),
                ("output_tokens_per_minute", used_output, booking.output_tokens)):
            limit = getattr(settings, name)
            if limit is not None and used is not None and used != booked:
                shifts[name] = 60.0 * (used - booked) / limit
        if shifts:
            self._shift(booking.model, shifts)

    def pause(self, model: str, seconds: float) -> None:
        """A 429: no process starts a request to `model` for `seconds` from now."""
        self._pause(model, max(0.0, seconds))


class SQLiteRateLimiter(LazyWalFile, RateLimiter):
    """The schedule in a SQLite file (`FILE_NAME` in the cache folder), shared by the
    processes of one host."""

    FILE_NAME = "rate_limits.sqlite"

    def __init__(self, path: str | Path):
        super().__init__(path, _SCHEMA)  # opened at the first paid call, not for a cached run

    def _opened(self, db: sqlite3.Connection) -> None:
        db.execute(_IO_SCHEMA)

    def _book(self, model: str, limits: dict[str, float | None], amounts: dict[str, float],
              latest: float) -> float:
        now = time.time()
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT requests_at, tokens_at, not_before FROM schedule"
                             " WHERE model = ?", (model,)).fetchone()
            io = db.execute("SELECT input_at, output_at FROM io_schedule WHERE model = ?",
                            (model,)).fetchone()
            requests_at, tokens_at, not_before = row if row else (now, now, 0.0)
            input_at, output_at = io if io else (now, now)
            at = dict(zip(LIMITS, (requests_at, tokens_at, input_at, output_at)))
            start = next_start(model, at, not_before, limits, amounts, now, latest)
            db.execute("INSERT OR REPLACE INTO schedule VALUES (?, ?, ?, ?)",
                       (model, at["requests_per_minute"], at["tokens_per_minute"], not_before))
            if limits["input_tokens_per_minute"] or limits["output_tokens_per_minute"]:
                db.execute("INSERT OR REPLACE INTO io_schedule VALUES (?, ?, ?)",
                           (model, at["input_tokens_per_minute"],
                            at["output_tokens_per_minute"]))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return start

    def _shift(self, model: str, shifts: dict[str, float]) -> None:
        for name, seconds in shifts.items():
            table = "schedule" if name == "tokens_per_minute" else "io_schedule"
            column = CELLS[name]
            self.db.execute(f"UPDATE {table} SET {column} = {column} + ? WHERE model = ?",
                            (seconds, model))

    def _pause(self, model: str, seconds: float) -> None:
        until = time.time() + seconds
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT OR IGNORE INTO schedule VALUES (?, 0, 0, 0)", (model,))
            db.execute("UPDATE schedule SET not_before = max(not_before, ?) WHERE model = ?",
                       (until, model))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def not_before(self, model: str) -> float:
        row = self.db.execute("SELECT not_before FROM schedule WHERE model = ?",
                              (model,)).fetchone()
        return row[0] if row else 0.0


def _limits(limits: dict[str, float | None]) -> str:
    names = {"requests_per_minute": "requests", "tokens_per_minute": "tokens",
             "input_tokens_per_minute": "input tokens",
             "output_tokens_per_minute": "output tokens"}
    parts = [f"{value:g} {names[name]}" for name, value in limits.items() if value is not None]
    return " and ".join(parts) + " a minute"
