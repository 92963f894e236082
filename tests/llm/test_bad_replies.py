"""A 200 whose body is no completion (empty, an HTML page, JSON cut short, plain text) is asked
again, named plainly, and billed as possibly paid: its request's prompt tokens (estimated
high) at an unknown cost, so that the bill can only overstate."""

import json

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm import pricing
from rubriclab.llm.budget import worst_cost
from rubriclab.llm.ledger import attempts_path, read_ledgers, summarize
from rubriclab.llm.ratelimit import estimate_prompt_tokens
from rubriclab.llm.settings import ModelPrice

from .trickle_server import RawReplyServer, Reply, completion_body

MODEL = "openai/bad-replies-model"
PRICE = ModelPrice(input=1.0, output=2.0)
SERVER_PROMPT_TOKENS = 11  # what the good answer's usage says
HTML = (b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
        b"<body><h1>502 Bad Gateway</h1><hr>nginx</body></html>")
TRUNCATED = completion_body("Yes")[:70]

# (reply, the plain message it is named by)
BAD_REPLIES = {
    "empty": (Reply(b""), "the server answered 200 with an empty body"),
    "html": (Reply(HTML, content_type="text/html"),
             "the server answered 200 with an HTML page, not JSON (starts '<!DOCTYPE html>"),
    "html-as-json": (Reply(HTML),
                     "the server answered 200 with an HTML page, not JSON (starts '<!DOCTYPE"),
    "truncated": (Reply(TRUNCATED), "the server answered 200 with JSON that does not parse ("),
    "plain-text": (Reply(b"upstream busy", content_type="text/plain"),
                   "the server answered 200 with a body that is not JSON (starts "
                   "'upstream busy')"),
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def judge():
    return Request.chat(MODEL, [{"role": "user", "content": "Is the sky blue? " * 20}],
                        response_format="yes_no", max_tokens=4)


def client_for(tmp_path, server, ledger_path, num_retries=3):
    settings = ModelSettings(api_base=server.api_base, timeout_s=10.0, num_retries=num_retries,
                             backoff_s=0.01, max_backoff_s=0.05, price=PRICE)
    cfg = LLMConfig(cache_dir=tmp_path / "cache", per_model={MODEL: settings})
    return LLMClient(cfg, ledger=Ledger(ledger_path, "judge"))


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_a_bad_200_is_asked_again_and_billed_at_its_prompt_at_an_unknown_cost(tmp_path, kind):
    bad, _ = BAD_REPLIES[kind]
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([bad], then=Reply(completion_body("Yes", SERVER_PROMPT_TOKENS))) as server:
        with client_for(tmp_path, server, ledger_path) as client:
            (answer,) = client.run([judge()])
            bill = client.spend.bill()
            settings = client.config.settings_for(MODEL)
        assert len(server.exchanges) == 2
    estimate = estimate_prompt_tokens(judge().message_dicts())
    assert estimate > SERVER_PROMPT_TOKENS  # so the two are told apart below

    assert answer.outcome == "ok" and answer.parsed == "yes" and answer.attempts == 2
    (row,) = rows(ledger_path)
    assert row["prompt_tokens"] == SERVER_PROMPT_TOKENS + estimate
    assert row["cost_usd"] is None  # not the good answer's known cost alone
    assert rows(attempts_path(ledger_path)) == [row]
    summary = summarize(read_ledgers([ledger_path])).set_index("model")
    assert summary.loc[MODEL, "cost_unknown_calls"] == 1
    # The run's bill keeps the bad attempt at its worst case, beside the good one's cost.
    good = pricing.price(MODEL, SERVER_PROMPT_TOKENS, 2, configured=PRICE)
    worst = worst_cost(MODEL, estimate, judge().budget, settings, batch=False)
    assert bill.calls == 2 and bill.settled_usd == pytest.approx(worst + good)


def test_a_clean_answer_keeps_its_known_cost(tmp_path):
    """The control: the same request answered at once is billed what its usage says."""
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([], then=Reply(completion_body("Yes", SERVER_PROMPT_TOKENS))) as server:
        with client_for(tmp_path, server, ledger_path) as client:
            client.run([judge()])
    (row,) = rows(ledger_path)
    assert row["prompt_tokens"] == SERVER_PROMPT_TOKENS
    assert row["cost_usd"] == pytest.approx(
        pricing.price(MODEL, SERVER_PROMPT_TOKENS, 2, configured=PRICE))


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_a_request_only_ever_answered_badly_fails_with_the_plain_message(tmp_path, kind):
    bad, message = BAD_REPLIES[kind]
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([], then=bad) as server:
        with client_for(tmp_path, server, ledger_path, num_retries=2) as client:
            with pytest.raises(ModelCallsFailed) as failed:
                client.run([judge()])
            assert len(client.cache) == 0
        assert len(server.exchanges) == 3

    assert f"UnreadableReply: {message}" in str(failed.value)
    assert "Expecting value" not in str(failed.value)
    assert "InternalServerError" not in str(failed.value)
    (row,) = rows(ledger_path)
    assert row["outcome"] == "failed" and row["attempts"] == 3
    assert row["error"].startswith(f"UnreadableReply: {message}")
    assert row["prompt_tokens"] == 3 * estimate_prompt_tokens(judge().message_dicts())
    assert row["cost_usd"] is None


def test_the_truncated_json_message_says_where_it_stopped(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([], then=Reply(TRUNCATED)) as server:
        with client_for(tmp_path, server, ledger_path, num_retries=0) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
    assert f"{len(TRUNCATED)} characters" in answer.error
    assert repr("..." + TRUNCATED.decode().strip()[-40:]) in answer.error


def test_a_500_with_an_html_page_is_an_error_status_not_an_unreadable_200(tmp_path):
    """A real error status made no completion: it stays litellm's error, settled at $0."""
    ledger_path = tmp_path / "ledger.jsonl"
    with RawReplyServer([], then=Reply(HTML, status=500, content_type="text/html")) as server:
        with client_for(tmp_path, server, ledger_path, num_retries=1) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
            bill = client.spend.bill()
        assert len(server.exchanges) == 2
    assert answer.outcome == "failed" and "InternalServerError" in answer.error
    assert "UnreadableReply" not in answer.error
    (row,) = rows(ledger_path)
    assert row["prompt_tokens"] == 0
    assert bill.calls == 2 and bill.settled_usd == 0


def test_an_empty_answer_asked_again_stays_on_the_bill_at_its_usage(tmp_path):
    """A 200 with a completion whose text is empty is billed what its usage says: its tokens
    and cost are added to the answer that follows, and to a request that never got one."""
    empty = Reply(completion_body("", SERVER_PROMPT_TOKENS, completion_tokens=5))
    ledger_path = tmp_path / "ledger.jsonl"
    good = Reply(completion_body("Yes", SERVER_PROMPT_TOKENS))
    with RawReplyServer([empty], then=good) as server:
        with client_for(tmp_path, server, ledger_path) as client:
            (answer,) = client.run([judge()])
    (row,) = rows(ledger_path)
    assert answer.outcome == "ok" and answer.attempts == 2
    assert (row["prompt_tokens"], row["completion_tokens"]) == (2 * SERVER_PROMPT_TOKENS, 5 + 2)
    assert row["cost_usd"] == pytest.approx(
        pricing.price(MODEL, SERVER_PROMPT_TOKENS, 5, configured=PRICE)
        + pricing.price(MODEL, SERVER_PROMPT_TOKENS, 2, configured=PRICE))

    ledger_path = tmp_path / "never.jsonl"
    with RawReplyServer([], then=empty) as server:
        with client_for(tmp_path / "never", server, ledger_path, num_retries=1) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
    (row,) = rows(ledger_path)
    assert answer.outcome == "failed" and "EmptyAnswer" in answer.error
    assert (row["prompt_tokens"], row["completion_tokens"]) == (2 * SERVER_PROMPT_TOKENS, 2 * 5)
