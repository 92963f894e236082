"""The provider registry (rubriclab.llm.providers): what a model string is and what follows, and
the scripted models it finds through the entry point group rubriclab.scripted_models."""

from types import SimpleNamespace

import pytest

from rubriclab.llm import providers
from rubriclab.llm.fake import behaviours, fake_fingerprint, parse_fake_model
from rubriclab.llm.providers import API, FAKE, LOCAL, provider_for


@pytest.mark.parametrize("model, family", [
    ("anthropic/claude-opus-4-8", API), ("openai/gpt-5", API), ("gpt-4o", API),
    ("local/default", LOCAL), ("local//models/q.gguf", LOCAL),
    ("fake/hash", FAKE), ("fake/known-judge?tpr=1&tnr=1", FAKE),
])
def test_each_model_string_has_one_family(model, family):
    assert provider_for(model) is family


def test_what_follows_from_the_family():
    assert (API.priced, API.remote, API.computes_fingerprint, API.durable) == (True, True, False, True)
    assert (LOCAL.priced, LOCAL.embedded, LOCAL.computes_fingerprint, LOCAL.through_litellm) == (
        False, True, True, True)
    assert (FAKE.scripted, FAKE.durable, FAKE.through_litellm, FAKE.remote) == (
        True, False, False, False)


def test_names_with_and_without_the_prefix():
    assert LOCAL.name_of("local/default") == "default"
    assert LOCAL.model_string("default") == LOCAL.model_string("local/default") == "local/default"
    with pytest.raises(ValueError, match=r"not a local model string: 'fake/hash' \(expected "
                                         r"'local/<name-or-path>'\)"):
        LOCAL.name_of("fake/hash")


def test_the_known_truth_models_come_from_the_entry_point():
    found = providers.scripted_behaviours()
    assert "known-judge" in found and "known-transfer-judge" in found
    assert behaviours()[:5] == ("yes", "no", "hash", "unparseable", "empty")
    assert fake_fingerprint("fake/known-judge?tpr=0.9&tnr=0.9") == "known-v2"
    assert fake_fingerprint("fake/hash") == "fake-v1"
    with pytest.raises(ValueError, match="a known-truth judge needs tnr"):
        parse_fake_model("fake/known-judge?tpr=0.9")
    with pytest.raises(ValueError, match="unknown fake model 'fake/nope'; known: fake/yes"):
        parse_fake_model("fake/nope")


def test_an_entry_point_that_is_not_scripted_models_is_refused(monkeypatch):
    entry = SimpleNamespace(name="odd", value="somewhere:thing", load=lambda: object())
    monkeypatch.setattr(providers, "entry_points", lambda group: [entry])
    providers.scripted_behaviours.cache_clear()
    try:
        with pytest.raises(TypeError, match="not a rubriclab.llm.providers.ScriptedModels"):
            providers.scripted_behaviours()
    finally:
        providers.scripted_behaviours.cache_clear()


def test_a_behaviour_registered_twice_is_refused(monkeypatch):
    models = providers.ScriptedModels(("twin",), "v1", lambda *a: None, lambda *a: "")
    entries = [SimpleNamespace(name=n, value=f"{n}:models", load=lambda: models) for n in "ab"]
    monkeypatch.setattr(providers, "entry_points", lambda group: entries)
    providers.scripted_behaviours.cache_clear()
    try:
        with pytest.raises(ValueError, match="fake/twin is registered twice"):
            providers.scripted_behaviours()
    finally:
        providers.scripted_behaviours.cache_clear()
