import pytest

from rubriclab.llm import Request
from rubriclab.llm.prompt_cache import (
    cache_marked_messages, cacheable_prefixes, min_cacheable_tokens, prefix_text, qualifies,
    shared_prefixes, split_point,
)

SONNET = "anthropic/claude-sonnet-4-5-20250929"


def judge(model, item, check, system="You are a strict judge.\n"):
    return Request.chat(model, [{"role": "system", "content": system},
                                {"role": "user", "content": f"Task: {item}\nOutput: o{item}\n"
                                                            f"Check: {check}"}])


@pytest.mark.parametrize("model, minimum", [
    ("anthropic/claude-sonnet-4-5-20250929", 1024),
    ("anthropic/claude-opus-4-1-20250805", 1024),
    ("anthropic/claude-haiku-4-5-20251001", 4096),
    ("anthropic/claude-opus-4-5-20251101", 4096),
    ("anthropic/claude-sonnet-4-6", 2048),
    ("anthropic/claude-opus-5", 512),
    ("anthropic/claude-3-5-haiku-20241022", 2048),
    ("anthropic/claude-3-haiku-20240307", 2048),
    ("openai/gpt-4o-mini-2024-07-18", None),   # caches on its own
    ("gemini/gemini-2.5-flash", None),
    ("fake/hash", None),
])
def test_minimum_cacheable_length_per_model(model, minimum):
    assert min_cacheable_tokens(model) == minimum


def test_qualifies_from_the_minimum_on_and_never_for_self_caching_providers():
    assert not qualifies(SONNET, 1023) and qualifies(SONNET, 1024)
    assert not qualifies("openai/gpt-5", 100_000)


def test_checks_of_one_item_share_system_prompt_and_item_up_to_the_line_end():
    requests = [judge(SONNET, 1, "a"), judge(SONNET, 1, "b"), judge(SONNET, 2, "a"),
                judge("anthropic/other", 1, "c")]
    prefixes = shared_prefixes(requests)
    shared_item = prefix_text(requests[0], prefixes[0])
    assert shared_item == "You are a strict judge.\nTask: 1\nOutput: o1\n"
    assert prefixes[1] == prefixes[0]
    # Item 2 shares the system prompt and "Task: " with item 1; cut at the line end before it.
    assert prefix_text(requests[2], prefixes[2]) == "You are a strict judge.\n"
    assert prefixes[3] == 0  # the only request of its model


def test_identical_prompts_share_everything_and_a_longer_message_is_cut_at_a_line():
    same = [judge(SONNET, 1, "a"), judge(SONNET, 1, "a")]
    full = sum(len(m.content) for m in same[0].messages)
    assert shared_prefixes(same) == [full, full]
    longer = Request.chat(SONNET, [{"role": "user", "content": "line one\nline two"}])
    shorter = Request.chat(SONNET, [{"role": "user", "content": "line one\nline"}])
    assert shared_prefixes([longer, shorter]) == [len("line one\n")] * 2


def test_roles_must_match_for_a_message_to_be_shared():
    a = Request.chat(SONNET, [{"role": "system", "content": "same\n"},
                              {"role": "user", "content": "x"}])
    b = Request.chat(SONNET, [{"role": "user", "content": "same\n"},
                              {"role": "user", "content": "x"}])
    assert shared_prefixes([a, b]) == [0, 0]


def test_marked_messages_split_the_content_without_changing_the_request():
    request = judge(SONNET, 1, "a")
    chars = len("You are a strict judge.\nTask: 1\n")
    assert split_point(request, chars) == (1, len("Task: 1\n"))
    messages = cache_marked_messages(request, chars)
    assert messages[0] == {"role": "system", "content": "You are a strict judge.\n"}
    assert messages[1]["content"] == [
        {"type": "text", "text": "Task: 1\n", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Output: o1\nCheck: a"},
    ]
    whole_system = cache_marked_messages(request, len("You are a strict judge.\n"))
    assert whole_system[0]["content"] == [{"type": "text", "text": "You are a strict judge.\n",
                                           "cache_control": {"type": "ephemeral"}}]
    assert isinstance(whole_system[1]["content"], str)


def test_cacheable_prefixes_mark_only_long_enough_prefixes_of_marking_providers():
    long_item = "fact\n" * 300
    requests = [judge(SONNET, long_item, "a"), judge(SONNET, long_item, "b"),
                judge(SONNET, "short", "a"), judge(SONNET, "short", "b"),
                judge("openai/gpt-5", long_item, "a"), judge("openai/gpt-5", long_item, "b")]
    counted = []

    def words(model, text):
        counted.append(model)
        return len(text.split()) * 4

    marked = cacheable_prefixes(requests, count_tokens=words)
    assert marked[0] == marked[1] > 1500 and marked[2:] == [0, 0, 0, 0]
    assert "openai/gpt-5" not in counted
