"""How fast a local model (`local/...`, the embedded default) answers on this machine, measured,
for the plan's hours: a local model is paid in time, and that time depends on the machine's
cores, far more than an API model's does.

A request takes `per_request_s + prompt_tokens * per_prompt_token_s + completion_tokens *
per_completion_token_s`, the three fitted (non-negative least squares) to measured calls, in
this order of preference:

1. the ledgers of an earlier run in the working directory (`results/ledger/*.jsonl` and the
   attempts journals beside them, which no rerun deletes): every call the model answered there,
   on the pipeline's own prompts, so llama.cpp's reuse of a shared prompt prefix is in the
   figure, as it is in a run;
2. a calibration on this machine (`calibrate`): a few requests of the pipeline's shape (one
   document judged against several checks, the check last; a longer free answer), sent through
   the model layer with a throwaway cache, so each is really computed; its result is kept in
   `<cache_dir>/plan_speed.json` under the model's fingerprint, the machine and the thread count,
   and read again by the next plan;
3. else nothing is measured, and the plan says that its hours for the model are assumed.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, overload

import numpy as np
import pandas as pd

# At least this many answered calls to fit by; fewer say little about a run of thousands.
MIN_CALLS = 8
SPEED_FILE = "plan_speed.json"
LEDGER_FOLDER = Path("results") / "ledger"
# The calibration's size: documents, checks judged per document, and the free answer's tokens.
CALIBRATION_DOCUMENTS = 2
CALIBRATION_CHECKS = 3
CALIBRATION_FREE_TOKENS = 48


@dataclass(frozen=True)
class Speed:
    per_request_s: float
    per_prompt_token_s: float
    per_completion_token_s: float
    calls: int          # measured calls fitted
    source: str         # where the figure comes from, in words

    @overload
    def seconds(self, requests: float, prompt_tokens: float, completion_tokens: float) -> float:
        ...

    @overload
    def seconds(self, requests: pd.Series, prompt_tokens: pd.Series,
                completion_tokens: pd.Series) -> pd.Series:
        ...

    def seconds(self, requests: Any, prompt_tokens: Any, completion_tokens: Any) -> Any:
        """Seconds of `requests` requests of these tokens: numbers, or pandas Series row by
        row."""
        return (requests * self.per_request_s + prompt_tokens * self.per_prompt_token_s
                + completion_tokens * self.per_completion_token_s)

    def describe(self) -> str:
        prompt = (f"{1 / self.per_prompt_token_s:,.0f} prompt tokens/s"
                  if self.per_prompt_token_s > 0 else "prompt tokens free")
        completion = (f"{1 / self.per_completion_token_s:,.1f} completion tokens/s"
                      if self.per_completion_token_s > 0 else "completion tokens free")
        return (f"{self.per_request_s:.2f} s a request, {prompt}, {completion}; {self.source}, "
                f"{self.calls} calls")


def fit_speed(calls: pd.DataFrame, source: str, min_calls: int = MIN_CALLS) -> Speed | None:
    """The three per-request, per-prompt-token and per-completion-token seconds that best fit
    `calls` (columns latency_s, prompt_tokens, completion_tokens), none negative; None with
    fewer than `min_calls` calls."""
    from scipy.optimize import nnls

    calls = calls[(calls["latency_s"] > 0)]
    if len(calls) < min_calls:
        return None
    design = np.column_stack([np.ones(len(calls)), calls["prompt_tokens"].astype(float),
                              calls["completion_tokens"].astype(float)])
    coefficients, _ = nnls(design, calls["latency_s"].astype(float).to_numpy())
    per_request, per_prompt_token, per_completion_token = (float(c) for c in coefficients)
    return Speed(per_request, per_prompt_token, per_completion_token, calls=len(calls),
                 source=source)


def answered_calls(ledger: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """The calls of `model` (None: of every model) in ledger rows that computed an answer
    (not cache hits, not copies from a base run, not failures, not calls in flight when their
    process ended, of no known answer or tokens), each key of each run once."""
    from rubriclab.llm.ledger import PAID_UNKNOWN

    answered = (~ledger["cached"].astype(bool) & (ledger["attempts"].fillna(0) > 0)
                & ~ledger["outcome"].isin(["failed", PAID_UNKNOWN]))
    if model is not None:
        answered &= ledger["model"] == model
    return ledger[answered].drop_duplicates(subset=["key", "run"])


def ledger_paths(workdir: Path) -> list[Path]:
    """The ledgers of the runs in `workdir` and the attempts journals beside them."""
    folder = Path(workdir) / LEDGER_FOLDER
    return sorted(folder.glob("*.jsonl")) + sorted((folder / "attempts").glob("*.jsonl"))


def speed_from_ledgers(workdir: Path, model: str) -> Speed | None:
    """From the ledgers and attempts journals of earlier runs in `workdir`."""
    from rubriclab.llm.ledger import read_ledgers

    paths = ledger_paths(workdir)
    if not paths:
        return None
    calls = answered_calls(read_ledgers(paths), model)
    return fit_speed(calls, f"measured from the ledgers of an earlier run in {workdir}")


def machine_key(model: str, fingerprint: str, n_threads: int | None) -> str:
    """A calibration holds for one model, machine and thread count."""
    return json.dumps([model, fingerprint, socket.gethostname(), platform.machine(),
                       os.cpu_count(), n_threads or os.cpu_count()])


def read_calibration(path: Path, key: str) -> Speed | None:
    if not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8")).get(key)
        return Speed(**entry) if entry else None
    except (ValueError, TypeError):
        return None  # an unreadable record is measured again


def write_calibration(path: Path, key: str, speed: Speed) -> None:
    record = {}
    if path.is_file():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            record = {}
    record[key] = asdict(speed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def calibration_requests(model: str) -> list:
    """Requests of the pipeline's shape: documents judged check by check, the check last (so
    llama.cpp reuses the document's prefix, as in carry's and Figure 2's judging), and one
    free answer of CALIBRATION_FREE_TOKENS tokens."""
    from rubriclab.llm.request import Request

    sentence = ("The quarterly report describes the storage bucket policies, the network rules "
                "and the access keys of each environment, with the findings of the audit. ")
    requests = []
    for d in range(CALIBRATION_DOCUMENTS):
        document = f"Document {d}.\n" + sentence * 12
        for c in range(CALIBRATION_CHECKS):
            requests.append(Request.chat(model, [{"role": "user", "content": (
                f"{document}\nCheck {c}: does the report name the access keys of environment "
                f"{c}? Answer Yes or No.")}], response_format="yes_no", max_tokens=4))
    requests.append(Request.chat(model, [{"role": "user", "content": (
        sentence * 4 + "\nSummarise the report in three sentences.")}],
        response_format="text", max_tokens=CALIBRATION_FREE_TOKENS))
    return requests


def calibrate(model: str, llm: Any) -> Speed | None:
    """Send the calibration requests through the model layer, with a throwaway cache (so each
    is computed) and the run's models folder; fit their latencies. None where the model
    cannot be loaded here."""
    from rubriclab.llm.client import LLMClient

    with tempfile.TemporaryDirectory(prefix="rubriclab-calibration-") as folder:
        config = replace(llm, cache_dir=Path(folder), models_dir_override=llm.models_dir)
        started = time.monotonic()
        with LLMClient(config) as client:
            # The first call loads the model: left out of the fit (a run loads it once a job).
            client.run(calibration_requests(model)[:1], label="calibration (loading the model)")
            completions = client.run(calibration_requests(model)[1:], label="calibration")
    calls = pd.DataFrame([{"latency_s": c.latency_s, "prompt_tokens": c.usage.prompt_tokens,
                           "completion_tokens": c.usage.completion_tokens}
                          for c in completions if c.outcome != "failed"])
    if calls.empty:
        return None
    # Its requests are chosen to tell the three apart: every one of them counts.
    # The load beside it says how busy the machine was (a busy one measures slow: delete
    # SPEED_FILE to measure again).
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return fit_speed(calls, f"calibrated on {socket.gethostname()} ({time.strftime('%Y-%m-%d')}, "
                            f"{time.monotonic() - started:.0f} s, load average {load:.1f} on "
                            f"{os.cpu_count()} cores)", min_calls=len(calls))


def measured_speed(model: str, workdir: Path, llm: Any, *, may_calibrate: bool = True,
                   calibrator=calibrate) -> Speed | None:
    """The model's speed by the order of the module's docstring; None: not measured."""
    from_ledgers = speed_from_ledgers(workdir, model)
    if from_ledgers is not None:
        return from_ledgers
    path = llm.cache_dir / SPEED_FILE
    try:
        fingerprint = _fingerprint(model, llm)
    except Exception:  # the model cannot be found or assembled here: nothing to measure
        return None
    key = machine_key(model, fingerprint, llm.settings_for(model).n_threads)
    cached = read_calibration(path, key)
    if cached is not None or not may_calibrate:
        return cached
    speed = calibrator(model, llm)
    if speed is not None:
        write_calibration(path, key, speed)
    return speed


def _fingerprint(model: str, llm: Any) -> str:
    from rubriclab.llm.embedded import resolve_local_model

    return resolve_local_model(model, llm.models_dir).sha256
