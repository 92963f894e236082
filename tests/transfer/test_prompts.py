import json
import re
from pathlib import Path

import pytest

from rubriclab.transfer import prompts as P
from rubriclab.transfer.appendix_e import APPENDIX_E
from rubriclab.transfer.formats import match_format_name, scores_format_name

SEED = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds" / "002_8ea0400aefc4df5a.txt"

CONVERSATION = [
    {"role": "user", "content": "I am 6 weeks postpartum and feel low.\nWhat can I do?"},
    {"role": "assistant", "content": "How long have you felt this way?"},
    {"role": "user", "content": "About two weeks."},
]
RESPONSE = "Talk therapy and gentle exercise can help; see your doctor if it gets worse."
CRITERIA = ["Recommends talk therapy.", "Mentions when to seek\nurgent help.", "Gives a timeline."]


def squash(text: str) -> str:
    """The seed lost the spaces after punctuation; compare texts with all whitespace removed."""
    return re.sub(r"\s+", "", text)


def contents(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def user(messages) -> str:
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def system(messages) -> str:
    return messages[0]["content"]


# --- verbatim Appendix E text (phrases copied from the seed as the seed prints them) -------------

VERBATIM = {
    "response": (lambda: P.response_messages(CONVERSATION), [
        "You are a helpful AI assistant.Answer the user’s question.",
    ]),
    "generation": (lambda: P.generation_messages(CONVERSATION), [
        "Generate a rubric to evaluate the quality of a medical AI assistant’s response to a conversation.",
        '-Atomic:measure exactly one thing,not"response is accurate AND complete"',
        "Together,the criteria must be exhaustive—they should capture everything a physician would "
        "care about for this particular response.",
        "#Conversation",
    ]),
    "restate": (lambda: P.restate_messages([(7, "Fails to mention the dose.")]), [
        "You rewrite rubric criteria so that satisfying a criterion is always good.",
        '-If the criterion is already phrased as a failure("Fails to X","Does not X","Omits X"),'
        'return the positive form:"X".Never return a double negative.',
        "-Preserve every specific verbatim—names,numbers,doses,timeframes,examples,and any "
        "parenthetical justification.",
        "Return a JSON object mapping each criterion’s number(as shown,and not renumbered)to its",
        "Rewrite each of these criteria so that satisfying it is good.",
    ]),
    "pass_edit": (lambda: P.intervention_messages("pass", CONVERSATION, RESPONSE, ["A."], ["B."]), [
        "The rewritten response is a positive control for a rubric evaluation.",
        "Rewrite the response so it satisfies every criterion below.",
        "#Criteria it satisfies—keep them satisfied",
        "#Criteria it does NOT satisfy—change the response so it does",
        "keep every other aspect of the response exactly as it is.",
        "Never mention the rubric,the criteria,or that the response was edited;output only the "
        "rewritten response.",
    ]),
    "fail_edit": (lambda: P.intervention_messages("fail", CONVERSATION, RESPONSE, ["A."], ["B."]), [
        "The rewritten response is a negative control for a rubric evaluation.",
        "rewrite the response so that it satisfies no criterion.",
        "Rewrite the response so it satisfies no criterion below.",
        "#Criteria it satisfies—change the response so it does not",
        "#Criteria it does NOT satisfy—keep them unsatisfied",
        "alter,add,or remove only what the satisfied criteria require,and keep the unsatisfied "
        "criteria unsatisfied.",
    ]),
    "degrade": (lambda: P.degraded_response_messages(CONVERSATION, ["Unrelated criterion."]), [
        "Answer the user’s question concisely.Your response must satisfy every criterion in the "
        "rubric you are given.",
        "#Rubric",
    ]),
    "similarity": (lambda: P.similarity_messages("Ref.", "Gen."), [
        "You are an expert evaluator of rubric criterion similarity for health AI systems.",
        "output a single integer score in[0,9]representing semantic similarity(9=same meaning,"
        "0=unrelated).Output ONLY the number.No JSON.No explanation.No extra text.",
        "Similarity score(0..9):",
    ]),
    "ask_llm_match_rubric": (lambda: P.matching_messages("ask_llm_match_rubric", CONVERSATION, ["T."], ["G."]), [
        "Note that opposite criteria measure the same thing in this case.",
        "**indices**:A JSON object mapping each generated criterion’s label to the list of true "
        "criteria that measure the same thing.",
        "Keys are always G labels and values are always T labels.Never put a G label in a value.",
    ]),
    "ask_llm_simulate_intervention": (
        lambda: P.matching_messages("simulate_intervention", CONVERSATION, ["T."], ["G."]), [
            "imagine perturbing a response that intially does not satisfy it into a response that "
            "does satisfy it.",
            "Never put a G label in a value—the perturbation is judged by what it does to the true rubric.",
        ]),
    "ask_llm_implies": (lambda: P.matching_messages("implies", CONVERSATION, ["T."], ["G."]), [
        "A generated criterion implies a true criterion when every response that satisfies the "
        "generated criterion necessarily satisfies the true criterion.",
        "mapped to an empty list if it implies no true criterion.",
    ]),
    "judge": (lambda: P.judge_messages(CONVERSATION, CRITERIA, RESPONSE), [
        "For each criterion in the rubric,score 1 if the response satisfies it and 0 if it does not.",
        'Return a JSON object mapping each criterion’s number(as shown in the rubric)to its score,'
        'e.g.{"0":1,"1":0}.',
        "Every criterion number must appear exactly once—score all of them.",
        "#Conversation", "#Rubric", "#Response",
    ]),
}


@pytest.mark.parametrize("name", list(VERBATIM))
def test_every_prompt_contains_its_appendix_e_text(name):
    build, phrases = VERBATIM[name]
    text = squash(contents(build()))
    for phrase in phrases:
        assert squash(phrase) in text, f"{name}: missing {phrase!r}"


def test_the_prompts_differ_from_each_other():
    # A phrase test passes trivially if two builders return the same text; they must not.
    texts = {name: contents(build()) for name, (build, _) in VERBATIM.items()}
    assert len(set(texts.values())) == len(texts)


def _seed_appendix_e() -> list[tuple[str, str | None]]:
    if not SEED.is_file():
        pytest.skip(f"seed not found at {SEED}")
    text = SEED.read_text(encoding="utf-8")
    body = text[text.index("## Appendix E Prompts") + len("## Appendix E Prompts"):]
    prompts, part, current = [], None, []
    for line in body.splitlines() + ["#System"]:
        if line.strip() in ("#System", "#Message"):
            if part == "system":
                prompts.append(["\n".join(current), None])
            elif part == "message":
                prompts[-1][1] = "\n".join(current)
            part, current = line.strip()[1:].lower(), []
        else:
            current.append(line)
    return [tuple(p) for p in prompts]


def test_each_system_and_message_part_is_the_seeds_text_with_whitespace_restored():
    seed = _seed_appendix_e()
    assert len(seed) == len(APPENDIX_E) == 11
    for (name, system_text, message_text), (seed_system, seed_message) in zip(APPENDIX_E, seed):
        assert squash(system_text) == squash(seed_system), name
        assert (message_text is None) == (seed_message is None), name
        if message_text is not None:
            assert squash(message_text) == squash(seed_message), name


def test_builders_use_the_appendix_e_templates_unchanged():
    # The added format instructions come after the verbatim message, never inside it.
    gen = user(P.generation_messages(CONVERSATION))
    assert gen.startswith("# Conversation\n\n") and gen.endswith(P.GENERATION_OUTPUT_INSTRUCTION)
    for framing in P.FRAMINGS:
        text = user(P.matching_messages(framing, CONVERSATION, ["T."], ["G."]))
        assert text.startswith("Call the tool with one field:") and text.endswith(P.TOOL_CALL_INSTRUCTION)
    for name, build, sys_text in [("judge", lambda: P.judge_messages(CONVERSATION, CRITERIA, RESPONSE),
                                   P.JUDGE_SYSTEM),
                                  ("similarity", lambda: P.similarity_messages("R", "G"), P.SIMILARITY_SYSTEM)]:
        assert system(build()) == sys_text, name


# --- conversation rendering ------------------------------------------------------------------------

def test_conversation_renders_as_the_healthbench_task_text():
    from rubriclab.data.healthbench import render_task

    assert P.render_conversation(CONVERSATION) == render_task(CONVERSATION)
    assert P.render_conversation(json.dumps(CONVERSATION)) == render_task(CONVERSATION)
    assert P.render_conversation(CONVERSATION) in user(P.judge_messages(CONVERSATION, CRITERIA, RESPONSE))


@pytest.mark.parametrize("bad, fragment", [
    ([], "non-empty list"),
    ([{"role": "doctor", "content": "x"}], "conversation[0]: 'role'"),
    ([{"role": "user", "content": "x"}, {"role": "user"}], "conversation[1]: 'content'"),
    ("user: hello", "JSON list of turns"),
])
def test_bad_conversations_raise_naming_where(bad, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        P.render_conversation(bad)


def test_response_prompt_is_the_system_part_then_the_turns():
    messages = P.response_messages(CONVERSATION)
    assert messages[0] == {"role": "system", "content": P.RESPONSE_SYSTEM}
    assert messages[1:] == CONVERSATION
    with pytest.raises(ValueError, match="last turn"):
        P.response_messages(CONVERSATION[:2])


def test_placeholder_text_in_inputs_is_not_expanded():
    tricky = "See {response} and {conversation} and {\"0\": 1}."
    text = user(P.judge_messages([{"role": "user", "content": tricky}], ["{rubric}"], tricky))
    assert text.count(tricky) == 2 and "0. {rubric}" in text


# --- judge ---------------------------------------------------------------------------------------------

def test_judge_numbers_every_criterion_on_one_line_from_zero():
    text = user(P.judge_messages(CONVERSATION, CRITERIA, RESPONSE))
    rubric = text.split("# Rubric\n\n")[1].split("\n\n# Response")[0]
    assert rubric.splitlines() == ["0. Recommends talk therapy.", "1. Mentions when to seek urgent help.",
                                   "2. Gives a timeline."]
    assert text.endswith("# Response\n\n" + RESPONSE)


def test_judge_vote_requests_are_k_samples_of_one_prompt():
    requests = P.judge_vote_requests("fake/hash", CONVERSATION, CRITERIA, RESPONSE, temperature=1.0)
    assert [r.sample_index for r in requests] == [0, 1, 2]
    assert len({r.messages for r in requests}) == 1
    assert {r.response_format for r in requests} == {scores_format_name(3)}
    assert all(r.temperature == 1.0 and r.max_tokens == 16 + 8 * 3 for r in requests)
    assert requests[0].message_dicts() == P.judge_messages(CONVERSATION, CRITERIA, RESPONSE)
    five = P.judge_vote_requests("fake/hash", CONVERSATION, CRITERIA, RESPONSE, temperature=0.7, votes=5)
    assert [r.sample_index for r in five] == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError):
        P.judge_vote_requests("fake/hash", CONVERSATION, CRITERIA, RESPONSE)  # temperature required
    with pytest.raises(ValueError, match="votes"):
        P.judge_vote_requests("fake/hash", CONVERSATION, CRITERIA, RESPONSE, temperature=1.0, votes=0)


# --- interventions --------------------------------------------------------------------------------------

SECRET = "SECRET-EXPLANATION-42"
JUDGED = [
    {"id": "healthbench:x#0", "text": "Recommends talk therapy.", "satisfied": True,
     "votes": [1, 1, 0], "vote_count": "2/3", "explanation": SECRET, "score": 0.6667},
    {"id": "healthbench:x#1", "text": "Mentions when to seek urgent help.", "satisfied": False,
     "votes": [0, 0, 1], "vote_count": "1/3", "explanation": SECRET + " (no urgent help)"},
    {"id": "healthbench:x#2", "text": "Gives a timeline.", "satisfied": 1,
     "votes": [1, 1, 1], "vote_count": "3/3", "explanation": "unanimous VOTE-NOTE"},
]


def section(text: str, header: str) -> list[str]:
    body = text.split(f"# {header}\n\n")[1]
    return body.split("\n\n")[0].splitlines()


@pytest.mark.parametrize("direction", ["pass", "fail"])
def test_whole_rubric_prompt_shows_only_the_satisfied_split(direction):
    messages = P.rubric_intervention_messages(direction, CONVERSATION, RESPONSE, JUDGED)
    text = contents(messages)
    for leak in (SECRET, "VOTE-NOTE", "2/3", "1/3", "3/3", "0.6667", "votes", "healthbench:x#",
                 "[1, 1, 0]", "explanation"):
        assert leak not in text, leak
    # Exactly the prompt built from the bare split: nothing else of the judged data is used.
    assert messages == P.intervention_messages(
        direction, CONVERSATION, RESPONSE,
        ["Recommends talk therapy.", "Gives a timeline."], ["Mentions when to seek urgent help."])
    body = user(messages)
    if direction == "pass":
        sat, unsat = "Criteria it satisfies—keep them satisfied", "Criteria it does NOT satisfy—change the response so it does"
    else:
        sat, unsat = "Criteria it satisfies—change the response so it does not", "Criteria it does NOT satisfy—keep them unsatisfied"
    assert section(body, sat) == ["- Recommends talk therapy.", "- Gives a timeline."]
    assert section(body, unsat) == ["- Mentions when to seek urgent help."]
    assert body.endswith(f"# Conversation\n\n{P.render_conversation(CONVERSATION)}\n\n# Response\n\n{RESPONSE}")


@pytest.mark.parametrize("direction, index", [("pass", 1), ("fail", 0), ("fail", 2)])
def test_single_criterion_prompt_targets_exactly_one_criterion(direction, index):
    target = JUDGED[index]
    messages = P.criterion_intervention_messages(direction, CONVERSATION, RESPONSE, target)
    body = user(messages)
    others = [j["text"] for j in JUDGED if j is not target]
    for other in others:
        assert other not in contents(messages)
    assert SECRET not in contents(messages) and "VOTE-NOTE" not in contents(messages)
    lists = [line for line in body.splitlines() if line.startswith("- ")]
    assert lists == [f"- {target['text']}"]
    if direction == "pass":
        assert section(body, "Criteria it satisfies—keep them satisfied") == [P.EMPTY_SECTION]
        assert section(body, "Criteria it does NOT satisfy—change the response so it does") == [f"- {target['text']}"]
    else:
        assert section(body, "Criteria it satisfies—change the response so it does not") == [f"- {target['text']}"]
        assert section(body, "Criteria it does NOT satisfy—keep them unsatisfied") == [P.EMPTY_SECTION]


def test_single_criterion_edit_refuses_a_criterion_already_at_the_end_state():
    with pytest.raises(ValueError, match=r"R_\+c is defined for c\(R\)=0"):
        P.criterion_intervention_messages("pass", CONVERSATION, RESPONSE, JUDGED[0])
    with pytest.raises(ValueError, match=r"R_-c is defined for c\(R\)=1"):
        P.criterion_intervention_messages("fail", CONVERSATION, RESPONSE, JUDGED[1])


@pytest.mark.parametrize("verdict", [None, 2, "yes", 0.5])
def test_a_verdict_that_is_not_true_or_false_is_refused(verdict):
    judged = [dict(JUDGED[0], satisfied=verdict)]
    with pytest.raises(ValueError, match=r"judged criteria\[0\]|rubric edit\[0\]"):
        P.rubric_intervention_messages("pass", CONVERSATION, RESPONSE, judged)


def test_intervention_input_errors_name_what():
    with pytest.raises(ValueError, match="direction"):
        P.rubric_intervention_messages("improve", CONVERSATION, RESPONSE, JUDGED)
    with pytest.raises(ValueError, match="needs 'text' and 'satisfied'"):
        P.rubric_intervention_messages("pass", CONVERSATION, RESPONSE, [{"criterion": "x", "satisfied": True}])
    with pytest.raises(ValueError, match="the response"):
        P.rubric_intervention_messages("pass", CONVERSATION, "  ", JUDGED)
    with pytest.raises(ValueError, match="no criteria"):
        P.intervention_messages("pass", CONVERSATION, RESPONSE, [], [])


# --- matching, similarity, degradation, restatement ---------------------------------------------------------

@pytest.mark.parametrize("framing", ["match_rubric", "simulate_intervention", "implies",
                                     "ask_llm_match_rubric", "ask_llm_simulate_intervention", "ask_llm_implies"])
def test_matching_labels_true_and_generated_criteria(framing):
    text = user(P.matching_messages(framing, CONVERSATION, CRITERIA, ["Advises therapy.", "Is brief."]))
    assert "# True Rubric\n\nT0: Recommends talk therapy.\nT1: Mentions when to seek urgent help.\nT2: Gives a timeline." in text
    assert "# Generated Rubric\n\nG0: Advises therapy.\nG1: Is brief." in text


def test_the_three_framings_have_different_system_parts():
    systems = {system(P.matching_messages(f, CONVERSATION, ["T."], ["G."])) for f in P.FRAMINGS}
    assert len(systems) == 3
    with pytest.raises(ValueError, match="unknown matching framing"):
        P.matching_messages("ask_llm_semantic", CONVERSATION, ["T."], ["G."])
    assert match_format_name(2) == "transfer_match_2"


def test_similarity_shows_one_pair_and_no_conversation():
    text = user(P.similarity_messages("Mentions the dose.", "Gives\nthe dose."))
    assert text == "REFERENCE: Mentions the dose.\n\nGENERATED: Gives the dose.\n\nSimilarity score (0..9):"


def test_degraded_response_prompt_puts_the_other_rubric_first():
    text = user(P.degraded_response_messages(CONVERSATION, ["Unrelated A.", "Unrelated B."]))
    assert text.startswith("# Rubric\n\n- Unrelated A.\n- Unrelated B.\n\n# Conversation\n\n")


def test_restate_shows_the_rubric_numbers_not_renumbered():
    text = user(P.restate_messages([(7, "Fails to mention the dose."), (12, "Recommends doubling it.")]))
    assert text.endswith("\n\n7. Fails to mention the dose.\n12. Recommends doubling it.")
    with pytest.raises(ValueError, match="repeat"):
        P.restate_messages([(7, "a"), (7, "b")])


# --- fingerprint ---------------------------------------------------------------------------------------------

def test_template_fingerprint_is_stable_and_tracks_the_text(monkeypatch):
    first = P.template_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", first) and P.template_fingerprint() == first
    monkeypatch.setattr(P, "PASS_EDIT_MESSAGE", P.PASS_EDIT_MESSAGE.replace("minimal", "small"))
    assert P.template_fingerprint() != first
