"""Build the Recon datasets (Recon-72 and Recon-108) deterministically from a seed.

Composition, per environment (12 environments):

* Recon-108 (9 reports): 3 correct (``correct-1``, ``correct-2``, ``correct-part-b``: a report
  delivered as Part A + Part B), 5 planned flaws (one of each of missed_finding,
  fabricated_finding, wrong_resource, plus a second of two of them; which type gets only one
  rotates over environments, so each type has 20 reports) and 1 unplanned flaw: the omission
  of the environment's one true finding that no hand check names (unchecked_omission; carry:
  "unplanned misses", Figure 4b).
  In all 36 correct + 72 flawed (60 planned + 12 unplanned).
* Recon-72 (6 reports), a subset of Recon-108: ``correct-1``, ``correct-2``, the first report of
  each planned type and the unplanned report. In all 24 correct + 48 flawed (36 planned + 12
  unplanned).

Every flawed report has a correct twin in the same set and differs from it only by its flaw.
The calibration/evaluation split is by environment: 8 evaluation and 4 calibration
environments, drawn from the seed.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rubriclab.recon import reports as rp
from rubriclab.recon.environments import Environment, load_environments
from rubriclab.recon.rubrics import rubrics_table

PLANNED_FLAW_TYPES = ("missed_finding", "fabricated_finding", "wrong_resource")
# carry's unplanned flaws are misses no specific check names (Figure 4b, Table 2). Wrong
# severity and misstated evidence (`plant_flaw`) stay available but are not planted.
UNPLANNED_FLAW_TYPES = ("unchecked_omission",)
SETS = ("recon72", "recon108")
N_EVALUATION_ENVIRONMENTS = 8
LABELS = ("correct", "flawed")

REPORT_COLUMNS = [
    "item_id", "report_id", "environment", "variant", "structure", "parts", "label", "flaw_type",
    "planned", "twin_report_id", "touched_finding_id", "touched_resource_ids", "stated_findings",
    "n_stated_findings", "split", "in_recon72", "in_recon108", "task", "text",
]
PREPARED_COLUMNS = [
    "item_id", "dataset", "domain", "group", "task", "output", "label", "split", "environment",
    "variant", "structure", "flaw_type", "planned", "twin_report_id", "touched_finding_id",
    "touched_resource_ids", "stated_findings",
]

COMPOSITION = {
    "recon72": {
        "per_environment": {"correct": 2, "flawed": 4, "planned_flawed": 3, "unplanned_flawed": 1},
        "variants": ["correct-1", "correct-2", "missed_finding-1", "fabricated_finding-1",
                     "wrong_resource-1", "<unplanned kind>-1"],
        "totals": {"correct": 24, "flawed": 48, "planned_flawed": 36, "unplanned_flawed": 12},
    },
    "recon108": {
        "per_environment": {"correct": 3, "flawed": 6, "planned_flawed": 5, "unplanned_flawed": 1},
        "variants": ["the 6 of recon72", "correct-part-b",
                     "a second report of two of the three planned types (rotating)"],
        "totals": {"correct": 36, "flawed": 72, "planned_flawed": 60, "unplanned_flawed": 12},
        "superset_of": "recon72",
    },
}


@dataclass(frozen=True)
class ReportSpec:
    """What to generate for one report of one environment."""

    variant: str
    flaw_type: str               # "none" for a correct report
    twin_variant: str            # "" for a correct report
    sets: tuple[str, ...]

    @property
    def label(self) -> str:
        return "correct" if self.flaw_type == "none" else "flawed"

    @property
    def planned(self) -> bool:
        return self.flaw_type in PLANNED_FLAW_TYPES


@dataclass
class ReconDataset:
    seed: int
    environments: list[Environment]
    evaluation_environments: list[str]
    calibration_environments: list[str]
    reports: pd.DataFrame
    rubrics: pd.DataFrame

    def prepared(self, set_name: str) -> pd.DataFrame:
        """The prepared item table of one set ("recon72" or "recon108")."""
        if set_name not in SETS:
            raise KeyError(f"unknown Recon set {set_name!r}; known: {list(SETS)}")
        rows = self.reports[self.reports[f"in_{set_name}"]]
        table = rows.assign(dataset=set_name, domain=rows["environment"], group=rows["environment"],
                            output=rows["text"])
        return table[PREPARED_COLUMNS].sort_values(["split", "item_id"], kind="stable").reset_index(drop=True)

    def manifest(self) -> dict:
        return {
            "seed": int(self.seed),
            "environments": [env.key for env in self.environments],
            "evaluation_environments": list(self.evaluation_environments),
            "calibration_environments": list(self.calibration_environments),
            "planned_flaw_types": list(PLANNED_FLAW_TYPES),
            "unplanned_flaw_types": list(UNPLANNED_FLAW_TYPES),
            "composition": COMPOSITION,
            "sets": {name: _set_counts(self.prepared(name)) for name in SETS},
            "rubric_checks": int(len(self.rubrics)),
        }

    def to_files(self, out_dir: str | Path) -> dict[str, Path]:
        """Write reports_recon72.csv, reports_recon108.csv, rubrics_hand.csv, environments.json, manifest.json."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {name: out / f"reports_{name}.csv" for name in SETS}
        for name in SETS:
            self.prepared(name).to_csv(paths[name], index=False, encoding="utf-8")
        paths["rubrics"] = out / "rubrics_hand.csv"
        self.rubrics.to_csv(paths["rubrics"], index=False, encoding="utf-8")
        paths["environments"] = out / "environments.json"
        _write_json(paths["environments"], self.environments_ground_truth())
        paths["manifest"] = out / "manifest.json"
        _write_json(paths["manifest"], self.manifest())
        return paths

    def environments_ground_truth(self) -> list[dict]:
        evaluation = set(self.evaluation_environments)
        return [
            {**env.to_dict(), "split": "evaluation" if env.key in evaluation else "calibration",
             "task": rp.render_task(env)}
            for env in self.environments
        ]


def build_recon(seed: int = 0) -> ReconDataset:
    """Generate every Recon report, the hand rubrics and the environment split from ``seed``."""
    environments = list(load_environments())
    evaluation = evaluation_environments(environments, seed)
    offsets = random.Random(f"recon-composition:{seed}")
    unplanned_offset, single_offset = offsets.randrange(3), offsets.randrange(3)
    rows = []
    for index, env in enumerate(environments):
        specs = environment_specs(
            env, seed,
            unplanned_kind=UNPLANNED_FLAW_TYPES[(index + unplanned_offset)
                                                % len(UNPLANNED_FLAW_TYPES)],
            single_planned=PLANNED_FLAW_TYPES[(index + single_offset) % 3],
        )
        split = "evaluation" if env.key in evaluation else "calibration"
        rows.extend(environment_reports(env, specs, seed, split))
    reports = pd.DataFrame(rows, columns=REPORT_COLUMNS)
    return ReconDataset(
        seed=seed,
        environments=environments,
        evaluation_environments=[env.key for env in environments if env.key in evaluation],
        calibration_environments=[env.key for env in environments if env.key not in evaluation],
        reports=reports,
        rubrics=rubrics_table(environments),
    )


def evaluation_environments(environments, seed: int) -> set[str]:
    keys = [env.key for env in environments]
    return set(random.Random(f"recon-split:{seed}").sample(keys, N_EVALUATION_ENVIRONMENTS))


def environment_specs(env: Environment, seed: int, *, unplanned_kind: str, single_planned: str) -> list[ReportSpec]:
    """The nine reports of one environment, with their twins and set membership."""
    both, larger = ("recon72", "recon108"), ("recon108",)
    rng = random.Random(f"recon-twins:{seed}:{env.key}")
    twins = ["correct-1", "correct-1", "correct-2", "correct-2"]
    rng.shuffle(twins)
    first_flaws = [*PLANNED_FLAW_TYPES, unplanned_kind]
    doubled = [kind for kind in PLANNED_FLAW_TYPES if kind != single_planned]
    return [
        ReportSpec("correct-1", "none", "", both),
        ReportSpec("correct-2", "none", "", both),
        ReportSpec("correct-part-b", "none", "", larger),
        *(ReportSpec(f"{kind}-1", kind, twin, both) for kind, twin in zip(first_flaws, twins)),
        ReportSpec(f"{doubled[0]}-2", doubled[0], "correct-part-b", larger),
        ReportSpec(f"{doubled[1]}-2", doubled[1], rng.choice(["correct-1", "correct-2"]), larger),
    ]


def environment_reports(env: Environment, specs: list[ReportSpec], seed: int, split: str) -> list[dict]:
    style_rng = random.Random(f"recon-style:{seed}:{env.key}")
    structures = style_rng.sample(rp.STRUCTURES, 3)
    correct_structure = {"correct-1": (structures[0], 1), "correct-2": (structures[1], 1),
                         "correct-part-b": (structures[2], 2)}
    flaw_rng = random.Random(f"recon-flaws:{seed}:{env.key}")
    used: dict[str, set] = {}
    plans: dict[str, rp.ReportPlan] = {}
    rows = []
    task = rp.render_task(env)
    for spec in specs:
        report_rng = random.Random(f"recon-report:{seed}:{env.key}:{spec.variant}")
        touched: dict = {"finding_id": "", "resource_ids": []}
        if spec.flaw_type == "none":
            structure, parts = correct_structure[spec.variant]
            plan = rp.plan_correct_report(env, report_rng, structure, parts)
        else:
            plan, touched = plant_flaw(plans[spec.twin_variant], spec.flaw_type, flaw_rng, report_rng,
                                       used.setdefault(spec.flaw_type, set()))
        plans[spec.variant] = plan
        report_id = f"recon:{env.key}:{spec.variant}"
        rows.append({
            "item_id": report_id,
            "report_id": report_id,
            "environment": env.key,
            "variant": spec.variant,
            "structure": plan.style.structure,
            "parts": plan.style.parts,
            "label": spec.label,
            "flaw_type": spec.flaw_type,
            "planned": spec.planned,
            "twin_report_id": f"recon:{env.key}:{spec.twin_variant}" if spec.twin_variant else "",
            "touched_finding_id": touched["finding_id"],
            "touched_resource_ids": json.dumps(touched["resource_ids"]),
            "stated_findings": json.dumps(plan.stated_records()),
            "n_stated_findings": len(plan.findings),
            "split": split,
            "in_recon72": "recon72" in spec.sets,
            "in_recon108": "recon108" in spec.sets,
            "task": task,
            "text": rp.render_report(plan),
        })
    return rows


def plant_flaw(twin: rp.ReportPlan, flaw_type: str, flaw_rng: random.Random, report_rng: random.Random,
               used: set) -> tuple[rp.ReportPlan, dict]:
    """Apply one flaw to a correct twin's plan; ``used`` keeps flaws of a type apart within an environment."""
    env = twin.environment
    if flaw_type == "missed_finding":
        finding = _pick_unused(flaw_rng, [f for f in env.findings if f.checked], used)
        return rp.omit_finding(twin, finding.id), _touched(finding.id, finding.resource)
    if flaw_type == "unchecked_omission":
        finding = env.unchecked_finding
        return rp.omit_finding(twin, finding.id), _touched(finding.id, finding.resource)
    if flaw_type == "fabricated_finding":
        claim = _pick_unused(flaw_rng, list(env.fabrications), used)
        return rp.add_fabricated_finding(twin, claim, report_rng), _touched("fabricated", claim.resource)
    if flaw_type == "wrong_resource":
        candidates = [f for f in env.findings if f.checked and env.same_type_decoys(f.resource)]
        finding = _pick_unused(flaw_rng, candidates, used)
        substitute = flaw_rng.choice(env.same_type_decoys(finding.resource))
        plan = rp.move_to_resource(twin, finding.id, substitute)
        return plan, _touched(finding.id, finding.resource, substitute)
    if flaw_type == "wrong_severity":
        finding = flaw_rng.choice(env.findings)
        return rp.change_severity(twin, finding.id), _touched(finding.id, finding.resource)
    if flaw_type == "misstated_evidence":
        finding = flaw_rng.choice([f for f in env.findings if f.misstated])
        return rp.misstate_evidence(twin, finding.id), _touched(finding.id, finding.resource)
    raise ValueError(f"unknown flaw type {flaw_type!r}")


def _pick_unused(rng: random.Random, candidates: list, used: set):
    fresh = [candidate for candidate in candidates if (candidate.id, candidate.resource) not in used]
    if not fresh:
        raise ValueError("not enough distinct targets for this flaw type in the environment")
    choice = rng.choice(fresh)
    used.add((choice.id, choice.resource))
    return choice


def _touched(finding_id: str, *resource_ids: str) -> dict:
    return {"finding_id": finding_id, "resource_ids": list(resource_ids)}


def _set_counts(prepared: pd.DataFrame) -> dict:
    counts: dict = {"n": int(len(prepared)), "by_label": {label: 0 for label in LABELS}, "by_split": {}}
    for (split, label, flaw_type), n in sorted(Counter(zip(prepared["split"], prepared["label"],
                                                           prepared["flaw_type"])).items()):
        counts["by_label"][label] += int(n)
        counts["by_split"].setdefault(split, {}).setdefault(label, {})[flaw_type] = int(n)
    counts["unplanned_flawed"] = int(((prepared["label"] == "flawed") & ~prepared["planned"]).sum())
    counts["environments"] = {split: sorted(set(prepared.loc[prepared["split"] == split, "environment"]))
                              for split in sorted(set(prepared["split"]))}
    return counts


def _write_json(path: Path, payload) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
