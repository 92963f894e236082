"""`fake/...` models: deterministic answers computed from the prompt, for tests and dry pipelines.

    fake/yes, fake/no      always "Yes" / "No"
    fake/hash              "Yes" or "No" (yes_no format) or a short text, from sha256 of the
                           request (messages, sample index), so different prompts and samples differ
    fake/unparseable       always "Maybe, it depends." (never parses as yes/no)
    fake/empty             always "" (an empty answer is a failure)

An optional `?delay_s=0.05` suffix makes each call sleep first (to interrupt runs in tests).
With RUBRICLAB_FAKE_CALL_LOG set, every call appends one line to that file (tests count calls).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from urllib.parse import parse_qs

from .request import Request

BEHAVIOURS = ("yes", "no", "hash", "unparseable", "empty")


def parse_fake_model(model: str) -> tuple[str, float]:
    if not model.startswith("fake/"):
        raise ValueError(f"not a fake model string: {model!r}")
    name, _, query = model[len("fake/"):].partition("?")
    if name not in BEHAVIOURS:
        raise ValueError(f"unknown fake model {model!r}; known: fake/{', fake/'.join(BEHAVIOURS)}")
    options = parse_qs(query)
    unknown = set(options) - {"delay_s"}
    if unknown:
        raise ValueError(f"fake model {model!r}: unknown option(s) {sorted(unknown)}")
    delay = float(options.get("delay_s", ["0"])[0])
    return name, delay


def call_digest(messages: list[dict[str, str]], sample_index: int) -> str:
    payload = json.dumps([messages, sample_index], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fake_answer(request: Request, messages: list[dict[str, str]]) -> str:
    behaviour, delay = parse_fake_model(request.model)
    if delay:
        time.sleep(delay)
    digest = call_digest(messages, request.sample_index)
    log_path = os.environ.get("RUBRICLAB_FAKE_CALL_LOG")
    if log_path:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(digest + "\n")
    if behaviour == "yes":
        return "Yes"
    if behaviour == "no":
        return "No"
    if behaviour == "unparseable":
        return "Maybe, it depends."
    if behaviour == "empty":
        return ""
    if request.response_format == "yes_no":
        return "Yes" if int(digest[:8], 16) % 2 == 0 else "No"
    return f"fake answer {digest[:12]}"
