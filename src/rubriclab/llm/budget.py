"""The budget guard: a run's paid calls stop before they would take its bill past
`llm.budget_usd`, counted across every job of the run.

The bill lives in a spend record beside the run's ledgers (`results/ledger/spend.sqlite`), which
no run deletes (like the attempts journals; the ledgers stay the accounting): what every
finished call cost, plus the worst case of every call in flight. Before a paid call goes out it
reserves its worst case (its prompt, estimated high, at the input or cache-write rate, whichever
is higher, and its whole completion budget; a new batch books every request so, at batch rates)
in a short BEGIN IMMEDIATE transaction, refused when the bill would
pass the budget; after the answer, the reservation is settled to what the call cost. A call
that ended without a known cost (a timeout or a dropped connection, which a provider may
bill; or a process killed in the middle) stays on the bill at its worst case; an HTTP error
status is settled at $0 (no completion was made).

The stop is an error; every answer already paid for is cached, so a rerun with a larger budget
goes on from the cache, and the bill it is held to still counts what the earlier runs paid.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import pricing
from .cache import open_wal_database
from .settings import ModelPrice

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


def unguarded_models(budget_usd: float | None, models: Iterable[str],
                     prices: Mapping[str, ModelPrice | None] | None = None) -> list[str]:
    """Under a budget, the paid models whose calls it cannot count: those of unknown price,
    neither configured (`prices`: model -> its llm.per_model price) nor in litellm's map (for
    a check before the first job; the client refuses them before their first call)."""
    if budget_usd is None:
        return []
    prices = prices or {}
    return sorted(m for m in set(models) if not pricing.is_free(m)
                  and not pricing.is_priced(m, configured=prices.get(m)))


def unguarded_message(budget_usd: float, models: list[str]) -> str:
    return (f"{', '.join(repr(m) for m in models)} {'has' if len(models) == 1 else 'have'} no "
            f"known price, so a budget (llm.budget_usd = {usd(budget_usd)}) cannot guard "
            f"{'its' if len(models) == 1 else 'their'} calls; price "
            f"{'it' if len(models) == 1 else 'them'} (llm.per_model.<model>.price) or run "
            "without a budget")


class SpendRecord:
    """The bill of one run, shared by its processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_wal_database(self.path, _SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO bill VALUES (1, 0, 0, 0)")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def bill(self) -> Bill:
        return Bill(*self.db.execute(
            "SELECT settled_usd, in_flight_usd, calls FROM bill WHERE id = 1").fetchone())

    def reserve(self, worst_usd: float, budget_usd: float, what: str) -> Reservation:
        """Book `worst_usd` for a call about to go out, or raise BudgetExceeded (booking
        nothing) if the bill would then pass `budget_usd`."""
        if worst_usd < 0:
            raise ValueError(f"a call cannot cost {worst_usd!r} dollars")
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            bill = self.bill()
            if bill.total_usd + worst_usd > budget_usd:
                db.execute("ROLLBACK")
                in_flight = (f", {usd(bill.in_flight_usd)} of it for calls in flight"
                             if bill.in_flight_usd else "")
                raise BudgetExceeded(
                    f"the run's bill is {usd(bill.total_usd)} so far ({bill.calls} paid calls"
                    f"{in_flight}), and {what}, which may cost up to {usd(worst_usd)}, "
                    f"would take it past its budget of {usd(budget_usd)} (llm.budget_usd), so "
                    f"the run stops before it; {how_to_go_on(budget_usd)}")
            db.execute("UPDATE bill SET in_flight_usd = in_flight_usd + ? WHERE id = 1",
                       (worst_usd,))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return Reservation(worst_usd)

    def settle(self, reservation: Reservation, cost_usd: float | None) -> None:
        """The call is over: it cost `cost_usd` (None: unknown, so its worst case stays)."""
        cost = reservation.worst_usd if cost_usd is None else cost_usd
        self.db.execute("UPDATE bill SET in_flight_usd = max(0, in_flight_usd - ?),"
                        " settled_usd = settled_usd + ?, calls = calls + 1 WHERE id = 1",
                        (reservation.worst_usd, cost))

    def release(self, reservation: Reservation) -> None:
        """Take a booking off the calls in flight, adding nothing: what it stood for was
        billed otherwise (a batch's answers, each added as it is read)."""
        self.db.execute("UPDATE bill SET in_flight_usd = max(0, in_flight_usd - ?) WHERE id = 1",
                        (reservation.worst_usd,))

    def add(self, cost_usd: float) -> None:
        """A call paid for without a reservation (a batch's answer): on the bill too."""
        self.db.execute("UPDATE bill SET settled_usd = settled_usd + ?, calls = calls + 1"
                        " WHERE id = 1", (cost_usd,))
