"""The budget guard: a run's paid calls stop before they would take its bill past
`llm.budget_usd`, counted across every job of the run.

The bill is kept in a spend record, which no run deletes (like the attempts journals; the
ledgers stay the accounting): what every finished call cost, plus the worst case of every call
in flight. `SpendRecordBase` keeps it once, for both backends, which
`rubriclab.llm.storage.open_spend_record` chooses: `SpendRecord`, a SQLite file beside the
run's ledgers (`results/ledger/spend.sqlite`), shared by the jobs that share that folder; or,
with a PostgreSQL cache, the run's row in the cache database
(`rubriclab.llm.budget_pg.PostgresSpendRecord`), shared by every job of the run on every host.
Before a paid call goes out it reserves its worst case (its prompt, estimated high, at the input
or cache-write rate, whichever is higher, and its whole completion budget; a new batch books
every request so, at batch rates; `worst_cost`: a price without a cache-write rate books the
input rate, and a model whose marked prompts its provider bills as cache writes needs that
rate, or no budget can bound it) in one transaction that holds the bill (SQLite's BEGIN
IMMEDIATE, PostgreSQL's row lock), refused when the bill would pass the budget; after the
answer, the reservation is settled to what the call cost. A call that ended without a known
cost (a timeout or a dropped connection, which a provider may bill; or a process killed in
the middle) stays on the bill at its worst case; an HTTP error status is settled at $0 (no
completion was made).

The stop is an error; every answer already paid for is cached, so a rerun with a larger budget
goes on from the cache, and the bill it is held to still counts what the earlier runs paid.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from . import pricing
from .prompt_cache import min_cacheable_tokens
from .settings import ModelSettings
from .sqlite_files import LazyWalFile, Transaction

T = TypeVar("T")

SPEND_RECORD = "spend.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bill (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    settled_usd REAL NOT NULL,
    in_flight_usd REAL NOT NULL,
    calls INTEGER NOT NULL
)
"""


class BudgetExceeded(RuntimeError):
    """A paid call would take the run's bill past its budget: the run stops before it."""


class BillUnreachable(BudgetExceeded):
    """The run's bill could not be booked (its database out of reach): the run stops before
    the call, as at its budget, since a call not booked could take the bill past it."""


class BudgetCannotGuard(ValueError):
    """A budget is set, but a model to be paid for has no known price (or the client no
    spend record), so its calls cannot be counted against it."""


@dataclass(frozen=True)
class Reservation:
    worst_usd: float


@dataclass(frozen=True)
class Bill:
    settled_usd: float
    in_flight_usd: float
    calls: int

    @property
    def total_usd(self) -> float:
        return self.settled_usd + self.in_flight_usd


def spend_record_path(ledger_path: str | Path) -> Path:
    """The spend record of the run whose ledger this is: beside it."""
    return Path(ledger_path).parent / SPEND_RECORD


def usd(value: float) -> str:
    """Dollars to the cent, or to three figures below a cent (a test's tiny bills)."""
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.3g}"


def how_to_go_on(budget_usd: float) -> str:
    return (f"every answer paid for is cached: raise the budget (llm.budget_usd in the config "
            f"file, or --config 'llm={{budget_usd: {2 * budget_usd:.6g}}}' on the command line) "
            "and run again; the rerun goes on from the cache and pays for nothing twice")


def writes_prompt_cache(model: str, settings: ModelSettings) -> bool:
    """Whether the model layer marks this model's shared prefixes cacheable, which its
    provider bills as cache writes (Anthropic, above the input rate), where they qualify."""
    return settings.prompt_cache and min_cacheable_tokens(model) is not None


def worst_cost(model: str, prompt_tokens: int, budget_tokens: int, settings: ModelSettings,
               *, batch: bool) -> float | None:
    """The most one asking can cost: its prompt (the caller's high estimate) at the input
    rate, or at the cache-write rate where that is known and higher, and its whole answer
    budget (at batch rates with `batch`). A price without a cache-write rate is its input
    rate, unless the model's prompts may be written to its provider's cache
    (`writes_prompt_cache`): then the worst case is unknown. None where unknown, never $0."""
    configured = settings.price
    standard = pricing.price(model, prompt_tokens, budget_tokens, batch=batch,
                             configured=configured)
    if standard is None:
        return None
    written = pricing.price(model, prompt_tokens, budget_tokens, batch=batch,
                            cache_write_tokens=prompt_tokens, configured=configured)
    if written is None:
        return None if writes_prompt_cache(model, settings) else standard
    return max(standard, written)


# The request a check before the first job prices to learn whether a model's calls can be
# counted (any size would do: prices are per token).
_PROBE_PROMPT_TOKENS, _PROBE_BUDGET_TOKENS = 1000, 100


def guard_problem(model: str, settings: ModelSettings) -> str | None:
    """Why a budget cannot count this model's calls (None: it can), by the very worst case
    the client books (`worst_cost`), as an ordinary call and, for a batched model, as a
    batch."""
    if pricing.is_free(model):
        return None
    for batch in (False, True) if settings.batch else (False,):
        if worst_cost(model, _PROBE_PROMPT_TOKENS, _PROBE_BUDGET_TOKENS, settings,
                      batch=batch) is not None:
            continue
        if pricing.price(model, 1, 1, configured=settings.price) is None:
            return "no known price"
        if pricing.price(model, 1, 1, batch=batch, configured=settings.price) is None:
            return "no known batch price"
        return ("no cache_write in its price (llm.per_model.<model>.price), and its shared "
                "prefixes are marked for its provider's prompt cache, which bills them as cache "
                "writes above the input rate")
    return None


def unguarded_models(budget_usd: float | None, models: Iterable[str], *,
                     settings: Mapping[str, ModelSettings] | None = None) -> list[str]:
    """Under a budget, the paid models whose calls it cannot count (`guard_problem`): those of
    unknown price, neither configured nor in litellm's map, and those whose cache writes are
    of unknown price (for a check before the first job; the client refuses them before their
    first call). `settings`: model -> its llm settings (a model not in it: the defaults)."""
    if budget_usd is None:
        return []
    return sorted(m for m in set(models)
                  if guard_problem(m, _settings_of(m, settings)) is not None)


def _settings_of(model: str, settings: Mapping[str, ModelSettings] | None) -> ModelSettings:
    return (settings or {}).get(model) or ModelSettings()


def unguarded_message(budget_usd: float, models: list[str],
                      settings: Mapping[str, ModelSettings] | None = None) -> str:
    """Why a budget cannot guard these models, and what to set."""
    reasons = {m: guard_problem(m, _settings_of(m, settings)) or "no known price"
               for m in models}
    priceless = [m for m in models if reasons[m] == "no known price"]
    parts = []
    if priceless:
        parts.append(
            f"{', '.join(repr(m) for m in priceless)} {'has' if len(priceless) == 1 else 'have'}"
            f" no known price, so a budget (llm.budget_usd = {usd(budget_usd)}) cannot guard "
            f"{'its' if len(priceless) == 1 else 'their'} calls; price "
            f"{'it' if len(priceless) == 1 else 'them'} (llm.per_model.<model>.price) or run "
            "without a budget")
    for m in models:
        if m in priceless:
            continue
        fix = ("give cache_write (US dollars per million tokens, the provider's list price) in "
               f"llm.per_model[{m!r}].price, or set llm.per_model[{m!r}].prompt_cache: false"
               if "cache_write" in reasons[m] else
               f"give batch_input and batch_output in llm.per_model[{m!r}].price")
        parts.append(f"{m!r} has {reasons[m]}, so a budget (llm.budget_usd = "
                     f"{usd(budget_usd)}) cannot bound its calls; {fix}, or run without a "
                     "budget")
    return "; ".join(parts)


class SpendRecordBase:
    """The bill of one run, shared by its processes: every method once, its statements in
    the SQL both backends speak, with `?` placeholders, on the run's row (`_KEY` = `_row`) of
    the table `_TABLE` (settled_usd, in_flight_usd, calls). A backend gives `location` (where
    the bill is, for messages), `close`, and how statements run: `_query` (the rows),
    `_write` (a change to the bill) and `_booking` (an operation's statements as one
    transaction that holds the bill, so that no other process books meanwhile)."""

    _TABLE = "bill"
    _KEY = "id"
    _LOCK_ROW = ""  # what a read adds to lock the row it reads, in a transaction
    _row: object
    location: str

    def close(self) -> None:
        raise NotImplementedError

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _write(self, sql: str, params: tuple) -> None:
        raise NotImplementedError

    def _booking(self, operation: Callable[[], T]) -> T:
        raise NotImplementedError

    def _new_row(self) -> tuple[str, tuple]:
        """The statement that makes the run's row, where there is none yet."""
        return (f"INSERT INTO {self._TABLE} ({self._KEY}, settled_usd, in_flight_usd, calls)"
                " VALUES (?, 0, 0, 0) ON CONFLICT DO NOTHING", (self._row,))

    def _update(self, assignments: str, params: tuple) -> None:
        self._write(f"UPDATE {self._TABLE} SET {assignments} WHERE {self._KEY} = ?",
                    (*params, self._row))

    def _read(self, lock: str = "") -> Bill:
        rows = self._query(f"SELECT settled_usd, in_flight_usd, calls FROM {self._TABLE}"
                           f" WHERE {self._KEY} = ?{lock}", (self._row,))
        return Bill(*rows[0]) if rows else Bill(0.0, 0.0, 0)

    def bill(self) -> Bill:
        return self._read()

    def reserve(self, worst_usd: float, budget_usd: float, what: str) -> Reservation:
        """Book `worst_usd` for a call about to go out, or raise BudgetExceeded (booking
        nothing) if the bill would then pass `budget_usd`."""
        if worst_usd < 0:
            raise ValueError(f"a call cannot cost {worst_usd!r} dollars")

        def book() -> None:
            bill = self._read(self._LOCK_ROW)
            if bill.total_usd + worst_usd > budget_usd:
                in_flight = (f", {usd(bill.in_flight_usd)} of it for calls in flight"
                             if bill.in_flight_usd else "")
                raise BudgetExceeded(
                    f"the run's bill is {usd(bill.total_usd)} so far ({bill.calls} paid calls"
                    f"{in_flight}), and {what}, which may cost up to {usd(worst_usd)}, "
                    f"would take it past its budget of {usd(budget_usd)} (llm.budget_usd), so "
                    f"the run stops before it; {how_to_go_on(budget_usd)}")
            self._update("in_flight_usd = in_flight_usd + ?", (worst_usd,))

        self._booking(book)
        return Reservation(worst_usd)

    # What a booking takes off the calls in flight, never below $0 (`max` is not PostgreSQL's).
    _LESS_IN_FLIGHT = ("in_flight_usd = CASE WHEN in_flight_usd > ? THEN in_flight_usd - ?"
                       " ELSE 0 END")

    def settle(self, reservation: Reservation, cost_usd: float | None) -> None:
        """The call is over: it cost `cost_usd` (None: unknown, so its worst case stays)."""
        cost = reservation.worst_usd if cost_usd is None else cost_usd
        self._update(f"{self._LESS_IN_FLIGHT}, settled_usd = settled_usd + ?, calls = calls + 1",
                     (reservation.worst_usd, reservation.worst_usd, cost))

    def release(self, reservation: Reservation) -> None:
        """Take a booking off the calls in flight, adding nothing: what it stood for was
        billed otherwise (a batch's answers, each added as it is read)."""
        self._update(self._LESS_IN_FLIGHT, (reservation.worst_usd, reservation.worst_usd))

    def add(self, cost_usd: float) -> None:
        """A call paid for without a reservation (a batch's answer): on the bill too."""
        self._update("settled_usd = settled_usd + ?, calls = calls + 1", (cost_usd,))


class SpendRecord(LazyWalFile, SpendRecordBase):
    """The bill of one run in a SQLite file (`spend_record_path`: beside its ledgers), shared
    by the processes of one machine (or of every host that shares the folder)."""

    _row = 1

    def __init__(self, path: str | Path):
        super().__init__(path, _SCHEMA)

    def _opened(self, db: sqlite3.Connection) -> None:
        db.execute(*self._new_row())

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.db.execute(sql, params).fetchall()

    def _write(self, sql: str, params: tuple) -> None:
        self.db.execute(sql, params)

    def _booking(self, operation: Callable[[], T]) -> T:
        with Transaction(self.db, immediate=True):
            return operation()
