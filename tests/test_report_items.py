"""report.html: every item in a category and subcategory of its own (none under "Other"), and in
an ablation the items copied from the base run marked as such."""

import asyncio
import os

import pandas as pd
import pytest

from rubriclab.report_items import made_by, paper_item, replication_landing
from rubriclab.reuse import COPIED_RECORD, record_copies

from tests.pipeline.test_workflow import REPO


@pytest.mark.parametrize("name, item", [
    ("fig1_strictness", "Figure 1"), ("fig5b_supplement", "Figure 5"),
    ("figA1_matching_framings", "Figure A.1"), ("table2_gate_replay", "Table 2"),
    ("table2_supplement", "Table 2"), ("tableA9_edit_sizes", "Table A.9"),
])
def test_a_paper_item_is_named_from_its_output(name, item):
    assert paper_item(name) == item


def test_an_output_named_after_no_paper_item_is_refused():
    with pytest.raises(ValueError, match="table_gate_agreement"):
        paper_item("table_gate_agreement")


def test_an_ablations_item_says_whether_it_is_the_base_runs(tmp_path):
    for name in ("figures/a.png", "figures/b.png"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    copied = tmp_path / "figures/a.png"
    record_copies(tmp_path, "baseline", {"figures/a.png": copied.stat().st_mtime_ns})
    assert (tmp_path / COPIED_RECORD).is_file()
    assert made_by("figures/a.png", None, tmp_path) is None  # not an ablation: no label
    assert made_by("figures/a.png", "baseline", tmp_path) == {
        "item": "a.png", "made by": "copied from base run baseline"}
    assert made_by("figures/b.png", "baseline", tmp_path)["made by"] == "this run"
    # Made again in the ablation (a forced rerun): its own now.
    later = copied.stat().st_mtime_ns + 10**9
    os.utime(copied, ns=(later, later))
    assert made_by("figures/a.png", "baseline", tmp_path)["made by"] == "this run"
    # A later copy adds to the record.
    record_copies(tmp_path, "baseline", {"figures/b.png": (tmp_path / "figures/b.png")
                                         .stat().st_mtime_ns})
    assert made_by("figures/b.png", "baseline", tmp_path)["made by"].startswith("copied")


def test_every_report_item_of_the_smoke_test_has_a_category_and_subcategory(tmp_path,
                                                                             monkeypatch):
    """Evaluated by Snakemake's own report code on the whole smoke-test DAG (nothing run)."""
    from snakemake.report import expand_report_argument

    from rubriclab.plan.dag import all_jobs_in_order, built_dag

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    configs = [REPO / "config" / "config.yaml", REPO / "config" / "fake.yaml"]
    groups = []
    with built_dag(REPO / "Snakefile", configs, {"data_mirror": str(tmp_path)}) as workflow:
        for job in all_jobs_in_order(workflow.dag):
            for f in job.output:
                flagged = f.flags.get("report") if hasattr(f, "flags") else None
                if not flagged:
                    continue
                names = [asyncio.run(expand_report_argument(value, job.wildcards, job))
                         for value in (flagged.category, flagged.subcategory)]
                groups.append((str(f), *names))
    assert len(groups) >= 29
    unnamed = [g for g in groups if None in g[1:] or "Other" in g[1:]]
    assert not unnamed
    subcategories = {(c, s) for _, c, s in groups}
    assert {("carry", "Figure 3"), ("carry", "Table 2"), ("transfer", "Table A.4"),
            ("verify", "Figure 2")} <= subcategories


def test_the_landing_page_counts_each_works_verdicts_and_leaves_out_what_is_not_tested(tmp_path):
    rows = [("carry", "holds", "qualitative", "figures/carry/fig2_checklist_length.csv"),
            ("carry", "holds", "quantitative", ""),
            ("carry", "does not hold", "quantitative", "figures/carry/fig6_gated_quality.csv"),
            ("carry", "holds", "arithmetic", ""),
            ("verify", "not computed", "quantitative", ""),
            ("verify", "cannot tell", "quantitative", "results/verify/x.csv")]
    csv = tmp_path / "replication.csv"
    pd.DataFrame([{"work": w, "verdict": v, "kind": k, "outputs": o, "where": "Fig. 2",
                   "sentence": "a claim", "seed": "1", "run": "2", "as_measured": "",
                   "interval": ""} for w, v, k, o in rows]).to_csv(csv, index=False)
    page = replication_landing(csv)
    assert page["claims"] == 4 and page["counts"] == "2 holds, 1 does not hold, 1 cannot tell"
    assert page["work_counts"] == {"carry": "3 claims: 2 holds, 1 does not hold",
                                   "verify": "1 claim: 1 cannot tell"}
    assert [c["items"] for c in page["works"]["carry"]] == [
        ["fig2_checklist_length.png", "fig2_checklist_length.md"], [],
        ["fig6_gated_quality.png", "fig6_gated_quality.md"]]
    assert page["works"]["verify"][0]["files"] == ["results/verify/x.csv"]
    assert replication_landing(tmp_path / "absent.csv") == {}
