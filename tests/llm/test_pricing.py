import pytest

from rubriclab.llm import LLMClient, LLMConfig, Request
from rubriclab.llm.pricing import is_priced, price, thinking_cap
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

SONNET = "anthropic/claude-sonnet-4-5-20250929"
MINI = "openai/gpt-4o-mini-2024-07-18"


def test_standard_batch_and_cached_prices_follow_the_price_map():
    # Sonnet 4.5 in litellm's map: $3 / $15 per million, batches $1.5 / $7.5, cache read $0.3,
    # cache write $3.75 (batch: $0.15 and $1.875).
    assert price(SONNET, 1_000_000, 1_000_000) == pytest.approx(18.0)
    assert price(SONNET, 1_000_000, 1_000_000, batch=True) == pytest.approx(9.0)
    cached = price(SONNET, 10_000, 100, cache_read_tokens=6_000, cache_write_tokens=2_000)
    assert cached == pytest.approx(2_000 * 3e-6 + 6_000 * 0.3e-6 + 2_000 * 3.75e-6 + 100 * 15e-6)
    batch_cached = price(SONNET, 10_000, 100, batch=True, cache_read_tokens=6_000,
                         cache_write_tokens=2_000)
    assert batch_cached == pytest.approx(cached / 2)


def test_openai_cached_tokens_are_priced_at_the_cache_rate():
    assert price(MINI, 10_000, 100, cache_read_tokens=6_000) == pytest.approx(
        4_000 * 0.15e-6 + 6_000 * 0.075e-6 + 100 * 0.6e-6)


def test_unknown_price_is_none_never_zero_and_local_models_are_free():
    assert price("anthropic/claude-opus-4-1-20250805", 1000, 10) is None  # in the map, unpriced
    assert price("openrouter/qwen/qwq-32b", 1000, 10) is None              # not in the map
    assert not is_priced("openrouter/qwen/qwq-32b")
    assert price("local/default", 1000, 10) == 0.0 and price("fake/hash", 5, 1) == 0.0


def test_batch_price_without_a_batch_rate_is_half_for_openai_and_anthropic_only():
    assert is_priced("deepseek/deepseek-chat") and not is_priced("deepseek/deepseek-chat",
                                                                 batch=True)
    assert price("deepseek/deepseek-chat", 1000, 10, batch=True) is None


def test_inconsistent_token_counts_are_refused():
    with pytest.raises(ValueError, match="more than the 100 prompt tokens"):
        price(SONNET, 100, 1, cache_read_tokens=80, cache_write_tokens=30)


def test_openai_model_without_a_batch_rate_in_the_map_is_half_price_as_a_batch():
    model = "openai/ft:gpt-4-0613"  # $30 / $60 per million, no *_batches rate in the map
    assert price(model, 1_000_000, 1_000_000) == pytest.approx(90.0)
    assert price(model, 1_000_000, 1_000_000, batch=True) == pytest.approx(45.0)


# Configured prices (llm.per_model.<model>.price), in US dollars per million tokens.

OPUS = "anthropic/claude-opus-4-1-20250805"
OPUS_PRICE = {"input": 15, "output": 75, "cache_write": 18.75, "cache_read": 1.5}


def configured(model, values):
    return LLMConfig.from_dict({"per_model": {model: {"price": values}}}).settings_for(model).price


def test_a_configured_price_prices_a_model_the_map_does_not():
    opus = configured(OPUS, OPUS_PRICE)
    assert price(OPUS, 1000, 10) is None  # the map alone
    assert price(OPUS, 1_000_000, 1_000_000, configured=opus) == pytest.approx(90.0)
    assert is_priced(OPUS, configured=opus) and is_priced(OPUS, batch=True, configured=opus)
    # anthropic: a batch is half, cache rates included (Anthropic's discounts stack)
    assert price(OPUS, 1_000_000, 1_000_000, batch=True, configured=opus) == pytest.approx(45.0)
    cached = price(OPUS, 10_000, 100, cache_read_tokens=6_000, cache_write_tokens=2_000,
                   configured=opus)
    assert cached == pytest.approx(1e-6 * (2_000 * 15 + 6_000 * 1.5 + 2_000 * 18.75 + 100 * 75))
    assert price(OPUS, 10_000, 100, batch=True, cache_read_tokens=6_000,
                 cache_write_tokens=2_000, configured=opus) == pytest.approx(cached / 2)


def test_a_configured_price_overrides_the_maps():
    mine = configured(MINI, {"input": 1.0, "output": 2.0})
    assert price(MINI, 1_000_000, 1_000_000, configured=mine) == pytest.approx(3.0)
    assert price(MINI, 1_000_000, 1_000_000) == pytest.approx(0.75)  # the map's


def test_batch_rates_not_configured_are_half_only_where_documented():
    grok = configured("xai/grok-4", {"input": 3, "output": 15, "cache_read": 0.75})
    assert price("xai/grok-4", 1000, 10, batch=True, configured=grok) is None
    assert not is_priced("xai/grok-4", batch=True, configured=grok)
    given = configured("xai/grok-4", {"input": 3, "output": 15, "batch_input": 2,
                                      "batch_output": 10})
    assert price("xai/grok-4", 1_000_000, 1_000_000, batch=True,
                 configured=given) == pytest.approx(12.0)
    flash = configured("gemini/gemini-2.5-flash", {"input": 0.3, "output": 2.5})
    assert price("gemini/gemini-2.5-flash", 1_000_000, 1_000_000, batch=True,
                 configured=flash) == pytest.approx(1.4)


def test_cache_rates_not_configured_are_the_input_rate_or_unknown():
    grok = configured("xai/grok-4", {"input": 3, "output": 15})
    # a cached read at the input rate: never less than the provider bills
    assert price("xai/grok-4", 10_000, 0, cache_read_tokens=4_000,
                 configured=grok) == pytest.approx(10_000 * 3e-6)
    # a write to the cache may cost more than input (Anthropic 1.25x): unknown
    assert price("xai/grok-4", 10_000, 0, cache_write_tokens=4_000, configured=grok) is None


@pytest.mark.parametrize("values, message", [
    ({"input": 15}, "output must be given"),
    ({"input": 15, "output": -1}, r"price\.output: a price is a number >= 0"),
    ({"input": 15, "output": "75"}, r"price\.output: a price is a number >= 0"),
    ({"input": 15, "output": 75, "cache_reads": 1}, r"unknown price key\(s\) \['cache_reads'\]"),
    (15, "a price is a mapping"),
])
def test_a_bad_price_is_refused_naming_the_model_and_key(values, message):
    with pytest.raises(ValueError, match=message) as raised:
        LLMConfig.from_dict({"per_model": {OPUS: {"price": values}}})
    assert OPUS in str(raised.value)


def test_a_price_is_set_per_model_only():
    with pytest.raises(ValueError, match="llm.defaults: price is set per model"):
        LLMConfig.from_dict({"defaults": {"price": {"input": 1, "output": 1}}})


def test_ordinary_calls_are_billed_at_the_configured_price(tmp_path, monkeypatch):
    """Through litellm's real Anthropic path to the loopback server: the ledger's cost is the
    configured price of the tokens the provider reported."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "placeholder")
    with RehearsalServer(faults=FaultMix.none()) as server:
        config = LLMConfig.from_dict({"per_model": {OPUS: {
            "api_base": server.url, "timeout_s": 5.0, "backoff_s": 0.0, "prompt_cache": False,
            "price": OPUS_PRICE}}}, cache_dir=tmp_path / "cache")
        with LLMClient(config) as client:
            (answer,) = client.run([Request.chat(
                OPUS, [{"role": "user", "content": "Is the sky blue? Answer with exactly one "
                                                   "word: Yes or No."}],
                max_tokens=4, response_format="yes_no", temperature=1.0)])
    assert answer.outcome == "ok" and answer.usage.prompt_tokens > 0
    assert answer.cost_usd == pytest.approx(
        1e-6 * (15 * answer.usage.prompt_tokens + 75 * answer.usage.completion_tokens))


def test_batch_answers_are_billed_at_the_configured_batch_price(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    with RehearsalServer(faults=FaultMix.none()) as server:
        config = LLMConfig.from_dict({"per_model": {MINI: {
            "api_base": server.url + "/v1", "batch": True, "batch_poll_s": 0.05,
            "batch_max_wait_s": 30, "timeout_s": 5, "backoff_s": 0.01,
            "price": {"input": 10, "output": 20, "batch_input": 4, "batch_output": 8}}}},
            cache_dir=tmp_path / "cache")
        with LLMClient(config) as client:
            (answer,) = client.run([Request.chat(
                MINI, [{"role": "user", "content": "Is 2 even? Answer with exactly one word: "
                                                   "Yes or No."}],
                max_tokens=4, response_format="yes_no")])
    assert answer.batch and answer.outcome == "ok"
    assert answer.cost_usd == pytest.approx(
        1e-6 * (4 * answer.usage.prompt_tokens + 8 * answer.usage.completion_tokens))


# How much a request may think (thinking_cap), per provider and effort.

def asked(model, effort=None, reasoning_tokens=0, max_tokens=8):
    return Request.chat(model, [{"role": "user", "content": "q"}], max_tokens=max_tokens,
                        reasoning_effort=effort, reasoning_tokens=reasoning_tokens)


@pytest.mark.parametrize("effort, cap", [("minimal", 1), ("low", 1024), ("medium", 2048),
                                         ("high", 4096), (None, 4096)])
def test_gemini_2_5_flash_thinks_at_most_its_efforts_budget(effort, cap):
    # no effort: Gemini 2.5 thinks dynamically, bounded by the room it is given
    assert thinking_cap(asked("gemini/gemini-2.5-flash", effort, reasoning_tokens=4096)) == cap


@pytest.mark.parametrize("effort, cap", [(None, 0), ("minimal", 1024), ("low", 1024),
                                         ("medium", 2048), ("high", 4096)])
def test_claude_thinks_only_when_given_an_effort(effort, cap):
    assert thinking_cap(asked(SONNET, effort, reasoning_tokens=8192)) == cap


@pytest.mark.parametrize("model", ["anthropic/claude-opus-5", "anthropic/claude-sonnet-5"])
def test_claude_5_thinks_by_default_within_its_room(model):
    assert thinking_cap(asked(model, reasoning_tokens=2048)) == 2048
    assert thinking_cap(asked(model, "low", reasoning_tokens=2048)) == 1024
    assert thinking_cap(asked("anthropic/claude-sonnet-4-6", reasoning_tokens=2048)) == 0


def test_models_without_a_budget_think_at_most_their_room_and_within_the_whole_budget():
    assert thinking_cap(asked("openai/gpt-5", "medium", reasoning_tokens=8192)) == 8192
    assert thinking_cap(asked("xai/grok-4", reasoning_tokens=4096)) == 4096
    assert thinking_cap(asked("openrouter/qwen/qwq-32b", reasoning_tokens=8192)) == 8192
    assert thinking_cap(asked("openai/gpt-4o-mini-2024-07-18")) == 0
    assert thinking_cap(asked("deepseek/deepseek-chat", reasoning_tokens=2048)) == 0
    assert thinking_cap(asked("deepseek/deepseek-chat", "low", reasoning_tokens=2048)) == 2048
    # a thinking budget larger than all the room the request has is bounded by that room
    assert thinking_cap(asked(SONNET, "high", reasoning_tokens=0, max_tokens=500)) == 500


GROK = "xai/grok-4.20-0309-non-reasoning"


def test_grok_4_20_non_reasoning_is_in_the_price_map_and_does_not_reason():
    """paper.yaml's Grok, Table A.3's "Grok 4.20 (non-reasoning)": litellm's map prices it at
    $1.25 / $2.50 per million, cached input $0.20 (up to 200k prompt tokens), and marks it as not
    reasoning, unlike its reasoning twin."""
    from rubriclab.llm.litellm_import import import_litellm

    assert price(GROK, 100_000, 10_000) == pytest.approx(100_000 * 1.25e-6 + 10_000 * 2.5e-6)
    assert price(GROK, 100_000, 0, cache_read_tokens=40_000) == pytest.approx(
        60_000 * 1.25e-6 + 40_000 * 0.2e-6)
    litellm = import_litellm()
    assert not litellm.supports_reasoning(model=GROK)
    assert litellm.supports_reasoning(model="xai/grok-4.20-0309-reasoning")
    assert thinking_cap(asked(GROK)) == 0


def test_paper_yaml_prices_exactly_the_models_the_map_lacks(repo):
    """Every model of config/paper.yaml has a price, and a configured one only where litellm's
    map has none (paper.yaml: "for the models litellm's price map lacks")."""
    from rubriclab.config import load_yaml
    from rubriclab.rehearsal.run import model_strings

    paper = load_yaml(repo / "config" / "paper.yaml")
    llm = LLMConfig.from_dict(paper["llm"])
    for model in model_strings(paper):
        configured = llm.settings_for(model).price
        assert is_priced(model, configured=configured), model
        assert (configured is not None) == (not is_priced(model)), model
