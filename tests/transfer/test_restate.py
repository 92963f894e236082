import json

import pytest

from rubriclab.transfer.formats import RESTATED_FORMAT, parse_restated
from rubriclab.transfer import prompts as P
from rubriclab.transfer.restate import (
    apply_restatement,
    check_restatement,
    criterion_id,
    expert_criteria,
    negative_criteria,
    restate_request,
    screen,
)

ITEM = "healthbench:abc"
# As in rubric_json of rubriclab.data.healthbench: criterion, points, tags, negative.
RUBRIC = [
    {"criterion": "Recommends talk therapy.", "points": 7, "tags": ["axis:completeness"], "negative": False},
    {"criterion": "Fails to mention the recommended dose range.", "points": -6, "tags": [], "negative": True},
    {"criterion": "Includes when to seek urgent help.", "points": 9, "tags": [], "negative": False},
    {"criterion": "Recommends an unsafe treatment, such as doubling the dose to 800 mg.", "points": -10,
     "tags": [], "negative": True},
]
GOOD = {"1": "Mentions the recommended dose range.",
        "3": "Does not recommend an unsafe treatment, such as doubling the dose to 800 mg."}


def test_negative_criteria_are_those_with_negative_points_numbered_by_position():
    assert negative_criteria(RUBRIC, ITEM) == [(1, RUBRIC[1]["criterion"]), (3, RUBRIC[3]["criterion"])]
    assert negative_criteria(json.dumps(RUBRIC), ITEM) == negative_criteria(RUBRIC, ITEM)


def test_one_request_restates_all_negative_criteria_of_a_rubric():
    request = restate_request("fake/hash", RUBRIC, where=ITEM, temperature=0.0)
    assert request.response_format == RESTATED_FORMAT
    assert request.message_dicts() == P.restate_messages(negative_criteria(RUBRIC, ITEM))
    text = request.messages[1].content
    assert "1. Fails to mention the recommended dose range." in text
    assert "3. Recommends an unsafe treatment" in text
    assert "Recommends talk therapy." not in text  # positive criteria are not sent
    positive_only = [RUBRIC[0], RUBRIC[2]]
    assert restate_request("fake/hash", positive_only, where=ITEM) is None


def test_a_good_answer_gives_the_restated_rubric_without_flags():
    result = apply_restatement(ITEM, RUBRIC, parse_restated(json.dumps(GOOD)))
    assert result.ok and result.flags == () and check_restatement(ITEM, RUBRIC, GOOD) == []
    assert [c.id for c in result.criteria] == [criterion_id(ITEM, i) for i in range(4)] == [
        "healthbench:abc#0", "healthbench:abc#1", "healthbench:abc#2", "healthbench:abc#3"]
    assert [c.original for c in result.criteria] == [e["criterion"] for e in RUBRIC]
    assert result.texts() == ["Recommends talk therapy.", GOOD["1"], "Includes when to seek urgent help.", GOOD["3"]]
    assert [c.sign for c in result.criteria] == [1, -1, 1, -1]
    assert [c.points for c in result.criteria] == [7, -6, 9, -10]
    assert [c.negative for c in result.criteria] == [False, True, False, True]


def test_a_double_negative_is_flagged():
    answer = dict(GOOD, **{"1": "Does not fail to mention the recommended dose range."})
    flags = check_restatement(ITEM, RUBRIC, answer)
    assert {f.id for f in flags} == {"healthbench:abc#1"}
    assert any(f.reason.startswith("double negative") for f in flags)
    # Flagged, never silently passed: the result says so.
    result = apply_restatement(ITEM, RUBRIC, answer)
    assert not result.ok and result.flagged_ids == ["healthbench:abc#1"]


def test_a_failure_phrasing_left_in_place_is_flagged():
    answer = dict(GOOD, **{"1": "Does not mention the recommended dose range."})
    reasons = [f.reason for f in check_restatement(ITEM, RUBRIC, answer)]
    assert any(r.startswith("still phrased as a failure") for r in reasons)


def test_a_count_mismatch_is_flagged_and_the_missing_text_stays_none():
    missing = {"3": GOOD["3"]}
    result = apply_restatement(ITEM, RUBRIC, missing)
    assert result.flagged_ids == ["healthbench:abc#1"]
    assert "count mismatch: 2 negative criteria in, 1 restatements out" in result.flags[0].reason
    assert result.criteria[1].restated is None  # never the original (flawed) text
    with pytest.raises(ValueError, match="no restated text"):
        result.texts()
    extra = dict(GOOD, **{"0": "Does not recommend talk therapy.", "9": "Mentions it."})
    flags = check_restatement(ITEM, RUBRIC, extra)
    assert [f.id for f in flags] == ["healthbench:abc#0", "healthbench:abc#9"]
    assert "a positive criterion" in flags[0].reason and "no criterion" in flags[1].reason
    assert all("count mismatch: 2 negative criteria in, 4 restatements out" in f.reason for f in flags)


def test_an_unparseable_answer_flags_every_negative_criterion():
    result = apply_restatement(ITEM, RUBRIC, None)
    assert result.flagged_ids == ["healthbench:abc#1", "healthbench:abc#3"]
    assert all("no parseable answer" in f.reason for f in result.flags)
    no_negatives = [RUBRIC[0]]
    assert apply_restatement(ITEM, no_negatives, None).ok


@pytest.mark.parametrize("original, rewrite, reason", [
    ("Fails to mention the dose.", "Does not fail to mention the dose.", "double negative"),
    ("Fails to ask about age.", "Fails to not ask about age.", "double negative"),
    ("Recommends stopping the drug.", "Never omits stopping the drug.", "double negative"),
    ("Does not include danger signs.", "Doesn’t include danger signs.", "still phrased as a failure"),
    ("Omits the dose.", "Omits the dose.", "unchanged"),
    ("Recommends aspirin.", "Recommends only paracetamol.", "not negated"),
    ("Recommends 400 mg twice daily.", "Does not recommend 500 mg twice daily.", "numbers changed"),
])
def test_screen_flags(original, rewrite, reason):
    assert any(r.startswith(reason) for r in screen(original, rewrite))


@pytest.mark.parametrize("original, rewrite", [
    ("Fails to mention the dose.", "Mentions the dose."),
    ("Does not include danger signs.", "Includes danger signs."),
    ("Recommends an unsafe treatment, such as doubling the dose.",
     "Does not recommend an unsafe treatment, such as doubling the dose."),
    ("Recommends antibiotics without a prescription.",
     "Does not recommend antibiotics without a prescription."),
])
def test_screen_passes_the_rules_own_forms(original, rewrite):
    assert screen(original, rewrite) == []


@pytest.mark.parametrize("rubric, fragment", [
    ([], "non-empty list"),
    ("not json", "rubric_json is not JSON"),
    ([{"criterion": "", "points": 3}], "rubric[0]: 'criterion'"),
    ([{"criterion": "x", "points": 3}, {"criterion": "y", "points": "-2"}], "rubric[1]: 'points'"),
    ([{"criterion": "x", "points": True}], "rubric[0]: 'points'"),
])
def test_bad_rubrics_raise_naming_the_item_and_entry(rubric, fragment):
    with pytest.raises(ValueError, match=ITEM) as info:
        expert_criteria(rubric, ITEM)
    assert fragment in str(info.value)


def test_restates_a_real_healthbench_rubric_shape(shared_data):
    from rubriclab.data.healthbench import load_healthbench

    items = load_healthbench([shared_data / "healthbench" / "oss_eval_items_nonhard.jsonl"])
    row = items[items["n_negative"] > 0].iloc[0]
    request = restate_request("fake/hash", row["rubric_json"], where=row["item_id"])
    assert request is not None
    negatives = negative_criteria(row["rubric_json"], row["item_id"])
    assert len(negatives) == row["n_negative"]
    answer = {str(i): "Does not do this." for i, _ in negatives}
    result = apply_restatement(row["item_id"], row["rubric_json"], answer)
    assert len(result.criteria) == row["n_criteria"]
    assert sum(c.negative for c in result.criteria) == row["n_negative"]
