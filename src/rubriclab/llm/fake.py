"""`fake/...` models: deterministic answers computed from the prompt, for tests and dry pipelines.

    fake/yes, fake/no      always "Yes" / "No"
    fake/hash              "Yes" or "No" (yes_no format), a valid answer in the structured
                           formats (scale, verdict list, rubric checks, rubric revision, the
                           refund agent's tool calls, transfer's formats), or a
                           short text, all from sha256 of the request (messages, sample
                           index), so different prompts and samples differ
    fake/unparseable       always "Maybe, it depends." (never parses as yes/no)
    fake/empty             always "" (an empty answer is a failure)
    fake/<other>           a scripted model of a package registered with the provider
                           registry (rubriclab.llm.providers), which checks its options and
                           answers it: the known-truth worlds' fake/known-judge?tpr=&tnr=,
                           fake/known-writer, fake/known-reviser, fake/known-agent?pass_rate=,
                           fake/known-transfer-* (rubriclab.known_truth), which answer from the
                           ground truth the run prepared

An optional `?delay_s=0.05` suffix makes each call sleep first (to interrupt runs in tests);
`?salt=<text>` mixes the text into the digest, so fake/hash?salt=b answers unlike fake/hash
(a different model for tests that swap one).
With RUBRICLAB_FAKE_CALL_LOG set, every call appends one line to that file (tests count calls).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import lru_cache
from urllib.parse import parse_qs

from .providers import FAKE, ScriptedModels, scripted_behaviours, scripted_model
from .request import Request
from .valid_answers import structured_answer

OWN_BEHAVIOURS = ("yes", "no", "hash", "unparseable", "empty")


@lru_cache(maxsize=1)
def behaviours() -> tuple[str, ...]:
    """This module's behaviours, then the registered scripted models'."""
    scripted = tuple(scripted_behaviours())
    clash = sorted(set(OWN_BEHAVIOURS) & set(scripted))
    if clash:
        raise ValueError(f"scripted models registered as fake/{', fake/'.join(clash)} would "
                         "shadow rubriclab.llm.fake's own behaviours of those names")
    return (*OWN_BEHAVIOURS, *scripted)


def _scripted(name: str) -> ScriptedModels | None:
    return None if name in OWN_BEHAVIOURS else scripted_model(name)


def parse_fake_model(model: str) -> tuple[str, float]:
    name, _, query = FAKE.name_of(model).partition("?")
    if name not in behaviours():
        raise ValueError(f"unknown fake model {model!r}; known: fake/{', fake/'.join(behaviours())}")
    options = parse_qs(query)
    scripted = _scripted(name)
    if scripted is not None:
        scripted.check_options(name, model, set(options))
    else:
        unknown = set(options) - {"delay_s", "salt"}
        if unknown:
            raise ValueError(f"fake model {model!r}: unknown option(s) {sorted(unknown)}")
    delay = float(options.get("delay_s", ["0"])[0])
    return name, delay


def fake_fingerprint(model: str) -> str:
    """The model identity part of a fake model's cache keys."""
    scripted = _scripted(parse_fake_model(model)[0])
    return scripted.fingerprint if scripted is not None else "fake-v1"


def call_digest(messages: list[dict[str, str]], sample_index: int) -> str:
    payload = json.dumps([messages, sample_index], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fake_answer(request: Request, messages: list[dict[str, str]]) -> str:
    behaviour, delay = parse_fake_model(request.model)
    if delay:
        time.sleep(delay)
    digest = call_digest(messages, request.sample_index)
    salt = parse_qs(request.model.partition("?")[2]).get("salt")
    if salt:
        digest = hashlib.sha256((salt[0] + digest).encode("utf-8")).hexdigest()
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
    scripted = _scripted(behaviour)
    if scripted is not None:
        return scripted.answer(behaviour, request.model, request.sample_index,
                               request.response_format, messages)
    if request.response_format == "yes_no":
        return "Yes" if int(digest[:8], 16) % 2 == 0 else "No"
    structured = structured_answer(request.response_format, messages, digest)
    if structured is not None:
        return structured
    return f"fake answer {digest[:12]}"
