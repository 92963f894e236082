"""Gate replay of carry's recorded self-review chains: each recorded proposal decided by a
gate with evidence from the judge's verdicts on the gate items (`replay_chain`), the table
of its decisions, and the check that an ungated replay gives the rubrics a record holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import FAIL, UNDETERMINED
from rubriclab.carry.experiment import Verdicts, items_in_scope, revision_from_record
from rubriclab.carry.gates import Decision, GateEvidence, get_gate
from rubriclab.carry.revision import (
    Add, ChainResult, Edit, Keep, Operation, Revision, RevisionRejected, Rubric, run_chain,
)
from rubriclab.carry.sources import rubric_from_dict, rubric_to_dict


def adapt_revision(recorded: Revision, rubric: Rubric) -> Revision:
    """A recorded proposal made for the ungated rubric, applied to a gated one.

    Operations on checks the gated rubric does not hold (an add an earlier gate refused, a
    check it already removed) are dropped; checks of the gated rubric the proposal never
    mentions (the reviser had deleted them from its own rubric) get an explicit keep, which
    the gate decides like any keep. Adds stay in order, so they get the same ids.
    """
    held = set(rubric.ids)
    ops: list[Operation] = []
    mentioned = set()
    for op in recorded.ops:
        if isinstance(op, Add):
            ops.append(op)
        elif op.check_id in held:
            ops.append(op)
            mentioned.add(op.check_id)
    ops += [Keep(check_id) for check_id in rubric.ids if check_id not in mentioned]
    return Revision(ops=tuple(ops), round=recorded.round, reviser=recorded.reviser,
                    mode=recorded.mode, start=recorded.start)


class EvidenceSource:
    """Gate evidence: the judge's verdicts on the gate items (labelled, in the rubric's scope),
    less the items left out (`without`).

    The verdict codes of a scope's gate items on a check text are looked up once and shared
    by every source made from this one with `without`: a leave-one-report-out replay costs
    array indexing, not a lookup per item and check.
    """

    def __init__(self, verdicts: Verdicts, items: pd.DataFrame,
                 left_out: Iterable[str] = (), _shared: _Shared | None = None):
        self.verdicts = verdicts
        self.items = items  # gate items: item_id, label, scope (before anything is left out)
        self.left_out = frozenset(left_out)
        self._shared = _Shared(frozenset(items["item_id"])) if _shared is None else _shared

    @property
    def item_ids(self) -> frozenset[str]:
        return self._shared.item_ids - self.left_out

    def without(self, item_ids: Iterable[str]) -> EvidenceSource:
        """The same source with these items left out too."""
        return EvidenceSource(self.verdicts, self.items, self.left_out | set(item_ids),
                              self._shared)

    def _block(self, scope: str) -> _ScopeBlock:
        blocks = self._shared.blocks
        if scope not in blocks:
            blocks[scope] = _ScopeBlock(self.verdicts, items_in_scope(self.items, scope))
        return blocks[scope]

    def for_scope(self, scope: str) -> Callable[[Rubric, Revision], GateEvidence]:
        block = self._block(scope)
        kept = ~np.isin(block.item_ids, list(self.left_out)) if self.left_out \
            else np.ones(len(block.item_ids), dtype=bool)

        def evidence(rubric: Rubric, revision: Revision) -> GateEvidence:
            proposed = {i: op.new_text for i, op in enumerate(revision.ops)
                        if isinstance(op, (Edit, Add))}
            texts = [c.text for c in rubric.checks] + list(proposed.values())
            codes = block.codes(texts)[kept]
            determined = (codes != UNDETERMINED).all(axis=1)
            fails = codes[determined] == FAIL
            n = len(rubric.checks)
            return GateEvidence(
                flawed=block.flawed[kept][determined],
                current_fails={c.id: fails[:, k] for k, c in enumerate(rubric.checks)},
                proposed_fails={i: fails[:, n + k] for k, i in enumerate(proposed)},
            )

        return evidence


@dataclass
class _Shared:
    """What every `EvidenceSource.without` copy of a source shares."""

    item_ids: frozenset[str]
    blocks: dict[str, _ScopeBlock] = field(default_factory=dict)


class _ScopeBlock:
    """The gate items of one scope and their verdict codes, one cached column per check text."""

    def __init__(self, verdicts: Verdicts, items: pd.DataFrame):
        self.verdicts = verdicts
        self.item_ids = items["item_id"].to_numpy(dtype=object)
        self.flawed = items["label"].to_numpy() == "flawed"
        self._columns: dict[str, np.ndarray] = {}

    def codes(self, texts: Sequence[str]) -> np.ndarray:
        """(n_items x len(texts)) int8 codes."""
        for text in texts:
            if text not in self._columns:
                self._columns[text] = np.array([self.verdicts.code(i, text)
                                                for i in self.item_ids], dtype=np.int8)
        if not texts:
            return np.zeros((len(self.item_ids), 0), dtype=np.int8)
        return np.column_stack([self._columns[t] for t in texts])


def parsed_scope(record: Mapping, scope: str) -> tuple[Rubric, list]:
    """A recorded chain's start rubric and proposals (Revision or RevisionRejected) of one
    scope."""
    chain = record["scopes"][scope]
    recorded = [revision_from_record(r, r["round"], record["reviser"], record["mode"],
                                     record.get("source", ""))
                for r in chain["rounds"]]
    return rubric_from_dict(chain["start"]), recorded


def replay_scope(start: Rubric, recorded: Sequence, gate_name: str,
                 evidence_source: EvidenceSource | None, scope: str) -> ChainResult:
    """One scope's recorded proposals (`parsed_scope`) replayed with `gate_name` deciding
    each change."""
    def propose(rubric: Rubric, round_number: int):
        proposal = recorded[round_number - 1]
        if isinstance(proposal, RevisionRejected):
            return proposal
        return adapt_revision(proposal, rubric)

    evidence = evidence_source.for_scope(scope) if evidence_source is not None else None
    return run_chain(start, len(recorded), propose,
                     gate=None if gate_name == "none" else get_gate(gate_name),
                     evidence=evidence)


def replay_chain(record: Mapping, gate_name: str, evidence_source: EvidenceSource | None,
                 scopes: Iterable[str] | None = None) -> dict[str, ChainResult]:
    """Every scope of a recorded chain (or only `scopes`) replayed with `gate_name` deciding
    each change. A gate with no evidence for a change refuses it (`rubriclab.carry.gates`)."""
    get_gate(gate_name)  # an unknown gate name fails here, with no scope replayed
    wanted = None if scopes is None else set(scopes)
    return {scope: replay_scope(*parsed_scope(record, scope), gate_name, evidence_source,
                                scope)
            for scope in record["scopes"] if wanted is None or scope in wanted}


def decision_rows(results: Mapping[str, ChainResult], **labels: object) -> list[dict]:
    rows = []
    for scope, result in results.items():
        for chain_round in result.rounds:
            if isinstance(chain_round.proposal, RevisionRejected):
                rows.append(dict(labels, scope=scope, round=chain_round.round, op_index=-1,
                                 action="", check_id="", accepted=False, evidence=True,
                                 reads_verdicts=False,
                                 reason=f"proposal {chain_round.proposal.kind}: "
                                        f"{chain_round.proposal.reason}"))
                continue
            for decision in chain_round.decisions or _ungated(chain_round):
                op = chain_round.proposal.ops[decision.op_index]
                rows.append(dict(labels, scope=scope, round=chain_round.round,
                                 op_index=decision.op_index, action=type(op).__name__.lower(),
                                 check_id=getattr(op, "check_id", ""),
                                 text=getattr(op, "new_text", ""),
                                 accepted=decision.accepted, evidence=decision.evidence,
                                 reads_verdicts=decision.reads_verdicts,
                                 reason=decision.reason))
    return rows


def _ungated(chain_round) -> list[Decision]:
    return [Decision(i, True, "ungated", reads_verdicts=False)
            for i in range(len(chain_round.proposal.ops))]


def decisions_without_evidence(results: Mapping[str, ChainResult], up_to_round: int) -> int:
    """How many changes of rounds 1..up_to_round the gate refused for want of evidence."""
    return sum(not d.evidence for result in results.values() for r in result.rounds
               if r.round <= up_to_round for d in r.decisions)


def require_disjoint(gate_item_ids: Iterable[str], scored_item_ids: Iterable[str],
                     what: str) -> None:
    """Gate evidence and scores never share an item: raise naming the shared ones."""
    shared = sorted(set(gate_item_ids) & set(scored_item_ids))
    if shared:
        raise ValueError(f"{what}: {len(shared)} item(s) are both gate evidence and scored, "
                         f"e.g. {shared[:3]}")


def rubric_after(record: Mapping, scope: str, round_number: int) -> Rubric:
    chain = record["scopes"][scope]
    if round_number == 0:
        return rubric_from_dict(chain["start"])
    return rubric_from_dict(chain["rounds"][round_number - 1]["rubric"])


def checked_rubric_round_trip(record: Mapping,
                              replayed: Mapping[str, ChainResult] | None = None) -> None:
    """The ungated replay of a record (computed here unless given) must give the rubrics the
    record holds."""
    if replayed is None:
        replayed = replay_chain(record, "none", None)
    for scope, result in replayed.items():
        for chain_round in result.rounds:
            stored = rubric_after(record, scope, chain_round.round)
            if rubric_to_dict(stored) != rubric_to_dict(chain_round.rubric):
                raise ValueError(f"chain record: scope {scope!r} round {chain_round.round}: "
                                 "the stored rubric is not what its operations give")
