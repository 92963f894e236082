import pytest

from rubriclab.labels import ModelLabels, current_labels, default_label, labels_in_use


@pytest.mark.parametrize("model, label", [
    ("fake/hash?salt=haiku", "fake/hash (haiku)"),
    ("fake/hash?delay_s=0", "fake/hash (delay_s=0)"),
    ("fake/hash?salt=b&delay_s=0.5", "fake/hash (b, delay_s=0.5)"),
    ("local/default", "local/default"),
    ("local//models/qwen-0.5b.gguf", "local/qwen-0.5b.gguf"),
    ("anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5-20250929"),
    ("openrouter/qwen/qwen3-30b-a3b", "openrouter/qwen/qwen3-30b-a3b"),
    ("gpt4o", "gpt4o"),
])
def test_default_label_keeps_the_provider_and_drops_the_query_string(model, label):
    assert default_label(model) == label


def test_config_labels_win_and_responders_carry_their_sample():
    labels = ModelLabels({"fake/hash?salt=haiku": "Haiku stand-in"})
    assert labels("fake/hash?salt=haiku") == "Haiku stand-in"
    assert labels("fake/hash?salt=haiku|0") == "Haiku stand-in"
    assert labels("fake/hash?salt=haiku|2") == "Haiku stand-in #2"
    assert labels("fake/hash?salt=other") == "fake/hash (other)"
    assert labels("expert") == "Expert"


def test_two_models_under_one_label_are_refused_naming_both():
    labels = ModelLabels({"fake/hash?salt=a": "judge", "fake/hash?salt=b": "judge"})
    with pytest.raises(ValueError, match=r"'fake/hash\?salt=a' and 'fake/hash\?salt=b'"):
        labels.check_distinct(["fake/hash?salt=a", "fake/hash?salt=b"])
    # a responder's sample 0 is the model itself, not a second model
    ModelLabels().check_distinct(["local/default", "local/default|0", "local/default|1"])


def test_a_label_must_be_a_non_empty_string():
    with pytest.raises(ValueError, match="labels.fake/yes"):
        ModelLabels({"fake/yes": " "})


def test_labels_in_use_are_scoped():
    assert current_labels()("fake/yes") == "fake/yes"
    with labels_in_use(ModelLabels({"fake/yes": "Yes-man"})):
        assert current_labels()("fake/yes") == "Yes-man"
    assert current_labels()("fake/yes") == "fake/yes"
