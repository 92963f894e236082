"""The coverage study: every interval method the project reports, in worlds with a known truth.

For every grid cell and method it prints coverage and mean width, each with its Monte Carlo
error, then a summary per method (rubriclab.stats.coverage; the grid and the defaults chosen
from it are in docs/statistics.md), the decisions its rules make (`decisions`) and the exact
coverage of carry's binomial intervals. At the default size it runs in about four minutes on
one core of the development machine (it uses one core); `--families transfer carry` alone in
about two minutes of CPU (255 s wall on the shared 2-core machine); `--families verify` alone
(900 cells, 7 methods, among them the exact projection interval and truescore's delta
method) in 303 s on the shared 2-core machine. The verify part ends with every size's
coverage and width per method and the interval `rubriclab correct` takes by default
(`correct_default`).

    nice .venv/bin/python benchmarks/coverage.py [--seed 0] [--csv results/coverage.csv]
        [--verify-replicates 500] [--transfer-replicates 1000] [--carry-replicates 2000]
        [--boot 1000] [--families verify transfer carry]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rubriclab.stats.coverage import StudySize, run_study
from rubriclab.stats.coverage_report import (cell_markdown, decisions, exact_markdown,
                                             summary_markdown, verify_pivot_markdown,
                                             verify_size_markdown)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verify-replicates", type=int, default=500)
    parser.add_argument("--transfer-replicates", type=int, default=1000)
    parser.add_argument("--carry-replicates", type=int, default=2000)
    parser.add_argument("--boot", type=int, default=1000,
                        help="bootstrap draws per replicate for every bootstrap method")
    parser.add_argument("--families", nargs="+", default=["verify", "transfer", "carry"],
                        choices=["verify", "transfer", "carry"])
    parser.add_argument("--csv", type=Path, help="also write every result row here")
    args = parser.parse_args(argv)
    size = StudySize(verify_replicates=args.verify_replicates, verify_boot=args.boot,
                     transfer_replicates=args.transfer_replicates, transfer_boot=args.boot,
                     carry_replicates=args.carry_replicates, carry_boot=args.boot)

    def progress(family: str, done: int, total: int) -> None:
        if done == total or done % 50 == 0:
            print(f"  {family}: {done}/{total} cells, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)

    started = time.perf_counter()
    table = run_study(size, seed=args.seed, families=tuple(args.families), progress=progress)
    elapsed = time.perf_counter() - started
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
    print(f"# Coverage study, seed {args.seed}: {len(table)} results in {elapsed:.0f} s\n")
    print(f"Replicates per cell: verify {size.verify_replicates}, transfer "
          f"{size.transfer_replicates}, carry {size.carry_replicates}; {args.boot} bootstrap "
          "draws per replicate. Coverage ± Monte Carlo error, mean width ± Monte Carlo error.\n")
    print("## Summary\n")
    print(summary_markdown(table))
    chosen = decisions(table)
    if chosen:
        print("## Decisions (rules in rubriclab.stats.coverage_report.decisions)\n")
        for key, value in chosen.items():
            print(f"- {key}: {value}")
        print()
    if "verify" in args.families:
        print("## verify: every size, every method\n")
        print("Mean coverage over the size's 45 worlds (lowest cell) / mean width; * where "
              "every cell covers at least 0.95 within one Monte Carlo error.\n")
        print(verify_pivot_markdown(table))
        print(verify_size_markdown(table))
    if "carry" in args.families:
        print("## carry: exact coverage of the binomial intervals\n")
        print(exact_markdown())
    for family in args.families:
        print(f"## {family}: every cell\n")
        print(cell_markdown(table, family))


if __name__ == "__main__":
    main()
