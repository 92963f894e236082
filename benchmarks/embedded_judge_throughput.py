"""Throughput of the embedded judge on carry Figure 2 prompts (first call per item vs the rest).

Judges a few prepared items (run `make reproduce` first so data/prepared/ exists) with a fresh,
temporary cache, and prints the median latency of the first call of each item (whole prompt) and
of the following calls (llama.cpp reuses the shared prefix), and the calls per second.

    .venv/bin/python benchmarks/embedded_judge_throughput.py [--dataset summedits] [--items 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from rubriclab.carry.checklists import load_generic_checklist
from rubriclab.carry.judge_fig2 import build_requests
from rubriclab.llm import LLMClient, LLMConfig, ModelSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="summedits")
    parser.add_argument("--items", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    items = pd.read_csv(f"data/prepared/{args.dataset}.csv", keep_default_na=False)
    items = items[items.split == "evaluation"].head(args.items)
    checklist = load_generic_checklist(args.dataset)
    requests, rows = build_requests(items, checklist, list(range(3, 11)), 1, "local/default", 0.0, 4)
    with tempfile.TemporaryDirectory() as tmp:
        config = LLMConfig(
            cache_dir=Path(tmp), models_dir_override=Path(".cache/rubriclab/models"),
            per_model={"local/default": ModelSettings(concurrency=1, n_threads=args.threads,
                                                      n_ctx=2048)},
            progress_interval_s=3600,
        )
        with LLMClient(config) as client:
            client.run(requests[:1])  # load the model outside the measurement
            started = time.perf_counter()
            completions = client.run(requests[1:])
            elapsed = time.perf_counter() - started
    latencies = [c.latency_s for c in completions]
    first_of_item = [lat for lat, row, prev in zip(latencies, rows[1:], rows) if row["item_id"] != prev["item_id"]]
    rest = [lat for lat, row, prev in zip(latencies, rows[1:], rows) if row["item_id"] == prev["item_id"]]
    print(f"{len(completions)} calls on {len(items)} {args.dataset} items in {elapsed:.1f} s "
          f"({len(completions) / elapsed:.2f} calls/s)")
    if first_of_item:
        print(f"first call of an item: median {statistics.median(first_of_item):.2f} s")
    print(f"following calls:       median {statistics.median(rest):.2f} s")
    per_check = [lat for lat, row, prev in zip(latencies, rows[1:], rows)
                 if row["item_id"] == prev["item_id"] and row["rendering"] == "per_check"]
    paragraph = [lat for lat, row in zip(latencies, rows[1:]) if row["rendering"] == "paragraph"]
    print(f"  per-check: median {statistics.median(per_check):.2f} s; "
          f"paragraph: median {statistics.median(paragraph):.2f} s")


if __name__ == "__main__":
    main()
