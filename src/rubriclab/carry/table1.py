"""carry Table 1: the closed-form Shapley shares on the seed's four-check, five-output example."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import yaml

from .attribution import shapley_attribution


def load_example() -> tuple[list[str], pd.DataFrame]:
    """The example as data: check ids, and per output its id, label and failing checks."""
    text = (resources.files("rubriclab") / "resources" / "carry" / "table1_example.yaml").read_text()
    document = yaml.safe_load(text)
    checks = list(document["checks"])
    outputs = pd.DataFrame(document["outputs"])
    unknown = {c for fails in outputs["fails"] for c in fails} - set(checks)
    if unknown:
        raise ValueError(f"table1_example.yaml: outputs fail unknown checks {sorted(unknown)}")
    return checks, outputs


def fails_matrix(checks: list[str], outputs: pd.DataFrame) -> np.ndarray:
    return np.array([[check in fails for check in checks] for fails in outputs["fails"]], dtype=bool)


def per_check_table(checks: list[str], outputs: pd.DataFrame) -> pd.DataFrame:
    attribution = shapley_attribution(fails_matrix(checks, outputs),
                                      (outputs["label"] == "flawed").to_numpy())
    return attribution.to_frame(checks)


def share_text(fails: list[str], label: str = "flawed") -> str:
    """The seed's "Share of the outcome" cell: "A: 1 (unique catch)", "A, B: 1/2 each",
    "D: 1 of blame", "D, E: 1/2 of blame each", "none"."""
    if not fails:
        return "none"
    blame = " of blame" if label == "correct" else ""
    if len(fails) == 1:
        return f"{fails[0]}: 1{blame}" + (" (unique catch)" if label == "flawed" else "")
    return f"{', '.join(fails)}: 1/{len(fails)}{blame} each"


def table1_markdown(checks: list[str], outputs: pd.DataFrame, per_check: pd.DataFrame) -> str:
    lines = ["# carry, Table 1: Shapley shares on a four-check rubric", "",
             "| output | label | checks answering No (F_i) | share of the outcome |",
             "|---|---|---|---|"]
    for row in outputs.itertuples(index=False):
        share = share_text(list(row.fails), row.label)
        lines.append(f"| {row.id} | {row.label} | {', '.join(row.fails) or 'none'} | {share} |")
    lines += ["", "| check | catch credit | false-fail blame | unique catches | times answering No |",
              "|---|---:|---:|---:|---:|"]
    for row in per_check.itertuples(index=False):
        lines.append(f"| {row.check_id} | {row.credit:.2f} | {row.blame:.2f} | {row.unique_catches} |"
                     f" {row.fail_counts} |")
    caught = int(outputs.loc[outputs["label"] == "flawed", "fails"].map(bool).sum())
    failed = int(outputs.loc[outputs["label"] == "correct", "fails"].map(bool).sum())
    lines += ["", f"Credits sum to {per_check['credit'].sum():.2f} = the {caught} flawed outputs caught;"
              f" blame sums to {per_check['blame'].sum():.2f} = the {failed} correct output(s) failed.", ""]
    return "\n".join(lines)
