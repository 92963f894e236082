"""Negative criteria of an expert rubric restated positively (transfer, Appendix D and Table A.3).

Every algorithm of the transfer work runs over expert rubrics "with negatively phrased criteria
restated positively" (Appendix D), by the restatement prompt of Appendix E (prompt 3 in
rubriclab.transfer.prompts) on Gemini 3.8 Flash at low effort (Table A.3). HealthBench marks a
negative criterion by negative points (rubriclab.data.healthbench: ``negative`` is
``points < 0``).

One request per rubric restates all its negative criteria at once, each shown with its
0-based position in the rubric ("7. Fails to ..."), the numbers the answer must use ("as shown,
and not renumbered"). The answer (format "transfer_restated") is checked here: the numbers
must be exactly those asked for (same count in and out), and each rewritten text is screened
for a double negative and for phrasings the prompt's rules exclude. Nothing is silently
passed: every problem comes back as a Flag (criterion id and reason), and a criterion the
answer left out has no restated text (None), never its original text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rubriclab.transfer.formats import RESTATED_FORMAT
from rubriclab.llm.request import Request
from rubriclab.transfer.prompts import restate_messages


@dataclass(frozen=True)
class ExpertCriterion:
    index: int  # 0-based position in the rubric, the number the restatement prompt shows
    text: str
    points: int

    @property
    def negative(self) -> bool:
        return self.points < 0


@dataclass(frozen=True)
class RestatedCriterion:
    """One criterion of the restated rubric.

    ``restated`` is the text to use: the rewritten text for a negative criterion (None when the
    answer has none: see the flags), the original text for a positive one. ``sign`` is the sign
    of the original points (-1 for a negative criterion, +1 otherwise).
    """

    id: str
    index: int
    original: str
    restated: str | None
    points: int
    sign: int

    @property
    def negative(self) -> bool:
        return self.sign < 0


@dataclass(frozen=True)
class Flag:
    id: str
    reason: str


@dataclass(frozen=True)
class Restatement:
    item_id: str
    criteria: tuple[RestatedCriterion, ...]
    flags: tuple[Flag, ...]

    @property
    def ok(self) -> bool:
        return not self.flags

    @property
    def flagged_ids(self) -> list[str]:
        return list(dict.fromkeys(flag.id for flag in self.flags))

    def texts(self) -> list[str]:
        """The criterion texts to use, in rubric order; ValueError while any is missing."""
        missing = [c.id for c in self.criteria if c.restated is None]
        if missing:
            raise ValueError(f"{self.item_id}: no restated text for {missing}")
        return [c.restated for c in self.criteria if c.restated is not None]


def criterion_id(item_id: str, index: int) -> str:
    """The id of criterion ``index`` (0-based, rubric order) of item ``item_id``: "<item_id>#<index>"."""
    return f"{item_id}#{index}"


def expert_criteria(rubric: Sequence[Mapping[str, Any]] | str, where: str) -> list[ExpertCriterion]:
    """The criteria of a HealthBench rubric (``rubric_json`` text or its list) with their positions.

    Entries need "criterion" (a non-empty string) and "points" (an int, negative for a flaw);
    other keys ("tags", "negative") are ignored. ``where`` (e.g. the item id) names bad input.
    """
    if isinstance(rubric, str):
        try:
            rubric = json.loads(rubric)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: rubric_json is not JSON ({exc.msg})") from None
    if isinstance(rubric, (str, bytes)) or not isinstance(rubric, Sequence) or not rubric:
        raise ValueError(f"{where}: the rubric must be a non-empty list of criteria")
    criteria = []
    for index, entry in enumerate(rubric):
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: rubric[{index}] must be a mapping, got {type(entry).__name__}")
        text, points = entry.get("criterion"), entry.get("points")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: rubric[{index}]: 'criterion' must be a non-empty string, got {text!r:.60}")
        if type(points) is not int:
            raise ValueError(f"{where}: rubric[{index}]: 'points' must be an int, got {points!r}")
        criteria.append(ExpertCriterion(index=index, text=text, points=points))
    return criteria


def negative_criteria(rubric: Sequence[Mapping[str, Any]] | str, where: str) -> list[tuple[int, str]]:
    """(position, text) of each criterion with negative points, in rubric order."""
    return [(c.index, c.text) for c in expert_criteria(rubric, where) if c.negative]


def restate_request(model: str, rubric: Sequence[Mapping[str, Any]] | str, *, where: str,
                    max_tokens: int | None = None, **fields: Any) -> Request | None:
    """The restatement request for one rubric's negative criteria, or None when it has none.

    ``max_tokens`` defaults to 64 + 16 + the criteria's characters / 2 (ample for a rewrite of
    each; raise it for reasoning models). Other ``fields`` (temperature, ...) go to Request.
    """
    numbered = negative_criteria(rubric, where)
    if not numbered:
        return None
    if "response_format" in fields:
        raise ValueError("restate_request sets response_format itself")
    if max_tokens is None:
        max_tokens = 64 + sum(16 + len(text) // 2 for _, text in numbered)
    return Request.chat(model, restate_messages(numbered), max_tokens=max_tokens,
                        response_format=RESTATED_FORMAT, **fields)


# --- screening a rewritten text ----------------------------------------------------------------------

_NEGATOR = r"(?:\b(?:not|never|cannot)\b|\b\w+n[’']t\b)"
_NEGATIVE_VERB = (r"\b(?:fail(?:s|ed|ing)?|omit(?:s|ted|ting)?|neglect(?:s|ed|ing)?|lack(?:s|ed|ing)?"
                  r"|miss(?:es|ed|ing)?|ignor(?:e|es|ed|ing)|overlook(?:s|ed|ing)?"
                  r"|forget(?:s|ting)?|forgot|avoid(?:s|ed|ing)?|refrain(?:s|ed|ing)?)\b")
# A negator right before a negative verb ("does not fail to", "is not missing", "never
# omits"); a negator, at most two words, then another negator ("does not say it isn't"); or
# a negative verb, then "not"/"never" ("fails to not mention").
_DOUBLE_NEGATIVE = re.compile(
    rf"{_NEGATOR}\W+(?:(?:ever|even|to|be|been|have)\W+)?{_NEGATIVE_VERB}"
    rf"|{_NEGATOR}\W+(?:\w+\W+){{0,2}}?{_NEGATOR}"
    rf"|{_NEGATIVE_VERB}\W+(?:to\W+)?(?:not|never)\b",
    re.IGNORECASE,
)
# The failure phrasings of the prompt's first rule ("Fails to X", "Does not X", "Omits X")
# and their common variants, at the start of a criterion.
_FAILURE_PHRASED = re.compile(
    r"^\W*(?:(?:the\s+)?response\s+)?(?:fail(?:s|ed)?\s+to|does\s+not|doesn[’']t|did\s+not"
    r"|didn[’']t|do\s+not|don[’']t|omit(?:s|ted)?|neglect(?:s|ed)?(?:\s+to)?|lack(?:s|ed)?|never"
    r"|is\s+not|isn[’']t|not)\b",
    re.IGNORECASE,
)
_ANY_NEGATION = re.compile(rf"{_NEGATOR}|\b(?:no|none|nor|without)\b|{_NEGATIVE_VERB}",
                           re.IGNORECASE)
_NUMBER_TOKEN = re.compile(r"\d+(?:[.,]\d+)*")


def screen(original: str, restated: str) -> list[str]:
    """Reasons a rewritten text breaks the restatement prompt's rules; [] when none is seen.

    - "double negative": a negator right before a negative verb (fail, omit, neglect, lack,
      miss, ignore, overlook, forget, avoid, refrain) or within two words of another negator;
    - "still phrased as a failure": the original is phrased as a failure ("Fails to X", "Does
      not X", "Omits X", ...) and so is the rewrite (its positive form "X" was asked for);
    - "not negated": the original is not phrased as a failure and the rewrite has no negation
      ("Does X" should become "Does not X");
    - "unchanged": the rewrite is the original text;
    - "numbers changed": the numbers (doses, ages, times) differ ("preserve every specific").
    These are screens, not proofs: a flag asks for a look, and a rewrite can pass them and
    still be wrong.
    """
    reasons = []
    text = " ".join(restated.split())
    source = " ".join(original.split())
    if not text:
        return ["empty rewrite"]
    if double_negative := _DOUBLE_NEGATIVE.search(text):
        reasons.append(f"double negative: {double_negative.group(0)!r}")
    if _FAILURE_PHRASED.match(source):
        if failure := _FAILURE_PHRASED.match(text):
            reasons.append("still phrased as a failure: the original is, so its positive form "
                           f"was asked for ({failure.group(0).strip()!r})")
    elif not _ANY_NEGATION.search(text):
        reasons.append("not negated: the original is not phrased as a failure, so 'Does X' "
                       "should become 'Does not X'")
    if text.casefold() == source.casefold():
        reasons.append("unchanged: the rewrite is the original text")
    if sorted(_NUMBER_TOKEN.findall(source)) != sorted(_NUMBER_TOKEN.findall(text)):
        reasons.append(f"numbers changed: {_NUMBER_TOKEN.findall(source)} -> {_NUMBER_TOKEN.findall(text)}")
    return reasons


# --- checking an answer ------------------------------------------------------------------------------------

def check_restatement(item_id: str, rubric: Sequence[Mapping[str, Any]] | str,
                      answer: Mapping[str, str] | None) -> list[Flag]:
    """Every problem of a parsed restatement answer for this rubric, as flags; [] when none.

    ``answer``: the parsed "transfer_restated" answer (number -> text), or None when the call
    came back unparseable or failed (then every negative criterion is flagged). Flags: a count
    mismatch (each negative criterion missing from the answer, each number in the answer that
    is not a negative criterion of this rubric) and the ``screen`` reasons of each rewrite.
    """
    return list(apply_restatement(item_id, rubric, answer).flags)


def apply_restatement(item_id: str, rubric: Sequence[Mapping[str, Any]] | str,
                      answer: Mapping[str, str] | None) -> Restatement:
    """The restated rubric: every criterion in rubric order with original text, restated text,
    points, sign and id, plus the flags of ``check_restatement``.

    A rubric without negative criteria needs no answer (pass None or {}). A negative criterion
    missing from the answer keeps ``restated`` None; numbers not asked for are only flagged.
    """
    criteria = expert_criteria(rubric, item_id)
    negatives = {str(c.index): c for c in criteria if c.negative}
    if answer is None:
        answer_map: dict[str, str] = {}
        unanswered = "no parseable answer"
    else:
        if not isinstance(answer, Mapping):
            raise ValueError(f"{item_id}: the restatement answer must be a mapping of number -> "
                             f"text or None, got {type(answer).__name__}")
        answer_map = dict(answer)
        unanswered = "missing from the answer"
    flags: list[Flag] = []
    count_note = (f"count mismatch: {len(negatives)} negative criteria in, "
                  f"{len(answer_map)} restatements out")
    counts_differ = set(answer_map) != set(negatives)
    restated_criteria = []
    for c in criteria:
        cid = criterion_id(item_id, c.index)
        if not c.negative:
            restated_criteria.append(RestatedCriterion(cid, c.index, c.text, c.text, c.points, 1))
            continue
        rewritten = answer_map.get(str(c.index))
        if rewritten is not None and (not isinstance(rewritten, str) or not rewritten.strip()):
            flags.append(Flag(cid, f"empty or non-text rewrite {rewritten!r:.40}"))
            rewritten = None
        elif rewritten is None:
            flags.append(Flag(cid, f"{count_note}; number {c.index} {unanswered}"))
        else:
            rewritten = rewritten.strip()
            flags.extend(Flag(cid, reason) for reason in screen(c.text, rewritten))
        restated_criteria.append(RestatedCriterion(cid, c.index, c.text, rewritten, c.points, -1))
    if counts_differ:
        for key in sorted(set(answer_map) - set(negatives), key=_number_order):
            what = ("a positive criterion" if key.isdigit() and int(key) < len(criteria)
                    else "no criterion")
            flags.append(Flag(f"{item_id}#{key}", f"{count_note}; number {key} is {what} of this "
                                                  "rubric, not one asked for"))
    return Restatement(item_id=item_id, criteria=tuple(restated_criteria), flags=tuple(flags))


def _number_order(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (10**9, key)
