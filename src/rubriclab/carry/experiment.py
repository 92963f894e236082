"""The carry experiment from rubrics to verdicts: items, chain records, judging plan, verdicts.

Data flow (each step one Snakemake rule, see workflow/rules/carry.smk):
1. start rubric sets (hand, generated, label; `rubriclab.carry.sources`);
2. ungated self-review chains: the reviser's proposals, round by round (`run_reviser_chain`);
3. one judging job per (dataset, judge): every check text that any rubric of any chain ever
   holds, asked of every item in its scope, plus the one-call renderings of the start
   rubrics on the rendering items (`judge_plan`);
4. replay (`rubriclab.carry.replay.replay_chain`): each chain's recorded proposals decided by
   each gate with evidence from that judge's verdicts on the gate items, then rates with
   Clopper-Pearson intervals (and the paired bootstrap's beside them), Shapley attribution
   per check (`rubriclab.carry.scoring`), and the checks each deletion removed.

A verdict is per (item, check text): the judge prompt depends on the text only, so a check
that keeps its text through an edit elsewhere, or appears in several chains, is judged once.
Verdict codes: PASS (majority Yes), FAIL (majority No), UNDETERMINED (no majority: ties or
unparseable votes). A rubric fails an item if a check fails it, passes it if every check
passes it, and is undetermined otherwise; undetermined items are left out of the rates and
counted, never mapped to pass or fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rubriclab.carry.aggregate import FAIL, PASS, UNDETERMINED, all_must_pass
from rubriclab.carry.checklists import Check
from rubriclab.carry.prompts import per_check_messages
from rubriclab.carry.renderings import rendering_call, rendering_outcome
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, Operation, Revision, RevisionRejected, Rubric, revision_format_name,
    revision_from_answer, revision_messages, run_chain,
)
from rubriclab.carry.sources import ALL_SCOPE, rubric_to_dict
from rubriclab.llm import Completion, Request

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


def items_in_scope(items: pd.DataFrame, scope: str) -> pd.DataFrame:
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
                      ask: Callable[[Request], Completion], source: str = "") -> dict:
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
