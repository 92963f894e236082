import pytest

from rubriclab.llm.pricing import is_priced, price

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
