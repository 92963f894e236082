"""The budget guard (rubriclab.llm.budget): two jobs sharing a run's bill stop before it passes
`llm.budget_usd`; a rerun with a larger budget finishes from the cache, paying nothing twice. The
spend record's cases run on both backends (`backend`: SQLite beside the ledgers, the run's row
in PostgreSQL); what only PostgreSQL's does is in test_budget_pg."""

from dataclasses import replace

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.budget import (BudgetCannotGuard, BudgetExceeded, SpendRecord,
                                  spend_record_path, unguarded_message, unguarded_models)
from rubriclab.llm.ledger import attempts_path, calls_per_distinct_request, read_ledgers
from rubriclab.llm.pricing import price
from rubriclab.llm.storage import open_spend_record

from .jobs import finish, start_jobs
from .openai_stub import ScriptedOpenAIServer

PRICED = "openai/gpt-4o-mini"  # priced by litellm's map; answered by the loopback server
UNPRICED = "openai/stub-model"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def config(tmp_path, server, budget, backend=None):
    return LLMConfig(cache_dir=tmp_path / "cache", budget_usd=budget,
                     cache_url=backend.url(tmp_path / "cache") if backend else None,
                     defaults=ModelSettings(api_base=server.api_base, timeout_s=5.0,
                                            num_retries=2, backoff_s=0.01, concurrency=2))


def bill_of(cfg, ledger_path):
    """The bill of the run whose ledger is at `ledger_path` (the unnamed run), as it stands."""
    record = open_spend_record(cfg, ledger_path, None)
    try:
        return record.bill()
    finally:
        record.close()


def requests(job, n, model=PRICED):
    return [Request.chat(model, [{"role": "user", "content": f"job {job} question {i}"}],
                         response_format="yes_no", max_tokens=4) for i in range(n)]


def run_two_jobs(tmp_path, server, budget, n):
    """Two jobs of one run at once, each a process with its own client and ledger."""
    llm = {"cache_dir": str(tmp_path / "cache"), "budget_usd": budget,
           "defaults": {"api_base": server.api_base, "timeout_s": 5.0, "num_retries": 2,
                        "backoff_s": 0.01, "concurrency": 2}}
    jobs = start_jobs(tmp_path, llm, [[(PRICED, f"job {j} question {i}") for i in range(n)]
                                      for j in range(2)], warm_up=False)
    for job in jobs:
        job[-1].set()
    errors = [r["error"] for r in finish(jobs) if r["error"]]
    ledgers = sorted((tmp_path / "results" / "ledger").glob("*.jsonl"))
    return errors, read_ledgers(ledgers), ledgers


def test_a_budget_stops_the_run_before_its_bill_passes_it_and_a_rerun_finishes(tmp_path):
    # one stub answer: 11 prompt and 2 completion tokens
    per_call = price(PRICED, 11, 2)
    assert per_call and per_call > 0
    budget = 7.5 * per_call
    n = 8
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.05) as server:
        errors, first, ledgers = run_two_jobs(tmp_path, server, budget, n)
        assert errors and all(e.startswith("BudgetExceeded: ") for e in errors)
        message = errors[0]
        assert "so far" in message and f"budget of ${budget:.3g}" in message
        assert "llm.budget_usd" in message and "from the cache" in message
        paid = first[~first["cached"] & (first["attempts"] > 0)]
        assert 0 < len(paid) < 2 * n
        assert paid["cost_usd"].sum() <= budget
        assert (paid["outcome"] == "ok").all()  # the calls in flight finished: cached
        assert len(server.requests) == len(paid)
        bill = SpendRecord(spend_record_path(ledgers[0])).bill()
        assert bill.in_flight_usd == pytest.approx(0, abs=1e-12)
        assert bill.settled_usd == pytest.approx(paid["cost_usd"].sum())

        # a larger budget: the rerun goes on from the cache and pays only for the rest
        errors, second, ledgers = run_two_jobs(tmp_path, server, 100 * budget, n)
        assert not errors
        assert (second["outcome"] == "ok").all() and len(second) == 2 * n
        assert second["cached"].sum() == len(paid)
        assert len(server.requests) == 2 * n
        asked = [body["messages"][0]["content"] for body in server.requests]
        assert len(set(asked)) == len(asked)  # nothing asked (paid for) twice
    journals = read_ledgers([attempts_path(p) for p in ledgers])
    made, distinct = calls_per_distinct_request(second, journals)
    assert made == distinct == 2 * n
    bill = SpendRecord(spend_record_path(ledgers[0])).bill()
    assert bill.settled_usd == pytest.approx(journals["cost_usd"].sum())


def test_a_model_of_unknown_price_is_refused_under_a_budget_before_any_call(tmp_path):
    with ScriptedOpenAIServer([], then="Yes") as server:
        ledger = Ledger(tmp_path / "results" / "ledger" / "job.jsonl", rule="job")
        with LLMClient(config(tmp_path, server, 5.0), ledger=ledger) as client:
            with pytest.raises(BudgetCannotGuard, match=f"{UNPRICED}.*no known price"):
                client.run(requests(0, 2, model=UNPRICED))
            # the same model without a budget is called as before
        with LLMClient(config(tmp_path, server, None),
                       ledger=Ledger(tmp_path / "results" / "ledger" / "job.jsonl",
                                     rule="job")) as client:
            assert [c.outcome for c in client.run(requests(0, 2, model=UNPRICED))] == ["ok"] * 2
        assert len(server.requests) == 2


def test_the_models_a_budget_cannot_guard_are_named_before_the_first_job():
    models = ["fake/hash", "local/default", PRICED, UNPRICED, UNPRICED]
    assert unguarded_models(None, models) == []
    assert unguarded_models(5.0, models) == [UNPRICED]
    message = unguarded_message(5.0, [UNPRICED, "xai/unknown-model"])
    assert "'openai/stub-model', 'xai/unknown-model' have no known price" in message
    assert "llm.per_model.<model>.price" in message and "$5.00" in message


def test_a_cached_answer_needs_no_budget(tmp_path, backend):
    with ScriptedOpenAIServer([], then="Yes") as server:
        with LLMClient(config(tmp_path, server, None, backend),
                       ledger=Ledger(tmp_path / "l" / "a.jsonl", rule="a")) as client:
            client.run(requests(0, 2))
        tiny = price(PRICED, 1, 1) / 10  # below any call's price
        with LLMClient(config(tmp_path, server, tiny, backend),
                       ledger=Ledger(tmp_path / "l" / "a.jsonl", rule="a")) as client:
            assert all(c.cached for c in client.run(requests(0, 2)))
            with pytest.raises(BudgetExceeded, match="would take it past its budget"):
                client.run(requests(1, 1))
        assert len(server.requests) == 2


def test_the_spend_record_books_worst_cases_and_settles_to_costs(tmp_path, backend):
    cfg = backend.config(tmp_path / "cache")
    record = open_spend_record(cfg, tmp_path / "ledger" / "a.jsonl", None)
    first = record.reserve(0.4, 1.0, "a call")
    # another process of the run
    other = open_spend_record(cfg, tmp_path / "ledger" / "b.jsonl", None)
    with pytest.raises(BudgetExceeded, match=r"\$0\.40 so far"):
        other.reserve(0.7, 1.0, "a call")
    second = other.reserve(0.5, 1.0, "a call")
    record.settle(first, 0.1)
    other.settle(second, None)  # unknown cost: its worst case stays on the bill
    bill = record.bill()
    assert (bill.settled_usd, bill.in_flight_usd, bill.calls) == pytest.approx((0.6, 0.0, 2))
    # a batch: its worst case booked, each answer added as it is read, then the booking released
    batch = other.reserve(0.3, 1.0, "a batch")
    with pytest.raises(BudgetExceeded, match=r"\$0\.90 so far \(2 paid calls, \$0\.30 of it for"
                       r" calls in flight\).*a call, which may cost up to \$0\.20"):
        record.reserve(0.2, 1.0, "a call")
    other.add(0.05)
    other.add(0.05)
    other.release(batch)
    bill = record.bill()
    assert (bill.settled_usd, bill.in_flight_usd, bill.calls) == pytest.approx((0.7, 0.0, 4))
    with pytest.raises(ValueError, match="cannot cost -1"):
        record.reserve(-1, 1.0, "a call")
    record.close()
    other.close()


@pytest.mark.parametrize("value", [0, -1, "5", True])
def test_a_budget_is_a_positive_number_of_dollars(value):
    with pytest.raises(ValueError, match="llm.budget_usd"):
        LLMConfig.from_dict({"budget_usd": value})
    assert LLMConfig.from_dict({"budget_usd": 12.5}).budget_usd == 12.5
    assert LLMConfig.from_dict({}).budget_usd is None


def test_a_budget_given_on_the_command_line_reaches_the_model_layer(repo, schema):
    """--config 'llm={budget_usd: 5}' arrives as a string inside the llm block (merged into
    paper.yaml's, not replacing it) and is read as the number the schema asks for."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    from rubriclab.config import load_yaml, validate_config
    from rubriclab.config_schema import coerce_command_line

    command_line = parse_config(["llm={budget_usd: 5}"])
    config = load_yaml(repo / "config" / "paper.yaml")
    update_config(config, command_line)
    llm = LLMConfig.from_dict(validate_config(coerce_command_line(config, command_line, schema),
                                              schema)["llm"])
    assert llm.budget_usd == 5.0
    assert llm.settings_for("gemini/gemini-3.8-flash").requests_per_minute == 2000


@pytest.mark.parametrize("fault, billed_as_worst_case", [("500", False), ("429", False),
                                                          ("timeout", True)])
def test_a_failed_attempt_is_billed_at_zero_or_at_its_worst_case(tmp_path, fault,
                                                                 billed_as_worst_case, backend):
    """An error status made no completion ($0); a timeout may have been billed: its worst case
    stays on the bill."""
    with ScriptedOpenAIServer([fault, "Yes"], slow_s=2.0) as server:
        cfg = replace(config(tmp_path, server, None, backend), defaults=ModelSettings(
            api_base=server.api_base, timeout_s=0.5, num_retries=2, backoff_s=0.01))
        ledger = Ledger(tmp_path / "results" / "ledger" / "job.jsonl", rule="job")
        with LLMClient(cfg, ledger=ledger) as client:
            (answer,) = client.run(requests(0, 1))
    bill = bill_of(cfg, ledger.path)
    assert answer.outcome == "ok" and answer.attempts == 2 and bill.calls == 2
    assert bill.in_flight_usd == 0
    if billed_as_worst_case:
        assert bill.settled_usd > answer.cost_usd * 1.5
    else:
        assert bill.settled_usd == pytest.approx(answer.cost_usd)
