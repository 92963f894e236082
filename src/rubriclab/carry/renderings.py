"""The four renderings of one rubric (carry Figure 1): the same checks, asked differently.

    per_check   one call per check, Yes/No; the item passes iff every check is answered Yes.
    all_in_one  one call listing every check, answered with one Yes/No per check (format
                verdict_list_<n>); the item passes iff every answer is Yes.
    paragraph   one call with the checks read as one paragraph, Yes/No (carry Figure 2's
                paragraph rendering).
    scale       one call with the checks as a list, answered with a generic 1-10 quality
                score; the item passes iff the score is at least SCALE_THRESHOLD (5).

Every prompt about one item starts with the same system message and the same input and
output text, so llama.cpp reuses that prefix across renderings and checks.
"""

from __future__ import annotations

from typing import Any

from rubriclab.carry.checklists import Checklist
from rubriclab.carry.prompts import QUESTION, SYSTEM_PROMPT, judge_prefix, paragraph_messages

RENDERINGS = ("per_check", "all_in_one", "paragraph", "scale")
SCALE_THRESHOLD = 5


def _shared_prefix(task: str, output: str, task_description: str) -> str:
    """judge_prefix up to and including the output: the part every rendering shares."""
    full = judge_prefix(task, output, task_description)
    return full[: full.rindex(f"\n\n{QUESTION} ") + 2]


def _numbered(checklist: Checklist) -> str:
    return "\n".join(f"{n}. {check.text}" for n, check in enumerate(checklist.checks, start=1))


def _listed(task: str, output: str, checklist: Checklist) -> str:
    """The shared prefix and the numbered checks: all_in_one and scale share this much too."""
    return (_shared_prefix(task, output, checklist.task_description)
            + f"Requirements:\n{_numbered(checklist)}\n\n")


def all_in_one_messages(task: str, output: str, checklist: Checklist) -> list[dict]:
    n = len(checklist.checks)
    user = (
        _listed(task, output, checklist)
        + f"For each of the {n} requirements above, decide whether the output meets it. "
        + 'Answer with exactly one JSON object and nothing else, of the form {"verdicts": '
        + f'["yes", "no", ...]}}, with exactly {n} answers, one per requirement, in order.'
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def scale_messages(task: str, output: str, checklist: Checklist) -> list[dict]:
    user = (
        _listed(task, output, checklist)
        + "Rate the quality of the output on a scale from 1 (very poor) to 10 (excellent), "
        + "taking into account the requirements above. Answer with exactly one whole number "
        + "from 1 to 10 and nothing else."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def rendering_call(rendering: str, task: str, output: str,
                   checklist: Checklist) -> tuple[list[dict], str]:
    """(messages, response format) of the one call a whole-rubric rendering makes."""
    if rendering == "all_in_one":
        return (all_in_one_messages(task, output, checklist),
                f"verdict_list_{len(checklist.checks)}")
    if rendering == "paragraph":
        return paragraph_messages(task, output, checklist), "yes_no"
    if rendering == "scale":
        return scale_messages(task, output, checklist), "scale_1_10"
    raise ValueError(f"{rendering!r} is not a one-call rendering; known: all_in_one, "
                     "paragraph, scale")


def rendering_outcome(rendering: str, answer: Any) -> str:
    """"pass" or "fail" from one parsed answer of a one-call rendering."""
    if rendering == "all_in_one":
        return "pass" if all(v == "yes" for v in answer) else "fail"
    if rendering == "paragraph":
        return "pass" if answer == "yes" else "fail"
    if rendering == "scale":
        return "pass" if int(answer) >= SCALE_THRESHOLD else "fail"
    raise ValueError(f"unknown rendering {rendering!r}")
