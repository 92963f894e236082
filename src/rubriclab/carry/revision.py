"""Self-review of a rubric: per-check operations, their parsing, application, and chains.

A reviser model is shown the rubric and answers in the "rubric_revision" response format
(`rubriclab.llm.formats`): one entry per existing check (keep, edit with new text, delete)
plus add entries for new checks. `parse_revision` checks that answer against the rubric and
the revision mode and turns it into a `Revision`; anything it cannot accept is a
`RevisionRejected` with a reason, which a chain counts and never applies.

Modes (what the reviser is allowed to propose):
    free         any keep, edit, delete and add.
    fixed_count  the rubric keeps its number of checks: edits are allowed, and as many adds
                 as deletes.
    delete_only  only keep and delete.
Every mode: the proposal must leave at least one check. The mode constrains the proposal;
a gate may then refuse some of its operations, so a gated fixed-count round can change the
count (a delete accepted, its paired add refused).

Applying a revision (`apply_revision`) with some operations accepted:
    keep    accepted: the check stays as it is.  refused: the check is removed (no gate of
            `rubriclab.carry.gates` refuses a keep: a keep is not a change).
    edit    accepted: same id and origin, new text, lineage gains "r<round>: edit by <reviser>".
            refused: the check stays as it was.
    delete  accepted: the check disappears.  refused: the check stays as it was.
    add     accepted: a new check "r<round>-add<n>" (n counts the revision's add entries,
            accepted or not, so an added check has the same id under every gate), origin
            "review by <reviser> of <start>" (the chain's start source; "review by
            <reviser>" where it is not given), lineage ("r<round>: add by <reviser>",), after the
            existing checks.  refused: nothing is added.
Existing checks keep their order; an edit whose text equals the current text (up to
whitespace) is read as a keep.

No model is called here: `run_chain` takes a `propose` callable (which may call a model and
return `revision_from_answer(...)`) and an optional gate with an evidence callable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Union

from rubriclab.carry.checklists import Check, Checklist
from rubriclab.llm.formats import UnparseableAnswer, get_format

MODES = ("free", "fixed_count", "delete_only")
REVISION_FORMAT = "rubric_revision"
# A round may add at most this many checks (every mode). It bounds what a local model may
# write (its grammar) so that a model repeating itself stops; 5 is more than any round of
# a 6-10 check rubric needs.
MAX_ADDS_PER_ROUND = 5
LABEL_ORIGIN = "label"
REJECTION_KINDS = ("rejected", "unparseable")


# --- rubrics with lineage -------------------------------------------------------------------

@dataclass(frozen=True)
class RubricCheck:
    """A check with where it came from (origin) and every revision step that changed it."""

    id: str
    text: str
    origin: str
    lineage: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "lineage", tuple(self.lineage))

    def as_check(self) -> Check:
        return Check(id=self.id, text=self.text, origin=self.origin)


@dataclass(frozen=True)
class Rubric:
    """An ordered, non-empty tuple of checks with unique ids."""

    name: str
    checks: tuple[RubricCheck, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))
        if not self.checks:
            raise ValueError(f"rubric {self.name!r} has no checks")
        ids = self.ids
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"rubric {self.name!r} has duplicate check ids: {duplicates}")

    def __len__(self) -> int:
        return len(self.checks)

    @property
    def ids(self) -> list[str]:
        return [check.id for check in self.checks]

    def check(self, check_id: str) -> RubricCheck:
        for check in self.checks:
            if check.id == check_id:
                return check
        raise KeyError(f"rubric {self.name!r} has no check {check_id!r}")

    @classmethod
    def from_checklist(cls, checklist: Checklist) -> Rubric:
        checks = tuple(RubricCheck(c.id, c.text, c.origin) for c in checklist.checks)
        return cls(name=checklist.name, checks=checks)

    def to_checklist(self, task_description: str) -> Checklist:
        """The checklist a judge applies (origin kept, lineage dropped)."""
        return Checklist(name=self.name, checks=tuple(c.as_check() for c in self.checks),
                         task_description=task_description)


# --- operations and revisions ---------------------------------------------------------------

@dataclass(frozen=True)
class Keep:
    check_id: str


@dataclass(frozen=True)
class Edit:
    check_id: str
    new_text: str


@dataclass(frozen=True)
class Delete:
    check_id: str


@dataclass(frozen=True)
class Add:
    new_text: str


Operation = Union[Keep, Edit, Delete, Add]


@dataclass(frozen=True)
class Revision:
    """The operations one reviser proposed in one round, in the order it gave them."""

    ops: tuple[Operation, ...]
    round: int
    reviser: str
    mode: str
    start: str = ""  # the chain's start rubric source (hand, generated, label), "" if unknown

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))
        if self.mode not in MODES:
            raise ValueError(f"unknown revision mode {self.mode!r}; known: {', '.join(MODES)}")


class NoChecksLeft(ValueError):
    """Applying the accepted operations would leave a rubric without checks."""


class RevisionRejected(Exception):
    """A reviser's answer that is not applied: unparseable, or not a valid revision."""

    def __init__(self, reason: str, kind: str = "rejected"):
        if kind not in REJECTION_KINDS:
            raise ValueError(f"unknown rejection kind {kind!r}; known: {REJECTION_KINDS}")
        super().__init__(reason)
        self.reason = reason
        self.kind = kind

    def __repr__(self) -> str:
        return f"RevisionRejected({self.reason!r}, kind={self.kind!r})"


# --- from the reviser's answer to a revision ------------------------------------------------

def revision_from_answer(text: str, rubric: Rubric, mode: str, round: int,
                         reviser: str, start: str = "") -> Revision | RevisionRejected:
    """The reviser's raw answer parsed and checked; a RevisionRejected (returned) otherwise."""
    try:
        parsed = get_format(revision_format_name(rubric)).parse(text)
    except UnparseableAnswer as exc:
        return RevisionRejected(str(exc), kind="unparseable")
    try:
        return parse_revision(parsed, rubric, mode, round, reviser, start)
    except RevisionRejected as rejected:
        return rejected


def revision_format_name(rubric: Rubric) -> str:
    """The response format of a revision of `rubric`: its checks plus MAX_ADDS_PER_ROUND adds."""
    return f"{REVISION_FORMAT}_{len(rubric) + MAX_ADDS_PER_ROUND}"


def parse_revision(parsed_json: Mapping[str, Any], rubric: Rubric, mode: str, round: int,
                   reviser: str, start: str = "") -> Revision:
    """A Revision from the parsed "rubric_revision" answer; raise RevisionRejected if invalid.

    Rejected: an entry of the wrong shape (kind "unparseable"); an id not in the rubric, a
    check mentioned twice or not at all; an operation the mode forbids; a proposal that
    leaves no check.
    """
    if mode not in MODES:
        raise ValueError(f"unknown revision mode {mode!r}; known: {', '.join(MODES)}")
    ops = [_operation_from_entry(entry) for entry in _entries(parsed_json)]
    _require_each_check_once(ops, rubric)
    ops = [_unchanged_edit_as_keep(op, rubric) for op in ops]
    _require_mode(ops, mode, len(rubric))
    _require_a_check_left(ops)
    return Revision(ops=tuple(ops), round=round, reviser=reviser, mode=mode, start=start)


def _entries(parsed_json: Mapping[str, Any]) -> list[Any]:
    entries = parsed_json.get("checks") if isinstance(parsed_json, Mapping) else None
    if not isinstance(entries, list):
        raise RevisionRejected('the revision needs a list "checks"', kind="unparseable")
    return entries


def _operation_from_entry(entry: Any) -> Operation:
    if not isinstance(entry, Mapping):
        raise RevisionRejected(f"entry {entry!r} is not an object", kind="unparseable")
    action: Any = entry.get("action")
    check_id: Any = entry.get("id")
    text: Any = entry.get("text")
    if action in ("keep", "delete", "edit") and not _is_text(check_id):
        raise RevisionRejected(f"{action} entry {dict(entry)!r} has no id", kind="unparseable")
    if action in ("edit", "add") and not _is_text(text):
        raise RevisionRejected(f"{action} entry {dict(entry)!r} has no text",
                               kind="unparseable")
    if action == "keep":
        return Keep(check_id)
    if action == "delete":
        return Delete(check_id)
    if action == "edit":
        return Edit(check_id, text.strip())
    if action == "add":
        if check_id is not None:
            raise RevisionRejected(f"add entry {dict(entry)!r} must not have an id",
                                   kind="unparseable")
        return Add(text.strip())
    raise RevisionRejected(f"unknown action {action!r}", kind="unparseable")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _require_each_check_once(ops: list[Operation], rubric: Rubric) -> None:
    mentioned = [op.check_id for op in ops if not isinstance(op, Add)]
    unknown = sorted(set(mentioned) - set(rubric.ids))
    if unknown:
        raise RevisionRejected(f"unknown check id(s) {unknown}; the rubric has {rubric.ids}")
    twice = sorted({i for i in mentioned if mentioned.count(i) > 1})
    if twice:
        raise RevisionRejected(f"check(s) {twice} mentioned more than once")
    missing = [i for i in rubric.ids if i not in mentioned]
    if missing:
        raise RevisionRejected(f"check(s) {missing} not mentioned")


def _unchanged_edit_as_keep(op: Operation, rubric: Rubric) -> Operation:
    if isinstance(op, Edit) and _same_text(op.new_text, rubric.check(op.check_id).text):
        return Keep(op.check_id)
    return op


def _same_text(a: str, b: str) -> bool:
    return a.split() == b.split()


def _require_mode(ops: list[Operation], mode: str, n_checks: int) -> None:
    counts = _count_actions(ops)
    if counts["add"] > MAX_ADDS_PER_ROUND:
        raise RevisionRejected(f"{counts['add']} adds; a round may add at most "
                               f"{MAX_ADDS_PER_ROUND} checks")
    if mode == "delete_only" and (counts["edit"] or counts["add"]):
        raise RevisionRejected(
            f"delete_only allows only keep and delete; got {counts['edit']} edit(s) and "
            f"{counts['add']} add(s)"
        )
    if mode == "fixed_count" and counts["add"] != counts["delete"]:
        after = n_checks - counts["delete"] + counts["add"]
        raise RevisionRejected(
            f"fixed_count must keep {n_checks} checks; {counts['delete']} delete(s) and "
            f"{counts['add']} add(s) leave {after}"
        )


def _require_a_check_left(ops: list[Operation]) -> None:
    if not any(isinstance(op, (Keep, Edit, Add)) for op in ops):
        raise RevisionRejected("the revision deletes every check and adds none")


def _count_actions(ops: Iterable[Operation]) -> dict[str, int]:
    counts = {"keep": 0, "edit": 0, "delete": 0, "add": 0}
    for op in ops:
        counts[action_name(op)] += 1
    return counts


def action_name(op: Operation) -> str:
    return {Keep: "keep", Edit: "edit", Delete: "delete", Add: "add"}[type(op)]


# --- the reviser's prompt -------------------------------------------------------------------

REVISER_SYSTEM_PROMPT = (
    "You review grading checklists. A checklist is a list of yes/no checks that a judge "
    "applies to an output; the output passes only if it meets every check."
)

_KEEP_EDIT_DELETE_ADD = (
    '{"checks": [{"id": "<id>", "action": "keep"}, '
    '{"id": "<id>", "action": "edit", "text": "<new text of the check>"}, '
    '{"id": "<id>", "action": "delete"}, '
    '{"action": "add", "text": "<text of a new check>"}]}'
)
_KEEP_DELETE = '{"checks": [{"id": "<id>", "action": "keep"}, {"id": "<id>", "action": "delete"}]}'


def mode_instruction(mode: str, n_checks: int) -> str:
    """The sentence that states what the reviser may change."""
    if mode == "free":
        return ("You may keep, edit or delete any check, and you may add up to "
                f"{MAX_ADDS_PER_ROUND} new checks.")
    if mode == "fixed_count":
        return (
            f"The checklist must keep exactly {n_checks} checks: you may keep or edit any "
            "check, and you may delete a check only if you add one new check for each check "
            "you delete."
        )
    if mode == "delete_only":
        return ("You may only keep or delete checks: do not edit any check and do not add "
                "new checks. At least one check must remain.")
    raise ValueError(f"unknown revision mode {mode!r}; known: {', '.join(MODES)}")


def answer_instruction(mode: str) -> str:
    """The JSON shape of the answer, with only the actions the mode allows."""
    if mode == "delete_only":
        return (
            "Answer with exactly one JSON object and nothing else (no code fence, no prose), "
            f"of the form {_KEEP_DELETE}. Mention every check exactly once, by its id, with "
            'the action "keep" or "delete".'
        )
    return (
        "Answer with exactly one JSON object and nothing else (no code fence, no prose), of "
        f"the form {_KEEP_EDIT_DELETE_ADD}. Mention every existing check exactly once, by its "
        'id, with the action "keep", "edit" (give the full new text) or "delete". Give each '
        'new check as {"action": "add", "text": "..."}, without an id.'
    )


def revision_messages(task_description: str, rubric: Rubric, mode: str) -> list[dict]:
    """Chat messages asking the reviser to review and improve `rubric` within `mode`."""
    listing = "\n".join(f"[{check.id}] {check.text}" for check in rubric.checks)
    user = (
        f"Each output graded with the checklist below is {task_description}.\n\n"
        f"Checklist:\n{listing}\n\n"
        "Review this checklist and improve it. "
        f"{mode_instruction(mode, len(rubric))}\n\n"
        f"{answer_instruction(mode)}"
    )
    return [{"role": "system", "content": REVISER_SYSTEM_PROMPT},
            {"role": "user", "content": user}]


# --- applying a revision --------------------------------------------------------------------

def apply_revision(rubric: Rubric, revision: Revision,
                   accepted: Iterable[int] | None = None) -> Rubric:
    """The rubric after the accepted operations (indices into revision.ops; default all).

    See the module docstring for what an accepted and a refused operation of each kind do.
    Raises ValueError for an index out of range or an operation on a check the rubric lacks,
    and NoChecksLeft (a ValueError) for a result with no checks.
    """
    accepted_set = _accepted_indices(revision, accepted)
    ops_by_check = _ops_by_check(rubric, revision)
    checks: list[RubricCheck] = []
    for check in rubric.checks:
        index, op = ops_by_check.get(check.id, (None, Keep(check.id)))
        is_accepted = index is None or index in accepted_set
        checks.extend(_revised_check(check, op, is_accepted, revision))
    checks.extend(_added_checks(rubric, revision, accepted_set))
    if not checks:
        raise NoChecksLeft(f"the accepted operations of round {revision.round} leave no checks")
    return Rubric(name=rubric.name, checks=tuple(checks))


def _accepted_indices(revision: Revision, accepted: Iterable[int] | None) -> set[int]:
    all_indices = set(range(len(revision.ops)))
    if accepted is None:
        return all_indices
    chosen = set(accepted)
    outside = sorted(chosen - all_indices)
    if outside:
        raise ValueError(f"accepted indices {outside} are not operations of the revision "
                         f"({len(revision.ops)} operations)")
    return chosen


def _ops_by_check(rubric: Rubric, revision: Revision) -> dict[str, tuple[int, Operation]]:
    by_check: dict[str, tuple[int, Operation]] = {}
    for index, op in enumerate(revision.ops):
        if isinstance(op, Add):
            continue
        if op.check_id not in rubric.ids:
            raise ValueError(f"operation {index} ({op}) names a check the rubric lacks")
        if op.check_id in by_check:
            raise ValueError(f"check {op.check_id!r} has more than one operation")
        by_check[op.check_id] = (index, op)
    return by_check


def _revised_check(check: RubricCheck, op: Operation, is_accepted: bool,
                   revision: Revision) -> list[RubricCheck]:
    if isinstance(op, Keep):
        return [check] if is_accepted else []
    if isinstance(op, Delete):
        return [] if is_accepted else [check]
    if isinstance(op, Edit) and is_accepted:
        step = f"r{revision.round}: edit by {revision.reviser}"
        return [replace(check, text=op.new_text, lineage=check.lineage + (step,))]
    return [check]


def _added_checks(rubric: Rubric, revision: Revision, accepted: set[int]) -> list[RubricCheck]:
    taken = set(rubric.ids)
    added = []
    adds = [(index, op) for index, op in enumerate(revision.ops) if isinstance(op, Add)]
    for number, (index, op) in enumerate(adds, start=1):
        check_id = _fresh_id(f"r{revision.round}-add{number}", taken)
        taken.add(check_id)
        if index in accepted:
            added.append(RubricCheck(
                id=check_id, text=op.new_text, origin=review_origin(revision.reviser,
                                                                    revision.start),
                lineage=(f"r{revision.round}: add by {revision.reviser}",),
            ))
    return added


def review_origin(reviser: str, start: str = "") -> str:
    """The origin of a check a reviser added: "review by <reviser> of <start>" (the start
    rubric of its chain), or "review by <reviser>" where the start is not known."""
    return f"review by {reviser} of {start}" if start else f"review by {reviser}"


def _fresh_id(base: str, taken: set[str]) -> str:
    candidate, suffix = base, 1
    while candidate in taken:
        suffix += 1
        candidate = f"{base}.{suffix}"
    return candidate


# --- chains ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """A gate's decision on one operation of a revision (`rubriclab.carry.gates`)."""

    op_index: int
    accepted: bool
    reason: str
    evidence: bool = True  # False: the gate had no evidence for this change and refused it
    # False: decided without reading the judge's verdicts (a keep, the ungated replay, Gate P's
    # origin rule, a refusal for want of evidence), so no judge could have decided it otherwise
    reads_verdicts: bool = True


class Gate(Protocol):
    """What a chain needs of a gate (`rubriclab.carry.gates` builds them; this module does
    not import it, so the two modules do not import each other)."""

    @property
    def name(self) -> str: ...

    def decide(self, rubric: Rubric, revision: Revision, evidence: Any) -> list[Decision]: ...


@dataclass(frozen=True)
class ChainRound:
    """One round: what was proposed, what the gate decided, and the rubric after it.

    `accepted` holds the indices of the operations applied (all of them when ungated, none
    when the proposal was rejected).
    """

    round: int
    proposal: Revision | RevisionRejected
    decisions: tuple[Decision, ...]
    accepted: frozenset[int]
    rubric: Rubric

    @property
    def rejected(self) -> bool:
        return isinstance(self.proposal, RevisionRejected)

    @property
    def unparseable(self) -> bool:
        return isinstance(self.proposal, RevisionRejected) and self.proposal.kind == "unparseable"


@dataclass(frozen=True)
class ChainResult:
    start: Rubric
    gate: str
    rounds: tuple[ChainRound, ...] = field(default_factory=tuple)

    @property
    def final(self) -> Rubric:
        return self.rounds[-1].rubric if self.rounds else self.start

    @property
    def n_unparseable(self) -> int:
        return sum(r.unparseable for r in self.rounds)

    @property
    def n_rejected(self) -> int:
        """Proposals not applied because they were not valid revisions (unparseable apart)."""
        return sum(r.rejected and not r.unparseable for r in self.rounds)

    def rubric_after(self, round: int) -> Rubric:
        """The rubric after `round` (0: the start)."""
        if round == 0:
            return self.start
        for chain_round in self.rounds:
            if chain_round.round == round:
                return chain_round.rubric
        raise KeyError(f"the chain has no round {round}")


Propose = Callable[[Rubric, int], Union[Revision, RevisionRejected]]
EvidenceFor = Callable[[Rubric, Revision], Any]  # -> gates.GateEvidence


def run_chain(start: Rubric, rounds: int, propose: Propose, gate: Gate | None = None,
              evidence: EvidenceFor | None = None) -> ChainResult:
    """Rounds 1..`rounds` of propose -> (gate) -> apply, starting from `start`.

    `propose(rubric, round)` returns (or raises) a Revision or a RevisionRejected. A rejected
    or unparseable proposal is recorded and counted, and the rubric stays as it was that
    round. With a gate, `evidence(rubric, revision)` (if given) supplies the gate's evidence
    and only the operations it accepts are applied; if those would leave no checks, the round
    is recorded as rejected and the rubric stays as it was.
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    rubric = start
    recorded: list[ChainRound] = []
    for round_number in range(1, rounds + 1):
        chain_round = _run_round(rubric, round_number, propose, gate, evidence)
        recorded.append(chain_round)
        rubric = chain_round.rubric
    return ChainResult(start=start, gate=gate.name if gate is not None else "none",
                       rounds=tuple(recorded))


def _run_round(rubric: Rubric, round_number: int, propose: Propose, gate: Gate | None,
               evidence: EvidenceFor | None) -> ChainRound:
    proposal = _proposal(rubric, round_number, propose)
    if isinstance(proposal, RevisionRejected):
        return ChainRound(round_number, proposal, (), frozenset(), rubric)
    decisions: tuple[Decision, ...] = ()
    accepted = frozenset(range(len(proposal.ops)))
    if gate is not None:
        gate_evidence = evidence(rubric, proposal) if evidence is not None else None
        decisions = tuple(gate.decide(rubric, proposal, gate_evidence))
        accepted = _accepted_by(decisions, len(proposal.ops), gate.name)
    try:
        revised = apply_revision(rubric, proposal, accepted)
    except NoChecksLeft as exc:
        rejected = RevisionRejected(f"not applied: {exc}")
        return ChainRound(round_number, rejected, decisions, frozenset(), rubric)
    return ChainRound(round_number, proposal, decisions, accepted, revised)


def _proposal(rubric: Rubric, round_number: int,
              propose: Propose) -> Revision | RevisionRejected:
    try:
        proposal = propose(rubric, round_number)
    except RevisionRejected as rejected:
        return rejected
    if isinstance(proposal, Revision) and proposal.round != round_number:
        raise ValueError(f"propose returned a revision for round {proposal.round} "
                         f"in round {round_number}")
    if not isinstance(proposal, (Revision, RevisionRejected)):
        raise TypeError(f"propose must return a Revision or RevisionRejected, got {proposal!r}")
    return proposal


def _accepted_by(decisions: tuple[Decision, ...], n_ops: int, gate_name: str) -> frozenset[int]:
    indices = sorted(decision.op_index for decision in decisions)
    if indices != list(range(n_ops)):
        raise ValueError(f"gate {gate_name!r} must decide each of the {n_ops} operations "
                         f"exactly once; it decided {indices}")
    return frozenset(d.op_index for d in decisions if d.accepted)
