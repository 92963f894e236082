import json

import pytest

from rubriclab.carry.checklists import Check, Checklist
from rubriclab.carry.formats import FORMATS
from rubriclab.carry.revision import (
    Add, ChainResult, Delete, Edit, Keep, Revision, RevisionRejected, Rubric, RubricCheck,
    apply_revision, parse_revision, revision_from_answer, revision_messages, run_chain,
)
from rubriclab.llm.formats import UnparseableAnswer, get_format

REVISER = "fake/reviser"


def make_rubric() -> Rubric:
    return Rubric("demo", (
        RubricCheck("c1", "The report names every finding.", "hand"),
        RubricCheck("c2", "The report cites the resource of each finding.", "label"),
        RubricCheck("c3", "The report invents no finding.", "generated", ("r0: seed",)),
    ))


def answer(*entries: dict) -> str:
    return json.dumps({"checks": list(entries)})


def parse(text: str):
    return get_format("rubric_revision").parse(text)


def revise(rubric: Rubric, mode: str, *entries: dict, round: int = 1) -> Revision:
    return parse_revision(parse(answer(*entries)), rubric, mode, round, REVISER)


KEEP_OPS = (Keep("c1"), Keep("c2"), Keep("c3"))
KEEP_ALL = ({"id": "c1", "action": "keep"}, {"id": "c2", "action": "keep"},
            {"id": "c3", "action": "keep"})


# --- the response format --------------------------------------------------------------------

def test_format_is_registered_with_a_reask_instruction():
    fmt = get_format("rubric_revision")
    assert fmt is FORMATS["rubric_revision"]
    assert '"checks"' in fmt.reask_instruction and "exactly once" in fmt.reask_instruction


def test_valid_answer_parses_in_order_with_texts_stripped():
    parsed = parse("  " + answer(
        {"id": "c1", "action": "keep"},
        {"id": "c2", "action": "edit", "text": "  New text.  "},
        {"id": "c3", "action": "delete"},
        {"action": "add", "text": "Added."},
    ) + "\n")
    assert parsed == {"checks": [
        {"action": "keep", "id": "c1"},
        {"action": "edit", "id": "c2", "text": "New text."},
        {"action": "delete", "id": "c3"},
        {"action": "add", "text": "Added."},
    ]}


@pytest.mark.parametrize("text", [
    "",
    "keep them all",
    "```json\n" + answer({"id": "c1", "action": "keep"}) + "\n``` Done.",  # prose after a fence
    answer({"id": "c1", "action": "keep"}) + " Done.",
    '{"checks": [{"id": "c1", "action": "keep"}]',                   # truncated
    '{"checks": [], "checks": []}',                                 # duplicate key
    '{"checks": [{"id": "c1", "id": "c2", "action": "keep"}]}',     # duplicate key
    json.dumps([{"id": "c1", "action": "keep"}]),                   # not an object
    json.dumps({"checks": []}),
    json.dumps({"checks": {"id": "c1", "action": "keep"}}),
    json.dumps({"checks": [{"id": "c1", "action": "keep"}], "note": "x"}),
    answer({"id": "c1", "action": "rewrite", "text": "x"}),          # unknown action
    answer({"id": "c1"}),                                            # no action
    answer({"id": "c1", "action": "edit"}),                          # edit without text
    answer({"id": "c1", "action": "edit", "text": "   "}),           # empty text
    answer({"action": "add", "text": ""}),                           # empty text
    answer({"id": "c9", "action": "add", "text": "x"}),              # add with an id
    answer({"id": "c1", "action": "keep", "text": "x"}),             # keep with text
    answer({"id": "", "action": "keep"}),                            # empty id
    answer({"id": 3, "action": "keep"}),                             # id not a string
    answer({"id": "c1", "action": "keep"}, {"id": "c1", "action": "delete"}),  # twice
    answer("c1"),                                                    # entry not an object
])
def test_malformed_answers_are_unparseable(text):
    with pytest.raises(UnparseableAnswer):
        parse(text)


# --- parse_revision: against the rubric and the mode ----------------------------------------

def test_valid_revision_becomes_operations_in_answer_order():
    revision = revise(make_rubric(), "free",
                      {"id": "c3", "action": "delete"},
                      {"action": "add", "text": "The report is short."},
                      {"id": "c1", "action": "edit", "text": "The report names all findings."},
                      {"id": "c2", "action": "keep"})
    assert revision == Revision(
        ops=(Delete("c3"), Add("The report is short."),
             Edit("c1", "The report names all findings."), Keep("c2")),
        round=1, reviser=REVISER, mode="free")


def test_edit_to_the_same_text_is_a_keep():
    revision = revise(make_rubric(), "delete_only",
                      {"id": "c1", "action": "edit", "text": "The report  names every finding."},
                      {"id": "c2", "action": "keep"}, {"id": "c3", "action": "keep"})
    assert revision.ops[0] == Keep("c1")


@pytest.mark.parametrize("entries, words", [
    (KEEP_ALL + ({"id": "c9", "action": "keep"},), "unknown"),
    (KEEP_ALL[:2], "not mentioned"),
    ((), "not mentioned"),
])
def test_unknown_or_missing_checks_are_rejected(entries, words):
    parsed = {"checks": [dict(e) for e in entries]}
    with pytest.raises(RevisionRejected, match=words) as raised:
        parse_revision(parsed, make_rubric(), "free", 1, REVISER)
    assert raised.value.kind == "rejected"


def test_check_mentioned_twice_is_rejected_even_past_the_parser():
    parsed = {"checks": [dict(e) for e in KEEP_ALL] + [{"id": "c1", "action": "delete"}]}
    with pytest.raises(RevisionRejected, match="more than once"):
        parse_revision(parsed, make_rubric(), "free", 1, REVISER)


def test_malformed_entry_past_the_parser_is_rejected_as_unparseable():
    parsed = {"checks": [dict(e) for e in KEEP_ALL] + [{"action": "add"}]}
    with pytest.raises(RevisionRejected) as raised:
        parse_revision(parsed, make_rubric(), "free", 1, REVISER)
    assert raised.value.kind == "unparseable"


@pytest.mark.parametrize("mode, entries, words", [
    ("delete_only", KEEP_ALL + ({"action": "add", "text": "New."},), "delete_only"),
    ("delete_only", ({"id": "c1", "action": "edit", "text": "New."},) + KEEP_ALL[1:],
     "delete_only"),
    ("fixed_count", KEEP_ALL + ({"action": "add", "text": "New."},), "fixed_count"),
    ("fixed_count", ({"id": "c1", "action": "delete"},) + KEEP_ALL[1:], "fixed_count"),
    ("free", tuple({"id": i, "action": "delete"} for i in ("c1", "c2", "c3")), "every check"),
    ("delete_only", tuple({"id": i, "action": "delete"} for i in ("c1", "c2", "c3")),
     "every check"),
])
def test_mode_violations_are_rejected(mode, entries, words):
    with pytest.raises(RevisionRejected, match=words):
        revise(make_rubric(), mode, *entries)


@pytest.mark.parametrize("mode, entries", [
    ("fixed_count", ({"id": "c1", "action": "delete"}, {"action": "add", "text": "New."},
                     {"id": "c2", "action": "edit", "text": "Edited."},
                     {"id": "c3", "action": "keep"})),
    ("delete_only", ({"id": "c1", "action": "delete"},) + KEEP_ALL[1:]),
    ("free", KEEP_ALL + ({"action": "add", "text": "New."}, {"action": "add", "text": "Two."})),
])
def test_operations_the_mode_allows_are_accepted(mode, entries):
    assert revise(make_rubric(), mode, *entries).mode == mode


def test_revision_from_answer_returns_rejections_with_their_kind():
    rubric = make_rubric()
    unparseable = revision_from_answer("I would keep them.", rubric, "free", 1, REVISER)
    rejected = revision_from_answer(answer(*KEEP_ALL[:2]), rubric, "free", 1, REVISER)
    valid = revision_from_answer(answer(*KEEP_ALL), rubric, "free", 1, REVISER)
    assert isinstance(unparseable, RevisionRejected) and unparseable.kind == "unparseable"
    assert isinstance(rejected, RevisionRejected) and rejected.kind == "rejected"
    assert valid.ops == (Keep("c1"), Keep("c2"), Keep("c3"))


# --- the prompt -----------------------------------------------------------------------------

def test_revision_messages_list_the_checks_and_state_the_mode():
    rubric = make_rubric()
    free, fixed, delete_only = (revision_messages("a findings report", rubric, mode)[-1]["content"]
                                for mode in ("free", "fixed_count", "delete_only"))
    for text in (free, fixed, delete_only):
        assert "a findings report" in text
        assert all(f"[{c.id}] {c.text}" in text for c in rubric.checks)
        assert '"checks"' in text and "exactly once" in text
    assert '"add"' in free and "add up to 5 new checks" in free
    assert "exactly 3 checks" in fixed
    assert '"add"' not in delete_only and '"edit"' not in delete_only
    assert "only keep or delete" in delete_only


def test_revision_messages_refuse_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        revision_messages("a report", make_rubric(), "rewrite")


# --- applying a revision --------------------------------------------------------------------

def full_revision(round: int = 1, reviser: str = REVISER) -> Revision:
    return Revision(ops=(Edit("c1", "The report names all findings."), Delete("c2"),
                         Keep("c3"), Add("The report is short.")),
                    round=round, reviser=reviser, mode="free")


def test_apply_all_keeps_origin_and_grows_lineage():
    revised = apply_revision(make_rubric(), full_revision())
    assert revised.checks == (
        RubricCheck("c1", "The report names all findings.", "hand", ("r1: edit by fake/reviser",)),
        RubricCheck("c3", "The report invents no finding.", "generated", ("r0: seed",)),
        RubricCheck("r1-add1", "The report is short.", "review by fake/reviser",
                    ("r1: add by fake/reviser",)),
    )
    assert revised.name == "demo"


def test_refused_operations_leave_checks_as_they_were():
    rubric = make_rubric()
    # only the keep (index 2) is accepted: the edit, delete and add are refused
    revised = apply_revision(rubric, full_revision(), accepted={2})
    assert revised == rubric


def test_refused_keep_removes_the_check():
    revised = apply_revision(make_rubric(), full_revision(), accepted={0, 1, 3})
    assert revised.ids == ["c1", "r1-add1"]


def test_refused_add_does_not_shift_the_ids_of_accepted_adds():
    revision = Revision(ops=KEEP_OPS + (Add("First."), Add("Second.")), round=2,
                        reviser=REVISER, mode="free")
    revised = apply_revision(make_rubric(), revision, accepted={0, 1, 2, 4})
    assert revised.ids == ["c1", "c2", "c3", "r2-add2"]
    assert revised.check("r2-add2").text == "Second."



def test_lineage_accumulates_over_rounds_and_reviser_origin_survives_edits():
    first = apply_revision(make_rubric(), full_revision(round=1))
    second = Revision(ops=(Edit("c1", "Names findings."), Keep("c3"),
                           Edit("r1-add1", "The report is brief.")),
                      round=2, reviser="fake/other", mode="fixed_count")
    revised = apply_revision(first, second)
    assert revised.check("c1").lineage == ("r1: edit by fake/reviser", "r2: edit by fake/other")
    assert revised.check("c1").origin == "hand"
    added = revised.check("r1-add1")
    assert added.origin == "review by fake/reviser"
    assert added.lineage == ("r1: add by fake/reviser", "r2: edit by fake/other")


def test_fresh_ids_never_collide_with_existing_ones():
    rubric = Rubric("x", (RubricCheck("r1-add1", "Old.", "hand"),))
    revision = Revision(ops=(Keep("r1-add1"), Add("New.")), round=1, reviser=REVISER,
                        mode="free")
    assert apply_revision(rubric, revision).ids == ["r1-add1", "r1-add1.2"]


def test_apply_rejects_bad_indices_and_unknown_checks():
    rubric = make_rubric()
    with pytest.raises(ValueError, match="not operations"):
        apply_revision(rubric, full_revision(), accepted={7})
    stray = Revision(ops=(Delete("c9"),), round=1, reviser=REVISER, mode="free")
    with pytest.raises(ValueError, match="lacks"):
        apply_revision(rubric, stray)


def test_apply_raises_when_nothing_is_left():
    rubric = make_rubric()
    revision = Revision(ops=(Delete("c1"), Delete("c2"), Keep("c3")), round=1,
                        reviser=REVISER, mode="delete_only")
    with pytest.raises(ValueError, match="no checks"):
        apply_revision(rubric, revision, accepted={0, 1})


def test_rubric_round_trips_through_a_checklist():
    checklist = Checklist("hand", (Check("a", "Text A.", "hand"),), task_description="a report")
    rubric = Rubric.from_checklist(checklist)
    assert rubric.checks == (RubricCheck("a", "Text A.", "hand", ()),)
    assert rubric.to_checklist("a report") == checklist


def test_rubric_needs_unique_ids_and_a_check():
    with pytest.raises(ValueError, match="duplicate"):
        Rubric("x", (RubricCheck("a", "A.", "hand"), RubricCheck("a", "B.", "hand")))
    with pytest.raises(ValueError, match="no checks"):
        Rubric("x", ())


# --- chains ---------------------------------------------------------------------------------

def scripted(answers: list[str], mode: str = "free"):
    """A propose callable that answers round r with answers[r - 1], like a reviser model."""
    def propose(rubric: Rubric, round: int):
        return revision_from_answer(answers[round - 1], rubric, mode, round, REVISER)
    return propose


def test_chain_counts_unparseable_and_rejected_rounds_and_never_applies_them():
    rubric = make_rubric()
    answers = [
        "Here is my improved checklist: ...",                        # unparseable
        answer(*KEEP_ALL, {"action": "add", "text": "The report is short."}),  # add in delete_only
        answer({"id": "c1", "action": "delete"}, *KEEP_ALL[1:]),     # valid
        answer({"id": "c9", "action": "delete"}, *KEEP_ALL[1:]),     # unknown id
    ]
    result = run_chain(rubric, 4, scripted(answers, mode="delete_only"), gate=None)
    assert isinstance(result, ChainResult)
    assert [r.rejected for r in result.rounds] == [True, True, False, True]
    assert result.n_unparseable == 1 and result.n_rejected == 2
    assert result.rubric_after(1) == rubric and result.rubric_after(2) == rubric
    assert result.rubric_after(3).ids == ["c2", "c3"]
    assert result.final == result.rubric_after(3)
    assert result.rounds[0].accepted == frozenset() and result.rounds[2].accepted == {0, 1, 2}
    assert result.gate == "none"


def test_chain_counts_a_rejection_raised_by_propose():
    def propose(rubric, round):
        raise RevisionRejected("reviser call failed", kind="unparseable")
    result = run_chain(make_rubric(), 2, propose)
    assert result.n_unparseable == 2 and result.final == make_rubric()


def test_chain_refuses_a_gate_that_does_not_decide_every_operation():
    class Lazy:
        name = "lazy"

        def decide(self, rubric, revision, evidence):
            return []

    with pytest.raises(ValueError, match="exactly once"):
        run_chain(make_rubric(), 1, scripted([answer(*KEEP_ALL)]), gate=Lazy())


def test_chain_records_a_gated_round_that_would_empty_the_rubric_as_rejected():
    from rubriclab.carry.gates import Decision

    class RefuseKeeps:
        name = "refuse-keeps"

        def decide(self, rubric, revision, evidence):
            return [Decision(i, not isinstance(op, Keep), "test") for i, op in
                    enumerate(revision.ops)]

    one = Rubric("one", (RubricCheck("a", "A.", "hand"),))
    propose = scripted([answer({"id": "a", "action": "keep"})])
    result = run_chain(one, 1, propose, gate=RefuseKeeps())
    assert result.n_rejected == 1 and result.final == one
    assert "no checks" in result.rounds[0].proposal.reason
