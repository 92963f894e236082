"""The carry response formats (verdict_list_<n>, rubric_checks, scale_1_10, rubric_revision),
their GBNF grammars, and the fake model's answers in them."""

import ctypes
import json
import math

import pytest

from rubriclab.carry.formats import (
    FORMATS, MAX_RUBRIC_CHECKS, parse_rubric_checks, parse_scale_1_10,
)
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, MODES, Rubric, RubricCheck, parse_revision, revision_messages,
)
from rubriclab.carry.sources import RECON_TASK_DESCRIPTION
from rubriclab.llm import Request
from rubriclab.llm.fake import fake_answer
from rubriclab.llm.formats import UnparseableAnswer, get_format
from tests.llama_grammar import vocabulary_gguf


NEW_FORMATS = ["rubric_revision", "rubric_checks_1", "rubric_checks_4", "rubric_checks_20",
               "scale_1_10", "verdict_list_1", "verdict_list_3", "verdict_list_20",
               "verdict_list_99"]


# --- verdict_list_<n> -----------------------------------------------------------------------

def test_verdict_list_3_accepts_exactly_three_yes_no_in_order():
    parse = get_format("verdict_list_3").parse
    assert parse('{"verdicts": ["yes", "no", "yes"]}') == ["yes", "no", "yes"]
    # whitespace around the object and case/padding of the answers are normalised
    assert parse('\n {"verdicts":["No"," YES ","no"]}  ') == ["no", "yes", "no"]


@pytest.mark.parametrize("text", [
    '```json\n{"verdicts": ["yes", "no", "yes"]}\n```',
    '```\n{"verdicts": ["yes", "no", "yes"]}\n```',
    '\n  ```json\n  {"verdicts": ["yes", "no", "yes"]}\n  ```  \n',
    '```json\n{"verdicts": ["yes", "no", "yes"]}```',
    '```json{"verdicts": ["yes", "no", "yes"]}```',
])
def test_a_json_answer_in_one_surrounding_fence_is_read(text):
    """As simple-evals strips it (```json ... ``` or ``` ... ```): read, not re-asked."""
    assert get_format("verdict_list_3").parse(text) == ["yes", "no", "yes"]


@pytest.mark.parametrize("text", [
    '{"verdicts": ["yes", "no"]}',                         # 2 entries
    '{"verdicts": ["yes", "no", "yes", "no"]}',            # 4 entries
    '{"verdicts": []}',
    '{"verdicts": ["yes", "maybe", "no"]}',                # not yes/no
    '{"verdicts": ["yes", true, "no"]}',                   # not a string
    '{"verdicts": "yes, no, yes"}',                        # not a list
    'Here you go: {"verdicts": ["yes", "no", "yes"]}',     # prose before
    '{"verdicts": ["yes", "no", "yes"]} Hope this helps.',  # prose after
    '```json\n{"verdicts": ["yes", "no", "yes"]}\n``` Hope this helps.',  # prose after a fence
    'Here: ```json\n{"verdicts": ["yes", "no", "yes"]}\n```',  # prose before a fence
    '```json\n```json\n{"verdicts": ["yes", "no", "yes"]}\n```\n```',  # two fences
    '```python\n{"verdicts": ["yes", "no", "yes"]}\n```',  # a fence of another language
    '```json\n{"verdicts": ["yes", "no", "yes"]}',          # a fence never closed
    '```json\n{"verdicts": ["yes", "no", "yes"]} {"verdicts": ["yes"]}\n```',  # two objects
    '{"verdicts": ["yes", "no", "yes"], "note": "x"}',     # extra key
    '{"verdicts": ["yes"], "verdicts": ["yes", "no", "yes"]}',  # duplicate key
    '["yes", "no", "yes"]',                                # not an object
    'yes no yes',
])
def test_verdict_list_3_rejects(text):
    with pytest.raises(UnparseableAnswer):
        get_format("verdict_list_3").parse(text)


def test_verdict_list_formats_are_built_per_length_by_get_format():
    one = get_format("verdict_list_1")
    assert one.name == "verdict_list_1"
    assert one.parse('{"verdicts": ["no"]}') == ["no"]
    ninety_nine = get_format("verdict_list_99")
    assert ninety_nine.parse(json.dumps({"verdicts": ["yes"] * 99})) == ["yes"] * 99
    with pytest.raises(UnparseableAnswer, match="exactly 99"):
        ninety_nine.parse(json.dumps({"verdicts": ["yes"] * 98}))
    assert "exactly 3 answers" in get_format("verdict_list_3").reask_instruction


@pytest.mark.parametrize("name", ["verdict_list_0", "verdict_list_100", "verdict_list_01",
                                  "verdict_list_", "verdict_list_x", "verdict_list",
                                  "verdicts_3", "scale_1_5", "no_such_format",
                                  "rubric_checks_0", "rubric_checks_x", "rubric_checks_100"])
def test_get_format_rejects_unknown_names(name):
    with pytest.raises(ValueError, match="unknown response format"):
        get_format(name)


@pytest.mark.parametrize("name", ["rubric_checks_21", "rubric_checks_99"])
def test_get_format_rejects_rubric_checks_above_the_maximum(name):
    with pytest.raises(ValueError, match="1..20"):
        get_format(name)


# --- rubric_checks --------------------------------------------------------------------------

def test_rubric_checks_parses_and_normalises_whitespace():
    text = '{"checks": ["  The summary is  faithful. ", "The summary\\nis short."]}'
    assert parse_rubric_checks(text) == ["The summary is faithful.", "The summary is short."]
    assert get_format("rubric_checks").parse(text) == parse_rubric_checks(text)


def test_rubric_checks_accepts_exactly_the_maximum():
    assert MAX_RUBRIC_CHECKS == 20
    texts = [f"Check {n}." for n in range(1, 21)]
    assert parse_rubric_checks(json.dumps({"checks": texts})) == texts


@pytest.mark.parametrize("value", [
    {"checks": []},                                              # empty
    {"checks": [f"Check {n}." for n in range(1, 22)]},           # 21 > 20
    {"checks": ["A.", 3]},                                       # non-string
    {"checks": ["A.", None]},
    {"checks": ["A.", ["B."]]},
    {"checks": ["A.", "   "]},                                   # blank
    {"checks": "A."},                                            # not a list
    {"checks": ["A."], "extra": 1},
    {"rubric": ["A."]},
])
def test_rubric_checks_rejects(value):
    with pytest.raises(UnparseableAnswer):
        parse_rubric_checks(json.dumps(value))


def test_rubric_checks_keeps_a_repeated_check_twice():
    # the rubric builder, not the parser, drops repeats (and records how many)
    text = json.dumps({"checks": ["A.", "The output is  short.", "A.", "The output is short."]})
    assert parse_rubric_checks(text) == ["A.", "The output is short.", "A.",
                                         "The output is short."]


@pytest.mark.parametrize("n, count, ok", [(4, 4, True), (4, 1, True), (4, 5, False),
                                          (1, 1, True), (1, 2, False), (20, 20, True)])
def test_rubric_checks_n_allows_at_most_n_checks(n, count, ok):
    fmt = get_format(f"rubric_checks_{n}")
    assert fmt.name == f"rubric_checks_{n}"
    text = json.dumps({"checks": [f"Check {k}." for k in range(count)]})
    if ok:
        assert fmt.parse(text) == [f"Check {k}." for k in range(count)]
    else:
        with pytest.raises(UnparseableAnswer, match=f"at most {n}"):
            fmt.parse(text)
    assert f"between 1 and {n} checks" in fmt.reask_instruction


def test_rubric_checks_n_parses_like_rubric_checks():
    with pytest.raises(UnparseableAnswer):
        get_format("rubric_checks_4").parse('Checklist: {"checks": ["A."]}')
    with pytest.raises(UnparseableAnswer):
        get_format("rubric_checks_4").parse('{"checks": []}')
    assert get_format("rubric_checks_4").parse('{"checks": [" A.  b "]}') == ["A. b"]


def test_rubric_checks_rejects_prose_around_json():
    with pytest.raises(UnparseableAnswer):
        parse_rubric_checks('Checklist: {"checks": ["A."]}')


# --- scale_1_10 -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [("10", 10), ("5", 5), ("1", 1), (" 7\n", 7)])
def test_scale_accepts_whole_numbers_1_to_10(text, expected):
    assert parse_scale_1_10(text) == expected
    assert get_format("scale_1_10").parse(text) == expected


@pytest.mark.parametrize("text", ["0", "11", "7.5", "05", "-3", "ten", "7/10", "Score: 7", ""])
def test_scale_rejects(text):
    with pytest.raises(UnparseableAnswer):
        parse_scale_1_10(text)


# --- grammars -------------------------------------------------------------------------------

def test_every_new_format_has_a_grammar():
    for name in NEW_FORMATS:
        grammar = get_format(name).gbnf_grammar
        assert grammar and grammar.startswith("root ::= "), name
    # the verdict list grammar has exactly n answers
    assert get_format("verdict_list_3").gbnf_grammar.splitlines()[0].count("answer") == 3


@pytest.fixture(scope="module")
def vocab():
    pytest.importorskip("llama_cpp")
    with _Vocabulary() as loaded:
        yield loaded


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_new_grammars_compile_with_llama_cpp(name, vocab):
    llama_cpp = pytest.importorskip("llama_cpp")
    # from_string only stores the text in llama-cpp-python 0.3.x (it must not raise) ...
    llama_cpp.LlamaGrammar.from_string(get_format(name).gbnf_grammar, verbose=False)
    # ... so llama.cpp's own parser is asked too (it needs a vocabulary).
    assert vocab.compiles(get_format(name).gbnf_grammar)
    assert not vocab.compiles('root ::= "[" undefined-rule "]"')


@pytest.mark.parametrize("name, text, expected", [
    ("verdict_list_3", '{"verdicts": ["yes", "no", "yes"]}', True),
    ("verdict_list_3", '{"verdicts": ["yes", "no"]}', False),
    ("verdict_list_3", '{"verdicts": ["yes", "no", "yes", "no"]}', False),
    ("verdict_list_3", '{"verdicts": ["yes", "maybe", "no"]}', False),
    ("scale_1_10", "10", True),
    ("scale_1_10", "5", True),
    ("scale_1_10", "0", False),
    ("scale_1_10", "11", False),
    ("rubric_checks_4", json.dumps({"checks": ["A \"quoted\" check.", "Caf\u00e9 check."]}),
     True),
    ("rubric_checks_4", json.dumps({"checks": ["A.", "B.", "C.", "D."]}), True),
    ("rubric_checks_4", json.dumps({"checks": ["A.", "B.", "C.", "D.", "E."]}), False),
    ("rubric_checks_1", json.dumps({"checks": ["A."]}), True),
    ("rubric_checks_1", json.dumps({"checks": ["A.", "B."]}), False),
    ("rubric_checks_4", json.dumps({"checks": ["A."]}, indent=2), False),
    ("rubric_revision", json.dumps({"checks": [
        {"id": "c1", "action": "keep"}, {"id": "c2", "action": "edit", "text": "New."},
        {"id": "c3", "action": "delete"}, {"action": "add", "text": "Added."}]}), True),
    ("rubric_revision", json.dumps({"checks": [{"action": "keep", "id": "c1"}]}), False),
])
def test_grammars_accept_what_the_parsers_accept(name, text, expected, vocab):
    """json.dumps output (what the prompts show) is inside each grammar; other texts not."""
    assert vocab.accepts(get_format(name).gbnf_grammar, text) is expected
    if expected:
        get_format(name).parse(text)


class _Vocabulary:
    """A llama.cpp vocabulary (no weights) to compile grammars and walk texts through them."""

    def __enter__(self):
        import llama_cpp
        gguf = vocabulary_gguf()
        self.llama_cpp = llama_cpp
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), params)
        assert self.model, "could not load the vocabulary"
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        return self

    def __exit__(self, *exc):
        self.llama_cpp.llama_model_free(self.model)

    def _sampler(self, grammar: str):
        return self.llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode(), b"root")

    def compiles(self, grammar: str) -> bool:
        sampler = self._sampler(grammar)
        if not sampler:
            return False
        self.llama_cpp.llama_sampler_free(sampler)
        return True

    def _allowed(self, sampler, token: int) -> bool:
        lc = self.llama_cpp
        data = (lc.llama_token_data * 1)()
        data[0].id, data[0].logit, data[0].p = token, 0.0, 0.0
        candidates = lc.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
        lc.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return not math.isinf(data[0].logit)

    def accepts(self, grammar: str, text: str) -> bool:
        """Every token of `text` allowed in turn, then end of generation allowed."""
        lc = self.llama_cpp
        raw = text.encode()
        buffer = (lc.llama_token * (len(raw) + 8))()
        n = lc.llama_tokenize(self.vocab, raw, len(raw), buffer, len(buffer), False, False)
        assert n >= 0
        sampler = self._sampler(grammar)
        assert sampler
        try:
            for token in buffer[:n]:
                if not self._allowed(sampler, token):
                    return False
                lc.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, lc.llama_vocab_eos(self.vocab))
        finally:
            lc.llama_sampler_free(sampler)


# --- the fake model's answers in the structured formats -------------------------------------

def fake(messages, response_format, sample_index=0) -> str:
    request = Request.chat(model="fake/hash", messages=messages, response_format=response_format,
                           sample_index=sample_index)
    return fake_answer(request, messages)


JUDGE_MESSAGES = [{"role": "system", "content": "You grade."},
                  {"role": "user", "content": "Input: x\n\nOutput: y"}]


@pytest.mark.parametrize("response_format", ["scale_1_10", "verdict_list_1", "verdict_list_3",
                                             "verdict_list_20", "rubric_checks",
                                             "rubric_checks_1", "rubric_checks_4",
                                             "rubric_checks_20", "yes_no"])
def test_fake_hash_answers_parse_in_every_structured_format(response_format):
    answers = set()
    for sample in range(40):
        text = fake(JUDGE_MESSAGES, response_format, sample)
        get_format(response_format).parse(text)  # raises if the fake is out of format
        answers.add(text)
    assert len(answers) > 1  # the answer depends on the sample index


def test_fake_hash_verdict_list_has_the_asked_length_and_both_answers():
    seen = set()
    for sample in range(20):
        parsed = get_format("verdict_list_3").parse(fake(JUDGE_MESSAGES, "verdict_list_3", sample))
        assert len(parsed) == 3
        seen.update(parsed)
    assert seen == {"yes", "no"}


def test_fake_hash_scale_covers_pass_and_fail_scores():
    scores = {parse_scale_1_10(fake(JUDGE_MESSAGES, "scale_1_10", s)) for s in range(60)}
    assert scores <= set(range(1, 11))
    assert min(scores) < 5 <= max(scores)


def test_fake_hash_is_deterministic():
    assert fake(JUDGE_MESSAGES, "rubric_checks", 3) == fake(JUDGE_MESSAGES, "rubric_checks", 3)


def test_fake_hash_rubric_checks_respect_the_limit():
    # without a limit the fake writes 3..6 checks; with rubric_checks_2 never more than 2
    unlimited = {len(parse_rubric_checks(fake(JUDGE_MESSAGES, "rubric_checks", s)))
                 for s in range(40)}
    assert unlimited == {3, 4, 5, 6}
    limited = {len(get_format("rubric_checks_2").parse(fake(JUDGE_MESSAGES, "rubric_checks_2", s)))
               for s in range(40)}
    assert limited == {2}


REVISED_RUBRICS = [
    Rubric("one", (RubricCheck("c1", "The report names every finding.", "hand"),)),
    Rubric("label", tuple(RubricCheck(f"l{n}", f"The output meets label requirement {n}.",
                                      "label") for n in range(1, 4))),
    Rubric("revised", (
        RubricCheck("h1", "The report names every finding.", "hand"),
        RubricCheck("r1-add1", "The report uses section headings.", "review by fake/hash",
                    ("r1: add by fake/hash",)),
        RubricCheck("r2-add1.2", "The report cites each resource.", "review by fake/hash"),
    )),
    Rubric("long", tuple(RubricCheck(f"g{n}", f"The summary states fact {n}.", "generated")
                         for n in range(1, 16))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rubric", REVISED_RUBRICS, ids=lambda r: r.name)
def test_fake_revision_parses_and_is_a_valid_revision_in_its_mode(rubric, mode):
    messages = revision_messages(RECON_TASK_DESCRIPTION, rubric, mode)
    kinds = set()
    for sample in range(25):
        text = fake(messages, "rubric_revision", sample)
        parsed = get_format("rubric_revision").parse(text)
        revision = parse_revision(parsed, rubric, mode, 1, "fake/hash")  # raises if invalid
        counts = {kind: sum(isinstance(op, kind) for op in revision.ops)
                  for kind in (Keep, Edit, Delete, Add)}
        if mode == "delete_only":
            assert counts[Edit] == counts[Add] == 0
        if mode == "fixed_count":
            assert counts[Add] == counts[Delete]
        kinds.update(kind for kind, count in counts.items() if count)
    if len(rubric) >= 3:
        # over 25 samples the fake uses every action its mode allows
        allowed = {"free": {Keep, Edit, Delete, Add}, "fixed_count": {Keep, Edit, Delete, Add},
                   "delete_only": {Keep, Delete}}[mode]
        assert kinds == allowed


def test_new_formats_are_registered():
    for name in ("rubric_revision", "rubric_checks", "scale_1_10"):
        assert FORMATS[name].name == name
        assert get_format(name) is FORMATS[name]


@pytest.mark.parametrize("mode", MODES)
def test_fake_revisions_stay_inside_the_revision_grammar(mode, vocab):
    """What the local model could be forced to say includes what the fake says."""
    rubric = REVISED_RUBRICS[2]
    messages = revision_messages(RECON_TASK_DESCRIPTION, rubric, mode)
    grammar = get_format("rubric_revision").gbnf_grammar
    for sample in range(5):
        assert vocab.accepts(grammar, fake(messages, "rubric_revision", sample))


@pytest.mark.parametrize("response_format", ["rubric_checks_4", "rubric_checks_20",
                                             "verdict_list_3", "scale_1_10"])
def test_fake_answers_stay_inside_their_grammar(response_format, vocab):
    grammar = get_format(response_format).gbnf_grammar
    for sample in range(5):
        assert vocab.accepts(grammar, fake(JUDGE_MESSAGES, response_format, sample))
