"""`deadline_s` bounds a request's wall clock whatever the server does: a reply trickled a byte
at a time (each byte within `timeout_s`, which bounds one read) is cut at the deadline, its
connection closed, and its attempt billed at an unknown cost."""

import json
import time

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.ledger import attempts_path, read_ledgers, summarize
from rubriclab.llm.settings import ModelPrice

from .trickle_server import RawReplyServer, Reply, completion_body

MODEL = "openai/trickle-model"
DEADLINE_S = 3.0
BYTE_INTERVAL_S = 0.2
# A price, so that a call's cost would be known: the unknown one is the deadline's doing.
PRICE = ModelPrice(input=1.0, output=2.0)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def judge():
    return Request.chat(MODEL, [{"role": "user", "content": "Is the sky blue?"}],
                        response_format="yes_no", max_tokens=4)


def test_a_trickling_server_is_cut_at_the_deadline_and_its_attempt_billed_unknown(tmp_path):
    trickled = Reply(completion_body("Yes"), byte_interval_s=BYTE_INTERVAL_S)
    # The whole reply would take far longer than the deadline, and each byte comes well
    # within timeout_s: only a bound on the request's wall clock stops it.
    assert len(trickled.wire()) * BYTE_INTERVAL_S > 10 * DEADLINE_S
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([], then=trickled) as server:
        settings = ModelSettings(api_base=server.api_base, timeout_s=5.0, deadline_s=DEADLINE_S,
                                 num_retries=2, backoff_s=0.01, max_backoff_s=0.05, price=PRICE)
        cfg = LLMConfig(cache_dir=tmp_path / "cache", per_model={MODEL: settings})
        with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
            client.backends.litellm  # noqa: B018 - imported before the clock starts
            started = time.monotonic()
            with pytest.raises(ModelCallsFailed) as failed:
                client.run([judge()])
            elapsed = time.monotonic() - started
            bill = client.spend.bill()
        assert len(server.exchanges) == 1  # no attempt after the deadline
        exchange = server.exchanges[0]
        assert exchange.done.wait(timeout=30), "the server never saw the client hang up"

    assert elapsed <= DEADLINE_S + 1, f"the request took {elapsed:.1f} s"
    assert "DeadlineExceeded" in str(failed.value)
    assert f"within its deadline of {DEADLINE_S:g} s" in str(failed.value)
    assert "the attempt under way was stopped after" in str(failed.value)
    # The client closed the connection at its deadline, mid-reply.
    assert exchange.hung_up is not None
    assert exchange.hung_up - exchange.arrived <= DEADLINE_S + 1
    assert 0 < exchange.bytes_sent < len(trickled.wire())

    # The attempt may have been billed: unknown in the ledger, its worst case on the bill.
    (row,) = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert row["outcome"] == "failed" and row["attempts"] == 1 and row["cost_usd"] is None
    (journaled,) = [json.loads(line)
                    for line in attempts_path(ledger_path).read_text().splitlines()]
    assert journaled["cost_usd"] is None and journaled["attempts"] == 1
    summary = summarize(read_ledgers([ledger_path])).set_index("model")
    assert summary.loc[MODEL, "cost_unknown_calls"] == 1
    assert bill.calls == 1 and bill.settled_usd > 0 and bill.in_flight_usd == 0


def test_a_call_in_a_thread_is_left_behind_at_the_deadline(tmp_path):
    """A call that runs in a thread (llama.cpp's, a fake model's) cannot be stopped: the
    request still ends at its deadline, and the run with it (nothing joins the thread)."""
    model = "fake/yes?delay_s=20"
    cfg = LLMConfig(cache_dir=tmp_path / "cache",
                    defaults=ModelSettings(deadline_s=1.0, num_retries=0))
    request = Request.chat(model, [{"role": "user", "content": "Is the sky blue?"}],
                           response_format="yes_no", max_tokens=4)
    with LLMClient(cfg) as client:
        started = time.monotonic()
        (answer,) = client.run([request], raise_on_failure=False)
        elapsed = time.monotonic() - started
    assert elapsed <= 1.0 + 1, f"the request took {elapsed:.1f} s"
    assert answer.outcome == "failed" and answer.error.startswith("DeadlineExceeded")
