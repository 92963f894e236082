"""`fake/...` models: deterministic answers computed from the prompt, for tests and dry pipelines.

    fake/yes, fake/no      always "Yes" / "No"
    fake/hash              "Yes" or "No" (yes_no format), a valid answer in the structured
                           formats (scale, verdict list, rubric checks, rubric revision, the
                           refund agent's tool calls, transfer's formats), or a
                           short text, all from sha256 of the request (messages, sample
                           index), so different prompts and samples differ
    fake/unparseable       always "Maybe, it depends." (never parses as yes/no)
    fake/empty             always "" (an empty answer is a failure)
    fake/known-judge?tpr=&tnr=, fake/known-writer, fake/known-reviser
                           the known-truth world's scripted models, which answer from the
                           ground truth the run prepared (rubriclab.llm.known)
    fake/known-transfer-generator, fake/known-transfer-responder?q_pass=&q_fail=,
    fake/known-transfer-judge?tpr=&tnr=
                           transfer's known-truth world (rubriclab.llm.known_transfer)

An optional `?delay_s=0.05` suffix makes each call sleep first (to interrupt runs in tests);
`?salt=<text>` mixes the text into the digest, so fake/hash?salt=b answers unlike fake/hash
(a different model for tests that swap one).
With RUBRICLAB_FAKE_CALL_LOG set, every call appends one line to that file (tests count calls).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from urllib.parse import parse_qs

from . import known
from .request import Request

BEHAVIOURS = ("yes", "no", "hash", "unparseable", "empty", *known.BEHAVIOURS)


def parse_fake_model(model: str) -> tuple[str, float]:
    if not model.startswith("fake/"):
        raise ValueError(f"not a fake model string: {model!r}")
    name, _, query = model[len("fake/"):].partition("?")
    if name not in BEHAVIOURS:
        raise ValueError(f"unknown fake model {model!r}; known: fake/{', fake/'.join(BEHAVIOURS)}")
    options = parse_qs(query)
    if name in known.BEHAVIOURS:
        known.check_options(name, model, set(options))
    else:
        unknown = set(options) - {"delay_s", "salt"}
        if unknown:
            raise ValueError(f"fake model {model!r}: unknown option(s) {sorted(unknown)}")
    delay = float(options.get("delay_s", ["0"])[0])
    return name, delay


def fake_fingerprint(model: str) -> str:
    """The model identity part of a fake model's cache keys."""
    name = parse_fake_model(model)[0]
    return known.KNOWN_FINGERPRINT if name in known.BEHAVIOURS else "fake-v1"


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
    if behaviour in known.BEHAVIOURS:
        return known.known_answer(behaviour, request.model, request.sample_index,
                                  request.response_format, messages)
    if request.response_format == "yes_no":
        return "Yes" if int(digest[:8], 16) % 2 == 0 else "No"
    structured = structured_answer(request.response_format, messages, digest)
    if structured is not None:
        return structured
    return f"fake answer {digest[:12]}"


_LISTED_CHECK = re.compile(r"^\[([^\]]+)\] ", re.MULTILINE)


def structured_answer(response_format: str, messages: list[dict[str, str]],
                      digest: str) -> str | None:
    """A valid answer in the structured formats, chosen by the digest (fake/hash only)."""
    bits = int(digest, 16)
    if response_format == "scale_1_10":
        return str(1 + bits % 10)
    if response_format.startswith("verdict_list_"):
        n = int(response_format.rsplit("_", 1)[1])
        return json.dumps({"verdicts": ["yes" if (bits >> k) & 1 else "no" for k in range(n)]})
    if response_format.startswith("rubric_checks"):
        limit = int(response_format.rsplit("_", 1)[1]) if response_format[-1].isdigit() else 20
        n = min(limit, 3 + bits % 4)
        return json.dumps({"checks": [f"The output meets fake requirement {digest[k * 4:k * 4 + 4]}."
                                      for k in range(n)]})
    if response_format.startswith("rubric_revision"):
        return _fake_revision(messages[-1]["content"], digest)
    if response_format == "agent_action":
        # the plan's stand-in agent (a short valid trial the verifier passes or fails); imported
        # here because standins builds on this module
        from .standins import _agent_action
        return _agent_action(messages, bits)
    return _transfer_answer(response_format, messages[-1]["content"], digest, bits)


_NUMBERED_LINE = re.compile(r"^(\d+)\. ", re.MULTILINE)
_TRUE_LABEL = re.compile(r"^T(\d+): ", re.MULTILINE)


def _transfer_answer(response_format: str, prompt: str, digest: str, bits: int) -> str | None:
    """Valid answers in the transfer work's formats (rubriclab.llm.formats_transfer)."""
    if response_format == "transfer_rubric":
        return json.dumps([f"The response meets fake criterion {digest[k * 4:k * 4 + 4]}."
                           for k in range(3 + bits % 3)])
    if response_format == "transfer_similarity":
        return str(bits % 10)
    if response_format == "transfer_restated":
        return json.dumps({number: f"The response avoids fake problem {number}."
                           for number in _NUMBERED_LINE.findall(prompt)})
    if response_format.startswith("transfer_scores_"):
        n = int(response_format.rsplit("_", 1)[1])
        return json.dumps({str(k): (bits >> k) & 1 for k in range(n)})
    if response_format.startswith("transfer_match_"):
        n = int(response_format.rsplit("_", 1)[1])
        labels = [f"T{j}" for j in _TRUE_LABEL.findall(prompt)]
        return json.dumps({"indices": {f"G{i}": [t for k, t in enumerate(labels)
                                                  if (bits >> (i * 7 + k)) % 3 == 0]
                                       for i in range(n)}})
    if response_format == "transfer_response":
        return f"Fake response {digest[:8]}: " + " ".join(digest[k:k + 5] for k in range(0, 40, 5))
    return None


def _fake_revision(prompt: str, digest: str) -> str:
    """Keep, delete, edit or add, as the revision prompt's mode sentence allows."""
    ids = _LISTED_CHECK.findall(prompt)
    delete_only = "You may only keep or delete" in prompt
    fixed_count = "must keep exactly" in prompt
    entries = []
    for k, check_id in enumerate(ids):
        choice = int(digest[k % 60:k % 60 + 2], 16) % 4
        deleted = sum(e["action"] == "delete" for e in entries)
        if choice == 1 and len(ids) > 1 and k > 0 and deleted < 5:
            entries.append({"id": check_id, "action": "delete"})
        elif choice == 2 and not delete_only:
            entries.append({"id": check_id, "action": "edit",
                            "text": f"The output meets revised requirement {digest[k:k + 6]}."})
        else:
            entries.append({"id": check_id, "action": "keep"})
    deletes = sum(e["action"] == "delete" for e in entries)
    adds = deletes if fixed_count else (0 if delete_only else int(digest[-1], 16) % 3)
    entries += [{"action": "add", "text": f"The output meets added requirement {digest[-6 - k:len(digest) - k]}."}
                for k in range(adds)]
    return json.dumps({"checks": entries})
