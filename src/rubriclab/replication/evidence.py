"""What a reader finds in a run's outputs for one claim of the papers (`Evidence`), before any
verdict: a value with its statistical interval and size, or, for a qualitative claim, each part
of its sentence tested on its own (`Part`), or why the run cannot say; and its words with each
model named by its display name (`with_display_names`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import wraps
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from rubriclab.labels import ModelLabels, current_labels
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


# --------------------------------------------------------------------------- display names

# The config's sections that name models: every string in them with a "/" is taken for a
# model string (one that is not, a path, reads as itself: its default label is the string).
MODEL_SECTIONS = ("models", "carry.judges", "transfer")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def config_models(config: Mapping[str, Any]) -> list[str]:
    """Every model string the config names: in MODEL_SECTIONS, and the keys of `labels`,
    `stand_ins` and `llm.per_model` (a "model@k" entry as its model)."""
    found: list[str] = []
    for key in MODEL_SECTIONS:
        value: Any = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        found += list(_strings(value))
    found += [str(k) for k in (config.get("labels") or {})]
    found += [str(k) for k in (config.get("stand_ins") or {})]
    found += [str(k) for k in ((config.get("llm") or {}).get("per_model") or {})]
    # a model string names its provider ("provider/model"); a word ("expert") is no model
    return list(dict.fromkeys(m.split("@", 1)[0] for m in found
                              if "/" in m and not any(c.isspace() for c in m)))


def with_display_names(evidence: Evidence, config: Mapping[str, Any],
                       labels: ModelLabels | None = None) -> Evidence:
    """The evidence with every model string of the config in its words (parts, note, why it
    cannot say) replaced by the model's display name, the one the page's `models` column and
    the figures use (`labels`, else the labels in use: rubriclab.labels.current_labels); see
    ModelLabels.in_text."""
    labels = labels or current_labels()
    models = config_models(config)

    def text(value: str) -> str:
        return labels.in_text(value, models)

    return replace(
        evidence, note=text(evidence.note), cannot=text(evidence.cannot),
        parts=tuple(replace(p, name=text(p.name), detail=text(p.detail))
                    for p in evidence.parts))
