"""How far a judge agrees with people beyond chance: Cohen's kappa and Gwet's AC1, with intervals.

On the labelled items, a person's verdict and the judge's are cross-tabulated (pass =
positive): tp both pass, fn human pass and judge fail, fp human fail and judge pass, tn both
fail. Beside TPR and TNR (Wilson intervals, as `correct` shows them) this module reports two
chance-corrected agreement coefficients, per check and over all checks:

- Cohen's kappa, (p_o - p_e) / (1 - p_e) with p_e = the sum over the two verdicts of the
  product of the two raters' shares (Cohen 1960). Its interval is the normal one around the
  large-sample variance of Fleiss, Cohen and Everitt (1969, Psychological Bulletin 72:323-327),
  the variance statsmodels' `cohens_kappa` reports as `var_kappa`. Kappa is undefined (NaN,
  with the reason) when both raters gave every item one and the same verdict: p_e = 1.
- Gwet's AC1, (p_o - p_e) / (1 - p_e) with p_e = 2 pi (1 - pi), pi the mean of the two
  raters' pass shares (Gwet 2008, British Journal of Mathematical and Statistical Psychology
  61:29-48). It stays defined, and does not collapse toward 0, when one verdict dominates.
  Its interval is the normal one around Gwet's (2008) variance for two raters, with no
  finite-population correction (the formula of the irrCAC package, which uses a t quantile
  instead of the normal one).

Both intervals are clipped to [-1, 1]. The pooled row ("all checks") counts every (item,
check) pair as one unit: where one item's checks go together its interval is too narrow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

from rubriclab.methods import tables
from rubriclab.methods.formatting import interval_text, level_text, percent, pipe_table
from rubriclab.methods.tables import InputError
from rubriclab.verify.calibration import Confusion, wilson_interval

ALL_ITEMS, ALL_CHECKS = "all items", "all checks"
AGREEMENT_COLUMNS = ["check_id", "n", "tp", "fn", "fp", "tn", "agreement", "tpr", "tpr_low",
                     "tpr_high", "tnr", "tnr_low", "tnr_high", "kappa", "kappa_low",
                     "kappa_high", "ac1", "ac1_low", "ac1_high", "note"]


@dataclass(frozen=True)
class Coefficient:
    """A chance-corrected agreement coefficient: estimate, standard error, interval (NaN and
    a reason where it is undefined)."""

    estimate: float
    se: float
    low: float
    high: float
    reason: str = ""


@dataclass(frozen=True)
class AgreementResult:
    """What `agreement` returns.

    table: one row per check (in the order the labels first name them) and a pooled row
        ("all checks"), or one row ("all items") when the labels have no check_id:
        check_id, n, the four cells, agreement, TPR and TNR with Wilson intervals, kappa and
        AC1 with their intervals (fractions), and a note that says why a value is missing.
    """

    table: pd.DataFrame
    level: float

    def markdown(self) -> str:
        rows = []
        for r in self.table.itertuples(index=False):
            rows.append([r.check_id, r.n, percent(r.agreement),
                         _share(r.tpr, r.tpr_low, r.tpr_high),
                         _share(r.tnr, r.tnr_low, r.tnr_high),
                         _coefficient(r.kappa, r.kappa_low, r.kappa_high),
                         _coefficient(r.ac1, r.ac1_low, r.ac1_high)])
        notes = [f"{level_text(self.level)} intervals: Wilson for TPR and TNR; normal, around "
                 "the large-sample variance of Fleiss, Cohen and Everitt (1969) for kappa and "
                 "of Gwet (2008) for AC1."]
        notes += [f"{r.check_id}: {r.note}." for r in self.table.itertuples(index=False)
                  if r.note]
        if ALL_CHECKS in set(self.table["check_id"]):
            notes.append(f"'{ALL_CHECKS}' pools every (item, check) pair as one unit: where an "
                         "item's checks go together, its intervals are too narrow.")
        return "\n".join([*pipe_table(["check", "items", "agreement", "TPR", "TNR", "kappa",
                                       "AC1"], rows), "", *notes])


def agreement(labeled: pd.DataFrame, judged: pd.DataFrame | None = None, *,
              level: float = 0.95) -> AgreementResult:
    """Cohen's kappa and Gwet's AC1 between the judge and people, per check and overall.

    labeled: ``item_id``, ``human`` (pass or fail; correct / flawed read as pass / fail), an
        optional ``check_id`` (then one row per item and check, and a row per check) and an
        optional ``judge`` (the judge's verdict); without ``judge`` each row's verdict is read
        from `judged`.
    judged: ``item_id``, ``verdict`` and ``check_id`` if `labeled` has one: the judge's
        verdicts (items without a label are not read).
    Raises `InputError` naming the column at fault.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    source = tables.require_columns(labeled, ["item_id", "human"], "labeled")
    per_check = "check_id" in labeled.columns
    keys = pd.DataFrame({"item_id": tables.ids(labeled, "item_id", source)})
    if per_check:
        keys["check_id"] = tables.ids(labeled, "check_id", source)
    tables.unique_rows(keys, source, "item_id", "item and check" if per_check else "item")
    human = tables.human_verdicts(labeled, "human", source).to_numpy(dtype=bool)
    if "judge" in labeled.columns:
        judge = tables.verdicts(labeled, "judge", source).to_numpy(dtype=bool)
    elif judged is None:
        raise InputError(source.name, "judge", "missing, and no table of the judge's verdicts "
                                               "was given to read them from")
    else:
        judge = _judge_verdicts(keys, source, judged)
    groups: list[tuple[str, np.ndarray]] = []
    if per_check:
        for check in pd.unique(keys["check_id"]):
            groups.append((check, (keys["check_id"] == check).to_numpy()))
        groups.append((ALL_CHECKS, np.ones(len(keys), dtype=bool)))
    else:
        groups.append((ALL_ITEMS, np.ones(len(keys), dtype=bool)))
    rows = [_row(name, human[mask], judge[mask], level) for name, mask in groups]
    table = pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
    return AgreementResult(table, level)


def agreement_counts(confusion: Confusion, *, level: float = 0.95
                     ) -> tuple[Coefficient, Coefficient]:
    """(Cohen's kappa, Gwet's AC1) of one cross-table (pass = positive)."""
    if confusion.n == 0:
        raise ValueError("agreement needs at least one labelled item")
    z = float(norm.ppf(0.5 + level / 2))
    n = confusion.n
    # rows: human pass, human fail; columns: judge pass, judge fail
    p = np.array([[confusion.tp, confusion.fn], [confusion.fp, confusion.tn]], float) / n
    return _kappa(p, n, z), _ac1(p, n, z)


def _kappa(p: np.ndarray, n: int, z: float) -> Coefficient:
    human, judge = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(human @ judge)
    if math.isclose(p_e, 1.0):
        which = "pass" if human[0] == 1 else "fail"
        return Coefficient(math.nan, math.nan, math.nan, math.nan,
                           f"kappa undefined: judge and person gave every item a {which}, so "
                           "chance agreement is 1 and kappa is 0/0")
    kappa = (p_o - p_e) / (1 - p_e)
    # Fleiss, Cohen and Everitt (1969), the large-sample variance of kappa
    diagonal = sum(p[i, i] * (1 - (human[i] + judge[i]) * (1 - kappa)) ** 2 for i in (0, 1))
    off = sum(p[i, j] * (judge[i] + human[j]) ** 2 for i in (0, 1) for j in (0, 1) if i != j)
    variance = (diagonal + (1 - kappa) ** 2 * off - (kappa - p_e * (1 - kappa)) ** 2) \
        / (n * (1 - p_e) ** 2)
    return _interval(kappa, variance, z)


def _ac1(p: np.ndarray, n: int, z: float) -> Coefficient:
    pi = (p.sum(axis=1) + p.sum(axis=0)) / 2
    p_o = float(np.trace(p))
    p_e = float(np.sum(pi * (1 - pi)))  # (1 / (q - 1)) sum_k pi_k (1 - pi_k), q = 2
    ac1 = (p_o - p_e) / (1 - p_e)  # p_e <= 1/2: always defined
    # Gwet (2008), two raters, unweighted, no finite-population correction
    total = sum(p[k, m] * ((k == m) - 2 * (1 - ac1) * (1 - (pi[k] + pi[m]) / 2)) ** 2
                for k in (0, 1) for m in (0, 1))
    variance = (total - (p_o - 2 * (1 - ac1) * p_e) ** 2) / (n * (1 - p_e) ** 2)
    return _interval(ac1, variance, z)


def _interval(estimate: float, variance: float, z: float) -> Coefficient:
    se = math.sqrt(max(variance, 0.0))  # rounding can leave a zero variance slightly negative
    return Coefficient(estimate, se, max(-1.0, estimate - z * se), min(1.0, estimate + z * se))


def _row(name: str, human: np.ndarray, judge: np.ndarray, level: float) -> list:
    confusion = Confusion(tp=int((human & judge).sum()), fn=int((human & ~judge).sum()),
                          fp=int((~human & judge).sum()), tn=int((~human & ~judge).sum()))
    kappa, ac1 = agreement_counts(confusion, level=level)
    notes = [kappa.reason] if kappa.reason else []
    for word, count in (("pass", confusion.n_pos), ("fail", confusion.n_neg)):
        if count == 0:
            rate = "TPR" if word == "pass" else "TNR"
            notes.append(f"no human {word}, so no {rate}")
    return [name, confusion.n, confusion.tp, confusion.fn, confusion.fp, confusion.tn,
            confusion.agreement,
            confusion.tpr, *wilson_interval(confusion.tp, confusion.n_pos, level),
            confusion.tnr, *wilson_interval(confusion.tn, confusion.n_neg, level),
            kappa.estimate, kappa.low, kappa.high, ac1.estimate, ac1.low, ac1.high,
            "; ".join(notes)]


def _judge_verdicts(keys: pd.DataFrame, source: tables.Source, judged: pd.DataFrame
                    ) -> np.ndarray:
    """The judge's verdict on each labelled row, read from `judged` by item (and check)."""
    columns = list(keys.columns)
    judged_source = tables.require_columns(judged, [*columns, "verdict"], "judged")
    judged_keys = pd.DataFrame({c: tables.ids(judged, c, judged_source) for c in columns})
    tables.unique_rows(judged_keys, judged_source, "item_id",
                       "item and check" if len(columns) == 2 else "item")
    verdict = tables.verdicts(judged, "verdict", judged_source)
    lookup = dict(zip(map(tuple, judged_keys.to_numpy()), verdict))
    found = [lookup.get(key) for key in map(tuple, keys.to_numpy())]
    missing = [position for position, value in enumerate(found) if value is None]
    if missing:
        position = missing[0]
        shown = ", ".join(f"{c}={keys.iloc[position][c]!r}" for c in columns)
        raise InputError(judged_source.name, "verdict",
                         f"no verdict for {shown} ({source.name}, {source.row(position)}); "
                         f"{len(missing)} labelled row(s) have none")
    return np.array(found, dtype=bool)


def _share(value, low, high) -> str:
    return "n/a" if pd.isna(value) else f"{percent(value)} {interval_text(low, high)}"


def _coefficient(value, low, high) -> str:
    if pd.isna(value):
        return "n/a"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"
