"""Response formats of the transfer work's prompts (rubriclab.transfer.prompts, Appendix E).

Names (``TRANSFER_FORMATS``; the model layer finds them through ``response_format``, registered
under the entry-point group "rubriclab.response_formats", see ``rubriclab.llm.formats.get_format``):

- "transfer_rubric": a generated rubric, one JSON array of criterion texts (prompt 2);
- "transfer_similarity": RubricRAG's similarity, one digit 0-9 and nothing else (prompt 7);
- "transfer_restated": the restatement answer, one JSON object mapping each shown criterion
  number to its rewritten text, one line each (prompt 3). Whether the numbers are exactly those
  asked for is checked by ``rubriclab.transfer.restate``, which knows the rubric;
- "transfer_response": a response or an edited response, non-empty text (prompts 1, 4, 5, 6);
- "transfer_scores_<n>", n = 1..MAX_CRITERIA: the judge's answer for a rubric of n criteria,
  one JSON object mapping every number "0".."n-1" exactly once to 1 or 0 (prompt 11). The
  judge of Appendix E scores a whole rubric in one answer, so its verdict is this object, not
  a yes/no per criterion;
- "transfer_match_<n>", n = 1..MAX_CRITERIA: a matching framing's answer for n generated
  criteria, {"indices": {"G0": [...], ..., "G<n-1>": [...]}} with T labels in the lists
  (prompts 8-10). Whether each T label is below the number of true criteria is checked by
  ``match_matrix``, which knows it.

The sizes are part of the format name because a parser sees only the answer text, and a
missing or extra criterion must be re-asked, not discovered later. Parsing is strict: nothing
but whitespace around the JSON (or one markdown code fence around the whole answer, which
simple-evals strips too; no prose), no duplicate keys. Each format has a
re-ask instruction and, except "transfer_response", a GBNF grammar for the local llama.cpp
model; every string a grammar admits is accepted by its parser.
"""

from __future__ import annotations

import re

from rubriclab.llm.formats import ResponseFormat, UnparseableAnswer, load_strict_json

MAX_CRITERIA = 100  # the largest rubric the sized formats are registered for (HealthBench: <= 37)

RUBRIC_FORMAT = "transfer_rubric"
SIMILARITY_FORMAT = "transfer_similarity"
RESTATED_FORMAT = "transfer_restated"
RESPONSE_FORMAT = "transfer_response"
SCORES_PREFIX = "transfer_scores_"
MATCH_PREFIX = "transfer_match_"

_NUMBER = re.compile(r"^(0|[1-9][0-9]*)$")
_T_LABEL = re.compile(r"^T(0|[1-9][0-9]*)$")
_G_LABEL = re.compile(r"^G(0|[1-9][0-9]*)$")

# Shared GBNF pieces: JSON strings on one line that start with a visible character.
_STRING_RULES = [
    r'item ::= "\"" first char{0,299} "\""',
    r'first ::= [^"\\\x7F\x00-\x20] | escape',
    r'char ::= [^"\\\x7F\x00-\x1F] | escape',
    r'escape ::= "\\" (["\\/] | "u" [0-9a-fA-F]{4})',
    r'ws ::= " "?',
]


def _size(n: int, what: str) -> int:
    if type(n) is not int or not 1 <= n <= MAX_CRITERIA:
        raise ValueError(f"{what}: the number of criteria must be an int in 1..{MAX_CRITERIA}, got {n!r}")
    return n


def scores_format_name(n: int) -> str:
    """The judge's format for a rubric of ``n`` criteria: "transfer_scores_<n>"."""
    return f"{SCORES_PREFIX}{_size(n, 'scores_format_name')}"


def match_format_name(n: int) -> str:
    """A matching framing's format for ``n`` generated criteria: "transfer_match_<n>"."""
    return f"{MATCH_PREFIX}{_size(n, 'match_format_name')}"


# --- transfer_rubric ------------------------------------------------------------------------------

def parse_generated_rubric(text: str) -> list[str]:
    """Exactly one JSON array of 1..MAX_CRITERIA non-empty strings, no two the same; else raise.

    Texts are returned stripped, in the answer's order. "The same" compares texts with case and
    runs of whitespace ignored (a repeated criterion cannot be judged apart from itself).
    """
    value = load_strict_json(text, "a rubric")
    if not isinstance(value, list):
        raise UnparseableAnswer(f"expected a JSON array of criterion texts, got {type(value).__name__}")
    if not value:
        raise UnparseableAnswer("the rubric has no criteria")
    if len(value) > MAX_CRITERIA:
        raise UnparseableAnswer(f"the rubric has {len(value)} criteria, more than {MAX_CRITERIA}")
    criteria: list[str] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(value):
        if not isinstance(entry, str) or not entry.strip():
            raise UnparseableAnswer(f"criterion {index} must be a non-empty string, got {entry!r:.60}")
        key = " ".join(entry.split()).casefold()
        if key in seen:
            raise UnparseableAnswer(f"criteria {seen[key]} and {index} are the same text")
        seen[key] = index
        criteria.append(entry.strip())
    return criteria


# At most 20 criteria of at most 300 characters on a local model: a small model that starts
# repeating itself reaches the end of the grammar instead of its token limit.
RUBRIC_GRAMMAR = "\n".join([r'root ::= "[" ws item (ws "," ws item){0,19} ws "]"', *_STRING_RULES]) + "\n"


# --- transfer_similarity ----------------------------------------------------------------------------

_DIGIT = re.compile(r"^\s*([0-9])\s*$")


def parse_similarity(text: str) -> int:
    """One integer 0..9 with nothing around it but whitespace ("Output ONLY the number"); else raise."""
    match = _DIGIT.match(text)
    if not match:
        raise UnparseableAnswer(f"expected a single integer from 0 to 9, got {text[:80]!r}")
    return int(match.group(1))


# --- transfer_restated --------------------------------------------------------------------------------

def parse_restated(text: str) -> dict[str, str]:
    """One JSON object mapping criterion numbers ("7", not "07") to one-line rewritten texts; else raise.

    At least one entry; each text a non-empty string without a line break, returned stripped.
    """
    value = load_strict_json(text, "a restatement")
    if not isinstance(value, dict):
        raise UnparseableAnswer(f"expected a JSON object of number -> text, got {type(value).__name__}")
    if not value:
        raise UnparseableAnswer("the restatement is empty")
    restated = {}
    for key, rewritten in value.items():
        if not _NUMBER.match(key):
            raise UnparseableAnswer(f"key {key!r} is not a criterion number such as \"7\"")
        if not isinstance(rewritten, str) or not rewritten.strip():
            raise UnparseableAnswer(f"the text for {key!r} must be a non-empty string, got {rewritten!r:.60}")
        if "\n" in rewritten.strip() or "\r" in rewritten.strip():
            raise UnparseableAnswer(f"the text for {key!r} must be one line")
        restated[key] = rewritten.strip()
    return restated


RESTATED_GRAMMAR = "\n".join([
    r'root ::= "{" ws pair (ws "," ws pair)* ws "}"',
    r'pair ::= "\"" number "\"" ws ":" ws item',
    r'number ::= "0" | [1-9] [0-9]{0,3}',
    *_STRING_RULES,
]) + "\n"


# --- transfer_response ---------------------------------------------------------------------------------

def parse_response(text: str) -> str:
    """A response: any text that is not blank, returned stripped; else raise."""
    if not text.strip():
        raise UnparseableAnswer("empty answer")
    return text.strip()


# --- transfer_scores_<n> ---------------------------------------------------------------------------------

def _require_exactly_the_keys(mapping: dict, expected: list[str], what: str) -> None:
    missing = [k for k in expected if k not in mapping]
    extra = sorted(set(mapping) - set(expected))
    if missing or extra:
        raise UnparseableAnswer(f"expected {what}; missing {missing[:10]}, "
                                f"unexpected {extra[:10]}")


def parse_scores(text: str, n: int) -> list[int]:
    """One JSON object mapping each of "0".."n-1" exactly once to 1 or 0; else raise.

    Returns the n scores in criterion order. Scores are the JSON integers 1 and 0 (not true,
    false, "1" or 1.0), as in the judge prompt's example {"0": 1, "1": 0}.
    """
    value = load_strict_json(text, "the scores")
    if not isinstance(value, dict):
        raise UnparseableAnswer(f"expected a JSON object of criterion number -> 1 or 0, got {type(value).__name__}")
    expected = [str(i) for i in range(n)]
    _require_exactly_the_keys(value, expected, f"every criterion number 0..{n - 1} exactly once")
    scores = []
    for key in expected:
        score = value[key]
        if type(score) is not int or score not in (0, 1):
            raise UnparseableAnswer(f"the score of criterion {key} must be 1 or 0, got {score!r:.30}")
        scores.append(score)
    return scores


def scores_grammar(n: int) -> str:
    """GBNF for {"0": s, "1": s, ..., "n-1": s} with s in {0, 1}, keys in order."""
    pairs = r' ws "," ws '.join(rf'"\"{i}\"" ws ":" ws bit' for i in range(n))
    return f'root ::= "{{" ws {pairs} ws "}}"\nbit ::= [01]\nws ::= " "?\n'


def _scores_reask(n: int) -> str:
    numbers = "the criterion number 0" if n == 1 else f"each criterion number from 0 to {n - 1}"
    return (
        "Your answer could not be read. Answer with exactly one JSON object and nothing else "
        f"(no code fence, no prose), mapping {numbers} to its score, 1 if the response satisfies "
        'the criterion and 0 if it does not, e.g. {"0": 1, "1": 0}. Every criterion number must '
        "appear exactly once."
    )


# --- transfer_match_<n> ---------------------------------------------------------------------------------

def parse_match(text: str, n: int) -> list[list[int]]:
    """{"indices": {"G0": [T labels], ..., "G<n-1>": [...]}} with every G label once; else raise.

    Values are lists of distinct "T<j>" strings (possibly empty); a G label in a value is
    refused ("Never put a G label in a value"). Returns, for each generated criterion in order,
    the sorted true-criterion numbers j. Their range is checked by ``match_matrix``.
    """
    value = load_strict_json(text, "the tool call")
    if not isinstance(value, dict) or set(value) != {"indices"}:
        raise UnparseableAnswer('expected a JSON object with the one field "indices"')
    indices = value["indices"]
    if not isinstance(indices, dict):
        raise UnparseableAnswer(f'"indices" must be a JSON object, got {type(indices).__name__}')
    expected = [f"G{i}" for i in range(n)]
    _require_exactly_the_keys(indices, expected,
                              f"every generated label G0..G{n - 1} exactly once as a key")
    matched = []
    for key in expected:
        labels = indices[key]
        if not isinstance(labels, list):
            raise UnparseableAnswer(f"the value of {key} must be a list of T labels, got {labels!r:.60}")
        numbers = []
        for label in labels:
            if isinstance(label, str) and _G_LABEL.match(label):
                raise UnparseableAnswer(f"{key} lists the G label {label!r}; values are always T labels")
            if not isinstance(label, str) or not _T_LABEL.match(label):
                raise UnparseableAnswer(f"{key} lists {label!r:.30}, not a T label such as \"T0\"")
            numbers.append(int(label[1:]))
        if len(set(numbers)) != len(numbers):
            raise UnparseableAnswer(f"{key} lists a T label more than once: {labels}")
        matched.append(sorted(numbers))
    return matched


def match_matrix(matched: list[list[int]], n_true: int) -> list[list[int]]:
    """The 0/1 match matrix (generated x true) of a parsed matching answer; raise on a T label >= n_true.

    Raises UnparseableAnswer: an answer naming a true criterion that the prompt did not show is
    not a reading of that prompt (count it as unparseable, never as a match or no match).
    """
    if type(n_true) is not int or n_true < 1:
        raise ValueError(f"match_matrix: n_true must be an int >= 1, got {n_true!r}")
    matrix = []
    for g, numbers in enumerate(matched):
        beyond = [j for j in numbers if j >= n_true]
        if beyond:
            raise UnparseableAnswer(
                f"G{g} lists {['T%d' % j for j in beyond]}, but the true rubric has T0..T{n_true - 1}"
            )
        row = [0] * n_true
        for j in numbers:
            row[j] = 1
        matrix.append(row)
    return matrix


def match_grammar(n: int) -> str:
    """GBNF for {"indices": {"G0": [...], ..., "G<n-1>": [...]}}, keys in order, T labels in lists."""
    pairs = r' ws "," ws '.join(rf'"\"G{i}\"" ws ":" ws labels' for i in range(n))
    return "\n".join([
        rf'root ::= "{{" ws "\"indices\"" ws ":" ws "{{" ws {pairs} ws "}}" ws "}}"',
        r'labels ::= "[" ws (label (ws "," ws label)*)? ws "]"',
        r'label ::= "\"T" ("0" | [1-9] [0-9]{0,2}) "\""',
        r'ws ::= " "?',
    ]) + "\n"


def _match_reask(n: int) -> str:
    keys = "G0" if n == 1 else f"G0 to G{n - 1}"
    return (
        "Your answer could not be read. Answer with exactly one JSON object and nothing else "
        '(no code fence, no prose), of the form {"indices": {"G0": ["T1", "T4"], "G1": []}}: '
        f"every generated label from {keys} exactly once as a key, each mapped to the list of "
        "T labels of the true criteria (an empty list if none). Values are always T labels; "
        "never put a G label in a value."
    )


# --- the registry -------------------------------------------------------------------------------------------

def _sized_scores(n: int) -> ResponseFormat:
    return ResponseFormat(name=f"{SCORES_PREFIX}{n}", parse=lambda text: parse_scores(text, n),
                          reask_instruction=_scores_reask(n), gbnf_grammar=scores_grammar(n))


def _sized_match(n: int) -> ResponseFormat:
    return ResponseFormat(name=f"{MATCH_PREFIX}{n}", parse=lambda text: parse_match(text, n),
                          reask_instruction=_match_reask(n), gbnf_grammar=match_grammar(n))


TRANSFER_FORMATS: dict[str, ResponseFormat] = {
    RUBRIC_FORMAT: ResponseFormat(
        name=RUBRIC_FORMAT,
        parse=parse_generated_rubric,
        reask_instruction=(
            "Your answer could not be read. Answer with exactly one JSON array of strings and "
            "nothing else (no code fence, no prose): one criterion per string, at least one, no "
            'two the same, e.g. ["<criterion>", "<criterion>"].'
        ),
        gbnf_grammar=RUBRIC_GRAMMAR,
    ),
    SIMILARITY_FORMAT: ResponseFormat(
        name=SIMILARITY_FORMAT,
        parse=parse_similarity,
        reask_instruction=(
            "Your answer could not be read. Output ONLY the similarity score: a single integer "
            "from 0 to 9, and nothing else."
        ),
        gbnf_grammar="root ::= [0-9]\n",
    ),
    RESTATED_FORMAT: ResponseFormat(
        name=RESTATED_FORMAT,
        parse=parse_restated,
        reask_instruction=(
            "Your answer could not be read. Answer with exactly one JSON object and nothing else "
            "(no code fence, no prose), mapping each criterion’s number as shown (not "
            "renumbered) to its rewritten text on one line, e.g. "
            '{"7": "Mentions the recommended dose range."}.'
        ),
        gbnf_grammar=RESTATED_GRAMMAR,
    ),
    RESPONSE_FORMAT: ResponseFormat(
        name=RESPONSE_FORMAT,
        parse=parse_response,
        reask_instruction="Your answer was empty. Write the response itself, and nothing else.",
        free_text=True,
    ),
}
for _n in range(1, MAX_CRITERIA + 1):
    TRANSFER_FORMATS[f"{SCORES_PREFIX}{_n}"] = _sized_scores(_n)
    TRANSFER_FORMATS[f"{MATCH_PREFIX}{_n}"] = _sized_match(_n)
del _n


def response_format(name: str) -> ResponseFormat | None:
    """The transfer format called `name`, or None if it is not one (entry point "transfer" of
    "rubriclab.response_formats")."""
    return TRANSFER_FORMATS.get(name)
