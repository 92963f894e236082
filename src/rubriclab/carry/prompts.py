"""Judge prompts for one check at a time and for the paragraph rendering.

The embedded llama.cpp judge reuses the key-value cache of the longest common prompt
prefix between consecutive calls, and every new token costs time on a CPU. So every prompt
about one item is the same system message and the same user-message prefix (task, output,
question, answer instruction); only the requirement text differs, and it comes last.
"""

from __future__ import annotations

import hashlib
import json
import re

from rubriclab.carry.checklists import Check, Checklist

ANSWER_INSTRUCTION = "Answer with exactly one word: Yes or No."

SYSTEM_PROMPT = (
    "You are a careful grader. You are shown an input, an output written for it, and a "
    "requirement. Decide whether the output meets the requirement, judging the output "
    "against the input and the requirement as written."
)

QUESTION = "Does the output meet everything the requirement below asks for?"

# "The summary is ..." -> subject noun "summary", predicate "is ...".
_SUBJECT_SENTENCE = re.compile(r"^the (\w+) (.+?)[.!?]?$", re.IGNORECASE)


def judge_prefix(task: str, output: str, task_description: str) -> str:
    """The user-message text shared by every prompt about one item."""
    return (
        f"Input:\n{task}\n\n"
        f"The output below is {task_description}.\n\n"
        f"Output:\n{output}\n\n"
        f"{QUESTION} {ANSWER_INSTRUCTION}\n\n"
        "Requirement:\n"
    )


def per_check_messages(
    task: str, output: str, check: Check, task_description: str
) -> list[dict]:
    """Chat messages asking whether `output` meets the single `check`."""
    return _messages(judge_prefix(task, output, task_description), check.text)


def paragraph_messages(task: str, output: str, checklist: Checklist) -> list[dict]:
    """Chat messages asking whether `output` meets all checks, read as one paragraph."""
    prefix = judge_prefix(task, output, checklist.task_description)
    return _messages(prefix, render_paragraph(checklist))


def render_paragraph(checklist: Checklist) -> str:
    """The checks joined into one prose paragraph, in checklist order.

    When every check reads "The <noun> <predicate>." (as the generic checklists do) the
    paragraph is "A good <noun> <predicate 1>. It also <predicate 2>. ..." ("It is also"
    before a predicate starting with "is"). Otherwise the
    check sentences follow one introductory sentence.
    """
    if not checklist.checks:
        raise ValueError(f"checklist {checklist.name!r} has no checks to render")
    texts = [" ".join(check.text.split()) for check in checklist.checks]
    matches = [_SUBJECT_SENTENCE.match(text) for text in texts]
    nouns = {match.group(1).lower() for match in matches if match}
    if all(matches) and len(nouns) == 1:
        noun = nouns.pop()
        predicates = [match.group(2).strip() for match in matches if match]
        sentences = [f"A good {noun} {predicates[0]}."]
        sentences += [_also_sentence(predicate) for predicate in predicates[1:]]
        return " ".join(sentences)
    sentences = [_as_sentence(text) for text in texts]
    return " ".join(["A good output meets all of the following requirements.", *sentences])


def _messages(prefix: str, requirement: str) -> list[dict]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"{prefix}{requirement}"},
    ]


def _also_sentence(predicate: str) -> str:
    if predicate.startswith("is "):
        return f"It is also {predicate[len('is '):]}."
    return f"It also {predicate}."


def _as_sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else f"{text}."


def template_fingerprint() -> str:
    """sha256 of the judge prompts as rendered for placeholder content.

    A rule that judges declares it as a param, so editing any prompt text here reruns exactly
    the judging jobs (Snakemake does not see changes inside imported modules otherwise).
    """
    check = Check(id="c1", text="The output is <CHECK>.", origin="placeholder")
    checklist = Checklist(name="placeholder", checks=(check,), task_description="<DESCRIPTION>")
    rendered = json.dumps([
        per_check_messages("<TASK>", "<OUTPUT>", check, "<DESCRIPTION>"),
        paragraph_messages("<TASK>", "<OUTPUT>", checklist),
    ])
    return hashlib.sha256(rendered.encode("utf-8")).hexdigest()[:16]
