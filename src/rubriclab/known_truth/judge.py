"""The known-truth judge (`fake/known-judge?tpr=&tnr=`): reads carry's judge prompts as a model
would, finds the item and each requirement in the world, and answers the truth at its set rates
(the package docstring, rubriclab.known_truth, says how)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .world import KnownWorld, Meaning, OutsideTheWorld, _unit, judge_rates

# --- reading a judge prompt -----------------------------------------------------------------
# carry.prompts.judge_prefix and carry.renderings build these prompts;
# tests/known_truth/test_known.py checks the markers against them.
_INPUT = "Input:\n"
_DESCRIPTION = "\n\nThe output below is "
_OUTPUT = "\n\nOutput:\n"
_QUESTION = "\n\nDoes the output meet everything the requirement below asks for?"
_REQUIREMENT = "\n\nRequirement:\n"
_LISTED = "\n\nRequirements:\n"
_LISTED_END = re.compile(r"\n\n(For each of the \d+ requirements above|Rate the quality)")
_NUMBERED = re.compile(r"^\d+\. (.*)$")
_PARAGRAPH_OPENING = "A good "
_SUBJECT = re.compile(r"^the (\w+) (.+?)[.!?]?$", re.IGNORECASE)
_CONNECTIVES = re.compile(r"A good output meets all of the following requirements\.|"
                          r"A good \w+ (is )?|It (is )?also|[\s.?!]")


@dataclass(frozen=True)
class JudgePrompt:
    task: str
    output: str
    kind: str            # "check", "paragraph" or "listed"
    requirements: tuple[str, ...] | str  # the check, the paragraph, or the listed checks


def read_judge_prompt(messages: list[dict[str, str]]) -> JudgePrompt:
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if not user.startswith(_INPUT) or _DESCRIPTION not in user:
        raise OutsideTheWorld("the known-truth judge reads carry's judge prompts (Input, "
                              f"Output, Requirement); this one begins {user[:80]!r}")
    task = user[len(_INPUT):user.index(_DESCRIPTION)]
    after = user.index(_OUTPUT, user.index(_DESCRIPTION)) + len(_OUTPUT)
    question = user.rfind(_QUESTION)
    if question >= after:
        requirement = user[user.index(_REQUIREMENT, question) + len(_REQUIREMENT):]
        kind = "paragraph" if requirement.startswith(_PARAGRAPH_OPENING) else "check"
        return JudgePrompt(task, user[after:question], kind, requirement)
    listed = user.rfind(_LISTED)
    end = _LISTED_END.search(user, listed if listed >= 0 else 0)
    if listed < after or end is None:
        raise OutsideTheWorld("the known-truth judge found no requirement in its prompt")
    lines = user[listed + len(_LISTED):end.start()].split("\n")
    texts = []
    for line in lines:
        match = _NUMBERED.match(line)
        if not match:
            raise OutsideTheWorld(f"the known-truth judge cannot read the listed requirement "
                                  f"{line[:80]!r}")
        texts.append(match.group(1))
    return JudgePrompt(task, user[after:listed], "listed", tuple(texts))


def paragraph_checks(paragraph: str, vocabulary: dict[str, Meaning]) -> list[str]:
    """The checks a paragraph rendering (carry.prompts.render_paragraph) joins, in order: each
    check's sentence (or its predicate, after "A good <noun>" or "It (is) also") found in the
    paragraph, the longest first where two overlap."""
    spans = []
    for text in vocabulary:
        match = _SUBJECT.match(text)
        needles = [text.rstrip(".")]
        if match:
            predicate = match.group(2)
            needles.append(predicate[3:] if predicate.startswith("is ") else predicate)
        for needle in needles:
            start = paragraph.find(needle)
            while start >= 0:
                spans.append((start, start + len(needle), text))
                start = paragraph.find(needle, start + 1)
    chosen: list[tuple[int, int, str]] = []
    for span in sorted(spans, key=lambda s: s[0] - s[1]):
        if all(span[1] <= c[0] or span[0] >= c[1] for c in chosen):
            chosen.append(span)
    rest = paragraph
    for start, end, _ in sorted(chosen, reverse=True):
        rest = rest[:start] + " " + rest[end:]
    rest = _CONNECTIVES.sub("", rest)
    if not chosen or rest:
        raise OutsideTheWorld(f"the known-truth judge cannot read all of the paragraph "
                              f"{paragraph[:100]!r} (unknown: {rest[:80]!r})")
    return list(dict.fromkeys(text for _, _, text in sorted(chosen)))


# --- answering ------------------------------------------------------------------------------

def judge_answer(model: str, sample_index: int, response_format: str,
                 messages: list[dict[str, str]], world: KnownWorld) -> str:
    tpr, tnr = judge_rates(model)
    prompt = read_judge_prompt(messages)
    item = world.item(prompt.task, prompt.output)

    def judged(position: int, truth: bool) -> bool:
        u = _unit([model, sample_index, messages, position])
        return truth if u < (tpr if truth else tnr) else not truth

    def truth_of(text: str) -> bool:
        return world.met(item, world.meaning(text, item.dataset), text, prompt.output)

    if prompt.kind == "check":
        assert isinstance(prompt.requirements, str)  # read_judge_prompt: one check, one text
        return "Yes" if judged(0, truth_of(prompt.requirements)) else "No"
    if prompt.kind == "paragraph":
        assert isinstance(prompt.requirements, str)  # read_judge_prompt: one paragraph, one text
        texts = paragraph_checks(prompt.requirements, world.vocabulary(item.dataset))
        return "Yes" if judged(0, all(truth_of(t) for t in texts)) else "No"
    verdicts = [judged(k, truth_of(text)) for k, text in enumerate(prompt.requirements)]
    if response_format.startswith("verdict_list_"):
        return json.dumps({"verdicts": ["yes" if v else "no" for v in verdicts]})
    if response_format == "scale_1_10":
        return str(1 + round(9 * sum(verdicts) / len(verdicts)))
    raise OutsideTheWorld(f"the known-truth judge answers yes_no, verdict_list_<n> and "
                          f"scale_1_10, not {response_format!r}")
