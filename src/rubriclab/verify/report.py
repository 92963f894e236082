"""verify's calibration table and Figure 2: reported and Rogan-Gladen corrected pass rates.

Rows: the worked example's own numbers, and carry's Figure 2 judge on each human-labelled
dataset and rendering, calibrated on the calibration split (the labelled slice) and corrected on
the evaluation split (the judged set), where the human pass rate is known and shown beside it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from rubriclab.carry.aggregate import item_outcomes  # noqa: E402

from .calibration import (  # noqa: E402
    POST_CONFUSION,
    POST_JUDGED,
    Confusion,
    confusion_from_verdicts,
    corrected_pass_rate,
)

RENDERING_NAMES = {"per_check": "one call per check", "paragraph": "paragraph"}


def post_row(n_boot: int, seed: int, level: float) -> dict:
    corrected = corrected_pass_rate(*POST_JUDGED, POST_CONFUSION, n_boot=n_boot, seed=seed,
                                    level=level)
    return {"source": "worked example (the post's numbers)", "dataset": "refund replies",
            "rendering": "four-criterion rubric", "judge": "the post's judge",
            "human_pass_rate": None, **corrected.to_dict()}


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
            **corrected.to_dict(),
        })
    return rows


def _pct(value: object) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{100 * float(value):.1f}"


def _interval(low: object, high: object) -> str:
    return "n/a" if low is None or pd.isna(low) else f"[{_pct(low)}, {_pct(high)}]"


def _undefined_share(row: object) -> str:
    """Draws with TPR* + TNR* <= 1 have no estimate; many of them make the interval unreliable."""
    if not row.n_undefined:
        return ""
    return f" ({100 * row.n_undefined / row.n_boot:.0f}% of draws undefined)"


def calibration_markdown(table: pd.DataFrame) -> str:
    lines = [
        "# verify: judge calibration and the Rogan-Gladen corrected pass rate",
        "",
        "TPR and TNR come from the labelled slice (the post's 50 hand-labelled replies; the",
        "calibration split of each dataset). The reported rate q is the judge's pass rate on the",
        "judged set (the post's 400 replies; the evaluation split), corrected as",
        "p = (q - (1 - TNR)) / (TPR - (1 - TNR)). Intervals: Wilson for q, TPR and TNR; for p, a",
        "parametric bootstrap over all three rates (docs/replication.md). Percent.",
        "",
        "| source | dataset | rendering | labels (pass/fail) | TPR | TNR | agreement |"
        " reported q | corrected p | p interval | human pass rate | status |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for row in table.itertuples(index=False):
        corrected = _pct(row.corrected)
        if row.status == "outside_unit_interval":
            corrected += f" (clipped {_pct(row.corrected_clipped)})"
        lines.append(
            f"| {row.source} | {row.dataset} | {row.rendering} | {row.tp + row.fn}/{row.fp + row.tn}"
            f" | {_pct(row.tpr)} | {_pct(row.tnr)} | {_pct(row.agreement)} | {_pct(row.q)}"
            f" {_interval(row.q_low, row.q_high)} | {corrected} |"
            f" {_interval(row.corrected_low, row.corrected_high)}{_undefined_share(row)} |"
            f" {_pct(row.human_pass_rate)} |"
            f" {row.status} |"
        )
    lines += ["", "Undefined bootstrap draws (TPR* + TNR* <= 1) are left out of the interval and"
              " counted in the csv (`n_undefined`).", ""]
    return "\n".join(lines)


def plot_calibration(table: pd.DataFrame, confusion: Confusion, png: Path, pdf: Path) -> None:
    """Left: labelled replies by human and judge verdict. Right: reported vs corrected rates."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8),
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

    labels = [f"{r.dataset}\n{r.rendering}" for r in table.itertuples(index=False)]
    ys = range(len(table))
    human_shown = False
    for y, row in zip(ys, table.itertuples(index=False)):
        right.errorbar(100 * row.q, y + 0.15, xerr=[[100 * (row.q - row.q_low)],
                                                    [100 * (row.q_high - row.q)]],
                       fmt="o", color="#7f7f7f", capsize=3,
                       label="reported (judge)" if y == 0 else None)
        if row.corrected is not None and not pd.isna(row.corrected):
            low, high = row.corrected_low_clipped, row.corrected_high_clipped
            point = 100 * row.corrected_clipped
            right.errorbar(point, y - 0.15,
                           xerr=[[point - 100 * low], [100 * high - point]] if low is not None
                           and not pd.isna(low) else None,
                           fmt="s", color="#1f77b4", capsize=3,
                           label="corrected (Rogan-Gladen)" if y == 0 else None)
            if row.status == "outside_unit_interval":
                right.text(point + 2 if point < 50 else point - 2, y - 0.4,
                           f"raw estimate {100 * row.corrected:.1f}%, outside [0, 100]",
                           ha="left" if point < 50 else "right", va="center", fontsize=8)
        else:
            right.text(2, y - 0.15, "undefined: TPR + TNR <= 1", va="center", fontsize=8)
        if row.human_pass_rate is not None and not pd.isna(row.human_pass_rate):
            right.plot(100 * row.human_pass_rate, y, marker="*", color="black", markersize=10,
                       linestyle="none", label=None if human_shown else "human pass rate")
            human_shown = True
    right.set_yticks(list(ys), labels, fontsize=8)
    right.invert_yaxis()
    right.set_xlim(0, 100)
    right.set_xlabel("pass rate (%)")
    right.set_title("reported and corrected pass rate, 95% intervals")
    handles, names = right.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    right.legend(unique.values(), unique.keys(), frameon=False, fontsize=8, loc="lower right")
    fig.tight_layout()
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
