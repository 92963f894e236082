"""The messages of the transfer work's prompts: the texts of Appendix E
(rubriclab.transfer.appendix_e, which names the eleven prompts) filled in with a conversation,
rubrics and responses.

Every builder returns OpenAI-style messages, a list of {"role", "content"} dicts, for
`rubriclab.llm.Request.chat`; the response format each prompt expects is named in
`rubriclab.transfer.formats`. Bad input raises ValueError naming what and where.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rubriclab.data.healthbench import ROLES, render_task
from rubriclab.llm.request import Request
from rubriclab.transfer.appendix_e import (
    DEGRADE_MESSAGE,
    DEGRADE_SYSTEM,
    EMPTY_SECTION,
    FAIL_EDIT_MESSAGE,
    FAIL_EDIT_SYSTEM,
    FRAMING_PROMPT_NAMES,
    FRAMINGS,
    GENERATION_MESSAGE,
    GENERATION_OUTPUT_INSTRUCTION,
    GENERATION_SYSTEM,
    JUDGE_MESSAGE,
    JUDGE_SYSTEM,
    JUDGE_VOTES,
    PASS_EDIT_MESSAGE,
    PASS_EDIT_SYSTEM,
    RESPONSE_SYSTEM,
    RESTATE_MESSAGE,
    RESTATE_SYSTEM,
    SIMILARITY_MESSAGE,
    SIMILARITY_SYSTEM,
    TOOL_CALL_INSTRUCTION,
)
from rubriclab.transfer.formats import (
    MAX_CRITERIA,
    RESPONSE_FORMAT,
    RESTATED_FORMAT,
    RUBRIC_FORMAT,
    SIMILARITY_FORMAT,
    TRANSFER_FORMATS,
    match_format_name,
    scores_format_name,
)

# The response format each prompt's answer is parsed with (sized formats by function).
PROMPT_FORMATS = {
    "response": RESPONSE_FORMAT,
    "generation": RUBRIC_FORMAT,
    "restate": RESTATED_FORMAT,
    "pass_edit": RESPONSE_FORMAT,
    "fail_edit": RESPONSE_FORMAT,
    "degrade": RESPONSE_FORMAT,
    "similarity": SIMILARITY_FORMAT,
    # matching framings: match_format_name(len(generated_rubric)); judge: scores_format_name(n)
}

DIRECTIONS = ("pass", "fail")


# --- rendering ---------------------------------------------------------------------------------

def parse_conversation(conversation: Sequence[Mapping[str, Any]] | str,
                       where: str = "conversation") -> list[dict[str, str]]:
    """A HealthBench conversation (the item's ``prompt``) as a validated list of turns.

    Accepts the list of {"role", "content"} turns or its JSON text (the ``prompt_json`` column
    of rubriclab.data.healthbench). Roles are those of HealthBench (system, user, assistant).
    """
    if isinstance(conversation, str):
        try:
            conversation = json.loads(conversation)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: a string conversation must be the JSON list of turns "
                             f"(prompt_json), got {conversation[:60]!r} ({exc.msg})") from None
    if not isinstance(conversation, Sequence) or isinstance(conversation, (str, bytes)) \
            or not conversation:
        raise ValueError(f"{where}: expected a non-empty list of {{'role', 'content'}} turns, "
                         f"got {type(conversation).__name__}")
    turns = []
    for index, turn in enumerate(conversation):
        if not isinstance(turn, Mapping):
            raise ValueError(f"{where}[{index}]: expected a {{'role', 'content'}} mapping, "
                             f"got {type(turn).__name__}")
        role, content = turn.get("role"), turn.get("content")
        if role not in ROLES:
            raise ValueError(f"{where}[{index}]: 'role' must be one of {list(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise ValueError(f"{where}[{index}]: 'content' must be a string, "
                             f"got {type(content).__name__}")
        turns.append({"role": role, "content": content})
    return turns


def render_conversation(conversation: Sequence[Mapping[str, Any]] | str) -> str:
    """The conversation as it fills every {conversation} placeholder of Appendix E.

    One block per turn, ``"<role>: <content>"``, blocks joined by a blank line: the ``task``
    text of rubriclab.data.healthbench (``render_task``), so prompts and prepared items agree.
    """
    return render_task(parse_conversation(conversation))


def criterion_line(text: str) -> str:
    """A criterion as one line: runs of whitespace (newlines too) become one space.

    Lists of criteria are one criterion per line, and the matching prompts tell the model to
    read "the label at the start of each line"; some HealthBench criteria span lines.
    """
    return " ".join(text.split())


def _texts(criteria: Sequence[str], where: str, *, allow_empty: bool = False) -> list[str]:
    if isinstance(criteria, (str, bytes)) or not isinstance(criteria, Sequence):
        raise ValueError(f"{where}: expected a list of criterion texts, got {type(criteria).__name__}")
    if not criteria and not allow_empty:
        raise ValueError(f"{where}: no criteria")
    texts = []
    for index, text in enumerate(criteria):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}[{index}]: a criterion must be a non-empty string, got {text!r:.60}")
        texts.append(criterion_line(text))
    return texts


def render_numbered(criteria: Sequence[str], *, prefix: str = "", numbers: Sequence[int] | None = None,
                    separator: str = ". ", where: str = "criteria") -> str:
    """One criterion per line, ``"<prefix><number><separator><text>"``, numbers 0, 1, ... by default."""
    texts = _texts(criteria, where)
    numbers = list(range(len(texts))) if numbers is None else list(numbers)
    if len(numbers) != len(texts):
        raise ValueError(f"{where}: {len(texts)} criteria but {len(numbers)} numbers")
    return "\n".join(f"{prefix}{number}{separator}{text}" for number, text in zip(numbers, texts))


def render_bullets(criteria: Sequence[str], where: str = "criteria") -> str:
    """One criterion per line, ``"- <text>"``; ``EMPTY_SECTION`` for an empty list."""
    texts = _texts(criteria, where, allow_empty=True)
    return "\n".join(f"- {text}" for text in texts) if texts else EMPTY_SECTION


def _fill(template: str, **values: str) -> str:
    """Replace each ``{name}`` in one pass (values may themselves contain braces or placeholders)."""
    names = set(re.findall(r"\{([a-z_]+)\}", template))
    if names != set(values):
        raise AssertionError(f"template placeholders {sorted(names)} != values {sorted(values)}")
    pattern = re.compile(r"\{(" + "|".join(map(re.escape, sorted(values))) + r")\}")
    return pattern.sub(lambda match: values[match.group(1)], template)


def _nonempty(text: object, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{what} must be a non-empty string, got {text!r:.60}")
    return text


def _chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# --- 1. response model ---------------------------------------------------------------------------

def response_messages(conversation: Sequence[Mapping[str, Any]] | str) -> list[dict[str, str]]:
    """Appendix E prompt 1 (the response model M answering X): the system part, then the turns.

    Appendix E gives only a "#System" part, so the conversation follows as its own chat turns
    (a HealthBench system turn, if any, stays where it is). The last turn must be the user's.
    """
    turns = parse_conversation(conversation)
    if turns[-1]["role"] != "user":
        raise ValueError(f"conversation: the last turn must be the user's to be answered, "
                         f"got {turns[-1]['role']!r}")
    return [{"role": "system", "content": RESPONSE_SYSTEM}, *turns]


# --- 2. rubric generation --------------------------------------------------------------------------

def generation_messages(conversation: Sequence[Mapping[str, Any]] | str) -> list[dict[str, str]]:
    """Appendix E prompt 2 (rubric generation, G(X) from the conversation alone).

    Answer format "transfer_rubric" (a JSON array of criterion texts), asked for by
    GENERATION_OUTPUT_INSTRUCTION after the verbatim message.
    """
    user = _fill(GENERATION_MESSAGE, conversation=render_conversation(conversation))
    return _chat(GENERATION_SYSTEM, f"{user}\n\n{GENERATION_OUTPUT_INSTRUCTION}")


# --- 3. restatement ----------------------------------------------------------------------------------

def restate_messages(numbered: Sequence[tuple[int, str]]) -> list[dict[str, str]]:
    """Appendix E prompt 3 (negative criteria restated positively; Table A.3).

    ``numbered``: (number, text) of each criterion to rewrite, the number being its 0-based
    position in the expert rubric (shown "7. <text>", and not renumbered, as the prompt's
    examples). Answer format "transfer_restated". See rubriclab.transfer.restate.
    """
    if isinstance(numbered, (str, bytes)) or not isinstance(numbered, Sequence) or not numbered:
        raise ValueError("restate: expected a non-empty list of (number, criterion text) pairs")
    numbers, texts = [], []
    for index, pair in enumerate(numbered):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"restate[{index}]: expected a (number, criterion text) pair, got {pair!r:.60}")
        number, text = pair
        if type(number) is not int or number < 0:
            raise ValueError(f"restate[{index}]: the number must be an int >= 0, got {number!r}")
        numbers.append(number)
        texts.append(text)
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"restate: criterion numbers repeat: {numbers}")
    criteria = render_numbered(texts, numbers=numbers, where="restate")
    return _chat(RESTATE_SYSTEM, _fill(RESTATE_MESSAGE, criteria=criteria))


# --- 11. judge ----------------------------------------------------------------------------------------

def judge_messages(conversation: Sequence[Mapping[str, Any]] | str, criteria: Sequence[str],
                   response: str) -> list[dict[str, str]]:
    """Appendix E prompt 11 (the judge J scoring every criterion of a rubric for one response).

    The rubric is numbered "0. <text>", "1. <text>", ... (the prompt's example keys are "0"
    and "1"); the answer, format ``scores_format_name(len(criteria))``, maps each number to 1
    or 0. Conversation and rubric come before the response, so prompts about R and its edits
    share a prefix.
    """
    if len(criteria) > MAX_CRITERIA:
        raise ValueError(f"judge: {len(criteria)} criteria, more than the {MAX_CRITERIA} "
                         "the judge formats are registered for")
    return _chat(JUDGE_SYSTEM, _fill(
        JUDGE_MESSAGE,
        conversation=render_conversation(conversation),
        rubric=render_numbered(criteria, where="judge rubric"),
        response=_nonempty(response, "judge: the response"),
    ))


def judge_vote_requests(model: str, conversation: Sequence[Mapping[str, Any]] | str,
                        criteria: Sequence[str], response: str, *, temperature: float,
                        votes: int = JUDGE_VOTES, max_tokens: int | None = None,
                        **fields: Any) -> list[Request]:
    """The ``votes`` judge requests (Appendix E prompt 11) whose per-criterion majority is J's verdict.

    One request per vote, identical except ``sample_index`` 0, 1, ..., votes-1, so each vote is
    its own cache entry (Table A.3: "majority of 3 samples"). ``temperature`` is required: at
    0.0 the votes of most backends coincide. ``max_tokens`` defaults to 16 + 8 per criterion
    (raise it for reasoning models). Other ``fields`` go to Request.
    """
    if type(votes) is not int or votes < 1:
        raise ValueError(f"judge_vote_requests: votes must be an int >= 1, got {votes!r}")
    if "sample_index" in fields or "response_format" in fields:
        raise ValueError("judge_vote_requests sets sample_index and response_format itself")
    messages = judge_messages(conversation, criteria, response)
    if max_tokens is None:
        max_tokens = 16 + 8 * len(criteria)
    return [
        Request.chat(model, messages, temperature=temperature, max_tokens=max_tokens,
                     response_format=scores_format_name(len(criteria)), sample_index=vote,
                     **fields)
        for vote in range(votes)
    ]


# --- 4./5. interventions --------------------------------------------------------------------------

def _direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {direction!r}")
    return direction


def intervention_messages(direction: str, conversation: Sequence[Mapping[str, Any]] | str,
                          response: str, satisfied: Sequence[str],
                          unsatisfied: Sequence[str]) -> list[dict[str, str]]:
    """Appendix E prompt 4 (direction "pass") or 5 ("fail"): minimally edit ``response``.

    The prompt shows the criteria split into those the response satisfies and those it does
    not (one "- <text>" line each, EMPTY_SECTION for an empty side), the conversation and the
    response; nothing else of the judge's output. Answer format "transfer_response".
    """
    system, template = ((PASS_EDIT_SYSTEM, PASS_EDIT_MESSAGE) if _direction(direction) == "pass"
                        else (FAIL_EDIT_SYSTEM, FAIL_EDIT_MESSAGE))
    sat = _texts(satisfied, f"{direction} edit: satisfied criteria", allow_empty=True)
    unsat = _texts(unsatisfied, f"{direction} edit: unsatisfied criteria", allow_empty=True)
    if not sat and not unsat:
        raise ValueError(f"{direction} edit: no criteria to edit for")
    return _chat(system, _fill(
        template,
        satisfied=render_bullets(sat), unsatisfied=render_bullets(unsat),
        conversation=render_conversation(conversation),
        response=_nonempty(response, f"{direction} edit: the response"),
    ))


def _verdict(entry: object, where: str) -> tuple[str, bool]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected a mapping with 'text' and 'satisfied', "
                         f"got {type(entry).__name__}")
    if "text" not in entry or "satisfied" not in entry:
        raise ValueError(f"{where}: needs 'text' and 'satisfied', has {sorted(map(str, entry))}")
    text, satisfied = entry["text"], entry["satisfied"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where}: 'text' must be a non-empty string, got {text!r:.60}")
    # True/False, or the 1/0 of a majority; None (an unparseable verdict) is never read as either.
    if satisfied is True or satisfied is False or (type(satisfied) is int and satisfied in (0, 1)):
        return text, bool(satisfied)
    raise ValueError(f"{where}: 'satisfied' must be True/False or 1/0, got {satisfied!r}")


def split_by_verdict(judged: Sequence[Mapping[str, Any]],
                     where: str = "judged criteria") -> tuple[list[str], list[str]]:
    """(satisfied texts, unsatisfied texts) in rubric order, from judged criteria.

    Each entry is a mapping with at least "text" and "satisfied" (True/False or 1/0, e.g. the
    judge's majority); every other key (votes, explanations, ids) is ignored, so none of it can
    reach an intervention prompt.
    """
    if isinstance(judged, (str, bytes)) or not isinstance(judged, Sequence) or not judged:
        raise ValueError(f"{where}: expected a non-empty list of judged criteria")
    satisfied: list[str] = []
    unsatisfied: list[str] = []
    for index, entry in enumerate(judged):
        text, ok = _verdict(entry, f"{where}[{index}]")
        (satisfied if ok else unsatisfied).append(text)
    return satisfied, unsatisfied


def rubric_intervention_messages(direction: str, conversation: Sequence[Mapping[str, Any]] | str,
                                 response: str,
                                 judged: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Whole-rubric intervention (Section 3, Algorithm 1 line 5): R_{+C} ("pass", Appendix E
    prompt 4) or R_{-C} ("fail", prompt 5) for the target rubric C judged on the original R.

    ``judged``: every criterion of C with its verdict on R (see ``split_by_verdict``). A rubric
    already entirely at the end state is allowed (its "change" section is EMPTY_SECTION);
    whether to skip such edits is the caller's choice.
    """
    satisfied, unsatisfied = split_by_verdict(judged, f"{direction} rubric edit")
    return intervention_messages(direction, conversation, response, satisfied, unsatisfied)


def criterion_intervention_messages(direction: str, conversation: Sequence[Mapping[str, Any]] | str,
                                    response: str,
                                    criterion: Mapping[str, Any]) -> list[dict[str, str]]:
    """Single-criterion intervention (Sections 3 and 4.4.2): R_{+c} ("pass", Appendix E prompt 4)
    for a criterion with c(R)=0, R_{-c} ("fail", prompt 5) for one with c(R)=1.

    The prompt shows this one criterion and no other ("the LLM performing the edit for c does
    not see c′"): pass puts it alone under "does NOT satisfy" with the other section
    EMPTY_SECTION, fail alone under "satisfies". Always an edit of the original response, never
    of another edit. A criterion already at the end state raises ValueError.
    """
    _direction(direction)
    text, satisfied = _verdict(criterion, f"{direction} criterion edit")
    if direction == "pass" and satisfied:
        raise ValueError(f"pass criterion edit: R_+c is defined for c(R)=0, but {text[:60]!r} "
                         "is satisfied")
    if direction == "fail" and not satisfied:
        raise ValueError(f"fail criterion edit: R_-c is defined for c(R)=1, but {text[:60]!r} "
                         "is not satisfied")
    sides = ([text], []) if satisfied else ([], [text])
    return intervention_messages(direction, conversation, response, *sides)


# --- 6. RubricRAG degradation ---------------------------------------------------------------------

def degraded_response_messages(conversation: Sequence[Mapping[str, Any]] | str,
                               rubric: Sequence[str]) -> list[dict[str, str]]:
    """Appendix E prompt 6 (RubricRAG's bad response R^bad, Section 4.2 and Table A.5).

    ``rubric``: the criteria of an unrelated expert rubric (one "- <text>" line each),
    put into the response model's prompt with this conversation. Answer format
    "transfer_response".
    """
    return _chat(DEGRADE_SYSTEM, _fill(
        DEGRADE_MESSAGE,
        rubric=render_bullets(_texts(rubric, "degrade rubric"), "degrade rubric"),
        conversation=render_conversation(conversation),
    ))


# --- 7. RubricRAG similarity -------------------------------------------------------------------------

def similarity_messages(ref_text: str, gen_text: str) -> list[dict[str, str]]:
    """Appendix E prompt 7 (RubricRAG LLM-matching, Algorithm 2 line 5): sim(c^g, c^*) in 0..9.

    ``ref_text`` is the expert criterion, ``gen_text`` the generated one; no conversation is
    shown. Answer format "transfer_similarity".
    """
    return _chat(SIMILARITY_SYSTEM, _fill(
        SIMILARITY_MESSAGE,
        ref_text=criterion_line(_nonempty(ref_text, "similarity: the reference criterion")),
        gen_text=criterion_line(_nonempty(gen_text, "similarity: the generated criterion")),
    ))


# --- 8.-10. LLM-matching framings --------------------------------------------------------------------

def matching_messages(framing: str, conversation: Sequence[Mapping[str, Any]] | str,
                      true_rubric: Sequence[str],
                      generated_rubric: Sequence[str]) -> list[dict[str, str]]:
    """Appendix E prompts 8-10, the framings of Figure A.1: ask_llm_match_rubric ("match_rubric"),
    ask_llm_simulate_intervention ("simulate_intervention"), ask_llm_implies ("implies").

    True criteria are lines "T0: <text>", ..., generated ones "G0: <text>", .... The answer,
    format ``match_format_name(len(generated_rubric))``, is {"indices": {"G<i>": ["T<j>", ...]}};
    TOOL_CALL_INSTRUCTION, after the verbatim message, asks for it as JSON.
    """
    key = FRAMING_PROMPT_NAMES.get(framing, framing)
    if key not in FRAMINGS:
        raise ValueError(f"unknown matching framing {framing!r}; known: {list(FRAMINGS)} "
                         f"(or {list(FRAMING_PROMPT_NAMES)})")
    if len(generated_rubric) > MAX_CRITERIA:
        raise ValueError(f"{key}: {len(generated_rubric)} generated criteria, more than the "
                         f"{MAX_CRITERIA} the matching formats are registered for")
    system, template = FRAMINGS[key]
    user = _fill(
        template,
        conversation=render_conversation(conversation),
        true_rubric=render_numbered(true_rubric, prefix="T", separator=": ", where=f"{key} true rubric"),
        generated_rubric=render_numbered(generated_rubric, prefix="G", separator=": ",
                                         where=f"{key} generated rubric"),
    )
    return _chat(system, f"{user}\n\n{TOOL_CALL_INSTRUCTION}")


# --- fingerprint -----------------------------------------------------------------------------------------

def template_fingerprint() -> str:
    """sha256 (16 hex) of every prompt of this module rendered on placeholder content, and of
    the re-ask instructions of rubriclab.transfer.formats.

    A rule that calls a model with these prompts declares it as a param, so editing any prompt
    text or rendering here reruns exactly those rules.
    """
    conversation = [{"role": "user", "content": "<USER>"}, {"role": "assistant", "content": "<ASSISTANT>"},
                    {"role": "user", "content": "<USER 2>"}]
    criteria = ["<CRITERION 0>", "<CRITERION 1>"]
    judged = [{"text": "<SATISFIED>", "satisfied": True}, {"text": "<UNSATISFIED>", "satisfied": False}]
    rendered = [
        response_messages(conversation),
        generation_messages(conversation),
        restate_messages([(3, "<NEGATIVE 3>"), (7, "<NEGATIVE 7>")]),
        judge_messages(conversation, criteria, "<RESPONSE>"),
        *(rubric_intervention_messages(d, conversation, "<RESPONSE>", judged) for d in DIRECTIONS),
        criterion_intervention_messages("pass", conversation, "<RESPONSE>", judged[1]),
        criterion_intervention_messages("fail", conversation, "<RESPONSE>", judged[0]),
        degraded_response_messages(conversation, criteria),
        similarity_messages("<REFERENCE>", "<GENERATED>"),
        *(matching_messages(f, conversation, criteria, ["<GEN 0>"]) for f in FRAMINGS),
    ]
    # The re-ask instructions are prompt text too (sent after an unreadable answer).
    reasks = [TRANSFER_FORMATS[name].reask_instruction for name in (
        RUBRIC_FORMAT, SIMILARITY_FORMAT, RESTATED_FORMAT, RESPONSE_FORMAT,
        scores_format_name(2), match_format_name(1))]
    payload = json.dumps([rendered, reasks], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
