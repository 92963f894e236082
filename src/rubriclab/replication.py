"""figures/replication.md: the papers' headline numbers beside this run's, with a verdict each.

The seeds' values and the sentences they come from are data
(resources/replication/headlines.yaml); this module reads each one's value in the run from the
outputs the pipeline already writes and compares. Verdicts:
- exact headlines (no model involved: Table 1, verify's worked example) "match" or "differ" at
  the paper's precision;
- measured ones are "not comparable with these models" when a model they depend on is a
  `fake/` or `local/` model, "not comparable at this size" when fewer items stand behind the
  run's value than behind the paper's, else "within the interval" (the seed's value, or some
  of its range, inside the run's interval) or "differs"; a value without an interval (a count)
  "matches" only when equal;
- claims "hold" or "do not hold", under the same two conditions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd
import yaml

from rubriclab.labels import current_labels
from rubriclab.tidy import markdown_table

HEADLINES = files("rubriclab") / "resources" / "replication" / "headlines.yaml"
NOT_MODELS = "not comparable with these models"
NOT_SIZE = "not comparable at this size"


@dataclass(frozen=True)
class RunValue:
    value: float | bool | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    note: str = ""


def load_headlines(path: Path | None = None) -> list[dict[str, Any]]:
    entries = yaml.safe_load(Path(path or HEADLINES).read_text(encoding="utf-8"))
    seen = set()
    for k, entry in enumerate(entries):
        missing = [key for key in ("id", "work", "where", "sentence", "seed", "kind")
                   if key not in entry]
        if missing:
            raise ValueError(f"{path or HEADLINES}: entry {k} lacks {missing}")
        if entry["id"] in seen:
            raise ValueError(f"{path or HEADLINES}: id {entry['id']!r} given twice")
        if entry["kind"] not in ("exact", "measured", "claim"):
            raise ValueError(f"{path or HEADLINES}: {entry['id']}: unknown kind {entry['kind']!r}")
        seen.add(entry["id"])
    return entries


# --------------------------------------------------------------------------- readers

Outputs = Mapping[str, Path]


def _csv(outputs: Outputs, name: str) -> pd.DataFrame:
    return pd.read_csv(outputs[name])


def _table1(check: str, column: str) -> Callable[[Outputs], RunValue]:
    def read(outputs: Outputs) -> RunValue:
        table = _csv(outputs, "table1").set_index("check_id")
        return RunValue(float(table.loc[check, column]), n=5)
    return read


def _fig1(source: str) -> Callable[[Outputs], RunValue]:
    def read(outputs: Outputs) -> RunValue:
        rows = _csv(outputs, "fig1")
        row = rows[(rows["panel"] == "a") & (rows["source"] == source)
                   & (rows["rendering"] == "per_check") & (rows["metric"] == "correct_passed")]
        if row.empty:
            return RunValue(None, note=f"no {source} per-check row in Figure 1a")
        r = row.iloc[0]
        return RunValue(float(r["value"]), float(r["low"]), float(r["high"]), int(r["n"]))
    return read


def _fig2_ragtruth(outputs: Outputs) -> pd.DataFrame:
    rows = _csv(outputs, "fig2")
    return rows[rows["dataset"] == "ragtruth"].set_index(["rendering", "length"])


def _fig2_cost(outputs: Outputs) -> RunValue:
    rows = _fig2_ragtruth(outputs)
    try:
        start, end = rows.loc[("per_check", 3)], rows.loc[("per_check", 10)]
    except KeyError:
        return RunValue(None, note="Figure 2 lacks RAGTruth's 3- or 10-check checklist")
    return RunValue(float(start["correct_passed"] - end["correct_passed"]),
                    n=int(end["n_correct"]))


def _fig2_paragraph(outputs: Outputs) -> RunValue:
    rows = _fig2_ragtruth(outputs)
    if ("paragraph", 10) not in rows.index:
        return RunValue(None, note="Figure 2 lacks RAGTruth's 10 checks as a paragraph")
    row = rows.loc[("paragraph", 10)]
    return RunValue(float(row["correct_passed"]), n=int(row["n_correct"]))


def _fig3(outputs: Outputs) -> pd.DataFrame:
    return _csv(outputs, "fig3")


def _fig3_balanced(outputs: Outputs) -> RunValue:
    rows = _fig3(outputs)
    generated = rows[rows["rubric"] == "generated draft"]
    if generated.empty:
        return RunValue(None, note="Figure 3 has no generated draft")
    return RunValue(100 * float(generated["balanced_accuracy"].iloc[0]))


def _fig3_crossover(outputs: Outputs) -> RunValue:
    rows = _fig3(outputs)
    accuracy = rows.pivot_table(index="flawed_share", columns="rubric", values="accuracy")
    if not {"generated draft", "hand-written"} <= set(accuracy.columns):
        return RunValue(None, note="Figure 3 lacks the generated or the hand-written rubric")
    above = accuracy.index[accuracy["generated draft"] > accuracy["hand-written"]]
    if len(above) == 0:
        return RunValue(None, note="the generated draft never outscores the hand-written rubric")
    return RunValue(100 * float(min(above)))


def _fig5b(column: str) -> Callable[[Outputs], RunValue]:
    def read(outputs: Outputs) -> RunValue:
        return RunValue(float(_csv(outputs, "fig5")[column].sum()))
    return read


def _split_cell(cell: Any) -> list[float]:
    return [float(part) for part in str(cell).split(" / ")]


def _table2_within_6(outputs: Outputs) -> RunValue:
    """The largest distance of a Gate S+P leave-one-out metric from its judge's start, over the
    main file's chains and judges: the claim holds when it is at most 6 points."""
    table = _csv(outputs, "table2")
    judges = [c for c in table.columns if c.endswith(" 95% CI")]
    worst = 0.0
    for judge in (c[: -len(" 95% CI")] for c in judges):
        for _, chain in table.groupby("chain", sort=False):
            start = chain[chain["rubric_or_gate"] == "start"]
            gated = chain[chain["rubric_or_gate"] == "Gate S+P, leave-one-out"]
            if start.empty or gated.empty:
                continue
            pairs = zip(_split_cell(start[judge].iloc[0]), _split_cell(gated[judge].iloc[0]))
            worst = max([worst, *(abs(a - b) for a, b in pairs if not
                                  (math.isnan(a) or math.isnan(b)))])
    return RunValue(worst <= 6, note=f"largest distance {worst:.1f} points")


def _verify_example(column: str) -> Callable[[Outputs], RunValue]:
    def read(outputs: Outputs) -> RunValue:
        rows = _csv(outputs, "verify")
        row = rows[rows["source"].str.startswith("worked example")].iloc[0]
        low, high = (("corrected_low", "corrected_high") if column == "corrected"
                     else ("q_low", "q_high"))
        return RunValue(100 * float(row[column]), 100 * float(row[low]),
                        100 * float(row[high]), int(row["n_judged"]))
    return read


def _fig6_irrelevant(direction: str) -> Callable[[Outputs], RunValue]:
    def read(outputs: Outputs) -> RunValue:
        rows = _csv(outputs, "categories")
        rows = rows[(rows["row_kind"] == "gen->expert") & (rows["direction"] == direction)
                    & (rows["category"] == "irrelevant")]
        if rows.empty:
            return RunValue(None, note="no generated criterion in this direction")
        shares = rows["share"].astype(float)
        return RunValue(float(shares.mean()), float(shares.min()), float(shares.max()),
                        int(rows["n_criteria"].sum()),
                        note="range over generators")
    return read


def _fig5_asymmetry(outputs: Outputs) -> RunValue:
    stats = _csv(outputs, "stats")
    # one Q+ / Q- pair per generator and response model (Figure 5 and Figure A.4)
    it = stats[stats["family"] == "it"].groupby(
        ["generator", "response_model", "metric"])["estimate"].first()
    arms = sorted({(g, r) for g, r, _ in it.index})
    pairs = [(it.get((g, r, "Q-(Cg->C*)")), it.get((g, r, "Q+(Cg->C*)"))) for g, r in arms]
    pairs = [(float(minus), float(plus)) for minus, plus in pairs
             if minus is not None and plus is not None]
    if not pairs:
        return RunValue(None, note="no Q+ / Q- of a generated rubric")
    examples = stats[stats["family"] == "it"]["n_examples"]
    return RunValue(all(minus > plus for minus, plus in pairs),
                    n=int(examples.min()) if len(examples) else None,
                    note="; ".join(f"Q- {m:.2f} vs Q+ {p:.2f}" for m, p in pairs))


READERS: dict[str, Callable[[Outputs], RunValue]] = {
    "carry.table1.credit_A": _table1("A", "credit"),
    "carry.table1.credit_B": _table1("B", "credit"),
    "carry.table1.credit_C": _table1("C", "credit"),
    "carry.table1.credit_D": _table1("D", "credit"),
    "carry.table1.blame_D": _table1("D", "blame"),
    "carry.fig1.hand_correct_passed": _fig1("hand"),
    "carry.fig1.generated_correct_passed": _fig1("generated"),
    "carry.fig2.ragtruth_cost_3_to_10": _fig2_cost,
    "carry.fig2.ragtruth_paragraph_10": _fig2_paragraph,
    "carry.fig3.generated_balanced_accuracy": _fig3_balanced,
    "carry.fig3.crossover": _fig3_crossover,
    "carry.fig5b.deleted": _fig5b("deleted"),
    "carry.fig5b.deleted_with_unique_catch": _fig5b("deleted_with_unique_catch"),
    "carry.fig5b.deleted_with_blame": _fig5b("deleted_with_blame"),
    "carry.table2.sp_within_6": _table2_within_6,
    "verify.worked_example.judge_pass_rate": _verify_example("q"),
    "verify.worked_example.corrected": _verify_example("corrected"),
    "transfer.fig6.irrelevant_failing": _fig6_irrelevant("+"),
    "transfer.fig6.irrelevant_passing": _fig6_irrelevant("-"),
    "transfer.fig5.fail_beats_pass": _fig5_asymmetry,
}


# --------------------------------------------------------------------------- verdicts

def _models(config: Mapping[str, Any], keys: list[str]) -> list[str]:
    found: list[str] = []
    for key in keys:
        value: Any = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None and key == "models.revisers":
            value = [config["models"]["reviser"]]
        if value is None and key == "carry.judges":
            value = [config["models"]["judge"]]
        if value is None and key.startswith("transfer."):
            value = config["models"]["judge"]
        found += [value] if isinstance(value, str) else list(value or [])
    return [str(m).split("@", 1)[0] for m in found]


def verdict(entry: Mapping[str, Any], run: RunValue, config: Mapping[str, Any]) -> str:
    if run.value is None:
        return "not computed"
    seed = entry["seed"]
    if entry["kind"] == "exact":
        places = int(entry.get("decimals", 2))
        return "matches" if round(float(run.value), places) == round(float(seed), places) \
            else "differs"
    stand_ins = [m for m in _models(config, entry.get("models", []))
                 if m.startswith(("fake/", "local/"))]
    if stand_ins:
        return NOT_MODELS
    if entry.get("paper_n") and run.n is not None and run.n < int(entry["paper_n"]):
        return NOT_SIZE
    if entry["kind"] == "claim":
        return "holds" if bool(run.value) == bool(seed) else "does not hold"
    low, high = (seed if isinstance(seed, list) else (seed, seed))
    if run.low is not None and run.high is not None:
        return "within the interval" if low <= run.high and run.low <= high else "differs"
    return "matches" if low <= float(run.value) <= high else "differs"


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return f"{value[0]:g}-{value[1]:g}"
    return f"{float(value):.4g}"


def replication_table(outputs: Outputs, config: Mapping[str, Any],
                      headlines: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    rows = []
    for entry in headlines or load_headlines():
        if entry["id"] not in READERS:
            raise ValueError(f"headline {entry['id']!r} has no reader in "
                             "rubriclab.replication.READERS")
        try:
            run = READERS[entry["id"]](outputs)
        except KeyError as exc:  # an output or a row this run does not make
            run = RunValue(None, note=f"not in this run's outputs ({exc})")
        models = _models(config, entry.get("models", []))
        rows.append({
            "id": entry["id"], "work": entry["work"], "where": entry["where"],
            "sentence": entry["sentence"], "seed": _show(entry["seed"]),
            "run": _show(run.value),
            "interval": (f"[{run.low:.4g}, {run.high:.4g}]"
                         if run.low is not None and run.high is not None else ""),
            "n": "" if run.n is None else run.n,
            "models": ", ".join(dict.fromkeys(current_labels()(m) for m in models)),
            "verdict": verdict(entry, run, config), "note": run.note,
        })
    return pd.DataFrame(rows)


def replication_markdown(table: pd.DataFrame, run_name: str | None = None) -> str:
    counts = table["verdict"].value_counts()
    summary = ", ".join(f"{counts[v]} {v}" for v in counts.index)
    body = [[r.work, r.where, f"“{r.sentence}”", r.seed, r.run, r.interval, r.n, r.models,
             f"**{r.verdict}**" + (f" ({r.note})" if r.note else "")]
            for r in table.itertuples(index=False)]
    return "\n".join([
        "# Replication at a glance" + (f": run {run_name}" if run_name else ""), "",
        f"{len(table)} headline numbers of the three papers beside this run's ({summary}). "
        "Seed: the paper's value; run: this run's, with its interval where it has one and the "
        "items behind it (n). A number that rests on a model is compared only when the run "
        "used the paper's kind of model (not `fake/` or `local/`) at the paper's size.", "",
        *markdown_table(["work", "where", "the paper says", "seed", "run", "interval", "n",
                         "models", "verdict"], body), "",
        "The seeds' values and sentences: `src/rubriclab/resources/replication/headlines.yaml`.",
        ""])
