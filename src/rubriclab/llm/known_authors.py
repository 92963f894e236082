"""The known-truth world's scripted authors: the rubric writer and the reviser
(`rubriclab.llm.known` explains the world).

fake/known-writer answers carry's rubric-source prompts (rubriclab.carry.sources) with the
vocabulary of `known`: the label-taught rubric (the prompt shows labelled examples) is a check
per kind of flaw the labels show, with Recon's open coverage check; the generated draft (no
labels) mixes real checks with requirements the task never stated. At most the number of checks
the prompt asks for, in the order below.

fake/known-reviser?salt=<name> answers carry's revision prompts (rubriclab.carry.revision) as
carry Figure 4 describes self-review, one step per round, reading the rubric it is shown (ids,
texts and their meanings in the world) and the mode its prompt states:

    hand start (Recon)      free: one change a round, in turn: makes a hand check stricter
                            (an edit appending a requirement no report meets) or adds such a
                            requirement (carry Table 4: two of each after four rounds);
                            correct reports stop passing.
                            fixed count: deletes one check and adds one such requirement.
    label-taught start      free and fixed count: narrows the open coverage check (an edit) so
                            that it no longer asks for the finding no check names; unplanned
                            misses stop being caught. Free then deletes a label check that
                            catches nothing.
    human-labelled data     free: adds a requirement that a share of outputs, correct or
                            flawed, do not meet (carry Table 3: correct outputs passed fall);
                            fixed count: deletes a redundant check and adds one.
    every start             delete only: deletes one check whose catches other checks hold
                            (or that catches nothing), never one that alone catches a kind of
                            fault; so it only deletes, and stays flat.

Which check it edits or deletes and which requirement it adds are drawn from a generator seeded
by the salt, the chain's seed (the request's sample index) and the rubric shown, so the three
revisers and two seeds make different chains, each reproducible.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from urllib.parse import parse_qs

from .known import (
    FINDING_FLAWS, FLAWED, LABELLED, LABELLED_VOCABULARY, RECON, RECON_COVERAGE, RECON_FLAWS,
    RECON_LABEL, RECON_NARROWED, RECON_STANDARD, STRICT_CLAUSES, KnownWorld,
    Meaning, OutsideTheWorld,
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
_HAND_ID = re.compile(r"-h\d+$")
_LABEL_ID = re.compile(r"^l\d+$")


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

def reviser_answer(model: str, seed: int, messages: list[dict[str, str]],
                   world: KnownWorld) -> str:
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
    meanings = {check_id: world.meaning(text, dataset) for check_id, text in checks}
    actions, adds = _plan(dataset, mode, checks, meanings, rng)
    entries = []
    for check_id, text in checks:
        action = actions.get(check_id, ("keep",))
        entry = {"id": check_id, "action": action[0]}
        if action[0] == "edit":
            entry["text"] = action[1]
        entries.append(entry)
    entries += [{"action": "add", "text": text} for text in adds]
    return json.dumps({"checks": entries})


def _plan(dataset: str, mode: str, checks: list[tuple[str, str]],
          meanings: dict[str, Meaning], rng: random.Random) -> tuple[dict, list[str]]:
    """{check id: (action, new text?)} and the texts to add."""
    ids = [check_id for check_id, _ in checks]
    texts = dict(checks)
    if mode == "delete_only":
        return _delete_one(_redundant(ids, meanings), ids, rng), []
    if dataset in LABELLED:
        standard = [t for t in LABELLED_VOCABULARY[dataset]["standard"] if t not in texts.values()]
        adds = [rng.choice(standard)] if standard else []
        if mode == "fixed_count":
            actions = _delete_one(_redundant(ids, meanings) or ids[1:], ids, rng)
            return actions, adds if actions else []
        return {}, adds
    standard = [t for t in RECON_STANDARD if t not in texts.values()]
    add = [rng.choice(standard)] if standard else []
    if any(_HAND_ID.search(check_id) for check_id in ids):
        if mode == "fixed_count":
            actions = _delete_one(ids, ids, rng)
            return actions, add if actions else []
        plain = [i for i in ids if _HAND_ID.search(i)
                 and not any(texts[i].endswith(" " + c) for c in STRICT_CLAUSES)]
        edited = sum(_HAND_ID.search(i) is not None for i in ids) - len(plain)
        added = sum(t in RECON_STANDARD for t in texts.values())
        # One change a round, edits and adds in turn: carry Table 4's rubric after Opus
        # review holds two hand checks made stricter (3, 6) and two added ones (7, 8).
        if plain and (edited <= added or not add):
            chosen = rng.choice(plain)
            return {chosen: ("edit", f"{texts[chosen]} {rng.choice(list(STRICT_CLAUSES))}")}, []
        return {}, add
    coverage = [i for i in ids if texts[i] == RECON_COVERAGE]
    if coverage:
        return {coverage[0]: ("edit", RECON_NARROWED)}, []
    if any(_LABEL_ID.match(i) for i in ids):
        if mode == "free":
            idle = [i for i in ids if _LABEL_ID.match(i) and meanings[i] == Meaning()]
            return _delete_one(idle, ids, rng), []
        return {}, []
    # Another start (the generated draft): free adds; fixed count deletes a redundant check
    # and adds.
    if mode == "free":
        return {}, add
    actions = _delete_one(_redundant(ids, meanings), ids, rng)
    return actions, add if actions else []


def _delete_one(candidates: list[str], ids: list[str], rng: random.Random) -> dict:
    if not candidates or len(ids) < 2:
        return {}
    return {rng.choice(candidates): ("delete",)}


def _faults(meanings: dict[str, Meaning]) -> list[tuple[str, str | None]]:
    """Every fault an output of the rubric's scope may have, in the world's terms: a finding
    flaw of each finding a check names (a per-environment hand rubric), or of any finding."""
    named = sorted({f for m in meanings.values() for f in m.findings})
    if any(FLAWED in m.flaws for m in meanings.values()):
        return [(FLAWED, None)]
    faults: list[tuple[str, str | None]] = [(flaw, f) for flaw in FINDING_FLAWS for f in named]
    faults += [(flaw, None) for flaw in RECON_FLAWS if not (named and flaw in FINDING_FLAWS)]
    return faults


def _redundant(ids: list[str], meanings: dict[str, Meaning]) -> list[str]:
    """Checks whose every catch another check of the rubric also holds (or that catch
    nothing), in the world's terms."""
    faults = _faults(meanings)
    redundant = []
    for check_id in ids:
        held = [fault for fault in faults if meanings[check_id].catches(*fault)]
        others = [i for i in ids if i != check_id]
        if all(any(meanings[o].catches(*fault) for o in others) for fault in held):
            redundant.append(check_id)
    return redundant
