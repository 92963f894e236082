"""What carry's claim readers share (rubriclab.replication.readers_carry and its families).

The seed's numeric readings (NEAR, COLLAPSE, NEARLY_EVERY; readers_carry's docstring says
where each comes from), reading and checking the pipeline's tables, the run's judges and
revisers from its config, the main judge's gate decisions with the parts that check a gate
could be tested, and the Recon-108 item counts behind a rate. The underscored helpers are
the readers' own: shared by the reader modules, not used outside them.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd

from rubriclab.replication.evidence import (
    MissingEvidence,
    Outputs,
    Part,
    output_path,
)

NEAR = 6.0
COLLAPSE = 75.0
NEARLY_EVERY = 5 / 6
METRICS = ["correct_passed", "flawed_caught", "unplanned_caught"]
GATE_COLUMNS = {"none": "ungated", "R": "Gate R", "P": "Gate P", "S": "Gate S",
                "S+P": "Gate S+P"}
CI = " 95% CI"


def _csv(outputs: Outputs, name: str) -> pd.DataFrame:
    path = output_path(outputs, name)
    return pd.read_csv(path, keep_default_na=False, na_values=["", "NaN", "nan"])


def _columns(table: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    absent = [c for c in columns if c not in table.columns]
    if absent:
        raise MissingEvidence(f"{where} has no column(s) {absent}")


def _text(series: pd.Series) -> pd.Series:
    return series.fillna("").astype(str)


def _flag(series: pd.Series, where: str) -> pd.Series:
    words = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}
    mapped = series.map(lambda v: words.get(str(v).strip().lower()))
    if mapped.isna().any():
        bad = sorted(set(series[mapped.isna()].astype(str)))
        raise ValueError(f"{where}: non-boolean values {bad}")
    return mapped.astype(bool)


def _fmt(value: float) -> str:
    return "NaN" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{float(value):.1f}"


def _nan(*values: float) -> bool:
    return any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)


def _main_judge(config: Mapping) -> str:
    return str(config["models"]["judge"])


def _main_reviser(config: Mapping) -> str:
    return str(config["models"]["reviser"])


def _revisers(config: Mapping) -> list[str]:
    return list(config["models"].get("revisers") or [config["models"]["reviser"]])


def _judges(config: Mapping) -> list[str]:
    return list((config.get("carry") or {}).get("judges") or [config["models"]["judge"]])


def _named(models: Iterable[str], family: str, config: Mapping) -> list[str]:
    """The models whose model string or label names `family` ("sonnet", "opus", "haiku")."""
    labels = config.get("labels") or {}
    return [m for m in models
            if family in str(m).lower() or family in str(labels.get(m, "")).lower()]


def _paper_chains(config: Mapping, dataset: str) -> set[tuple[str, str]]:
    """(source, mode) of the paper's chains of a dataset (carry.chains.<dataset>.chains)."""
    chains = config["carry"]["chains"][dataset]["chains"]
    return {tuple(str(c).split(":", 1)) for c in chains}  # type: ignore[misc]


# --------------------------------------------------------------------------- decisions

def _decisions(outputs: Outputs, dataset: str) -> pd.DataFrame:
    table = _csv(outputs, f"carry_decisions_{dataset}")
    _columns(table, ["reviser", "source", "mode", "seed", "gate", "round", "action",
                     "check_id", "accepted", "evidence"], f"the {dataset} gate decisions")
    table = table.assign(mode=_text(table["mode"]), reviser=_text(table["reviser"]))
    table["accepted"] = _flag(table["accepted"], f"{dataset} decisions, accepted")
    table["evidence"] = _flag(table["evidence"], f"{dataset} decisions, evidence")
    return table


def _gate_parts(decisions: pd.DataFrame, gate: str, chains: Iterable[tuple],
                what: str) -> list[Part]:
    """Testability: the gate accepted some change of these chains and decided some change
    with evidence (a gate that refused everything stays at the start by construction). Every
    replay of the gate counts: on Recon its leave-one-report-out replays are both Figure 6's
    and Table 2's (docs/replication.md, "Gate evidence and scoring sets")."""
    keys = set(chains)
    mine = decisions[(decisions["gate"] == gate) & (decisions["action"] != "keep")]
    of_chains = pd.Series([(r, s, m, int(k)) in keys for r, s, m, k in
                           zip(mine["reviser"], mine["source"], mine["mode"], mine["seed"])],
                          index=mine.index, dtype=bool)
    mine = mine[of_chains]
    accepted, with_evidence = int(mine["accepted"].sum()), int(mine["evidence"].sum())
    return [
        Part(f"Gate {gate} accepted at least one change ({what})",
             True if accepted else None,
             f"{accepted} of {len(mine)} changes accepted"
             + ("" if accepted else ": it refused every change, so its rubric is the start")),
        Part(f"Gate {gate} decided with evidence ({what})",
             True if with_evidence else None,
             f"{with_evidence} of {len(mine)} changes decided with evidence"),
    ]


def _recon_items(outputs: Outputs, judge: str, metric: str) -> int:
    rates = _csv(outputs, "carry_rates")
    _columns(rates, ["dataset", "judge", "item_set", "environments", "metric", "n",
                     "n_undetermined"], "results/carry/rates.csv")
    rows = rates[(rates["dataset"] == "recon") & (rates["judge"] == judge)
                 & (rates["item_set"] == "recon108") & (rates["environments"] == "all")
                 & (rates["metric"] == metric)]
    if rows.empty:
        raise MissingEvidence(f"no Recon-108 {metric} rates of {judge}")
    return int((rows["n"] + rows["n_undetermined"]).max())
