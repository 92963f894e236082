"""A model job in a process of its own, as Snakemake runs one: for tests of what every job of a
run shares (the rate limits, the bill). Started with multiprocessing's spawn context."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

WARM_UP = "openai/warm-up"  # a model of its own: its schedule is not the one under test


def run_job(config: dict, ledger_path: str, requests: list[tuple[str, str]], out_path: str,
            ready, go, warm_up: bool = True) -> None:
    """Answer one yes/no request per (model, text) with a fresh client once `go` is set;
    write their outcomes (or the error that stopped the job) to `out_path`."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-secret")
    from rubriclab.llm import Ledger, LLMClient, LLMConfig, Request

    cfg = LLMConfig.from_dict(config)
    with LLMClient(cfg, ledger=Ledger(Path(ledger_path), rule="job")) as client:
        # litellm's first call in a process takes a while (imports, an HTTP client): made
        # before the start signal, so that the jobs' calls go out when they are scheduled.
        if warm_up:
            client.run([Request.chat(WARM_UP, [{"role": "user",
                                                "content": f"warm up {os.getpid()}"}],
                                     response_format="yes_no", max_tokens=4)],
                       raise_on_failure=False)
        ready.set()
        go.wait(60)
        error = ""
        try:
            answers = client.run([Request.chat(model, [{"role": "user", "content": text}],
                                               response_format="yes_no", max_tokens=4)
                                  for model, text in requests], raise_on_failure=False)
            outcomes = [a.outcome for a in answers]
        except Exception as exc:  # noqa: BLE001 - reported to the test
            outcomes, error = [], f"{type(exc).__name__}: {exc}"
    Path(out_path).write_text(json.dumps({"outcomes": outcomes, "error": error}))


def start_jobs(tmp_path, llm: dict, requests_per_job: list[list[tuple[str, str]]],
               warm_up: bool = True):
    """Start one process per job and wait until each is ready; a job's requests go out when
    its `go` event (the last of each tuple) is set."""
    spawn = multiprocessing.get_context("spawn")
    jobs = []
    for n, requests in enumerate(requests_per_job):
        ready, go = spawn.Event(), spawn.Event()
        out = tmp_path / f"job{n}.json"
        process = spawn.Process(target=run_job, args=(
            llm, str(tmp_path / "results" / "ledger" / f"job{n}.jsonl"), requests, str(out),
            ready, go, warm_up))
        process.start()
        jobs.append((process, out, ready, go))
    for process, _, ready, _ in jobs:
        assert ready.wait(120), "a job did not start"
    return jobs


def finish(jobs):
    results = []
    for process, out, _, _ in jobs:
        process.join(120)
        assert process.exitcode == 0, f"a job exited with {process.exitcode}"
        results.append(json.loads(out.read_text()))
    return results
