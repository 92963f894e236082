"""The reduced rehearsal: config/paper.yaml's models, roles and budgets at small sizes, every
call through litellm's HTTP path to the loopback server with its fault mix (make rehearse runs
the same at full paper size)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from rubriclab.rehearsal.run import PLACEHOLDER_KEYS, RehearsalFailed, expected_sizes, rehearse
from rubriclab.rehearsal.server import FaultMix
from ..shared_runs import SharedRun
from ..snakemake_run import RUN_BOUND_S

pytestmark = [pytest.mark.pipeline, pytest.mark.long]

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "paper.yaml"
REDUCED = Path(__file__).with_name("reduced.yaml")


def _make_rehearsal(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("rehearsal")
    # Transport faults several times as frequent as the default mix, so a small run meets each
    # of them. Faulty answers keep the default shares: a fenced one is read as it is (one
    # surrounding markdown fence); a truncated or refused one is asked again, and the ledger
    # counts the re-ask's prompt apart, which the plan does not foresee.
    # With batch mode most requests go in batches, which meet no transport fault, so the few
    # ordinary calls open with one of each: drawn alone, a hang was missed by some runs.
    faults = FaultMix(rate_limited=0.04, server_error=0.03, hang=0.004, long_think=0.05,
                      retry_after_s=0.2, hang_s=2.5,
                      opening=("hang", "rate_limited", "server_error"))
    report = rehearse([PAPER, REDUCED], workdir, cores=2,
                      data_mirror=str((REPO / ".." / "shared" / "data").resolve()),
                      expect_paper=False, faults=faults, bound_s=RUN_BOUND_S)
    return workdir, report


@pytest.fixture(scope="module")
def rehearsal_attempt(tmp_path_factory) -> SharedRun:
    """The reduced rehearsal, made once; its failure is reported by
    test_rehearsal_completes, and the tests that read it are skipped."""
    return SharedRun.made_by("the reduced rehearsal", lambda: _make_rehearsal(tmp_path_factory))


def test_rehearsal_completes(rehearsal_attempt):
    rehearsal_attempt.completed()


@pytest.fixture
def rehearsed(rehearsal_attempt):
    return rehearsal_attempt.read()


def test_the_run_holds_the_sizes_its_config_names(rehearsed):
    workdir, report = rehearsed
    assert report["measured"] == report["expected"]
    # paper.yaml's model lists, whole: three carry judges, the eight-model panel
    assert report["expected"]["carry_judges"] == 3 and report["expected"]["panel"] == 8
    assert report["expected"]["recon_environments"] == 2
    assert report["expected"]["transfer_examples"] == 3


def test_every_wire_format_and_every_fault_was_met(rehearsed):
    _, report = rehearsed
    server = report["server"]
    assert set(server["requests"]) == {"openai", "anthropic", "gemini"}
    assert set(server["faults"]) == {"rate_limited", "server_error", "hang", "fenced",
                                     "truncated", "refusal"}
    assert server["cut_off"] > 0


def test_batch_mode_answered_for_each_provider_of_paper_yaml(rehearsed):
    """paper.yaml batches its OpenAI, Gemini and Anthropic models: the ledger has batch answers
    of each, and the server answered batch rows on each provider's batch API."""
    workdir, report = rehearsed
    assert set(report["ledger"]["batch_by_provider"]) == {"openai", "gemini", "anthropic"}
    assert all(n > 0 for n in report["ledger"]["batch_by_provider"].values())
    server = report["server"]
    assert set(server["batch_rows"]) == {"openai", "gemini", "anthropic"}
    for provider in ("openai", "gemini", "anthropic"):
        assert server["batch_calls"][provider]["create"] > 0
    assert "answered by a provider's batch API: " in (workdir / "rehearsal_report.md").read_text()


def test_faults_cost_retries_and_re_asks_not_answers(rehearsed):
    workdir, report = rehearsed
    ledger = report["ledger"]
    assert ledger["outcomes"].get("failed", 0) == 0
    assert ledger["attempts"] > ledger["requests"] - ledger["cached"]  # retries happened
    assert ledger["reasks"] > 0
    # the requests the ledger saw uncached all reached the server at least once
    assert sum(report["server"]["requests"].values()) >= ledger["requests"] - ledger["cached"]


def test_verify_grades_the_replies_of_passing_trials(rehearsed):
    workdir, _ = rehearsed
    trials = pd.read_csv(workdir / "results" / "verify" / "trials.csv", keep_default_na=False)
    graded = (workdir / "results" / "ledger" / "verify_reply_rubric.jsonl").read_text()
    assert (trials["verifier_passed"].astype(str) == "True").any()
    assert len(graded.splitlines()) > 0


def test_the_paper_roles_reached_the_providers(rehearsed):
    workdir, _ = rehearsed
    effective = yaml.safe_load((workdir / "results" / "effective_config.yaml").read_text())
    assert effective["llm"]["roles"]["transfer_judge"]["reasoning_effort"] == "medium"
    assert effective["transfer"]["temperature"] is None
    # Table A.3's filters come from paper.yaml and the reduced file only, not config.yaml
    assert effective["transfer"]["max_conversation_chars"] is None


def test_no_placeholder_key_reaches_an_output(rehearsed):
    workdir, _ = rehearsed
    for folder in ("results", "figures", "logs"):
        for path in (workdir / folder).rglob("*"):
            if path.is_file() and path.suffix in (".csv", ".md", ".json", ".jsonl", ".log",
                                                  ".yaml"):
                assert "rehearsal-placeholder" not in path.read_text(errors="replace"), path


def test_expected_sizes_read_the_effective_config():
    effective = {"carry": {"recon": {"environments": None}, "judges": None},
                 "models": {"judge": "x/j"},
                 "transfer": {"n_examples": None, "panel": ["a", "b@1"]},
                 "datasets": {"healthbench": {"per_theme": 15, "themes": list("abcdefg")}},
                 "verify": {"trials": 500}}
    assert expected_sizes(effective) == {"recon_environments": 12, "carry_judges": 1,
                                         "transfer_examples": 105, "panel": 2,
                                         "verify_trials": 500}


def test_a_provider_the_server_does_not_speak_is_named_before_the_run(tmp_path):
    config = tmp_path / "odd.yaml"
    config.write_text(yaml.safe_dump({"models": {"judge": "bedrock/some-model"}}))
    with pytest.raises(RehearsalFailed, match="bedrock/some-model"):
        rehearse([PAPER, config], tmp_path / "run", cores=1, data_mirror=str(tmp_path),
                 expect_paper=False, faults=FaultMix.none())


def test_placeholder_keys_cover_every_provider_of_paper_yaml():
    from rubriclab.rehearsal.run import merged_config, model_strings, provider

    providers = {provider(m) for m in model_strings(merged_config([PAPER]))}
    assert {f"{p.upper()}_API_KEY" for p in providers} <= set(PLACEHOLDER_KEYS)


def test_the_models_the_server_makes_think_are_paper_yamls_thinkers():
    """THINKING_BY_DEFAULT names only models paper.yaml runs (no stale name: its Grok was
    "grok-4", a reasoning model, before Table A.3's non-reasoning Grok 4.20), and each has room
    to think (`reasoning_tokens`), or the rehearsal's answers would be cut off."""
    from rubriclab.llm import LLMConfig
    from rubriclab.rehearsal.run import THINKING_BY_DEFAULT, merged_config, model_strings

    config = merged_config([PAPER])
    by_name = {m.split("/", 1)[1]: m for m in model_strings(config)}
    assert set(THINKING_BY_DEFAULT) <= set(by_name)
    llm = LLMConfig.from_dict(config["llm"])
    for name in THINKING_BY_DEFAULT:
        assert llm.settings_for(by_name[name]).reasoning_tokens > 0, by_name[name]


def test_the_servers_claude_thinkers_are_the_ones_the_plan_prices_as_thinking():
    """Two records of which Claude models think unasked: the rehearsal server's
    (THINKING_BY_DEFAULT) and the plan's (pricing.CLAUDE_THINKING_BY_DEFAULT). Each anthropic
    model of paper.yaml is in the one exactly when the other says it thinks."""
    from rubriclab.llm.pricing import CLAUDE_THINKING_BY_DEFAULT
    from rubriclab.rehearsal.run import (THINKING_BY_DEFAULT, merged_config, model_strings,
                                         provider)

    claude = [m.split("/", 1)[1] for m in model_strings(merged_config([PAPER]))
              if provider(m) == "anthropic"]
    assert claude
    for name in claude:
        assert (name in THINKING_BY_DEFAULT) == bool(
            CLAUDE_THINKING_BY_DEFAULT.search(name.lower())), name
    for name in THINKING_BY_DEFAULT:
        if name.lower().startswith("claude"):
            assert CLAUDE_THINKING_BY_DEFAULT.search(name.lower()), name


def test_the_bill_holds_to_the_plan_made_before_the_run(rehearsed):
    """Issue 11: exact rows to the request, estimated rows within 10%, prompt tokens within 5%,
    per rule and model (rehearse() raises on any of these; the report keeps the numbers)."""
    workdir, report = rehearsed
    plan = report["plan"]
    assert plan["problems"] == []
    by_rule = pd.DataFrame(plan["by_rule"])
    assert {"carry_fig2_judge", "carry_judge", "carry_chain", "transfer_judge",
            "transfer_intervene", "verify_agent_trials"} <= set(by_rule["rule"])
    exact = by_rule[by_rule["basis"] == "exact"]
    assert len(exact) and (exact["planned_requests"] == exact["made_requests"]).all()
    large = by_rule[by_rule["planned_requests"] >= 100]  # (small rules have an absolute slack)
    assert len(large) >= 5 and (large["prompt_tokens_off"].abs() <= 0.05).all()
    assert (large.loc[large["basis"] != "exact", "requests_off"].abs() <= 0.10).all()
    # the cost report puts the same plan beside the bill
    cost_report = (workdir / "figures" / "cost_report.md").read_text()
    assert "## The bill against the plan" in cost_report and "made by `rubriclab plan`" in cost_report


def test_a_rehearsal_past_its_bound_is_stopped_with_its_jobs(tmp_path):
    import psutil

    workdir = tmp_path / "run"
    with pytest.raises(RehearsalFailed, match=r"ran past its bound of 1 s and was stopped"):
        rehearse([PAPER, REDUCED], workdir, cores=1,
                 data_mirror=str((REPO / ".." / "shared" / "data").resolve()),
                 expect_paper=False, faults=FaultMix.none(), bound_s=1)
    left = [p for p in psutil.process_iter(["cmdline"])
            if any(str(workdir) in part for part in p.info["cmdline"] or ())]
    assert left == []
