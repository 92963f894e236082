"""A pilot's measures for the plan of a larger run (`rubriclab plan --measured-from`): read from
ledgers written as the model layer writes them (rubriclab.llm.ledger.Ledger) and answers kept
as its cache keeps them, then put in place of the plan's assumptions."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
import yaml

from rubriclab.config import config_digest
from rubriclab.llm import Ledger, LLMConfig, Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.pricing import price
from rubriclab.llm.request import Completion, Usage
from rubriclab.plan import main as plan_main
from rubriclab.plan.markdown import plan_markdown
from rubriclab.plan.measured import MIN_CALLS, PilotError, read_pilot
from rubriclab.plan.planner import THINKING_SHARES, StandIn, with_measures
from rubriclab.plan.report import BATCH_CACHE_HIT_RATES, plan_table, prompt_caching

from .test_report import MINI, SONNET, judged, thinking_row

GPT5 = "openai/gpt-5"  # no thinking budget: its cap is its room (reasoning_tokens)
ROOM = 1000


def words(_model: str, text: str) -> int:
    """A token counter the tests can add up by hand: one token a word."""
    return len(text.split())


def completion(model: str, n: int, *, text: str, completion_tokens: int, prompt_tokens: int = 100,
               latency_s: float = 1.0, batch: bool = False, read: int = 0, written: int = 0,
               **fields) -> Completion:
    request = Request.chat(model, [{"role": "user", "content": f"Question {n}?"}],
                           max_tokens=64, **fields)
    return Completion(request=request, key=f"{model}-{n}-{completion_tokens}", outcome="ok",
                      text=text, usage=Usage(prompt_tokens, completion_tokens, read, written),
                      cost_usd=0.001, latency_s=latency_s, attempts=1, batch=batch)


def write_pilot(workdir, calls: dict[str, list[Completion]], cache: SQLiteCache | None = None,
                cached_too: bool = True) -> None:
    """Each label's calls in its stage's ledger (and attempts journal, as the Ledger writes
    them both), their answers in `cache`."""
    for label, completions in calls.items():
        name = label.replace("[", "_").replace("]", "").replace("/", "_")
        ledger = Ledger(workdir / "results" / "ledger" / f"{name}.jsonl", rule=label)
        for c in completions:
            ledger.record(c)
            if cache is not None and cached_too:
                cache.put(make_answer(c.key, c.request, c.text, c.usage.prompt_tokens,
                                      c.usage.completion_tokens, c.cost_usd))
        ledger.close()


@pytest.fixture
def cache(tmp_path):
    with SQLiteCache(tmp_path / "cache" / "llm_cache.sqlite") as opened:
        yield opened


def test_answers_lengths_per_label_and_model_else_per_rule(tmp_path, cache):
    # a model that cannot think: every completion token is the answer's
    judge = [completion(MINI, i, text="Yes", completion_tokens=5 + i) for i in range(4)]
    other = [completion(MINI, 10 + i, text="No", completion_tokens=20) for i in range(3)]
    write_pilot(tmp_path, {f"judge[{MINI}]": judge, "judge[other]": other}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    assert measures.calls == 7 and measures.calls_by_model == {MINI: 7}
    same, source = measures.answer_length(f"judge[{MINI}]", MINI)
    assert source == "pilot" and same.calls == 4
    assert same.completion_tokens == same.answer_tokens == (5 + 6 + 7 + 8) / 4
    # a label the pilot did not make: its rule's calls, every label of it
    stem, source = measures.answer_length("judge[third]", MINI)
    assert source == "pilot (judge)" and stem.calls == 7
    assert stem.answer_tokens == pytest.approx((5 + 6 + 7 + 8 + 3 * 20) / 7)
    assert measures.answer_length("respond[x]", MINI) is None  # no such rule: assumed
    assert measures.answer_length(f"judge[{MINI}]", SONNET) is None  # nor such model


def test_a_figure_needs_min_calls(tmp_path, cache):
    few = [completion(MINI, i, text="Yes", completion_tokens=5) for i in range(MIN_CALLS - 1)]
    write_pilot(tmp_path, {"judge[a]": few}, cache)
    assert read_pilot(tmp_path, cache=cache, count_tokens=words).answer_length(
        "judge[a]", MINI) is None


def test_thinking_is_the_completion_less_the_visible_answer_over_the_cap(tmp_path, cache):
    # 4 visible tokens each; 104, 204, 304 completion tokens: 100 + 200 + 300 thinking
    thought = [completion(GPT5, i, text="The answer is yes", completion_tokens=4 + 100 * i,
                          reasoning_tokens=ROOM) for i in (1, 2, 3)]
    write_pilot(tmp_path, {"judge[a]": thought}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    assert measures.thinking[GPT5].thinking_tokens == 600
    assert measures.thinking[GPT5].cap_tokens == 3 * ROOM
    assert measures.thinking_share(GPT5) == pytest.approx(0.2)
    length, _ = measures.answer_length("judge[a]", GPT5)
    assert length.answer_tokens == 4 and length.completion_tokens == pytest.approx(204)


def test_without_the_answers_text_thinking_is_not_measured(tmp_path, cache):
    """The ledger records no reasoning tokens: with no answer text, completion tokens stand
    for the answer only where the request cannot think."""
    thought = [completion(GPT5, i, text="Yes", completion_tokens=300, reasoning_tokens=ROOM)
               for i in range(3)]
    write_pilot(tmp_path, {"judge[a]": thought}, cache, cached_too=False)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    assert measures.thinking_share(GPT5) is None
    length, _ = measures.answer_length("judge[a]", GPT5)
    assert length.answer_tokens is None and length.completion_tokens == 300
    assert length.answer_tokens_for(may_think=True) is None
    assert length.answer_tokens_for(may_think=False) == 300


def test_free_text_answers_fill_a_measured_share_of_their_budget(tmp_path, cache):
    """max_tokens 64: answers of 4, 8 and 12 words fill 12.5% of 3 x 64 together."""
    responses = [completion(MINI, i, text=" ".join(["word"] * 4 * i), completion_tokens=4 * i,
                            response_format="text") for i in (1, 2, 3)]
    verdicts = [completion(MINI, 10 + i, text="Yes", completion_tokens=1,
                           response_format="yes_no") for i in range(3)]
    write_pilot(tmp_path, {"respond[a]": responses, "judge[a]": verdicts}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    assert measures.free_text[MINI].calls == 3  # verdicts are not free text
    assert measures.free_text_shares() == {MINI: pytest.approx(0.125)}
    # the stand-in answers that later prompts quote are as long (0.75 words a token), for
    # the model measured; another model's at the assumed share
    ask = Request.chat(MINI, [{"role": "user", "content": "Respond."}], max_tokens=400)
    other = replace(ask, model=SONNET)

    def filler_words(stand_in, request):
        return len(stand_in.answer(request).split()) - len(StandIn().answer(request).split())

    assert filler_words(StandIn(0.25), ask) == int(400 * 0.25 * 0.75)
    assert filler_words(StandIn(0.25, measures.free_text_shares()), ask) == \
        int(400 * 0.125 * 0.75)
    assert filler_words(StandIn(0.25, measures.free_text_shares()), other) == \
        int(400 * 0.25 * 0.75)
    # planning a rehearsal (no share): the rehearsal's own answers, whatever was measured
    assert filler_words(StandIn(None, measures.free_text_shares()), ask) == 0


def test_batch_prompt_cache_hits_are_read_over_read_and_written(tmp_path, cache):
    batched = ([completion(SONNET, i, text="Yes", completion_tokens=1, batch=True, read=1500)
                for i in range(3)]
               + [completion(SONNET, 3, text="Yes", completion_tokens=1, batch=True,
                             written=1500),
                  completion(SONNET, 4, text="Yes", completion_tokens=1, batch=True)])
    # outside a batch the hits do not count
    calls = [completion(SONNET, 10 + i, text="Yes", completion_tokens=1, written=1500)
             for i in range(3)]
    write_pilot(tmp_path, {"judge[a]": batched + calls}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    hits = measures.batch_cache[SONNET]
    assert (hits.calls, hits.read_tokens, hits.write_tokens) == (4, 4500, 1500)
    assert measures.batch_cache_hit_rate(SONNET) == pytest.approx(0.75)
    assert measures.batch_cache_hit_rate(MINI) is None


def test_latency_is_fitted_to_the_calls_outside_batches(tmp_path, cache):
    # 0.5 s a request, 1,000 prompt tokens a second, 40 completion tokens a second
    calls = [completion(MINI, i, text="Yes", prompt_tokens=200 + 50 * i,
                        completion_tokens=1 + 7 * (i % 4),
                        latency_s=0.5 + (200 + 50 * i) / 1000 + (1 + 7 * (i % 4)) / 40)
             for i in range(12)]
    waited = [completion(MINI, 100 + i, text="Yes", completion_tokens=1, latency_s=3600.0,
                         batch=True) for i in range(5)]
    write_pilot(tmp_path, {"judge[a]": calls + waited}, cache)
    speed = read_pilot(tmp_path, cache=cache, count_tokens=words).latency[MINI]
    assert speed.calls == 12
    assert (speed.per_request_s, speed.per_prompt_token_s, speed.per_completion_token_s) \
        == pytest.approx((0.5, 1 / 1000, 1 / 40), rel=1e-4)


def test_only_calls_that_reached_a_model_count_each_once(tmp_path, cache):
    made = [completion(MINI, i, text="Yes", completion_tokens=5) for i in range(3)]
    hits = [replace(c, key=f"hit{i}", cached=True, attempts=0,
                    usage=Usage(100, 500)) for i, c in enumerate(made)]
    failed = [replace(c, key=f"failed{i}", outcome="failed", usage=Usage(100, 500))
              for i, c in enumerate(made)]
    write_pilot(tmp_path, {"judge[a]": made + hits + failed}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    # the ledger and its attempts journal hold each call; it counts once
    assert measures.calls == 3 and measures.ledger_files == 2
    assert measures.answer_length("judge[a]", MINI)[0].completion_tokens == 5


def test_a_missing_or_empty_pilot_is_an_error_naming_the_folder(tmp_path):
    folder = tmp_path / "pilot" / "results" / "ledger"
    with pytest.raises(PilotError, match=f"{folder} does not exist"):
        read_pilot(tmp_path / "pilot")
    folder.mkdir(parents=True)
    with pytest.raises(PilotError, match=f"{folder} holds no ledger rows"):
        read_pilot(tmp_path / "pilot")
    write_pilot(tmp_path / "pilot", {"judge[a]": [replace(
        completion(MINI, 0, text="Yes", completion_tokens=1), cached=True, attempts=0)]})
    with pytest.raises(PilotError, match=f"nothing to measure in {folder}"):
        read_pilot(tmp_path / "pilot")


def test_a_pilots_unreadable_config_is_an_error_naming_the_file(tmp_path, cache):
    write_pilot(tmp_path, {"judge[a]": [completion(MINI, i, text="Yes", completion_tokens=5)
                                        for i in range(3)]}, cache)
    path = tmp_path / "results" / "effective_config.yaml"
    path.write_text("llm: {budget_usd: 10\ncache_dir: [\n")
    with pytest.raises(PilotError, match=f"{re.escape(str(path))} cannot be read"):
        read_pilot(tmp_path, cache=cache, count_tokens=words)
    path.write_text("- a list\n- of settings\n")
    with pytest.raises(PilotError, match=f"{re.escape(str(path))} is not a mapping"):
        read_pilot(tmp_path, cache=cache, count_tokens=words)


def test_rubriclab_plan_refuses_a_pilot_without_ledgers(tmp_path, capsys):
    missing = tmp_path / "runs" / "pilot"
    assert plan_main(["--configfile", "config/fake.yaml", "--measured-from", str(missing)]) == 2
    assert f"{missing / 'results' / 'ledger'} does not exist" in capsys.readouterr().err


def test_the_pilots_own_cache_and_config_digest_are_read(tmp_path, monkeypatch):
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    config = {"cache_dir": str(tmp_path / "cache"), "llm": {"budget_usd": 10}}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "effective_config.yaml").write_text(yaml.safe_dump(config))
    text = "The answer is yes, for three reasons"
    thought = [completion(GPT5, i, text=text, completion_tokens=500, reasoning_tokens=ROOM)
               for i in range(3)]
    with SQLiteCache(tmp_path / "cache" / "llm_cache.sqlite") as cache:
        write_pilot(tmp_path, {"judge[a]": thought}, cache)
    measures = read_pilot(tmp_path)  # litellm's counter, the pilot's cache
    from rubriclab.llm.tokens import text_tokens

    assert measures.digest == config_digest(config)
    assert str(tmp_path / "cache") in measures.answers_from
    assert measures.thinking_share(GPT5) == pytest.approx((500 - text_tokens(GPT5, text))
                                                          / ROOM)


# The plan with the measures in place of its assumptions.

def pilot(tmp_path, cache, calls):
    write_pilot(tmp_path, calls, cache)
    return read_pilot(tmp_path, cache=cache, count_tokens=words)


def test_a_measured_answer_length_changes_the_bill_by_exactly_its_tokens(tmp_path, cache):
    measures = pilot(tmp_path, cache, {f"judge[{MINI}]": [
        completion(MINI, i, text="Yes", completion_tokens=7) for i in range(3)]})
    rows = [judged(MINI, 20), replace(judged(MINI, 20), rule="respond", label="respond[x]")]
    assumed = plan_table(rows, LLMConfig()).set_index("label")
    measured_rows = with_measures(rows, measures)
    measured = plan_table(measured_rows, LLMConfig(), measured=measures).set_index("label")
    judge = f"judge[{MINI}]"
    # 20 answers of 7 tokens, where the stand-ins gave 1 each
    assert measured.loc[judge, "completion_tokens_to_pay"] == 20 * 7
    assert assumed.loc[judge, "completion_tokens_to_pay"] == 20
    assert measured.loc[judge, "cost_usd"] - assumed.loc[judge, "cost_usd"] == pytest.approx(
        price(MINI, 0, 20 * 7) - price(MINI, 0, 20))
    assert measured.loc[judge, "answers"] == "pilot"
    # the pilot made no respond row: as planned, and said so
    assert measured.loc["respond[x]", "answers"] == "stand-in"
    assert measured.loc["respond[x]", "cost_usd"] == assumed.loc["respond[x]", "cost_usd"]
    assert set(assumed["answers"]) == {"stand-in"}


def test_a_measured_thinking_share_replaces_the_expected_one(tmp_path, cache):
    measures = pilot(tmp_path, cache, {"judge[other]": [
        completion(GPT5, i, text="Yes", completion_tokens=1 + 400, reasoning_tokens=ROOM)
        for i in range(3)]})
    assert measures.thinking_share(GPT5) == pytest.approx(0.4)
    row = thinking_row(GPT5, 10, ROOM)  # 1 answer token a request, cap 1,000 each
    (planned,) = with_measures([row], measures)
    # its answers from the pilot's rule (1 token each), its thinking at 40% of the cap
    assert planned.answers == "pilot (judge)"
    assert planned.completion_tokens_to_pay == 10 * 1 + round(0.4 * 10 * ROOM)
    assert planned.thinking_shares() == {"low": THINKING_SHARES["low"], "expected": 0.4,
                                         "high": THINKING_SHARES["high"]}
    (measured,) = plan_table([planned], LLMConfig()).itertuples()
    (assumed,) = plan_table([row], LLMConfig()).itertuples()
    assert measured.thinking_tokens_to_pay == 4000 and assumed.thinking_tokens_to_pay == 2500
    assert measured.cost_usd == pytest.approx(price(GPT5, row.prompt_tokens_to_pay, 10 + 4000))
    # the low and high bills keep their shares: a short thought, every cap
    assert measured.cost_high_usd == pytest.approx(assumed.cost_high_usd)
    assert measured.cost_low_usd == pytest.approx(assumed.cost_low_usd)


def test_a_measured_batch_hit_rate_prices_the_anthropic_batch(tmp_path, cache):
    measures = pilot(tmp_path, cache, {"judge[other]": [
        completion(SONNET, i, text="Yes", completion_tokens=1, batch=True,
                   read=900 if i else 0, written=0 if i else 900) for i in range(5)]})
    assert measures.batch_cache_hit_rate(SONNET) == pytest.approx(0.8)
    row = judged(SONNET, 20)
    caching = prompt_caching(row)
    llm = LLMConfig.from_dict({"per_model": {SONNET: {"batch": True}}})
    (batched,) = plan_table([row], llm, measured=measures).itertuples()

    def batch_price(hits):
        return price(SONNET, row.prompt_tokens_to_pay, row.completion_tokens_to_pay, batch=True,
                     cache_read_tokens=round(hits * caching.read_tokens),
                     cache_write_tokens=caching.write_tokens
                     + round((1 - hits) * caching.read_tokens))

    assert batched.batch_cost_usd == pytest.approx(batch_price(0.8))
    assert batched.batch_cost_low_usd == pytest.approx(batch_price(BATCH_CACHE_HIT_RATES["low"]))
    (assumed,) = plan_table([row], llm).itertuples()
    assert assumed.batch_cost_usd == pytest.approx(batch_price(BATCH_CACHE_HIT_RATES["expected"]))


def test_a_measured_latency_gives_the_hours_and_the_plan_says_what_the_pilot_measured(
        tmp_path, cache):
    config = {"llm": {}}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "effective_config.yaml").write_text(yaml.safe_dump(config))
    calls = [completion(MINI, i, text="Yes", prompt_tokens=200 + 50 * i,
                        completion_tokens=1 + i % 3,
                        latency_s=2.0 + (200 + 50 * i) / 1000 + (1 + i % 3) / 40)
             for i in range(10)]
    write_pilot(tmp_path, {f"judge[{MINI}]": calls}, cache)
    measures = read_pilot(tmp_path, cache=cache, count_tokens=words)
    speed = measures.latency[MINI]
    rows = with_measures([judged(MINI, 600), judged(SONNET, 10)], measures)
    llm = LLMConfig.from_dict({"defaults": {"concurrency": 4}})
    table = plan_table(rows, llm, dict(measures.latency), measured=measures)
    mini = table.set_index("model").loc[MINI]
    assert mini["hours"] == pytest.approx(speed.seconds(
        600, mini["prompt_tokens_to_pay"], mini["completion_tokens_to_pay"]) / 4 / 3600)
    markdown = plan_markdown(table, config_name="paper.yaml", digest="d", free_text_share=0.25,
                             measured=measures)
    top = markdown.split("Config digest `d`")[0]
    assert f"`{tmp_path}`" in top and f"config digest `{config_digest(config)}`" in top
    assert "10 calls that reached a model, of 1 model," in top
    assert "answers' lengths: 1 of 2 rows to pay" in top
    assert f"`{MINI}` 2.00 s a request" in top
    assert f"the models the pilot did not call (`{SONNET}`)" in top
    assert "expected thinking, as a share of each request's cap (the low and high totals " \
        "keep theirs): none measured" in top
    assert f"| judge | {MINI} | `{MINI}` | exact; answers: pilot |" in markdown
    assert f"| judge | {SONNET} | `{SONNET}` | exact |" in markdown
    assert not math.isnan(mini["cost_usd"])
