"""Calls per second through litellm's HTTP path, against the in-process fake model, side by side.

The same yes/no requests go, in this one run, (a) to `fake/hash` (no HTTP: the model layer's own
cost) and (b) through litellm to the rehearsal server on 127.0.0.1, once in each of the three
wire formats paper.yaml's models use (OpenAI-compatible, Anthropic messages, Gemini), with no
faults, so the figure is the client's cost per call plus a loopback round trip. The paper-scale
rehearsal (`make rehearse`) moves about this many calls per second per job; its own wall time
and rate are in `rehearsal/rehearsal_report.md`, which `--report` prints beside these.

    .venv/bin/python benchmarks/http_path_throughput.py [--requests 1000] [--concurrency 8]
        [--report rehearsal/rehearsal_report.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from rubriclab.llm import LLMClient, LLMConfig, Request
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

MODELS = {"fake/hash": None, "deepseek/deepseek-chat": "/v1",
          "anthropic/claude-haiku-4-5-20251001": "", "gemini/gemini-2.0-flash": ""}


def requests_for(model: str, n: int, tag: str) -> list[Request]:
    return [Request.chat(model, [
        {"role": "system", "content": "You are a careful grader."},
        {"role": "user", "content": f"Document {tag}-{i}: " + "lorem ipsum " * 100
                                    + "\nAnswer with exactly one word: Yes or No."},
    ], response_format="yes_no", max_tokens=4, temperature=1.0) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args()
    for key in ("DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        os.environ.setdefault(key, "benchmark-placeholder")
    with RehearsalServer(faults=FaultMix.none()) as server, \
            tempfile.TemporaryDirectory() as tmp:
        per_model = {m: {"concurrency": args.concurrency, "timeout_s": 30,
                         **({"api_base": server.url + suffix} if suffix is not None else {})}
                     for m, suffix in MODELS.items()}
        config = LLMConfig.from_dict({"per_model": per_model, "progress_interval_s": 3600},
                                     cache_dir=Path(tmp) / "cache")
        with LLMClient(config) as client:
            client.run(requests_for("deepseek/deepseek-chat", 4, "warm"))  # imports litellm
            rates = {}
            for model in MODELS:
                batch = requests_for(model, args.requests, model)
                started = time.perf_counter()
                completions = client.run(batch)
                elapsed = time.perf_counter() - started
                assert all(c.outcome == "ok" and not c.cached for c in completions)
                rates[model] = args.requests / elapsed
    print(f"{args.requests} uncached yes/no calls per model, concurrency {args.concurrency}, "
          f"one process")
    for model, rate in rates.items():
        path = "in-process (no HTTP)" if MODELS[model] is None else "litellm HTTP, loopback"
        print(f"  {model:40s} {rate:8.1f} calls/s   {path}")
    http = [rate for model, rate in rates.items() if MODELS[model] is not None]
    print(f"fake / HTTP (mean of the three wire formats): {rates['fake/hash'] / (sum(http) / len(http)):.1f}x")
    if args.report and args.report.is_file():
        report = json.loads(args.report.read_text())
        served = sum(report["server"]["requests"].values())
        print(f"rehearsal {args.report}: {served} requests in {report['wall_s']:.0f} s, "
              f"{report['calls_per_s']} calls/s over the whole run")


if __name__ == "__main__":
    main()
