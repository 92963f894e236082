"""Readers of transfer's claims on whole-rubric interventions: Figure 5 and Table A.8 (Q of
each generator, their differences), Figure A.4 (the asymmetry on other response models) and
Table A.9 (the edits' sizes). See rubriclab.replication.readers_transfer for the
conventions.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    Evidence,
    MissingEvidence,
    Outputs,
    Part,
    Reader,
    reads as _reads,
)
from rubriclab.replication.readers_transfer_common import (
    DEEPSEEK,
    OPUS,
    PAPER_GENERATORS,
    QWEN,
    _csv,
    _defined,
    _difference_part,
    _examples,
    _generator,
    _generators,
    _interval_text,
    _main_model,
    _measured,
    _part,
    _stat,
    _try_stat,
)

# Figure A.4's exceptions, recognised by the model strings a config names them by
FIGURE_A4_EXCEPTIONS = {"Sonnet 4.6": ("sonnet-4-6", "sonnet-4.6"), "Grok 4.20": ("grok-4.20",)}


# --------------------------------------------------------------------------- Figure 5, A.4, A.8

def q_metric(metric: str, place: int, scale: float = 100) -> Reader:
    """One generator's Q on the main response model, with its bootstrap interval."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        generator = _generator(config, place)
        row = _stat(_csv(outputs, "stats"), metric, generator, response_model=_main_model(config))
        return _measured(row, scale, note=f"generator {generator}")
    return read


def _asymmetry_parts(stats: pd.DataFrame, generators: Iterable[str], model: str,
                     label: str = "") -> list[Part]:
    """Q- above Q+ (intervals apart) for each generator and target rubric."""
    parts = []
    for generator in generators:
        for target, minus, plus in (("generated", "Q-(Cg->C*)", "Q+(Cg->C*)"),
                                    ("expert", "Q-(C*->Cg)", "Q+(C*->Cg)")):
            name = f"{label}{generator}, target {target}: Q- above Q+"
            fail, why_fail = _try_stat(stats, minus, generator, response_model=model)
            passing, why_pass = _try_stat(stats, plus, generator, response_model=model)
            if fail is None or passing is None:
                parts.append(Part(name, None, why_fail or why_pass))
            elif not (_defined(fail) and _defined(passing)):
                parts.append(Part(name, None, f"undefined: Q- {_interval_text(fail)}, "
                                              f"Q+ {_interval_text(passing)}"))
            else:
                parts.append(Part(name, bool(fail["low"] > passing["high"]),
                                  f"Q- {_interval_text(fail)}, Q+ {_interval_text(passing)}"))
    return parts


@_reads
def fail_beats_pass(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure 5: for every generator and both target rubrics, intervening to fail moves the
    measurement rubric more than intervening to pass ("far greater": the two bootstrap
    intervals apart), on the main response model."""
    stats = _csv(outputs, "stats")
    parts = _asymmetry_parts(stats, _generators(config), _main_model(config))
    return Evidence(n=_examples(stats), parts=tuple(parts))


@_reads
def asymmetry_across_response_models(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure A.4: the same asymmetry on every response model but the two the seed names as
    exceptions, on which it fails. Needs a response model besides the main one."""
    stats = _csv(outputs, "stats")
    models = list(dict.fromkeys(stats.loc[stats["family"] == "it", "response_model"]))
    others = [m for m in models if m != _main_model(config)]
    parts = [Part("a response model besides the main one", bool(others) or None,
                  f"{len(models)} response model(s) in Figure A.4" if others else
                  "the run has only the main response model (transfer.it_response_models)")]
    absent = []
    for name, spellings in FIGURE_A4_EXCEPTIONS.items():
        if not any(s in m.lower() for m in models for s in spellings):
            absent.append(name)
    for model in others:
        exception = next((name for name, spellings in FIGURE_A4_EXCEPTIONS.items()
                          if any(s in model.lower() for s in spellings)), None)
        asymmetry = _asymmetry_parts(stats, _generators(config), model, f"{model}: ")
        if exception is None:
            parts += asymmetry
            continue
        tested = [p for p in asymmetry if p.holds is not None]
        holds = None if len(tested) < len(asymmetry) else not all(p.holds for p in tested)
        parts.append(Part(f"{model} ({exception}): the asymmetry does not hold everywhere",
                          holds, "; ".join(f"{p.name}: {p.detail}" for p in asymmetry)))
    note = (f"exception(s) not among the run's response models: {', '.join(absent)}"
            if absent else "")
    return Evidence(n=_examples(stats), parts=tuple(parts), note=note)


def _significance_parts(stats: pd.DataFrame, config: Mapping, metric: str,
                        above_zero: dict[int, bool]) -> list[Part]:
    """For each generator place: its Q's interval above 0 (True) or reaching 0 (False)."""
    parts = []
    model = _main_model(config)
    for place, significant in above_zero.items():
        name = (f"{PAPER_GENERATORS[place]}'s place: {metric} "
                f"{'significantly above 0' if significant else 'not significantly above 0'}")
        try:
            generator = _generator(config, place)
        except MissingEvidence as missing:
            parts.append(Part(name, None, str(missing)))
            continue
        row, why = _try_stat(stats, metric, generator, response_model=model)

        def above_zero_as_claimed(r: pd.Series, s: bool = significant) -> bool:
            return (r["low"] > 0) == s

        parts.append(_part(name, row, above_zero_as_claimed, why))
    return parts


@_reads
def gain_only_opus(outputs: Outputs, config: Mapping) -> Evidence:
    """"the gain is significantly above 0 only for Opus-5" (and Qwen's "zero improvement")."""
    stats = _csv(outputs, "stats")
    return Evidence(n=_examples(stats), parts=tuple(_significance_parts(
        stats, config, "Q+(Cg->C*)", {QWEN: False, DEEPSEEK: False, OPUS: True})))


@_reads
def qwen_zero_gain(outputs: Outputs, config: Mapping) -> Evidence:
    """"we observe zero improvement in expert rubric scores when intervening on responses to
    pass Qwen3.8-27B generated rubrics": Qwen's place's Q+(Cg->C*) interval reaches 0."""
    stats = _csv(outputs, "stats")
    return Evidence(n=_examples(stats), parts=tuple(_significance_parts(
        stats, config, "Q+(Cg->C*)", {QWEN: False})))


@_reads
def expert_pass_only_qwen(outputs: Outputs, config: Mapping) -> Evidence:
    """Q+(C*->Cg) significantly above 0 only for Qwen, and Qwen's not significantly above the
    others'."""
    stats = _csv(outputs, "stats")
    metric = "Q+(C*->Cg)"
    parts = _significance_parts(stats, config, metric,
                                {QWEN: True, DEEPSEEK: False, OPUS: False})
    parts += [_difference_part(stats, config, metric, QWEN, other, 0, _main_model(config))
              for other in (DEEPSEEK, OPUS)]
    return Evidence(n=_examples(stats), parts=tuple(parts))


def differences(metric: str, pairs: tuple[tuple[int, int, int], ...]) -> Reader:
    """Table A.8: paired differences of one Q between generator places, each (first, second,
    sign) with sign -1 / +1 / 0 for an interval below / above / reaching 0."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        stats = _csv(outputs, "stats")
        return Evidence(n=_examples(stats), parts=tuple(
            _difference_part(stats, config, metric, first, second, sign, _main_model(config))
            for first, second, sign in pairs))
    return read


# --------------------------------------------------------------------------- Table A.9

def _edit_row(outputs: Outputs, level: str, target: str, direction: str) -> pd.Series:
    sizes = _csv(outputs, "edit_sizes")
    rows = sizes[(sizes["level"] == level) & (sizes["target"] == target)
                 & (sizes["direction"] == direction)]
    if rows.empty:
        raise MissingEvidence(f"edit_sizes.csv has no {level} row, target {target}, "
                              f"direction {direction!r}")
    return rows.iloc[0]


def length_ratio(level: str, target: str) -> Reader:
    """Table A.9: |R'|/|R| of the fail interventions, in percent (a mean over interventions;
    the pipeline writes no interval for it)."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        row = _edit_row(outputs, level, target, "-")
        return Evidence(100 * float(row["mean_length_ratio"]), n=int(row["n_interventions"]),
                        note="a mean over interventions, no interval")
    return read


def _edit_parts(outputs: Outputs, name: str,
                test: Callable[[pd.Series, pd.Series], tuple[bool, str]]) -> Evidence:
    parts, n = [], 0
    for level in ("rubric", "criterion"):
        for target in ("generated", "expert"):
            label = f"{level}, target {target}: {name}"
            try:
                fail = _edit_row(outputs, level, target, "-")
                passing = _edit_row(outputs, level, target, "+")
            except MissingEvidence as missing:
                parts.append(Part(label, None, str(missing)))
                continue
            holds, detail = test(fail, passing)
            parts.append(Part(label, holds, detail))
            n += int(fail["n_interventions"]) + int(passing["n_interventions"])
    return Evidence(parts=tuple(parts), n=n)


@_reads
def fail_edits_more(outputs: Outputs, config: Mapping) -> Evidence:
    column = "edit_words_per_criterion_word"
    return _edit_parts(outputs, "fail edits more per criterion word", lambda f, p: (
        bool(f[column] > p[column]), f"fail {f[column]:.3g} vs pass {p[column]:.3g}"))


@_reads
def pass_lengthens(outputs: Outputs, config: Mapping) -> Evidence:
    column = "mean_length_ratio"
    return _edit_parts(outputs, "pass lengthens the response", lambda f, p: (
        bool(p[column] > 1), f"pass |R'|/|R| {p[column]:.3g}"))
