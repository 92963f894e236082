import json
from fractions import Fraction

import numpy as np
import pytest

from rubriclab.carry.gates import (
    GATES, Decision, GateEvidence, get_gate, rubric_balanced_accuracy,
)
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, Revision, Rubric, RubricCheck, apply_revision,
    revision_from_answer, run_chain,
)

REVISER = "fake/reviser"

# carry Table 1: outputs R1-R5 (R1-R3 flawed, R4-R5 correct), checks A-D.
#   R1 fails A (A's unique catch); R2 fails A, B; R3 fails B, C, D; R4 fails D (D's blame).
TABLE1_FLAWED = np.array([True, True, True, False, False])
TABLE1_FAILS = {
    "A": np.array([True, True, False, False, False]),
    "B": np.array([False, True, True, False, False]),
    "C": np.array([False, False, True, False, False]),
    "D": np.array([False, False, True, True, False]),
}
FAILS_NOTHING = np.zeros(5, dtype=bool)
FAILS_CORRECT_R5 = np.array([False, False, False, False, True])
FAILS_FLAWED_R1 = np.array([True, False, False, False, False])
FAILS_R3_ONLY = np.array([False, False, True, False, False])


def table1_rubric() -> Rubric:
    origins = {"A": "hand", "B": "label", "C": "hand", "D": "review by fake/opus"}
    return Rubric("table1", tuple(RubricCheck(i, f"Check {i}.", origins[i]) for i in "ABCD"))


def decide(gate_name: str, ops, proposed=None, rubric=None, flawed=TABLE1_FLAWED,
           current=TABLE1_FAILS) -> list[Decision]:
    """The gate's decisions on `ops` (each decided alone) with Table 1 evidence."""
    rubric = rubric or table1_rubric()
    revision = Revision(ops=tuple(ops), round=1, reviser=REVISER, mode="free")
    evidence = GateEvidence(flawed, current, proposed or {})
    decisions = get_gate(gate_name).decide(rubric, revision, evidence)
    assert [d.op_index for d in decisions] == list(range(len(ops)))
    return decisions


def accepted(decisions: list[Decision]) -> list[bool]:
    return [d.accepted for d in decisions]


# --- gate none ------------------------------------------------------------------------------

def test_no_gate_accepts_everything():
    ops = [Delete("A"), Keep("D"), Add("New."), Edit("B", "B'.")]
    decisions = decide("none", ops, {2: FAILS_CORRECT_R5, 3: FAILS_CORRECT_R5})
    assert accepted(decisions) == [True] * 4


# --- gate R ---------------------------------------------------------------------------------

def test_table1_balanced_accuracy():
    fails = np.column_stack([TABLE1_FAILS[i] for i in "ABCD"])
    # correct passed 1/2 (R5 passes, R4 fails), flawed caught 3/3
    assert rubric_balanced_accuracy(fails, TABLE1_FLAWED) == Fraction(3, 4)


@pytest.mark.parametrize("op, proposed, expected", [
    (Delete("D"), {}, True),                     # R4 now passes: 0.75 -> 1.0
    (Delete("A"), {}, False),                    # R1 no longer caught: 0.75 -> 0.58
    (Delete("C"), {}, True),                     # R3 still caught by B and D: tie
    (Keep("D"), {}, True),                       # nothing changes
    (Edit("D", "D'."), {0: FAILS_R3_ONLY}, True),     # D stops failing R4: raises
    (Edit("A", "A'."), {0: FAILS_NOTHING}, False),    # R1 lost: lowers
    (Add("New."), {0: FAILS_CORRECT_R5}, False),      # R5 now fails: lowers
    (Add("New."), {0: FAILS_FLAWED_R1}, True),        # already caught: tie
])
def test_gate_r_accepts_iff_balanced_accuracy_does_not_fall(op, proposed, expected):
    [decision] = decide("R", [op], proposed)
    assert decision.accepted is expected, decision.reason


def test_gate_r_accepts_a_trade_that_raises_balanced_accuracy():
    # Two correct items and four flawed: an add that fails one correct item and catches
    # three flawed ones lowers correct passed (1 -> 1/2) but raises BA (0.625 -> 0.75).
    flawed = np.array([False, False, True, True, True, True])
    current = {"a": np.array([False, False, True, False, False, False])}
    rubric = Rubric("t", (RubricCheck("a", "A.", "hand"),))
    add_fails = np.array([True, False, False, True, True, True])
    [decision] = decide("R", [Add("New.")], {0: add_fails}, rubric, flawed, current)
    assert decision.accepted and "raises" in decision.reason


def test_gate_r_without_both_labels_refuses_changes_and_says_so():
    rubric = Rubric("t", (RubricCheck("a", "A.", "hand"), RubricCheck("b", "B.", "hand")))
    revision = Revision(ops=(Keep("a"), Delete("b")), round=1, reviser=REVISER, mode="free")
    only_flawed = GateEvidence(np.array([True, True]), {"a": np.array([True, False]),
                                                        "b": np.array([False, True])})
    for evidence in (None, only_flawed):
        keep, delete = GATES["R"].decide(rubric, revision, evidence)
        assert keep.accepted and keep.evidence
        assert not delete.accepted and not delete.evidence
        assert "no calibration evidence" in delete.reason
        assert apply_revision(rubric, revision, {0}).ids == ["a", "b"]


# --- gate P ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op, expected", [
    (Edit("B", "B'."), False),   # B is label-derived
    (Delete("B"), False),
    (Edit("A", "A'."), True),    # A is hand-written
    (Delete("A"), True),
    (Delete("D"), True),         # D came from review
    (Keep("B"), True),
    (Add("New."), True),
])
def test_gate_p_freezes_label_derived_checks_only(op, expected):
    rubric = table1_rubric()
    revision = Revision(ops=(op,), round=1, reviser=REVISER, mode="free")
    [decision] = GATES["P"].decide(rubric, revision, None)  # P needs no evidence
    assert decision.accepted is expected, decision.reason


# --- gate S ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op, proposed, expected", [
    (Delete("A"), {}, False),                          # A holds R1 as a unique catch
    (Delete("B"), {}, True),                           # redundant: no unique catch
    (Delete("C"), {}, True),
    (Delete("D"), {}, True),                           # deleting blame is fine
    (Keep("D"), {}, True),                             # a keep is not a change
    (Keep("A"), {}, True),
    (Add("New."), {0: FAILS_CORRECT_R5}, False),       # the new check fails a correct item
    (Add("New."), {0: FAILS_FLAWED_R1}, True),
    (Edit("B", "B'."), {0: np.array([False, True, False, True, False])}, False),
    (Edit("D", "D'."), {0: FAILS_R3_ONLY}, True),      # D edited out of its blame
    (Edit("A", "A'."), {0: FAILS_NOTHING}, True),      # narrowing is not S's business
])
def test_gate_s_keeps_unique_catches_and_refuses_blame(op, proposed, expected):
    [decision] = decide("S", [op], proposed)
    assert decision.accepted is expected, decision.reason


def test_gate_s_keeps_a_blamed_check_that_holds_a_unique_catch():
    # D fails correct R4 (blame) and is the only check failing flawed R6 (unique catch).
    flawed = np.append(TABLE1_FLAWED, True)
    current = {k: np.append(v, k == "D") for k, v in TABLE1_FAILS.items()}
    rubric = table1_rubric()
    keeps = Revision(ops=tuple(Keep(i) for i in "ABCD"), round=1, reviser=REVISER, mode="free")
    decisions = GATES["S"].decide(rubric, keeps, GateEvidence(flawed, current))
    assert accepted(decisions) == [True] * 4
    assert apply_revision(rubric, keeps, {d.op_index for d in decisions}).ids == list("ABCD")
    [delete_d] = decide("S", [Delete("D")], {}, rubric, flawed, current)
    assert not delete_d.accepted and "unique catch" in delete_d.reason


def test_gate_s_refuses_the_second_of_two_deletions_that_lose_a_catch_together():
    # R3 is failed by B, C and D; with D deleted first, B and C each still look redundant
    # alone, but after B is accepted C holds R3 alone.
    rubric = table1_rubric()
    ops = [Delete("D"), Delete("B"), Delete("C")]
    alone = [decide("S", [op])[0].accepted for op in ops]
    assert alone == [True, True, True]
    together = decide("S", ops)
    assert accepted(together) == [True, True, False]
    assert "unique catch" in together[2].reason
    kept = {d.op_index for d in together if d.accepted}
    revised = apply_revision(rubric, Revision(tuple(ops), 1, REVISER, "free"), kept)
    assert revised.ids == ["A", "C"]
    fails = np.column_stack([TABLE1_FAILS[i] for i in revised.ids])
    assert fails[TABLE1_FLAWED].any(axis=1).all()   # still catches every flawed output


def test_gates_decide_each_change_against_the_changes_already_accepted():
    # Gate R: deleting A alone loses R1 (refused), but an add that catches R1 accepted before
    # it makes the deletion a tie.
    ops = [Add("Catches R1."), Delete("A")]
    assert accepted(decide("R", ops[1:])) == [False]
    assert accepted(decide("R", ops, {0: FAILS_FLAWED_R1})) == [True, True]
    # Gate S likewise: A's unique catch is shared with the accepted add, so A may go; in
    # the other order the deletion comes first and is refused.
    assert accepted(decide("S", ops, {0: FAILS_FLAWED_R1})) == [True, True]
    assert accepted(decide("S", ops[::-1], {1: FAILS_FLAWED_R1})) == [False, True]


def test_gate_s_without_evidence_refuses_every_change_and_counts_it():
    rubric = table1_rubric()
    ops = (Keep("A"), Delete("B"), Edit("C", "C'."), Add("New."))
    revision = Revision(ops=ops, round=1, reviser=REVISER, mode="free")
    empty = GateEvidence(np.zeros(0, dtype=bool), {i: np.zeros(0, dtype=bool) for i in "ABCD"},
                         {2: np.zeros(0, dtype=bool), 3: np.zeros(0, dtype=bool)})
    for gate in ("S", "S+P", "R"):
        for evidence in (None, empty):
            decisions = GATES[gate].decide(rubric, revision, evidence)
            assert accepted(decisions) == [True, False, False, False]
            # S+P: deleting B (label-derived) is P's refusal, which needs no evidence
            flags = [True, True, False, False] if gate == "S+P" else [True, False, False, False]
            assert [d.evidence for d in decisions] == flags, gate
            assert not any(d.reads_verdicts for d in decisions)
    p_decisions = GATES["P"].decide(rubric, revision, None)
    assert accepted(p_decisions) == [True, False, True, True]   # B is label-derived
    assert all(d.evidence for d in p_decisions)
    assert not any(d.reads_verdicts for d in p_decisions)


def test_gate_s_plus_p_refusal_by_the_freeze_is_ps_not_for_want_of_evidence():
    rubric = table1_rubric()  # B label-derived, C hand-written
    ops = (Edit("B", "B'."), Delete("B"), Edit("C", "C'."), Delete("C"))
    revision = Revision(ops=ops, round=1, reviser=REVISER, mode="free")
    # only correct items: S can judge edits (blame) but not deletions (no flawed item)
    only_correct = GateEvidence(np.array([False, False]),
                                {i: np.array([False, False]) for i in "ABCD"},
                                {0: np.array([False, False]), 2: np.array([False, False])})
    edit_b, delete_b, edit_c, delete_c = GATES["S+P"].decide(rubric, revision, only_correct)
    for frozen in (edit_b, delete_b):
        assert not frozen.accepted and frozen.evidence and not frozen.reads_verdicts
        assert frozen.reason.startswith("P: ") and "frozen" in frozen.reason
    # S decides the hand check: the edit with evidence, the deletion without any
    assert edit_c.accepted and edit_c.evidence and edit_c.reads_verdicts
    assert not delete_c.accepted and not delete_c.evidence and not delete_c.reads_verdicts
    assert "no calibration evidence" in delete_c.reason
    # Gate S alone refuses deleting B for want of evidence, as before
    s_delete_b = GATES["S"].decide(rubric, revision, only_correct)[1]
    assert not s_delete_b.accepted and not s_delete_b.evidence


# --- gate S+P -------------------------------------------------------------------------------

INTERSECTION_CASES = [
    (Delete("A"), {}),                       # S refuses (unique catch), P accepts
    (Delete("B"), {}),                       # S accepts, P refuses (label)
    (Delete("C"), {}),                       # both accept
    (Edit("B", "B'."), {0: FAILS_R3_ONLY}),  # S accepts, P refuses
    (Edit("C", "C'."), {0: FAILS_CORRECT_R5}),  # S refuses, P accepts
    (Edit("C", "C'."), {0: FAILS_R3_ONLY}),  # both accept
    (Keep("D"), {}),                         # S refuses (blame), D is not frozen
    (Keep("A"), {}),
    (Add("New."), {0: FAILS_CORRECT_R5}),
    (Add("New."), {0: FAILS_FLAWED_R1}),
]


@pytest.mark.parametrize("op, proposed", INTERSECTION_CASES)
def test_gate_s_plus_p_is_the_intersection(op, proposed):
    [s] = decide("S", [op], proposed)
    [p] = decide("P", [op], proposed)
    [both] = decide("S+P", [op], proposed)
    assert both.accepted is (s.accepted and p.accepted)


def test_intersection_cases_cover_every_combination():
    outcomes = {(decide("S", [op], pr)[0].accepted, decide("P", [op], pr)[0].accepted)
                for op, pr in INTERSECTION_CASES}
    assert outcomes == {(True, True), (True, False), (False, True)}


def test_no_gate_removes_a_kept_check():
    rubric = Rubric("t", (RubricCheck("L", "Label check.", "label"),
                          RubricCheck("H", "Hand check.", "hand")))
    flawed = np.array([True, False])
    current = {"L": np.array([True, True]), "H": np.array([False, True])}  # both blamed
    ops = [Keep("L"), Keep("H")]
    for gate in GATES:
        assert accepted(decide(gate, ops, {}, rubric, flawed, current)) == [True, True]


# --- evidence -------------------------------------------------------------------------------

def test_evidence_is_validated():
    with pytest.raises(ValueError, match="boolean"):
        GateEvidence(np.array([1, 0]), {})
    with pytest.raises(ValueError, match="items"):
        GateEvidence(np.array([True, False]), {"a": np.array([True])})
    evidence = GateEvidence(TABLE1_FLAWED, {"A": TABLE1_FAILS["A"]})
    with pytest.raises(ValueError, match=r"\['B', 'C', 'D'\]"):
        evidence.fails_matrix(table1_rubric())
    with pytest.raises(ValueError, match="operation 0"):
        decide("S", [Add("New.")], {})


def test_a_change_to_a_check_already_deleted_this_round_is_an_error():
    with pytest.raises(ValueError, match="'D', which the rubric does not hold"):
        decide("none", [Delete("D"), Edit("D", "D'.")], {1: FAILS_NOTHING})


def test_unknown_gate_is_an_error():
    with pytest.raises(ValueError, match="S\\+P"):
        get_gate("T")


# --- a drifting chain, gated and ungated ----------------------------------------------------

# Calibration items: three flawed, three correct. A judge that answers by the check's text.
CHAIN_FLAWED = np.array([True, True, True, False, False, False])
JUDGE = {
    "The report names every finding.": [1, 0, 0, 0, 0, 0],
    "The report cites the resource of each finding.": [0, 1, 0, 0, 0, 0],
    "The report invents no finding.": [0, 0, 1, 0, 0, 0],
    "The report uses section headings.": [1, 0, 0, 1, 0, 0],
    "The report opens with an executive summary.": [0, 0, 0, 0, 1, 0],
    "The report cites each resource by its full ARN.": [0, 1, 0, 0, 0, 1],
}
# What the reviser does each round to the checks it still sees; every other check is kept.
DRIFT = {
    1: {"delete": ["names"], "add": ["The report uses section headings."]},
    2: {"delete": ["invents"], "add": ["The report opens with an executive summary."]},
    3: {"edit": {"cites": "The report cites each resource by its full ARN."}},
}


def judged(text: str) -> np.ndarray:
    return np.array(JUDGE[text], dtype=bool)


def chain_start() -> Rubric:
    return Rubric("hand", (
        RubricCheck("names", "The report names every finding.", "hand"),
        RubricCheck("cites", "The report cites the resource of each finding.", "label"),
        RubricCheck("invents", "The report invents no finding.", "hand"),
    ))


def drifting_reviser(rubric: Rubric, round: int):
    plan = DRIFT[round]
    entries = []
    for check in rubric.checks:
        if check.id in plan.get("delete", []):
            entries.append({"id": check.id, "action": "delete"})
        elif check.id in plan.get("edit", {}):
            entries.append({"id": check.id, "action": "edit", "text": plan["edit"][check.id]})
        else:
            entries.append({"id": check.id, "action": "keep"})
    entries += [{"action": "add", "text": text} for text in plan.get("add", [])]
    return revision_from_answer(json.dumps({"checks": entries}), rubric, "free", round, REVISER)


def calibration_evidence(rubric: Rubric, revision: Revision) -> GateEvidence:
    proposed = {i: judged(op.new_text) for i, op in enumerate(revision.ops)
                if isinstance(op, (Edit, Add))}
    return GateEvidence(CHAIN_FLAWED, {c.id: judged(c.text) for c in rubric.checks}, proposed)


def calibration_ba(rubric: Rubric) -> Fraction:
    fails = np.column_stack([judged(c.text) for c in rubric.checks])
    return rubric_balanced_accuracy(fails, CHAIN_FLAWED)


def test_ungated_chain_drifts():
    result = run_chain(chain_start(), 3, drifting_reviser, gate=None)
    assert result.n_rejected == result.n_unparseable == 0
    assert result.final.ids == ["cites", "r1-add1", "r2-add1"]
    assert result.final.check("r1-add1").origin == "review by fake/reviser"
    assert result.final.check("cites").lineage == ("r3: edit by fake/reviser",)
    assert calibration_ba(chain_start()) == 1
    assert calibration_ba(result.final) < Fraction(1, 2)


@pytest.mark.parametrize("gate", ["S+P", "S", "R"])
def test_gate_holds_the_drifting_chain_at_its_start(gate):
    result = run_chain(chain_start(), 3, drifting_reviser, gate=GATES[gate],
                       evidence=calibration_evidence)
    assert [r.rubric for r in result.rounds] == [chain_start()] * 3
    assert result.gate == gate
    assert all(not d.accepted for r in result.rounds for d in r.decisions
               if not isinstance(r.proposal.ops[d.op_index], Keep))


def test_provenance_alone_lets_the_chain_drift_except_the_frozen_check():
    result = run_chain(chain_start(), 3, drifting_reviser, gate=GATES["P"],
                       evidence=calibration_evidence)
    assert result.final.ids == ["cites", "r1-add1", "r2-add1"]
    assert result.final.check("cites") == chain_start().check("cites")
