import pytest

from rubriclab.carry.checklists import Check, Checklist
from rubriclab.carry.prompts import SYSTEM_PROMPT, paragraph_messages, per_check_messages
from rubriclab.carry.renderings import (
    RENDERINGS, SCALE_THRESHOLD, all_in_one_messages, rendering_call, rendering_outcome,
    scale_messages,
)
from rubriclab.llm.formats import get_format

TASK = "Audit the storage account.\n\nScope: bucket-1, bucket-2."
# the output repeats the question sentence: the shared prefix must still end after the output
OUTPUT = ("Finding 1: bucket-1 is public.\n\nDoes the output meet everything the requirement "
          "below asks for? Yes.")
DESCRIPTION = "a security findings report"
CHECKLIST = Checklist(
    name="hand:storage",
    checks=(Check("c1", "The report names bucket-1.", "hand"),
            Check("c2", "The report gives a severity.", "hand"),
            Check("c3", "The report invents no finding.", "label")),
    task_description=DESCRIPTION,
)
EXPECTED_PREFIX = (f"Input:\n{TASK}\n\nThe output below is {DESCRIPTION}.\n\n"
                   f"Output:\n{OUTPUT}\n\n")


def every_rendering() -> dict[str, list[dict]]:
    messages = {"per_check": per_check_messages(TASK, OUTPUT, CHECKLIST.checks[0], DESCRIPTION)}
    for rendering in ("all_in_one", "paragraph", "scale"):
        messages[rendering] = rendering_call(rendering, TASK, OUTPUT, CHECKLIST)[0]
    return messages


def common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_all_renderings_share_system_message_and_prefix_up_to_the_output():
    messages = every_rendering()
    assert set(messages) == set(RENDERINGS)
    for rendering, pair in messages.items():
        assert [m["role"] for m in pair] == ["system", "user"], rendering
        assert pair[0]["content"] == SYSTEM_PROMPT, rendering
        assert pair[1]["content"].startswith(EXPECTED_PREFIX), rendering
    # per_check and paragraph keep the question after the output; the others do not, so the
    # prefix every rendering has in common is exactly the expected one
    users = [pair[1]["content"] for pair in messages.values()]
    shared = users[0]
    for user in users[1:]:
        shared = common_prefix(shared, user)
    assert shared == EXPECTED_PREFIX


def test_all_in_one_lists_checks_numbered_and_asks_for_n_answers():
    user = all_in_one_messages(TASK, OUTPUT, CHECKLIST)[1]["content"]
    body = user[len(EXPECTED_PREFIX):]
    assert body.startswith("Requirements:\n1. The report names bucket-1.\n2. The report gives a "
                           "severity.\n3. The report invents no finding.\n\nFor each of the 3 "
                           "requirements above")
    assert "exactly 3 answers" in body


def test_all_in_one_and_scale_share_the_listed_checks_as_a_prefix():
    one = all_in_one_messages(TASK, OUTPUT, CHECKLIST)[1]["content"]
    scale = scale_messages(TASK, OUTPUT, CHECKLIST)[1]["content"]
    shared = EXPECTED_PREFIX + "Requirements:\n1. The report names bucket-1."
    assert one.startswith(shared) and scale.startswith(shared)
    assert one.split("\n\n")[:-1] == scale.split("\n\n")[:-1]  # only the question differs


def test_scale_prompt_lists_checks_and_asks_for_1_to_10():
    user = scale_messages(TASK, OUTPUT, CHECKLIST)[1]["content"]
    body = user[len(EXPECTED_PREFIX):]
    assert "1. The report names bucket-1.\n2." in body
    assert "1 (very poor) to 10 (excellent)" in body


@pytest.mark.parametrize("rendering, expected_format", [
    ("all_in_one", "verdict_list_3"), ("paragraph", "yes_no"), ("scale", "scale_1_10"),
])
def test_rendering_response_formats(rendering, expected_format):
    _, response_format = rendering_call(rendering, TASK, OUTPUT, CHECKLIST)
    assert response_format == expected_format
    get_format(response_format)  # a format the model layer knows


def test_all_in_one_format_follows_the_number_of_checks():
    one = Checklist("one", CHECKLIST.checks[:1], DESCRIPTION)
    assert rendering_call("all_in_one", TASK, OUTPUT, one)[1] == "verdict_list_1"


def test_paragraph_rendering_is_the_prompts_module_paragraph():
    messages, _ = rendering_call("paragraph", TASK, OUTPUT, CHECKLIST)
    assert messages == paragraph_messages(TASK, OUTPUT, CHECKLIST)


def test_per_check_is_not_a_one_call_rendering():
    with pytest.raises(ValueError, match="one-call"):
        rendering_call("per_check", TASK, OUTPUT, CHECKLIST)


@pytest.mark.parametrize("rendering, answer, outcome", [
    ("all_in_one", ["yes", "yes", "yes"], "pass"),
    ("all_in_one", ["yes", "no", "yes"], "fail"),      # one No fails the item
    ("all_in_one", ["no", "no", "no"], "fail"),
    ("paragraph", "yes", "pass"),
    ("paragraph", "no", "fail"),
    ("scale", 5, "pass"),                              # threshold 5 passes
    ("scale", 4, "fail"),
    ("scale", 10, "pass"),
    ("scale", 1, "fail"),
])
def test_rendering_outcome(rendering, answer, outcome):
    assert SCALE_THRESHOLD == 5
    assert rendering_outcome(rendering, answer) == outcome


def test_rendering_outcome_from_parsed_answers():
    # the parsed answers of the formats, end to end
    parsed = get_format("verdict_list_3").parse('{"verdicts": ["Yes", "yes", "NO"]}')
    assert rendering_outcome("all_in_one", parsed) == "fail"
    assert rendering_outcome("scale", get_format("scale_1_10").parse("5")) == "pass"
    assert rendering_outcome("paragraph", get_format("yes_no").parse("No.")) == "fail"


def test_rendering_outcome_unknown_rendering():
    with pytest.raises(ValueError, match="unknown rendering"):
        rendering_outcome("per_check", "yes")
