"""Change-control gates on rubric revisions (carry, Section 7), decided change by change.

A gate decides the CHANGES of a proposed revision (edit, delete, add; see
`rubriclab.carry.revision`): accept or refuse, with a reason. A keep is not a change: every
gate accepts it, so no gate ever removes a check the reviser kept. Changes are decided one
after another in the order the reviser gave them, each against the rubric as the changes
already accepted in the same round leave it (`GateState`): two deletions that each look
safe alone cannot both be accepted if together they lose a catch.

Evidence (`GateEvidence`) is the judge's verdicts on the calibration items: for every check
of the current rubric and for the text of every proposed edit and add, a boolean per item
that is True where the check answers No ("fails" the item), plus the items' labels (True =
flawed). Aggregation is all-must-pass: an item fails the rubric iff some check fails it.

A gate that needs evidence and has none for a change refuses it (the rubric stays as it
was) and marks the decision `evidence=False`, so every replay can count them. What each rule
needs is said below; "no evidence" means no evidence object, or no calibration item of a
label the rule reads.

Gate none  accepts every operation.

Gate R (calibration labels). A change is accepted iff it does not lower the rubric's
    balanced accuracy on the calibration items, BA = (share of correct items that pass +
    share of flawed items that fail) / 2, compared exactly (ties accepted). Chosen over
    "neither rate may fall" because it is one number that weighs the two failure
    directions equally whatever the flawed share of the calibration set (carry Figure 3),
    and lets a revision trade a small loss on one rate for a larger gain on the other.
    Needs items of both labels.

Gate P (provenance freeze). Refuses an edit or a delete of a check whose origin is exactly
    "label" (derived from calibration labels); accepts every other change. Needs no
    evidence.

Gate S (Shapley). With the closed-form Shapley attribution of `rubriclab.carry.attribution`
    on the calibration items, in the rubric as the accepted changes leave it:
      delete j  refused iff j holds a unique catch (a flawed item that j alone fails);
                needs flawed items;
      edit j    refused iff the new text carries false-fail blame > 0 with j's column
                replaced by the new text's verdicts (a refused edit keeps the old text);
                needs correct items;
      add       refused iff the new check carries blame > 0; needs correct items.
    Blame > 0 is the same as failing at least one correct calibration item. An edit that
    narrows a check and so loses its unique catch is not refused by S (S guards strictness;
    P guards the label-derived coverage, carry Figure 6). A kept check with blame stays:
    the seed's rule speaks of deletions ("only deleting A would lose a catch and only
    deleting D would let a correct output pass", Table 1) and of what a change adds.
    `rubriclab gate --tolerance` relaxes "> 0" to a share of the calibration items
    (`shapley_rule`'s `tolerance`); the pipeline's gates run at 0.

Gate S+P. A change is accepted iff both S and P accept it. P is asked first: a change P
    refuses (an edit or delete of a label-derived check) is P's refusal, with evidence (P
    needs none) and without reading a verdict; S decides the rest, so a change is marked
    without evidence only when P accepts it and S has none.

Every decision says whether it read the judge's verdicts (`Decision.reads_verdicts`): a
keep, Gate none, Gate P, a refusal for want of evidence and S+P's P-refusals do not, so they
cannot differ between judges (the agreement table leaves them out).

Verdicts the judge could not give (unparseable) must be resolved into booleans by the
caller before they become evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from rubriclab.carry.aggregate import balanced_accuracy, fails_any
from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.revision import (
    LABEL_ORIGIN, Add, Decision, Delete, Edit, Gate, Keep, Operation, Revision, Rubric,
    action_name,
)

__all__ = ["Decision", "GATES", "Gate", "GateEvidence", "GateState", "get_gate"]


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

    @property
    def has_correct(self) -> bool:
        return bool((~self.flawed).any())

    @property
    def has_flawed(self) -> bool:
        return bool(self.flawed.any())

    def fails_matrix(self, rubric: Rubric) -> np.ndarray:
        """(n_items x n_checks) in the rubric's check order."""
        missing = [i for i in rubric.ids if i not in self.current_fails]
        if missing:
            raise ValueError(f"the evidence has no verdicts for check(s) {missing}")
        return np.column_stack([self.current_fails[i] for i in rubric.ids]) if rubric.ids \
            else np.zeros((len(self.flawed), 0), dtype=bool)

    def proposed(self, op_index: int) -> np.ndarray:
        if op_index not in self.proposed_fails:
            raise ValueError(f"the evidence has no verdicts for the text of operation {op_index}")
        return self.proposed_fails[op_index]


def _bool_vector(value: object, name: str, length: int | None = None) -> np.ndarray:
    array = np.asarray(value)
    if array.size == 0 and array.ndim == 1:
        array = array.astype(bool)
    if array.dtype != np.bool_ or array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D boolean array, got dtype {array.dtype} "
                         f"and shape {array.shape}")
    if length is not None and len(array) != length:
        raise ValueError(f"{name} has {len(array)} items, flawed has {length}")
    return array


@dataclass(frozen=True)
class GateState:
    """The rubric as the changes accepted so far in this round leave it.

    ids: check ids in order (an added check is "+<op index>"); origins: check id -> origin
    in the rubric before the round (added checks: ""); columns: check id -> calibration fails
    (absent when there is no evidence).
    """

    ids: tuple[str, ...]
    origins: Mapping[str, str]
    columns: Mapping[str, np.ndarray] | None
    evidence: GateEvidence | None

    @classmethod
    def start(cls, rubric: Rubric, evidence: GateEvidence | None) -> GateState:
        columns = None
        if evidence is not None:
            matrix = evidence.fails_matrix(rubric)
            columns = {check_id: matrix[:, k] for k, check_id in enumerate(rubric.ids)}
        return cls(tuple(rubric.ids), {c.id: c.origin for c in rubric.checks}, columns,
                   evidence)

    def column(self, check_id: str) -> int:
        try:
            return self.ids.index(check_id)
        except ValueError:
            raise ValueError(f"the rubric has no check {check_id!r} (at this point of the "
                             "round)") from None

    def _evidence(self) -> GateEvidence:
        if self.evidence is None:
            raise ValueError("no evidence")
        return self.evidence

    def matrix(self) -> np.ndarray:
        if self.columns is None:
            raise ValueError("no evidence")
        if not self.ids:
            return np.zeros((len(self._evidence().flawed), 0), dtype=bool)
        return np.column_stack([self.columns[i] for i in self.ids])

    def after(self, op: Operation, index: int) -> GateState:
        """This state with one change applied."""
        ids, columns = list(self.ids), None if self.columns is None else dict(self.columns)
        if isinstance(op, (Delete, Edit)) and op.check_id not in ids:
            raise ValueError(f"operation {index} ({action_name(op)}) names check "
                             f"{op.check_id!r}, which the rubric does not hold at this point")
        if isinstance(op, Delete):
            ids.remove(op.check_id)
            if columns is not None:
                del columns[op.check_id]
        elif isinstance(op, Edit):
            if columns is not None:
                columns[op.check_id] = self._evidence().proposed(index)
        elif isinstance(op, Add):
            ids.append(f"+{index}")
            if columns is not None:
                columns[f"+{index}"] = self._evidence().proposed(index)
        return GateState(tuple(ids), self.origins, columns, self.evidence)

    def changed_id(self, op: Operation, index: int) -> str:
        return f"+{index}" if isinstance(op, Add) else op.check_id


Rule = Callable[[GateState, Operation, int], Decision]


@dataclass(frozen=True)
class SequentialGate:
    """Keeps accepted; each change decided by `rule` against the state the changes accepted
    before it leave, in the reviser's order."""

    name: str
    rule: Rule
    reads_evidence: bool = True  # False: decides the same whatever the evidence (none, P)

    def decide(self, rubric: Rubric, revision: Revision,
               evidence: GateEvidence | None) -> list[Decision]:
        state = GateState.start(rubric, evidence)
        decisions = []
        for index, op in enumerate(revision.ops):
            if isinstance(op, Keep):
                decisions.append(Decision(index, True, f"keep of {op.check_id}: not a change",
                                          reads_verdicts=False))
                continue
            decision = self.rule(state, op, index)
            if decision.op_index != index:
                raise ValueError(f"gate {self.name!r} decided operation {decision.op_index} "
                                 f"when asked about {index}")
            if decision.accepted:
                state = state.after(op, index)
            decisions.append(decision)
        return decisions


def _where(op: Operation) -> str:
    return "add" if isinstance(op, Add) else f"{action_name(op)} of {op.check_id}"


def _no_evidence(index: int, op: Operation, gate: str, needs: str) -> Decision:
    return Decision(index, False, f"{_where(op)}: Gate {gate} has no calibration evidence "
                                  f"({needs}); refused, the check stays as it was",
                    evidence=False, reads_verdicts=False)


# --- gate none ------------------------------------------------------------------------------

def accept_all(state: GateState, op: Operation, index: int) -> Decision:
    return Decision(index, True, "ungated", reads_verdicts=False)


# --- gate R ---------------------------------------------------------------------------------

def calibration_rule(state: GateState, op: Operation, index: int) -> Decision:
    """Gate R: accept iff the change does not lower calibration balanced accuracy."""
    evidence = state.evidence
    if evidence is None or not (evidence.has_flawed and evidence.has_correct):
        return _no_evidence(index, op, "R", "items of both labels")
    flawed = evidence.flawed
    before = rubric_balanced_accuracy(state.matrix(), flawed)
    after = rubric_balanced_accuracy(state.after(op, index).matrix(), flawed)
    accepted = after >= before
    verb = "keeps" if after == before else ("raises" if accepted else "lowers")
    reason = (f"{_where(op)} {verb} calibration balanced accuracy "
              f"{float(before):.3f} -> {float(after):.3f}")
    return Decision(index, accepted, reason)


def rubric_balanced_accuracy(fails: np.ndarray, flawed: np.ndarray) -> Fraction:
    """`aggregate.balanced_accuracy`, exact, of a rubric's fails matrix under all-must-pass
    (`aggregate.fails_any`): (correct items passed / correct + flawed items failed / flawed) / 2."""
    item_fails = fails_any(fails)
    correct_passed = Fraction(int(np.count_nonzero(~item_fails & ~flawed)),
                              int(np.count_nonzero(~flawed)))
    flawed_caught = Fraction(int(np.count_nonzero(item_fails & flawed)),
                             int(np.count_nonzero(flawed)))
    return balanced_accuracy(correct_passed, flawed_caught)


# --- gate P ---------------------------------------------------------------------------------

def provenance_rule(state: GateState, op: Operation, index: int) -> Decision:
    """Gate P: refuse editing or deleting a label-derived check; accept the rest."""
    if isinstance(op, (Edit, Delete)):
        origin = state.origins.get(op.check_id, "")
        if origin == LABEL_ORIGIN:
            return Decision(index, False, f"{_where(op)}: label-derived checks are frozen",
                            reads_verdicts=False)
        return Decision(index, True, f"{_where(op)} (origin {origin!r})", reads_verdicts=False)
    return Decision(index, True, f"{_where(op)} is not an edit or delete", reads_verdicts=False)


# --- gate S ---------------------------------------------------------------------------------

def shapley_rule(state: GateState, op: Operation, index: int,
                 tolerance: float = 0.0) -> Decision:
    """Gate S: keep unique catches, refuse false-fail blame (see the module docstring).

    `tolerance` t (a share in [0, 1); carry's gates run at 0) reads "> 0" as "> t x the items
    of the class the quantity counts": a deletion may lose up to t x the flawed calibration
    items' unique catches, an edit or add carry up to t x the correct items' blame. Above 0 a
    reason also states the share and the tolerance; at 0 the reasons are carry's own."""
    evidence = state.evidence
    if isinstance(op, Delete):
        if evidence is None or not evidence.has_flawed:
            return _no_evidence(index, op, "S", "flawed items")
        catches = shapley_attribution(state.matrix(), evidence.flawed)
        unique = int(catches.unique_catches[state.column(op.check_id)])
        n_flawed = int(evidence.flawed.sum())
        within = _within(unique, n_flawed, "flawed", tolerance)
        if unique > tolerance * n_flawed:
            return Decision(index, False, f"{_where(op)}: it holds {unique} unique catch(es)"
                                          f"{within}")
        kept = f"{unique} unique catch(es){within}" if tolerance else "no unique catch"
        return Decision(index, True, f"{_where(op)}: {kept}")
    if evidence is None or not evidence.has_correct:
        return _no_evidence(index, op, "S", "correct items")
    n_correct = int((~evidence.flawed).sum())
    after = state.after(op, index)
    column = after.column(after.changed_id(op, index))
    blame = float(shapley_attribution(after.matrix(), evidence.flawed).blame[column])
    within = _within(blame, n_correct, "correct", tolerance)
    if blame > tolerance * n_correct:
        return Decision(index, False, f"{_where(op)}: false-fail blame {blame:.3f}{within}")
    if tolerance:
        return Decision(index, True, f"{_where(op)}: false-fail blame {blame:.3f}{within}")
    return Decision(index, True, f"{_where(op)}: no false-fail blame")


def _within(amount: float, n: int, label: str, tolerance: float) -> str:
    """", x% of n <label> items, tolerance y%" above tolerance 0; nothing at 0."""
    if not tolerance:
        return ""
    return f", {100 * amount / n:.3g}% of {n} {label} items, tolerance {100 * tolerance:.3g}%"


# --- gate S+P -------------------------------------------------------------------------------

def shapley_and_provenance_rule(state: GateState, op: Operation, index: int,
                                s_rule: Rule = shapley_rule) -> Decision:
    """Gate S+P: accepted iff P and S (`s_rule`: carry's, or a variant of it) both accept; a
    change P refuses is P's refusal."""
    p = provenance_rule(state, op, index)
    if not p.accepted:
        return Decision(index, False, f"P: {p.reason}", reads_verdicts=False)
    s = s_rule(state, op, index)
    reason = f"S: {s.reason}" if not s.accepted else f"S: {s.reason}; P: {p.reason}"
    return Decision(index, s.accepted, reason, evidence=s.evidence,
                    reads_verdicts=s.reads_verdicts)


GATES: dict[str, SequentialGate] = {
    "none": SequentialGate("none", accept_all, reads_evidence=False),
    "R": SequentialGate("R", calibration_rule),
    "P": SequentialGate("P", provenance_rule, reads_evidence=False),
    "S": SequentialGate("S", shapley_rule),
    "S+P": SequentialGate("S+P", shapley_and_provenance_rule),
}


def get_gate(name: str) -> SequentialGate:
    try:
        return GATES[name]
    except KeyError:
        raise ValueError(f"unknown gate {name!r}; known gates: {', '.join(GATES)}") from None
