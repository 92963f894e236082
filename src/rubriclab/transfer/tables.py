"""Tables A.4-A.9 of the transfer work, built from its tidy tables.

Each table function returns (markdown, frame): the markdown as the table is laid out, with
a heading and a caption line, and a wide DataFrame holding the same cells (written as CSV
by `write_table`).

Bootstrapped values print as "estimate [low, high]" to 2 decimals, e.g. "0.42 [0.31, 0.55]"
(the 95% paired bootstrap percentile interval); a missing estimate prints "n/a", and so
does a missing bound inside the brackets ("0.42 [n/a, n/a]"). A cell with no row prints
"n/a". An interval of zero width ("0.00 [0.00, 0.00]§") or over fewer examples than the
coverage study found Algorithm 4 holding 95% at ("‡", rubriclab.stats.intervals.
TRANSFER_HELD_FROM) is marked, and the table says what the mark means under its caption. Table A.7 holds plain percents (1 decimal) and Table A.9 plain numbers (words to 1
decimal, ratios to 2); their frames hold those numbers rounded the same way.
Bad input raises ValueError naming the missing column or the empty selection.

Models are named by their display labels (rubriclab.labels), as in the figures. A paired difference "A − B" is generator minus generator_b.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from rubriclab.labels import with_labels
from rubriclab.stats.intervals import algorithm4_flags, algorithm4_footnotes
from rubriclab.tidy import markdown_table

from .figures import (
    EXISTING_METRICS, EXISTING_TITLES, EXPERT, FULL_PANEL, IT_METRICS, IT_SYMBOLS, IT_TASKS,
    PANEL_METRICS, difference_rows, ensure_unique, generator_order, interval_cell,
    is_missing, normalized_stats, number_text, ordered, plain_rows, require_columns,
    short_name,
)

CUTOFFS_COLUMNS = ["generator", "passed", "cutoff", "share", "n_criteria"]
EDIT_SIZES_COLUMNS = ["level", "target", "direction", "measured", "n_interventions",
                      "mean_criterion_words", "mean_edit_words",
                      "edit_words_per_criterion_word", "mean_length_ratio"]
# Table A.9 rows: the four interventions in Figure 5's order.
A9_INTERVENTIONS = [("generated", "+"), ("generated", "-"), ("expert", "+"), ("expert", "-")]
A9_LEVELS = ["criterion", "rubric"]
A9_VALUES = {  # column -> (markdown header per level, decimals)
    "n_interventions": ("n", 0),
    "mean_criterion_words": ("|c|", 1),
    "mean_edit_words": ("R'−R", 1),
    "edit_words_per_criterion_word": ("(R'−R)/|c|", 2),
    "mean_length_ratio": ("|R'|/|R|", 2),
}
RUBRIC_HEADERS = {"edit_words_per_criterion_word": "(R'−R)/|C|"}
RUBRIC_TITLES = {"generated": "Cᵍ", "expert": "C*"}
DIRECTION_WORDS = {"+": "pass", "-": "fail"}
MINUS = "−"


# --------------------------------------------------------------------------- helpers





def pair_label(generator: str, generator_b: str) -> str:
    """"A − B" with shortened names: the statistic is generator minus generator_b."""
    return f"{short_name(generator)} {MINUS} {short_name(generator_b)}"


def _cell(row) -> str:
    """"estimate [low, high]", marked where the interval says less than a 95% one should
    (rubriclab.stats.intervals.algorithm4_flags; `_document` adds the footnotes)."""
    return interval_cell(row["estimate"], row["low"], row["high"]) + algorithm4_flags(
        row["estimate"], row["low"], row["high"], row["n_examples"])


def _document(title: str, body: list[str], caption: str) -> str:
    return "\n".join([f"# transfer, {title}", "", *body, "", caption, "",
                      *algorithm4_footnotes(body)])


def _paired_table(rows: pd.DataFrame, metrics: Sequence[str], labels: dict[str, str],
                  what: str) -> pd.DataFrame:
    """Rows = metrics (in `metrics` order, then first-seen), columns = generator pairs in
    first-seen order; cells "estimate [low, high]", "n/a" where a pair lacks the metric."""
    ensure_unique(rows, ["metric", "generator", "generator_b"], what)
    pairs = list(dict.fromkeys(zip(rows["generator"], rows["generator_b"])))
    columns = [pair_label(a, b) for a, b in pairs]
    if len(set(columns)) != len(columns):
        raise ValueError(f"{what}: generator pairs {pairs} shorten to clashing names")
    cells = {(r["metric"], r["generator"], r["generator_b"]): _cell(r)
             for r in rows.to_dict("records")}
    records = []
    for metric in ordered(rows["metric"], metrics):
        record = {"metric": metric, "Metric": labels.get(metric, metric)}
        for (a, b), column in zip(pairs, columns):
            record[column] = cells.get((metric, a, b), "n/a")
        records.append(record)
    return pd.DataFrame(records, columns=["metric", "Metric", *columns])


def _paired_markdown(table: pd.DataFrame) -> list[str]:
    columns = [c for c in table.columns if c not in ("metric", "Metric")]
    body = [[record["Metric"], *(record[c] for c in columns)]
            for record in table.to_dict("records")]
    return markdown_table(["Metric", *columns], body)


# --------------------------------------------------------------------------- Table A.4

def _single_generator_note(frame: pd.DataFrame, what: str,
                           subject: str) -> tuple[str, pd.DataFrame] | None:
    """With one generator there is no pair to difference: a table that says so (None else)."""
    generators = sorted((set(frame["generator"]) | set(frame["generator_b"])) - {"", EXPERT})
    if len(generators) != 1:
        return None
    note = (f"{what} compares rubric generators in pairs; this run has one generator "
            f"({generators[0]}), so there is no paired difference of the {subject} to report. "
            "List two or more in transfer.generators.")
    table = pd.DataFrame({"note": [note]})
    return f"# transfer, {what}: paired differences\n\n{note}\n", table


@with_labels
def tableA4_existing_paired_differences(stats: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table A.4: paired differences between generators (generator minus generator_b) for
    every existing-approach metric, rows in EXISTING_METRICS order, one column per pair.
    Panel metrics are those of the full panel (panel "all"); other panel choices are left
    out (Figure A.2 shows them)."""
    frame = normalized_stats(stats)
    single = _single_generator_note(frame, "Table A.4", "existing approaches")
    if single is not None:
        return single
    rows = difference_rows(frame, "Table A.4", family="existing")
    rows = rows[~rows["metric"].isin(PANEL_METRICS) | (rows["panel"] == FULL_PANEL)]
    if rows.empty:
        raise ValueError(f"Table A.4: no paired differences of panel metrics on panel "
                         f"{FULL_PANEL!r} nor of any other existing metric")
    table = _paired_table(rows, EXISTING_METRICS, EXISTING_TITLES, "Table A.4")
    caption = ("Table A.4: Paired differences between rubric generators (column A "
               f"{MINUS} B) for each existing approach of Figure 4, with 95% paired "
               "bootstrap intervals. Panel metrics on the full response panel.")
    return _document("Table A.4: existing approaches, paired differences",
                     _paired_markdown(table), caption), table


# --------------------------------------------------------------------------- Table A.5

@with_labels
def tableA5_degradation(stats: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table A.5: per degrading model (response_model, first-seen order) the mean drop in
    expert-rubric score from its normal to its degraded response (family degradation,
    metric degradation_drop, generator expert), with its interval and example count."""
    frame = normalized_stats(stats)
    rows = plain_rows(frame, "Table A.5", family="degradation", metric="degradation_drop",
                      generator=EXPERT)
    if (rows["response_model"] == "").any():
        raise ValueError("Table A.5: degradation_drop rows with an empty response_model")
    ensure_unique(rows, ["response_model"], "Table A.5")
    table = pd.DataFrame({
        "response_model": rows["response_model"].to_numpy(),
        "Degrading model": [short_name(m) for m in rows["response_model"]],
        "Drop in expert score": [_cell(r) for r in rows.to_dict("records")],
        "n_examples": rows["n_examples"].to_numpy(),
    })
    body = [[r["Degrading model"], r["Drop in expert score"], r["n_examples"]]
            for r in table.to_dict("records")]
    caption = ("Table A.5: RubricRAG's degradation (an irrelevant rubric in the response-model "
               "prompt): mean drop in the fraction of expert criteria passed, normal minus "
               "degraded response, with 95% bootstrap intervals, per degrading model.")
    return _document("Table A.5: degradation drop",
                     markdown_table(["Degrading model", "Drop in expert score", "n"], body),
                     caption), table


# --------------------------------------------------------------------------- Table A.6

@with_labels
def tableA6_similarity_pass_fail(stats: pd.DataFrame, response_model: str | None = None
                                 ) -> tuple[str, pd.DataFrame]:
    """Table A.6: per generator the mean maximum LLM-matching similarity (0-9) of its
    initially passing and failing criteria to the closest expert criterion, and the
    difference (pass minus fail), each "estimate [low, high]". `response_model`, if given,
    selects its rows (otherwise each generator must have one row per metric)."""
    frame = normalized_stats(stats)
    conditions = {} if response_model is None else {"response_model": response_model}
    metrics = ["max_similarity_pass", "max_similarity_fail", "max_similarity_diff"]
    headers = ["Passing", "Failing", f"Passing {MINUS} failing"]
    rows = plain_rows(frame, "Table A.6", family="similarity", metric=metrics, **conditions)
    ensure_unique(rows, ["generator", "metric"], "Table A.6")
    cells = {(r["generator"], r["metric"]): _cell(r) for r in rows.to_dict("records")}
    records = []
    for generator in generator_order(rows["generator"]):
        record = {"generator": generator, "Generator": short_name(generator)}
        for metric, header in zip(metrics, headers):
            record[header] = cells.get((generator, metric), "n/a")
        records.append(record)
    table = pd.DataFrame(records, columns=["generator", "Generator", *headers])
    body = [[r["Generator"], *(r[h] for h in headers)] for r in table.to_dict("records")]
    on = f" on the {short_name(response_model)} response" if response_model else ""
    caption = ("Table A.6: Mean LLM-matching similarity (0-9) between each generated "
               "criterion and its closest expert criterion, split by whether the criterion "
               f"initially passes or fails{on}, with 95% bootstrap intervals over examples.")
    return _document("Table A.6: similarity of passing and failing criteria",
                     markdown_table(["Generator", *headers], body), caption), table


# --------------------------------------------------------------------------- Table A.7

def _as_bool(series: pd.Series, name: str) -> pd.Series:
    if series.dtype == bool:
        return series
    words = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}
    mapped = series.map(lambda v: words.get(str(v).strip().lower()))
    if mapped.isna().any():
        raise ValueError(f"column {name!r} holds non-boolean values "
                         f"{sorted(set(series[mapped.isna()].astype(str)))}")
    return mapped.astype(bool)


@with_labels
def tableA7_similarity_cutoffs(cutoffs: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table A.7: rows = cutoffs (ascending), columns = per generator the percent of its
    initially passing and of its failing criteria whose best similarity to an expert
    criterion is at or above the cutoff (1 decimal; "n/a" / NaN where missing). The
    markdown header gives each column's criterion count."""
    require_columns(cutoffs, CUTOFFS_COLUMNS, "cutoffs")
    frame = cutoffs.copy()
    if frame.empty:
        raise ValueError("Table A.7: the cutoffs table has no rows")
    frame["generator"] = frame["generator"].fillna("").astype(str)
    frame["passed"] = _as_bool(frame["passed"], "passed")
    frame["cutoff"] = pd.to_numeric(frame["cutoff"], errors="raise").astype(int)
    frame["share"] = pd.to_numeric(frame["share"], errors="coerce").astype(float)
    ensure_unique(frame, ["generator", "passed", "cutoff"], "Table A.7")
    generators = generator_order(frame["generator"])
    levels = sorted(frame["cutoff"].unique())
    shares = frame.set_index(["generator", "passed", "cutoff"])["share"]
    counts = frame.groupby(["generator", "passed"])["n_criteria"].max()
    columns, headers, keys = [], [], []
    for generator in generators:
        for passed, word in ((True, "passing"), (False, "failing")):
            columns.append(f"{short_name(generator)} {word}")
            count = counts.get((generator, passed))
            headers.append(f"{short_name(generator)} {word}"
                           + ("" if is_missing(count) or count is None else f" (n={int(count)})"))
            keys.append((generator, passed))
    records = []
    for cutoff in levels:
        record: dict[str, float] = {"cutoff": int(cutoff)}
        for column, (generator, passed) in zip(columns, keys):
            value = shares.get((generator, passed, cutoff), float("nan"))
            record[column] = float("nan") if is_missing(value) else round(float(value), 1)
        records.append(record)
    table = pd.DataFrame(records, columns=["cutoff", *columns])
    body = [[f"≥ {r['cutoff']}", *(number_text(r[c], 1) for c in columns)]
            for r in table.to_dict("records")]
    caption = ("Table A.7: Share (%) of initially passing and failing generated criteria whose "
               "LLM-matching similarity to the closest expert criterion is at or above each "
               "cutoff.")
    return _document("Table A.7: similarity cutoffs",
                     markdown_table(["Cutoff", *headers], body), caption), table


# --------------------------------------------------------------------------- Table A.8

@with_labels
def tableA8_it_paired_differences(stats: pd.DataFrame, response_model: str
                                  ) -> tuple[str, pd.DataFrame]:
    """Table A.8: paired differences between generators (generator minus generator_b) for
    each IT metric of Figure 5 on `response_model`'s responses; rows in Figure 5's order
    (Q+(Cg->C*), Q-(Cg->C*), Q+(C*->Cg), Q-(C*->Cg)), one column per pair."""
    frame = normalized_stats(stats)
    single = _single_generator_note(frame, "Table A.8", "IT metrics")
    if single is not None:
        return single
    rows = difference_rows(frame, "Table A.8", family="it", response_model=response_model)
    labels = {m: f"{IT_SYMBOLS[m]} ({IT_TASKS[m]})" for m in IT_METRICS}
    table = _paired_table(rows, IT_METRICS, labels, "Table A.8")
    caption = (f"Table A.8: Paired differences between rubric generators (A {MINUS} B) for "
               f"each IT metric of Figure 5 on {short_name(response_model)} responses, with "
               "95% paired bootstrap intervals.")
    return _document("Table A.8: IT metrics, paired differences", _paired_markdown(table),
                     caption), table


# --------------------------------------------------------------------------- Table A.9

@with_labels
def tableA9_edit_sizes(edit_sizes: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Table A.9: how much each intervention changes the response. One row per
    intervention in Figure 5's order (target generated +, generated -, expert +, expert -),
    with the measured rubric and, for the single-criterion then the whole-rubric level,
    the number of interventions, |c| (mean words of a targeted criterion), R'−R (mean
    words deleted + inserted), (R'−R)/|c| resp. (R'−R)/|C| and |R'|/|R|. A level missing
    for an intervention prints "n/a" (NaN in the frame); an intervention missing at both
    levels is left out."""
    require_columns(edit_sizes, EDIT_SIZES_COLUMNS, "edit_sizes")
    frame = edit_sizes.copy()
    for column in ("level", "target", "direction", "measured"):
        frame[column] = frame[column].fillna("").astype(str)
    for column, values in (("level", A9_LEVELS), ("target", ["generated", "expert"]),
                           ("direction", ["+", "-"])):
        bad = sorted(set(frame[column]) - set(values))
        if bad:
            raise ValueError(f"Table A.9: unknown {column} value(s) {bad}; expected {values}")
    if frame.empty:
        raise ValueError("Table A.9: the edit_sizes table has no rows")
    ensure_unique(frame, ["level", "target", "direction"], "Table A.9")
    indexed = frame.set_index(["level", "target", "direction"])
    records = []
    for target, direction in A9_INTERVENTIONS:
        present = [level for level in A9_LEVELS if (level, target, direction) in indexed.index]
        if not present:
            continue
        measured = list(dict.fromkeys(indexed.loc[(level, target, direction), "measured"]
                                      for level in present))
        if len(measured) > 1:
            raise ValueError(f"Table A.9: target {target!r} {direction!r} is measured on "
                             f"{measured} at different levels")
        record = {"target": target, "direction": direction, "measured": measured[0]}
        for level in A9_LEVELS:
            for column, (_, decimals) in A9_VALUES.items():
                key = (level, target, direction)
                value = indexed.loc[key, column] if key in indexed.index else float("nan")
                value = pd.to_numeric(value, errors="coerce")
                record[f"{level}_{column}"] = (float("nan") if is_missing(value)
                                               else (int(value) if decimals == 0
                                                     else round(float(value), decimals)))
        records.append(record)
    if not records:
        raise ValueError("Table A.9: no rows for any intervention")
    table = pd.DataFrame(records)
    headers, body = ["Target", "Measured"], []
    for level in A9_LEVELS:
        for column, (header, _) in A9_VALUES.items():
            if level == "rubric":
                header = RUBRIC_HEADERS.get(column, header)
            headers.append(f"{level} {header}".replace("|", "\\|"))  # a literal pipe
    for r in table.to_dict("records"):
        row = [f"{RUBRIC_TITLES.get(r['target'], r['target'])} {r['direction']} "
               f"({DIRECTION_WORDS[r['direction']]})",
               RUBRIC_TITLES.get(r["measured"], r["measured"])]
        for level in A9_LEVELS:
            for column, (_, decimals) in A9_VALUES.items():
                row.append(number_text(r[f"{level}_{column}"], decimals))
        body.append(row)
    caption = ("Table A.9: How much each intervention changes the response, per intervention "
               "(target rubric and direction; measured rubric) at the single-criterion and "
               "whole-rubric levels. |c|: mean words of a targeted criterion; R'−R: words "
               "deleted plus inserted by a word-level diff, mean over interventions; "
               "(R'−R)/|c|, (R'−R)/|C|: those words over the words of the targeted criteria, "
               "summed over the row; |R'|/|R|: mean length ratio.")
    return _document("Table A.9: edit sizes", markdown_table(headers, body), caption), table
