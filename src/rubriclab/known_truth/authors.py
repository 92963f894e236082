"""The known-truth world's scripted authors: the rubric writer and the reviser
(`rubriclab.known_truth` explains the world).

fake/known-writer answers carry's rubric-source prompts (rubriclab.carry.sources) with the
vocabulary of `world`: the label-taught rubric (the prompt shows labelled examples) is a check
per kind of flaw the labels show, with Recon's open coverage check; the generated draft (no
labels) mixes real checks with requirements the task never stated. At most the number of checks
the prompt asks for, in the order below.

fake/known-reviser?salt=<name>&add=<p>&delete=<p>&edit=<p> answers carry's revision prompts
(rubriclab.carry.revision) blind: it reads the ids and texts of the rubric it is shown and the
mode its prompt states, never what a check means in the world (which faults it catches, whom
it fails), nor any label. Each round it draws ONE action from the set probabilities:

    free            add with probability add, delete with delete, edit with edit;
    fixed count     a delete paired with an add with probability add + delete, an edit with
                    edit ("must keep exactly" n checks);
    delete only     a delete with probability delete ("You may only keep or delete");
    and otherwise (the rest, 1 - add - delete - edit) no change this round.

Which check it deletes or edits is uniform over the rubric's checks. What it adds is uniform
over every requirement text the world declares for the dataset's writer and reviser
(`world.dataset_vocabulary`: on Recon the label-taught checks with the open coverage check, its
narrowed form, and the requirements no report meets; on SummEdits / RAGTruth the label-taught,
generated and share-unmet requirements) that the rubric does not already hold. What an edit
writes is uniform over the forms the world declares for the check, so the judge can read it
(`world.edited_meaning`): on Recon a check as written (a hand check or one of the vocabulary)
with one of STRICT_CLAUSES appended, and for the open coverage check also RECON_NARROWED. The
world declares no edit form on SummEdits / RAGTruth, nor for a check already edited.
Deterministic fallbacks: an edit drawn on a check with no form passes to the next check of a
shuffled order of the rubric (a draw without replacement), and makes no change where no check
has one; an add or swap with nothing left to add makes no change; a delete that would leave
no check (free, delete only) makes no change.

Defaults: add = delete = edit = 1/3, the plain symmetric reading of a reviser asked to "review
and improve" the rubric: it changes something every round, with no preference among the three
changes the free prompt offers (a round without change only where the options sum below 1).
They are not tuned to any claim of the papers: whether a gate holds a chain near its start has
to follow from what the gates and the judge see, not from which changes the reviser chose.

The draws come from a generator seeded by the salt, the chain's seed (the request's sample
index) and the rubric shown, so the revisers and seeds make different chains, each
reproducible.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from urllib.parse import parse_qs

from .world import (
    LABELLED_VOCABULARY, RECON, RECON_COVERAGE, RECON_LABEL, RECON_NARROWED, STRICT_CLAUSES,
    KnownWorld, OutsideTheWorld, dataset_vocabulary,
)

RECON_GENERATED = (
    "Does every finding give a CVSS v3.1 base score and vector string?",
    "Does every finding give a severity of critical, high, medium or low?",
    "Does every finding quote configuration evidence that matches the resource's actual "
    "configuration?",
    "Does the report give a remediation deadline in days for every finding?",
    "Is every finding attributed, by its identifier, to the resource whose configuration "
    "shows it?",
)

_CHECKS_ASKED = re.compile(r"Write a checklist of (\d+) checks")
_LISTED = re.compile(r"^\[([^\]]+)\] (.*)$", re.MULTILINE)


def dataset_of(prompt: str) -> str:
    """The dataset a source or revision prompt is about, from its task description."""
    if "security findings report" in prompt:
        return RECON
    if "a summary of the document above" in prompt:
        return "summedits"
    if "a response to the request above" in prompt:
        return "ragtruth"
    raise OutsideTheWorld("the known-truth authors write for Recon, SummEdits and RAGTruth; "
                          f"this prompt names none of their tasks: {prompt[:120]!r}")


def _user(messages: list[dict[str, str]]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")


# --- the writer -----------------------------------------------------------------------------

def writer_answer(response_format: str, messages: list[dict[str, str]]) -> str:
    prompt = _user(messages)
    asked = _CHECKS_ASKED.search(prompt)
    if not response_format.startswith("rubric_checks") or asked is None:
        raise OutsideTheWorld("the known-truth writer answers carry's rubric-source prompts "
                              f"(rubric_checks_<n>), not {response_format!r}")
    dataset = dataset_of(prompt)
    taught = "Human annotators labelled" in prompt
    if dataset == RECON:
        texts = list(RECON_LABEL) if taught else list(RECON_GENERATED)
    else:
        texts = list(LABELLED_VOCABULARY[dataset]["label" if taught else "generated"])
    return json.dumps({"checks": texts[:int(asked.group(1))]})


# --- the reviser ----------------------------------------------------------------------------

DEFAULT_PROBABILITY = 1 / 3
ACTIONS = ("add", "delete", "edit")
_SUM_TOLERANCE = 1e-9  # 1/3 written as 0.333.. three times may sum a hair above 1


def reviser_probabilities(model: str) -> dict[str, float]:
    """{add, delete, edit: probability} of a `fake/known-reviser?...` model string; an option
    not given is DEFAULT_PROBABILITY. Each must be in [0, 1] and together at most 1."""
    options = parse_qs(model.partition("?")[2])
    probabilities = {}
    for action in ACTIONS:
        if action not in options:
            probabilities[action] = DEFAULT_PROBABILITY
            continue
        try:
            value = float(options[action][0])
        except ValueError:
            raise ValueError(f"fake model {model!r}: {action} must be a number, got "
                             f"{options[action][0]!r}") from None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"fake model {model!r}: {action} must be in [0, 1], got {value}")
        probabilities[action] = value
    total = sum(probabilities.values())
    if total > 1.0 + _SUM_TOLERANCE:
        unset = [a for a in ACTIONS if a not in options]
        raise ValueError(
            f"fake model {model!r}: add + delete + edit must be at most 1, got {total:.4g}"
            + (f" ({', '.join(unset)} not given: {DEFAULT_PROBABILITY:.4g} each by default)"
               if unset else ""))
    return probabilities


def reviser_answer(model: str, seed: int, messages: list[dict[str, str]],
                   world: KnownWorld) -> str:
    probabilities = reviser_probabilities(model)
    prompt = _user(messages)
    dataset = dataset_of(prompt)
    checks = _LISTED.findall(prompt)
    if not checks:
        raise OutsideTheWorld("the known-truth reviser found no checklist ([id] text lines)")
    if "You may only keep or delete" in prompt:
        mode = "delete_only"
    elif "must keep exactly" in prompt:
        mode = "fixed_count"
    else:
        mode = "free"
    salt = parse_qs(model.partition("?")[2]).get("salt", [""])[0]
    digest = hashlib.sha256(json.dumps([salt, seed, checks]).encode("utf-8")).hexdigest()
    rng = random.Random(digest)
    actions, adds = _plan(draw_action(mode, probabilities, rng.random()), checks,
                          _additions(dataset, checks), _edit_forms(dataset, checks, world), rng)
    entries = []
    for check_id, _ in checks:
        action = actions.get(check_id, ("keep",))
        entry = {"id": check_id, "action": action[0]}
        if action[0] == "edit":
            entry["text"] = action[1]
        entries.append(entry)
    entries += [{"action": "add", "text": text} for text in adds]
    return json.dumps({"checks": entries})


def draw_action(mode: str, probabilities: dict[str, float], u: float) -> str:
    """The round's action from one uniform draw u in [0, 1): "add", "delete", "edit", "swap"
    (a delete paired with an add) or "none"."""
    add, delete, edit = (probabilities[a] for a in ACTIONS)
    if mode == "delete_only":
        return "delete" if u < delete else "none"
    if mode == "fixed_count":
        steps: tuple[tuple[str, float], ...] = (("swap", add + delete), ("edit", add + delete + edit))
    else:
        steps = (("add", add), ("delete", add + delete), ("edit", add + delete + edit))
    return next((action for action, bound in steps if u < bound), "none")


def _additions(dataset: str, checks: list[tuple[str, str]]) -> list[str]:
    """Every requirement text the world declares for the dataset's writer and reviser, in
    its declared order, less those the rubric already holds."""
    held = {text for _, text in checks}
    return [text for text in dataset_vocabulary(dataset) if text not in held]


def _edit_forms(dataset: str, checks: list[tuple[str, str]],
                world: KnownWorld) -> dict[str, list[str]]:
    """{check id: the edited texts the world declares for it}, from the texts alone: on
    Recon, a check the world knows as written (a hand check or one of the closed vocabulary,
    not one already edited) with one of STRICT_CLAUSES appended, and the open coverage check
    also narrowed (RECON_NARROWED). The world declares no edit form on SummEdits or RAGTruth
    (STRICT_CLAUSES ask a security report for CVSS scores and CIS controls)."""
    if dataset != RECON:
        return {}
    known_texts = world.vocabulary(RECON).keys()
    forms = {}
    for check_id, text in checks:
        if text in known_texts:
            forms[check_id] = [f"{text} {clause}" for clause in STRICT_CLAUSES]
            if text == RECON_COVERAGE:
                forms[check_id].append(RECON_NARROWED)
    return forms


def _plan(action: str, checks: list[tuple[str, str]], additions: list[str],
          edit_forms: dict[str, list[str]], rng: random.Random) -> tuple[dict, list[str]]:
    """{check id: (action, new text?)} and the texts to add, for the drawn action."""
    ids = [check_id for check_id, _ in checks]
    if action in ("add", "swap") and not additions:
        return {}, []
    if action == "add":
        return {}, [rng.choice(additions)]
    if action == "delete":
        if len(ids) < 2:  # the prompt asks that at least one check remain
            return {}, []
        return {rng.choice(ids): ("delete",)}, []
    if action == "swap":
        return {rng.choice(ids): ("delete",)}, [rng.choice(additions)]
    if action == "edit":
        # A uniform draw of the check; one without a declared form is passed over for the
        # next of the same shuffled order (a draw without replacement).
        for check_id in rng.sample(ids, len(ids)):
            if edit_forms.get(check_id):
                return {check_id: ("edit", rng.choice(edit_forms[check_id]))}, []
    return {}, []
