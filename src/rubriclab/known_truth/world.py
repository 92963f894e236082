"""The known-truth world's ground truth: the items the pipeline prepared (by their input and
output text), what each check the world knows means, and the options of the scripted models'
strings (the package docstring, rubriclab.known_truth, explains the world)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from urllib.parse import parse_qs

KNOWN_FINGERPRINT = "known-v2"
JUDGE, WRITER, REVISER = "known-judge", "known-writer", "known-reviser"
AGENT = "known-agent"  # verify's (rubriclab.verify.known_world)
# transfer's world (rubriclab.known_truth.transfer)
TRANSFER_GENERATOR, TRANSFER_RESPONDER, TRANSFER_JUDGE = (
    "known-transfer-generator", "known-transfer-responder", "known-transfer-judge")
TRANSFER_BEHAVIOURS = (TRANSFER_GENERATOR, TRANSFER_RESPONDER, TRANSFER_JUDGE)
BEHAVIOURS = (JUDGE, WRITER, REVISER, AGENT, *TRANSFER_BEHAVIOURS)
OPTIONS = {JUDGE: {"tpr", "tnr", "salt", "delay_s"}, WRITER: {"salt", "delay_s"},
           REVISER: {"salt", "delay_s", "add", "delete", "edit"},
           AGENT: {"pass_rate", "salt", "delay_s"},
           TRANSFER_GENERATOR: {"delay_s"},
           TRANSFER_RESPONDER: {"q_pass", "q_fail", "p_met", "salt", "delay_s"},
           TRANSFER_JUDGE: {"tpr", "tnr", "salt", "delay_s"}}
DATA_DIR = Path("data/prepared")  # relative to the working directory of the job

RECON = "recon"
LABELLED = ("summedits", "ragtruth")
MISSED, FABRICATED, WRONG_RESOURCE, UNCHECKED = (
    "missed_finding", "fabricated_finding", "wrong_resource", "unchecked_omission")
RECON_FLAWS = (MISSED, FABRICATED, WRONG_RESOURCE, UNCHECKED)
FINDING_FLAWS = (MISSED, WRONG_RESOURCE)  # flaws that touch one named true finding
FLAWED = "flawed"  # the one fault of a human-labelled dataset's flawed item


class OutsideTheWorld(ValueError):
    """A prompt, item or requirement the known-truth world has no truth for."""


# --- meanings -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Meaning:
    """What a check asks, in the world's terms (see the module docstring).

    flaws: the output fails the check if its fault is one of these; findings: when not empty,
    a finding flaw (a miss, a wrong resource) counts only if it touches one of these ids. marker: a regular expression the output
    text must match to meet the check. share: the share of outputs that do not meet it.
    """

    flaws: frozenset[str] = frozenset()
    findings: frozenset[str] = frozenset()
    marker: str | None = None
    share: float = 0.0

    def catches(self, flaw: str, finding: str | None) -> bool:
        """Whether an output with this fault fails the check by its flaws alone."""
        return flaw in self.flaws and (flaw not in FINDING_FLAWS or not self.findings
                                       or finding in self.findings)

    def with_marker(self, marker: str) -> Meaning:
        return Meaning(self.flaws, self.findings, marker, self.share)


def targets_meaning(targets: list[str]) -> Meaning:
    """A hand check's meaning from its `targets` (rubriclab.recon.rubrics): flaw types, plus
    finding ids that limit its finding flaws to those findings; "format" catches nothing."""
    flaws = frozenset(t for t in targets if t in RECON_FLAWS)
    findings = frozenset(t for t in targets if t not in RECON_FLAWS and t != "format")
    return Meaning(flaws=flaws, findings=findings)


def _word(word: str) -> str:
    return rf"(?i)\b{word}\b"


# Requirements the reviser holds a good report to and the task never stated. No Recon report
# states any of these (tests/known_truth/test_known.py checks every prepared report), so every
# report, correct or flawed, fails them: carry Table 4's {3, 6, 7} after Opus review.
RECON_STANDARD = {
    "Does every finding give a CVSS v3.1 base score and vector string?": _word("CVSS"),
    "Does every finding cite the CIS AWS Foundations Benchmark control it breaks?":
        _word("CIS"),
    "Does the report give a remediation deadline in days for every finding?":
        _word("deadline"),
    "Does the report describe an attack path that chains the findings together?":
        _word("attack path"),
    "Does every finding name the accountable team and a change ticket for its fix?":
        _word("change ticket"),
}
# Clauses the reviser appends to a hand check when it makes it stricter (an edit).
STRICT_CLAUSES = {
    "It must also give the CVSS v3.1 base score of the issue.": _word("CVSS"),
    "It must also cite the CIS AWS Foundations Benchmark control the issue breaks.":
        _word("CIS"),
    "It must also give a remediation deadline in days.": _word("deadline"),
}

# The label-taught Recon rubric: a check per kind of flaw the calibration labels show, and the
# open coverage check (carry Figure 4b), which catches the unplanned misses.
RECON_COVERAGE = ("Does the report identify every security misconfiguration present among the "
                  "resources in scope, including any that no other check of this checklist "
                  "names?")
RECON_NARROWED = ("Does the report identify the well-known misconfigurations of the resources "
                  "in scope, such as public access, missing encryption and disabled versioning?")
RECON_LABEL = {
    RECON_COVERAGE: Meaning(flaws=frozenset({MISSED, UNCHECKED})),
    "Does the report raise findings only about resources whose configuration actually shows "
    "the issue?": Meaning(flaws=frozenset({FABRICATED})),
    "Is every finding attributed, by its identifier, to the resource whose configuration "
    "shows it?": Meaning(flaws=frozenset({WRONG_RESOURCE})),
    "Does every finding quote configuration evidence that matches the resource's actual "
    "configuration?": Meaning(flaws=frozenset({FABRICATED})),
    "Does every finding give a severity of critical, high, medium or low?": Meaning(),
}
RECON_VOCABULARY: dict[str, Meaning] = {
    **RECON_LABEL,
    # The narrowed coverage check asks for the misses a standard checklist anticipates (the
    # planned ones) and no longer for the finding no check names (the unplanned miss).
    RECON_NARROWED: Meaning(flaws=frozenset({MISSED})),
    **{text: Meaning(marker=marker) for text, marker in RECON_STANDARD.items()},
}


def _labelled_vocabulary(noun: str, source: str) -> dict[str, dict[str, Meaning]]:
    faithful = Meaning(flaws=frozenset({FLAWED}))
    return {
        "label": {
            f"The {noun} states only what the {source} supports.": faithful,
            f"The {noun} contradicts nothing the {source} says.": faithful,
            f"The {noun} keeps every name, number and date as the {source} gives it.": faithful,
            f"The {noun} is written in complete sentences.": Meaning(),
        },
        "generated": {
            f"The {noun} is consistent with the {source}.": faithful,
            f"The {noun} covers every key point of the {source}.": Meaning(share=0.25),
            f"The {noun} is no longer than three sentences.": Meaning(share=0.2),
            f"The {noun} is fluent and grammatical.": Meaning(),
        },
        # Requirements the reviser adds: each unmet by a share of outputs, correct or flawed.
        "standard": {
            f"The {noun} names the author or speaker of the {source}.": Meaning(share=0.2),
            f"The {noun} states the main conclusion in its first sentence.": Meaning(share=0.2),
            f"The {noun} gives the date or period the {source} covers.": Meaning(share=0.2),
            f"The {noun} avoids hedging and speculative wording.": Meaning(share=0.15),
            f"The {noun} uses the {source}'s own terms for every key entity.": Meaning(share=0.15),
        },
    }


LABELLED_VOCABULARY = {"summedits": _labelled_vocabulary("summary", "document"),
                       "ragtruth": _labelled_vocabulary("response", "context")}

# carry Figure 2's generic checks an unfaithful output fails: those that ask, in general
# terms, for faithfulness to the input (the rest ask for coverage or style, which an
# unfaithful output may meet as well as a faithful one). By id of generic.yaml.
GENERIC_FAULTS = {"summedits": ("g01", "g02", "g04"), "ragtruth": ("g01", "g02", "g04", "g06")}


def dataset_vocabulary(dataset: str) -> dict[str, Meaning]:
    """Every text the scripted writer and reviser may use for the dataset, with its meaning."""
    if dataset == RECON:
        return dict(RECON_VOCABULARY)
    if dataset in LABELLED_VOCABULARY:
        return {text: meaning for group in LABELLED_VOCABULARY[dataset].values()
                for text, meaning in group.items()}
    raise OutsideTheWorld(f"the known-truth world has no dataset {dataset!r}")


def edited_meaning(text: str, base: dict[str, Meaning]) -> Meaning | None:
    """A hand or vocabulary check made stricter by one of STRICT_CLAUSES: the original's
    meaning with the clause's marker."""
    for clause, marker in STRICT_CLAUSES.items():
        if text.endswith(" " + clause):
            original = base.get(text[: -len(clause) - 1])
            if original is not None:
                return original.with_marker(marker)
    return None


# --- the world ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ItemTruth:
    item_id: str
    dataset: str
    label: str
    flaw_type: str = ""         # Recon: the planted flaw ("" for a correct report)
    finding: str | None = None  # Recon: the true finding the flaw touches
    scope: str = ""             # Recon: the environment

    @property
    def fault(self) -> tuple[str, str | None] | None:
        if self.label != "flawed":
            return None
        if self.dataset == RECON:
            return self.flaw_type, self.finding
        return FLAWED, None


def _key(task: str, output: str) -> str:
    return hashlib.sha256(f"{task}\x00{output}".encode("utf-8")).hexdigest()


@dataclass
class KnownWorld:
    """The ground truth: items by (input, output) text, and check meanings by text."""

    items: dict[str, ItemTruth] = field(default_factory=dict)
    hand: dict[str, Meaning] = field(default_factory=dict)  # text -> meaning
    generic: dict[str, dict[str, Meaning]] = field(default_factory=dict)  # dataset -> text
    source: str = ""

    @classmethod
    def from_directory(cls, data_dir: Path) -> KnownWorld:
        """The world of a prepared-data folder (whatever of it exists)."""
        import pandas as pd  # only where a world is read: the model layer loads fast

        world = cls(source=str(data_dir), generic=_generic_meanings())
        reports = data_dir / "recon" / "reports_recon108.csv"
        if reports.exists():
            table = pd.read_csv(reports, keep_default_na=False)
            for row in table.itertuples(index=False):
                finding = row.touched_finding_id or None
                world._add(row.task, row.output, ItemTruth(
                    row.item_id, RECON, row.label, row.flaw_type if row.label == "flawed" else "",
                    None if finding == "fabricated" else finding, row.environment))
        rubrics = data_dir / "recon" / "rubrics_hand.csv"
        if rubrics.exists():
            for row in pd.read_csv(rubrics, keep_default_na=False).itertuples(index=False):
                world.hand[row.text] = targets_meaning(json.loads(row.targets))
        for dataset in LABELLED:
            path = data_dir / f"{dataset}.csv"
            if path.exists():
                for row in pd.read_csv(path, keep_default_na=False).itertuples(index=False):
                    world._add(row.task, row.output, ItemTruth(row.item_id, dataset, row.label))
        return world

    def _add(self, task: str, output: str, truth: ItemTruth) -> None:
        if truth.label not in ("correct", "flawed"):
            raise ValueError(f"{self.source}: item {truth.item_id!r} has label {truth.label!r}")
        key = _key(task, output)
        known = self.items.get(key)
        if known is not None and known.label != truth.label:
            raise ValueError(f"{self.source}: items {known.item_id!r} and {truth.item_id!r} have "
                             "the same input and output and different labels")
        self.items.setdefault(key, truth)

    def item(self, task: str, output: str) -> ItemTruth:
        truth = self.items.get(_key(task, output))
        if truth is None:
            raise OutsideTheWorld(
                f"the known-truth judge has no item with this input and output in "
                f"{self.source or 'its world'} (output begins {output[:60]!r}); it judges only "
                "the prepared Recon, SummEdits and RAGTruth items")
        return truth

    def vocabulary(self, dataset: str) -> dict[str, Meaning]:
        """Every check text with a meaning for items of the dataset (edited ones aside)."""
        base = dataset_vocabulary(dataset)
        if dataset == RECON:
            base.update(self.hand)
        base.update(self.generic.get(dataset, {}))
        return base

    def meaning(self, text: str, dataset: str) -> Meaning:
        base = self.vocabulary(dataset)
        found = base[text] if text in base else edited_meaning(text, base)
        if found is None:
            raise OutsideTheWorld(f"the known-truth world has no meaning for the {dataset} "
                                  f"requirement {text[:120]!r}")
        return found

    def met(self, item: ItemTruth, meaning: Meaning, text: str, output: str) -> bool:
        """Whether the output truly meets the check."""
        fault = item.fault
        if fault is not None and meaning.catches(*fault):
            return False
        if meaning.marker is not None and not re.search(meaning.marker, output):
            return False
        if meaning.share:
            return _unit(["share", text, item.item_id]) >= meaning.share
        return True


def _generic_meanings() -> dict[str, dict[str, Meaning]]:
    """carry's generic checklists (resources/checklists/generic.yaml) by text."""
    import yaml  # here: the light install (no pyyaml) imports this module through verify

    raw = yaml.safe_load((files("rubriclab") / "resources" / "checklists" / "generic.yaml")
                         .read_text(encoding="utf-8"))
    meanings = {}
    for dataset, faulty in GENERIC_FAULTS.items():
        checks = raw[dataset]["checks"]
        unknown = set(faulty) - {c["id"] for c in checks}
        if unknown:
            raise ValueError(f"GENERIC_FAULTS names generic checks {sorted(unknown)} that "
                             f"generic.yaml's {dataset} list lacks")
        meanings[dataset] = {c["text"]: Meaning(flaws=frozenset({FLAWED}) if c["id"] in faulty
                                                else frozenset()) for c in checks}
    return meanings


@lru_cache(maxsize=4)
def _world_at(path: str, stamp: tuple) -> KnownWorld:
    return KnownWorld.from_directory(Path(path))


def current_world(data_dir: Path = DATA_DIR) -> KnownWorld:
    """The world of the working directory's prepared data, read once per process (again when
    a file of it changes)."""
    names = ["recon/reports_recon108.csv", "recon/rubrics_hand.csv",
             *(f"{d}.csv" for d in LABELLED)]
    stamp = tuple((name, (data_dir / name).stat().st_mtime_ns)
                  for name in names if (data_dir / name).exists())
    return _world_at(str(data_dir.resolve()), stamp)


# --- the models' options and draws ---------------------------------------------------------

def _unit(parts: list) -> float:
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
    return int(digest[:13], 16) / 16 ** 13


def judge_rates(model: str) -> tuple[float, float]:
    options = parse_qs(model.partition("?")[2])
    rates = []
    for name in ("tpr", "tnr"):
        if name not in options:
            raise ValueError(f"fake model {model!r}: a known-truth judge needs {name}=<rate>")
        try:
            value = float(options[name][0])
        except ValueError:
            raise ValueError(f"fake model {model!r}: {name} must be a number") from None
        if not 0.5 < value <= 1.0:
            raise ValueError(f"fake model {model!r}: {name} must be in (0.5, 1], got {value}")
        rates.append(value)
    return rates[0], rates[1]


def agent_pass_rate(model: str) -> float:
    """p of a `fake/known-agent?pass_rate=<p>` model string: required, a number in [0, 1]."""
    options = parse_qs(model.partition("?")[2])
    if "pass_rate" not in options:
        raise ValueError(f"fake model {model!r}: a known-truth agent needs pass_rate=<p>")
    try:
        value = float(options["pass_rate"][0])
    except ValueError:
        raise ValueError(f"fake model {model!r}: pass_rate must be a number, got "
                         f"{options['pass_rate'][0]!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"fake model {model!r}: pass_rate must be in [0, 1], got {value}")
    return value
