"""Readers of transfer's claims on single criteria: Table A.6 (LLM-matching similarity of
passing and failing criteria) and Figure 6 (which criteria an intervention moves, between and
within rubrics). See rubriclab.replication.readers_transfer for the conventions.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    percent_rate,
    reads as _reads,
)
from rubriclab.replication.readers_transfer_common import (
    EXPERT,
    _csv,
    _examples,
    _generators,
    _meets,
    _part,
    _try_stat,
)

REDUNDANT = ("one", "several")
MOVING = ("matched", "general")


# --------------------------------------------------------------------------- Table A.6

@_reads
def similarity_pass_above_fail(outputs: Outputs, config: Mapping) -> Evidence:
    stats = _csv(outputs, "stats")
    parts = []
    for generator in _generators(config):
        row, why = _try_stat(stats, "max_similarity_diff", generator)
        parts.append(_part(f"{generator}: passing minus failing similarity above 0", row,
                           lambda r: r["low"] > 0, why))
    return Evidence(n=_examples(stats), parts=tuple(parts))


@_reads
def similarity_levels(outputs: Outputs, config: Mapping) -> Evidence:
    """"around 4.5 and 3.5": each generator's interval meets the value within 0.5."""
    stats = _csv(outputs, "stats")
    parts = []
    for generator in _generators(config):
        for metric, seed in (("max_similarity_pass", 4.5), ("max_similarity_fail", 3.5)):
            row, why = _try_stat(stats, metric, generator)

            def around_seed(r: pd.Series, s: float = seed) -> bool:
                return _meets(r["low"], r["high"], s - 0.5, s + 0.5)

            parts.append(_part(f"{generator}: {metric} around {seed}", row, around_seed, why))
    return Evidence(n=_examples(stats), parts=tuple(parts))


# --------------------------------------------------------------------------- Figure 6

def _category_counts(categories: pd.DataFrame, row_kind: str, direction: str,
                     labels: tuple[str, ...], generator: str | None = None) -> tuple[int, int]:
    """(criteria in `labels`, criteria) of one Figure 6 row kind and direction, pooled over
    generators (or of one generator's row), from the shares and n_criteria."""
    rows = categories[(categories["row_kind"] == row_kind)
                      & (categories["direction"] == direction)]
    if generator is not None:
        rows = rows[rows["generator"] == generator]
    successes, total = 0, 0
    for _, group in rows.groupby("generator", sort=True):
        n = int(group["n_criteria"].iloc[0])
        if (group["n_criteria"] != n).any():
            raise ValueError(f"categories.csv: {row_kind} {direction} of "
                             f"{group['generator'].iloc[0]} gives several n_criteria")
        chosen = group[group["category"].isin(labels)]
        count = float(chosen["share"].sum()) * n / 100
        if abs(count - round(count)) > 1e-6:
            raise ValueError(f"categories.csv: {row_kind} {direction} shares of "
                             f"{group['generator'].iloc[0]} give {count} of {n} criteria")
        successes, total = successes + round(count), total + n
    return successes, total


def category_rate(row_kind: str, direction: str, labels: tuple[str, ...],
                  generator: str | None = None) -> Reader:
    """A Figure 6 share, pooled over generators (or one rubric's, e.g. the expert's within
    row), with its exact interval over the criteria."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        categories = _csv(outputs, "categories")
        successes, n = _category_counts(categories, row_kind, direction, labels, generator)
        if n == 0:
            raise MissingEvidence(f"no {row_kind} criteria in direction {direction!r}")
        rows = categories[(categories["row_kind"] == row_kind)
                          & (categories["direction"] == direction)
                          & categories["category"].isin(labels)]
        if generator is not None:
            rows = rows[rows["generator"] == generator]
        shares = rows.groupby("generator")["share"].sum()
        note = "; ".join(f"{g} {s:.1f}%" for g, s in shares.items())
        return percent_rate(successes, n, note=f"pooled over criteria: {note}")
    return read


def _share_part(name: str, categories: pd.DataFrame, higher: tuple, lower: tuple,
                labels: tuple[str, ...]) -> Part:
    """One Figure 6 share above another; each side (row_kind, direction, generator)."""
    rates = []
    for row_kind, direction, generator in (higher, lower):
        successes, n = _category_counts(categories, row_kind, direction, labels, generator)
        if n == 0:
            return Part(name, None, f"no {row_kind} criteria of {generator} in direction "
                                    f"{direction!r}")
        rates.append((100 * successes / n, successes, n))
    (high, k1, n1), (low, k2, n2) = rates
    return Part(name, high > low, f"{high:.1f}% ({k1}/{n1}) vs {low:.1f}% ({k2}/{n2})")


@_reads
def passing_more_redundant(outputs: Outputs, config: Mapping) -> Evidence:
    """"passing criteria are more redundant than failing criteria in every rubric": within
    each rubric, the share with another criterion moving is higher among passing criteria
    (direction -) than failing ones (+), point estimates."""
    categories = _csv(outputs, "categories")
    parts = [_share_part(f"{rubric}: passing more redundant than failing", categories,
                         ("within", "-", rubric), ("within", "+", rubric), REDUNDANT)
             for rubric in [*_generators(config), EXPERT]]
    return Evidence(parts=tuple(parts), n=_category_counts(categories, "within", "+", REDUNDANT)[1]
                    + _category_counts(categories, "within", "-", REDUNDANT)[1])


@_reads
def expert_most_redundant(outputs: Outputs, config: Mapping) -> Evidence:
    categories = _csv(outputs, "categories")
    parts = [_share_part(f"{direction}: expert more redundant than {generator}", categories,
                         ("within", direction, EXPERT), ("within", direction, generator),
                         REDUNDANT)
             for generator in _generators(config) for direction in ("-", "+")]
    return Evidence(parts=tuple(parts),
                    n=_category_counts(categories, "within", "-", REDUNDANT, EXPERT)[1])


@_reads
def expert_passing_moves_more(outputs: Outputs, config: Mapping) -> Evidence:
    """Expert criteria moving generated ones (matched + general): more among passing (-) than
    failing (+), per generator."""
    categories = _csv(outputs, "categories")
    parts = [_share_part(f"{generator}: expert passing criteria matched/general more often",
                         categories, ("expert->gen", "-", generator),
                         ("expert->gen", "+", generator), MOVING)
             for generator in _generators(config)]
    return Evidence(parts=tuple(parts),
                    n=_category_counts(categories, "expert->gen", "-", MOVING)[1])


@_reads
def expert_to_generated_moves_more(outputs: Outputs, config: Mapping) -> Evidence:
    """Matched + general higher for expert -> generated than for generated -> expert, per
    generator and direction."""
    categories = _csv(outputs, "categories")
    parts = [_share_part(f"{generator} {direction}: expert->gen more matched/general",
                         categories, ("expert->gen", direction, generator),
                         ("gen->expert", direction, generator), MOVING)
             for generator in _generators(config) for direction in ("+", "-")]
    return Evidence(parts=tuple(parts),
                    n=_category_counts(categories, "gen->expert", "+", MOVING)[1])
