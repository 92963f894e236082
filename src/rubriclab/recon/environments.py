"""The twelve Recon environments: ground-truth cloud state, true findings, decoys and false claims.

Each environment lives in ``resources/recon/<key>.yaml``. A true finding's evidence value is
read from its resource's configuration (so the evidence is true by construction); a
fabrication's ``claimed`` value must differ from the configuration (so it is false by
construction). :func:`validate_environment` checks these and the other invariants the report
generator relies on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

SEVERITIES = ("critical", "high", "medium", "low")
RESOURCE_FOLDER = ("resources", "recon")
ENVIRONMENT_KEYS = (
    "storage", "identity", "network", "compute", "database", "logging",
    "secrets", "containers", "serverless", "dns_cdn", "backup", "messaging",
)


@dataclass(frozen=True)
class Resource:
    id: str
    type: str
    kind: str
    noun: str
    config: dict


@dataclass(frozen=True)
class Claim:
    """What a report can say about one resource: a true finding or a fabricated one.

    ``evidence`` is a clause with a ``{value}`` slot; ``value`` fills it (for a true finding
    the configuration value at ``path``; for a fabrication a false one). ``misstated`` is a
    wrong value for the same slot, used by the misstated-evidence flaw ("" when none).
    """

    id: str
    resource: str
    severity: str
    titles: tuple[str, ...]
    issues: tuple[str, ...]
    evidence: str
    path: str
    value: str
    misstated: str
    impact: str
    remediation: str
    checked: bool

    @property
    def is_fabricated(self) -> bool:
        return self.id == "fabricated"


@dataclass(frozen=True)
class Environment:
    key: str
    area: str
    service: str
    scope: str
    company: str
    account: str
    region: str
    resources: tuple[Resource, ...]
    findings: tuple[Claim, ...]
    fabrications: tuple[Claim, ...]
    rubric: tuple[dict, ...]

    def resource(self, resource_id: str) -> Resource:
        for resource in self.resources:
            if resource.id == resource_id:
                return resource
        raise KeyError(f"environment {self.key!r} has no resource {resource_id!r}")

    def finding(self, finding_id: str) -> Claim:
        for finding in self.findings:
            if finding.id == finding_id:
                return finding
        raise KeyError(f"environment {self.key!r} has no finding {finding_id!r}")

    @property
    def resource_ids(self) -> tuple[str, ...]:
        return tuple(resource.id for resource in self.resources)

    @property
    def decoy_ids(self) -> tuple[str, ...]:
        """Resources with no true finding: configured correctly."""
        affected = {finding.resource for finding in self.findings}
        return tuple(rid for rid in self.resource_ids if rid not in affected)

    @property
    def unchecked_finding(self) -> Claim:
        """The one true finding no specific hand-written check targets."""
        return next(finding for finding in self.findings if not finding.checked)

    def same_type_decoys(self, resource_id: str) -> tuple[str, ...]:
        kind = self.resource(resource_id).type
        return tuple(rid for rid in self.decoy_ids if self.resource(rid).type == kind)

    def to_dict(self) -> dict:
        """The ground truth as plain JSON-able data."""
        return {
            "key": self.key, "area": self.area, "service": self.service, "scope": self.scope,
            "company": self.company, "account": self.account, "region": self.region,
            "resources": [
                {"id": r.id, "type": r.type, "kind": r.kind, "config": r.config,
                 "has_true_finding": r.id not in self.decoy_ids}
                for r in self.resources
            ],
            "findings": [_claim_dict(finding) for finding in self.findings],
            "decoys": list(self.decoy_ids),
            "fabrications": [_claim_dict(claim) for claim in self.fabrications],
        }


def _claim_dict(claim: Claim) -> dict:
    return {
        "id": claim.id, "resource": claim.resource, "severity": claim.severity,
        "title": claim.titles[0], "titles": list(claim.titles),
        "evidence": claim.evidence.format(value=f"`{claim.value}`"),
        "path": claim.path, "value": claim.value, "misstated": claim.misstated,
        "checked_by_hand_rubric": claim.checked,
    }


def load_environments() -> tuple[Environment, ...]:
    """All twelve environments, in the fixed order of ``ENVIRONMENT_KEYS``, validated."""
    return _load_all()


@lru_cache(maxsize=1)
def _load_all() -> tuple[Environment, ...]:
    environments = tuple(load_environment(key) for key in ENVIRONMENT_KEYS)
    for environment in environments:
        validate_environment(environment)
    return environments


def load_environment(key: str) -> Environment:
    folder = resources.files("rubriclab")
    for part in RESOURCE_FOLDER:
        folder = folder / part
    document = yaml.safe_load((folder / f"{key}.yaml").read_text(encoding="utf-8"))
    return environment_from_dict(document)


def environment_from_dict(document: dict) -> Environment:
    resources_ = tuple(
        Resource(id=r["id"], type=r["type"], kind=r["kind"], noun=r["noun"], config=r["config"])
        for r in document["resources"]
    )
    configs = {resource.id: resource.config for resource in resources_}
    findings = tuple(_claim_from_dict(entry, configs, fabricated=False) for entry in document["findings"])
    fabrications = tuple(_claim_from_dict(entry, configs, fabricated=True) for entry in document["fabrications"])
    return Environment(
        key=document["key"], area=document["area"], service=document["service"],
        scope=document["scope"], company=document["company"], account=str(document["account"]),
        region=document["region"], resources=resources_, findings=findings,
        fabrications=fabrications, rubric=tuple(document["rubric"]),
    )


def _claim_from_dict(entry: dict, configs: dict, *, fabricated: bool) -> Claim:
    if fabricated:
        value = render_value(entry["claimed"])
    else:
        value = render_value(config_value(configs[entry["resource"]], entry["path"]))
    return Claim(
        id="fabricated" if fabricated else entry["id"],
        resource=entry["resource"],
        severity=entry["severity"],
        titles=tuple(entry["titles"]),
        issues=tuple(entry["issues"]),
        evidence=entry["evidence"],
        path=entry["path"],
        value=value,
        misstated=render_value(entry["misstated"]) if "misstated" in entry else "",
        impact=entry["impact"],
        remediation=entry["remediation"],
        checked=bool(entry.get("checked", False)),
    )


def config_value(config: dict, path: str) -> Any:
    """The value at a dotted ``path`` ("Acl.AllUsers", "IngressRules.0") of a config."""
    node: Any = config
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def render_value(value: Any) -> str:
    """A configuration value as an auditor would quote it (YAML spelling of booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def mentioned_resource_ids(text: str, environment: Environment) -> set[str]:
    """The environment's resource ids that occur verbatim in ``text`` (not as part of a longer id)."""
    return {rid for rid in environment.resource_ids if _mention_pattern(rid).search(text)}


@lru_cache(maxsize=None)
def _mention_pattern(resource_id: str) -> re.Pattern:
    return re.compile(r"(?<![\w/:.-])" + re.escape(resource_id) + r"(?![\w/-])")


def validate_environment(environment: Environment) -> None:
    """Raise ValueError if an environment breaks an invariant the generator relies on."""
    problems = list(_environment_problems(environment))
    if problems:
        raise ValueError(f"environment {environment.key!r}: " + "; ".join(problems))


def _environment_problems(env: Environment):
    ids = env.resource_ids
    if len(set(ids)) != len(ids):
        yield "duplicate resource ids"
    if not 3 <= len(env.findings) <= 5:
        yield f"{len(env.findings)} true findings (want 3-5)"
    finding_resources = [finding.resource for finding in env.findings]
    if len(set(finding_resources)) != len(finding_resources):
        yield "two true findings share a resource"
    if sum(not finding.checked for finding in env.findings) != 1:
        yield "want exactly one finding without a specific hand check"
    if not any(finding.misstated for finding in env.findings):
        yield "no finding has a misstated value"
    swappable = [f for f in env.findings if f.checked and env.same_type_decoys(f.resource)]
    if len(swappable) < 2:
        yield "fewer than two checked findings have a decoy of the same type"
    if len(env.fabrications) < 2 or len({c.resource for c in env.fabrications}) != len(env.fabrications):
        yield "want at least two fabrications on distinct decoys"
    for claim in env.findings + env.fabrications:
        yield from _claim_problems(env, claim)


def _claim_problems(env: Environment, claim: Claim):
    where = f"{claim.id} on {claim.resource}"
    if claim.resource not in env.resource_ids:
        yield f"{where}: unknown resource"
        return
    if claim.severity not in SEVERITIES:
        yield f"{where}: severity {claim.severity!r}"
    if "{value}" not in claim.evidence:
        yield f"{where}: evidence has no {{value}} slot"
    if len(claim.titles) < 2 or len(claim.issues) < 2:
        yield f"{where}: want at least two titles and two issue phrasings"
    if claim.misstated and claim.misstated == claim.value:
        yield f"{where}: misstated value equals the true value"
    if claim.is_fabricated:
        if claim.resource not in env.decoy_ids:
            yield f"{where}: a fabrication must point at a decoy"
        true_value = render_value(config_value(env.resource(claim.resource).config, claim.path))
        if true_value == claim.value:
            yield f"{where}: the claimed value is the true configuration value"
    texts = [*claim.titles, *claim.issues, claim.evidence, claim.value, claim.misstated,
             claim.impact, claim.remediation]
    for text in texts:
        if mentioned_resource_ids(text, env):
            yield f"{where}: its wording mentions a resource id ({text!r})"
