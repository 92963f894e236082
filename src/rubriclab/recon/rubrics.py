"""Hand-written Recon rubrics: one per environment, 5-9 yes/no checks written by a domain expert.

The checks live beside each environment in ``resources/recon/<key>.yaml`` (``rubric:``). Each
check names what it is meant to catch in ``targets``: true finding ids, planned flaw types
(missed_finding, fabricated_finding, wrong_resource) or "format". No hand rubric has an open
coverage check (a check asking for coverage beyond the listed issues): carry Figure 4b gives
that check to the label-taught rubric, and Table 2's hand start catches 0.0% of the unplanned
misses. The one true finding per environment that no check names is what the unplanned flaw
(an "unchecked omission") removes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from rubriclab.recon.environments import Environment

HAND_ORIGIN = "hand"
PLANNED_FLAW_TYPES = ("missed_finding", "fabricated_finding", "wrong_resource")
OTHER_TARGETS = ("format",)
MIN_CHECKS, MAX_CHECKS = 5, 9
RUBRIC_COLUMNS = ["environment", "check_id", "position", "text", "origin", "targets", "open_coverage"]


@dataclass(frozen=True)
class ReconCheck:
    environment: str
    check_id: str
    position: int
    text: str
    origin: str
    targets: tuple[str, ...]
    open_coverage: bool


def hand_rubric(environment: Environment) -> tuple[ReconCheck, ...]:
    """The environment's hand-written rubric, in order, validated."""
    checks = tuple(
        ReconCheck(
            environment=environment.key,
            check_id=f"{environment.key}-h{position}",
            position=position,
            text=entry["text"].strip(),
            origin=HAND_ORIGIN,
            targets=tuple(entry.get("targets", ())),
            open_coverage=bool(entry.get("open_coverage", False)),
        )
        for position, entry in enumerate(environment.rubric, start=1)
    )
    validate_rubric(environment, checks)
    return checks


def validate_rubric(environment: Environment, checks: tuple[ReconCheck, ...]) -> None:
    problems = []
    if not MIN_CHECKS <= len(checks) <= MAX_CHECKS:
        problems.append(f"{len(checks)} checks (want {MIN_CHECKS}-{MAX_CHECKS})")
    if any(check.open_coverage for check in checks):
        problems.append("a hand rubric has no open coverage check (carry Figure 4b)")
    finding_ids = {finding.id for finding in environment.findings}
    known = finding_ids | set(PLANNED_FLAW_TYPES) | set(OTHER_TARGETS)
    for check in checks:
        unknown = set(check.targets) - known
        if unknown or not check.targets:
            problems.append(f"{check.check_id}: targets {sorted(unknown) or 'missing'}")
    targeted = {target for check in checks for target in check.targets}
    for finding in environment.findings:
        if finding.checked != (finding.id in targeted):
            problems.append(f"{finding.id}: checked={finding.checked} but targeted={finding.id in targeted}")
    if problems:
        raise ValueError(f"hand rubric of {environment.key!r}: " + "; ".join(problems))


def rubrics_table(environments) -> pd.DataFrame:
    """One row per check of every environment's hand rubric; ``targets`` is a JSON list."""
    rows = [
        {
            "environment": check.environment,
            "check_id": check.check_id,
            "position": check.position,
            "text": check.text,
            "origin": check.origin,
            "targets": json.dumps(list(check.targets)),
            "open_coverage": check.open_coverage,
        }
        for environment in environments
        for check in hand_rubric(environment)
    ]
    return pd.DataFrame(rows, columns=RUBRIC_COLUMNS)
