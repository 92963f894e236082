"""Agreement of gate decisions across judges (carry abstract: "identical decisions under three
judge models").

Input: the decisions tables of every judge (`analysis.analyse`, variant standard). A
proposed change is identified by what it is, not by its position in one replay:
(dataset, reviser, source, mode, seed, scope, round, action, check id, new text). Keeps are
not changes (every gate accepts them) and rounds whose proposal was rejected hold none, so
neither is counted. A change counts as decided the same way when every judge's replay
reached it and all of them accepted it, or all refused it; a change only some replays
reached (an earlier decision differed, so the rubric it applies to differs) is a split.

Output: per dataset, chain and gate (every one replayed, a chain without any change too: share
NaN) the number of changes, how many every judge decided the
same way and their share; and the list of split changes with each judge's decision
("accepted", "refused" or "not reached").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rubriclab.labels import current_labels, with_labels
from rubriclab.tidy import markdown_table, require_columns

DECISION_COLUMNS = ["dataset", "judge", "reviser", "source", "mode", "seed", "gate", "variant",
                    "scope", "round", "action", "check_id", "text", "accepted"]
CHAIN = ["dataset", "reviser", "source", "mode", "seed"]
CHANGE = [*CHAIN, "gate", "scope", "round", "action", "check_id", "text"]
AGREEMENT_COLUMNS = [*CHAIN, "gate", "changes", "agreed", "share"]
SPLIT_COLUMNS = [*CHANGE, "judge", "decision"]
GATES = ("R", "P", "S", "S+P")


def _accepted(series: pd.Series) -> pd.Series:
    words = {"true": True, "false": False}
    mapped = series.astype(str).str.strip().str.lower().map(words)
    if mapped.isna().any():
        raise ValueError(f"decisions: column 'accepted' holds non-boolean values "
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
    replayed = decisions[(decisions["variant"] == "standard")
                         & decisions["gate"].isin(gates)].copy()
    for column in ("mode", "check_id", "text", "reviser"):
        replayed[column] = replayed[column].fillna("").astype(str)
    frame = replayed[replayed["action"].isin(["edit", "delete", "add"])].copy()
    frame["accepted"] = _accepted(frame["accepted"])
    duplicated = frame.duplicated(subset=[*CHANGE, "judge"], keep=False)
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        raise ValueError(f"decisions: change {first[CHANGE].to_dict()} is decided twice under "
                         f"judge {first['judge']!r}")
    wide = frame.pivot_table(index=CHANGE, columns="judge", values="accepted",
                             aggfunc="first").reindex(columns=list(judges))
    reached = wide.notna().all(axis=1)
    same = reached & (wide.eq(True).all(axis=1) | wide.eq(False).all(axis=1))
    per_change = pd.DataFrame({"agreed": same}).reset_index()
    counted = (per_change.groupby([*CHAIN, "gate"], sort=False)["agreed"]
               .agg(changes="size", agreed="sum"))
    # every replayed chain and gate gets a row, one without any change too (share NaN)
    every = replayed[[*CHAIN, "gate"]].drop_duplicates()
    agreement = every.merge(counted.reset_index(), on=[*CHAIN, "gate"], how="left")
    agreement[["changes", "agreed"]] = agreement[["changes", "agreed"]].fillna(0).astype(int)
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
def agreement_markdown(agreement: pd.DataFrame, judges: Sequence[str]) -> str:
    """Per dataset a chain x gate table: share of changes every judge decides the same way."""
    labels = current_labels()
    lines = ["# carry: gate decisions under every judge", ""]
    for dataset in dict.fromkeys(agreement["dataset"]):
        part = agreement[agreement["dataset"] == dataset]
        gates = [g for g in GATES if g in set(part["gate"])]
        cells: Mapping = {(r.reviser, r.source, r.mode, r.seed, r.gate):
                          f"{100 * r.share:.1f} ({r.agreed}/{r.changes})" if r.changes
                          else "no change"
                          for r in part.itertuples(index=False)}
        chains = list(dict.fromkeys(zip(part["reviser"], part["source"], part["mode"],
                                        part["seed"])))
        body = [[f"{source}, {mode}, review by {labels(reviser)}, seed {seed}",
                 *(cells.get((reviser, source, mode, seed, g), "n/a") for g in gates)]
                for reviser, source, mode, seed in chains]
        lines += [f"{dataset}", "", *markdown_table(["Chain", *gates], body), ""]
    lines += [f"Share of proposed changes (edits, deletes, adds) that all {len(judges)} judges "
              f"({', '.join(labels(j) for j in judges)}) decide the same way, in % (agreed / changes). A change only "
              "some judges' replays reach counts as a split; the csv lists every split change "
              "with each judge's decision.", ""]
    return "\n".join(lines)
