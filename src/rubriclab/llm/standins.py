"""Stand-in answers: a valid answer in the format each prompt asks for, with no model called.

They answer the rehearsal's loopback server (rubriclab.rehearsal.server) and the plan's
requests (rubriclab.plan.planner); both sit above the model layer, so the answers live here.
The server sees what a provider sees (the messages), not the pipeline's response format, so the
format is read off the prompt's own instructions, as a model would. Each rule below names the
sentence of a prompt builder it rests on; tests/rehearsal checks the rules against one request
of every builder, so a prompt edit that breaks a rule fails there, not in a paid run.
The answers themselves are the `fake/hash` model's (rubriclab.llm.valid_answers), which are
valid by construction, keyed by the prompt, the model and how many times the prompt was asked.
"""

from __future__ import annotations

import hashlib
import json
import re

from .valid_answers import agent_action, structured_answer

_RUBRIC_SECTION = re.compile(r"# Rubric\n\n(.*?)\n\n# Response", re.DOTALL)
_NUMBERED = re.compile(r"^\d+\. ", re.MULTILINE)
_GENERATED_LABEL = re.compile(r"^G\d+: ", re.MULTILINE)
_VERDICT_COUNT = re.compile(r"with exactly (\d+) answers, one per requirement")
_CHECK_COUNT = re.compile(r"Write a checklist of (\d+) checks")
# How every re-ask of the response formats (llm.formats and the works') begins: the client appends
# the model's unusable answer and one of these to the original messages.
REASK_OPENINGS = ("Your answer could not be read.", "Your answer was empty.",
                  "Please answer the request above.")


def original_prompt(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The messages without the trailing (unusable answer, re-ask) pairs the client added."""
    messages = list(messages)
    while (len(messages) >= 3 and messages[-2]["role"] == "assistant"
           and messages[-1]["role"] == "user"
           and messages[-1]["content"].startswith(REASK_OPENINGS)):
        messages = messages[:-2]
    return messages


def infer_format(messages: list[dict[str, str]]) -> str:
    """The response format the prompt asks for (a name of rubriclab.llm.formats)."""
    messages = original_prompt(messages)
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    text = system + "\n" + last
    if "Answer with exactly one word: Yes or No." in text:  # carry.prompts, verify.refund
        return "yes_no"
    if 'Answer every turn with exactly one JSON object and nothing else: {"tool"' in system:
        return "agent_action"  # verify.refund.agent_system_prompt
    count = _VERDICT_COUNT.search(text)  # carry.renderings, all checks in one call
    if count:
        return f"verdict_list_{count.group(1)}"
    if "Answer with exactly one whole number from 1 to 10" in text:  # carry.renderings, scale
        return "scale_1_10"
    if "Mention every existing check exactly once" in text or (  # carry.revision
            "Mention every check exactly once, by its id" in text):
        return "rubric_revision"
    checks = _CHECK_COUNT.search(text)  # carry.sources: drafts and the label teacher
    if checks and '{"checks": ["<check 1>"' in text:
        return f"rubric_checks_{checks.group(1)}"
    if "Return the rubric as exactly one JSON array of strings" in text:  # transfer prompt 2
        return "transfer_rubric"
    if "Return a JSON object mapping each criterion’s number (as shown, and not renumbered)" in text:
        return "transfer_restated"  # transfer prompt 3
    if "output a single integer score in [0,9]" in text:  # transfer prompt 7
        return "transfer_similarity"
    if 'Give the tool call as exactly one JSON object with the one field "indices"' in text:
        return f"transfer_match_{len(_GENERATED_LABEL.findall(last))}"  # prompts 8-10
    if "Return a JSON object mapping each criterion’s number (as shown in the rubric)" in text:
        rubric = _RUBRIC_SECTION.search(last)  # transfer prompt 11, the judge
        return f"transfer_scores_{len(_NUMBERED.findall(rubric.group(1))) if rubric else 0}"
    return "transfer_response"  # responses, degraded responses and edits: free text


def served_name(model: str) -> str:
    """The model name the server sees for a pipeline model string: litellm sends every
    provider the rehearsal speaks the string without its provider prefix."""
    return model.split("/", 1)[1] if "/" in model else model


def answer(messages: list[dict[str, str]], model: str, nth: int) -> tuple[str, str]:
    """(format, answer text) for the `nth` asking (0, 1, ...) of these messages to `model`.

    A re-ask is answered as its original prompt is (a model reads the whole conversation);
    `nth` counts the askings of the messages as sent, so a re-ask gets a fresh answer."""
    messages = original_prompt(messages)
    response_format = infer_format(messages)
    payload = json.dumps([model, nth, messages], ensure_ascii=False)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    bits = int(digest, 16)
    if response_format == "yes_no":
        return response_format, "Yes" if bits % 2 == 0 else "No"
    if response_format == "agent_action":
        return response_format, agent_action(messages, bits)
    if response_format == "rubric_revision":
        # The revision prompt is the last user message, as the fake reviser expects.
        revision = structured_answer("rubric_revision", messages, digest)
        assert revision is not None  # a revision is always answered in its format
        return response_format, revision
    text = structured_answer(response_format, messages, digest)
    if text is None:  # free text: a short, distinct response
        text = (f"Rehearsal response {digest[:8]} from {model}: "
                + " ".join(digest[k:k + 6] for k in range(0, 48, 6)) + ".")
    return response_format, text
