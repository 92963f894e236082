"""Config strings that name things (model strings, labels, titles, run names) cannot carry
markup into report.html: validation refuses what no name holds, naming the key and the
character, and the captions escape what reaches them anyway (rubriclab.markup), checked in
a real `snakemake --report` loaded in headless chromium."""

import base64
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from docutils.core import publish_parts

from rubriclab.config import ConfigError, load_yaml, merged_config, validate_config
from rubriclab.config_schema import unknown_keys
from rubriclab.markup import caption_record, rst_escaped, rst_text

from .headless_chromium import Chromium, chromium_or_skip

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_yaml(REPO / "workflow" / "schemas" / "config.schema.yaml")
RAW_HTML = "gpt-4o\n\n.. raw:: html\n\n   <script>document.title='pwned'</script>"
ORDINARY_MODELS = ["openai/gpt-4o-2024-08-06", "local/qwen2.5-0.5b",
                   "anthropic/claude-3-5-sonnet-20241022", "fake/known-reviser?salt=a&add=1"]


@pytest.fixture
def embedded():
    return merged_config([REPO / "config" / "config.yaml"])


def refusal(config) -> str:
    with pytest.raises(ConfigError) as caught:
        validate_config(config, SCHEMA)
    return str(caught.value)


# --- validation ------------------------------------------------------------------------------

def test_a_judge_with_a_newline_and_a_directive_is_refused_naming_key_and_character(embedded):
    embedded["carry"]["judges"] = [embedded["models"]["judge"], RAW_HTML]
    message = refusal(embedded)
    assert "config key 'carry.judges[1]': \"gpt-4o\\n\\n.. raw:: html" in message
    assert "holds a newline (U+000A)" in message
    assert "model string" in message


@pytest.mark.parametrize("key", ["judge", "reviser", "generator", "agent"])
def test_every_model_role_refuses_markup(embedded, key):
    embedded["models"][key] = "openai/<img src=x onerror=alert(1)>"
    assert f"config key 'models.{key}': " in (message := refusal(embedded))
    assert "holds '<' (U+003C)" in message  # the first refused character


def test_a_label_with_a_control_character_is_refused(embedded):
    embedded["labels"] = {"fake/hash": "Haiku\x1b[31m stand-in"}
    message = refusal(embedded)
    assert "config key 'labels.fake/hash': 'Haiku\\x1b[31m stand-in' holds a control " \
           "character (U+001B)" in message
    assert "printable text on one line" in message


def test_a_model_string_key_with_a_newline_is_named_as_a_key(embedded):
    embedded["labels"] = {"fake/hash\n.. raw:: html": "Haiku"}
    assert ("config key 'labels' has a key 'fake/hash\\n.. raw:: html' that holds a newline "
            "(U+000A)") in refusal(embedded)


def test_a_run_name_with_markup_is_refused(embedded):
    embedded["run"] = "<b>x</b>"
    assert "config key 'run': '<b>x</b>' holds '<' (U+003C)" in refusal(embedded)


def test_a_trailing_newline_does_not_slip_past_a_pattern(embedded):
    # Python's `$` matches before a final newline: "^[...]+$" alone would accept these.
    embedded["run"] = "baseline\n"
    embedded["models"]["judge"] = "fake/hash\n"
    message = refusal(embedded)
    assert "config key 'run': 'baseline\\n' holds a newline (U+000A)" in message
    assert "config key 'models.judge': 'fake/hash\\n' holds a newline (U+000A)" in message


def test_a_stand_in_name_with_a_bidirectional_override_is_refused(embedded):
    embedded["stand_ins"] = {embedded["models"]["judge"]: "GPT\u202e5"}
    assert "holds U+202E RIGHT-TO-LEFT OVERRIDE" in refusal(embedded)


def test_a_panel_member_and_a_title_are_names_too(embedded):
    embedded["transfer"] = {"panel": ["local/default@1", "local/default@2\r"]}
    embedded["datasets"]["mine"] = {
        "title": "Mine\u2028.. raw:: html", "file": "x.csv", "checklist": "c.yaml",
        "columns": {"task": "t", "output": "o", "label": "l"},
        "evaluation": {"correct": 1, "flawed": 1}}
    message = refusal(embedded)
    assert "config key 'transfer.panel[1]': 'local/default@2\\r' holds a carriage return " \
           "(U+000D)" in message
    assert "config key 'datasets.mine.title': 'Mine\\u2028.. raw:: html' holds U+2028 LINE " \
           "SEPARATOR" in message


def test_no_config_string_may_end_the_reports_script_element(embedded):
    # A path is no name, but Snakemake's report.html keeps each job's params, unescaped, in a
    # <script> element.
    embedded["data_mirror"] = "mirror</script><script>alert(1)</script>"
    embedded["cache_dir"] = "cache\tdir"
    message = refusal(embedded)
    assert "config key 'data_mirror': 'mirror</script><script>alert(1)</script>' holds '</'" \
        in message
    assert "config key 'cache_dir': 'cache\\tdir' holds a tab (U+0009)" in message


def test_ordinary_model_strings_and_labels_are_accepted(embedded):
    judge = embedded["models"]["judge"]
    embedded["carry"]["judges"] = [judge, *ORDINARY_MODELS]
    embedded["labels"] = {model: label for model, label in zip(ORDINARY_MODELS, [
        "GPT-4o (2024-08-06)", "Qwen2.5 0.5B — local", "Claude 3.5 Sonnet: \"new\"",
        "Reviser #1 & co. [a=1]"])}
    embedded["labels"]["fake/hash"] = "نموذج\u200cمحلي 👩\u200d🔬"  # the joiners are writing
    embedded["stand_ins"] = {"openai/gpt-4o-2024-08-06": "GPT-5"}
    embedded["run"] = "reviser-b.2"
    validate_config(embedded, SCHEMA)


@pytest.mark.parametrize("files", [["config.yaml"], ["paper.yaml"], ["known_truth.yaml"],
                                   ["config.yaml", "fake.yaml"], ["config.yaml", "pilot.yaml"]])
def test_the_shipped_configs_still_validate(files):
    config = merged_config([REPO / "config" / name for name in files])
    assert unknown_keys(config, SCHEMA) == []
    validate_config(config, SCHEMA)


def _never_in_a_model_string(char: str) -> bool:
    category = unicodedata.category(char)
    return (char.isspace() or char in "<>" or category in ("Cc", "Zl", "Zp")
            or (category == "Cf" and char not in "\u200c\u200d"))


@pytest.mark.parametrize("name, refused", [
    ("model_string", _never_in_a_model_string),
    ("display_name", lambda c: not c.isspace() and _never_in_a_model_string(c)
     or unicodedata.category(c) in ("Cc", "Zl", "Zp")),
])
def test_the_schema_patterns_refuse_exactly_the_characters_their_descriptions_name(name, refused):
    pattern = SCHEMA["$defs"][name]["pattern"]
    wrong = [f"U+{code:04X}" for code in range(0x10000)
             if unicodedata.category(chr(code)) != "Cs"
             and (re.search(pattern, "a" + chr(code) + "b") is None) != refused(chr(code))]
    assert wrong == []


# --- escaping --------------------------------------------------------------------------------

HOSTILE = [
    RAW_HTML,
    "</script><script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    ".. _x: javascript:document.title='pwned'",
    "`click <javascript:document.title='pwned'>`_",
    "x`` `y <javascript:alert(1)>`_ ``",
    ":raw-html:`<b>x</b>` |sub| [1]_ *em* **strong** a@b.example",
    "1. a list",
    "\\\\\\\\",
    "========",
]


def rendered(rst: str) -> str:
    """reStructuredText as Snakemake's report renders a caption (docutils, html writer)."""
    return publish_parts(rst, writer_name="html",  # as snakemake.report does
                         settings_overrides={"report_level": 1})["body"]


def visible(html_body: str) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", html_body)).replace("\xa0", " ")


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("context", ["judged by\n{}\nwith", "judged by :literal:`{}`: per check",
                                     "models: judge {}; reviser x."])
def test_escaped_text_shows_its_characters_and_makes_no_markup(hostile, context):
    body = rendered(context.format(rst_text(hostile)))
    shown = " ".join(hostile.split())
    assert shown in " ".join(visible(body).split())
    inner = re.sub(r"</?(p|tt|span)( class=\"[^\"]*\")?>", "", body)
    assert "<" not in inner.replace("&lt;", ""), body  # no element but paragraphs and literals
    assert "system-message" not in body and "href" not in body


def test_words_keep_their_inner_underscores_dots_and_dashes():
    assert rst_text("calibration_environments") == "calibration_environments"
    assert rst_text("fake/hash?salt=a") == "fake/hash\\?salt\\=a"
    assert rst_text("gpt-4o") == "gpt-4o"
    assert rst_text("x_") == "x\\_"


def test_a_caption_record_escapes_config_strings_and_keeps_what_rubriclab_wrote():
    record = {"config_digest": "sha256:ab_", "rubriclab_version": "1.2.3",
              "outputs": ["figures/a_.png"], "models": {"judge": {"model": "m`", "label": "l*"}},
              "names": {"panels": ["T|"]}, "sizes": {"runs": 2},
              "settings": {"carry.recon.gate_evidence": "own_reports"}}
    assert caption_record(record) == {
        "config_digest": "sha256:ab_", "rubriclab_version": "1.2.3",
        "outputs": ["figures/a_.png"], "models": {"judge": {"model": "m\\`", "label": "l\\*"}},
        "names": {"panels": ["T\\|"]}, "sizes": {"runs": 2},
        "settings": {"carry.recon.gate_evidence": "own_reports"}}
    assert rst_escaped(("a:", 1, None)) == ["a\\:", 1, None]


def test_the_pipeline_escapes_the_record_its_captions_read():
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert "return caption_record(read_provenance(output.provenance))" in common


# --- a real report in a browser ---------------------------------------------------------------

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
                       "hgGAWjR9awAAAABJRU5ErkJggg==")
REPORT_BOUND_S = 600  # a bound on the runs ending (seconds each on a quiet machine), no guess

SNAKEFILE = """
import json
from rubriclab.markup import caption_record
from rubriclab.provenance import read_provenance


def recorded_provenance(wildcards, output):  # as workflow/rules/common.smk's
    return caption_record(read_provenance(output.provenance))


rule all:
    input: "figures/carry/fig2_checklist_length.png"


rule fig2:
    output:
        report("figures/carry/fig2_checklist_length.png", caption=config["caption"],
               category="carry", subcategory="Figure 2"),
        provenance="figures/carry/fig2_checklist_length.provenance.json",
    params:
        provenance=recorded_provenance,
    run:
        import base64, pathlib
        pathlib.Path(output[0]).write_bytes(base64.b64decode(config["png"]))
        pathlib.Path(output.provenance).write_text(json.dumps(config["record"]))
"""


def hostile_record() -> dict:
    """A Figure 2 provenance record as a config that bypassed validation would make it."""
    label = {"model": "fake/hash", "label": RAW_HTML}
    return {"outputs": ["figures/carry/fig2_checklist_length.png"], "rubriclab_version": "0",
            "config_digest": "sha256:" + "0" * 64,
            "models": {"judge": label,
                       "reviser": {"model": "x", "label": HOSTILE[1]},
                       "judges": [{"model": "y", "label": HOSTILE[2]},
                                  {"model": "z", "label": HOSTILE[4]}]},
            "sizes": {"runs": 2}, "names": {"panels": [HOSTILE[3], "RAGTruth"]}}


def snakemake(folder: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "--snakefile", "Snakefile", "--cores", "1",
               "--configfile", "config.json", *args]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                          timeout=REPORT_BOUND_S,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def test_a_hostile_label_in_a_real_report_runs_no_script_in_chromium(tmp_path):
    binary = chromium_or_skip()
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "config.json").write_text(json.dumps({
        "caption": str(REPO / "workflow" / "report" / "fig2_checklist_length.rst"),
        "png": base64.b64encode(PNG).decode(), "record": hostile_record()}))
    snakemake(tmp_path)
    snakemake(tmp_path, "--report", "report.html")
    page = tmp_path / "report.html"
    assert "pwned" in page.read_text()  # the labels are in it, escaped

    with Chromium(binary) as browser:
        browser.open(page)
        assert browser.evaluate("document.title") != "pwned"
        browser.evaluate("app.showResultInfo('figures/carry/fig2_checklist_length.png')")
        text = browser.evaluate(  # the caption is drawn by React, soon after
            "new Promise(done => { const wait = left => {"
            " const text = document.body.innerText;"
            " if (text.includes('generic checklists') || !left) done(text);"
            " else setTimeout(() => wait(left - 1), 100); }; wait(600); })")
        assert browser.evaluate("document.title") != "pwned"
        assert not browser.evaluate("document.querySelector('[onerror], a[href^=javascript]"
                                    "[href*=pwned]')")
        shown = " ".join(text.split())
        assert "judged by gpt-4o .. raw:: html <script>document.title='pwned'</script>" in shown
        assert "reviser </script><script>document.title='pwned'</script>" in shown
        assert ".. _x: javascript:document.title='pwned'" in shown
