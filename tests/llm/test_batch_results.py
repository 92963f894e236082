"""A batch's result file is read line by line, and a line of no use never replaces an answer:
a request answered twice alike takes the answer once; one answered twice differently takes
neither (no answer cached, the request asked again or failed as `batch_fallback` says, both
answers on the bill); lines without a request id, lines for requests the batch did not hold
and requests given no line are warnings, counted on the job's last progress line. Against the
rehearsal server's imitation of each provider's batch API, its result files rewritten on the
way out, counted at the server."""

import json
import logging

import pytest

from rubriclab.llm import Ledger, LLMClient
from rubriclab.llm.budget import SpendRecord, spend_record_path
from rubriclab.llm.pricing import price

from .batch_setup import env_keys, provider, server  # noqa: F401  (fixtures)
from .batch_setup import MODELS, config, paid, questions

# Where each provider's results are downloaded, and what it calls a line's request id.
RESULT_ROUTES = {"openai": "/content", "gemini": ":download", "anthropic": "/results"}
ID_FIELDS = {"openai": "custom_id", "gemini": "key", "anthropic": "custom_id"}


def rewrite_results(monkeypatch, api, provider, rewrite):
    """Serve each result file of `api` as `rewrite` (its lines, parsed) makes it."""
    original = api.get

    def get(path, headers=None):
        reply = original(path, headers)
        if not path.split("?", 1)[0].endswith(RESULT_ROUTES[provider]) or reply[0] != 200:
            return reply
        lines = [json.loads(line) for line in reply[1].decode().splitlines() if line.strip()]
        return 200, "".join(json.dumps(line) + "\n" for line in rewrite(lines)).encode()

    monkeypatch.setattr(api, "get", get)


def text_parts(provider, line):
    """The answer's text parts of a result line (dicts holding "text" or "content")."""
    if provider == "openai":
        return [line["response"]["body"]["choices"][0]["message"]]
    if provider == "gemini":
        return [p for p in line["response"]["candidates"][0]["content"]["parts"]
                if "text" in p and not p.get("thought")]
    return [b for b in line["result"]["message"]["content"] if b["type"] == "text"]


def flipped(provider, line):
    """The line with the other answer: Yes for No, No for Yes."""
    line = json.loads(json.dumps(line))
    (part,) = text_parts(provider, line)
    field = "content" if provider == "openai" else "text"
    assert part[field].strip() in ("Yes", "No"), part
    part[field] = "No" if part[field].strip() == "Yes" else "Yes"
    return line


def run(cache_dir, server, provider, numbers, ledger_path, **settings):
    with LLMClient(config(cache_dir, server.url, provider, **settings),
                   ledger=Ledger(ledger_path, "judge")) as client:
        answers = client.run(questions(provider, numbers), raise_on_failure=False)
        cached = {a.key: client.cache.get(a.key) for a in answers}
    return answers, cached


def rows_of(ledger_path):
    return {row["key"]: row for row in map(json.loads, ledger_path.read_text().splitlines())}


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.name.startswith("rubriclab")]


def last_progress_line(caplog):
    return [r for r in caplog.records if r.name == "rubriclab.progress"][-1]


@pytest.mark.parametrize("provider, fallback", [(p, "call") for p in sorted(MODELS)]
                         + [("openai", "fail")])
def test_a_request_answered_twice_differently_takes_neither_answer(
        tmp_path, server, provider, monkeypatch, caplog, fallback):
    """Of a batch of 10, request K has two lines, its answer and the other one after it: K
    caches neither. With batch_fallback call it is asked once as an ordinary call (11 paid);
    with fail it fails (10 paid). Either way both of K's batch answers are on the bill."""
    caplog.set_level(logging.INFO)
    api = server.batch_apis[provider]
    conflicting = set()  # (litellm may download a file more than once)

    def answer_twice(lines):
        conflicting.add(lines[0][ID_FIELDS[provider]])
        return lines + [flipped(provider, lines[0])]

    rewrite_results(monkeypatch, api, provider, answer_twice)
    ledger_path = tmp_path / "ledger.jsonl"
    answers, cached = run(tmp_path / "cache", server, provider, range(10), ledger_path,
                          batch_fallback=fallback)

    (key,) = conflicting
    by_key = {a.key: a for a in answers}
    assert server.stats.batch_rows[provider] == 10
    others = [a for a in answers if a.key != key]
    assert len(others) == 9 and all(a.outcome == "ok" and a.batch for a in others)
    assert all(cached[a.key] is not None and cached[a.key].text == a.text for a in others)
    if fallback == "call":
        assert paid(server, provider) == 11  # K asked once more, as an ordinary call
        assert by_key[key].outcome == "ok"
        assert cached[key] is not None and cached[key].text == by_key[key].text
    else:
        assert paid(server, provider) == 10
        assert by_key[key].outcome == "failed" and "2 different results" in by_key[key].error
        assert cached[key] is None
    warned = [w for w in warnings_of(caplog) if key in w and "different results" in w]
    assert warned and api.batches and next(iter(api.batches)) in warned[0]

    # On the bill: both of K's batch answers (and its ordinary call), in the ledger and the
    # run's spend record alike.
    rows = rows_of(ledger_path)
    row = rows[key]
    askings = 3 if fallback == "call" else 2
    assert row["attempts"] == askings and row["batch"]
    prompt, completion = row["prompt_tokens"] // askings, row["completion_tokens"] // askings
    assert prompt > 0 and (prompt * askings, completion * askings) == (
        row["prompt_tokens"], row["completion_tokens"])
    model = MODELS[provider]
    expected = 2 * price(model, prompt, completion, batch=True)
    if fallback == "call":
        expected += price(model, prompt, completion)
    assert row["cost_usd"] == pytest.approx(expected)
    bill = SpendRecord(spend_record_path(ledger_path))
    try:
        assert bill.bill().settled_usd == pytest.approx(sum(r["cost_usd"] for r in rows.values()))
    finally:
        bill.close()

    final = last_progress_line(caplog)
    assert final.levelno == logging.WARNING
    assert "1 batch result line unusable: 1 with conflicting answers" in final.getMessage()


def test_a_line_repeated_alike_is_taken_once(tmp_path, server, provider, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    api = server.batch_apis[provider]
    rewrite_results(monkeypatch, api, provider, lambda lines: lines + lines[:3])
    answers, cached = run(tmp_path / "cache", server, provider, range(10),
                          tmp_path / "ledger.jsonl")
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert all(cached[a.key] is not None and cached[a.key].text == a.text for a in answers)
    assert paid(server, provider) == server.stats.batch_rows[provider] == 10
    assert not warnings_of(caplog)
    final = last_progress_line(caplog)
    assert final.levelno == logging.INFO and "unusable" not in final.getMessage()


def test_lines_without_an_id_or_for_no_request_and_missing_lines_are_warned_and_counted(
        tmp_path, server, provider, monkeypatch, caplog):
    """A copy of one line without its id, one with an id the batch does not hold, and one
    request's line left out: each a warning naming the batch; the request without a line is
    asked as an ordinary call (11 paid for 10), and the last progress line counts all three."""
    caplog.set_level(logging.INFO)
    api = server.batch_apis[provider]
    id_field = ID_FIELDS[provider]
    dropped = set()

    def spoil(lines):
        dropped.add(lines[1][id_field])
        without_id = {k: v for k, v in lines[0].items() if k != id_field}
        stranger = dict(lines[0], **{id_field: "not-in-this-batch"})
        return [lines[0], without_id, stranger] + lines[2:]

    rewrite_results(monkeypatch, api, provider, spoil)
    answers, cached = run(tmp_path / "cache", server, provider, range(10),
                          tmp_path / "ledger.jsonl")

    (missing,) = dropped
    assert all(a.outcome == "ok" for a in answers)
    assert all(cached[a.key] is not None and cached[a.key].text == a.text for a in answers)
    assert [a.batch for a in answers if a.key == missing] == [False]
    assert server.stats.batch_rows[provider] == 10
    assert paid(server, provider) == 11  # the request given no line, asked again
    (batch_id,) = api.batches
    warnings = warnings_of(caplog)
    assert any(batch_id in w and f"without a {id_field}" in w for w in warnings), warnings
    assert any(batch_id in w and "not-in-this-batch" in w for w in warnings), warnings
    assert any(batch_id in w and missing in w and "without a result line" in w
               for w in warnings), warnings
    final = last_progress_line(caplog)
    assert final.levelno == logging.WARNING
    assert ("3 batch result lines unusable: 1 without a request id, 1 for a request not in "
            "its batch, 1 missing (a request given no line)") in final.getMessage()
