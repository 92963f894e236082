"""Agreement of gate decisions across judges (carry abstract: "identical decisions under three
judge models").

Input: the decisions tables of every judge (`analysis.analyse`): every replay of every gate,
the leave-one-report-out replays of Recon included (column left_out). A proposed change is
identified by what it is and the replay it belongs to, not by its position in one replay:
(dataset, reviser, source, mode, seed, gate, left_out, scope, round, action, check id, new
text). Keeps are not changes (every gate accepts them) and rounds whose proposal was rejected
hold none, so neither is counted.

Only decisions that read the judge's verdicts could differ between judges, so only they are
counted (`Decision.reads_verdicts`). Left out, and counted apart:
  origin       Gate P's every decision (it reads only a check's origin), and the changes
               Gate S+P refuses by P's freeze: the same under any judge;
  no_evidence  refusals for want of evidence: no verdict was read.
A change is counted when some judge's replay decided it by reading verdicts. It counts as
decided the same way when every judge's replay reached it and all of them accepted it, or
all refused it; a change only some replays reached (an earlier decision differed, so the
rubric it applies to differs) is a split.

Every judge must have judged every dataset of the decisions: a dataset only some judges
judged (carry.all_judges_on leaves it to the main judge) would count as agreed for want of a
second opinion, so it is refused, and the markdown names the datasets it covers and those the
main judge judged alone.

Output: per dataset, chain and gate (every one replayed, a chain without any change too:
share NaN) the number of changes counted, how many every judge decided the same way, their
share and the changes left out (origin, no_evidence); and the list of split changes with
each judge's decision ("accepted", "refused" or "not reached").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rubriclab.labels import current_labels, with_labels
from rubriclab.tidy import markdown_table, require_columns

DECISION_COLUMNS = ["dataset", "judge", "reviser", "source", "mode", "seed", "gate", "left_out",
                    "scope", "round", "action", "check_id", "text", "accepted", "evidence",
                    "reads_verdicts"]
CHAIN = ["dataset", "reviser", "source", "mode", "seed"]
CHANGE = [*CHAIN, "gate", "left_out", "scope", "round", "action", "check_id", "text"]
AGREEMENT_COLUMNS = [*CHAIN, "gate", "changes", "agreed", "share", "replays", "origin",
                     "no_evidence"]
SPLIT_COLUMNS = [*CHANGE, "judge", "decision"]
GATES = ("R", "P", "S", "S+P")
ORIGIN_ONLY = ("P",)  # gates whose decisions read only a check's origin


def _boolean(series: pd.Series, column: str) -> pd.Series:
    words = {"true": True, "false": False}
    mapped = series.astype(str).str.strip().str.lower().map(words)
    if mapped.isna().any():
        raise ValueError(f"decisions: column {column!r} holds non-boolean values "
                         f"{sorted(set(series[mapped.isna()].astype(str)))}")
    return mapped.astype(bool)


def gate_agreement(decisions: pd.DataFrame, judges: Sequence[str],
                   gates: Sequence[str] = GATES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement per dataset, chain and gate; split changes, one row per judge)."""
    require_columns(decisions, DECISION_COLUMNS, "decisions")
    if len(judges) < 1:
        raise ValueError("gate agreement needs at least one judge")
    unknown = sorted(set(decisions["judge"]) - set(judges))
    if unknown:
        raise ValueError(f"decisions: judge(s) {unknown} are not among {list(judges)}")
    for dataset, rows in decisions.groupby("dataset", sort=False):
        missing = [j for j in judges if j not in set(rows["judge"])]
        if missing:
            raise ValueError(f"decisions: dataset {dataset!r} has no decisions of judge(s) "
                             f"{missing}; the agreement covers only datasets every judge "
                             "judged (carry.all_judges_on)")
    replayed = decisions[decisions["gate"].isin(gates)].copy()
    for column in ("mode", "check_id", "text", "reviser", "left_out"):
        replayed[column] = replayed[column].fillna("").astype(str)
    frame = replayed[replayed["action"].isin(["edit", "delete", "add"])].copy()
    for column in ("accepted", "evidence", "reads_verdicts"):
        frame[column] = _boolean(frame[column], column)
    frame.loc[frame["gate"].isin(ORIGIN_ONLY), "reads_verdicts"] = False
    duplicated = frame.duplicated(subset=[*CHANGE, "judge"], keep=False)
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        raise ValueError(f"decisions: change {first[CHANGE].to_dict()} is decided twice under "
                         f"judge {first['judge']!r}")
    per_change = frame.groupby(CHANGE, sort=False).agg(
        read=("reads_verdicts", "any"), evidence=("evidence", "any")).reset_index()
    counted = per_change[per_change["read"]]
    wide = (frame.merge(counted[CHANGE], on=CHANGE)
            .pivot_table(index=CHANGE, columns="judge", values="accepted", aggfunc="first")
            .reindex(columns=list(judges)))
    reached = wide.notna().all(axis=1)
    same = reached & (wide.eq(True).all(axis=1) | wide.eq(False).all(axis=1))
    agreed = (pd.DataFrame({"agreed": same}).reset_index()
              .groupby([*CHAIN, "gate"], sort=False)["agreed"]
              .agg(changes="size", agreed="sum"))
    left_out = per_change[~per_change["read"]].assign(
        origin=lambda f: f["evidence"], no_evidence=lambda f: ~f["evidence"])
    left = left_out.groupby([*CHAIN, "gate"], sort=False)[["origin", "no_evidence"]].sum()
    replays = (replayed[[*CHAIN, "gate", "left_out", "scope"]].drop_duplicates()
               .groupby([*CHAIN, "gate"], sort=False).size().rename("replays"))
    # every replayed chain and gate gets a row, one without any change too (share NaN)
    every = replayed[[*CHAIN, "gate"]].drop_duplicates()
    agreement = (every.merge(agreed.reset_index(), on=[*CHAIN, "gate"], how="left")
                 .merge(left.reset_index(), on=[*CHAIN, "gate"], how="left")
                 .merge(replays.reset_index(), on=[*CHAIN, "gate"], how="left"))
    counts = ["changes", "agreed", "origin", "no_evidence"]
    agreement[counts] = agreement[counts].fillna(0).astype(int)
    agreement["share"] = agreement["agreed"] / agreement["changes"].where(
        agreement["changes"] > 0)
    split = wide[~same.to_numpy()]
    rows = []
    for key, decided in split.iterrows():
        for judge in judges:
            value = decided[judge]
            word = "not reached" if pd.isna(value) else ("accepted" if value else "refused")
            rows.append(dict(zip(CHANGE, key), judge=judge, decision=word))
    return (agreement[AGREEMENT_COLUMNS].reset_index(drop=True),
            pd.DataFrame(rows, columns=SPLIT_COLUMNS))


@with_labels
def agreement_markdown(agreement: pd.DataFrame, judges: Sequence[str],
                       main_judge_only: Sequence[str] = ()) -> str:
    """Per dataset a chain x gate table: share of the changes that read the judge's verdicts
    that every judge decides the same way; the caption counts what was left out and why.
    Its first line names the datasets it covers and `main_judge_only`, those the main judge
    judged alone (not in carry.all_judges_on), which it cannot cover."""
    labels = current_labels()
    covered = list(dict.fromkeys(agreement["dataset"]))
    both = sorted(set(covered) & set(main_judge_only))
    if both:
        raise ValueError(f"gate agreement: dataset(s) {both} are both covered and judged by the "
                         "main judge alone")
    lines = ["# carry: gate decisions under every judge", "",
             f"Covers {', '.join(covered) if covered else 'no dataset'}: the datasets every "
             "judge judged (carry.all_judges_on)."
             + (f" Not covered: {', '.join(main_judge_only)}, judged by the main judge alone "
                "(list them in carry.all_judges_on to compare the judges there)."
                if main_judge_only else ""), ""]
    shown = agreement[~agreement["gate"].isin(ORIGIN_ONLY)]
    for dataset in covered:
        part = shown[shown["dataset"] == dataset]
        gates = [g for g in GATES if g in set(part["gate"])]
        cells: Mapping = {(r.reviser, r.source, r.mode, r.seed, r.gate):
                          f"{100 * r.share:.1f} ({r.agreed}/{r.changes})" if r.changes
                          else "none counted"
                          for r in part.itertuples(index=False)}
        chains = list(dict.fromkeys(zip(part["reviser"], part["source"], part["mode"],
                                        part["seed"])))
        body = [[f"{source}, {mode}, review by {labels(reviser)}, seed {seed}",
                 *(cells.get((reviser, source, mode, seed, g), "n/a") for g in gates)]
                for reviser, source, mode, seed in chains]
        whole = agreement[agreement["dataset"] == dataset]
        p_changes = int(whole.loc[whole["gate"].isin(ORIGIN_ONLY), "origin"].sum())
        lines += [f"{dataset}", "", *markdown_table(["Chain", *gates], body), "",
                  f"{dataset}: {int(part['changes'].sum())} changes counted over "
                  f"{int(part['replays'].sum())} replays, {int(part['agreed'].sum())} "
                  f"decided the same way by every judge. Left out: {p_changes} decisions of "
                  f"Gate P (it reads only a check's origin), "
                  f"{int(part['origin'].sum())} changes Gate S+P refuses by P's freeze "
                  f"(the same under any judge) and {int(part['no_evidence'].sum())} "
                  "refusals for want of evidence (no verdict read).", ""]
    lines += [f"Share of proposed changes (edits, deletes, adds) that all {len(judges)} judges "
              f"({', '.join(labels(j) for j in judges)}) decide the same way, in % (agreed / "
              "changes), among the changes some judge's gate decided by reading that judge's "
              "verdicts: decisions that cannot differ between judges are left out (counts "
              "above). Every replay counts its own changes: on Recon each gate is replayed "
              "once per report left out of its evidence (leave-one-report-out, Gate S+P's "
              "replays being Table 2's) and once with all of it. A change only some judges' "
              "replays reach counts as a split; the csv lists every split change with each "
              "judge's decision.", ""]
    return "\n".join(lines)
