"""Change-control gates on rubric revisions (carry, Section 7), decided check by check.

A gate decides every operation of a proposed revision (keep, edit, delete, add; see
`rubriclab.carry.revision`): accept or refuse, with a reason. Each operation is decided
ALONE against the current rubric (the rubric before this round), never against the other
operations of the same revision, so decisions do not depend on the order the reviser gave.
Evidence (`GateEvidence`) is the judge's verdicts on the calibration items: for every check
of the current rubric and for the text of every proposed edit and add, a boolean per item
that is True where the check answers No ("fails" the item), plus the items' labels (True =
flawed). Aggregation is all-must-pass: an item fails the rubric iff some check fails it.

Gate none  accepts every operation.

Gate R (calibration labels). An operation is accepted iff applying it alone does not lower
    the rubric's balanced accuracy on the calibration items, BA = (share of correct items
    that pass + share of flawed items that fail) / 2, compared exactly (ties accepted).
    Keep changes nothing and is always accepted. Chosen over "neither rate may fall"
    because it is one number that weighs the two failure directions equally whatever the
    flawed share of the calibration set (carry Figure 3), and lets a revision trade a small
    loss on one rate for a larger gain on the other. Needs items of both labels.

Gate P (provenance freeze). Refuses an edit or a delete of a check whose origin is exactly
    "label" (derived from calibration labels); accepts every other operation (keeps, adds,
    edits and deletes of checks of any other origin). Needs no evidence.

Gate S (Shapley). With the closed-form Shapley attribution of `rubriclab.carry.attribution`
    on the calibration items:
      delete j  refused iff j holds a unique catch in the current rubric (a flawed item that
                j alone fails);
      keep j    refused iff j carries false-fail blame > 0 in the current rubric (it fails a
                correct item); a refused keep REMOVES the check (the issue's "refuse keeping
                a check with false-fail blame");
      edit j    refused iff the new text carries blame > 0 in the current rubric with j's
                column replaced by the new text's verdicts (a refused edit keeps the old
                text, even if the old text carries blame);
      add       refused iff the new check carries blame > 0 in the current rubric plus its
                column.
    Blame > 0 is the same as failing at least one correct calibration item. An edit that
    narrows a check and so loses its unique catch is not refused by S (S guards strictness;
    P guards the label-derived coverage, carry Figure 6).

Gate S+P. An operation is accepted iff both S and P accept it, with one exception: a keep
    that S refuses (which would remove the check) of a check that P freezes ("label"
    origin) is accepted, since removing it is a delete that P refuses.

Verdicts the judge could not give (unparseable) must be resolved into booleans by the
caller before they become evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

import numpy as np

from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.revision import (
    LABEL_ORIGIN, Delete, Edit, Keep, Operation, Revision, Rubric, action_name,
)


@dataclass(frozen=True)
class Decision:
    op_index: int
    accepted: bool
    reason: str


@dataclass(frozen=True)
class GateEvidence:
    """Calibration verdicts: True where a check fails (answers No on) an item.

    flawed: (n_items,) bool, True for flawed items, False for correct ones.
    current_fails: check id -> (n_items,) bool, for every check of the current rubric.
    proposed_fails: operation index -> (n_items,) bool, for every edit's and add's new text.
    """

    flawed: np.ndarray
    current_fails: Mapping[str, np.ndarray]
    proposed_fails: Mapping[int, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        flawed = _bool_vector(self.flawed, "flawed")
        n_items = len(flawed)
        object.__setattr__(self, "flawed", flawed)
        object.__setattr__(self, "current_fails", {
            check_id: _bool_vector(v, f"current_fails[{check_id!r}]", n_items)
            for check_id, v in self.current_fails.items()
        })
        object.__setattr__(self, "proposed_fails", {
            index: _bool_vector(v, f"proposed_fails[{index}]", n_items)
            for index, v in self.proposed_fails.items()
        })

    def fails_matrix(self, rubric: Rubric) -> np.ndarray:
        """(n_items x n_checks) in the rubric's check order."""
        missing = [i for i in rubric.ids if i not in self.current_fails]
        if missing:
            raise ValueError(f"the evidence has no verdicts for check(s) {missing}")
        return np.column_stack([self.current_fails[i] for i in rubric.ids])

    def proposed(self, op_index: int) -> np.ndarray:
        if op_index not in self.proposed_fails:
            raise ValueError(f"the evidence has no verdicts for the text of operation {op_index}")
        return self.proposed_fails[op_index]


def _bool_vector(value: object, name: str, length: int | None = None) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype != np.bool_ or array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D boolean array, got dtype {array.dtype} "
                         f"and shape {array.shape}")
    if length is not None and len(array) != length:
        raise ValueError(f"{name} has {len(array)} items, flawed has {length}")
    return array


class Gate(Protocol):
    name: str

    def decide(self, rubric: Rubric, revision: Revision,
               evidence: GateEvidence | None) -> list[Decision]: ...


Rule = Callable[[Rubric, Operation, int, "GateEvidence | None"], Decision]


@dataclass(frozen=True)
class RuleGate:
    """A gate that applies one rule to each operation on its own."""

    name: str
    rule: Rule

    def decide(self, rubric: Rubric, revision: Revision,
               evidence: GateEvidence | None) -> list[Decision]:
        return [self.rule(rubric, op, index, evidence) for index, op in enumerate(revision.ops)]


# --- gate none ------------------------------------------------------------------------------

def accept_all(rubric: Rubric, op: Operation, index: int,
               evidence: GateEvidence | None) -> Decision:
    return Decision(index, True, "ungated")


# --- gate R ---------------------------------------------------------------------------------

def calibration_rule(rubric: Rubric, op: Operation, index: int,
                     evidence: GateEvidence | None) -> Decision:
    """Gate R: accept iff the operation alone does not lower calibration balanced accuracy."""
    evidence = _required(evidence, "R")
    flawed = evidence.flawed
    if flawed.all() or not flawed.any():
        raise ValueError("Gate R needs calibration items of both labels")
    before = balanced_accuracy(evidence.fails_matrix(rubric), flawed)
    after = balanced_accuracy(fails_after(op, index, rubric, evidence), flawed)
    accepted = after >= before
    verb = "keeps" if after == before else ("raises" if accepted else "lowers")
    reason = (f"{action_name(op)} {verb} calibration balanced accuracy "
              f"{float(before):.3f} -> {float(after):.3f}")
    return Decision(index, accepted, reason)


def balanced_accuracy(fails: np.ndarray, flawed: np.ndarray) -> Fraction:
    """(correct items passed / correct + flawed items failed / flawed) / 2, all-must-pass."""
    item_fails = fails.any(axis=1)
    correct_passed = Fraction(int(np.count_nonzero(~item_fails & ~flawed)),
                              int(np.count_nonzero(~flawed)))
    flawed_caught = Fraction(int(np.count_nonzero(item_fails & flawed)),
                             int(np.count_nonzero(flawed)))
    return (correct_passed + flawed_caught) / 2


def fails_after(op: Operation, index: int, rubric: Rubric,
                evidence: GateEvidence) -> np.ndarray:
    """The calibration fails matrix of the current rubric with this one operation applied."""
    fails = evidence.fails_matrix(rubric)
    if isinstance(op, Keep):
        return fails
    if isinstance(op, Delete):
        return np.delete(fails, _column(rubric, op.check_id), axis=1)
    if isinstance(op, Edit):
        edited = fails.copy()
        edited[:, _column(rubric, op.check_id)] = evidence.proposed(index)
        return edited
    return np.column_stack([fails, evidence.proposed(index)])


# --- gate P ---------------------------------------------------------------------------------

def provenance_rule(rubric: Rubric, op: Operation, index: int,
                    evidence: GateEvidence | None = None) -> Decision:
    """Gate P: refuse editing or deleting a label-derived check; accept the rest."""
    if isinstance(op, (Edit, Delete)):
        origin = rubric.check(op.check_id).origin
        if origin == LABEL_ORIGIN:
            return Decision(index, False,
                            f"{action_name(op)} of {op.check_id}: label-derived checks are frozen")
        return Decision(index, True, f"{action_name(op)} of {op.check_id} (origin {origin!r})")
    return Decision(index, True, f"{action_name(op)} is not an edit or delete")


# --- gate S ---------------------------------------------------------------------------------

def shapley_rule(rubric: Rubric, op: Operation, index: int,
                 evidence: GateEvidence | None) -> Decision:
    """Gate S: keep unique catches, refuse false-fail blame (see the module docstring)."""
    evidence = _required(evidence, "S")
    if isinstance(op, Delete):
        column = _column(rubric, op.check_id)
        catches = shapley_attribution(evidence.fails_matrix(rubric), evidence.flawed)
        unique = int(catches.unique_catches[column])
        if unique > 0:
            return Decision(index, False, f"delete of {op.check_id}: it holds {unique} "
                                          "unique catch(es)")
        return Decision(index, True, f"delete of {op.check_id}: no unique catch")
    if isinstance(op, Keep):
        column = _column(rubric, op.check_id)
        where = f"keep of {op.check_id}"
    elif isinstance(op, Edit):
        column = _column(rubric, op.check_id)
        where = f"edit of {op.check_id}"
    else:
        column = len(rubric)
        where = "add"
    after = fails_after(op, index, rubric, evidence)
    blame = float(shapley_attribution(after, evidence.flawed).blame[column])
    if blame > 0:
        consequence = "; the check is removed" if isinstance(op, Keep) else ""
        return Decision(index, False, f"{where}: false-fail blame {blame:.3f}{consequence}")
    return Decision(index, True, f"{where}: no false-fail blame")


# --- gate S+P -------------------------------------------------------------------------------

def shapley_and_provenance_rule(rubric: Rubric, op: Operation, index: int,
                                evidence: GateEvidence | None) -> Decision:
    """Gate S+P: accepted iff S and P both accept; a frozen check is never removed."""
    s = shapley_rule(rubric, op, index, evidence)
    p = provenance_rule(rubric, op, index, evidence)
    if isinstance(op, Keep) and not s.accepted:
        removal = provenance_rule(rubric, Delete(op.check_id), index, evidence)
        if not removal.accepted:
            return Decision(index, True, f"S: {s.reason}; P: {removal.reason}, so it stays")
    accepted = s.accepted and p.accepted
    refusals = [f"{name}: {d.reason}" for name, d in (("S", s), ("P", p)) if not d.accepted]
    reason = "; ".join(refusals) if refusals else f"S: {s.reason}; P: {p.reason}"
    return Decision(index, accepted, reason)


# --- shared helpers -------------------------------------------------------------------------

def _required(evidence: GateEvidence | None, gate: str) -> GateEvidence:
    if evidence is None:
        raise ValueError(f"Gate {gate} needs calibration evidence")
    return evidence


def _column(rubric: Rubric, check_id: str) -> int:
    try:
        return rubric.ids.index(check_id)
    except ValueError:
        raise ValueError(f"rubric {rubric.name!r} has no check {check_id!r}") from None


GATES: dict[str, Gate] = {
    "none": RuleGate("none", accept_all),
    "R": RuleGate("R", calibration_rule),
    "P": RuleGate("P", provenance_rule),
    "S": RuleGate("S", shapley_rule),
    "S+P": RuleGate("S+P", shapley_and_provenance_rule),
}


def get_gate(name: str) -> Gate:
    try:
        return GATES[name]
    except KeyError:
        raise ValueError(f"unknown gate {name!r}; known gates: {', '.join(GATES)}") from None
