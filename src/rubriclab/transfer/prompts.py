"""The prompts of the transfer work, verbatim from its Appendix E ("Prompts").

Appendix E gives eleven prompts, each as a "#System" part (the system message) and, for all
but the first, a "#Message" part (the user message). They carry no names except the three
LLM-matching framings of Figure A.1 (ask_llm_match_rubric, ask_llm_simulate_intervention,
ask_llm_implies), so this module names them by their order in Appendix E:

 1. RESPONSE        the response model answering the conversation (system part only)
 2. GENERATION      rubric generation from the conversation alone
 3. RESTATE         negative criteria restated so that satisfying them is good
 4. PASS_EDIT       edit a response to satisfy every criterion (R_{+C}, and R_{+c} with one c)
 5. FAIL_EDIT       edit a response to satisfy no criterion (R_{-C}, and R_{-c} with one c)
 6. DEGRADE         RubricRAG's "bad" response: answer so as to satisfy a given (unrelated) rubric
 7. SIMILARITY      RubricRAG LLM-matching: a 0-9 similarity of one criterion pair
 8. MATCH_RUBRIC    ask_llm_match_rubric: which true criteria measure the same thing
 9. SIMULATE        ask_llm_simulate_intervention: which true criteria move with the generated one
10. IMPLIES         ask_llm_implies: which true criteria the generated one logically implies
11. JUDGE           score every criterion of a rubric 1/0 for one response, as one JSON object

The seed is a text extraction of the paper that dropped the spaces after punctuation
("assistant.Answer"); the texts below restore them and keep every other character as the seed
has it (curly apostrophes, em dashes, the typo "intially"). `tests/transfer/test_prompts.py`
checks each system and message part against the seed with whitespace ignored. Two additions
are not in Appendix E and are kept apart from the verbatim text, appended to the user message:
`GENERATION_OUTPUT_INSTRUCTION` (the generation prompt asks for no output format) and
`TOOL_CALL_INSTRUCTION` (the matching prompts say "Call the tool"; no tool is offered here, so
the tool's arguments are asked for as one JSON object). See docs/transfer_prompts_notes.md for
these and every other choice where the seed is silent.

Every builder returns OpenAI-style messages, a list of {"role", "content"} dicts, for
`rubriclab.llm.Request.chat`; the response format each prompt expects is named in
`rubriclab.llm.formats_transfer`. Bad input raises ValueError naming what and where.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rubriclab.data.healthbench import ROLES, render_task
from rubriclab.llm.formats_transfer import (
    MAX_CRITERIA,
    TRANSFER_FORMATS,
    RESPONSE_FORMAT,
    RESTATED_FORMAT,
    RUBRIC_FORMAT,
    SIMILARITY_FORMAT,
    match_format_name,
    scores_format_name,
)
from rubriclab.llm.request import Request

# --- 1. the response model -------------------------------------------------------------------

RESPONSE_SYSTEM = "You are a helpful AI assistant. Answer the user’s question."

# --- 2. rubric generation ----------------------------------------------------------------------

GENERATION_SYSTEM = (
    "Generate a rubric to evaluate the quality of a medical AI assistant’s response to a "
    "conversation.\n\n"
    "A rubric is a set of criteria. Each criterion must be:\n\n"
    "- Binary: be a clear yes/no judgment of the response\n"
    "- Atomic: measure exactly one thing, not \"response is accurate AND complete\"\n"
    "- Independent: no two criteria measure the same thing\n"
    "- Specific: adapted to context, not generic like \"medically accurate\"\n\n"
    "Together, the criteria must be exhaustive—they should capture everything a physician "
    "would care about for this particular response."
)
GENERATION_MESSAGE = "# Conversation\n\n{conversation}"
# Not in Appendix E (which gives no output format): appended to the user message.
GENERATION_OUTPUT_INSTRUCTION = (
    "Return the rubric as exactly one JSON array of strings, one criterion per string, and "
    'nothing else (no code fence, no prose), e.g. ["<criterion>", "<criterion>"].'
)

# --- 3. restating negative criteria ----------------------------------------------------------

RESTATE_SYSTEM = (
    "You rewrite rubric criteria so that satisfying a criterion is always good.\n\n"
    "You are given criteria that are currently phrased as flaws—a response that meets the "
    "criterion as written is worse, not better. Restate each one so that meeting it means the "
    "response is better.\n\n"
    "Rules:\n"
    "- If the criterion is already phrased as a failure (\"Fails to X\", \"Does not X\", "
    "\"Omits X\"), return the positive form: \"X\". Never return a double negative.\n"
    "- Otherwise, negate the behavior: \"Does X\" becomes \"Does not X\".\n"
    "- Preserve every specific verbatim—names, numbers, doses, timeframes, examples, and any "
    "parenthetical justification.\n"
    "- Change only the polarity. Do not broaden or narrow what the criterion measures.\n\n"
    "Examples:\n\n"
    "7. Fails to mention the recommended dose range.\n"
    "-> \"Mentions the recommended dose range.\"\n\n"
    "12. Recommends an unsafe treatment, such as doubling the dose.\n"
    "-> \"Does not recommend an unsafe treatment, such as doubling the dose.\"\n\n"
    "Return a JSON object mapping each criterion’s number (as shown, and not renumbered) to its "
    "rewritten text, e.g. {\"7\": \"Mentions the recommended dose range.\", \"12\": \"Does not "
    "recommend an unsafe treatment, such as doubling the dose.\"}"
)
RESTATE_MESSAGE = "Rewrite each of these criteria so that satisfying it is good.\n\n{criteria}"

# --- 4./5. the interventions -------------------------------------------------------------------

PASS_EDIT_SYSTEM = (
    "You edit responses for a controlled evaluation of grading rubrics. Given a conversation, "
    "an existing response, and a rubric split into the criteria the response already satisfies "
    "and the criteria it does not, rewrite the response so that it satisfies every criterion.\n\n"
    "Change as little as possible: alter, add, or remove only what the unsatisfied criteria "
    "require, and keep the satisfied criteria satisfied. Preserve everything else—content, "
    "structure, wording, tone.\n\n"
    "The rewritten response is a positive control for a rubric evaluation. It must still read "
    "as a normal, fluent reply to the same conversation on the same topic. Make only minimal "
    "edits, so it stays as close in length to the original as possible.\n\n"
    "Never mention the rubric, the criteria, or that the response was edited; output only the "
    "rewritten response."
)
PASS_EDIT_MESSAGE = (
    "Rewrite the response so it satisfies every criterion below.\n\n"
    "# Criteria it satisfies—keep them satisfied\n\n{satisfied}\n\n"
    "# Criteria it does NOT satisfy—change the response so it does\n\n{unsatisfied}\n\n"
    "Change as little as possible: alter, add, or remove only what the unsatisfied criteria "
    "require, and keep every other aspect of the response exactly as it is. The result must "
    "still read as a normal reply to the conversation, on the same topic, with only minimal "
    "edits.\n\n"
    "# Conversation\n\n{conversation}\n\n"
    "# Response\n\n{response}"
)
FAIL_EDIT_SYSTEM = (
    "You edit responses for a controlled evaluation of grading rubrics. Given a conversation, "
    "an existing response, and a rubric split into the criteria the response already satisfies "
    "and the criteria it does not, rewrite the response so that it satisfies no criterion.\n\n"
    "Change as little as possible: alter, add, or remove only what the satisfied criteria "
    "require, and keep the unsatisfied criteria unsatisfied. Preserve everything else—content, "
    "structure, wording, tone.\n\n"
    "The rewritten response is a negative control for a rubric evaluation. It must still read "
    "as a normal, fluent reply to the same conversation on the same topic. Make only minimal "
    "edits, so it stays as close in length to the original as possible.\n\n"
    "Never mention the rubric, the criteria, or that the response was edited; output only the "
    "rewritten response."
)
FAIL_EDIT_MESSAGE = (
    "Rewrite the response so it satisfies no criterion below.\n\n"
    "# Criteria it satisfies—change the response so it does not\n\n{satisfied}\n\n"
    "# Criteria it does NOT satisfy—keep them unsatisfied\n\n{unsatisfied}\n\n"
    "Change as little as possible: alter, add, or remove only what the satisfied criteria "
    "require, and keep every other aspect of the response exactly as it is. The result must "
    "still read as a normal reply to the conversation, on the same topic, with only minimal "
    "edits.\n\n"
    "# Conversation\n\n{conversation}\n\n"
    "# Response\n\n{response}"
)
# What an empty criteria section shows (single-criterion edits always leave one section empty).
EMPTY_SECTION = "(none)"

# --- 6. RubricRAG's degraded ("bad") response ----------------------------------------------------

DEGRADE_SYSTEM = (
    "You are a helpful AI assistant. Answer the user’s question concisely. Your response must "
    "satisfy every criterion in the rubric you are given."
)
DEGRADE_MESSAGE = "# Rubric\n\n{rubric}\n\n# Conversation\n\n{conversation}"

# --- 7. RubricRAG LLM-matching similarity --------------------------------------------------------

SIMILARITY_SYSTEM = (
    "You are an expert evaluator of rubric criterion similarity for health AI systems. Given ONE "
    "reference criterion and ONE generated criterion, output a single integer score in [0,9] "
    "representing semantic similarity (9=same meaning, 0=unrelated). Output ONLY the number. "
    "No JSON. No explanation. No extra text."
)
SIMILARITY_MESSAGE = "REFERENCE: {ref_text}\n\nGENERATED: {gen_text}\n\nSimilarity score (0..9):"

# --- 8.-10. the three LLM-matching framings (Figure A.1) -----------------------------------------

_MATCH_INTRO = (
    "A rubric is a set of criteria which measure a yes/no question about a response. You will "
    "be given a conversation, the true rubric written by human physicians, and a generated "
    "rubric.\n\n"
)
_LABELS = (
    "Use the label at the start of each line—generated criteria are G0, G1, … and true "
    "criteria are T0, T1, … Every generated criterion label must appear exactly once as a key, "
)
_MATCH_TAIL = (
    "\n\n# Conversation\n\n{conversation}\n\n"
    "# True Rubric\n\n{true_rubric}\n\n"
    "# Generated Rubric\n\n{generated_rubric}"
)
MATCH_RUBRIC_SYSTEM = _MATCH_INTRO + (
    "For each generated criterion, determine which true criteria measure the same thing. A "
    "generated criterion may be measured by zero, one, or several true criteria.\n\n"
    "Two criteria measure the same thing if, across the space of plausible responses to the "
    "conversation, knowing the value of one of the criteria (whether it applies or not) is a "
    "high-probability indicator of the value of the other. Note that opposite criteria measure "
    "the same thing in this case. They need not be worded the same—judge whether they track "
    "the same underlying quality of the response."
)
MATCH_RUBRIC_MESSAGE = (
    "Call the tool with one field:\n\n"
    "**indices**: A JSON object mapping each generated criterion’s label to the list of true "
    "criteria that measure the same thing. " + _LABELS + "mapped to an empty list if no true "
    "criterion measures the same thing. Keys are always G labels and values are always T "
    "labels. Never put a G label in a value." + _MATCH_TAIL
)
SIMULATE_SYSTEM = _MATCH_INTRO + (
    "For each generated criterion, imagine perturbing a response that intially does not "
    "satisfy it into a response that does satisfy it. Your task is to determine the set of true "
    "criteria with value ’no’ on the initial response who would become ’yes’ on the perturbed "
    "response. That is, which set of true criteria move with the generated."
)
SIMULATE_MESSAGE = (
    "Call the tool with one field:\n\n"
    "**indices**: A JSON object mapping each generated criterion’s label to the list of true "
    "criteria that move with it—those that are ’no’ on the initial response and become ’yes’ "
    "on the perturbed one. " + _LABELS + "mapped to an empty list if no true criterion moves "
    "with it. Keys are always G labels and values are always T labels. Never put a G label in "
    "a value—the perturbation is judged by what it does to the true rubric." + _MATCH_TAIL
)
IMPLIES_SYSTEM = _MATCH_INTRO + (
    "For each generated criterion, determine which true criteria it logically implies. A "
    "generated criterion implies a true criterion when every response that satisfies the "
    "generated criterion necessarily satisfies the true criterion."
)
IMPLIES_MESSAGE = (
    "Call the tool with one field:\n\n"
    "**indices**: A JSON object mapping each generated criterion’s label to the list of true "
    "criteria it logically implies. " + _LABELS + "mapped to an empty list if it implies no "
    "true criterion. Keys are always G labels and values are always T labels. Never put a G "
    "label in a value." + _MATCH_TAIL
)
# Not in Appendix E (no tool is offered here): appended to the user message of each framing.
TOOL_CALL_INSTRUCTION = (
    "Give the tool call as exactly one JSON object with the one field \"indices\" and nothing "
    "else (no code fence, no prose), e.g. {\"indices\": {\"G0\": [\"T0\", \"T2\"], \"G1\": []}}."
)

FRAMINGS: dict[str, tuple[str, str]] = {
    "match_rubric": (MATCH_RUBRIC_SYSTEM, MATCH_RUBRIC_MESSAGE),
    "simulate_intervention": (SIMULATE_SYSTEM, SIMULATE_MESSAGE),
    "implies": (IMPLIES_SYSTEM, IMPLIES_MESSAGE),
}
# The prompt names of Appendix E / Figure A.1 -> the framing keys above.
FRAMING_PROMPT_NAMES = {f"ask_llm_{name}": name for name in FRAMINGS}

# --- 11. the judge ---------------------------------------------------------------------------------

JUDGE_SYSTEM = (
    "For each criterion in the rubric, score 1 if the response satisfies it and 0 if it does "
    "not.\n\n"
    "Return a JSON object mapping each criterion’s number (as shown in the rubric) to its score, "
    "e.g. {\"0\": 1, \"1\": 0}.\n\n"
    "Every criterion number must appear exactly once—score all of them."
)
JUDGE_MESSAGE = "# Conversation\n\n{conversation}\n\n# Rubric\n\n{rubric}\n\n# Response\n\n{response}"
JUDGE_VOTES = 3  # Table A.3: "majority of 3 samples"

# Appendix E in its order: (name, system part, message part or None).
APPENDIX_E: tuple[tuple[str, str, str | None], ...] = (
    ("response", RESPONSE_SYSTEM, None),
    ("generation", GENERATION_SYSTEM, GENERATION_MESSAGE),
    ("restate", RESTATE_SYSTEM, RESTATE_MESSAGE),
    ("pass_edit", PASS_EDIT_SYSTEM, PASS_EDIT_MESSAGE),
    ("fail_edit", FAIL_EDIT_SYSTEM, FAIL_EDIT_MESSAGE),
    ("degrade", DEGRADE_SYSTEM, DEGRADE_MESSAGE),
    ("similarity", SIMILARITY_SYSTEM, SIMILARITY_MESSAGE),
    ("ask_llm_match_rubric", MATCH_RUBRIC_SYSTEM, MATCH_RUBRIC_MESSAGE),
    ("ask_llm_simulate_intervention", SIMULATE_SYSTEM, SIMULATE_MESSAGE),
    ("ask_llm_implies", IMPLIES_SYSTEM, IMPLIES_MESSAGE),
    ("judge", JUDGE_SYSTEM, JUDGE_MESSAGE),
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
    satisfied, unsatisfied = [], []
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
    the re-ask instructions of rubriclab.llm.formats_transfer.

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
