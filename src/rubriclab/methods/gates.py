"""Whether a proposed revision of a rubric should be accepted, change by change: the gates.

A thin layer over carry's gates (rubriclab.carry.gates; the rules are described there): it
reads the rubric and its revision from one table, the judge's calibration verdicts on the
current and the proposed texts from another, and returns every gate's decisions with their
reasons and the rubric each gate leaves.

Gate S's tolerance. carry's Gate S refuses a deletion that loses any unique catch and an edit
or add whose text carries any false-fail blame: on a large calibration set nearly every change
loses or adds something, and every change is refused. `tolerance` t (a share, default 0) lets
S accept a deletion whose unique catches are at most t times the flawed calibration items, and
an edit or add whose blame is at most t times the correct ones. At t = 0 the gates are carry's
own, unchanged; above 0, S and S+P decide with carry's `shapley_rule` given the tolerance (P, R
and none do not read the tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from rubriclab.carry.gates import (
    GATES, GateEvidence, SequentialGate, get_gate, shapley_and_provenance_rule, shapley_rule,
)
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, NoChecksLeft, Operation, Revision, Rubric, RubricCheck,
    apply_revision,
)
from rubriclab.methods import tables
from rubriclab.methods.attribution import verdict_matrix
from rubriclab.methods.formatting import pipe_table
from rubriclab.methods.tables import InputError

ACTIONS = ("keep", "edit", "delete", "add")
VERSIONS = ("current", "proposed")
DEFAULT_GATES = ("R", "P", "S", "S+P")
DECISION_COLUMNS = ["gate", "step", "action", "check_id", "accepted", "reason", "evidence"]
RUBRIC_COLUMNS = ["gate", "checks"]
REVISER = "the proposal"


@dataclass(frozen=True)
class GateResult:
    """What `gate` returns.

    decisions: one row per gate and step of the revision (steps numbered from 1 in the
        revision's order): gate, step, action, check_id, accepted (bool), reason, evidence
        (False where the gate had no calibration evidence for the change and refused it).
    rubrics: one row per gate: the check ids the rubric keeps once the gate's accepted
        changes are applied ("(none)" if none is left), an edited check marked "*".
    """

    decisions: pd.DataFrame
    rubrics: pd.DataFrame

    def markdown(self) -> str:
        rows = [[r.gate, r.step, r.action, r.check_id, "accept" if r.accepted else "refuse",
                 r.reason] for r in self.decisions.itertuples(index=False)]
        after = [[r.gate, r.checks] for r in self.rubrics.itertuples(index=False)]
        return "\n".join([
            *pipe_table(["gate", "step", "change", "check", "decision", "reason"], rows), "",
            *pipe_table(["gate", "rubric after the accepted changes"], after),
        ])


def gate(revision: pd.DataFrame, verdicts: pd.DataFrame, labels: pd.DataFrame, *,
         proposed: pd.DataFrame | None = None,
         gates: Sequence[str] = DEFAULT_GATES, tolerance: float = 0.0) -> GateResult:
    """Every gate's decision on every change of a proposed revision.

    revision: one row per step, in the proposer's order: ``check_id``, ``origin``, ``action``
        (keep, edit, delete or add) and ``new_text`` (the text an edit or an add proposes;
        may be empty otherwise). Every check of the current rubric has one keep, edit or
        delete row, with its origin ("label" marks a check derived from calibration labels,
        which Gate P freezes); an add row names the new check's id, which no current check
        has. An optional ``text`` column holds the current texts (not read by any gate).
    verdicts: the judge on the calibration items, one row per (item, check, version):
        ``item_id``, ``check_id``, ``verdict`` (pass or fail) and an optional ``version``:
        "current" (the default) for a check's present text, "proposed" for an edit's new text;
        an add's verdicts are under its id, either version.
    proposed: the verdicts of the proposed texts (edits and adds, under the step's check_id)
        in a table of their own (``item_id``, ``check_id``, ``verdict``); `verdicts` then holds
        the current texts' only, and neither needs a ``version`` column.
    labels: ``item_id``, ``label`` (correct or flawed) of every calibration item.
    gates: names among rubriclab.carry.gates.GATES (none, R, P, S, S+P).
    tolerance: Gate S's (and S+P's) tolerance, a share in [0, 1): the unique catches a deletion
        may lose, as a share of the flawed calibration items, and the false-fail blame an edit
        or add may carry, as a share of the correct ones. 0 (the default) is carry's rule.

    Raises `InputError` naming the column at fault.
    """
    unknown = [name for name in gates if name not in GATES]
    if unknown:
        raise ValueError(f"unknown gate(s) {unknown}; gates: {', '.join(GATES)}")
    if isinstance(tolerance, bool) or not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be a share in [0, 1), got {tolerance!r}")
    rubric, ops, step_ids = read_revision(revision)
    evidence = gate_evidence(rubric, ops, step_ids, verdicts, labels, proposed)
    proposal = Revision(ops=tuple(ops), round=1, reviser=REVISER, mode="free")
    decision_rows, rubric_rows = [], []
    for name in gates:
        decisions = _gate(name, tolerance).decide(rubric, proposal, evidence)
        for decision in decisions:
            op = ops[decision.op_index]
            decision_rows.append({
                "gate": name, "step": decision.op_index + 1, "action": _action(op),
                "check_id": step_ids[decision.op_index], "accepted": decision.accepted,
                "reason": _named(decision.reason, step_ids, decision.op_index, op),
                "evidence": decision.evidence})
        accepted = [d.op_index for d in decisions if d.accepted]
        rubric_rows.append({"gate": name,
                            "checks": _rubric_after(rubric, proposal, accepted, ops, step_ids)})
    return GateResult(pd.DataFrame(decision_rows, columns=DECISION_COLUMNS),
                      pd.DataFrame(rubric_rows, columns=RUBRIC_COLUMNS))


def _gate(name: str, tolerance: float) -> SequentialGate:
    """carry's gate `name`, or, above tolerance 0, S and S+P with S's rule given the tolerance."""
    if tolerance == 0 or name not in ("S", "S+P"):
        return get_gate(name)
    s_rule = partial(shapley_rule, tolerance=tolerance)
    if name == "S":
        return SequentialGate(name, s_rule)
    return SequentialGate(name, partial(shapley_and_provenance_rule, s_rule=s_rule))


def read_revision(revision: pd.DataFrame, name: str = "revision"
                  ) -> tuple[Rubric, list, list[str]]:
    """(current rubric, operations, the check id of each step) from the revision table."""
    source = tables.require_columns(revision, ["check_id", "origin", "action", "new_text"], name)
    check_ids = tables.ids(revision, "check_id", source)
    actions = tables.one_of(revision, "action", source, ACTIONS)
    origins = revision["origin"].map(_text)
    new_texts = revision["new_text"].map(_text)
    texts = revision["text"].map(_text) if "text" in revision.columns else \
        pd.Series("", index=revision.index)
    tables.unique_rows(pd.DataFrame({"check_id": check_ids}), source, "check_id", "check")
    checks: list[RubricCheck] = []
    ops: list[Operation] = []
    for position, (check_id, action, origin, new_text, text) in enumerate(
            zip(check_ids, actions, origins, new_texts, texts)):
        if action in ("edit", "add") and not new_text:
            raise InputError(source.name, "new_text",
                             f"{source.row(position)}: an {action} needs the text it proposes")
        if action == "add":
            ops.append(Add(new_text))
            continue
        checks.append(RubricCheck(check_id, text, origin))
        keep_or_delete: dict[str, type[Keep] | type[Delete]] = {"keep": Keep, "delete": Delete}
        ops.append(keep_or_delete[action](check_id) if action != "edit"
                   else Edit(check_id, new_text))
    if not checks:
        raise InputError(source.name, "action", "every row is an add: the current rubric's "
                                                "checks need keep, edit or delete rows")
    return Rubric(name="rubric", checks=tuple(checks)), ops, list(check_ids)


def gate_evidence(rubric: Rubric, ops: list, step_ids: list[str], verdicts: pd.DataFrame,
                  labels: pd.DataFrame, proposed: pd.DataFrame | None = None) -> GateEvidence:
    """The calibration verdicts as carry's GateEvidence (fails of current and proposed texts).

    Verdicts of proposed texts come from `proposed` when it is given, else from the rows of
    `verdicts` whose version is "proposed" (and an add's rows, under its own id).
    """
    adds = {step_ids[i] for i, op in enumerate(ops) if isinstance(op, Add)}
    if proposed is None:
        fails, source = _versioned_fails(verdicts, labels, step_ids, adds)
        proposed_source = source
    else:
        fails, source = _fails(verdicts, labels, "verdicts", step_ids, "current")
        more, proposed_source = _fails(proposed, labels, "proposed", step_ids, "proposed")
        fails.update(more)

    def needed(check_id: str, version: str, why: str) -> np.ndarray:
        key = _versioned(check_id, version)
        if key not in fails:
            where = proposed_source if version == "proposed" else source
            column = "version" if version == "proposed" and proposed is None else "check_id"
            raise InputError(where.name, column,
                             f"no verdicts of the {version} text of check {check_id!r} ({why})")
        return fails[key]

    flawed = tables.flawed_labels(labels, "label", tables.source_of(labels, "labels"))
    current = {c.id: needed(c.id, "current", "a check of the current rubric")
               for c in rubric.checks}
    proposals = {i: needed(step_ids[i], "proposed", f"step {i + 1} is an {_action(op)}")
                 for i, op in enumerate(ops) if isinstance(op, (Edit, Add))}
    return GateEvidence(flawed=flawed.to_numpy(dtype=bool), current_fails=current,
                        proposed_fails=proposals)


def _fails(frame: pd.DataFrame, labels: pd.DataFrame, name: str, step_ids: list[str],
           version: str) -> tuple[dict[str, np.ndarray], tables.Source]:
    """{versioned check id: fails over the labelled items} of one verdict table."""
    source = tables.require_columns(frame, ["item_id", "check_id", "verdict"], name)
    _known_checks(frame, source, step_ids)
    matrix = verdict_matrix(frame, labels, verdicts_name=name)
    return ({_versioned(c, version): matrix.fails[:, k] for k, c in enumerate(matrix.check_ids)},
            source)


def _versioned_fails(verdicts: pd.DataFrame, labels: pd.DataFrame, step_ids: list[str],
                     adds: set[str]) -> tuple[dict[str, np.ndarray], tables.Source]:
    """`_fails` of a table whose optional `version` column tells current from proposed."""
    source = tables.require_columns(verdicts, ["item_id", "check_id", "verdict"], "verdicts")
    versions = (tables.one_of(verdicts, "version", source, VERSIONS)
                if "version" in verdicts.columns else pd.Series("current", index=verdicts.index))
    check_ids = _known_checks(verdicts, source, step_ids)
    # One matrix column per (check, version); an add's verdicts are its proposed text's.
    renamed = verdicts.assign(check_id=[_versioned(c, "proposed" if c in adds else v)
                                        for c, v in zip(check_ids, versions)])
    renamed.attrs = verdicts.attrs
    matrix = verdict_matrix(renamed, labels, verdicts_name="verdicts")
    return {c: matrix.fails[:, k] for k, c in enumerate(matrix.check_ids)}, source


def _known_checks(frame: pd.DataFrame, source: tables.Source, step_ids: list[str]) -> pd.Series:
    check_ids = tables.ids(frame, "check_id", source)
    known = set(step_ids)
    for position, check in enumerate(check_ids):
        if check not in known:
            raise InputError(source.name, "check_id",
                             f"{source.row(position)}: check {check!r} is not in the revision")
    return check_ids


def _rubric_after(rubric: Rubric, proposal: Revision, accepted: list[int], ops: list,
                  step_ids: list[str]) -> str:
    try:
        after = apply_revision(rubric, proposal, accepted)
    except NoChecksLeft:
        return "(none)"
    # apply_revision names added checks r1-add<n> (n counting adds); show the user's ids.
    add_ids = [step_ids[i] for i, op in enumerate(ops) if isinstance(op, Add)]
    edited = {ops[i].check_id for i in accepted if isinstance(ops[i], Edit)}
    shown = []
    for check in after.checks:
        if check.id.startswith("r1-add"):
            shown.append(add_ids[int(check.id.removeprefix("r1-add")) - 1])
        else:
            shown.append(f"{check.id}*" if check.id in edited else check.id)
    return ", ".join(shown)


def _named(reason: str, step_ids: list[str], index: int, op) -> str:
    """carry's reasons name an added check by its position ("+3"); use the user's id."""
    return reason.replace(f"+{index}", step_ids[index]) if isinstance(op, Add) else reason


def _versioned(check_id: str, version: str) -> str:
    """The verdict matrix's name for a check's current or proposed text (errors show it)."""
    return check_id if version == "current" else f"{check_id} (proposed)"


def _action(op) -> str:
    return type(op).__name__.lower()


def _text(value) -> str:
    return "" if tables._missing(value) else str(value).strip()
