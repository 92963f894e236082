"""What a reader finds in a run's outputs for one claim of the papers (`Evidence`), before any
verdict: a value with its statistical interval and size, or, for a qualitative claim, each part
of its sentence tested on its own (`Part`), or why the run cannot say."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Callable, Mapping

from rubriclab.stats.intervals import rate_interval

Outputs = Mapping[str, Path]


@dataclass(frozen=True)
class Part:
    """One part of a qualitative claim's sentence: holds (True), does not (False), or cannot be
    tested on this run (None, with `detail` saying why)."""
    name: str
    holds: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Evidence:
    """The run's side of one claim.

    value:  the run's number (a measured claim, an arithmetic check) or None;
    low, high: a statistical interval of the value from the run itself (the project's bootstrap
            or an exact binomial interval), in the value's units; never a spread across arms;
    n:      the items behind the value (compared with the claim's `min_n`);
    parts:  a qualitative claim's parts, each tested (the claim holds only when all hold);
    cannot: why the run cannot give the value (a missing output or row, NaN, no evidence).
    """
    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    parts: tuple[Part, ...] = ()
    note: str = ""
    cannot: str = ""

    def __post_init__(self) -> None:
        if self.value is not None and not isinstance(self.value, bool) \
                and math.isnan(float(self.value)) and not self.cannot:
            object.__setattr__(self, "cannot", "the run's value is NaN")


def cannot(why: str) -> Evidence:
    return Evidence(cannot=why)


def percent_rate(successes: int, n: int, note: str = "") -> Evidence:
    """A rate of successes in n items, in percent, with its exact (Clopper-Pearson) interval."""
    if n <= 0:
        return cannot("no items behind this rate")
    low, high = rate_interval(int(successes), int(n))
    return Evidence(100 * successes / n, 100 * low, 100 * high, int(n), note=note)


# a reader: the run's outputs (rule `replication`'s inputs by name) and its config -> Evidence
Reader = Callable[[Outputs, Mapping], Evidence]


class MissingEvidence(Exception):
    """An output, a row or a column a claim needs is not in this run's outputs."""


def reads(reader: Reader) -> Reader:
    """A reader that says "cannot" (naming what is missing) where its claim's evidence is
    not in the run, rather than failing the page."""
    @wraps(reader)
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        try:
            return reader(outputs, config)
        except MissingEvidence as missing:
            return cannot(str(missing))
    return read


def output_path(outputs: Outputs, name: str) -> Path:
    """The path of rule `replication`'s input `name`, which must exist."""
    if name not in outputs:
        raise MissingEvidence(f"the replication rule has no input {name!r}")
    path = Path(outputs[name])
    if not path.exists():
        raise MissingEvidence(f"{path} does not exist in this run")
    return path
