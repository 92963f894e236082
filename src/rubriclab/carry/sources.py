"""Rubric sources of the carry work as data: hand-written, generated draft and label-taught.

A rubric set maps a scope to a rubric. The scope says which items a rubric grades: an
environment name (Recon's hand rubrics are written per environment and name its
resources) or "all" (every item of the dataset). Every check has an id, its text, its
origin ("hand", "generated", "label") and its lineage (see `rubriclab.carry.revision`).

- generated draft: a generator model is given only the task (the dataset's task
  description, no item and no label) and writes the checks.
- label-taught: a teacher model is given calibration items with their human labels
  (correct or flawed) and writes checks that pass the correct ones and fail the flawed ones.
Both answer in the "rubric_checks_<n>" response format (at most n checks); an answer that cannot be parsed stops
the run with the reason (a rubric source is one call, so there is nothing to count around).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rubriclab.carry.checklists import load_generic_checklist
from rubriclab.carry.revision import Rubric, RubricCheck
from rubriclab.llm import Request

ALL_SCOPE = "all"
SOURCES = ("hand", "generated", "label")

RECON_TASK_DESCRIPTION = (
    "a security findings report written by an agent for the cloud environment and brief "
    "above: it should report every security misconfiguration of the resources in scope, each "
    "with the resource identifier, a severity and the configuration evidence, and report "
    "nothing about resources that are configured correctly"
)

WRITER_SYSTEM_PROMPT = (
    "You write grading checklists. Each check is one requirement that a judge, who sees the "
    "task input and the output, answers Yes (met) or No (not met). An output passes the "
    "checklist only if every check is answered Yes."
)

CHECKS_ANSWER = (
    'Answer with exactly one JSON object and nothing else (no code fence, no prose), of the '
    'form {"checks": ["<check 1>", "<check 2>", ...]}.'
)


def task_description(dataset: str) -> str:
    """What an output of the dataset is: shown to the judge, the generator and the reviser."""
    if dataset == "recon":
        return RECON_TASK_DESCRIPTION
    return load_generic_checklist(dataset).task_description


# --- generated draft ------------------------------------------------------------------------

def generated_messages(description: str, n_checks: int) -> list[dict]:
    user = (
        f"Outputs of a task will be graded with a checklist. Each output is {description}.\n\n"
        f"Write a checklist of {n_checks} checks for grading these outputs.\n\n{CHECKS_ANSWER}"
    )
    return [{"role": "system", "content": WRITER_SYSTEM_PROMPT},
            {"role": "user", "content": user}]


# --- label-taught ---------------------------------------------------------------------------

def label_taught_messages(description: str, examples: pd.DataFrame, n_checks: int) -> list[dict]:
    """The teacher sees each example's input, output and human label, in the given order."""
    if examples.empty:
        raise ValueError("label-taught rubric: no calibration examples to teach from")
    labels = set(examples["label"])
    if labels != {"correct", "flawed"}:
        raise ValueError(f"label-taught rubric: examples need both labels, got {sorted(labels)}")
    shown = []
    for number, row in enumerate(examples.itertuples(index=False), start=1):
        verdict = "CORRECT" if row.label == "correct" else "FLAWED"
        shown.append(f"### Example {number} (human label: {verdict})\n"
                     f"Input:\n{row.task}\n\nOutput:\n{row.output}")
    user = (
        f"Outputs of a task will be graded with a checklist. Each output is {description}.\n\n"
        "Human annotators labelled the example outputs below as CORRECT or FLAWED.\n\n"
        + "\n\n".join(shown)
        + f"\n\nWrite a checklist of {n_checks} checks such that every output the annotators "
        "would label CORRECT meets every check, and every output they would label FLAWED fails "
        "at least one check. Write checks that apply to any output of this task, not only to "
        f"these examples.\n\n{CHECKS_ANSWER}"
    )
    return [{"role": "system", "content": WRITER_SYSTEM_PROMPT},
            {"role": "user", "content": user}]


def teaching_examples(items: pd.DataFrame, per_label: int | None, seed: int) -> pd.DataFrame:
    """`per_label` correct and `per_label` flawed items (all when None), shuffled with `seed`."""
    for label in ("correct", "flawed"):
        available = int((items["label"] == label).sum())
        if available == 0:
            raise ValueError(f"label-taught rubric: no {label} calibration item")
        if per_label is not None and available < per_label:
            raise ValueError(f"label-taught rubric: {per_label} {label} examples asked for, "
                             f"only {available} calibration items have that label")
    ordered = items.sort_values("item_id", kind="stable")
    parts = []
    for label in ("correct", "flawed"):
        of_label = ordered[ordered["label"] == label]
        parts.append(of_label if per_label is None
                     else of_label.sample(n=per_label, random_state=seed))
    return pd.concat(parts).sample(frac=1.0, random_state=seed).reset_index(drop=True)


# --- building rubrics -----------------------------------------------------------------------

def source_request(model: str, messages: list[dict], temperature: float,
                   max_tokens: int, n_checks: int) -> Request:
    return Request.chat(model, messages, temperature=temperature, max_tokens=max_tokens,
                        response_format=f"rubric_checks_{n_checks}")


def rubric_from_texts(name: str, texts: list[str], origin: str, id_prefix: str) -> Rubric:
    checks = tuple(RubricCheck(id=f"{id_prefix}{n}", text=text, origin=origin)
                   for n, text in enumerate(texts, start=1))
    return Rubric(name=name, checks=checks)


def hand_rubrics(table: pd.DataFrame, environments: list[str]) -> dict[str, Rubric]:
    """Recon's hand-written rubrics (data/prepared/recon/rubrics_hand.csv), one per environment."""
    missing = sorted(set(environments) - set(table["environment"]))
    if missing:
        raise ValueError(f"rubrics_hand.csv has no checks for environment(s) {missing}")
    rubrics = {}
    for environment in environments:
        rows = table[table["environment"] == environment].sort_values("position")
        checks = tuple(RubricCheck(id=row.check_id, text=row.text, origin=row.origin)
                       for row in rows.itertuples(index=False))
        rubrics[environment] = Rubric(name=f"hand:{environment}", checks=checks)
    return rubrics


# --- rubric set files -----------------------------------------------------------------------

def write_rubric_set(path: Path, dataset: str, source: str, rubrics: Mapping[str, Rubric],
                     meta: Mapping[str, object] | None = None) -> None:
    payload = {
        "dataset": dataset,
        "source": source,
        "task_description": task_description(dataset),
        "meta": dict(meta or {}),
        "rubrics": {scope: rubric_to_dict(rubric) for scope, rubric in rubrics.items()},
    }
    Path(path).write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")


def read_start_sets(paths) -> dict[str, dict[str, Rubric]]:
    """source -> scope -> rubric, from the rubric set files of a dataset's start sources."""
    return {header["source"]: rubrics for header, rubrics in map(read_rubric_set, paths)}


def read_rubric_set(path: Path) -> tuple[dict, dict[str, Rubric]]:
    """(the file's header fields, scope -> rubric)."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        rubrics = {scope: rubric_from_dict(value) for scope, value in payload["rubrics"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a rubric set file ({exc})") from exc
    header = {key: value for key, value in payload.items() if key != "rubrics"}
    return header, rubrics


def rubric_to_dict(rubric: Rubric) -> dict:
    return {"name": rubric.name,
            "checks": [{"id": c.id, "text": c.text, "origin": c.origin,
                        "lineage": list(c.lineage)} for c in rubric.checks]}


def rubric_from_dict(value: Mapping) -> Rubric:
    checks = tuple(RubricCheck(id=c["id"], text=c["text"], origin=c["origin"],
                               lineage=tuple(c.get("lineage", ()))) for c in value["checks"])
    return Rubric(name=value["name"], checks=checks)


def build_model_rubric(client, dataset: str, source: str, items: pd.DataFrame, *, model: str,
                       n_checks: int, temperature: float, max_tokens: int,
                       examples_per_label: int | None, seed: int) -> tuple[dict[str, Rubric], dict]:
    """The generated-draft or label-taught rubric set of a dataset (one call, scope "all").

    `items` is the teaching pool (experiment.teaching_pool): the label teacher sees calibration
    items only, for Recon the Recon-72 reports of the calibration environments, for SummEdits
    and RAGTruth the calibration split.
    """
    description = task_description(dataset)
    if source == "generated":
        messages = generated_messages(description, n_checks)
        meta: dict = {"model": model}
    elif source == "label":
        if set(items["split"]) != {"calibration"}:
            raise ValueError(f"{dataset} label rubric: the teaching pool holds non-calibration "
                             f"items (splits {sorted(set(items['split']))})")
        examples = teaching_examples(items, examples_per_label, seed)
        messages = label_taught_messages(description, examples, n_checks)
        meta = {"model": model, "examples": list(examples["item_id"])}
    else:
        raise ValueError(f"source {source!r} is not written by a model (generated, label)")
    completion = client.run([source_request(model, messages, temperature, max_tokens, n_checks)],
                            label=f"carry {source} rubric {dataset}")[0]
    if completion.outcome != "ok":
        raise ValueError(f"{dataset} {source} rubric: the answer of {model} could not be read "
                         f"as a checklist after re-asking ({completion.error}); nothing to use")
    prefix = "g" if source == "generated" else "l"
    texts = list(dict.fromkeys(completion.parsed))
    meta["repeated_checks_dropped"] = len(completion.parsed) - len(texts)
    if meta["repeated_checks_dropped"]:
        logging.getLogger(__name__).warning(
            "%s %s rubric: %d check(s) written twice by %s were kept once", dataset, source,
            meta["repeated_checks_dropped"], model)
    rubric = rubric_from_texts(f"{source}:{dataset}", texts, source, prefix)
    return {ALL_SCOPE: rubric}, meta
