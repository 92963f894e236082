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
import copy
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

    original = copy.deepcopy(base)
    overlay = walk({k: v for k, v in base.items() if k != "labels"})
    judges = (original.get("carry") or {}).get("judges") or []
    if judges:
        salted = [at_rates(j, tpr, tnr) + f"&salt=judge{k}" for k, j in enumerate(judges)]
        overlay["carry"]["judges"] = salted
        main = original["models"]["judge"]
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
    args = parser.parse_args()
    args.data_mirror = str(Path(args.data_mirror).resolve())

    base = yaml.safe_load((REPO / "config" / "known_truth.yaml").read_text(encoding="utf-8"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    for tpr in args.rates:
        for tnr in args.rates:
            name = f"sweep-tpr{tpr:g}-tnr{tnr:g}"
            overlay = grid_overlay(base, tpr, tnr)
            overlay_path = out / f"{name}.yaml"
            overlay_path.write_text(yaml.safe_dump(overlay, sort_keys=False), encoding="utf-8")
            seconds = run_point(name, overlay_path, [PAGE], args)
            table = pd.read_csv(REPO / "runs" / name / PAGE, keep_default_na=False)
            table["tpr"], table["tnr"], table["seconds"] = tpr, tnr, round(seconds)
            frames.append(table)
            print(f"{name}: {round(seconds)} s, "
                  f"{(table['as_measured'].isin(['holds', 'replicates'])).sum()} claims shown",
                  flush=True)
    sweep = pd.concat(frames, ignore_index=True)
    sweep.to_csv(out / "known_truth_sweep.csv", index=False)
    (out / "known_truth_sweep.md").write_text(region_markdown(sweep), encoding="utf-8")
    print(region_markdown(sweep))


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
