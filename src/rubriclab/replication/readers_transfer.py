"""Readers of transfer's claims (seed 002, resources/replication/claims_transfer.yaml).

Outputs read (rule `replication`'s inputs): `stats` (results/transfer/analysis/stats.csv: every
statistic with its Algorithm 4 paired bootstrap interval), `categories` (Figure 6's shares and
criteria counts), `edit_sizes` (Table A.9), `transfer_examples` and `transfer_left_out` (the
sample and the examples the analysis left out).

The seed's generators are named; a run's are `transfer.generators`, read in the paper's order
(Table A.3: Qwen3.8-27B, Deepseek-V4-Flash, Opus-5), so a claim about Opus-5 reads the third
generator, whatever model it is (the verdict then says "other models"). Q and the other
statistics are fractions in stats.csv; a claim in percent reads them times 100.
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
    output_path,
    percent_rate,
    reads as _reads,
)

PAPER_GENERATORS = ("Qwen3.8-27B", "Deepseek-V4-Flash", "Opus-5")
QWEN, DEEPSEEK, OPUS = range(3)
EXPERT = "expert"
# Figure 4's four metrics: (metric, panel), the generated rubric's row of each
FIGURE4_METRICS = (("llm_matching_f1", ""), ("panel_spearman", "all"),
                   ("physician_spearman", ""), ("discrimination", ""))
# Figure A.4's exceptions, recognised by the model strings a config names them by
FIGURE_A4_EXCEPTIONS = {"Sonnet 4.6": ("sonnet-4-6", "sonnet-4.6"), "Grok 4.20": ("grok-4.20",)}
REDUNDANT = ("one", "several")
MOVING = ("matched", "general")


def _csv(outputs: Outputs, name: str) -> pd.DataFrame:
    path = output_path(outputs, name)
    # the analysis writes NaN for an undefined statistic and "" for an unused key column
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"])


# --------------------------------------------------------------------------- lookups

def _generators(config: Mapping) -> list[str]:
    return list(config["transfer"]["generators"])


def _generator(config: Mapping, place: int) -> str:
    generators = _generators(config)
    if place >= len(generators):
        raise MissingEvidence(
            f"the run has {len(generators)} generator(s) (transfer.generators); "
            f"{PAPER_GENERATORS[place]} is generator {place + 1} in the paper's order")
    return generators[place]


def _main_model(config: Mapping) -> str:
    return str(config["transfer"]["response_model"])


def _stat(stats: pd.DataFrame, metric: str, generator: str, generator_b: str = "",
          response_model: str | None = None, panel: str = "", framing: str = "") -> pd.Series:
    """The one row of stats.csv for these keys (response_model None: any)."""
    chosen = stats[(stats["metric"] == metric) & (stats["generator"] == generator)
                   & (stats["generator_b"] == generator_b) & (stats["panel"] == panel)
                   & (stats["framing"] == framing)]
    if response_model is not None:
        chosen = chosen[chosen["response_model"] == response_model]
    if chosen.empty:
        against = f" - {generator_b}" if generator_b else ""
        on = f" on {response_model}" if response_model else ""
        raise MissingEvidence(f"stats.csv has no {metric} of {generator}{against}{on}")
    if len(chosen) > 1:
        raise ValueError(f"stats.csv has {len(chosen)} rows of {metric} of {generator} "
                         f"(generator_b {generator_b!r}, panel {panel!r}, framing {framing!r}); "
                         "expected one")
    return chosen.iloc[0]


def _interval_text(row: pd.Series, scale: float = 1) -> str:
    return (f"{scale * row['estimate']:.3g} [{scale * row['low']:.3g}, "
            f"{scale * row['high']:.3g}]")


def _defined(row: pd.Series) -> bool:
    return not any(pd.isna(row[c]) for c in ("estimate", "low", "high"))


def _part(name: str, row: pd.Series | None, test: Callable[[pd.Series], bool],
          why_missing: str = "", scale: float = 1) -> Part:
    """A part tested on one stats row: None when the row is absent or its interval undefined."""
    if row is None:
        return Part(name, None, why_missing)
    if not _defined(row):
        return Part(name, None, f"undefined: {_interval_text(row, scale)}")
    return Part(name, bool(test(row)), _interval_text(row, scale))


def _try_stat(stats: pd.DataFrame, *args, **kwargs) -> tuple[pd.Series | None, str]:
    try:
        return _stat(stats, *args, **kwargs), ""
    except MissingEvidence as missing:
        return None, str(missing)


def _meets(low: float, high: float, seed_low: float, seed_high: float) -> bool:
    return low <= seed_high and seed_low <= high


def _measured(row: pd.Series, scale: float, note: str = "") -> Evidence:
    low = None if pd.isna(row["low"]) else scale * float(row["low"])
    high = None if pd.isna(row["high"]) else scale * float(row["high"])
    return Evidence(scale * float(row["estimate"]), low, high, int(row["n_examples"]),
                    note=note or ("no bootstrap interval (undefined on every draw)"
                                  if low is None else ""))


def _examples(stats: pd.DataFrame) -> int:
    if stats.empty:
        raise MissingEvidence("stats.csv is empty")
    return int(stats["n_examples"].max())


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
        parts.append(_part(name, row, lambda r, s=significant: (r["low"] > 0) == s, why))
    return parts


def _difference_part(stats: pd.DataFrame, config: Mapping, metric: str, first: int,
                     second: int, sign: int, response_model: str | None) -> Part:
    """The paired difference first - second: below 0 (sign -1), above 0 (+1) or reaching 0
    (0). stats.csv holds each pair once, in the order of transfer.generators."""
    wanted = {-1: "below 0", 1: "above 0", 0: "reaching 0"}[sign]
    name = (f"{metric}: {PAPER_GENERATORS[first]}'s place - {PAPER_GENERATORS[second]}'s "
            f"{wanted}")
    try:
        a, b = _generator(config, first), _generator(config, second)
    except MissingEvidence as missing:
        return Part(name, None, str(missing))
    flip = first > second
    row, why = _try_stat(stats, metric, *((b, a) if flip else (a, b)),
                         response_model=response_model)
    if row is None:
        return Part(name, None, why)
    if flip:
        row = row.copy()
        row["estimate"], row["low"], row["high"] = -row["estimate"], -row["high"], -row["low"]

    def test(r: pd.Series) -> bool:
        if sign < 0:
            return r["high"] < 0
        if sign > 0:
            return r["low"] > 0
        return r["low"] <= 0 <= r["high"]
    return _part(name, row, test)


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


# --------------------------------------------------------------------------- Figure 4, A.1, A.2, A.4

def _figure4_row(stats: pd.DataFrame, metric: str, panel: str, generator: str,
                 config: Mapping) -> tuple[pd.Series | None, str]:
    if metric == "discrimination":  # the generated rubric's, against the degrader's responses
        return _try_stat(stats, metric, generator, response_model=config["transfer"]["degrader"])
    return _try_stat(stats, metric, generator, panel=panel)


@_reads
def existing_mid_range(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure 4: each generator's four metrics "between 0.3 and 0.75": the bootstrap interval
    meets that range."""
    stats = _csv(outputs, "stats")
    parts = []
    for generator in _generators(config):
        for metric, panel in FIGURE4_METRICS:
            row, why = _figure4_row(stats, metric, panel, generator, config)
            parts.append(_part(f"{generator}: {metric} in 0.3-0.75", row,
                               lambda r: _meets(r["low"], r["high"], 0.3, 0.75), why))
    return Evidence(n=_examples(stats), parts=tuple(parts))


# Table A.4's three significant differences: (metric, first place, second place)
TABLE_A4_EXCEPTIONS = {("llm_matching_f1", QWEN, DEEPSEEK), ("llm_matching_f1", QWEN, OPUS),
                       ("discrimination", QWEN, OPUS)}


@_reads
def existing_pairwise(outputs: Outputs, config: Mapping) -> Evidence:
    """Table A.4: every pairwise difference of Figure 4's metrics reaches 0 but three, where
    Qwen's place is below the other."""
    stats = _csv(outputs, "stats")
    parts = []
    for metric, panel in FIGURE4_METRICS:
        for first, second in ((QWEN, DEEPSEEK), (QWEN, OPUS), (DEEPSEEK, OPUS)):
            sign = -1 if (metric, first, second) in TABLE_A4_EXCEPTIONS else 0
            if panel:
                part = _panel_difference_part(stats, config, metric, panel, first, second, sign)
            else:
                model = config["transfer"]["degrader"] if metric == "discrimination" else ""
                part = _difference_part(stats, config, metric, first, second, sign, model)
            parts.append(part)
    return Evidence(n=_examples(stats), parts=tuple(parts))


def _panel_difference_part(stats: pd.DataFrame, config: Mapping, metric: str, panel: str,
                           first: int, second: int, sign: int) -> Part:
    panelled = stats[stats["panel"] == panel].assign(panel="")
    return _difference_part(panelled, config, metric, first, second, sign, None)


def matching_f1_near(framing: str, seed_low: float, seed_high: float) -> Reader:
    """Each generator's LLM-matching F1 (framing "" : Figure 4's; else Figure A.1's framing)
    with its interval meeting the seed's value at its precision."""
    @_reads
    def read(outputs: Outputs, config: Mapping) -> Evidence:
        stats = _csv(outputs, "stats")
        metric = "framing_f1" if framing else "llm_matching_f1"
        parts = []
        for generator in _generators(config):
            row, why = _try_stat(stats, metric, generator, framing=framing)
            parts.append(_part(f"{generator}: {metric} {framing} in {seed_low}-{seed_high}",
                               row, lambda r: _meets(r["low"], r["high"], seed_low, seed_high),
                               why))
        return Evidence(n=_examples(stats), parts=tuple(parts))
    return read


def _spread_part(name: str, rows: list[pd.Series], what: str) -> Part:
    """Some two rows' intervals apart: the highest estimate's low above the lowest's high."""
    defined = [r for r in rows if _defined(r)]
    if len(defined) < 2:
        return Part(name, None, f"{len(defined)} defined {what}(s); the claim compares two")
    top = max(defined, key=lambda r: r["estimate"])
    bottom = min(defined, key=lambda r: r["estimate"])
    return Part(name, bool(top["low"] > bottom["high"]),
                f"highest {_interval_text(top)}, lowest {_interval_text(bottom)}")


@_reads
def framing_sensitive(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure A.1: per generator, the framings' F1 differ beyond their intervals."""
    stats = _csv(outputs, "stats")
    framed = stats[stats["metric"] == "framing_f1"]
    parts = [_spread_part(f"{generator}: framings' F1 differ",
                          [r for _, r in framed[framed["generator"] == generator].iterrows()],
                          "framing")
             for generator in _generators(config)]
    return Evidence(n=_examples(stats), parts=tuple(parts))


@_reads
def panel_sensitive(outputs: Outputs, config: Mapping) -> Evidence:
    """Figure A.2: per generator the panels' Spearman differ beyond their intervals; the best
    generator is the same on every panel ("the relative ranking ... fairly stable")."""
    stats = _csv(outputs, "stats")
    spearman = stats[(stats["metric"] == "panel_spearman") & (stats["generator_b"] == "")]
    generators = _generators(config)
    parts = [_spread_part(f"{generator}: panels' Spearman differ",
                          [r for _, r in spearman[spearman["generator"] == generator].iterrows()],
                          "panel")
             for generator in generators]
    panels = sorted(set(spearman["panel"]))
    best = {}
    for panel in panels:
        rows = spearman[(spearman["panel"] == panel) & spearman["generator"].isin(generators)]
        rows = rows.dropna(subset=["estimate"])
        if len(rows) >= 2:
            best[panel] = rows.loc[rows["estimate"].idxmax(), "generator"]
    if len(generators) < 2 or len(best) < 2:
        parts.append(Part("the best generator is the same on every panel", None,
                          f"{len(generators)} generator(s), {len(best)} panel(s) ranking two"))
    else:
        parts.append(Part("the best generator is the same on every panel",
                          len(set(best.values())) == 1 and len(best) == len(panels),
                          "; ".join(f"{p}: {g}" for p, g in best.items())))
    return Evidence(n=_examples(stats), parts=tuple(parts))


def _analysable_examples(outputs: Outputs) -> pd.DataFrame:
    examples = _csv(outputs, "transfer_examples")
    left_out = _csv(outputs, "transfer_left_out")
    for table, where in ((examples, "results/transfer/examples.csv"),
                         (left_out, "results/transfer/analysis/left_out.csv")):
        if "example_id" not in table.columns:
            raise MissingEvidence(f"{where} has no column 'example_id'")
    if "has_ideal_completion" not in examples.columns:
        raise MissingEvidence("results/transfer/examples.csv has no column "
                              "'has_ideal_completion'")
    return examples[~examples["example_id"].isin(left_out["example_id"])]


@_reads
def expert_discrimination(outputs: Outputs, config: Mapping) -> Evidence:
    """The expert rubric's discrimination of physician over degraded responses, in percent."""
    stats = _csv(outputs, "stats")
    row = _stat(stats, "discrimination", EXPERT, response_model=config["transfer"]["degrader"])
    return _measured(row, 100)


@_reads
def largest_degradation(outputs: Outputs, config: Mapping) -> Evidence:
    """Table A.5's cap: the largest drop in expert score among the degradation models, with
    that model's bootstrap interval (the maximum is the seed's number, not an average)."""
    stats = _csv(outputs, "stats")
    drops = stats[(stats["metric"] == "degradation_drop")].dropna(subset=["estimate"])
    if drops.empty:
        raise MissingEvidence("stats.csv has no defined degradation_drop")
    row = drops.loc[drops["estimate"].idxmax()]
    others = ", ".join(f"{r.response_model} {100 * r.estimate:.1f}"
                       for r in drops.itertuples(index=False))
    return _measured(row, 100, note=f"largest of: {others}")


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
            parts.append(_part(f"{generator}: {metric} around {seed}", row,
                               lambda r, s=seed: _meets(r["low"], r["high"], s - 0.5, s + 0.5),
                               why))
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


READERS: dict[str, Reader] = {
    "transfer.fig4.mid_range": existing_mid_range,
    "transfer.tableA4.pairwise": existing_pairwise,
    "transfer.figA1.f1_around_half": matching_f1_near("", 0.45, 0.55),
    "transfer.figA1.implies_low": matching_f1_near("implies", 0.05, 0.15),
    "transfer.figA1.framing_sensitive": framing_sensitive,
    "transfer.figA2.panel_sensitive": panel_sensitive,
    "transfer.fig4.expert_discrimination": expert_discrimination,
    "transfer.tableA5.largest_drop": largest_degradation,
    "transfer.fig5.fail_beats_pass": fail_beats_pass,
    **{f"transfer.fig5.generated_lost.{name}": q_metric("Q-(C*->Cg)", place)
       for place, name in enumerate(("qwen", "deepseek", "opus"))},
    **{f"transfer.fig5.expert_lost.{name}": q_metric("Q-(Cg->C*)", place)
       for place, name in enumerate(("qwen", "deepseek", "opus"))},
    "transfer.fig5.opus_gain": q_metric("Q+(Cg->C*)", OPUS),
    "transfer.fig5.gain_only_opus": gain_only_opus,
    "transfer.fig5.qwen_zero_gain": qwen_zero_gain,
    "transfer.fig5.expert_pass_only_qwen": expert_pass_only_qwen,
    "transfer.tableA8.opus_beats_qwen": differences("Q+(Cg->C*)", ((QWEN, OPUS, -1),)),
    "transfer.tableA8.deepseek_detects_degradation": differences(
        "Q-(C*->Cg)", ((DEEPSEEK, QWEN, 1), (DEEPSEEK, OPUS, 1))),
    "transfer.figA4.across_response_models": asymmetry_across_response_models,
    "transfer.tableA6.pass_above_fail": similarity_pass_above_fail,
    "transfer.tableA6.levels": similarity_levels,
    "transfer.fig6.irrelevant_failing": category_rate("gen->expert", "+", ("irrelevant",)),
    "transfer.fig6.irrelevant_passing": category_rate("gen->expert", "-", ("irrelevant",)),
    "transfer.fig6.passing_more_redundant": passing_more_redundant,
    "transfer.fig6.expert_redundancy_passing": category_rate("within", "-", REDUNDANT, EXPERT),
    "transfer.fig6.expert_redundancy_failing": category_rate("within", "+", REDUNDANT, EXPERT),
    "transfer.fig6.expert_most_redundant": expert_most_redundant,
    "transfer.fig6.expert_passing_moves_more": expert_passing_moves_more,
    "transfer.fig6.expert_to_generated_moves_more": expert_to_generated_moves_more,
    "transfer.tableA9.rubric_shortens.generated": length_ratio("rubric", "generated"),
    "transfer.tableA9.rubric_shortens.expert": length_ratio("rubric", "expert"),
    "transfer.tableA9.criterion_shortens.generated": length_ratio("criterion", "generated"),
    "transfer.tableA9.criterion_shortens.expert": length_ratio("criterion", "expert"),
    "transfer.tableA9.fail_edits_more": fail_edits_more,
    "transfer.tableA9.pass_lengthens": pass_lengthens,
}
