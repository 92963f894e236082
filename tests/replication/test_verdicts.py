"""The verdict rules of the replication page (rubriclab.replication.verdicts): each gives its
yes, its no and its cannot-tell, and the models behind a claim can only take a verdict away."""

import math

import pytest

from rubriclab.replication.evidence import Evidence, Part, percent_rate
from rubriclab.replication.verdicts import (
    CANNOT_TELL, DIFFERS, DOES_NOT_HOLD, DOES_NOT_REPLICATE, HOLDS, MATCHES, OTHER_MODELS,
    REPLICATES, STAND_IN, as_measured, printed_precision, verdict, why_cannot_tell)

PAPER = {"models": {"judge": "anthropic/claude-sonnet-4-6", "reviser": "anthropic/claude-opus-5",
                    "generator": "anthropic/claude-sonnet-4-6"},
         "carry": {"judges": None}, "transfer": {"generators": ["openai/gpt-5.1"]},
         "stand_ins": {"openai/gpt-5.1": "GPT-5"}}
MEASURED = {"kind": "measured", "seed": 75, "models": ["models.judge"], "min_n": 50}
QUALITATIVE = {"kind": "qualitative", "seed": True, "models": ["carry.judges"], "min_n": 10}


@pytest.mark.parametrize("seed, precision", [(52, 1), (0.83, 0.01), (1.5, 0.1), (96, 1),
                                             (0.3, 0.1), (3.25, 0.01)])
def test_printed_precision_is_the_last_printed_digit(seed, precision):
    assert printed_precision(seed) == pytest.approx(precision)


@pytest.mark.parametrize("value, expected", [
    (5 / 6, MATCHES),        # 0.8333 is 0.83 as printed
    (0.8, DIFFERS),
    (0.836, DIFFERS),        # 0.84 as printed
    (None, CANNOT_TELL),
    (math.nan, CANNOT_TELL),
])
def test_arithmetic_matches_at_the_seeds_printed_precision(value, expected):
    entry = {"kind": "arithmetic", "seed": 0.83}
    assert as_measured(entry, Evidence(value)) == expected
    assert verdict(entry, Evidence(value), PAPER) == expected


@pytest.mark.parametrize("evidence, expected", [
    (Evidence(70.0, 60.0, 80.0, 56), REPLICATES),
    (Evidence(50.0, 40.0, 60.0, 56), DOES_NOT_REPLICATE),
    (Evidence(70.0, 60.0, 74.6, 56), REPLICATES),          # 74.6 is 75 as printed
    (Evidence(70.0, 60.0, 74.4, 56), DOES_NOT_REPLICATE),
    (Evidence(75.0, 60.0, 90.0, 6), CANNOT_TELL),           # fewer than min_n
    (Evidence(75.0, 60.0, 90.0, None), CANNOT_TELL),        # no size given
    (Evidence(75.0, math.nan, math.nan, 56), CANNOT_TELL),
    (Evidence(cannot="Figure 2 lacks RAGTruth"), CANNOT_TELL),
])
def test_a_measured_value_replicates_when_the_seed_is_in_the_runs_interval(evidence, expected):
    assert as_measured(MEASURED, evidence) == expected


def test_a_value_without_an_interval_is_compared_at_the_seeds_printed_precision():
    entry = {"kind": "measured", "seed": 52, "models": []}
    assert as_measured(entry, Evidence(52.08)) == REPLICATES
    assert as_measured(entry, Evidence(52.6)) == DOES_NOT_REPLICATE
    about = {"kind": "measured", "seed": 80, "precision": 10, "models": []}  # "about 80%"
    assert as_measured(about, Evidence(81.0)) == REPLICATES
    assert as_measured(about, Evidence(86.0)) == DOES_NOT_REPLICATE


def test_a_range_replicates_when_the_interval_meets_it_and_only_then():
    entry = {"kind": "measured", "seed": [82, 87], "models": []}
    assert as_measured(entry, percent_rate(40, 50)) == REPLICATES      # 80 [66.3, 90.0]
    assert as_measured(entry, percent_rate(26, 50)) == DOES_NOT_REPLICATE  # 52 [37.4, 66.3]
    # one run value can no longer be "within" both 82-87 and 47-57: the interval is the run's
    other = {"kind": "measured", "seed": [47, 57], "models": []}
    tight = percent_rate(850, 1000)
    assert (as_measured(entry, tight), as_measured(other, tight)) == (REPLICATES,
                                                                      DOES_NOT_REPLICATE)


@pytest.mark.parametrize("parts, n, expected", [
    ((Part("S+P near start", True), Part("ungated collapses", True)), 12, HOLDS),
    ((Part("S+P near start", True), Part("ungated collapses", False)), 12, DOES_NOT_HOLD),
    ((Part("S+P near start", False), Part("ungated collapses", None, "no ungated chain")), 12,
     CANNOT_TELL),
    ((Part("S+P near start", True), Part("ungated collapses", True)), 3, CANNOT_TELL),
    ((), 12, CANNOT_TELL),
])
def test_a_qualitative_claim_holds_only_when_every_part_holds(parts, n, expected):
    assert as_measured(QUALITATIVE, Evidence(parts=parts, n=n)) == expected


def test_cannot_tell_says_why():
    few = Evidence(75.0, 60.0, 90.0, 6)
    assert "6 items" in why_cannot_tell(MEASURED, few) and "50" in why_cannot_tell(MEASURED, few)
    untested = Evidence(parts=(Part("gate accepted a change", None, "every change refused"),),
                        n=12)
    assert "every change refused" in why_cannot_tell(QUALITATIVE, untested)


def test_a_fake_or_local_model_is_never_a_replication():
    evidence = Evidence(75.0, 70.0, 80.0, 56)
    assert verdict(MEASURED, evidence, PAPER) == REPLICATES
    fake = {**PAPER, "models": {**PAPER["models"], "judge": "fake/known-judge?tpr=0.9&tnr=0.9"}}
    assert verdict(MEASURED, evidence, fake) == OTHER_MODELS
    assert as_measured(MEASURED, evidence) == REPLICATES  # the numbers' own reading stays
    local = {**PAPER, "carry": {"judges": ["local/default"]}}
    holds = Evidence(parts=(Part("all", True),), n=12)
    assert verdict(QUALITATIVE, holds, local) == OTHER_MODELS


def test_a_stand_in_is_flagged_never_called_a_replication():
    entry = {"kind": "qualitative", "seed": True, "models": ["transfer.generators"]}
    holds = Evidence(parts=(Part("Q- above Q+", True),), n=100)
    assert verdict(entry, holds, PAPER) == STAND_IN
    without = {**PAPER, "stand_ins": {}}
    assert verdict(entry, holds, without) == HOLDS


def test_other_models_do_not_hide_a_cannot_tell():
    fake = {**PAPER, "models": {**PAPER["models"], "judge": "fake/hash"}}
    assert verdict(MEASURED, Evidence(cannot="no Figure 2"), fake) == CANNOT_TELL


def test_a_sentence_about_the_seeds_own_numbers_is_arithmetic():
    entry = {"kind": "arithmetic", "seed": True}
    assert as_measured(entry, Evidence(parts=(Part("TNR wider", True),))) == MATCHES
    assert as_measured(entry, Evidence(parts=(Part("TNR wider", False),))) == DIFFERS
    assert as_measured(entry, Evidence(parts=(Part("TNR wider", None),))) == CANNOT_TELL
    fake = {**PAPER, "models": {**PAPER["models"], "judge": "fake/hash"}}
    assert verdict(entry, Evidence(parts=(Part("TNR wider", True),)), fake) == MATCHES


def test_a_rehearsal_served_model_is_never_a_replication():
    from rubriclab.rehearsal import REHEARSAL_FINGERPRINT
    evidence = Evidence(75.0, 70.0, 80.0, 56)
    judge = PAPER["models"]["judge"]
    rehearsed = {**PAPER, "llm": {"per_model": {judge: {
        "api_base": "http://127.0.0.1:5000", "fingerprint": REHEARSAL_FINGERPRINT}}}}
    assert verdict(MEASURED, evidence, rehearsed) == OTHER_MODELS
    revision = {**PAPER, "llm": {"per_model": {judge: {"fingerprint": "2026-05 snapshot"}}}}
    assert verdict(MEASURED, evidence, revision) == REPLICATES


def test_the_paper_configs_stand_in_is_flagged_on_every_claim_resting_on_it():
    """config/paper.yaml stands GPT-5.1 in for GPT-5 in transfer's panel: every claim resting
    on the panel reads "stand-in" whatever its numbers say, and a claim not resting on it is
    compared."""
    from pathlib import Path

    import yaml

    from rubriclab.replication.page import load_claims

    paper = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "paper.yaml")
                           .read_text(encoding="utf-8"))
    holds = Evidence(parts=(Part("every part", True),), n=10_000)
    replicated = Evidence(50.0, 0.0, 100.0, 10_000)
    on_panel = [c for c in load_claims() if "transfer.panel" in c.get("models", [])
                and "missing" not in c]
    assert on_panel
    for claim in on_panel:
        evidence = holds if claim["kind"] == "qualitative" else replicated
        assert verdict(claim, evidence, paper) == STAND_IN, claim["id"]
    carry = next(c for c in load_claims() if c["id"] == "carry.fig6.only_sp")
    assert verdict(carry, holds, paper) == HOLDS
