"""The carry experiment from rubrics to rates: judging plan, verdicts, chain replay under gates.

Data flow (each step one Snakemake rule, see workflow/rules/carry.smk):
1. start rubric sets (hand, generated, label; `rubriclab.carry.sources`);
2. ungated self-review chains: the reviser's proposals, round by round (`run_reviser_chain`);
3. one judging job per (dataset, judge): every check text that any rubric of any chain ever
   holds, asked of every item in its scope, plus the one-call renderings of the start
   rubrics on the rendering items (`judge_plan`);
4. replay (`replay_chain`): each chain's recorded proposals decided by each gate with
   evidence from that judge's verdicts on the gate items, then rates with Clopper-Pearson
   intervals (and the paired bootstrap's beside them), Shapley attribution per check, and the
   checks each deletion removed.

A verdict is per (item, check text): the judge prompt depends on the text only, so a check
that keeps its text through an edit elsewhere, or appears in several chains, is judged once.
Verdict codes: PASS (majority Yes), FAIL (majority No), UNDETERMINED (no majority: ties or
unparseable votes). A rubric fails an item if a check fails it, passes it if every check
passes it, and is undetermined otherwise; undetermined items are left out of the rates and
counted, never mapped to pass or fail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import FAIL, PASS, UNDETERMINED, all_must_pass
from rubriclab.carry.attribution import shapley_attribution
from rubriclab.carry.checklists import Check
from rubriclab.carry.gates import Decision, GateEvidence, get_gate
from rubriclab.carry.prompts import per_check_messages
from rubriclab.carry.renderings import rendering_call, rendering_outcome
from rubriclab.carry.revision import (
    Add, ChainResult, Delete, Edit, Keep, Operation, Revision, RevisionRejected, Rubric,
    revision_format_name, revision_from_answer, revision_messages, run_chain,
)
from rubriclab.carry.sources import ALL_SCOPE, rubric_from_dict, rubric_to_dict
from rubriclab.llm import Request
from rubriclab.stats.bootstrap import ratio_bootstrap
from rubriclab.stats.intervals import rate_interval

METRICS = ("correct_passed", "flawed_caught", "unplanned_caught")
ITEM_COLUMNS = ["item_id", "task", "output", "label", "scope", "split", "unplanned",
                "in_recon72"]
# cache_key: the key of the answer in the call cache, where its text is (rubriclab.browser).
JUDGED_VERDICT_COLUMNS = ["item_id", "kind", "scope", "source", "rendering", "check_text", "vote",
                          "answer", "cache_key"]
RATE_COLUMNS = [
    "dataset", "judge", "item_set", "environments", "reviser", "source", "rendering", "mode",
    "seed", "round", "gate", "variant", "n_no_evidence", "metric", "value", "low", "high",
    "boot_low", "boot_high", "n", "n_undetermined",
]


# --- items ----------------------------------------------------------------------------------

def recon_items(reports: pd.DataFrame, recon72_ids: Iterable[str],
                environments: Sequence[str]) -> pd.DataFrame:
    """Recon-108 reports of the chosen environments in ITEM_COLUMNS (scope = environment)."""
    unknown = sorted(set(environments) - set(reports["environment"]))
    if unknown:
        raise ValueError(f"carry.recon.environments names unknown environment(s) {unknown}; "
                         f"known: {sorted(set(reports['environment']))}")
    chosen = reports[reports["environment"].isin(environments)].copy()
    recon72 = set(recon72_ids)
    items = pd.DataFrame({
        "item_id": chosen["item_id"],
        "task": chosen["task"],
        "output": chosen["output"],
        "label": chosen["label"],
        "scope": chosen["environment"],
        "split": chosen["split"],
        "unplanned": (chosen["label"] == "flawed") & ~chosen["planned"].astype(bool),
        "in_recon72": chosen["item_id"].isin(recon72),
    })
    return items.sort_values("item_id", kind="stable").reset_index(drop=True)


def teaching_pool(items: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The calibration items a label teacher may see: for Recon the Recon-72 reports of the
    calibration environments (pass the items of every environment), else the calibration split."""
    pool = items[items["split"] == "calibration"]
    return pool[pool["in_recon72"]] if dataset == "recon" else pool


def labelled_items(table: pd.DataFrame) -> pd.DataFrame:
    """A prepared SummEdits / RAGTruth table in ITEM_COLUMNS (scope "all", no unplanned)."""
    items = pd.DataFrame({
        "item_id": table["item_id"], "task": table["task"], "output": table["output"],
        "label": table["label"], "scope": ALL_SCOPE, "split": table["split"],
        "unplanned": False, "in_recon72": False,
    })
    return items.sort_values("item_id", kind="stable").reset_index(drop=True)


def applies(rubric_scope: str, item_scope: str) -> bool:
    return rubric_scope == ALL_SCOPE or rubric_scope == item_scope


def _in_scope(items: pd.DataFrame, scope: str) -> pd.DataFrame:
    """The items a rubric of `scope` grades (a boolean mask, so an empty table stays a table)."""
    mask = np.array([applies(scope, s) for s in items["scope"]], dtype=bool)
    return items.loc[mask]


def rubric_for(rubric_set: Mapping[str, Rubric], item_scope: str) -> Rubric:
    if item_scope in rubric_set:
        return rubric_set[item_scope]
    if ALL_SCOPE in rubric_set:
        return rubric_set[ALL_SCOPE]
    raise ValueError(f"no rubric of the set applies to scope {item_scope!r} "
                     f"(scopes: {sorted(rubric_set)})")


# --- self-review chains (the reviser's proposals, ungated) ----------------------------------

def revision_to_record(revision: Revision | RevisionRejected) -> dict:
    if isinstance(revision, RevisionRejected):
        return {"status": revision.kind, "reason": revision.reason, "ops": []}
    ops = []
    for op in revision.ops:
        if isinstance(op, Keep):
            ops.append({"action": "keep", "id": op.check_id})
        elif isinstance(op, Edit):
            ops.append({"action": "edit", "id": op.check_id, "text": op.new_text})
        elif isinstance(op, Delete):
            ops.append({"action": "delete", "id": op.check_id})
        else:
            ops.append({"action": "add", "text": op.new_text})
    return {"status": "proposed", "reason": "", "ops": ops}


def revision_from_record(record: Mapping, round_number: int, reviser: str,
                         mode: str, start: str = "") -> Revision | RevisionRejected:
    if record["status"] != "proposed":
        return RevisionRejected(record["reason"], kind=record["status"])
    ops: list[Operation] = []
    for op in record["ops"]:
        action = op["action"]
        if action == "keep":
            ops.append(Keep(op["id"]))
        elif action == "edit":
            ops.append(Edit(op["id"], op["text"]))
        elif action == "delete":
            ops.append(Delete(op["id"]))
        elif action == "add":
            ops.append(Add(op["text"]))
        else:
            raise ValueError(f"round {round_number}: unknown action {action!r} in a chain record")
    return Revision(ops=tuple(ops), round=round_number, reviser=reviser, mode=mode,
                    start=start)


def run_reviser_chain(start: Mapping[str, Rubric], rounds: int, mode: str, seed: int,
                      reviser: str, temperature: float, max_tokens: int, description: str,
                      ask: Callable[[Request], object], source: str = "") -> dict:
    """Every scope's rubric revised for `rounds` rounds, ungated; the record of the chain.

    `ask(request)` returns a Completion (the model layer's); its raw text is parsed against
    the rubric and mode. Unparseable and invalid proposals are recorded and counted, and that
    round leaves the rubric as it was.
    """
    scopes = {}
    for scope, rubric in start.items():
        def propose(current: Rubric, round_number: int) -> Revision | RevisionRejected:
            request = Request.chat(
                reviser, revision_messages(description, current, mode),
                temperature=temperature, max_tokens=max_tokens,
                response_format=revision_format_name(current), sample_index=seed)
            completion = ask(request)
            if completion.outcome != "ok":
                return RevisionRejected(f"reviser answer {completion.outcome}: "
                                        f"{completion.error or completion.text[:120]!r}",
                                        kind="unparseable")
            return revision_from_answer(completion.text, current, mode, round_number, reviser,
                                        source)

        result = run_chain(rubric, rounds, propose)
        scopes[scope] = {
            "start": rubric_to_dict(rubric),
            "rounds": [dict(round=r.round, **revision_to_record(r.proposal),
                            rubric=rubric_to_dict(r.rubric)) for r in result.rounds],
        }
    return {"source": source, "mode": mode, "seed": seed, "reviser": reviser, "rounds": rounds,
            "scopes": scopes}


def chain_counts(record: Mapping) -> dict[str, int]:
    counts = {"proposed": 0, "rejected": 0, "unparseable": 0}
    for scope in record["scopes"].values():
        for round_record in scope["rounds"]:
            counts[round_record["status"]] += 1
    return counts


# --- what the judge is asked ----------------------------------------------------------------

def check_texts_by_scope(rubric_sets: Iterable[Mapping[str, Rubric]],
                         chain_records: Iterable[Mapping]) -> dict[str, list[str]]:
    """Every check text any rubric ever holds, per scope, in first-seen order."""
    texts: dict[str, dict[str, None]] = {}

    def note(scope: str, text: str) -> None:
        texts.setdefault(scope, {})[text] = None

    for rubric_set in rubric_sets:
        for scope, rubric in rubric_set.items():
            for check in rubric.checks:
                note(scope, check.text)
    for record in chain_records:
        for scope, chain in record["scopes"].items():
            for check in chain["start"]["checks"]:
                note(scope, check["text"])
            for round_record in chain["rounds"]:
                for op in round_record["ops"]:
                    if "text" in op:
                        note(scope, op["text"])
    return {scope: list(found) for scope, found in texts.items()}


@dataclass(frozen=True)
class JudgeSpec:
    model: str
    votes: int
    temperature: float
    max_tokens: int


def judge_plan(items: pd.DataFrame, texts_by_scope: Mapping[str, Sequence[str]],
               description: str, spec: JudgeSpec,
               rendering_sets: Mapping[str, Mapping[str, Rubric]] | None = None,
               renderings: Sequence[str] = (),
               rendering_item_ids: Iterable[str] = ()) -> tuple[list[Request], list[dict]]:
    """Requests in judging order (item by item, checks then renderings) and their rows."""
    if spec.votes < 1:
        raise ValueError(f"votes must be >= 1, got {spec.votes}")
    rendered_items = set(rendering_item_ids)
    requests: list[Request] = []
    rows: list[dict] = []
    for item in items.itertuples(index=False):
        texts = [t for scope, scoped in texts_by_scope.items() if applies(scope, item.scope)
                 for t in scoped]
        for vote in range(spec.votes):
            common = dict(temperature=spec.temperature, sample_index=vote)
            for text in dict.fromkeys(texts):
                check = Check(id="check", text=text, origin="")
                requests.append(Request.chat(
                    spec.model, per_check_messages(item.task, item.output, check, description),
                    max_tokens=spec.max_tokens, response_format="yes_no", **common))
                rows.append(dict(item_id=item.item_id, kind="check", scope=item.scope,
                                 source="", rendering="per_check", check_text=text, vote=vote))
            if item.item_id not in rendered_items:
                continue
            for source, rubric_set in (rendering_sets or {}).items():
                checklist = rubric_for(rubric_set, item.scope).to_checklist(description)
                for rendering in renderings:
                    messages, response_format = rendering_call(rendering, item.task,
                                                               item.output, checklist)
                    max_tokens = 8 * len(checklist.checks) + 16 if rendering == "all_in_one" \
                        else spec.max_tokens
                    requests.append(Request.chat(spec.model, messages, max_tokens=max_tokens,
                                                 response_format=response_format, **common))
                    rows.append(dict(item_id=item.item_id, kind="rendering", scope=item.scope,
                                     source=source, rendering=rendering, check_text="",
                                     vote=vote))
    return requests, rows


def verdict_rows(rows: list[dict], completions: Sequence) -> pd.DataFrame:
    """The verdict table: per_check answers "yes"/"no", renderings "pass"/"fail", or
    "unparseable" (never guessed); each with the cache key of its answer."""
    out = []
    for row, completion in zip(rows, completions, strict=True):
        if completion.outcome != "ok":
            answer = "unparseable"
        elif row["kind"] == "check":
            answer = completion.parsed
        else:
            answer = rendering_outcome(row["rendering"], completion.parsed)
        out.append({**row, "answer": answer, "cache_key": completion.key})
    return pd.DataFrame(out, columns=JUDGED_VERDICT_COLUMNS)


# --- verdicts -> codes ----------------------------------------------------------------------

def _majorities(table: pd.DataFrame, keys: list[str], positive: str,
                negative: str) -> dict[tuple, int]:
    """keys -> PASS where more than half the votes are `positive`, FAIL where more than half
    are `negative`, else UNDETERMINED (one vectorised pass over the votes)."""
    votes = pd.DataFrame({key: table[key].to_numpy(dtype=object) for key in keys})
    answers = table["answer"].to_numpy(dtype=object)
    votes["positive"] = answers == positive
    votes["negative"] = answers == negative
    counted = votes.groupby(keys, sort=False).agg(
        votes=("positive", "size"), positive=("positive", "sum"), negative=("negative", "sum"))
    codes = np.where(counted["positive"] * 2 > counted["votes"], PASS,
                     np.where(counted["negative"] * 2 > counted["votes"], FAIL, UNDETERMINED))
    return dict(zip(counted.index, codes.astype(int).tolist()))


def check_codes(verdicts: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(item_id, check text) -> PASS / FAIL / UNDETERMINED, by majority over votes."""
    checks = verdicts[verdicts["kind"] == "check"]
    bad = ~checks["answer"].isin(["yes", "no", "unparseable"])
    if bad.any():
        first = checks[bad].iloc[0]
        raise ValueError(f"verdict table: answer {first['answer']!r} for item "
                         f"{first['item_id']!r} is not yes, no or unparseable")
    return _majorities(checks, ["item_id", "check_text"], "yes", "no")


def rendering_codes(verdicts: pd.DataFrame) -> dict[tuple[str, str, str], int]:
    """(item_id, source, rendering) -> code, for the one-call renderings."""
    rendered = verdicts[verdicts["kind"] == "rendering"]
    return _majorities(rendered, ["item_id", "source", "rendering"], "pass", "fail")


class Verdicts:
    """Lookups of check verdict codes, raising on a (item, text) the judge was never asked."""

    def __init__(self, verdicts: pd.DataFrame):
        self.codes = check_codes(verdicts)
        self.rendered = rendering_codes(verdicts)

    def code(self, item_id: str, text: str) -> int:
        try:
            return self.codes[(item_id, text)]
        except KeyError:
            raise ValueError(f"no verdict for item {item_id!r} on check {text[:60]!r}: the "
                             "judging job did not ask it (stale verdicts file?)") from None

    def rubric_code(self, item_id: str, rubric: Rubric) -> int:
        """The rubric's all-must-pass outcome on the item (`aggregate.all_must_pass`)."""
        return int(all_must_pass([self.code(item_id, check.text) for check in rubric.checks]))

    def matrix(self, item_ids: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        return np.array([[self.code(i, t) for t in texts] for i in item_ids],
                        dtype=np.int8).reshape(len(item_ids), len(texts))


# --- gate replay ----------------------------------------------------------------------------

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
            blocks[scope] = _ScopeBlock(self.verdicts, _in_scope(self.items, scope))
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
            if chain_round.rejected:
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


# --- rates ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class State:
    """One rubric state whose outcome is known for every item of an item set."""

    labels: dict
    codes: np.ndarray  # (n_items,) PASS / FAIL / UNDETERMINED


def rate_rows(items: pd.DataFrame, states: Sequence[State], metrics: Sequence[str],
              B: int, seed: int, **columns: object) -> list[dict]:
    """Every metric of every state over these items: low / high, the 95% interval of the rate
    (rubriclab.stats.intervals.rate_interval, the one the coverage study chose), and
    boot_low / boot_high, the paired percentile bootstrap over items (B draws)."""
    if not states:
        return []
    correct = (items["label"] == "correct").to_numpy()
    flawed = (items["label"] == "flawed").to_numpy()
    unplanned = items["unplanned"].to_numpy(dtype=bool)
    groups = {"correct_passed": (correct, PASS), "flawed_caught": (flawed, FAIL),
              "unplanned_caught": (flawed & unplanned, FAIL)}
    numerators, denominators, meta = [], [], []
    for state in states:
        determined = state.codes != UNDETERMINED
        for metric in metrics:
            members, success = groups[metric]
            denominators.append(members & determined)
            numerators.append(members & (state.codes == success))
            meta.append((state, metric, int((members & ~determined).sum())))
    table = ratio_bootstrap(np.column_stack(numerators), np.column_stack(denominators),
                            B=B, seed=seed)
    rows = []
    for (state, metric, undetermined), stats, num, den in zip(
            meta, table.itertuples(index=False), numerators, denominators, strict=True):
        low, high = rate_interval(int(num.sum()), int(den.sum()))
        rows.append(dict(columns, **state.labels, metric=metric,
                         value=100 * stats.estimate, low=100 * low, high=100 * high,
                         boot_low=100 * stats.low, boot_high=100 * stats.high,
                         n=int(den.sum()), n_undetermined=undetermined))
    return rows


def set_codes(items: pd.DataFrame, verdicts: Verdicts,
              rubric_set_for: Callable[[str], Mapping[str, Rubric]]) -> np.ndarray:
    """Per item, the code of the rubric that applies to it (rubric_set_for(item scope))."""
    return np.array([verdicts.rubric_code(row.item_id, rubric_for(rubric_set_for(row.scope),
                                                                   row.scope))
                     for row in items.itertuples(index=False)], dtype=np.int8)


def rendering_state_codes(items: pd.DataFrame, verdicts: Verdicts, source: str,
                          rendering: str) -> np.ndarray:
    codes = []
    for item_id in items["item_id"]:
        key = (item_id, source, rendering)
        if key not in verdicts.rendered:
            raise ValueError(f"no {rendering} verdict for item {item_id!r} under the {source} "
                             "rubric: the judging job did not ask it")
        codes.append(verdicts.rendered[key])
    return np.array(codes, dtype=np.int8)


# --- attribution ----------------------------------------------------------------------------

def attribution_rows(items: pd.DataFrame, verdicts: Verdicts, scope: str,
                     rubric: Rubric) -> pd.DataFrame:
    """Shapley credit, blame and unique catches of each check on the items in `scope`
    whose verdicts on every check of the rubric are determined."""
    in_scope = _in_scope(items, scope)
    codes = verdicts.matrix(list(in_scope["item_id"]), [c.text for c in rubric.checks])
    determined = (codes != UNDETERMINED).all(axis=1)
    flawed = in_scope["label"].to_numpy()[determined] == "flawed"
    attribution = shapley_attribution(codes[determined] == FAIL, flawed)
    frame = attribution.to_frame(rubric.ids)
    frame.insert(1, "origin", [c.origin for c in rubric.checks])
    frame["n_items"] = int(determined.sum())
    return frame


def failing_positions(verdicts: Verdicts, item_id: str, rubric: Rubric) -> str:
    """JSON list of the 1-based positions of the checks answered No on the item."""
    positions = [n for n, check in enumerate(rubric.checks, start=1)
                 if verdicts.code(item_id, check.text) == FAIL]
    return json.dumps(positions)


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



# --- jobs -----------------------------------------------------------------------------------

def read_verdicts(path) -> Verdicts:
    return Verdicts(pd.read_csv(path, keep_default_na=False))


def read_items(path) -> pd.DataFrame:
    items = pd.read_csv(path, keep_default_na=False)
    missing = [c for c in ITEM_COLUMNS if c not in items.columns]
    if missing:
        raise ValueError(f"{path}: not a carry item table, missing column(s) {missing}")
    for column in ("unplanned", "in_recon72"):
        values = set(items[column].astype(str))
        if not values <= {"True", "False"}:
            raise ValueError(f"{path}: column {column!r} must be True/False, got {sorted(values)}")
        items[column] = items[column].astype(str) == "True"
    return items


def judge_items_and_rubrics(client, dataset: str, items: pd.DataFrame,
                            starts: Mapping[str, Mapping[str, Rubric]],
                            chain_records: Sequence[Mapping], description: str,
                            spec: JudgeSpec, renderings: Sequence[str]) -> pd.DataFrame:
    """The judging job of one (dataset, judge): see the module docstring, step 3."""
    texts = check_texts_by_scope(starts.values(), chain_records)
    # all_in_one and scale share the listed checks as a prompt prefix: ask them back to back.
    one_call = ([r for r in ("all_in_one", "scale", "paragraph") if r in renderings]
                if dataset == "recon" else [])
    rendered = items.loc[items["in_recon72"], "item_id"] if one_call else []
    requests, rows = judge_plan(items, texts, description, spec, rendering_sets=starts,
                                renderings=one_call, rendering_item_ids=rendered)
    completions = client.run(requests, label=f"carry judge {dataset} {spec.model}")
    return verdict_rows(rows, completions)
