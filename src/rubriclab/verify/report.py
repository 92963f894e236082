"""verify's calibration table and Figure 2: reported and Rogan-Gladen corrected pass rates.

Rows: the worked example's own numbers, and carry's Figure 2 judge on each human-labelled
dataset and rendering, calibrated on the calibration split (the labelled slice) and corrected on
the evaluation split (the judged set), where the human pass rate is known and shown beside it.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")

from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from rubriclab.carry.aggregate import item_outcomes  # noqa: E402
from rubriclab.labels import DATASET_TITLES, ModelLabels  # noqa: E402
from rubriclab.plotting import axes_text, fit_to_axes  # noqa: E402

from .calibration import (  # noqa: E402
    INTERVAL_METHODS,
    POST_CONFUSION,
    POST_JUDGED,
    Confusion,
    confusion_from_verdicts,
    corrected_pass_rate,
    ppi_pass_rate,
)

RENDERING_NAMES = {"per_check": "one call per check", "paragraph": "paragraph"}
RG_COLOR, PPI_COLOR, PPI_TEXT_COLOR = "#1f77b4", "#ff7f0e", "#a05000"


PPI_COLUMNS = ["ppi", "ppi_clipped", "ppi_low", "ppi_high", "ppi_low_clipped",
               "ppi_high_clipped", "ppi_method", "ppi_k_unlabelled", "ppi_n_unlabelled"]


def post_row(n_boot: int, seed: int, level: float) -> dict:
    """The post's numbers; its 50 labelled replies are a random subset of the 400 judged, so
    PPI applies beside Rogan-Gladen."""
    corrected = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=n_boot, seed=seed,
                                    level=level, labelled_in_judged=True)
    ppi = ppi_pass_rate(*POST_JUDGED, POST_CONFUSION, level=level)
    return {"source": "worked example (the post's numbers)", "dataset": "refund replies",
            "rendering": "four-criterion rubric", "judge": "the post's judge",
            "human_pass_rate": None, "labelled_in_judged": True, **corrected.to_dict(),
            **ppi.to_dict()}


def carry_judge_rows(verdicts: pd.DataFrame, items: pd.DataFrame, dataset: str, judge: str,
                     length: int, n_boot: int, seed: int, level: float) -> list[dict]:
    """Calibrate on the calibration split, correct the evaluation split's judge pass rate.

    Items whose outcome is undetermined (an unparseable verdict decides it) are left out of
    both, and counted in `n_undetermined`.
    """
    outcomes = item_outcomes(verdicts, [length])
    outcomes = outcomes.merge(items[["item_id", "split"]], on="item_id", how="left",
                              validate="many_to_one")
    if outcomes["split"].isna().any():
        missing = outcomes.loc[outcomes["split"].isna(), "item_id"].iloc[0]
        raise ValueError(f"{dataset}: verdicts name item {missing!r}, which is not in the items")
    rows = []
    for (rendering, run), group in outcomes.groupby(["rendering", "run"], sort=True):
        determined = group[group["outcome"] != "undetermined"]
        labelled = determined[determined["split"] == "calibration"]
        judged = determined[determined["split"] == "evaluation"]
        confusion = confusion_from_verdicts(
            (labelled["label"] == "correct").tolist(), (labelled["outcome"] == "pass").tolist())
        corrected = corrected_pass_rate(int((judged["outcome"] == "pass").sum()), len(judged),
                                        confusion, n_boot=n_boot, seed=seed, level=level)
        rows.append({
            "source": f"carry Figure 2 judge, {length} checks, run {run}",
            "dataset": dataset, "rendering": RENDERING_NAMES[rendering], "judge": judge,
            "human_pass_rate": float((judged["label"] == "correct").mean()),
            "n_undetermined": int((group["outcome"] == "undetermined").sum()),
            # the calibration split is not part of the evaluation split: no PPI
            "labelled_in_judged": False, **corrected.to_dict(),
            **dict.fromkeys(PPI_COLUMNS),
        })
    return rows


def _pct(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{100 * float(value):.1f}"


def _interval(low: Any, high: Any) -> str:
    return "n/a" if low is None or pd.isna(low) else f"[{_pct(low)}, {_pct(high)}]"


def _shown(raw: Any, clipped: Any) -> str:
    """A rate clipped to [0, 1] for display, with its raw value beside it when they differ."""
    if raw is None or pd.isna(raw):
        return "n/a"
    if float(raw) == float(clipped):
        return _pct(raw)
    return f"{_pct(clipped)} (raw {_pct(raw)})"


def _flags(row: object) -> str:
    flags = getattr(row, "interval_flags", "")
    if not isinstance(flags, str) or not flags:
        return "ok"
    return "unstable: " + flags


def calibration_markdown(table: pd.DataFrame) -> str:
    methods = sorted(set(table["method"]))
    rg_method = "; ".join(INTERVAL_METHODS[m] for m in methods)
    lines = [
        "# verify: judge calibration and the corrected pass rate",
        "",
        "TPR and TNR come from the labelled slice (the post's 50 hand-labelled replies; the",
        "calibration split of each dataset). The reported rate q is the judge's pass rate on the",
        "judged set (the post's 400 replies; the evaluation split). Rogan-Gladen corrects it as",
        "p = (q - (1 - TNR)) / (TPR - (1 - TNR)); PPI (prediction-powered inference) estimates",
        "the human pass rate as the judge's rate on the unlabelled judged items plus the mean",
        "(human - judge) on the labelled ones, and applies only where the labelled slice is a",
        "random subset of the judged set (the post; not the datasets, whose calibration split is",
        "apart from the evaluation split). Percent; 95% intervals unless the csv's `level` says",
        "otherwise.",
        "",
        "Interval methods, by column: reported q and TPR/TNR (csv), Wilson score interval;",
        f"Rogan-Gladen p, {rg_method}",
        "(the default chosen by the coverage study, docs/statistics.md); PPI p, the normal",
        "interval of PPI (Angelopoulos et al., 2023). Estimates and intervals are shown clipped",
        "to [0, 100] with raw values beside estimates outside it; the csv keeps every raw value.",
        "An interval is flagged unstable, with the reason, when it has no bound, when its raw",
        "form is wider than [0, 100], when many bootstrap draws were undefined, or when the",
        "coverage check at its own sizes (the study's simulation, run in a world with the row's",
        "estimated rates and its numbers of labelled and judged items) finds it covering fewer",
        "than 93% of simulated studies (csv: `check_coverage`, `check_undefined`).",
        "",
        "| source | dataset | rendering | labels (pass/fail) | TPR | TNR | agreement |"
        " reported q [Wilson] | Rogan-Gladen p | Rogan-Gladen interval | PPI p | PPI interval"
        " | human pass rate | status | interval |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---|---|",
    ]
    for row in table.itertuples(index=False):
        ppi = getattr(row, "ppi", None)
        ppi_shown = "n/a (labels not from the judged set)" if ppi is None or pd.isna(ppi) \
            else _shown(ppi, row.ppi_clipped)
        ppi_interval = _interval(getattr(row, "ppi_low_clipped", None),
                                 getattr(row, "ppi_high_clipped", None))
        lines.append(
            f"| {row.source} | {row.dataset} | {row.rendering} | {row.tp + row.fn}/{row.fp + row.tn}"
            f" | {_pct(row.tpr)} | {_pct(row.tnr)} | {_pct(row.agreement)} | {_pct(row.q)}"
            f" {_interval(row.q_low, row.q_high)} |"
            f" {_shown(row.corrected, row.corrected_clipped)} |"
            f" {_interval(row.corrected_low_clipped, row.corrected_high_clipped)} |"
            f" {ppi_shown} | {ppi_interval} |"
            f" {_pct(row.human_pass_rate)} | {row.status} | {_flags(row)} |"
        )
    lines += ["", "Undefined bootstrap draws (TPR* + TNR* <= 1) are left out of the interval and"
              " counted in the csv (`n_undefined`).", ""]
    return "\n".join(lines)


def _judge_shown(judge: object, labels: ModelLabels) -> str:
    """A model's display label; the worked example's judge ("the post's judge") as it is."""
    text = str(judge)
    return text if text.startswith("the ") else f"{labels(text)} judge"


def _is_missing(value: object) -> bool:
    return value is None or pd.isna(value)


def _error(point: float, low: Any, high: Any):
    if _is_missing(low):
        return None
    return [[max(0.0, point - 100 * float(low))], [max(0.0, 100 * float(high) - point)]]


def plot_calibration(table: pd.DataFrame, confusion: Confusion, png: Path, pdf: Path,
                     labels: ModelLabels | None = None) -> None:
    """Left: labelled replies by human and judge verdict. Right: reported, Rogan-Gladen and PPI
    rates with their intervals, clipped to [0, 100]; unstable intervals dashed, with the reason.
    Each row is labelled with its judge (display label) and its numbers of labelled and judged
    items."""
    labels = labels or ModelLabels()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 1.1 * len(table) + 3.6),
                                      gridspec_kw={"width_ratios": [1, 2]})
    groups = ["human pass", "human fail"]
    judge_pass = [confusion.tp, confusion.fp]
    judge_fail = [confusion.fn, confusion.tn]
    left.bar(groups, judge_pass, color="#2ca02c", label="judge pass")
    left.bar(groups, judge_fail, bottom=judge_pass, color="#d62728", label="judge fail")
    for x, (passed, failed) in enumerate(zip(judge_pass, judge_fail)):
        left.text(x, passed / 2, str(passed), ha="center", va="center", color="white")
        left.text(x, passed + failed / 2, str(failed), ha="center", va="center", color="white")
    left.set_ylabel("labelled replies")
    left.set_title(f"{confusion.n} labelled replies (worked example)")
    left.legend(frameon=False)

    row_names = [f"{DATASET_TITLES.get(r.dataset, r.dataset)}, {r.rendering}\n"
                 f"{_judge_shown(r.judge, labels)}\n"
                 f"{r.tp + r.fn + r.fp + r.tn} labelled, {r.n_judged} judged"
                 for r in table.itertuples(index=False)]
    ys = range(len(table))
    human_shown = False
    # Within a row (one unit tall): reported, Rogan-Gladen, PPI, then the row's notes.
    for y, row in zip(ys, table.itertuples(index=False)):
        right.errorbar(100 * row.q, y - 0.3, xerr=[[100 * (row.q - row.q_low)],
                                                   [100 * (row.q_high - row.q)]],
                       fmt="o", color="#7f7f7f", capsize=3,
                       label="reported (judge), Wilson" if y == 0 else None)
        flags = getattr(row, "interval_flags", "")
        flags = [f for f in flags.split("; ") if f] if isinstance(flags, str) else []
        notes = []
        if not _is_missing(row.corrected):
            point = 100 * row.corrected_clipped
            bars = right.errorbar(point, y - 0.1, xerr=_error(point, row.corrected_low_clipped,
                                                              row.corrected_high_clipped),
                                  fmt="s", color=RG_COLOR, capsize=3,
                                  label="Rogan-Gladen" if y == 0 else None)
            if flags and bars.lines[2]:
                bars.lines[2][0].set_linestyle("--")
            if row.status == "outside_unit_interval":
                right.text(point + 2 if point < 50 else point - 2, y - 0.2,
                           f"raw estimate {100 * row.corrected:.1f}%, outside [0, 100]",
                           ha="left" if point < 50 else "right", va="center", fontsize=7)
        else:
            right.text(1, y - 0.1, "Rogan-Gladen undefined: TPR + TNR <= 1", va="center",
                       fontsize=7, color=RG_COLOR)
            # its "no interval" flag says the same again
            flags = [f for f in flags if not f.startswith("no interval (TPR + TNR")]
        ppi = getattr(row, "ppi", None)
        if not _is_missing(ppi):
            point = 100 * row.ppi_clipped
            right.errorbar(point, y + 0.1, xerr=_error(point, row.ppi_low_clipped,
                                                       row.ppi_high_clipped),
                           fmt="^", color=PPI_COLOR, capsize=3, label="PPI")
        else:
            right.text(1, y + 0.1, "PPI n/a: the labelled items are not part of the judged set"
                       if not getattr(row, "labelled_in_judged", True) else "PPI n/a",
                       va="center", fontsize=7, color=PPI_TEXT_COLOR)
        if not _is_missing(row.human_pass_rate):
            right.plot(100 * row.human_pass_rate, y - 0.1, marker="*", color="black",
                       markersize=10, linestyle="none",
                       label=None if human_shown else "human pass rate")
            human_shown = True
        else:
            labelled = row.tp + row.fn + row.fp + row.tn
            notes.append("no human pass rate: humans labelled only "
                         f"{labelled} of the {row.n_judged} judged" if row.labelled_in_judged
                         else "no human pass rate: the judged items carry no human label")
        if flags:
            notes.append("Rogan-Gladen interval unstable: " + "; ".join(flags))
        if notes:
            axes_text(right, 1, y + 0.2, "\n".join(notes), va="top", fontsize=6.5,
                      color="#b00000" if flags else "black")
    right.set_yticks(list(ys), row_names, fontsize=7.5)
    right.tick_params(axis="y", pad=6)
    right.set_ylim(len(table) - 0.45, -0.55)  # top to bottom, room for each row's note
    right.set_xlim(-3, 103)  # markers at 0% and 100% drawn whole
    right.set_xlabel("pass rate (%), intervals clipped to [0, 100]")
    method = "; ".join(INTERVAL_METHODS[m] for m in sorted(set(table["method"])))
    right.set_title("reported and corrected pass rate, 95% intervals\n"
                    f"Rogan-Gladen: {method}; PPI: normal interval; reported: Wilson",
                    fontsize=9)
    handles, names = right.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    right.legend(unique.values(), unique.keys(), frameon=False, fontsize=8, loc="upper left",
                 bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout(w_pad=3)  # the row labels clear the left panel
    fit_to_axes(fig)
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=150)
    fig.savefig(pdf)
    plt.close(fig)


def agent_summary_markdown(trials: pd.DataFrame, grades: pd.DataFrame, agent: str,
                           judge: str) -> str:
    """The worked example run for real: verifier pass rate, then the reply rubric on the passes.

    No human labels exist for these replies, so their rubric pass rate is reported as judged,
    uncorrected (the correction needs a labelled slice).
    """
    verifier_passed = trials["verifier_passed"].astype(str) == "True"
    statuses = ", ".join(f"{status} {count}" for status, count in
                         trials["status"].value_counts().sort_index().items())
    passed = grades["passed"].astype(str)
    lines = [
        "## The worked example, run",
        "",
        f"Agent `{agent}`, {len(trials)} trials ({statuses}).",
        f"Verifier: {int(verifier_passed.sum())} of {len(trials)} trials passed"
        f" ({_pct(verifier_passed.mean()) if len(trials) else 'n/a'}%).",
    ]
    check_columns = [c for c in trials.columns if c.startswith("check:")]
    for column in check_columns:
        failed = int((trials[column].astype(str) != "True").sum())
        lines.append(f"- `{column[len('check:'):]}` failed in {failed} trial(s)")
    lines += [
        "",
        f"Reply rubric (judge `{judge}`), judged only on the {len(grades)} verifier passes:"
        f" {int((passed == 'True').sum())} passed, {int((passed == 'False').sum())} failed,"
        f" {int((passed == 'None').sum())} undetermined (an unparseable verdict decides them)."
        " No human labels exist for these replies, so this rate is not corrected.",
        "",
    ]
    return "\n".join(lines)
