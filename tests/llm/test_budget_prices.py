"""The budget guard counts every priced model, whatever form its price takes: litellm's map, a
configured `{input, output}` (the documented minimal form), one with `cache_write`, one with
batch rates. A model whose price has no cache-write rate is counted at its input rate, unless
its provider bills marked prompts as cache writes (Anthropic, prompt_cache on): then its worst
case is unknown, and the check before the first job and the client refuse it alike."""

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.budget import (BudgetCannotGuard, BudgetExceeded, unguarded_message,
                                  unguarded_models, worst_cost)
from rubriclab.llm.ledger import read_ledgers
from rubriclab.llm.settings import ModelPrice
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

from .jobs import finish, start_jobs
from .openai_stub import ScriptedOpenAIServer

# Not in litellm's map: priced by config only. At these prices one stub answer (11 prompt and
# 2 completion tokens) costs $0.15, and its worst case (a prompt estimated high, the whole
# answer budget of 4 tokens) about $0.21.
CONFIGURED_ONLY = "openai/stub-model"
STEEP = {"input": 10_000.0, "output": 20_000.0}


@pytest.fixture(autouse=True)
def api_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "sk-test-not-a-secret")


def test_two_jobs_of_a_model_priced_with_input_and_output_only_stop_before_the_budget(tmp_path):
    """The issue's case: two jobs spent $0.80 on a $0.50 budget, nothing booked for them."""
    budget, n = 0.50, 4
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.05) as server:
        llm = {"cache_dir": str(tmp_path / "cache"), "budget_usd": budget,
               "defaults": {"api_base": server.api_base, "timeout_s": 5.0, "num_retries": 2,
                            "backoff_s": 0.01, "concurrency": 2},
               "per_model": {CONFIGURED_ONLY: {"price": STEEP}}}
        jobs = start_jobs(tmp_path, llm, [[(CONFIGURED_ONLY, f"job {j} question {i}")
                                           for i in range(n)] for j in range(2)], warm_up=False)
        for job in jobs:
            job[-1].set()
        errors = [r["error"] for r in finish(jobs) if r["error"]]
        ledger = read_ledgers(sorted((tmp_path / "results" / "ledger").glob("*.jsonl")))
        paid = ledger[~ledger["cached"] & (ledger["attempts"] > 0)]
        assert errors and all(e.startswith("BudgetExceeded: ") for e in errors), errors
        assert paid["cost_usd"].notna().all() and paid["cost_usd"].min() > 0
        assert paid["cost_usd"].sum() <= budget
        assert 0 < len(server.requests) == len(paid) < 2 * n


SONNET = "anthropic/claude-sonnet-4-5-20250929"
MINI = "openai/gpt-4o-mini-2024-07-18"
# (model, its llm.per_model settings): every form a price takes.
PRICE_FORMS = {
    "litellm map": (MINI, {}),
    "configured input and output only": (CONFIGURED_ONLY, {"price": {"input": 1.0,
                                                                     "output": 2.0}}),
    "configured with cache_write": (SONNET, {"price": {"input": 3.0, "output": 15.0,
                                                       "cache_write": 3.75}}),
    "configured input and output, prompt cache off": (SONNET, {
        "price": {"input": 3.0, "output": 15.0}, "prompt_cache": False}),
    "configured with batch rates": (CONFIGURED_ONLY, {"price": {
        "input": 1.0, "output": 2.0, "batch_input": 0.5, "batch_output": 1.0}}),
    "configured with batch rates, in a batch": (MINI, {"batch": True, "price": {
        "input": 1.0, "output": 2.0, "batch_input": 0.5, "batch_output": 1.0}}),
}


def settings_of(model, values, url):
    provider = model.split("/", 1)[0]
    extra = {"batch_poll_s": 0.05, "batch_max_wait_s": 60} if values.get("batch") else {}
    return ModelSettings(api_base=url + "/v1" if provider == "openai" else url, timeout_s=5,
                         num_retries=1, backoff_s=0.01, max_backoff_s=0.02, **extra,
                         **{k: ModelPrice.from_dict(v, "price") if k == "price" else v
                            for k, v in values.items()})


@pytest.mark.parametrize("form", sorted(PRICE_FORMS))
def test_the_guard_books_a_worst_case_for_every_price_form(tmp_path, form):
    """A budget below one call's worst case stops it before it goes out: its worst case was
    booked (nothing booked, it would have gone out). The check before the first job agrees."""
    model, values = PRICE_FORMS[form]
    with RehearsalServer(faults=FaultMix.none()) as server:
        settings = settings_of(model, values, server.url)
        request = Request.chat(model, [{"role": "user", "content": "Is 2 even? Yes or No."}],
                               response_format="yes_no", max_tokens=4)
        worst = worst_cost(model, 20, 4, settings, batch=settings.batch)
        assert worst is not None and worst > 0
        assert unguarded_models(1.0, [model], settings={model: settings}) == []
        config = LLMConfig(cache_dir=tmp_path / "cache", budget_usd=worst / 2,
                           per_model={model: settings})
        ledger = Ledger(tmp_path / "results" / "ledger" / "job.jsonl", rule="job")
        with LLMClient(config, ledger=ledger) as client:
            with pytest.raises(BudgetExceeded, match="would take it past its budget"):
                client.run([request])
        assert sum(server.stats.requests.values()) == 0


def test_a_model_whose_marked_prompts_are_cache_writes_of_unknown_price_is_refused_alike(
        tmp_path):
    """Anthropic bills a marked prefix as a cache write, above the input rate: a configured
    price without cache_write cannot bound it, so the check before the first job names the
    model and the key, and the client refuses it before any call; without marks it is
    counted at its input rate."""
    price = ModelPrice.from_dict({"input": 3.0, "output": 15.0}, "price")
    marking = ModelSettings(price=price)
    assert worst_cost(SONNET, 1000, 100, marking, batch=False) is None
    assert unguarded_models(5.0, [SONNET], settings={SONNET: marking}) == [SONNET]
    message = unguarded_message(5.0, [SONNET], settings={SONNET: marking})
    assert "cache_write" in message and "prompt_cache" in message
    unmarked = ModelSettings(price=price, prompt_cache=False)
    assert worst_cost(SONNET, 1000, 100, unmarked, batch=False) == pytest.approx(
        1e-6 * (3.0 * 1000 + 15.0 * 100))
    # not Anthropic: no prompt is ever written to a cache, so the input rate bounds it
    assert worst_cost(CONFIGURED_ONLY, 1000, 100, ModelSettings(price=price),
                      batch=False) == pytest.approx(1e-6 * (3.0 * 1000 + 15.0 * 100))
    with RehearsalServer(faults=FaultMix.none()) as server:
        config = LLMConfig(cache_dir=tmp_path / "cache", budget_usd=5.0,
                           per_model={SONNET: ModelSettings(api_base=server.url, price=price)})
        ledger = Ledger(tmp_path / "results" / "ledger" / "job.jsonl", rule="job")
        with LLMClient(config, ledger=ledger) as client:
            with pytest.raises(BudgetCannotGuard, match="cache_write"):
                client.run([Request.chat(SONNET, [{"role": "user", "content": "Hi?"}],
                                         response_format="yes_no", max_tokens=4)])
        assert sum(server.stats.requests.values()) == 0


def test_the_check_before_the_first_job_agrees_with_the_client():
    """rubriclab.validate.budget_problems names exactly the models the client cannot count."""
    from rubriclab.validate import budget_problems

    config = {"models": {"judge": SONNET, "agent": CONFIGURED_ONLY},
              "llm": {"budget_usd": 5.0, "per_model": {
                  SONNET: {"price": {"input": 3.0, "output": 15.0}},
                  CONFIGURED_ONLY: {"price": {"input": 1.0, "output": 2.0}}}}}
    problems = budget_problems(config)
    assert len(problems) == 1 and SONNET in problems[0] and "cache_write" in problems[0]
    config["llm"]["per_model"][SONNET]["prompt_cache"] = False
    assert budget_problems(config) == []
