"""The texts of the transfer work's prompts, verbatim from its Appendix E ("Prompts").

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
these and every other choice where the seed is silent. The messages are built from these texts
by rubriclab.transfer.prompts.
"""

from __future__ import annotations

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
