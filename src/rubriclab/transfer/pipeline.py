"""The transfer work's model-calling stages, one function per Snakemake rule.

Stages and their files (results/transfer/...):
    examples       examples.csv: the HealthBench examples used (n, chosen from the sample)
    restate        expert.json: every expert rubric, negative criteria restated positively by
                   the restater (Appendix E prompt 3), with the checker's flags
    generate       rubrics/<generator>.json: one rubric per example from the conversation alone
    respond        responses/<responder>.csv: one response per example by a model (sample k)
    degrade        degraded/<model>.csv: the model asked to satisfy an unrelated expert rubric
                   (restated, from expert.json)
    judge          <responses file>.verdicts.csv: every response judged on the rubrics the
                   analysis reads it on (transfer.reads), `votes` samples each, majority per
                   criterion
    intervene      interventions/<model>.csv: whole-rubric and (for the main response model,
                   unless configured otherwise) single-criterion edits of the model's original
                   response (each from the original, never stacked)
    match          matching/<generator>.csv: RubricRAG similarity for every criterion pair, and
                   the three matching framings of Figure A.1

Rubrics are referred to by name: "expert" or a generator's model string. A verdict is 1
(satisfied), 0 (not) or -1 (no majority: undetermined, left out where it matters and counted).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rubriclab.llm import Request
from rubriclab.llm.formats import UnparseableAnswer
from rubriclab.transfer.formats import (
    RESPONSE_FORMAT, RUBRIC_FORMAT, SIMILARITY_FORMAT, match_format_name, match_matrix,
)
from rubriclab.transfer.ids import (
    EXPERT, degraded_id, intervention_id, original_id, physician_id,
)
from rubriclab.transfer.prompts import (
    FRAMINGS, criterion_intervention_messages, degraded_response_messages, generation_messages,
    judge_vote_requests, matching_messages, response_messages, rubric_intervention_messages,
    similarity_messages,
)
from rubriclab.transfer.restate import apply_restatement, restate_request

if TYPE_CHECKING:
    from rubriclab.transfer.reads import AnalysisReads

UNDETERMINED = -1
RESPONSE_COLUMNS = ["example_id", "response_id", "model", "kind", "target_rubric",
                    "target_index", "direction", "text"]
# cache_keys: the call-cache keys of the votes' answers, in vote order, space-separated (one
# answer scores every criterion of the rubric, so a rubric's rows share them); the cache holds
# the texts (rubriclab.browser looks them up).
VERDICT_COLUMNS = ["example_id", "response_id", "rubric", "criterion_index", "verdict",
                   "votes_yes", "votes", "cache_keys"]

Ask = Callable[[list[Request], str], list]


# --- examples -------------------------------------------------------------------------------

def choose_examples(sample: pd.DataFrame, n: int | None, max_criteria: int | None,
                    max_conversation_chars: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(examples, left_out with a reason): size filters first, then n by theme in turn.

    The filters exist for the small embedded run; the paper setting uses every sampled example.
    Examples are taken round-robin over themes in the sample's order, so any n keeps the
    stratification as even as it can.
    """
    reasons = pd.Series("", index=sample.index)
    if max_criteria is not None:
        reasons[(sample["n_criteria"] > max_criteria) & (reasons == "")] = \
            f"more than {max_criteria} expert criteria"
    if max_conversation_chars is not None:
        reasons[(sample["task"].str.len() > max_conversation_chars) & (reasons == "")] = \
            f"conversation longer than {max_conversation_chars} characters"
    eligible = sample[reasons == ""]
    if n is not None:
        order = eligible.groupby("theme", sort=True).cumcount()
        themes = eligible["theme"].rank(method="dense")
        ranked = eligible.assign(_turn=order, _theme=themes).sort_values(["_turn", "_theme"])
        chosen_ids = set(ranked["item_id"].head(n))
        reasons[sample["item_id"].isin(set(eligible["item_id"]) - chosen_ids)] = \
            f"beyond the first {n} examples taken by theme in turn"
        eligible = sample[sample["item_id"].isin(chosen_ids)]
    if eligible.empty:
        raise ValueError("transfer: no HealthBench example passes the configured filters "
                         f"(max_criteria={max_criteria}, max_conversation_chars="
                         f"{max_conversation_chars})")
    examples = eligible.rename(columns={"item_id": "example_id"})[
        ["example_id", "theme", "prompt_json", "rubric_json", "ideal_completion",
         "has_ideal_completion"]].reset_index(drop=True)
    left_out = sample.loc[reasons != "", ["item_id", "theme"]].assign(reason=reasons[reasons != ""])
    return examples, left_out


def physician_responses(examples: pd.DataFrame) -> pd.DataFrame:
    has = examples["has_ideal_completion"].astype(str) == "True"
    rows = [dict(example_id=e.example_id, response_id=physician_id(e.example_id),
                 model="physician", kind="physician", target_rubric="", target_index=-1,
                 direction="", text=e.ideal_completion)
            for e in examples[has].itertuples(index=False)]
    return pd.DataFrame(rows, columns=RESPONSE_COLUMNS)


# --- expert rubrics ------------------------------------------------------------------------

def restate_expert_rubrics(examples: pd.DataFrame, model: str, temperature: float,
                           ask: Ask) -> dict:
    """Every example's expert rubric with negative criteria restated positively (one call per
    rubric with any), checked: flags name criteria left unrestated or still negative."""
    requests, owners = [], []
    for example in examples.itertuples(index=False):
        request = restate_request(model, example.rubric_json, where=example.example_id,
                                  temperature=temperature)
        if request is not None:
            requests.append(request)
            owners.append(example.example_id)
    completions = dict(zip(owners, ask(requests, "transfer restate"), strict=True))
    rubrics, flags = {}, []
    for example in examples.itertuples(index=False):
        completion = completions.get(example.example_id)
        answer = None if completion is None else (
            completion.parsed if completion.outcome == "ok" else None)
        if completion is None:
            answer = {}
        restatement = apply_restatement(example.example_id, example.rubric_json, answer)
        flags += [dict(example_id=example.example_id, criterion_id=f.id,
                       reason=f.reason) for f in restatement.flags]
        rubrics[example.example_id] = [
            dict(id=c.id, index=c.index, original=c.original, text=c.restated, points=c.points,
                 negative=c.negative) for c in restatement.criteria]
    return {"model": model, "rubrics": rubrics, "flags": flags}


def usable_expert_rubrics(expert: Mapping) -> dict[str, list[str]]:
    """example id -> criterion texts; examples with a criterion left unrestated are left out
    (they are listed in expert.json's flags and counted in the manifest)."""
    return {example_id: [c["text"] for c in criteria]
            for example_id, criteria in expert["rubrics"].items()
            if all(c["text"] for c in criteria)}


# --- generated rubrics ----------------------------------------------------------------------

def generate_rubrics(examples: pd.DataFrame, model: str, temperature: float, max_tokens: int,
                     ask: Ask) -> dict:
    requests = [Request.chat(model, generation_messages(e.prompt_json), temperature=temperature,
                             max_tokens=max_tokens, response_format=RUBRIC_FORMAT)
                for e in examples.itertuples(index=False)]
    completions = ask(requests, f"transfer generate {model}")
    rubrics = {}
    for example, completion in zip(examples.itertuples(index=False), completions, strict=True):
        if completion.outcome == "ok":
            rubrics[example.example_id] = {"status": "ok", "criteria": completion.parsed}
        else:
            rubrics[example.example_id] = {"status": completion.outcome,
                                           "error": completion.error, "criteria": []}
    return {"model": model, "rubrics": rubrics}


def analysable_examples(examples: pd.DataFrame, expert: Mapping,
                        generated: Mapping[str, Mapping]) -> tuple[list[str], pd.DataFrame]:
    """Examples every rubric exists for (so every comparison is paired), and the rest with why."""
    usable = usable_expert_rubrics(expert)
    keep, left_out = [], []
    for example_id in examples["example_id"]:
        reasons = []
        if example_id not in usable:
            reasons.append("expert rubric: a negative criterion was not restated")
        for name, rubric_set in generated.items():
            entry = rubric_set["rubrics"].get(example_id)
            if entry is None or entry["status"] != "ok":
                reasons.append(f"{name}: no parseable generated rubric")
        if reasons:
            left_out.append(dict(example_id=example_id, reason="; ".join(reasons)))
        else:
            keep.append(example_id)
    if not keep:
        raise ValueError("transfer: no example has an expert rubric and a rubric from every "
                         f"generator: {left_out[:3]}")
    return keep, pd.DataFrame(left_out, columns=["example_id", "reason"])


def rubric_texts(expert: Mapping, generated: Mapping[str, Mapping],
                 example_ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """rubric name -> example id -> criterion texts."""
    usable = usable_expert_rubrics(expert)
    texts = {EXPERT: {e: usable[e] for e in example_ids}}
    for name, rubric_set in generated.items():
        texts[name] = {e: rubric_set["rubrics"][e]["criteria"] for e in example_ids}
    return texts


# --- responses ------------------------------------------------------------------------------

def respond(examples: pd.DataFrame, model: str, sample: int, temperature: float,
            max_tokens: int, ask: Ask) -> pd.DataFrame:
    requests = [Request.chat(model, response_messages(e.prompt_json), temperature=temperature,
                             max_tokens=max_tokens, response_format=RESPONSE_FORMAT,
                             sample_index=sample)
                for e in examples.itertuples(index=False)]
    return _responses(examples, requests, ask, lambda e: original_id(e, model, sample), model,
                      "original", f"transfer respond {model} sample {sample}")


def degrade(examples: pd.DataFrame, expert: Mapping, model: str, temperature: float,
            max_tokens: int, seed: int, ask: Ask) -> pd.DataFrame:
    """RubricRAG's bad responses: the model asked to satisfy the expert rubric of another,
    randomly chosen example (never the example itself), as every algorithm of the seed's
    Appendix D takes an expert rubric: "with negatively phrased criteria restated positively".

    `expert` is restate_expert_rubrics' payload (expert.json); the rubrics drawn from are those
    of its examples with every negative criterion restated (usable_expert_rubrics), so the model
    is never told to satisfy a flaw. One request per example of `examples`.
    """
    pool = usable_expert_rubrics(expert)
    rng = np.random.default_rng(seed)
    requests = []
    for example in examples.itertuples(index=False):
        others = [e for e in pool if e != example.example_id]
        if not others:
            raise ValueError(f"degrade: no other example with a restated expert rubric to take "
                             f"an unrelated rubric from for {example.example_id} (restated: "
                             f"{sorted(pool)})")
        criteria = pool[others[int(rng.integers(len(others)))]]
        requests.append(Request.chat(model, degraded_response_messages(example.prompt_json,
                                                                       criteria),
                                     temperature=temperature, max_tokens=max_tokens,
                                     response_format=RESPONSE_FORMAT))
    return _responses(examples, requests, ask, lambda e: degraded_id(e, model), model,
                      "degraded", f"transfer degrade {model}")


def _responses(examples: pd.DataFrame, requests: list[Request], ask: Ask,
               response_id: Callable[[str], str], model: str, kind: str,
               label: str) -> pd.DataFrame:
    completions = ask(requests, label)
    rows = []
    for example, completion in zip(examples.itertuples(index=False), completions, strict=True):
        if completion.outcome != "ok":
            raise ValueError(f"{label}: {example.example_id}: no usable response "
                             f"({completion.outcome}: {completion.error})")
        rows.append(dict(example_id=example.example_id, response_id=response_id(example.example_id),
                         model=model, kind=kind, target_rubric="", target_index=-1,
                         direction="", text=completion.parsed))
    return pd.DataFrame(rows, columns=RESPONSE_COLUMNS)


# --- judging --------------------------------------------------------------------------------

def judge_responses(responses: pd.DataFrame, examples: pd.DataFrame,
                    rubrics: Mapping[str, Mapping[str, list[str]]], judge: str, votes: int,
                    temperature: float, ask: Ask, *,
                    reads: AnalysisReads | None) -> pd.DataFrame:
    """Each response on the rubrics the analysis reads it on (`reads`, a
    transfer.reads.AnalysisReads; None: every rubric that has the example): `votes` samples,
    majority per criterion. Which rubrics are judged never changes a request, so a verdict
    judged before is read from the cache."""
    conversations = dict(zip(examples["example_id"], examples["prompt_json"]))
    requests, keys = [], []
    for response in responses.itertuples(index=False):
        wanted = None if reads is None else set(reads.rubrics(response))
        if wanted is not None and not wanted <= set(rubrics):
            raise ValueError(f"judge: response {response.response_id!r} is read on "
                             f"{sorted(wanted - set(rubrics))}, which are not among the "
                             f"rubrics {list(rubrics)}")
        for name, by_example in rubrics.items():
            if wanted is not None and name not in wanted:
                continue
            criteria = by_example.get(response.example_id)
            if criteria is None:
                if wanted is not None:
                    raise ValueError(f"judge: rubric {name!r} has no criteria for example "
                                     f"{response.example_id!r} (response "
                                     f"{response.response_id!r})")
                continue
            batch = judge_vote_requests(judge, conversations[response.example_id], criteria,
                                        response.text, temperature=temperature, votes=votes)
            requests += batch
            keys += [(response.example_id, response.response_id, name, len(criteria))] * len(batch)
    completions = ask(requests, f"transfer judge {judge}")
    tallies: dict[tuple, list] = {}
    cache_keys: dict[tuple, list[str]] = {}
    for key, completion in zip(keys, completions, strict=True):
        tallies.setdefault(key, []).append(completion.parsed if completion.outcome == "ok" else None)
        cache_keys.setdefault(key, []).append(completion.key)
    rows = []
    for (example_id, response_id, name, n), answers in tallies.items():
        answer_keys = " ".join(cache_keys[(example_id, response_id, name, n)])
        for index in range(n):
            yes = sum(1 for a in answers if a is not None and a[index] == 1)
            no = sum(1 for a in answers if a is not None and a[index] == 0)
            verdict = 1 if 2 * yes > len(answers) else 0 if 2 * no > len(answers) else UNDETERMINED
            rows.append(dict(example_id=example_id, response_id=response_id, rubric=name,
                             criterion_index=index, verdict=verdict, votes_yes=yes,
                             votes=len(answers), cache_keys=answer_keys))
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def verdict_vectors(verdicts: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """(response id, rubric) -> verdicts in criterion order."""
    vectors = {}
    for (response_id, rubric), rows in verdicts.groupby(["response_id", "rubric"], sort=False):
        vectors[(response_id, rubric)] = rows.sort_values("criterion_index")["verdict"].to_numpy()
    return vectors


# --- interventions --------------------------------------------------------------------------

def intervene(originals: pd.DataFrame, examples: pd.DataFrame, verdicts: pd.DataFrame,
              rubrics: Mapping[str, Mapping[str, list[str]]], model: str, temperature: float,
              max_tokens: int, criteria_per_rubric: int | None, ask: Ask, *,
              criterion_edits: bool) -> pd.DataFrame:
    """Whole-rubric edits to pass and to fail each rubric, and (with `criterion_edits`) one edit
    per criterion towards its other state (R_{+c} for a failing c, R_{-c} for a passing one),
    each of the original.

    Criteria the judge left undetermined on the original get no single-criterion edit; with
    `criteria_per_rubric` only the first that many criteria of each rubric are edited. Figure 6
    and Table A.9 read single-criterion edits of the main response model only (transfer.reads).
    """
    conversations = dict(zip(examples["example_id"], examples["prompt_json"]))
    vectors = verdict_vectors(verdicts)
    requests, rows = [], []
    for original in originals.itertuples(index=False):
        conversation = conversations[original.example_id]
        for name, by_example in rubrics.items():
            criteria = by_example[original.example_id]
            state = vectors[(original.response_id, name)]
            if (state == UNDETERMINED).any():
                judged = None
            else:
                judged = [{"text": t, "satisfied": int(s)} for t, s in zip(criteria, state)]
            for direction, sign in (("pass", "+"), ("fail", "-")):
                if judged is None:
                    continue
                requests.append(_edit_request(model, rubric_intervention_messages(
                    direction, conversation, original.text, judged), temperature, max_tokens))
                rows.append(dict(example_id=original.example_id, model=model,
                                 kind="rubric_edit", target_rubric=name, target_index=-1,
                                 direction=sign))
            if not criterion_edits:
                continue
            limit = len(criteria) if criteria_per_rubric is None else criteria_per_rubric
            for index, (text, value) in enumerate(list(zip(criteria, state))[:limit]):
                if value == UNDETERMINED:
                    continue
                direction, sign = ("fail", "-") if value == 1 else ("pass", "+")
                requests.append(_edit_request(model, criterion_intervention_messages(
                    direction, conversation, original.text, {"text": text, "satisfied": int(value)}),
                    temperature, max_tokens))
                rows.append(dict(example_id=original.example_id, model=model,
                                 kind="criterion_edit", target_rubric=name, target_index=index,
                                 direction=sign))
    completions = ask(requests, f"transfer intervene {model}")
    out = []
    for row, completion in zip(rows, completions, strict=True):
        if completion.outcome != "ok":
            raise ValueError(f"intervention {row}: no usable edited response "
                             f"({completion.outcome}: {completion.error})")
        response_id = intervention_id(row["example_id"], row["kind"], model,
                                      row["target_rubric"], row["target_index"], row["direction"])
        out.append(dict(row, response_id=response_id, text=completion.parsed))
    return pd.DataFrame(out, columns=RESPONSE_COLUMNS)


def _edit_request(model: str, messages: list[dict], temperature: float,
                  max_tokens: int) -> Request:
    return Request.chat(model, messages, temperature=temperature, max_tokens=max_tokens,
                        response_format=RESPONSE_FORMAT)


# --- matching -------------------------------------------------------------------------------

def match_rubrics(examples: pd.DataFrame, expert: Mapping[str, list[str]],
                  generated: Mapping[str, list[str]], generator: str, model: str,
                  temperature: float, framings: Sequence[str], ask: Ask) -> pd.DataFrame:
    """Similarity 0-9 of every (generated, expert) pair (Algorithm 2, no conversation) and, per
    framing, the 0/1 match of every pair; one row per pair and measure."""
    conversations = dict(zip(examples["example_id"], examples["prompt_json"]))
    requests, keys = [], []
    for example_id, gen_criteria in generated.items():
        exp_criteria = expert[example_id]
        for g, gen_text in enumerate(gen_criteria):
            for e, exp_text in enumerate(exp_criteria):
                requests.append(Request.chat(model, similarity_messages(exp_text, gen_text),
                                             temperature=temperature, max_tokens=4,
                                             response_format=SIMILARITY_FORMAT,
                                             role="similarity"))
                keys.append(("similarity", example_id, g, e))
        for framing in framings:
            if framing not in FRAMINGS:
                raise ValueError(f"unknown matching framing {framing!r}; known: {list(FRAMINGS)}")
            requests.append(Request.chat(
                model, matching_messages(framing, conversations[example_id], exp_criteria,
                                         gen_criteria),
                temperature=temperature, max_tokens=32 + 24 * len(gen_criteria),
                response_format=match_format_name(len(gen_criteria))))
            keys.append((framing, example_id, -1, -1))
    completions = ask(requests, f"transfer match {generator}")
    rows = []
    for (measure, example_id, g, e), completion in zip(keys, completions, strict=True):
        ok = completion.outcome == "ok"
        if measure == "similarity":
            rows.append(dict(example_id=example_id, generator=generator, measure=measure,
                             generated_index=g, expert_index=e,
                             value=completion.parsed if ok else np.nan))
            continue
        n_exp, n_gen = len(expert[example_id]), len(generated[example_id])
        matrix = None
        if ok:
            try:
                matrix = match_matrix(completion.parsed, n_exp)
            except UnparseableAnswer as exc:  # a true-criterion label the prompt never showed
                logging.getLogger(__name__).warning("%s %s on %s: %s", generator, measure,
                                                    example_id, exc)
                ok = False
        for gi in range(n_gen):
            for ei in range(n_exp):
                rows.append(dict(example_id=example_id, generator=generator, measure=measure,
                                 generated_index=gi, expert_index=ei,
                                 value=matrix[gi][ei] if ok and matrix is not None
                                 else np.nan))
    return pd.DataFrame(rows, columns=MATCHING_COLUMNS)


# --- files ----------------------------------------------------------------------------------

def write_json(path, payload) -> None:
    Path(path).write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def read_json(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_responses(path) -> pd.DataFrame:
    table = pd.read_csv(path, keep_default_na=False)
    missing = [c for c in RESPONSE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a responses table, missing column(s) {missing}")
    return table


def model_client(snakemake_config: Mapping, ledger_path, rule: str, role: str):
    """An LLMClient with a ledger, for models playing `role` (see llm.roles), and the `ask`
    callable the stages take."""
    from rubriclab.model_job import model_client as job_model_client

    client = job_model_client(snakemake_config, ledger_path, rule, role)

    def ask(requests: list[Request], label: str) -> list:
        return client.run(requests, label=label) if requests else []

    return client, ask


def load_rubrics(examples: pd.DataFrame, expert_path, rubric_paths) -> tuple[list[str], dict, pd.DataFrame]:
    """(analysable example ids, rubric name -> example -> texts, left-out examples)."""
    expert = read_json(expert_path)
    generated = {}
    for path in rubric_paths:
        payload = read_json(path)
        generated[payload["model"]] = payload
    example_ids, left_out = analysable_examples(examples, expert, generated)
    return example_ids, rubric_texts(expert, generated, example_ids), left_out


def embedding_cosines(embedder, rubrics: Mapping[str, Mapping[str, list[str]]],
                      example_ids: Sequence[str]) -> pd.DataFrame:
    """Cosine of every (generated, expert) criterion pair of every generator, per example."""
    from rubriclab.llm.embedding import cosine_matrix

    rows = []
    for example_id in example_ids:
        expert = embedder.embed(rubrics[EXPERT][example_id])
        for generator, by_example in rubrics.items():
            if generator == EXPERT:
                continue
            matrix = cosine_matrix(embedder.embed(by_example[example_id]), expert)
            rows += [dict(example_id=example_id, generator=generator, generated_index=g,
                          expert_index=e, cosine=float(matrix[g, e]))
                     for g in range(matrix.shape[0]) for e in range(matrix.shape[1])]
    return pd.DataFrame(rows, columns=["example_id", "generator", "generated_index",
                                       "expert_index", "cosine"])


MATCHING_COLUMNS = ["example_id", "generator", "measure", "generated_index", "expert_index",
                    "value"]


def write_matching(matching: pd.DataFrame, path) -> None:
    """A matching table as CSV; an unparseable answer's NaN is written "NaN", never empty."""
    matching.to_csv(path, index=False, na_rep="NaN")


def read_matching(path) -> pd.DataFrame:
    table = pd.read_csv(path, keep_default_na=False, na_values=["NaN"])
    missing = [c for c in MATCHING_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a matching table, missing column(s) {missing}")
    table["value"] = pd.to_numeric(table["value"], errors="raise")
    return table
