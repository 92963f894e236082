"""get_format: the generic formats, the works' formats found through the entry points of
"rubriclab.response_formats", and its errors; the strict JSON reader the works build on."""

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from rubriclab.llm import formats
from rubriclab.llm.formats import (
    FORMATS, ResponseFormat, UnparseableAnswer, get_format, load_strict_json,
    registered_families,
)

SAMPLE_NAMES = ["text", "yes_no", "agent_action", "rubric_revision", "rubric_revision_7",
                "rubric_checks", "rubric_checks_4", "scale_1_10", "verdict_list_3",
                "transfer_rubric", "transfer_similarity", "transfer_restated",
                "transfer_response", "transfer_scores_5", "transfer_match_2"]


def _format(name):
    return ResponseFormat(name=name, parse=str, reask_instruction="Again.")


def test_the_model_layer_holds_only_the_generic_formats():
    assert set(FORMATS) == {"text", "yes_no"}


def test_the_three_works_are_registered():
    assert [family for family, _ in registered_families()] == ["carry", "transfer", "verify"]
    assert registered_families() is registered_families()  # loaded once


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_name_is_known_to_exactly_one_place(name):
    claims = [family for family, registrant in registered_families() if registrant(name)]
    assert len(claims) + (name in FORMATS) == 1, claims
    assert get_format(name).name == name


def test_generic_formats_are_found_without_asking_the_families(monkeypatch):
    def refuse():
        raise AssertionError("the families were asked for a generic format")
    monkeypatch.setattr(formats, "registered_families", refuse)
    assert get_format("yes_no").parse("Yes.") == "yes"
    assert get_format("text") is FORMATS["text"]


def test_an_unknown_name_is_named_with_the_families():
    with pytest.raises(ValueError, match="unknown response format 'no_such_format'") as caught:
        get_format("no_such_format")
    assert "carry, transfer, verify" in str(caught.value)
    assert "text, yes_no" in str(caught.value)


def test_no_registered_family_says_how_to_register(monkeypatch):
    monkeypatch.setattr(formats, "registered_families", lambda: ())
    with pytest.raises(ValueError, match=r"unknown response format 'verdict_list_3'.*installed"):
        get_format("verdict_list_3")


def test_two_families_claiming_one_name_is_an_error_naming_both(monkeypatch):
    families = (("first", lambda name: _format(name) if name == "shared" else None),
                ("second", lambda name: _format(name)))
    monkeypatch.setattr(formats, "registered_families", lambda: families)
    with pytest.raises(ValueError, match="'shared' is claimed by two families: 'first' and 'second'"):
        get_format("shared")
    assert get_format("only_second").name == "only_second"


def test_a_family_that_cannot_be_loaded_is_named(monkeypatch):
    broken = EntryPoint(name="broken", value="rubriclab.no_such_module:response_format",
                        group=formats.ENTRY_POINT_GROUP)
    monkeypatch.setattr(formats, "entry_points", lambda group: [broken])
    with pytest.raises(ImportError, match="registered as 'broken'"):
        registered_families.__wrapped__()


def test_a_family_seen_twice_on_the_path_is_loaded_once(monkeypatch):
    point = EntryPoint(name="verify", value="rubriclab.verify.formats:response_format",
                       group=formats.ENTRY_POINT_GROUP)
    monkeypatch.setattr(formats, "entry_points", lambda group: [point, point])
    (only,) = registered_families.__wrapped__()
    assert only[0] == "verify" and only[1]("agent_action").name == "agent_action"


def test_two_different_families_of_one_name_are_refused(monkeypatch):
    points = [EntryPoint(name="verify", value=value, group=formats.ENTRY_POINT_GROUP)
              for value in ("rubriclab.verify.formats:response_format",
                            "rubriclab.carry.formats:response_format")]
    monkeypatch.setattr(formats, "entry_points", lambda group: points)
    with pytest.raises(ValueError, match="two response format families are named 'verify'"):
        registered_families.__wrapped__()


# --- load_strict_json ------------------------------------------------------------------------

@pytest.mark.parametrize("text", ['{"a": 1}', ' \n{"a": 1}\n', '```json\n{"a": 1}\n```',
                                  '```\n{"a": 1}\n```'])
def test_strict_json_reads_one_value_or_one_fenced_value(text):
    assert load_strict_json(text, "a test") == {"a": 1}


@pytest.mark.parametrize("text, message", [
    ('{"a": 1, "a": 2}', r"duplicate key\(s\) \['a'\] in a test"),
    ('{"a": NaN}', "NaN is not a number a test may contain"),
    ('Here: {"a": 1}', "expected exactly one JSON object"),
    ('{"a": 1} {"a": 1}', "expected exactly one JSON object"),
    ('```json\n{"a": 1}\n```\n```\n{}\n```', "expected exactly one JSON object"),
])
def test_strict_json_refuses(text, message):
    with pytest.raises(UnparseableAnswer, match=message):
        load_strict_json(text, "a test")


def test_a_works_format_is_found_without_importing_scipy():
    """Every model job looks up its answer format once: the families' modules (and the
    packages above them) must not drag in scipy.stats, half a second of each job's start."""
    probe = ("import sys; from rubriclab.llm.formats import get_format; "
             "get_format('verdict_list_3'); get_format('agent_action'); "
             "get_format('transfer_scores_3'); "
             "print(sorted(m for m in ('scipy.stats', 'rubriclab.verify.calibration') "
             "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
