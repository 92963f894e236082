"""Recon findings reports: planning, planted flaws and rendering to natural-language text.

A report is first a :class:`ReportPlan`: a style (structure, wording choices) and the ordered
list of findings it states, each with its own phrasing choices. A flawed report is its correct
twin's plan with exactly one change (a finding dropped, added, moved to another resource,
re-rated or mis-quoted), so the two texts differ only where the flaw and its direct
consequences (counts in the summary, severity groups, numbering) are.

Resource identifiers are always written verbatim in backticks, and each finding's title (one of
its environment-defined titles) always appears, so a reader can check a text against the
ground truth without the generator's log. The wording comes from the banks of
:mod:`rubriclab.recon.phrasing`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

import yaml

from rubriclab.recon.environments import SEVERITIES, Claim, Environment
from rubriclab.recon.phrasing import (
    CLOSING_HEADINGS, CLOSINGS, COUNT_SENTENCES, FINDINGS_HEADINGS, FRAMES_WITH_ID,
    FRAMES_WITHOUT_ID, GROUP_HEADINGS, NARRATIVE_FIRST, NARRATIVE_LAST, NARRATIVE_MIDDLE,
    NARRATIVE_REMEDIATIONS, NUMBER_WORDS, OPENINGS, ORDINALS, PART_A_HEADINGS,
    PART_B_HEADINGS, REMEDIATION_LEADS, REPORT_TITLES, SUMMARY_HEADINGS, TABLE_INTROS,
    TOP_RISK_SENTENCES,
)

STRUCTURES = ("numbered", "table", "narrative", "bullets")
SEVERITY_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class StatedFinding:
    """One finding as a report states it, with the phrasing choices fixed."""

    finding_id: str          # the true finding id, or "fabricated"
    resource_id: str
    noun: str
    severity: str
    title: str
    issue: str
    evidence_template: str
    evidence_value: str
    impact: str
    remediation: str
    frame: int               # index into the frame banks (with id: frame % 7, without: frame // 7)
    lead: int                # index into the per-finding lead/remediation banks

    @property
    def evidence(self) -> str:
        return self.evidence_template.format(value=f"`{self.evidence_value}`")

    def as_record(self) -> dict:
        return {"finding_id": self.finding_id, "resource_id": self.resource_id, "severity": self.severity}


@dataclass(frozen=True)
class ReportStyle:
    structure: str
    parts: int               # 1, or 2 for a report delivered as Part A + Part B
    title: int
    opening: int
    count_sentence: int
    top_risk: int
    closing: int
    heading: int             # section and severity-label style
    by_severity: bool        # findings ordered by severity (else the planned order)
    with_impact: bool
    with_remediation: bool
    show_empty_groups: bool


@dataclass(frozen=True)
class ReportPlan:
    environment: Environment
    style: ReportStyle
    findings: tuple[StatedFinding, ...]

    def ordered_findings(self) -> tuple[StatedFinding, ...]:
        if not self.style.by_severity:
            return self.findings
        return tuple(sorted(self.findings, key=lambda f: SEVERITY_RANK[f.severity]))

    def stated_records(self) -> list[dict]:
        return [finding.as_record() for finding in self.ordered_findings()]


# --- planning ------------------------------------------------------------------------------


def state_claim(claim: Claim, environment: Environment, rng: random.Random) -> StatedFinding:
    """A claim (true or fabricated) with its wording chosen by ``rng``."""
    return StatedFinding(
        finding_id=claim.id,
        resource_id=claim.resource,
        noun=environment.resource(claim.resource).noun,
        severity=claim.severity,
        title=rng.choice(claim.titles),
        issue=rng.choice(claim.issues),
        evidence_template=claim.evidence,
        evidence_value=claim.value,
        impact=claim.impact,
        remediation=claim.remediation,
        frame=rng.randrange(len(FRAMES_WITH_ID) * len(FRAMES_WITHOUT_ID)),
        lead=rng.randrange(60),
    )


def distinct_frames(count: int, rng: random.Random) -> list[int]:
    """Frame indices such that no two findings of a report share a sentence frame (while banks last)."""
    with_id = _cycled_sample(len(FRAMES_WITH_ID), count, rng)
    without_id = _cycled_sample(len(FRAMES_WITHOUT_ID), count, rng)
    return [a + len(FRAMES_WITH_ID) * b for a, b in zip(with_id, without_id)]


def _cycled_sample(size: int, count: int, rng: random.Random) -> list[int]:
    picks: list[int] = []
    while len(picks) < count:
        picks.extend(rng.sample(range(size), size))
    return picks[:count]


def random_style(rng: random.Random, structure: str, parts: int) -> ReportStyle:
    return ReportStyle(
        structure=structure,
        parts=parts,
        title=rng.randrange(len(REPORT_TITLES)),
        opening=rng.randrange(len(OPENINGS)),
        count_sentence=rng.randrange(len(COUNT_SENTENCES)),
        top_risk=rng.randrange(len(TOP_RISK_SENTENCES)),
        closing=rng.randrange(len(CLOSINGS)),
        heading=rng.randrange(12),
        by_severity=rng.random() < 0.6,
        with_impact=rng.random() < 0.7,
        with_remediation=rng.random() < 0.6,
        show_empty_groups=rng.random() < 0.5,
    )


def plan_correct_report(environment: Environment, rng: random.Random, structure: str, parts: int = 1) -> ReportPlan:
    """A correct report: every true finding, on its true resource, with its true evidence."""
    style = random_style(rng, structure, parts)
    findings = [state_claim(claim, environment, rng) for claim in environment.findings]
    findings = [replace(f, frame=frame) for f, frame in zip(findings, distinct_frames(len(findings), rng))]
    rng.shuffle(findings)
    return ReportPlan(environment=environment, style=style, findings=tuple(findings))


# --- planted flaws -------------------------------------------------------------------------


def omit_finding(plan: ReportPlan, finding_id: str) -> ReportPlan:
    """Missed finding (or the unplanned unchecked omission): drop one true finding."""
    _index_of(plan, finding_id)
    return replace(plan, findings=tuple(f for f in plan.findings if f.finding_id != finding_id))


def add_fabricated_finding(plan: ReportPlan, fabrication: Claim, rng: random.Random) -> ReportPlan:
    """Fabricated finding: add a false claim about a decoy at a random position."""
    stated = state_claim(fabrication, plan.environment, rng)
    findings = list(plan.findings)
    findings.insert(rng.randrange(len(findings) + 1), stated)
    return replace(plan, findings=tuple(findings))


def move_to_resource(plan: ReportPlan, finding_id: str, resource_id: str) -> ReportPlan:
    """Wrong resource: attribute one true finding to another resource of the same type."""
    index = _index_of(plan, finding_id)
    old = plan.findings[index]
    if plan.environment.resource(resource_id).type != plan.environment.resource(old.resource_id).type:
        raise ValueError(f"{resource_id} is not of the same type as {old.resource_id}")
    return _replace_finding(plan, index, replace(old, resource_id=resource_id))


def wrong_severity(severity: str) -> str:
    """A severity two levels away: critical->medium, high->low, medium->critical, low->high."""
    rank = SEVERITY_RANK[severity]
    return SEVERITIES[rank + 2 if rank + 2 < len(SEVERITIES) else rank - 2]


def change_severity(plan: ReportPlan, finding_id: str) -> ReportPlan:
    """Unplanned: a true finding stated with a wrong severity."""
    index = _index_of(plan, finding_id)
    old = plan.findings[index]
    return _replace_finding(plan, index, replace(old, severity=wrong_severity(old.severity)))


def misstate_evidence(plan: ReportPlan, finding_id: str) -> ReportPlan:
    """Unplanned: a true finding whose evidence quotes a configuration value that is not there."""
    index = _index_of(plan, finding_id)
    claim = plan.environment.finding(finding_id)
    if not claim.misstated:
        raise ValueError(f"{finding_id} has no misstated value")
    return _replace_finding(plan, index, replace(plan.findings[index], evidence_value=claim.misstated))


def _index_of(plan: ReportPlan, finding_id: str) -> int:
    for index, finding in enumerate(plan.findings):
        if finding.finding_id == finding_id:
            return index
    raise KeyError(f"the report does not state {finding_id!r}")


def _replace_finding(plan: ReportPlan, index: int, finding: StatedFinding) -> ReportPlan:
    findings = list(plan.findings)
    findings[index] = finding
    return replace(plan, findings=tuple(findings))


# --- rendering -----------------------------------------------------------------------------


def render_report(plan: ReportPlan) -> str:
    """The report text."""
    renderer = _RENDERERS[plan.style.structure]
    findings = plan.ordered_findings()
    preamble = renderer["preamble"](plan, findings)
    closing = renderer["closing"](plan, findings)
    if plan.style.parts == 1:
        blocks = [preamble, renderer["heading"](plan), renderer["findings"](plan, findings, 0, len(findings)), closing]
    else:
        split = (len(findings) + 1) // 2
        blocks = [
            preamble,
            _pick(PART_A_HEADINGS, plan.style.heading).format(span=_span(1, split)),
            renderer["findings"](plan, findings[:split], 0, len(findings)),
            _pick(PART_B_HEADINGS, plan.style.heading).format(span=_span(split + 1, len(findings))),
            renderer["findings"](plan, findings[split:], split, len(findings)),
            closing,
        ]
    text = "\n\n".join(block.strip("\n") for block in blocks if block.strip())
    return text.strip() + "\n"


def render_task(environment: Environment) -> str:
    """The environment as the auditor (and the grader) sees it: the brief and every resource's configuration."""
    lines = [
        f"Environment: {environment.area} ({environment.service}), {environment.company}, "
        f"AWS account {environment.account}, region {environment.region}.",
        "",
        f"Brief: review the {environment.scope} listed below and write a findings report. Report "
        "every security misconfiguration you find, each with the identifier of the resource it "
        "applies to, a severity (critical, high, medium or low) and the configuration evidence "
        "that shows it. Do not report resources that are configured correctly.",
        "",
        f"Resources in scope ({len(environment.resources)}):",
    ]
    for number, resource in enumerate(environment.resources, start=1):
        lines.append("")
        lines.append(f"{number}. {resource.id} ({resource.kind})")
        config = yaml.safe_dump(resource.config, sort_keys=False, default_flow_style=False, allow_unicode=True)
        lines.extend("   " + line for line in config.rstrip("\n").splitlines())
    return "\n".join(lines) + "\n"


# Shared pieces.

def _pick(options, index: int):
    return options[index % len(options)]


def _context(plan: ReportPlan, findings) -> dict:
    env = plan.environment
    affected = {finding.resource_id for finding in findings}
    return {
        "area": env.area, "company": env.company, "account": env.account, "region": env.region,
        "scope": env.scope, "n_resources": len(env.resources),
        "m": _number_word(len(env.resources) - len(affected)),
    }


def _span(first: int, last: int) -> str:
    return f"finding {first}" if first == last else f"findings {first} to {last}"


def _number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    """Lower-case an ordinary capitalised first word ("Public read" -> "public read"; not "DNSSEC", "PostgreSQL")."""
    first_word = text.split(" ", 1)[0]
    if len(first_word) > 1 and first_word[0].isupper() and first_word[1:] == first_word[1:].lower():
        return text[0].lower() + text[1:]
    return text


def _code(resource_id: str) -> str:
    return f"`{resource_id}`"


def _severity_label(plan: ReportPlan, severity: str) -> str:
    return severity.upper() if plan.style.heading % 4 == 3 else severity.capitalize()


def _report_title(plan: ReportPlan, findings) -> str:
    return _pick(REPORT_TITLES, plan.style.title).format(**_context(plan, findings))


def _opening(plan: ReportPlan, findings) -> str:
    return _pick(OPENINGS, plan.style.opening).format(**_context(plan, findings))


def _count_sentence(plan: ReportPlan, findings) -> str:
    counts = [(severity, sum(f.severity == severity for f in findings)) for severity in SEVERITIES]
    parts = [f"{_number_word(n)} {severity}" for severity, n in counts if n]
    breakdown = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    n = _number_word(len(findings))
    return _pick(COUNT_SENTENCES, plan.style.count_sentence).format(n=n, N=_upper_first(n), breakdown=breakdown)


def _top_risk_sentence(plan: ReportPlan, findings) -> str:
    top = min(findings, key=lambda f: SEVERITY_RANK[f.severity])
    return _pick(TOP_RISK_SENTENCES, plan.style.top_risk).format(
        title=_lower_first(top.title) if plan.style.top_risk % len(TOP_RISK_SENTENCES) == 1 else top.title,
        sev=top.severity, rid=_code(top.resource_id))


def _closing(plan: ReportPlan, findings) -> str:
    return _pick(CLOSINGS, plan.style.closing).format(**_context(plan, findings))


def _body_with_id(finding: StatedFinding) -> str:
    frame = _pick(FRAMES_WITH_ID, finding.frame)
    return _upper_first(frame.format(
        noun=finding.noun, rid=_code(finding.resource_id), issue=finding.issue,
        evidence=finding.evidence, Evidence=_upper_first(finding.evidence),
    ))


def _body_without_id(finding: StatedFinding) -> str:
    frame = _pick(FRAMES_WITHOUT_ID, finding.frame // len(FRAMES_WITH_ID))
    return _upper_first(frame.format(
        noun=finding.noun, issue=finding.issue,
        evidence=finding.evidence, Evidence=_upper_first(finding.evidence),
    ))


def _with_impact(plan: ReportPlan, body: str, finding: StatedFinding) -> str:
    return f"{body} {finding.impact}" if plan.style.with_impact else body


def _remediation_line(finding: StatedFinding) -> str:
    lead = _pick(REMEDIATION_LEADS, finding.lead)
    return lead.format(R=finding.remediation, r=_lower_first(finding.remediation))


# Structure 1: executive summary + numbered findings.

def _numbered_preamble(plan: ReportPlan, findings) -> str:
    summary = " ".join(s for s in (_opening(plan, findings), _count_sentence(plan, findings),
                                   _top_risk_sentence(plan, findings)) if s)
    return "\n\n".join([f"# {_report_title(plan, findings)}", _pick(SUMMARY_HEADINGS, plan.style.heading), summary])


def _numbered_heading(plan: ReportPlan) -> str:
    return _pick(FINDINGS_HEADINGS, plan.style.heading)


def _no_heading(plan: ReportPlan) -> str:
    return ""


def _numbered_findings(plan: ReportPlan, findings, start: int, total: int) -> str:
    return "\n\n".join(_numbered_finding(plan, finding, start + offset + 1) for offset, finding in enumerate(findings))


def _numbered_finding(plan: ReportPlan, finding: StatedFinding, number: int) -> str:
    severity = _severity_label(plan, finding.severity)
    rid = _code(finding.resource_id)
    header = _pick((
        f"### {number}. {finding.title}\n\n**Severity:** {severity} | **Resource:** {rid}",
        f"### {number}. {finding.title} ({severity})\n\nResource: {rid}",
        f"### Finding {number}: {finding.title}\n\n- Severity: {severity}\n- Resource: {rid}",
        f"### {number}. {finding.title}\n\n*{severity}* — {rid}",
    ), plan.style.heading)
    blocks = [header, _with_impact(plan, _body_with_id(finding), finding)]
    if plan.style.with_remediation:
        blocks.append(_remediation_line(finding))
    return "\n\n".join(blocks)


def _numbered_closing(plan: ReportPlan, findings) -> str:
    closing = _closing(plan, findings)
    heading = _pick(CLOSING_HEADINGS, plan.style.heading)
    return f"{heading}\n\n{closing}" if closing and heading else closing


# Structure 2: a findings table in markdown.

def _table_preamble(plan: ReportPlan, findings) -> str:
    intro = " ".join([_opening(plan, findings), _count_sentence(plan, findings)])
    return "\n\n".join([f"**{_report_title(plan, findings)}**", intro])


def _table_heading(plan: ReportPlan) -> str:
    return _pick(TABLE_INTROS, plan.style.opening)


def _table_columns(plan: ReportPlan) -> list[str]:
    columns = (["#", "Severity", "Resource", "Finding", "Evidence"] if plan.style.heading % 2 == 0
               else ["ID", "Resource", "Finding", "Severity", "Evidence"])
    if plan.style.with_remediation:
        columns.append("Recommended action")
    return columns


def _table_findings(plan: ReportPlan, findings, start: int, total: int) -> str:
    columns = _table_columns(plan)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for offset, finding in enumerate(findings):
        number = start + offset + 1
        cells = {
            "#": str(number), "ID": f"F-{number:02d}",
            "Severity": _severity_label(plan, finding.severity),
            "Resource": _code(finding.resource_id),
            "Finding": finding.title,
            "Evidence": _upper_first(finding.evidence),
            "Recommended action": finding.remediation,
        }
        lines.append("| " + " | ".join(cells[column] for column in columns) + " |")
    table = "\n".join(lines)
    if not plan.style.with_impact:
        return table
    notes = "\n".join(f"- {finding.title}: {finding.impact}" for finding in findings)
    return f"{table}\n\n{_pick(('Why these matter:', 'Impact:', 'Notes on impact:'), plan.style.heading)}\n\n{notes}"


def _table_closing(plan: ReportPlan, findings) -> str:
    return _closing(plan, findings)


# Structure 3: narrative paragraphs.

def _narrative_preamble(plan: ReportPlan, findings) -> str:
    title = _report_title(plan, findings)
    first_line = _pick((f"Re: {title}", title, ""), plan.style.title)
    intro = " ".join(s for s in (_opening(plan, findings), _count_sentence(plan, findings),
                                 _top_risk_sentence(plan, findings)) if s)
    return "\n\n".join(block for block in (first_line, intro) if block)


def _narrative_findings(plan: ReportPlan, findings, start: int, total: int) -> str:
    return "\n\n".join(
        _narrative_paragraph(plan, finding, start + offset, total) for offset, finding in enumerate(findings)
    )


def _narrative_paragraph(plan: ReportPlan, finding: StatedFinding, position: int, total: int) -> str:
    values = {"Title": finding.title, "sev": finding.severity}
    if position == 0:
        lead = _pick(NARRATIVE_FIRST, finding.lead)
    elif position == total - 1:
        lead = _pick(NARRATIVE_LAST, finding.lead)
    else:
        lead = _pick(NARRATIVE_MIDDLE, plan.style.heading + position)
        values["ordinal"] = ORDINALS[position]
    sentences = [_upper_first(lead.format(**values)), _with_impact(plan, _body_with_id(finding), finding)]
    if plan.style.with_remediation:
        remedy = _pick(NARRATIVE_REMEDIATIONS, finding.lead)
        sentences.append(remedy.format(r=_lower_first(finding.remediation)))
    return " ".join(sentences)


def _narrative_closing(plan: ReportPlan, findings) -> str:
    closing = _closing(plan, findings)
    signature = _pick(("", "— Cloud Security Review Team", "Regards,\nThe audit team"), plan.style.closing)
    return "\n\n".join(block for block in (closing, signature) if block)


# Structure 4: bullet lists grouped by severity.

def _bullets_preamble(plan: ReportPlan, findings) -> str:
    title = _report_title(plan, findings)
    head = _pick((title + "\n" + "=" * len(title), f"# {title}", f"**{title}**"), plan.style.title)
    count = _count_sentence(plan, findings)
    summary = _pick(("Summary: " + count, "In brief, " + _lower_first(count), count), plan.style.count_sentence)
    return "\n\n".join([head, _opening(plan, findings), summary])


def _bullets_findings(plan: ReportPlan, findings, start: int, total: int) -> str:
    groups = []
    for severity in SEVERITIES:
        members = [finding for finding in findings if finding.severity == severity]
        if not members and not plan.style.show_empty_groups:
            continue
        label = _severity_label(plan, severity)
        heading = _pick(GROUP_HEADINGS, plan.style.heading).format(Sev=label, SEV=severity.upper())
        items = [_bullet(plan, finding) for finding in members] or ["- None identified."]
        groups.append(heading + "\n\n" + "\n".join(items))
    return "\n\n".join(groups)


def _bullet(plan: ReportPlan, finding: StatedFinding) -> str:
    rid = _code(finding.resource_id)
    head = _pick((
        f"- **{finding.title}** ({rid}).",
        f"- {rid}: {_lower_first(finding.title)}.",
        f"- {finding.title} — {rid}.",
    ), plan.style.opening + plan.style.heading)
    text = f"{head} {_with_impact(plan, _body_without_id(finding), finding)}"
    if plan.style.with_remediation:
        text += "\n  " + _remediation_line(finding)
    return text


def _bullets_closing(plan: ReportPlan, findings) -> str:
    return _closing(plan, findings)


class _Renderer(TypedDict):
    """The four parts of one report structure."""

    preamble: Callable[[ReportPlan, Sequence[StatedFinding]], str]
    heading: Callable[[ReportPlan], str]
    findings: Callable[[ReportPlan, Sequence[StatedFinding], int, int], str]
    closing: Callable[[ReportPlan, Sequence[StatedFinding]], str]


_RENDERERS: dict[str, _Renderer] = {
    "numbered": {"preamble": _numbered_preamble, "heading": _numbered_heading,
                 "findings": _numbered_findings, "closing": _numbered_closing},
    "table": {"preamble": _table_preamble, "heading": _table_heading,
              "findings": _table_findings, "closing": _table_closing},
    "narrative": {"preamble": _narrative_preamble, "heading": _no_heading,
                  "findings": _narrative_findings, "closing": _narrative_closing},
    "bullets": {"preamble": _bullets_preamble, "heading": _no_heading,
                "findings": _bullets_findings, "closing": _bullets_closing},
}
