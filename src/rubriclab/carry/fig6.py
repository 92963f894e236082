"""Figure 6 of the carry work: rubric quality after the final round under each gate
(ungated, R, P, S, S+P) on Recon-108's evaluation environments, against the start.
Conventions (rates in percent, `low`/`high` the 95% interval, bad input raises)
and the shared helpers: rubriclab.carry.figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import patheffects  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from rubriclab.labels import ModelLabels
from rubriclab.plotting import error_lengths as _error
from rubriclab.plotting import plural, value_labels
from rubriclab.plotting import save_figure as _save
from rubriclab.tidy import ensure_unique, select

from .analysis import gate_evidence_short
from .chains import paper_chain_rows, split_chain
from .figures import (
    CHAIN_KEYS, GATE_TITLES, GATES, METRIC_COLORS, METRIC_TITLES, METRICS, MODE_ORDER, MODE_TITLES,
    SOURCE_TITLES, _panel_title, _percent_axis, _unclipped, chains_with_start, counts_phrase,
    normalized_rates, ordered, recon108_counts,
)

FIG6_WHISKER_COLOR, FIG6_START_WIDTH = "#222222", 2.4
FIG6_COLUMNS = ["reviser", "source", "gate", "metric", "value", "min", "max", "chains", "final_round",
                "start", "no_evidence", "no_evidence_max"]


def fig6_table(rates: pd.DataFrame, judge_main: str,
               sources: Sequence[str] = ("hand", "label"),
               paper_chains: Sequence[str] | None = None) -> pd.DataFrame:
    """Gated rubrics after each chain's final round on Recon-108's evaluation environments
    (variant standard, judge_main), over the paper's chains (`paper_chains`, "<source>:<mode>",
    carry.chains.recon.chains; None: every chain): per reviser, source, gate and metric the
    mean over the chains (their seeds), its min..max, the number of chains, the final round
    (the largest if chains differ), the mean start value (round 0, gate none) and the changes
    the gate refused for want of evidence (n_no_evidence at the final round: the mean per
    chain and the largest)."""
    frame = paper_chain_rows(normalized_rates(rates), paper_chains)
    rows = select(frame, "Figure 6", dataset="recon", item_set="recon108",
                  environments="evaluation", variant="standard", judge=judge_main,
                  gate=GATES)
    panels = [_fig6_source(rows, source) for source in sources]
    table = pd.concat(panels, ignore_index=True)
    gate_rank = {g: i for i, g in enumerate(GATES)}
    metric_rank = {m: i for i, m in enumerate(ordered(table["metric"], METRICS))}
    source_rank = {s: i for i, s in enumerate(sources)}
    reviser_rank = {r: i for i, r in enumerate(dict.fromkeys(table["reviser"]))}
    ranks = {"gate": gate_rank, "metric": metric_rank, "source": source_rank,
             "reviser": reviser_rank}
    table = table.sort_values(["reviser", "source", "gate", "metric"], kind="stable",
                              key=lambda c: c.map(ranks[c.name]))
    return table[FIG6_COLUMNS].reset_index(drop=True)


def _fig6_source(rows: pd.DataFrame, source: str) -> pd.DataFrame:
    what = f"Figure 6 panel from source {source!r}"
    chains = chains_with_start(select(rows, what, source=source), what)
    ensure_unique(chains, [*CHAIN_KEYS, "round", "gate", "metric"], what)
    final = chains.groupby(CHAIN_KEYS)["round"].transform("max")
    if (final == 0).all():
        raise ValueError(f"{what}: no revision round after round 0")
    last = chains[(chains["round"] == final) & (final > 0)]
    start = chains[(chains["round"] == 0) & (chains["gate"] == "none")]
    summary = (last.groupby(["reviser", "gate", "metric"], sort=False)["value"]
               .agg(value="mean", min="min", max="max", chains="count").reset_index())
    summary["final_round"] = int(last["round"].max())
    summary["start"] = summary["metric"].map(start.groupby("metric")["value"].mean())
    per_chain = last.groupby([*CHAIN_KEYS, "gate"], sort=False)["n_no_evidence"].max()
    refused = per_chain.groupby(["reviser", "gate"], sort=False).agg(["mean", "max"])
    index = pd.MultiIndex.from_frame(summary[["reviser", "gate"]])
    summary["no_evidence"] = refused["mean"].reindex(index).to_numpy()
    summary["no_evidence_max"] = refused["max"].reindex(index).to_numpy()
    return summary.assign(source=source)


def fig6_gated_quality(rates: pd.DataFrame, judge_main: str, out_png: Path, out_pdf: Path,
                       sources: Sequence[str] = ("hand", "label"),
                       labels: ModelLabels | None = None,
                       paper_chains: Sequence[str] | None = None,
                       gate_evidence: str | None = None) -> pd.DataFrame:
    """Figure 6: rubric quality after the final round, per gate (ungated, R, P, S, S+P),
    on Recon-108's evaluation environments, one row of panels per reviser. Bars are the mean
    over the paper's chains of the source (`paper_chains`; their seeds), whiskers min..max over
    those chains; dotted lines are the start values (round 0), as a black tick across each
    bar. Under each gate: the changes it refused for want of evidence, mean per chain. The
    title says what the gates decided with (`gate_evidence`, carry.recon.gate_evidence)."""
    labels = labels or ModelLabels()
    evidence = ("" if gate_evidence is None
                else f"\ngate evidence: {gate_evidence_short(gate_evidence)}")
    table = fig6_table(rates, judge_main, sources, paper_chains)
    counts = recon108_counts(rates, judge_main, "evaluation")
    revisers = list(dict.fromkeys(table["reviser"]))
    fig, axes = plt.subplots(len(revisers), len(sources),
                             figsize=(5.8 * len(sources), 0.6 + 4.2 * len(revisers)),
                             squeeze=False, sharey=True)
    try:
        for row, reviser in enumerate(revisers):
            for column, source in enumerate(sources):
                index = row * len(sources) + column
                _fig6_panel(axes[row][column], table[(table["source"] == source)
                                                     & (table["reviser"] == reviser)],
                            index, source, labels(reviser) if len(revisers) > 1 else "")
        handles: list[Artist] = [Patch(color=METRIC_COLORS.get(m, "black"),
                                       label=METRIC_TITLES.get(m, m))
                                 for m in ordered(table["metric"], METRICS)]
        handles.append(Line2D([], [], color="black", linewidth=FIG6_START_WIDTH,
                              solid_capstyle="butt", label="start rubric (round 0), over its own bar"))
        if (table["max"] > table["min"]).any():
            handles.append(Line2D([], [], color=FIG6_WHISKER_COLOR, linewidth=1.3,
                                  marker="_", markersize=8, markeredgewidth=1.3,
                                  label="min..max over chains"))
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
                   frameon=False)
        chains = int(table["chains"].max())
        modes = ("every mode" if paper_chains is None else " and ".join(
            MODE_TITLES.get(m, m) for m in ordered([split_chain(c)[1] for c in paper_chains],
                                                   MODE_ORDER)))
        fig.suptitle(f"Gated rubrics after round {int(table['final_round'].max())} on the "
                     f"Recon-108 evaluation environments ({counts_phrase(counts)}), "
                     f"{labels(judge_main)} judge\nmean over {plural(chains, 'chain')} per "
                     f"panel: {modes} revision, each seed (whiskers: min..max over chains, none "
                     f"where all agree)\nunder each gate: the changes it refused for want of "
                     f"evidence, mean per chain{evidence}", fontsize=10)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        _save(fig, out_png, out_pdf)
    finally:
        plt.close(fig)
    return table


def refused_label(gate: str, refused: float) -> str:
    """A Figure 6 gate's tick label: "Gate S\nrefused 73" (mean refusals for want of evidence
    per chain; one decimal where the mean is not whole); ungated has no gate to refuse."""
    if gate == "none" or pd.isna(refused):
        return GATE_TITLES[gate]
    count = f"{refused:.0f}" if float(refused).is_integer() else f"{refused:.1f}"
    return f"{GATE_TITLES[gate]}\nrefused {count}"


def _fig6_panel(ax, rows: pd.DataFrame, index: int, source: str, reviser: str = "") -> None:
    if rows.empty:  # this reviser has no chain from this source
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no {SOURCE_TITLES.get(source, source).lower()} chain"
                          f"{' of ' + reviser if reviser else ''}", ha="center", va="center",
                transform=ax.transAxes, fontsize=9)
        return
    gates = [g for g in GATES if g in set(rows["gate"])]
    metrics = ordered(rows["metric"], METRICS)
    width = 0.8 / len(metrics)
    for position, metric in enumerate(metrics):
        mine = rows[rows["metric"] == metric].set_index("gate").reindex(gates)
        x = np.arange(len(gates)) + (position - (len(metrics) - 1) / 2) * width
        bars = ax.bar(x, mine["value"].fillna(0), width, color=METRIC_COLORS.get(metric, "black"),
                      zorder=2)
        # Whiskers only where the chains differ (min < max); a dark line with caps, over
        # the bar. Where every chain agrees there is no whisker to draw.
        spread = (mine["max"] > mine["min"]).to_numpy()
        if spread.any():
            _unclipped(ax.errorbar(x[spread], mine["value"][spread],
                                   yerr=_error(mine["value"], mine["min"], mine["max"])[:, spread],
                                   linestyle="none", color=FIG6_WHISKER_COLOR, elinewidth=1.3,
                                   capsize=4, capthick=1.3, zorder=4))
        # The start value: a short black tick across each bar (white-edged, over the bar),
        # so it reads on a bar top and on the 0 baseline alike.
        for centre, value in zip(x, mine["start"]):
            if pd.notna(value):
                ax.plot([centre - 0.42 * width, centre + 0.42 * width], [value, value],
                        color="black", linewidth=FIG6_START_WIDTH, solid_capstyle="butt",
                        zorder=5, clip_on=False, gid="start rubric",
                        path_effects=[patheffects.withStroke(linewidth=FIG6_START_WIDTH + 1.6,
                                                             foreground="white")])
        # The label over the highest of the bar, its whisker and its start tick.
        tops = np.fmax(np.fmax(mine["value"].to_numpy(float),
                               np.where(spread, mine["max"], np.nan)),
                       mine["start"].to_numpy(float))
        value_labels(ax, bars, mine["value"], tops=tops, fontsize=7, rotation=90)
    ax.set_xticks(np.arange(len(gates)))
    refused = rows.groupby("gate")["no_evidence"].first()
    ax.set_xticklabels([refused_label(g, refused.get(g)) for g in gates], fontsize=8)
    _percent_axis(ax, "y", low=-4, high=118)  # room for the value labels over 100%
    ax.set_ylabel("percent of reports")
    by = f",\nreview by {reviser}" if reviser else ""
    ax.set_title(_panel_title(index, f"From the {SOURCE_TITLES.get(source, source).lower()} "
                                     f"rubric{by}"), fontsize=9 if by else None)
    ax.grid(axis="y", alpha=0.3)
