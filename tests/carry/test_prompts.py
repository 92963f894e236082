import os

import pytest

from rubriclab.carry.checklists import Check, Checklist, load_generic_checklist
from rubriclab.carry.prompts import (
    ANSWER_INSTRUCTION,
    paragraph_messages,
    per_check_messages,
    render_paragraph,
)

TASK = "Document: The council approved a budget of $4.2 million on 3 May.\n\nSummarise it."
OUTPUT = "The council approved a $4.2m budget in May."


def user_text(messages):
    return messages[1]["content"]


@pytest.fixture(params=["summedits", "ragtruth"])
def checklist(request):
    return load_generic_checklist(request.param)


def test_messages_are_system_then_user(checklist):
    for messages in (per_check_messages(TASK, OUTPUT, checklist.checks[0],
                                        checklist.task_description),
                     paragraph_messages(TASK, OUTPUT, checklist)):
        assert [m["role"] for m in messages] == ["system", "user"]
        assert all(isinstance(m["content"], str) and m["content"] for m in messages)


def prefix_before(user: str, requirement: str) -> str:
    return user[:user.index(requirement)]


def test_per_check_prompts_share_prefix_and_end_with_check(checklist):
    prompts = [per_check_messages(TASK, OUTPUT, check, checklist.task_description)
               for check in checklist.checks]
    assert len({messages[0]["content"] for messages in prompts}) == 1
    prefixes = {prefix_before(user_text(messages), check.text)
                for messages, check in zip(prompts, checklist.checks)}
    assert len(prefixes) == 1
    shared = prefixes.pop()
    assert TASK in shared and OUTPUT in shared and checklist.task_description in shared
    assert ANSWER_INSTRUCTION in shared and "Does the output" in shared
    for check, messages in zip(checklist.checks, prompts):
        # After the shared prefix comes the check and nothing else.
        assert user_text(messages) == shared + check.text


def test_paragraph_shares_prefix_with_per_check(checklist):
    per_check = per_check_messages(TASK, OUTPUT, checklist.checks[0], checklist.task_description)
    paragraph = paragraph_messages(TASK, OUTPUT, checklist)
    assert paragraph[0] == per_check[0]
    paragraph_text = render_paragraph(checklist)
    assert prefix_before(user_text(paragraph), paragraph_text) == prefix_before(
        user_text(per_check), checklist.checks[0].text)
    assert user_text(paragraph).endswith(paragraph_text)


def test_task_and_output_appear_verbatim():
    tricky_task = "  Line one\n\n  indented {braces} and 100% $x$\n"
    tricky_output = "Answer: Yes\nRequirement: none"
    check = Check(id="a", text="The response is faithful.", origin="test")
    checklist = Checklist(name="t", checks=(check,), task_description="a response")
    for messages in (per_check_messages(tricky_task, tricky_output, check, "a response"),
                     paragraph_messages(tricky_task, tricky_output, checklist)):
        assert tricky_task in user_text(messages)
        assert tricky_output in user_text(messages)
        assert "a response" in user_text(messages)


def test_task_description_is_in_prompt():
    check = Check(id="a", text="The summary is faithful.", origin="test")
    messages = per_check_messages(TASK, OUTPUT, check, "a summary of the document above")
    assert "a summary of the document above" in user_text(messages)


def test_prompts_differ_between_items():
    check = Check(id="a", text="The summary is faithful.", origin="test")
    first = per_check_messages(TASK, OUTPUT, check, "a summary")
    second = per_check_messages(TASK, OUTPUT + " Extra.", check, "a summary")
    assert first != second


def test_render_paragraph_joins_shared_subject_checks():
    checks = tuple(Check(id=f"c{i}", text=text, origin="test") for i, text in enumerate([
        "The summary is faithful to the document.",
        "The summary states numbers exactly.",
        "The summary is concise.",
    ]))
    paragraph = render_paragraph(Checklist(name="p", checks=checks, task_description="x"))
    assert paragraph == ("A good summary is faithful to the document. It also states numbers "
                         "exactly. It is also concise.")
    assert "\n" not in paragraph


def test_render_paragraph_falls_back_for_mixed_subjects():
    checks = (Check(id="a", text="The summary is faithful", origin="t"),
              Check(id="b", text="Numbers are exact.", origin="t"))
    paragraph = render_paragraph(Checklist(name="p", checks=checks, task_description="x"))
    assert paragraph.endswith("The summary is faithful. Numbers are exact.")
    assert "\n" not in paragraph


def test_render_paragraph_of_generic_prefix_mentions_each_check(checklist):
    for length in (3, 10):
        paragraph = render_paragraph(checklist.prefix(length))
        assert paragraph.count(". It ") == length - 1
        assert paragraph.startswith("A good ")
        assert render_paragraph(checklist.prefix(length)) == paragraph  # deterministic


def test_paragraphs_of_different_lengths_share_prefix(checklist):
    short = user_text(paragraph_messages(TASK, OUTPUT, checklist.prefix(3)))
    long = user_text(paragraph_messages(TASK, OUTPUT, checklist))
    assert short != long
    shared = os.path.commonprefix([short, long])
    assert TASK in shared and OUTPUT in shared


def test_template_fingerprint_changes_with_any_prompt_text(monkeypatch):
    from rubriclab.carry import prompts

    original = prompts.template_fingerprint()
    assert prompts.template_fingerprint() == original
    for name in ("SYSTEM_PROMPT", "QUESTION", "ANSWER_INSTRUCTION"):
        with monkeypatch.context() as patch:
            patch.setattr(prompts, name, getattr(prompts, name) + " Edited.")
            assert prompts.template_fingerprint() != original, name
