"""Cached-call overhead: a cache hit through the model layer against an uncached fake call.

Both are measured in this one run, side by side, over the same requests, repeated; the medians
and their ratio are printed. The fake model answers in microseconds, so the uncached time is
almost all model-layer work (key, cache write, ledger, asyncio); a real model call costs
0.2 s (embedded) to seconds (API), against which the cached figure is what a warm rerun pays.

    .venv/bin/python benchmarks/cached_call_overhead.py [--requests 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rubriclab.llm import Ledger, LLMClient, LLMConfig, Request


def requests_for(n: int, tag: str) -> list[Request]:
    return [
        Request.chat("fake/hash", [
            {"role": "system", "content": "You are a careful grader."},
            {"role": "user", "content": f"Document {tag}-{i}: " + "lorem ipsum " * 150
                                        + "\nDoes the summary meet the requirement? Yes or No."},
        ], response_format="yes_no", max_tokens=4)
        for i in range(n)
    ]


def timed_run(config: LLMConfig, ledger_path: Path, requests: list[Request]) -> tuple[float, int]:
    with LLMClient(config, ledger=Ledger(ledger_path, "benchmark")) as client:
        started = time.perf_counter()
        completions = client.run(requests, label="benchmark")
        elapsed = time.perf_counter() - started
    return elapsed / len(requests), sum(c.cached for c in completions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    uncached, cached = [], []
    with tempfile.TemporaryDirectory() as tmp:
        config = LLMConfig(cache_dir=Path(tmp) / "cache", progress_interval_s=3600)
        for repeat in range(args.repeats):
            batch = requests_for(args.requests, f"r{repeat}")
            per_call, hits = timed_run(config, Path(tmp) / "miss.jsonl", batch)
            assert hits == 0
            uncached.append(per_call)
            per_call, hits = timed_run(config, Path(tmp) / "hit.jsonl", batch)
            assert hits == len(batch)
            cached.append(per_call)
    miss, hit = statistics.median(uncached), statistics.median(cached)
    print(f"requests per batch: {args.requests}, repeats: {args.repeats}")
    print(f"uncached fake call: {miss * 1e6:9.1f} us per request (median)")
    print(f"cached call:        {hit * 1e6:9.1f} us per request (median)")
    print(f"ratio cached / uncached: {hit / miss:.3f}")


if __name__ == "__main__":
    main()
