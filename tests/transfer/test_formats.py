import json

import pytest

from rubriclab.llm.formats import UnparseableAnswer, get_format
from rubriclab.transfer.formats import (
    MAX_CRITERIA,
    TRANSFER_FORMATS,
    match_format_name,
    match_matrix,
    parse_generated_rubric,
    parse_match,
    parse_response,
    parse_restated,
    parse_scores,
    parse_similarity,
    scores_format_name,
)
from tests.llama_grammar import llama_grammar_parses



def test_registry_names_match_their_formats_and_do_not_clash():
    assert all(name == fmt.name for name, fmt in TRANSFER_FORMATS.items())
    assert all(name.startswith("transfer_") for name in TRANSFER_FORMATS)
    base = {"text", "yes_no", "agent_action", "rubric_revision"}
    assert not base & set(TRANSFER_FORMATS)
    assert {"transfer_rubric", "transfer_similarity", "transfer_restated", "transfer_response",
            "transfer_scores_1", f"transfer_scores_{MAX_CRITERIA}", "transfer_match_1",
            f"transfer_match_{MAX_CRITERIA}"} <= set(TRANSFER_FORMATS)
    assert len(TRANSFER_FORMATS) == 4 + 2 * MAX_CRITERIA
    assert all(fmt.reask_instruction for fmt in TRANSFER_FORMATS.values())


def test_registered_formats_are_found_by_get_format():
    assert get_format("transfer_scores_3").parse('{"0": 1, "1": 0, "2": 1}') == [1, 0, 1]
    assert get_format(scores_format_name(2)).name == "transfer_scores_2"
    assert get_format(match_format_name(2)).parse('{"indices": {"G0": ["T1"], "G1": []}}') == [[1], []]
    for bad in (0, MAX_CRITERIA + 1, "3", True):
        with pytest.raises(ValueError, match="number of criteria"):
            scores_format_name(bad)


# --- transfer_rubric --------------------------------------------------------------------------------

def test_rubric_accepts_a_json_array_of_texts():
    text = '[" Mentions the dose. ", "Advises seeing a doctor within 48 hours."]'
    assert parse_generated_rubric(text) == ["Mentions the dose.", "Advises seeing a doctor within 48 hours."]
    assert TRANSFER_FORMATS["transfer_rubric"].parse('\n["Is brief."]\n') == ["Is brief."]
    # one markdown fence around the whole answer is read, as simple-evals strips it
    for fenced in ('```json\n["Is brief."]\n```', '```\n["Is brief."]\n```'):
        assert TRANSFER_FORMATS["transfer_rubric"].parse(fenced) == ["Is brief."]


@pytest.mark.parametrize("text", [
    '```json\n["Mentions the dose."]\n```\nDone.',   # prose after a code fence
    '```json\n["Mentions the dose."]\n```\n```json\n["Is brief."]\n```',  # two fences
    'Here is the rubric: ["Mentions the dose."]',     # prose around the JSON
    '["Mentions the dose."] Hope this helps.',
    "[]",                                             # wrong count: no criteria
    '["Mentions the dose.", "  "]',                   # empty text
    '["Mentions the dose.", 3]',
    '["Mentions the dose.", "mentions  the dose."]',  # the same criterion twice
    '{"criteria": ["Mentions the dose."]}',
    json.dumps([f"Criterion {i}." for i in range(MAX_CRITERIA + 1)]),
])
def test_rubric_refuses_anything_else(text):
    with pytest.raises(UnparseableAnswer):
        parse_generated_rubric(text)


# --- transfer_similarity ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, score", [("0", 0), ("9", 9), (" 7\n", 7)])
def test_similarity_accepts_one_digit(text, score):
    assert parse_similarity(text) == score


@pytest.mark.parametrize("text", ["10", "-1", "7.5", "Score: 7", "7/9", "", "seven", '{"score": 7}', "7 8"])
def test_similarity_refuses_out_of_range_and_extra_text(text):
    with pytest.raises(UnparseableAnswer):
        parse_similarity(text)


# --- transfer_restated ---------------------------------------------------------------------------------

def test_restated_accepts_the_prompts_example():
    text = ('{"7": "Mentions the recommended dose range.", "12": "Does not recommend an unsafe '
            'treatment, such as doubling the dose."}')
    assert parse_restated(text) == {
        "7": "Mentions the recommended dose range.",
        "12": "Does not recommend an unsafe treatment, such as doubling the dose.",
    }


@pytest.mark.parametrize("text", [
    "{}",
    '{"7": ""}',
    '{"7": "   "}',
    '{"7": "Line one\\nline two"}',
    '{"07": "Mentions it."}',
    '{"G7": "Mentions it."}',
    '{"7": "Mentions it.", "7": "Again."}',
    '{"7": ["Mentions it."]}',
    'Sure! {"7": "Mentions it."}',
    '["Mentions it."]',
])
def test_restated_refuses_anything_else(text):
    with pytest.raises(UnparseableAnswer):
        parse_restated(text)


# --- transfer_response ---------------------------------------------------------------------------------

def test_response_is_any_nonblank_text():
    assert parse_response("  Drink water.\n") == "Drink water."
    for blank in ("", "  \n\t"):
        with pytest.raises(UnparseableAnswer, match="empty"):
            parse_response(blank)


# --- transfer_scores_<n> ---------------------------------------------------------------------------------

def test_scores_accept_every_number_once_in_any_order():
    assert parse_scores('{"0": 1, "1": 0}', 2) == [1, 0]
    assert parse_scores('{"2":0,"0":1,"1":1}', 3) == [1, 1, 0]
    assert TRANSFER_FORMATS["transfer_scores_1"].parse('{"0": 0}') == [0]


@pytest.mark.parametrize("text, n", [
    ('{"0": 1}', 2),                     # wrong count: a criterion missing
    ('{"0": 1, "1": 0, "2": 1}', 2),     # wrong count: an extra criterion
    ('{"1": 1, "2": 0}', 2),             # numbered from 1
    ('{"0": 2, "1": 0}', 2),             # not 1 or 0
    ('{"0": true, "1": false}', 2),
    ('{"0": "1", "1": "0"}', 2),
    ('{"0": 1.0, "1": 0}', 2),
    ('{"0": 1, "0": 0, "1": 0}', 2),     # a number twice
    ('The scores are {"0": 1, "1": 0}', 2),
    ('[1, 0]', 2),
])
def test_scores_refuse_anything_else(text, n):
    with pytest.raises(UnparseableAnswer):
        parse_scores(text, n)


def test_sized_scores_formats_check_their_own_size():
    with pytest.raises(UnparseableAnswer, match="0..2"):
        TRANSFER_FORMATS["transfer_scores_3"].parse('{"0": 1, "1": 0}')


# --- transfer_match_<n> ---------------------------------------------------------------------------------

def test_match_accepts_the_tool_call_object():
    assert parse_match('{"indices": {"G0": ["T2", "T0"], "G1": []}}', 2) == [[0, 2], []]
    assert match_matrix([[0, 2], []], 3) == [[1, 0, 1], [0, 0, 0]]


@pytest.mark.parametrize("text", [
    '{"indices": {"G0": ["T1"]}}',                            # wrong count: G1 missing
    '{"indices": {"G0": [], "G1": [], "G2": []}}',            # wrong count: G2 extra
    '{"indices": {"G0": ["G1"], "G1": []}}',                  # a G label in a value
    '{"indices": {"G0": ["T1", "T1"], "G1": []}}',
    '{"indices": {"G0": [1], "G1": []}}',
    '{"indices": {"G0": "T1", "G1": []}}',
    '{"G0": ["T1"], "G1": []}',                               # without the "indices" field
    '{"indices": {"G0": [], "G1": []}, "note": "x"}',
    'indices: {"G0": [], "G1": []}',
])
def test_match_refuses_anything_else(text):
    with pytest.raises(UnparseableAnswer):
        parse_match(text, 2)


def test_match_matrix_refuses_a_true_label_the_prompt_did_not_show():
    with pytest.raises(UnparseableAnswer, match="T0..T2"):
        match_matrix([[3]], 3)


# --- grammars --------------------------------------------------------------------------------------------

def test_every_structured_format_has_a_grammar_naming_its_keys():
    for name, fmt in TRANSFER_FORMATS.items():
        if name == "transfer_response":
            assert fmt.gbnf_grammar is None
            continue
        assert fmt.gbnf_grammar.startswith("root ::= ")
    assert '"\\"2\\""' in TRANSFER_FORMATS["transfer_scores_3"].gbnf_grammar
    assert '"\\"3\\""' not in TRANSFER_FORMATS["transfer_scores_3"].gbnf_grammar
    assert '"\\"G1\\""' in TRANSFER_FORMATS["transfer_match_2"].gbnf_grammar



@pytest.mark.parametrize("name", ["transfer_rubric", "transfer_similarity", "transfer_restated",
                                  "transfer_scores_1", "transfer_scores_37", "transfer_match_1",
                                  "transfer_match_12"])
def test_grammars_parse_as_gbnf(name):
    assert llama_grammar_parses(TRANSFER_FORMATS[name].gbnf_grammar)
    assert not llama_grammar_parses('root ::= "[" undefined-rule "]"')
