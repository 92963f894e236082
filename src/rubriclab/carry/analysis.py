"""One judge's analysis of a carry dataset: rates of every rubric state, gate decisions,
Shapley attribution and the deletions of the self-review chains.

Evidence and scores never overlap (`require_disjoint` is asserted on every replay):

Recon     every gate replay (the standard gates R, P, S, S+P, and Gate S+P leave-one-out,
          carry Table 2) is leave-one-report-out: a Recon-108 report r is graded by the rubric
          its scope's chain reaches when the gate decides with the labelled Recon-72 reports
          that rubric's scope covers, except r itself (r outside Recon-72: all of them). A hand
          chain (scope = one environment) so decides with its environment's other reports; a
          dataset-wide chain (label, generated) with every judged environment's reports but r.
          Standard rows (variant standard) grade the reports of the evaluation environments
          only (environments="evaluation", carry Figure 6: the label-taught start was taught on
          the calibration environments' reports); leave-one-out rows (variant loo, the gates in
          `LOO_GATES`) grade every judged environment (environments="all", carry Table 2) and
          the evaluation ones. Both come from the same replays (`ReportReplays`).
          That is carry.recon.gate_evidence = own_reports (Figure 6's and Table 2's captions).
          The seed's other reading, calibration_environments (Table 3's "decided with
          calibration labels"), keeps only the calibration environments' Recon-72 reports as
          evidence (`gate_items`): a hand chain of an evaluation environment then has none, so
          its evidence-reading gates refuse every change for want of evidence (n_no_evidence
          counts them), and an evaluation report, outside the evidence, is graded by the
          replay with all of its scope's evidence: its leave-one-out replay is the standard one.
SummEdits / RAGTruth  the gates decide with the calibration split and are scored on the
          evaluation split (carry.recon.gate_evidence is not read).
Start and ungated rubrics use no evidence and are scored on every judged Recon environment
(environments="all") and on the evaluation ones.

A gate without evidence for a change refuses it; decisions.csv marks each (evidence False)
and every rate row counts them: n_no_evidence, per rubric scope the mean over the replays
behind the graded reports, summed over the scopes (refusals per chain, `ReportReplays.states`).
decisions.csv holds every replay's decisions (column left_out: the report its evidence left
out, "" for none) and says which decisions read the judge's verdicts (reads_verdicts).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rubriclab.carry.experiment import Verdicts, rubric_for
from rubriclab.carry.replay import (
    EvidenceSource, checked_rubric_round_trip, decision_rows, decisions_without_evidence,
    parsed_scope, replay_chain, replay_scope, require_disjoint, rubric_after,
)
from rubriclab.carry.scoring import (
    State, attribution_rows, failing_positions, rate_rows, rendering_state_codes, set_codes,
)
from rubriclab.carry.gates import get_gate
from rubriclab.carry.revision import ChainResult, Rubric
from rubriclab.carry.sources import ALL_SCOPE

START_LABELS = dict(reviser="", mode="", seed=0, round=0, gate="none", variant="standard",
                    n_no_evidence=0)
LOO_GATES = ("S+P",)


@dataclass(frozen=True)
class Chain:
    source: str
    record: Mapping  # as written by experiment.run_reviser_chain

    @property
    def labels(self) -> dict:
        return dict(reviser=self.record["reviser"], source=self.source, mode=self.record["mode"],
                    seed=int(self.record["seed"]))


def read_chains(paths) -> list[Chain]:
    """The chain records written by the carry_chain rule (experiment.run_reviser_chain)."""
    records = [json.loads(Path(path).read_text(encoding="utf-8")) for path in paths]
    return [Chain(record["source"], record) for record in records]


# carry.recon.gate_evidence: which labelled Recon-72 reports the Recon gates decide with
GATE_EVIDENCE = ("own_reports", "calibration_environments")


def _check_gate_evidence(gate_evidence: str | None) -> None:
    if gate_evidence not in GATE_EVIDENCE:
        raise ValueError(f"config key 'carry.recon.gate_evidence': {gate_evidence!r} is not "
                         f"one of {list(GATE_EVIDENCE)}")


@dataclass(frozen=True)
class Setting:
    dataset: str
    judge: str
    gates: Sequence[str]
    renderings: Sequence[str]
    B: int
    seed: int
    loo_gates: Sequence[str] = LOO_GATES  # gates replayed leave-one-out (Recon)
    # carry.recon.gate_evidence; None where the dataset is not Recon (not read there)
    gate_evidence: str | None = "own_reports"

    def __post_init__(self):
        if self.dataset == "recon" or self.gate_evidence is not None:
            _check_gate_evidence(self.gate_evidence)


def gate_items(items: pd.DataFrame, dataset: str,
               gate_evidence: str | None = "own_reports") -> pd.DataFrame:
    """The labelled items the gates may decide with (see the module docstring): for Recon the
    Recon-72 reports (each replay leaves out the report it grades), under gate_evidence
    "calibration_environments" only those of the calibration environments; else the
    calibration split."""
    if dataset == "recon":
        _check_gate_evidence(gate_evidence)
        recon72 = items[items["in_recon72"]]
        if gate_evidence == "calibration_environments":
            return recon72[recon72["split"] == "calibration"]
        return recon72
    return items[items["split"] == "calibration"]


# the same, short, where Figure 6 and Table 2 are drawn (the figure's title, the table's caption)
GATE_EVIDENCE_SHORT = {
    "own_reports": "leave-one-report-out over the labelled Recon-72 reports of the rubric's "
                   "own scope (a hand-written rubric: its environment's), never the scored "
                   "report",
    "calibration_environments": "the labelled Recon-72 reports of the calibration "
                                "environments only (the seed's \"calibration labels\")",
}



def gate_evidence_short(gate_evidence: str) -> str:
    _check_gate_evidence(gate_evidence)
    return GATE_EVIDENCE_SHORT[gate_evidence]


_GATE_EVIDENCE_READINGS = {
    "own_reports": (
        "Recon gate evidence (carry.recon.gate_evidence: own_reports): every gate replay is "
        "leave-one-report-out over the labelled Recon-72 reports of the rubric's scope, never "
        "the report being scored, so a hand-written rubric decides with its own environment's "
        "other reports (the reading of Figure 6's and Table 2's captions)."),
    "calibration_environments": (
        "Recon gate evidence (carry.recon.gate_evidence: calibration_environments): the gates "
        "decide only with the labelled Recon-72 reports of the calibration environments, the "
        "seed's Table 3 reading (\"decided with calibration labels and scored on the "
        "evaluation split\"), so a hand-written rubric of an evaluation environment has no "
        "evidence and Gates R, S and S+P refuse its every change for want of evidence."),
}


def gate_evidence_reading(config: Mapping) -> str:
    """One sentence saying which reading of the Recon gate evidence a run used, from its
    (validated) config."""
    try:
        value = config["carry"]["recon"]["gate_evidence"]
    except (KeyError, TypeError):
        raise ValueError("config key 'carry.recon.gate_evidence' is missing: pass the run's "
                         "validated config (results/effective_config.yaml)") from None
    _check_gate_evidence(value)
    return _GATE_EVIDENCE_READINGS[value]


log = logging.getLogger(__name__)


class _Heartbeat:
    """A progress line (done / total, time so far) at most every `interval_s` seconds, so a
    long analysis job's log is not silent."""

    def __init__(self, what: str, total: int, interval_s: float = 30.0):
        self.what, self.total, self.interval_s = what, total, interval_s
        self.start = self.last = time.monotonic()

    def __call__(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if final or now - self.last >= self.interval_s:
            self.last = now
            log.info("%s: %d/%d chains replayed, %.0f s", self.what, done, self.total,
                     now - self.start)


def analyse(setting: Setting, items: pd.DataFrame, verdicts: Verdicts,
            start_sets: Mapping[str, Mapping[str, Rubric]],
            chains: Sequence[Chain]) -> dict[str, pd.DataFrame]:
    recon = setting.dataset == "recon"
    repeated = items["item_id"][items["item_id"].duplicated()]
    if not repeated.empty:
        raise ValueError(f"{setting.dataset} items: item id(s) {sorted(set(repeated))[:3]} "
                         "listed more than once")
    scored = items if recon else items[items["split"] == "evaluation"]
    evaluation = (scored["split"] == "evaluation").to_numpy()
    scored_evaluation = scored[evaluation]
    pool = EvidenceSource(verdicts, gate_items(items, setting.dataset, setting.gate_evidence))
    if not recon:
        require_disjoint(pool.item_ids, scored_evaluation["item_id"],
                         f"{setting.dataset} standard gate evidence and gated scores")
    rows: list[dict] = []
    decisions: list[dict] = []
    common = dict(dataset=setting.dataset, judge=setting.judge)
    metrics = ("correct_passed", "flawed_caught", "unplanned_caught") if recon else \
        ("correct_passed", "flawed_caught")

    if recon:
        recon72 = items[items["in_recon72"]]
        states = [State(dict(source=source, rendering=rendering, **START_LABELS),
                        _rendering_codes(recon72, verdicts, source, rendering, rubric_set))
                  for source, rubric_set in start_sets.items()
                  for rendering in setting.renderings]
        rows += rate_rows(recon72, states, metrics, setting.B, setting.seed, **common,
                          item_set="recon72", environments="all")

    # start and ungated states over every scored item (Recon: and their evaluation subset);
    # leave-one-out states over every scored item; gated states over the evaluation items
    everywhere: list[State] = []
    loo_everywhere: list[State] = []
    gated: list[State] = []
    for source, rubric_set in start_sets.items():
        everywhere.append(State(dict(source=source, rendering="per_check", **START_LABELS),
                                set_codes(scored, verdicts, lambda scope: rubric_set)))
    heartbeat = _Heartbeat(f"carry analysis of {setting.dataset} under {setting.judge}",
                           len(chains))
    for done, chain in enumerate(chains):
        heartbeat(done)
        for gate in setting.gates:
            if gate == "none":
                ungated = replay_chain(chain.record, "none", None)
                checked_rubric_round_trip(chain.record, ungated)
                decisions += decision_rows(ungated, **common, **chain.labels, gate="none",
                                           variant="standard", left_out="")
                everywhere += _round_states(chain, "none", "standard", scored, verdicts,
                                            lambda scope, r=ungated: r, lambda n: 0)
                continue
            if not recon:
                replayed = replay_chain(chain.record, gate, pool)
                decisions += decision_rows(replayed, **common, **chain.labels, gate=gate,
                                           variant="standard", left_out="")
                gated += _round_states(
                    chain, gate, "standard", scored_evaluation, verdicts,
                    lambda scope, r=replayed: r,
                    lambda n, r=replayed: decisions_without_evidence(r, n))
                continue
            loo = gate in setting.loo_gates
            replays = ReportReplays(chain, gate, scored if loo else scored_evaluation, pool)
            decisions += replays.decision_rows(**common, **chain.labels, gate=gate,
                                               variant="standard")
            gated += replays.states(scored_evaluation, verdicts, "standard")
            if loo:
                loo_everywhere += replays.states(scored, verdicts, "loo")
                gated += replays.states(scored_evaluation, verdicts, "loo")
    heartbeat(len(chains), final=True)
    item_set = "recon108" if recon else "evaluation"
    if recon:
        rows += rate_rows(scored, everywhere + loo_everywhere, metrics, setting.B,
                          setting.seed, **common, item_set=item_set, environments="all")
        subset = [State(s.labels, s.codes[evaluation]) for s in everywhere] + gated
        if evaluation.any():
            rows += rate_rows(scored_evaluation, subset, metrics, setting.B, setting.seed,
                              **common, item_set=item_set, environments="evaluation")
    else:
        rows += rate_rows(scored, everywhere + gated, metrics, setting.B, setting.seed,
                          **common, item_set=item_set, environments="all")

    attribution, deletions = _attribution(setting, scored, verdicts, chains)
    return {
        "rates": pd.DataFrame(rows),
        "decisions": pd.DataFrame(decisions),
        "attribution": attribution,
        "deletions": deletions,
    }


class ReportReplays:
    """One gate's replays of a Recon chain, leave-one-report-out (module docstring): the
    rubric that grades report r comes from a replay whose evidence is the Recon-72 reports of
    its rubric's scope except r. Reports with the same evidence share one replay: every report
    outside Recon-72 the replay with all of its scope's, and every report under a gate that
    reads no evidence (P) the one replay without any.

    `items`: the reports to grade; `pool`: the gate evidence (the labelled Recon-72 reports).
    """

    def __init__(self, chain: Chain, gate: str, items: pd.DataFrame, pool: EvidenceSource):
        self.chain, self.gate = chain, gate
        self.rounds = int(chain.record["rounds"])
        rubric_scopes = list(chain.record["scopes"])
        reads_evidence = get_gate(gate).reads_evidence
        pool_ids = pool.item_ids
        self.key_of: dict[str, tuple[str, str]] = {}  # report -> (rubric scope, left-out report)
        graded: dict[tuple[str, str], list[str]] = {}
        for item_id, item_scope in zip(items["item_id"], items["scope"]):
            scope = item_scope if item_scope in rubric_scopes else ALL_SCOPE
            if scope not in rubric_scopes:
                raise ValueError(f"chain {chain.labels}: no rubric applies to scope "
                                 f"{item_scope!r}")
            left_out = item_id if reads_evidence and item_id in pool_ids else ""
            self.key_of[item_id] = (scope, left_out)
            graded.setdefault((scope, left_out), []).append(item_id)
        self.results: dict[tuple[str, str], ChainResult] = {}
        self.no_evidence: dict[tuple[str, str], np.ndarray] = {}  # key -> per round 1..R
        parsed = {scope: parsed_scope(chain.record, scope) for scope in rubric_scopes}
        for key, reports in graded.items():
            scope, left_out = key
            source = pool.without([left_out]) if left_out else pool
            if reads_evidence:
                require_disjoint(source.item_ids, reports,
                                 f"gate {gate} evidence of {reports[0]!r} ({chain.labels})")
            result = replay_scope(*parsed[scope], gate, source if reads_evidence else None,
                                  scope)
            self.results[key] = result
            self.no_evidence[key] = np.array([decisions_without_evidence({scope: result}, n)
                                              for n in range(1, self.rounds + 1)], dtype=float)

    def decision_rows(self, **labels: object) -> list[dict]:
        """Every replay's decisions, column left_out naming the report its evidence left
        out ("" for none)."""
        rows = []
        for (scope, left_out), result in self.results.items():
            rows += decision_rows({scope: result}, **labels, left_out=left_out)
        return rows

    def states(self, items: pd.DataFrame, verdicts: Verdicts, variant: str) -> list[State]:
        """States after rounds 1..R on `items` (each report graded by its replay's rubric),
        with n_no_evidence: per rubric scope the mean, over the graded reports, of the
        refusals for want of evidence in the replay behind each, summed over the scopes (a
        chain's refusals, averaged over its replays)."""
        codes = np.zeros((self.rounds, len(items)), dtype=np.int8)
        per_scope: dict[str, list[np.ndarray]] = {}
        for k, item_id in enumerate(items["item_id"]):
            key = self.key_of[item_id]
            result = self.results[key]
            for n in range(1, self.rounds + 1):
                codes[n - 1, k] = verdicts.rubric_code(item_id, result.rubric_after(n))
            per_scope.setdefault(key[0], []).append(self.no_evidence[key])
        no_evidence = sum((np.mean(counts, axis=0) for counts in per_scope.values()),
                          np.zeros(self.rounds))
        return [State(dict(**self.chain.labels, rendering="per_check", round=n, gate=self.gate,
                           variant=variant, n_no_evidence=float(no_evidence[n - 1])),
                      codes[n - 1])
                for n in range(1, self.rounds + 1)]


def _rendering_codes(items: pd.DataFrame, verdicts: Verdicts, source: str, rendering: str,
                     rubric_set: Mapping[str, Rubric]) -> np.ndarray:
    if rendering == "per_check":
        return set_codes(items, verdicts, lambda scope: rubric_set)
    return rendering_state_codes(items, verdicts, source, rendering)


def _round_states(chain: Chain, gate: str, variant: str, items: pd.DataFrame,
                  verdicts: Verdicts, results_for, no_evidence) -> list[State]:
    """States after rounds 1..R; results_for(item scope) -> scope -> ChainResult;
    no_evidence(round) -> decisions made without evidence up to that round."""
    states = []
    for round_number in range(1, int(chain.record["rounds"]) + 1):
        def rubric_set(scope: str, n=round_number) -> dict[str, Rubric]:
            return {s: result.rubric_after(n) for s, result in results_for(scope).items()}
        states.append(State(dict(**chain.labels, rendering="per_check", round=round_number,
                                 gate=gate, variant=variant,
                                 n_no_evidence=no_evidence(round_number)),
                            set_codes(items, verdicts, rubric_set)))
    return states


def _attribution(setting: Setting, items: pd.DataFrame, verdicts: Verdicts,
                 chains: Sequence[Chain]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per check of every ungated chain state; and per deleted check, what it held. A rubric
    that several states hold (a start shared by every chain of its source) is attributed
    once."""
    cache: dict[tuple, pd.DataFrame] = {}
    frames, labels, lengths, flags, deletions = [], [], [], [], []
    for chain in chains:
        record = chain.record
        for scope, scope_chain in record["scopes"].items():
            rounds = scope_chain["rounds"]
            for round_number in range(0, len(rounds) + 1):
                rubric = rubric_after(record, scope, round_number)
                key = (scope, tuple((c.id, c.text, c.origin) for c in rubric.checks))
                if key not in cache:
                    cache[key] = attribution_rows(items, verdicts, scope, rubric)
                frame = cache[key]
                following = rounds[round_number]["ops"] if round_number < len(rounds) else []
                deleted = {op["id"] for op in following if op["action"] == "delete"}
                state = dict(dataset=setting.dataset, judge=setting.judge, **chain.labels,
                             round=round_number, scope=scope)
                flag = frame["check_id"].isin(deleted).to_numpy()
                frames.append(frame)
                labels.append(state)
                lengths.append(len(frame))
                flags.append(flag)
                for row in (frame[flag].itertuples(index=False) if flag.any() else ()):
                    deletions.append(dict(state, round=round_number + 1, check_id=row.check_id,
                                          origin=row.origin,
                                          had_unique_catch=bool(row.unique_catches > 0),
                                          had_blame=bool(row.blame > 0)))
    attribution = pd.DataFrame()
    if frames:
        attribution = pd.concat(frames, ignore_index=True)
        for column in labels[0]:
            attribution[column] = np.repeat(np.array([state[column] for state in labels],
                                                     dtype=object), lengths)
        attribution["deleted_next_round"] = np.concatenate(flags)
        for column in ("seed", "round"):
            attribution[column] = attribution[column].astype(int)
    return attribution, pd.DataFrame(deletions, columns=[
        "dataset", "judge", "reviser", "source", "mode", "seed", "round", "scope", "check_id",
        "origin", "had_unique_catch", "had_blame"])


# --- Tables 4 and 5: which checks answer No ------------------------------------------------

FAILING_COLUMNS = ["dataset", "item_id", "item_name", "label", "rubric_version",
                   "failing_positions"]


def pick_chain(chains: Sequence[Chain], preferred: Sequence[tuple[str, str]]) -> Chain:
    """The first chain (lowest seed) of the first preferred (source, mode) that exists."""
    for source, mode in preferred:
        found = sorted((c for c in chains if c.source == source and c.record["mode"] == mode),
                       key=lambda c: int(c.record["seed"]))
        if found:
            return found[0]
    raise ValueError(f"no chain of {list(preferred)} among "
                     f"{[(c.source, c.record['mode']) for c in chains]}")


def failing_rows(dataset: str, items: pd.DataFrame, verdicts: Verdicts,
                 versions: Mapping[str, Mapping[str, Rubric]], names: Mapping[str, str],
                 label_words: Mapping[str, str] | None = None) -> list:
    """One row per (item, rubric version): the 1-based positions of its checks answered No.
    `label_words` renames the labels (carry Table 4: pass / fail)."""
    rows = []
    words = label_words or {}
    for item in items.itertuples(index=False):
        for version, rubric_set in versions.items():
            rubric = rubric_for(rubric_set, item.scope)
            rows.append(dict(dataset=dataset, item_id=item.item_id, item_name=names[item.item_id],
                             label=words.get(item.label, item.label), rubric_version=version,
                             failing_positions=failing_positions(verdicts, item.item_id, rubric)))
    return rows


# carry Table 4's rows: report variant -> the name the table prints, in the table's order.
TABLE4_REPORTS = {"correct-1": "correct 1", "correct-2": "correct 2",
                  "correct-part-b": "correct (Part B)", "missed_finding-1": "missed finding",
                  "fabricated_finding-1": "fabricated", "wrong_resource-1": "wrong resource"}


def recon_failing_rows(items: pd.DataFrame, verdicts: Verdicts,
                       starts: Mapping[str, Mapping[str, Rubric]], chains: Sequence[Chain],
                       environment: str, after: str) -> list[dict]:
    """Table 4: the reports of `environment` that carry Table 4 lists (two correct reports,
    the Part B one and one of each planned flaw; labels pass / fail) under the hand-written
    and label-taught rubrics and the hand rubric after the last round of its first chain
    (free mode first)."""
    here = items[items["scope"] == environment]
    if here.empty:
        raise ValueError(f"config key 'carry.recon.table4_environment': {environment!r} is not "
                         "among the judged Recon environments (carry.recon.environments)")
    variant = here["item_id"].map(lambda i: str(i).rsplit(":", 1)[-1])
    missing = [v for v in TABLE4_REPORTS if v not in set(variant)]
    if missing:
        raise ValueError(f"Table 4: the {environment!r} environment has no report(s) {missing}")
    order = {v: k for k, v in enumerate(TABLE4_REPORTS)}
    reports = here[variant.isin(order)].assign(_order=variant.map(order)) \
        .sort_values("_order", kind="stable").drop(columns="_order")
    versions = {"Hand-written": starts["hand"], "Label-taught": starts["label"],
                after: final_rubric_set(pick_chain(chains, [("hand", "free"),
                                                            ("hand", "fixed_count"),
                                                            ("hand", "delete_only")]))}
    names = {i: TABLE4_REPORTS[str(i).rsplit(":", 1)[-1]] for i in reports["item_id"]}
    return failing_rows("recon", reports, verdicts, versions, names,
                        {"correct": "pass", "flawed": "fail"})


def table5_example(items: pd.DataFrame) -> pd.DataFrame:
    """carry Table 5's "four responses of the example": the evaluation responses of one task
    (RAGTruth source), two faithful and two hallucinated, from the first task (in item id
    order) that has two of each; where none has, the task with the most of its rarer label,
    with what it has (at most two of each)."""
    evaluation = items[items["split"] == "evaluation"].sort_values("item_id", kind="stable")
    if evaluation.empty:
        raise ValueError("Table 5: no RAGTruth evaluation item")
    best, best_key = None, None
    for _, group in evaluation.groupby("task", sort=False):
        counts = group["label"].value_counts()
        key = (min(counts.get("correct", 0), counts.get("flawed", 0), 2),
               min(len(group), 4))
        if best_key is None or key > best_key:
            best, best_key = group, key
        if key == (2, 4):
            break
    if best is None:
        raise ValueError("Table 5: no RAGTruth evaluation item names its task")
    return pd.concat([best[best["label"] == label].head(2) for label in ("correct", "flawed")])


def ragtruth_failing_rows(items: pd.DataFrame, verdicts: Verdicts,
                          starts: Mapping[str, Mapping[str, Rubric]], chains: Sequence[Chain],
                          after: str) -> list[dict]:
    """Table 5: the responses of one example (`table5_example`) under the generated draft,
    the label-taught rubric and the label-taught rubric after its first chain."""
    examples = table5_example(items)
    versions = {"Generated": starts["generated"], "Label-taught": starts["label"],
                after: final_rubric_set(pick_chain(chains, [("label", "free"),
                                                            ("label", "fixed_count"),
                                                            ("label", "delete_only"),
                                                            ("generated", "free")]))}
    return failing_rows("ragtruth", examples, verdicts, versions,
                        {i: short_item_name(i) for i in examples["item_id"]},
                        {"correct": "faithful", "flawed": "hallucinated"})


def final_rubric_set(chain: Chain) -> dict[str, Rubric]:
    rounds = int(chain.record["rounds"])
    return {scope: rubric_after(chain.record, scope, rounds) for scope in chain.record["scopes"]}


def recon_item_name(item_id: str) -> str:
    """"recon:storage:wrong_resource-1" -> "wrong resource 1"."""
    return item_id.rsplit(":", 1)[-1].replace("_", " ").replace("-", " ")


def short_item_name(item_id: str) -> str:
    """A stable five-character name for a long item id (carry Table 5 prints such names)."""
    import hashlib
    return hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:5].upper()
