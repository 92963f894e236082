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

Both intervals are clipped to [-1, 1]. Both variances are the delta method's: the mean
square of each unit's influence value over n (`_influences`). The pooled row ("all checks")
holds every (item, check) pair, but an item's checks are judged together and go together, so
its kappa and AC1 intervals take the item as the unit: the cluster-robust (sandwich) variance,
the influence values summed within each item before they are squared (Cameron and Miller
2015, "A Practitioner's Guide to Cluster-Robust Inference", J. Human Resources 50:317-372;
Binder 1983, Int. Statistical Review 51:279-292, for such estimators of complex samples).
With one check per item it is the variance above; with every check of an item a copy of one
verdict it is one check's. The pooled TPR and TNR take Wilson's interval at the effective
number of pairs (Korn and Graubard's design effect, `_rate_interval`).
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
            notes.append(f"'{ALL_CHECKS}' pools every (item, check) pair; its kappa and AC1 "
                         "intervals take the item as the unit (cluster-robust variance), as an "
                         "item's checks go together, and its TPR and TNR intervals the "
                         "effective number of pairs.")
        return "\n".join([*pipe_table(["check", "items", "agreement", "TPR", "TNR", "kappa",
                                       "AC1"], rows), "", *notes])


def agreement(labeled: pd.DataFrame, judged: pd.DataFrame | None = None, *,
              label_column: str = "human", level: float = 0.95) -> AgreementResult:
    """Cohen's kappa and Gwet's AC1 between the judge and people, per check and overall.

    labeled: ``item_id``, ``human`` (pass or fail; correct / flawed read as pass / fail), an
        optional ``check_id`` (then one row per item and check, and a row per check) and an
        optional ``judge`` (the judge's verdict); without ``judge`` each row's verdict is read
        from `judged`.
    judged: ``item_id``, ``verdict`` and ``check_id`` if `labeled` has one: the judge's
        verdicts (items without a label are not read).
    One file instead of two, as for `correct`: with `judged` None and no ``judge`` column,
    `labeled` is the judge's long-format log, ``item_id``, optional ``check_id``, ``verdict``
    on every row, and people's verdicts in `label_column`, filled for the labelled rows only
    (tables.one_file; rows without a label are not read).
    Raises `InputError` naming the column at fault.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if (judged is None and isinstance(labeled, pd.DataFrame) and "judge" not in labeled.columns
            and "verdict" in labeled.columns):
        keys = ["item_id", "check_id"] if "check_id" in labeled.columns else ["item_id"]
        judged, labeled = tables.one_file(labeled, label_column, table="labeled", keys=keys)
    elif label_column != "human":
        raise InputError("label_column", None, f"{label_column!r} names the label column of the "
                         "one-file form: one table with a verdict column, no judge column and "
                         "no second table")
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
                                               "was given to read them from (nor is there a "
                                               "verdict column, the one-file form)")
    else:
        judge = _judge_verdicts(keys, source, judged)
    groups: list[tuple[str, np.ndarray]] = []
    if per_check:
        for check in pd.unique(keys["check_id"]):
            groups.append((check, (keys["check_id"] == check).to_numpy()))
        groups.append((ALL_CHECKS, np.ones(len(keys), dtype=bool)))
    else:
        groups.append((ALL_ITEMS, np.ones(len(keys), dtype=bool)))
    items = keys["item_id"].to_numpy()
    rows = [_row(name, human[mask], judge[mask], level,
                 clusters=items[mask] if name == ALL_CHECKS else None)
            for name, mask in groups]
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


def clustered_counts(human: np.ndarray, judge: np.ndarray, clusters: np.ndarray, *,
                     level: float = 0.95) -> tuple[Coefficient, Coefficient]:
    """(Cohen's kappa, Gwet's AC1) of paired verdicts (True = pass), their variances
    cluster-robust: units of one cluster (an item's checks) may go together."""
    human, judge = np.asarray(human, dtype=bool), np.asarray(judge, dtype=bool)
    confusion = Confusion(tp=int((human & judge).sum()), fn=int((human & ~judge).sum()),
                          fp=int((~human & judge).sum()), tn=int((~human & ~judge).sum()))
    kappa, ac1 = agreement_counts(confusion, level=level)
    z = float(norm.ppf(0.5 + level / 2))
    _, groups = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    n = len(human)
    out = []
    for coefficient, values in zip((kappa, ac1), _influences(human, judge, kappa, ac1)):
        if math.isnan(coefficient.estimate):
            out.append(coefficient)
            continue
        sums = np.bincount(groups, weights=values)
        out.append(_interval(coefficient.estimate, float(sums @ sums) / n ** 2, z))
    return out[0], out[1]


def _influences(human: np.ndarray, judge: np.ndarray, kappa: Coefficient, ac1: Coefficient
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's influence value on kappa and on AC1 (delta method); the mean of their
    squares over n is the variance of `_kappa` and of `_ac1` (units independent)."""
    h, j = np.where(human, 0, 1), np.where(judge, 0, 1)  # 0 pass, 1 fail, as the table's rows
    n = len(h)
    p = np.zeros((2, 2))
    np.add.at(p, (h, j), 1.0 / n)
    shares_h, shares_j = p.sum(axis=1), p.sum(axis=0)
    agree = (h == j).astype(float)
    p_o = float(np.trace(p))
    p_e = float(shares_h @ shares_j)
    values = []
    if not math.isnan(kappa.estimate):  # p_e here is kappa's chance term
        chance = shares_j[h] + shares_h[j] - 2 * p_e
        values.append(((agree - p_o) - (1 - kappa.estimate) * chance) / (1 - p_e))
    else:
        values.append(np.full(n, math.nan))
    pi = (shares_h + shares_j) / 2
    p_e1 = float(np.sum(pi * (1 - pi)))
    term = agree - 2 * (1 - ac1.estimate) * (1 - (pi[h] + pi[j]) / 2)
    values.append((term - (p_o - 2 * (1 - ac1.estimate) * p_e1)) / (1 - p_e1))
    return values[0], values[1]


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


def _row(name: str, human: np.ndarray, judge: np.ndarray, level: float,
         clusters: np.ndarray | None = None) -> list:
    confusion = Confusion(tp=int((human & judge).sum()), fn=int((human & ~judge).sum()),
                          fp=int((~human & judge).sum()), tn=int((~human & ~judge).sum()))
    kappa, ac1 = agreement_counts(confusion, level=level) if clusters is None \
        else clustered_counts(human, judge, clusters, level=level)
    notes = [kappa.reason] if kappa.reason else []
    for word, count in (("pass", confusion.n_pos), ("fail", confusion.n_neg)):
        if count == 0:
            rate = "TPR" if word == "pass" else "TNR"
            notes.append(f"no human {word}, so no {rate}")
    return [name, confusion.n, confusion.tp, confusion.fn, confusion.fp, confusion.tn,
            confusion.agreement,
            confusion.tpr, *_rate_interval(judge, human, clusters, level),
            confusion.tnr, *_rate_interval(~judge, ~human, clusters, level),
            kappa.estimate, kappa.low, kappa.high, ac1.estimate, ac1.low, ac1.high,
            "; ".join(notes)]


def _rate_interval(hits: np.ndarray, among: np.ndarray, clusters: np.ndarray | None,
                   level: float) -> tuple[float, float]:
    """Wilson's interval of the share of `hits` among the `among` units; with `clusters`, at
    Korn and Graubard's effective size n / deff (1998, "Confidence intervals for proportions
    with small expected number of positive counts estimated from survey data", Survey
    Methodology 24:193-201): deff, at least 1, is the cluster-robust variance of the share (a
    ratio of sums over clusters) over the binomial one; where the share is 0 or 1 and so
    carries no variance to compare, each cluster counts once."""
    k, n = int((hits & among).sum()), int(among.sum())
    if clusters is None or n == 0:
        return wilson_interval(k, n, level)
    _, groups = np.unique(np.asarray(clusters)[among].astype(str), return_inverse=True)
    rate = k / n
    if rate in (0.0, 1.0):
        n_eff = float(groups.max() + 1)
    else:
        residuals = np.bincount(groups, weights=hits[among] - rate)
        deff = max(1.0, float(residuals @ residuals) / n ** 2 / (rate * (1 - rate) / n))
        n_eff = n / deff
    return _wilson(rate, n_eff, level)


def _wilson(rate: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's score interval at a real-valued size (scipy's binomtest takes counts only)."""
    z = float(norm.ppf(0.5 + level / 2))
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    low = 0.0 if rate == 0 else max(0.0, centre - half)
    return low, 1.0 if rate == 1 else min(1.0, centre + half)


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
