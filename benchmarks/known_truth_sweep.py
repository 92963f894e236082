"""Where the pipeline shows each claim: the known-truth world over a grid of judge error rates.

For every (TPR, TNR) of the grid, config/known_truth.yaml with every scripted judge
(`fake/known-*judge*?tpr=..&tnr=..`) set to those rates, and nothing else changed, is run as a
named run (runs/sweep-tpr<..>-tnr<..>/) up to its replication page (figures/replication.csv),
and what each claim's numbers say there is recorded (`as_measured`: the verdict a run of the
paper's models would get, since the scripted models are never the paper's). The table, one row per claim and one column per grid point, is
the region where the pipeline shows the claim:

    .venv/bin/python benchmarks/known_truth_sweep.py --data-mirror ../shared/data \
        [--rates 0.90 0.95 0.99] [--cores 2]

Writes runs/known-truth-sweep/known_truth_sweep.csv and .md, with each grid point's overlay and
log (docs/replication.md quotes the .md).
All grid points share one cache (the launching directory's), so the scripted authors' answers
are made once and only the judges' change. Offline.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from rubriclab.replication.verdicts import CANNOT_TELL  # noqa: E402

SHOWS = {"holds": "yes", "replicates": "yes", "matches": "yes", "does not hold": "no",
         "does not replicate": "no", "differs": "no", CANNOT_TELL: "?", "not computed": "-"}
PAGE = "figures/replication.csv"
FIGURE6 = "results/carry/figures/fig6_gated_quality.csv"
KNOWN_JUDGE = re.compile(r"^fake/known-[a-z-]*judge\?")


def at_rates(model: str, tpr: float, tnr: float) -> str:
    model = re.sub(r"tpr=[0-9.]+", f"tpr={tpr:g}", model)
    return re.sub(r"tnr=[0-9.]+", f"tnr={tnr:g}", model)


def grid_overlay(base: dict[str, Any], tpr: float, tnr: float) -> dict[str, Any]:
    """`base` with every scripted judge at (tpr, tnr). carry's judges stay distinct (each
    its own salt, so their draws differ as the three judges' did) and the main judge stays the
    one of them it was."""
    def walk(value: Any) -> Any:
        if isinstance(value, str) and KNOWN_JUDGE.match(value):
            return at_rates(value, tpr, tnr)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    overlay = walk({k: v for k, v in base.items() if k != "labels"})
    judges = (base.get("carry") or {}).get("judges") or []
    if judges:
        salted = [at_rates(j, tpr, tnr) + f"&salt=judge{k}" for k, j in enumerate(judges)]
        overlay["carry"]["judges"] = salted
        main = base["models"]["judge"]
        if main in judges:
            overlay["models"]["judge"] = salted[judges.index(main)]
    return overlay


def run_point(name: str, overlay_path: Path, targets: list[str], args) -> float:
    command = [str(REPO / ".venv" / "bin" / "snakemake"), "--cores", str(args.cores),
               "--configfile", "config/config.yaml", str(overlay_path),
               "--config", f"run={name}", f"data_mirror={args.data_mirror}", "--", *targets]
    started = time.monotonic()
    log = overlay_path.with_suffix(".log")
    with log.open("w") as out:
        done = subprocess.run(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                              timeout=args.timeout_s, check=False)
    if done.returncode != 0:
        raise SystemExit(f"grid point {name} failed (exit {done.returncode}); see {log}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-mirror", required=True)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.90, 0.95, 0.99])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=3 * 3600,
                        help="the most one grid point's run may take")
    parser.add_argument("--out", default=str(REPO / "runs" / "known-truth-sweep"))
    parser.add_argument("--summarise-only", action="store_true",
                        help="read the grid points' finished runs instead of running them")
    args = parser.parse_args()
    args.data_mirror = str(Path(args.data_mirror).resolve())

    base = yaml.safe_load((REPO / "config" / "known_truth.yaml").read_text(encoding="utf-8"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frames, figure6 = [], []
    for tpr in args.rates:
        for tnr in args.rates:
            name = f"sweep-tpr{tpr:g}-tnr{tnr:g}"
            overlay = grid_overlay(base, tpr, tnr)
            overlay_path = out / f"{name}.yaml"
            overlay_path.write_text(yaml.safe_dump(overlay, sort_keys=False), encoding="utf-8")
            seconds = math.nan if args.summarise_only else run_point(name, overlay_path, [PAGE],
                                                                      args)
            table = pd.read_csv(REPO / "runs" / name / PAGE, keep_default_na=False)
            table["tpr"], table["tnr"], table["seconds"] = tpr, tnr, seconds
            frames.append(table)
            figure6.append({"tpr": tpr, "tnr": tnr,
                            **figure6_moves(REPO / "runs" / name / FIGURE6)})
            print(f"{name}: {'read' if math.isnan(seconds) else f'{seconds:.0f} s'}, "
                  f"{(table['as_measured'].isin(['holds', 'replicates'])).sum()} claims shown",
                  flush=True)
    sweep = pd.concat(frames, ignore_index=True)
    sweep.to_csv(out / "known_truth_sweep.csv", index=False)
    text = region_markdown(sweep) + "\n" + figure6_markdown(pd.DataFrame(figure6))
    (out / "known_truth_sweep.md").write_text(text, encoding="utf-8")
    print(text)


def figure6_moves(path: Path) -> dict[str, float]:
    """Figure 6 at one grid point, in points, over revisers and metrics: each gate's largest
    move from the start either way, and its largest fall below it, per panel."""
    table = pd.read_csv(path)
    moves: dict[str, float] = {}
    for (source, gate), rows in table.groupby(["source", "gate"]):
        change = rows["value"] - rows["start"]
        moves[f"{source} {gate} move"] = float(change.abs().max())
        moves[f"{source} {gate} fall"] = max(0.0, float((-change).max()))
    return moves


def figure6_markdown(moves: pd.DataFrame) -> str:
    """Per grid point, each gate's largest move (either way) / largest fall below the start,
    over revisers and metrics, per panel (hand, label): what "stays near the start" reads."""
    gates = ["none", "R", "P", "S", "S+P"]
    header = ["TPR/TNR", *(f"{source} {gate}" for source in ("hand", "label") for gate in gates)]
    lines = ["Figure 6, largest move / largest fall from the start (points, over revisers and "
             "metrics):", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in moves.to_dict("records"):
        cells = [f"{row[f'{s} {g} move']:.1f} / {row[f'{s} {g} fall']:.1f}"
                 for s in ("hand", "label") for g in gates]
        lines.append("| " + " | ".join([f"{row['tpr']:g}/{row['tnr']:g}", *cells]) + " |")
    return "\n".join(lines) + "\n"


def region_markdown(sweep: pd.DataFrame) -> str:
    """One row per claim, one column per (TPR, TNR): yes (holds / replicates), no, ? (cannot
    tell), - (not computed); and the region in words."""
    sweep = sweep[sweep["kind"] != "arithmetic"]
    points = list(dict.fromkeys(zip(sweep["tpr"], sweep["tnr"])))
    header = ["claim", *(f"{tpr:g}/{tnr:g}" for tpr, tnr in points), "shown at (TPR/TNR)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for claim, rows in sweep.groupby("id", sort=False):
        if (rows["as_measured"] == "not computed").all():
            continue
        marks = {(r.tpr, r.tnr): SHOWS.get(r.as_measured, r.as_measured)
                 for r in rows.itertuples(index=False)}
        shown = [p for p in points if marks.get(p) == "yes"]
        region = ("every point" if len(shown) == len(points) else
                  "none" if not shown else ", ".join(f"{t:g}/{n:g}" for t, n in shown))
        lines.append("| " + " | ".join([f"{rows['where'].iloc[0]}: {claim}",
                                        *(marks.get(p, "") for p in points), region]) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    main()
