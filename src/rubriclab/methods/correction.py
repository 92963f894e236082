"""What a judge's pass rate means once its errors are known: Rogan-Gladen and PPI.

A thin layer over verify's calibration code (rubriclab.verify.calibration, which computes the
estimates with rubriclab.stats.prevalence): it counts the judge's passes and its agreement
with people from two tables and returns the corrected rate, with the interval the coverage
study chose for it (`CORRECT_METHOD`, docs/statistics.md) and the flags that say when not to
trust it, and the prediction-powered estimate beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rubriclab.methods import tables
from rubriclab.methods.formatting import interval_text, level_text, percent, pipe_table
from rubriclab.methods.tables import InputError
from rubriclab.stats import exact_prevalence
from rubriclab.verify.calibration import (
    COVERAGE_CHECK_REPLICATES, INTERVAL_METHODS, Confusion, CorrectedRate,
    PPIRate, corrected_pass_rate, ppi_pass_rate,
)

# The narrowest interval that covered at least 95% in every cell of every size of the coverage
# study (rubriclab.stats.coverage_report.decisions, "correct_default"; docs/statistics.md).
CORRECT_METHOD = "exact"

# An exact interval wider than this (as a share) gets a note saying why and what narrows it.
WIDE = 0.5

ESTIMATE_COLUMNS = ["estimate", "count", "n", "value", "low", "high"]
DESIGNS = {"subset": "the labeled items are among the judged ones",
           "independent": "the labeled items are apart from the judged ones"}


@dataclass(frozen=True)
class CorrectionResult:
    """What `correct` and `correct_counts` return.

    rogan_gladen: verify's CorrectedRate (estimate, interval, status, flags, ...).
    ppi: verify's PPIRate, the prediction-powered estimate of the human pass rate.
    table: one row per estimate: judge pass rate, TPR, TNR, agreement, Rogan-Gladen
        corrected, PPI; count and n where it is a share, value and (low, high) as fractions.
        The corrected rate and PPI are shown clipped to [0, 1] (the raw values are in the
        two objects); the shares' intervals are Wilson's.
    flags: every reason the corrected interval is not to be trusted (empty: none).
    """

    rogan_gladen: CorrectedRate
    ppi: PPIRate
    design: str
    table: pd.DataFrame

    @property
    def flags(self) -> tuple[str, ...]:
        return self.rogan_gladen.flags

    def markdown(self) -> str:
        rg = self.rogan_gladen
        rows = []
        for r in self.table.itertuples(index=False):
            count = f"{r.count} of {r.n}" if pd.notna(r.count) else ""
            rows.append([r.estimate, count, percent(r.value), interval_text(r.low, r.high)])
        method = INTERVAL_METHODS[rg.method]
        notes = [f"Design: {DESIGNS[self.design]}. Corrected interval: {method}; the shares' "
                 "intervals are Wilson's."]
        if rg.rg.message:
            notes.append(f"Note: {rg.rg.message}.")
        notes += _why_wide(rg)
        notes.append("Flags: " + ("; ".join(self.flags) if self.flags else "none") + ".")
        return "\n".join([*pipe_table(["estimate", "items", "value",
                                       f"{level_text(rg.level)} interval"], rows), "", *notes])


def _why_wide(rg: CorrectedRate) -> list[str]:
    """Where the exact interval is wider than WIDE: the TPR and TNR its guarantee must hold for
    (their Clopper-Pearson intervals at the level exact_prevalence gives each rate), and what
    narrows it."""
    if rg.method != "exact" or rg.interval is None:
        return []
    low, high = (min(1.0, max(0.0, bound)) for bound in rg.interval)
    if high - low <= WIDE:
        return []
    share = exact_prevalence.rate_level(rg.level)
    c = rg.confusion
    (tpr_low, tnr_low), (tpr_high, tnr_high) = exact_prevalence.clopper_pearson_rows(
        [c.tp, c.tn], [c.n_pos, c.n_neg], share)
    wider = "fails" if tnr_high - tnr_low > tpr_high - tpr_low else "passes"
    return [f"Why so wide: the guarantee must hold for any TPR in "
            f"{interval_text(tpr_low, tpr_high)} and TNR in {interval_text(tnr_low, tnr_high)} "
            f"(each at {percent(share)}), what {c.n_pos} human passes and {c.n_neg} human fails "
            f"leave possible. More human {wider} labelled narrow it fastest (`rubriclab "
            "labels-needed` says how many); `--method lang_reiczigel` is narrower, without the "
            "guarantee (docs/statistics.md)."]


def correct(judged: pd.DataFrame, labeled: pd.DataFrame | None = None, *,
            label_column: str = "human", level: float = 0.95,
            method: str = CORRECT_METHOD, check_replicates: int = COVERAGE_CHECK_REPLICATES,
            n_boot: int = 10_000, seed: int = 0, power_tuned: bool = False,
            ) -> CorrectionResult:
    """The judge's pass rate corrected for its errors, from its verdicts and a labeled sample.

    judged: the judge's verdict on every item it graded: ``item_id``, ``verdict`` (pass or
        fail).
    labeled: the labeled sample: ``item_id``, ``human`` (a person's pass or fail; correct /
        flawed read as pass / fail) and, optionally, ``judge`` (the judge's verdict). Without
        ``judge`` each labeled item's verdict is read from `judged`.
    Design: when every labeled item is among the judged ones (a random subset of them, as in
    verify's worked example), the pass rate is the judge's on the whole judged set and PPI uses
    the judged items without a label; when none is, they are two samples of one population.
    A sample that is partly both is refused.

    level, method (one of verify.calibration.INTERVAL_METHODS), n_boot and seed (bootstrap
    methods only), check_replicates (the coverage check at these sizes; 0 skips it) and
    power_tuned (PPI++) are passed on to rubriclab.verify.calibration.
    One file instead of two: with `labeled` None, `judged` holds every item's ``verdict`` and,
    for the labelled items only, a person's verdict in `label_column` (empty elsewhere), as
    truescore takes them (tables.one_file).
    Raises `InputError` naming the column at fault.
    """
    if labeled is None:
        judged, labeled = tables.one_file(judged, label_column)
    elif label_column != "human":
        raise InputError("label_column", None, f"{label_column!r} names the label column of the "
                         "one-file form: give no labeled table with it")
    judged_source = tables.require_columns(judged, ["item_id", "verdict"], "judged")
    judged_ids = tables.ids(judged, "item_id", judged_source)
    judged_pass = tables.verdicts(judged, "verdict", judged_source)
    tables.unique_rows(pd.DataFrame({"item_id": judged_ids}), judged_source, "item_id", "item")
    verdict_of = dict(zip(judged_ids, judged_pass))

    source = tables.require_columns(labeled, ["item_id", "human"], "labeled")
    labeled_ids = tables.ids(labeled, "item_id", source)
    human = tables.human_verdicts(labeled, "human", source)
    tables.unique_rows(pd.DataFrame({"item_id": labeled_ids}), source, "item_id", "item")
    inside = labeled_ids.isin(verdict_of).to_numpy()
    if inside.any() and not inside.all():
        position = int((~inside).nonzero()[0][0])
        raise InputError(source.name, "item_id",
                         f"{source.row(position)}: {int(inside.sum())} of the {len(inside)} "
                         f"labeled items are among the judged ones and the rest are not; "
                         "the sample must be all of one or the other (item "
                         f"{labeled_ids.iloc[position]!r} is not judged)")
    subset = bool(inside.all())
    if "judge" in labeled.columns:
        judge = tables.verdicts(labeled, "judge", source)
        if subset:
            differs = (judge.to_numpy() != labeled_ids.map(verdict_of).to_numpy())
            if differs.any():
                position = int(differs.nonzero()[0][0])
                raise InputError(source.name, "judge",
                                 f"{source.row(position)}: the judge's verdict on item "
                                 f"{labeled_ids.iloc[position]!r} differs from its verdict in "
                                 f"{judged_source.name}")
    elif subset:
        judge = labeled_ids.map(verdict_of)
    else:
        raise InputError(source.name, "judge",
                         "missing: the labeled items are not among the judged ones, so the "
                         "judge's verdicts on them must be given here")
    h, j = human.to_numpy(dtype=bool), judge.to_numpy(dtype=bool)
    confusion = Confusion(tp=int((h & j).sum()), fn=int((h & ~j).sum()),
                          fp=int((~h & j).sum()), tn=int((~h & ~j).sum()))
    for word, n in (("pass", confusion.n_pos), ("fail", confusion.n_neg)):
        if n == 0:
            raise InputError(source.name, "human", f"no item has a human {word}: the judge's "
                                                   "TPR and TNR need both")
    return correct_counts(int(judged_pass.sum()), len(judged_pass), confusion,
                          labelled_in_judged=subset, level=level, method=method,
                          check_replicates=check_replicates, n_boot=n_boot, seed=seed,
                          power_tuned=power_tuned)


def correct_counts(k_judged_pass: int, n_judged: int, confusion: Confusion, *,
                   labelled_in_judged: bool, level: float = 0.95, method: str = CORRECT_METHOD,
                   check_replicates: int = COVERAGE_CHECK_REPLICATES, n_boot: int = 10_000,
                   seed: int = 0, power_tuned: bool = False) -> CorrectionResult:
    """`correct` from counts: the judge passed k of n judged items; `confusion` cross-tables
    people (pass = positive) and the judge on the labeled sample."""
    rg = corrected_pass_rate(k_judged_pass, n_judged, confusion, method=method, n_boot=n_boot,
                             seed=seed, level=level, labelled_in_judged=labelled_in_judged,
                             check_replicates=check_replicates)
    ppi = ppi_pass_rate(k_judged_pass, n_judged, confusion, level=level,
                        power_tuned=power_tuned, labelled_in_judged=labelled_in_judged)
    clipped = rg.interval_clipped or (None, None)
    rows = [
        ("judge pass rate", k_judged_pass, n_judged, rg.q, *rg.q_interval),
        ("true positive rate (judge passes a human pass)", confusion.tp, confusion.n_pos,
         rg.tpr, *rg.tpr_interval),
        ("true negative rate (judge fails a human fail)", confusion.tn, confusion.n_neg,
         rg.tnr, *rg.tnr_interval),
        ("agreement", confusion.tp + confusion.tn, confusion.n, confusion.agreement,
         None, None),
        ("Rogan-Gladen corrected pass rate", None, None, rg.rg.clipped, *clipped),
        (f"PPI{'++' if power_tuned else ''} pass rate", None, None, ppi.clipped,
         *ppi.interval_clipped),
    ]
    table = pd.DataFrame(rows, columns=ESTIMATE_COLUMNS).astype({"count": "Int64", "n": "Int64"})
    return CorrectionResult(rg, ppi, "subset" if labelled_in_judged else "independent", table)
