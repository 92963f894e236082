"""Provenance beside each output, and the report's captions rendered from it."""

from pathlib import Path
from types import SimpleNamespace

import jinja2
import pandas as pd
import pytest

import rubriclab
from rubriclab.labels import ModelLabels
from rubriclab.provenance import config_digest, read_provenance, record_job

REPO = Path(__file__).resolve().parents[1]
CAPTIONS = sorted((REPO / "workflow" / "report").glob("*.rst"))


def test_the_record_names_models_by_label_digest_version_and_counts(tmp_path):
    config = {"models": {"judge": "fake/hash?salt=a"}, "labels": {}}
    table = pd.DataFrame({"n": [3, 7], "seeds": [2, 2], "value": [1.0, 2.0]})
    sidecar = tmp_path / "fig.provenance.json"
    record_job(sidecar, ["fig.png"], config, {"judge": "fake/hash?salt=a",
                                              "judges": ["fake/hash?salt=a", "fake/yes"]},
               ModelLabels({"fake/yes": "Yes-man"}), table, sizes={"runs": 2})
    record = read_provenance(sidecar)
    assert record["models"]["judge"] == {"model": "fake/hash?salt=a", "label": "fake/hash (a)"}
    assert [j["label"] for j in record["models"]["judges"]] == ["fake/hash (a)", "Yes-man"]
    assert record["sizes"] == {"n": 7, "seeds": 2, "runs": 2}
    assert record["rubriclab_version"] == rubriclab.__version__
    assert record["config_digest"] == config_digest(config) != config_digest(
        {**config, "models": {"judge": "fake/yes"}})


def test_a_missing_record_reads_empty_and_a_broken_one_is_named(tmp_path):
    assert read_provenance(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json"):
        read_provenance(tmp_path / "bad.json")


def test_no_caption_reads_the_config_of_the_report_command():
    assert CAPTIONS
    for caption in CAPTIONS:
        assert "snakemake.config" not in caption.read_text(), caption.name


def render(caption: Path, provenance: dict, **wildcards) -> str:
    """A caption as Snakemake's report renders it (same Jinja settings), for one output."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    snakemake = SimpleNamespace(params=SimpleNamespace(provenance=provenance),
                                wildcards=SimpleNamespace(**wildcards),
                                output=SimpleNamespace(provenance="x.provenance.json"))
    return env.from_string(caption.read_text()).render(snakemake=snakemake)


@pytest.mark.parametrize("caption, wildcards", [
    ("carry_figure.rst", {"figure": "fig1_strictness"}),
    ("carry_figure.rst", {"figure": "fig4_self_review_drift"}),
    ("carry_table.rst", {"table": "table4_recon_failing_checks"}),
    ("fig2_checklist_length.rst", {}),
    ("carry_checklist_attribution.rst", {"dataset": "travel_replies"}),
    ("transfer_figure.rst", {"tfigure": "fig4_existing_approaches"}),
    ("transfer_figure.rst", {"tfigure": "fig5_interventional_transfer"}),
    ("verify_fig2.rst", {}),
])
def test_captions_render_the_models_of_the_run_that_made_the_output(tmp_path, caption,
                                                                     wildcards):
    labels = ModelLabels({"fake/hash?salt=a": "Judge A"})
    models = {"judge": "fake/hash?salt=a", "reviser": "fake/hash?salt=r",
              "response_model": "fake/hash?salt=a", "agent": "fake/yes"}
    record = record_job(tmp_path / "p.json", ["out"], {"k": 1}, models, labels,
                        sizes={"runs": 2, "checklist_length": 10})
    text = render(REPO / "workflow" / "report" / caption, read_provenance(tmp_path / "p.json"),
                  **wildcards)
    assert "Judge A" in text and "?salt" not in text
    assert record["config_digest"][:19] in text and rubriclab.__version__ in text


def test_the_figure_2_caption_names_the_panels_the_run_recorded(tmp_path):
    record_job(tmp_path / "p.json", ["out"], {"k": 1}, {"judge": "fake/yes"}, ModelLabels({}),
               sizes={"runs": 1}, names={"panels": ["Travel desk replies", "SummEdits"]})
    text = render(REPO / "workflow" / "report" / "fig2_checklist_length.rst",
                  read_provenance(tmp_path / "p.json"))
    assert "Panels: (a) Travel desk replies, (b) SummEdits; evaluation split." in text
    # a record from before panels were named
    record_job(tmp_path / "q.json", ["out"], {"k": 1}, {"judge": "fake/yes"}, ModelLabels({}),
               sizes={"runs": 1})
    before = render(REPO / "workflow" / "report" / "fig2_checklist_length.rst",
                    read_provenance(tmp_path / "q.json"))
    assert "Panel (a) SummEdits, panel (b) RAGTruth" in before


@pytest.mark.parametrize("caption, wildcards", [
    ("carry_figure.rst", {"figure": "fig6_gated_quality"}),
    ("carry_table.rst", {"table": "table2_gate_replay"}),
])
def test_figure_6_and_table_2_say_which_gate_evidence_ran(tmp_path, caption, wildcards):
    def rendered(settings):
        record_job(tmp_path / "p.json", ["out"], {"k": 1},
                   {"judge": "fake/yes", "reviser": "fake/yes"}, ModelLabels({}),
                   settings=settings)
        return " ".join(render(REPO / "workflow" / "report" / caption,
                               read_provenance(tmp_path / "p.json"), **wildcards).split())

    own = rendered({"carry.recon.gate_evidence": "own_reports"})
    other = rendered({"carry.recon.gate_evidence": "calibration_environments"})
    assert "carry.recon.gate_evidence own_reports" in own
    assert "labelled Recon-72 reports of its rubric's scope" in own.replace(" the rubric's",
                                                                            " its rubric's")
    assert "carry.recon.gate_evidence calibration_environments" in other
    assert '"decided with calibration labels"' in other
    assert "a hand-written rubric of an evaluation environment has" in other
    assert "calibration environments" not in own and "own_reports" not in other
    # a record from before the key names no reading: the leave-one-report-out text, unnamed
    before = rendered(None)
    assert before == own.replace(" (carry.recon.gate_evidence own_reports)", "").replace(
        ": carry.recon.gate_evidence own_reports", "")
