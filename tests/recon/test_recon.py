"""Recon generator: flaws checked against the ground-truth environments by reading the report text."""

import json
import re
from collections import Counter

import pandas as pd
import pytest

from rubriclab.recon import build_recon, load_environments, mentioned_resource_ids
from rubriclab.recon.build import COMPOSITION, PLANNED_FLAW_TYPES, UNPLANNED_FLAW_TYPES
from rubriclab.recon.environments import (
    config_value, environment_from_dict, render_value, validate_environment,
)

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
SEVERITY_COUNT = re.compile(r"\b(one|two|three|four|five) (critical|high|medium|low)\b", re.IGNORECASE)
BACKTICKED = re.compile(r"`([^`]+)`")
# The executive summary's "top risk" sentence names the most severe finding stated, so it may
# legitimately change with a flaw that adds, removes or re-rates a finding.
SUMMARY_MARKERS = ("most urgent item", "deserves immediate attention")
COMMON_COLUMNS = ["item_id", "dataset", "task", "output", "label", "split"]


@pytest.fixture(scope="module")
def dataset():
    return build_recon(0)


@pytest.fixture(scope="module")
def environments():
    return {env.key: env for env in load_environments()}


@pytest.fixture(scope="module")
def by_id(dataset):
    return dataset.reports.set_index("report_id")


# --- helpers that read the text ------------------------------------------------------------


def severity_breakdown(text):
    """The severity counts the report's summary sentence gives ("one critical, two high and one low")."""
    counts = Counter()
    for number, severity in SEVERITY_COUNT.findall(text):
        counts[severity.lower()] += NUMBER_WORDS[number.lower()]
    return counts


def titles_in(text, claim):
    return [title for title in claim.titles if title.lower() in text.lower()]


def sentences_mentioning(text, resource_id, environment):
    pieces = re.split(r"\n+|(?<=[.;:!?])\s+", text)
    normalised = set()
    for piece in pieces:
        if resource_id not in mentioned_resource_ids(piece, environment):
            continue
        if any(marker in piece for marker in SUMMARY_MARKERS):
            continue
        normalised.add(re.sub(r"\d+", "#", piece.strip()))
    return normalised


def twin_pair(by_id, report_id):
    flawed = by_id.loc[report_id]
    twin = by_id.loc[flawed["twin_report_id"]]
    return flawed, twin


def flawed_ids(dataset):
    reports = dataset.reports
    return reports.loc[reports["label"] == "flawed", "report_id"].tolist()


# --- environments and rubrics ----------------------------------------------------------------


def test_twelve_environments_of_different_kinds(environments):
    assert len(environments) == 12
    services = {env.service for env in environments.values()}
    assert len(services) == 12
    for env in environments.values():
        validate_environment(env)
        assert 3 <= len(env.findings) <= 5
        assert len(env.decoy_ids) >= 2
        assert all(finding.severity in {"critical", "high", "medium", "low"} for finding in env.findings)


def test_true_evidence_is_in_the_config_and_fabricated_evidence_is_not(environments):
    for env in environments.values():
        for finding in env.findings:
            assert render_value(config_value(env.resource(finding.resource).config, finding.path)) == finding.value
        for claim in env.fabrications:
            assert claim.resource in env.decoy_ids
            assert render_value(config_value(env.resource(claim.resource).config, claim.path)) != claim.value


def test_validation_rejects_a_fabrication_that_is_true(environments):
    env = environments["storage"]
    document = {
        "key": env.key, "area": env.area, "service": env.service, "scope": env.scope,
        "company": env.company, "account": env.account, "region": env.region,
        "resources": [{"id": r.id, "type": r.type, "kind": r.kind, "noun": r.noun, "config": r.config}
                      for r in env.resources],
        "findings": [_claim_entry(c) for c in env.findings],
        "fabrications": [{**_claim_entry(c), "claimed": "aws:kms"} for c in env.fabrications],
        "rubric": list(env.rubric),
    }
    with pytest.raises(ValueError, match="true configuration value"):
        validate_environment(environment_from_dict(document))


def _claim_entry(claim):
    entry = {"id": claim.id, "resource": claim.resource, "severity": claim.severity,
             "titles": list(claim.titles), "issues": list(claim.issues), "evidence": claim.evidence,
             "path": claim.path, "impact": claim.impact, "remediation": claim.remediation,
             "checked": claim.checked}
    if claim.misstated:
        entry["misstated"] = claim.misstated
    return entry


def test_each_rubric_has_5_to_9_hand_checks_and_no_open_coverage_check(dataset, environments):
    rubrics = dataset.rubrics
    assert set(rubrics["environment"]) == set(environments)
    for key, checks in rubrics.groupby("environment"):
        assert 5 <= len(checks) <= 9, key
        assert set(checks["origin"]) == {"hand"}
        assert checks["open_coverage"].sum() == 0, key
        assert not checks["text"].str.contains("not only the ones named").any(), key
        assert checks["check_id"].is_unique
        targeted = {t for targets in checks["targets"] for t in json.loads(targets)}
        env = environments[key]
        assert env.unchecked_finding.id not in targeted
        assert {f.id for f in env.findings if f.checked} <= targeted
        assert set(PLANNED_FLAW_TYPES) <= targeted


# --- set composition, split, determinism -----------------------------------------------------


def test_recon72_has_24_correct_and_48_flawed(dataset):
    recon72 = dataset.prepared("recon72")
    assert Counter(recon72["label"]) == {"correct": 24, "flawed": 48}
    for key, rows in recon72.groupby("environment"):
        assert Counter(rows["label"]) == {"correct": 2, "flawed": 4}, key
        planned = rows.loc[rows["planned"], "flaw_type"]
        assert sorted(planned) == sorted(PLANNED_FLAW_TYPES), key
        unplanned = rows.loc[(rows["label"] == "flawed") & ~rows["planned"], "flaw_type"]
        assert len(unplanned) == 1 and unplanned.iloc[0] in UNPLANNED_FLAW_TYPES


def test_recon108_matches_the_documented_composition(dataset):
    recon108 = dataset.prepared("recon108")
    totals = COMPOSITION["recon108"]["totals"]
    assert Counter(recon108["label"]) == {"correct": totals["correct"], "flawed": totals["flawed"]}
    flawed = recon108[recon108["label"] == "flawed"]
    assert flawed["planned"].sum() == totals["planned_flawed"]
    assert (~flawed["planned"]).sum() == totals["unplanned_flawed"]
    counts = Counter(flawed["flaw_type"])
    assert all(counts[kind] == 20 for kind in PLANNED_FLAW_TYPES)
    # every unplanned flaw is the omission of the one finding no hand check names
    assert UNPLANNED_FLAW_TYPES == ("unchecked_omission",)
    assert counts["unchecked_omission"] == 12 and len(counts) == 4
    unplanned = flawed[~flawed["planned"]]
    assert set(unplanned["flaw_type"]) == {"unchecked_omission"}
    environments = {env.key: env for env in dataset.environments}
    for row in unplanned.itertuples(index=False):
        unchecked = environments[row.environment].unchecked_finding.id
        stated = {f["finding_id"] for f in json.loads(row.stated_findings)}
        assert unchecked not in stated, row.item_id
    assert set(dataset.prepared("recon72")["item_id"]) < set(recon108["item_id"])


def test_a_hand_rubric_with_an_open_coverage_check_is_refused(environments):
    from dataclasses import replace as dc_replace

    from rubriclab.recon.rubrics import hand_rubric, validate_rubric
    env = environments["storage"]
    checks = hand_rubric(env)
    coverage = dc_replace(checks[-1], check_id="storage-hx", open_coverage=True)
    with pytest.raises(ValueError, match="no open coverage check"):
        validate_rubric(env, (*checks, coverage))


def test_every_flawed_twin_is_a_correct_report_of_the_same_set(dataset):
    for name in ("recon72", "recon108"):
        table = dataset.prepared(name).set_index("item_id")
        for item_id, row in table[table["label"] == "flawed"].iterrows():
            twin = table.loc[row["twin_report_id"]]
            assert twin["label"] == "correct" and twin["environment"] == row["environment"], item_id


def test_split_is_by_environment_8_evaluation_4_calibration(dataset, environments):
    evaluation, calibration = set(dataset.evaluation_environments), set(dataset.calibration_environments)
    assert len(evaluation) == 8 and len(calibration) == 4
    assert not evaluation & calibration and evaluation | calibration == set(environments)
    for _, row in dataset.reports.iterrows():
        expected = "evaluation" if row["environment"] in evaluation else "calibration"
        assert row["split"] == expected


def test_no_two_reports_of_a_set_are_identical(dataset):
    for name in ("recon72", "recon108"):
        outputs = dataset.prepared(name)["output"]
        assert outputs.is_unique, name
        assert dataset.prepared(name)["item_id"].is_unique


def test_build_is_deterministic_and_the_seed_changes_wording(dataset):
    again = build_recon(0)
    pd.testing.assert_frame_equal(dataset.reports, again.reports)
    pd.testing.assert_frame_equal(dataset.rubrics, again.rubrics)
    other = build_recon(1).reports.set_index("report_id")
    base = dataset.reports.set_index("report_id")
    common = base.index.intersection(other.index)
    changed = (base.loc[common, "text"] != other.loc[common, "text"]).mean()
    assert changed > 0.9
    correct = base.index[base["label"] == "correct"]
    orders = [json.loads(base.loc[i, "stated_findings"]) != json.loads(other.loc[i, "stated_findings"])
              for i in correct]
    assert sum(orders) > len(orders) / 2


# --- what the texts say ----------------------------------------------------------------------


def test_stated_findings_agree_with_the_resource_ids_in_the_text(dataset, environments):
    for _, row in dataset.reports.iterrows():
        env = environments[row["environment"]]
        stated = json.loads(row["stated_findings"])
        assert {f["resource_id"] for f in stated} == mentioned_resource_ids(row["text"], env), row["report_id"]
        assert len(stated) == row["n_stated_findings"]


def test_correct_reports_state_every_true_finding_and_no_decoy(dataset, environments):
    correct = dataset.reports[dataset.reports["label"] == "correct"]
    for _, row in correct.iterrows():
        env, text = environments[row["environment"]], row["text"]
        assert mentioned_resource_ids(text, env) == {f.resource for f in env.findings}, row["report_id"]
        for finding in env.findings:
            assert titles_in(text, finding), (row["report_id"], finding.id)
            assert f"`{finding.value}`" in text, (row["report_id"], finding.id)
        assert not mentioned_resource_ids(text, env) & set(env.decoy_ids)
        assert severity_breakdown(text) == Counter(f.severity for f in env.findings), row["report_id"]


def test_reports_never_reveal_their_label(dataset):
    for text in dataset.reports["text"]:
        assert not re.search(r"fabricat|planted|flaw|decoy", text, re.IGNORECASE)


def test_each_flawed_report_differs_from_its_twin_only_by_its_flaw(dataset, environments, by_id):
    checks = {
        "missed_finding": _check_omission,
        "unchecked_omission": _check_omission,
        "fabricated_finding": _check_fabrication,
        "wrong_resource": _check_wrong_resource,
        "wrong_severity": _check_wrong_severity,
        "misstated_evidence": _check_misstated_evidence,
    }
    seen = Counter()
    for report_id in flawed_ids(dataset):
        flawed, twin = twin_pair(by_id, report_id)
        env = environments[flawed["environment"]]
        touched = checks[flawed["flaw_type"]](flawed, twin, env, dataset)
        assert touched == set(json.loads(flawed["touched_resource_ids"])), report_id
        for resource_id in mentioned_resource_ids(twin["text"], env) - touched:
            assert sentences_mentioning(flawed["text"], resource_id, env) == \
                sentences_mentioning(twin["text"], resource_id, env), (report_id, resource_id)
        seen[flawed["flaw_type"]] += 1
    assert set(seen) == set(PLANNED_FLAW_TYPES) | set(UNPLANNED_FLAW_TYPES)


def _true_finding_on(env, resource_id):
    return next((f for f in env.findings if f.resource == resource_id), None)


def _check_omission(flawed, twin, env, dataset):
    twin_ids = mentioned_resource_ids(twin["text"], env)
    flawed_ids_ = mentioned_resource_ids(flawed["text"], env)
    missing = twin_ids - flawed_ids_
    assert flawed_ids_ < twin_ids and len(missing) == 1, flawed.name
    (resource_id,) = missing
    finding = _true_finding_on(env, resource_id)
    assert finding is not None
    assert titles_in(twin["text"], finding) and not titles_in(flawed["text"], finding)
    for other in env.findings:
        if other is not finding:
            assert set(titles_in(twin["text"], other)) <= set(titles_in(flawed["text"], other))
    targeted = {t for targets in dataset.rubrics.loc[dataset.rubrics["environment"] == env.key, "targets"]
                for t in json.loads(targets)}
    # A planned miss drops a finding a specific hand check names; the unplanned one drops the other.
    assert (finding.id in targeted) == (flawed["flaw_type"] == "missed_finding"), flawed.name
    return {resource_id}


def _check_fabrication(flawed, twin, env, dataset):
    twin_ids = mentioned_resource_ids(twin["text"], env)
    flawed_ids_ = mentioned_resource_ids(flawed["text"], env)
    added = flawed_ids_ - twin_ids
    assert twin_ids < flawed_ids_ and len(added) == 1, flawed.name
    (resource_id,) = added
    assert _true_finding_on(env, resource_id) is None and resource_id in env.decoy_ids
    # The added evidence quotes a value that the decoy's configuration contradicts.
    (claim,) = [c for c in env.fabrications if c.resource == resource_id]
    assert titles_in(flawed["text"], claim) and f"`{claim.value}`" in flawed["text"]
    assert render_value(config_value(env.resource(resource_id).config, claim.path)) != claim.value
    return {resource_id}


def _check_wrong_resource(flawed, twin, env, dataset):
    twin_ids = mentioned_resource_ids(twin["text"], env)
    flawed_ids_ = mentioned_resource_ids(flawed["text"], env)
    removed, added = twin_ids - flawed_ids_, flawed_ids_ - twin_ids
    assert len(removed) == 1 and len(added) == 1, flawed.name
    (true_id,), (substitute,) = removed, added
    finding = _true_finding_on(env, true_id)
    assert finding is not None and substitute in env.resource_ids
    assert env.resource(substitute).type == env.resource(true_id).type
    assert _true_finding_on(env, substitute) is None
    assert titles_in(flawed["text"], finding), flawed.name
    return {true_id, substitute}


def _check_wrong_severity(flawed, twin, env, dataset):
    assert mentioned_resource_ids(flawed["text"], env) == mentioned_resource_ids(twin["text"], env)
    assert flawed["text"] != twin["text"]
    truth = Counter(f.severity for f in env.findings)
    assert severity_breakdown(twin["text"]) == truth
    stated = severity_breakdown(flawed["text"])
    assert sum(stated.values()) == sum(truth.values())
    lowered = [s for s in truth if stated[s] < truth[s]]
    raised = [s for s in stated if stated[s] > truth[s]]
    assert len(lowered) == 1 and len(raised) == 1, flawed.name
    records = {f["resource_id"]: f["severity"] for f in json.loads(flawed["stated_findings"])}
    wrong = [rid for rid, severity in records.items() if _true_finding_on(env, rid).severity != severity]
    assert len(wrong) == 1 and _true_finding_on(env, wrong[0]).severity == lowered[0], flawed.name
    return set(wrong)


def _check_misstated_evidence(flawed, twin, env, dataset):
    assert mentioned_resource_ids(flawed["text"], env) == mentioned_resource_ids(twin["text"], env)
    new_values = set(BACKTICKED.findall(flawed["text"])) - set(BACKTICKED.findall(twin["text"]))
    assert len(new_values) == 1, flawed.name
    (value,) = new_values
    matches = [f for f in env.findings if f.misstated == value]
    assert len(matches) == 1
    finding = matches[0]
    assert render_value(config_value(env.resource(finding.resource).config, finding.path)) != value
    assert f"`{finding.value}`" in twin["text"]
    return {finding.resource}


# --- tables and files ------------------------------------------------------------------------


def test_task_shows_every_resource_and_no_finding(dataset, environments):
    for _, row in dataset.reports.drop_duplicates("environment").iterrows():
        env = environments[row["environment"]]
        assert mentioned_resource_ids(row["task"], env) == set(env.resource_ids)
        for finding in env.findings:
            assert not titles_in(row["task"], finding)


def test_to_files_writes_the_prepared_tables_and_manifest(dataset, tmp_path):
    paths = dataset.to_files(tmp_path)
    for name, n in (("recon72", 72), ("recon108", 108)):
        table = pd.read_csv(paths[name])
        assert len(table) == n
        assert set(COMMON_COLUMNS) <= set(table.columns)
        assert set(table["dataset"]) == {name}
        assert table["item_id"].str.fullmatch(r"recon:[a-z_]+:[a-z_\-]+-(\d|part-b)").all()
        assert set(table["label"]) == {"correct", "flawed"}
        assert set(table["split"]) == {"calibration", "evaluation"}
    rubrics = pd.read_csv(paths["rubrics"])
    assert set(rubrics.columns) >= {"environment", "check_id", "text", "origin", "targets", "open_coverage"}
    truth = json.loads(paths["environments"].read_text())
    assert len(truth) == 12 and {env["split"] for env in truth} == {"evaluation", "calibration"}
    manifest = json.loads(paths["manifest"].read_text())
    assert manifest["seed"] == 0
    assert manifest["evaluation_environments"] == dataset.evaluation_environments
    assert manifest["sets"]["recon72"]["by_label"] == {"correct": 24, "flawed": 48}
    assert manifest["sets"]["recon108"]["by_label"] == {"correct": 36, "flawed": 72}
    by_split = manifest["sets"]["recon72"]["by_split"]
    assert sum(n for split in by_split.values() for label in split.values() for n in label.values()) == 72
