"""The Snakemake pipeline end to end, with a deterministic fake judge and the shared data copies."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rubriclab.config import merge_config
from rubriclab.files import model_slug
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.fake import call_digest

from ..shared_runs import SharedRun
from ..snakemake_run import (DRY_RUN_BOUND_S, RUN_BOUND_S, kill_group,
                             run_snakemake, start)

pytestmark = pytest.mark.pipeline

REPO = Path(__file__).resolve().parents[2]
SECOND_JUDGE = "fake/hash?delay_s=0"


def fake_models(judge: str, **llm) -> dict:
    """Every model `judge`, as .test/config/fake.yaml has fake/hash, with SECOND_JUDGE."""
    return {
        "models": {"judge": judge, "agent": judge, "generator": judge, "reviser": judge},
        # The fake models stand in for paid ones here (resume, reuse, claims): cached as theirs.
        "llm": {"per_model": {judge: {"concurrency": 1, "backoff_s": 0.0, **llm}},
                "progress_interval_s": 0.5, "cache_fake_answers": True},
        # A second judge string with the same answers: Table 2 gets two columns.
        "carry": {"judges": [judge, SECOND_JUDGE]},
        "transfer": {"generators": [judge, SECOND_JUDGE], "response_model": judge,
                     "panel": [f"{judge}@0", f"{judge}@1", f"{judge}@2"],
                     "panel_choices": {"first_two": [f"{judge}@0", f"{judge}@1"]},
                     "degrader": judge, "embedding_model": "fake-embed/words"},
    }


def write_config(workdir: Path, judge: str, n: int = 3, **llm) -> Path:
    """.test/config/small.yaml (the embedded default at test sizes), `n` correct and `n`
    flawed evaluation items of each dataset, every model `judge` (fake_models)."""
    config = yaml.safe_load((REPO / ".test" / "config" / "small.yaml").read_text())
    merge_config(config, {
        "data_mirror": str((REPO / ".." / "shared" / "data").resolve()),
        "cache_dir": str(workdir / "cache"),
        **fake_models(judge, **llm),
        "datasets": {name: {"evaluation": {"correct": n, "flawed": n}}
                     for name in ("summedits", "ragtruth")},
    })
    path = workdir / "test_config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def snakemake_cmd(workdir: Path, config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            "--cores", "2", "--configfile", str(REPO / "config" / "config.yaml"), str(config),
            *extra]


def run(workdir: Path, config: Path, *extra: str, env: dict | None = None, check: bool = True,
        bound_s: float | None = None):
    """Snakemake on `workdir`; past its bound it is killed with its jobs, the folder unlocked,
    and the test fails (tests/snakemake_run.py)."""
    if bound_s is None:
        bound_s = DRY_RUN_BOUND_S if "-n" in extra else RUN_BOUND_S
    result = run_snakemake(snakemake_cmd(workdir, config, *extra),
                           env={**os.environ, **(env or {})}, bound_s=bound_s)
    if check and result.returncode != 0:
        pytest.fail(result.failure())
    return result


def ledger_rows(workdir: Path) -> list[dict]:
    rows = []
    for path in sorted((workdir / "results" / "ledger").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory) -> SharedRun:
    """The one full run that most tests of this file read. Its failure is reported once, by
    test_the_shared_run_completes; the tests that read it are skipped (finished_run)."""
    workdir = tmp_path_factory.mktemp("pipeline")
    config = write_config(workdir, "fake/hash")

    def make() -> tuple[Path, Path]:
        result = run(workdir, config, check=False)
        assert result.returncode == 0, result.failure()
        return workdir, config

    return SharedRun.made_by(f"the shared run in {workdir}", make)


def test_the_shared_run_completes(shared_run):
    shared_run.completed()


@pytest.fixture
def finished_run(shared_run) -> tuple[Path, Path]:
    """The shared run's folder and config, to read. A test that reruns or changes the run
    takes own_copy_of_the_run instead."""
    return shared_run.read()


@pytest.fixture
def own_copy_of_the_run(finished_run, tmp_path) -> tuple[Path, Path]:
    """A copy of the shared run (some 45 MB, under a second to copy), its cache included, for a
    test that reruns or changes it: the other tests read the run as it finished, whatever
    this one does or leaves behind (a lock, half-deleted outputs). Its config names the copy's
    cache; that changes only the params of rule effective_config, which the copy reruns."""
    workdir, _ = finished_run
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy, symlinks=True)
    return copy, write_config(copy, "fake/hash")


def test_figure_table_matches_the_verdicts_it_was_computed_from(finished_run):
    workdir, _ = finished_run
    table = pd.read_csv(workdir / "figures/carry/fig2_checklist_length.csv")
    assert set(table.dataset) == {"summedits", "ragtruth"}
    assert set(table.length) == {3, 5, 10} and set(table.rendering) == {"per_check", "paragraph"}
    assert (table.runs == 2).all()
    verdicts = pd.read_csv(workdir / "results/carry/fig2/summedits/verdicts.csv",
                           keep_default_na=False)
    # 3 correct + 3 flawed items, 2 runs, 10 per-check calls and 3 paragraph calls each.
    assert len(verdicts) == 6 * 2 * (10 + 3)
    per_check = verdicts[(verdicts.rendering == "per_check") & (verdicts.length <= 5)]
    failed = per_check.groupby(["item_id", "run", "label"]).verdict.apply(lambda v: (v == "no").any())
    caught = failed.xs("flawed", level="label").mean() * 100
    row = table[(table.dataset == "summedits") & (table.rendering == "per_check") & (table.length == 5)]
    assert row.flawed_caught.item() == pytest.approx(caught)
    assert (workdir / "figures/carry/fig2_checklist_length.png").read_bytes()[:4] == b"\x89PNG"
    assert (workdir / "figures/carry/fig2_checklist_length.pdf").read_bytes()[:5] == b"%PDF-"


def test_the_plan_counts_the_runs_requests_and_what_the_cache_already_answers(finished_run,
                                                                             tmp_path):
    from rubriclab.llm.ledger import read_ledgers
    from rubriclab.plan import build_plan
    from rubriclab.plan.compare import plan_against_ledger

    workdir, config = finished_run
    ledger = read_ledgers(sorted((workdir / "results" / "ledger").glob("*.jsonl")))
    defaults = REPO / "config" / "config.yaml"
    # After the run the plan replays it on the cached answers. Only where the run got no
    # usable answer (not cached, so a rerun asks again) is anything left to pay.
    after, _, _ = build_plan(REPO / "Snakefile", workdir, [defaults, config], [], cores=2)
    unanswered = set(ledger.loc[ledger["outcome"] != "ok", "rule"])
    assert set(after.loc[after["to_pay"] > 0, "label"]) <= unanswered
    answered = after[~after["label"].isin(unanswered)]
    assert set(answered["basis"]) == {"exact"} and answered["to_pay"].sum() == 0
    both = plan_against_ledger(answered, ledger)
    both = both[both["label"].isin(set(answered["label"]))]
    assert set(both["side"]) == {"both"} and len(both) > 40
    assert (both["planned_requests"] == both["made_requests"]).all()
    # The same config before any call (its own empty cache): the rows rendered from the
    # prepared data alone are exact and are the ledger's; everything else is to pay.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    before, markdown, _ = build_plan(REPO / "Snakefile", fresh,
                                     [defaults, write_config(fresh, "fake/hash")], [], cores=2)
    assert before["cached"].sum() == 0
    assert (before["to_pay"] + before["answered_earlier"] == before["requests"]).all()
    exact = plan_against_ledger(before[before["basis"] == "exact"], ledger)
    exact = exact[exact["side"] == "both"]
    assert {"carry_fig2_judge", "verify_judge_labels", "transfer_restate"} <= set(exact["rule"])
    assert (exact["planned_requests"] == exact["made_requests"]).all()
    assert {"carry_judge", "transfer_judge"} <= set(before.loc[before["basis"] == "estimated",
                                                               "rule"])
    assert "| carry_fig2_judge | fake/hash | `fake/hash` | exact |" in markdown


def test_manifest_counts_the_prepared_split_and_what_was_left_out(finished_run):
    workdir, _ = finished_run
    manifest = json.loads((workdir / "data/prepared/ragtruth_manifest.json").read_text())
    assert manifest["counts"]["evaluation"] == {"correct": 3, "flawed": 3}
    left_out = pd.read_csv(workdir / "data/prepared/ragtruth_left_out.csv")
    assert manifest["input_rows"] == manifest["prepared_rows"] + len(left_out) == 2617
    assert sum(manifest["left_out"].values()) == len(left_out)


@pytest.mark.long
def test_rerun_after_deleting_outputs_makes_no_model_call(own_copy_of_the_run):
    workdir, config = own_copy_of_the_run
    first = ledger_rows(workdir)
    # Stages share requests (verify re-judges carry's items). Every distinct request reached
    # the model once, even when two jobs running at once asked it (the first claims it in the
    # cache, the other waits for its answer).
    uncached = [r["key"] for r in first if not r["cached"] and r["attempts"]]
    assert first and set(uncached) == {r["key"] for r in first}
    assert len(uncached) == len(set(uncached))
    assert "Calls made / distinct requests: " in (workdir / "figures/cost_report.md").read_text()
    for folder in ("results", "figures"):
        subprocess.run(["rm", "-rf", str(workdir / folder)], check=True)
    run(workdir, config)
    second = ledger_rows(workdir)
    assert len(second) == len(first)
    # Only answers that never parsed would be asked again (they are never cached); fake/hash
    # answers every format, the agent's tool calls included, so none is.
    asked_again = [r for r in second if not r["cached"]]
    assert all(r["outcome"] == "unparseable" for r in asked_again)
    assert {r["rule"] for r in asked_again} <= {"verify_agent_trials"}
    report = (workdir / "figures/cost_report.md").read_text()
    total, again = len(second), len(asked_again)
    assert f"| **total** | | | {total} | {total - again} | {again} | {again} |" in report


def test_swapping_the_judge_reruns_the_judge_and_everything_after_it(finished_run):
    workdir, config = finished_run
    plan = run(workdir, config, "-n", "--config", "models={'judge': 'fake/yes'}",
               "carry={'judges': ['fake/yes']}").stdout
    assert "carry_fig2_judge" in plan and "carry_fig2_plot" in plan
    assert "prepare_dataset" not in plan and "fetch_raw" not in plan


def test_a_retired_model_stops_the_run_before_its_first_job(own_copy_of_the_run):
    workdir, config = own_copy_of_the_run
    result = run(workdir, config, "--config",
                 "models={'judge': 'anthropic/claude-sonnet-4-5-20250929'}",
                 "carry={'judges': ['anthropic/claude-sonnet-4-5-20250929']}",
                 "--", "results/carry/fig2/summedits/verdicts.csv", check=False)
    assert result.returncode != 0
    # litellm's map retires it 2026-11-30
    assert ("model 'anthropic/claude-sonnet-4-5-20250929' (models.judge) retired on 2026-11-30 "
            "(litellm's price map, deprecation_date)") in result.stderr
    assert "localrule carry_fig2_judge" not in result.stdout + result.stderr  # no job started


def test_missing_api_key_stops_the_run_before_its_first_job(own_copy_of_the_run):
    workdir, config = own_copy_of_the_run
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    result = run_snakemake(
        snakemake_cmd(workdir, config, "--config",
                      "models={'judge': 'anthropic/claude-sonnet-4-6'}",
                      "carry={'judges': ['anthropic/claude-sonnet-4-6']}",
                      "--", "results/carry/fig2/summedits/verdicts.csv"), env=env)
    assert result.returncode != 0
    assert ("model 'anthropic/claude-sonnet-4-6' (models.judge) needs ANTHROPIC_API_KEY "
            "in the environment, and the cache holds no answer of it") in result.stderr
    assert "message: None" not in result.stderr and "Traceback" not in result.stderr
    assert "localrule carry_fig2_judge" not in result.stdout + result.stderr  # no job started
    assert not any(r["model"].startswith("anthropic/") for r in ledger_rows(workdir))


def test_paper_config_plans_without_calling_any_model(tmp_path):
    result = run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "--configfile", str(REPO / "config" / "paper.yaml")],
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        bound_s=DRY_RUN_BOUND_S)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "carry_fig2_judge" in result.stdout and "This was a dry-run" in result.stdout
    assert not (tmp_path / "results").exists() and not (tmp_path / ".cache").exists()


def test_a_config_that_breaks_the_schema_fails_naming_the_key(tmp_path):
    result = run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "--configfile", str(REPO / "config" / "config.yaml"),
         "--config", "carry={'fig2': {'runs': 'two'}}"], bound_s=DRY_RUN_BOUND_S)
    assert result.returncode != 0
    assert "config key 'carry.fig2.runs'" in result.stderr + result.stdout


@pytest.mark.long
def test_sigkill_mid_judging_loses_no_finished_call(tmp_path):
    """Kill the whole run while it judges, rerun: no answer stored before the kill is asked
    again, and the final table equals that of an uninterrupted run."""
    judge = "fake/hash?delay_s=0.02"
    # Figure 2 alone: its judging is what the kill lands in, and its table is what is compared.
    fig2 = "figures/carry/fig2_checklist_length.csv"
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    killed.mkdir(), clean.mkdir()
    calls = tmp_path / "calls.log"
    config = write_config(killed, judge, n=4)
    env = {**os.environ, "RUBRICLAB_FAKE_CALL_LOG": str(calls)}
    proc = start(snakemake_cmd(killed, config, "--", fig2), env=env,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + RUN_BOUND_S  # a bound on the event: 40 calls made
        while time.monotonic() < deadline:
            if calls.exists() and len(calls.read_text().split()) >= 40:
                break
            if proc.poll() is not None:
                pytest.fail("the run ended before it could be interrupted")
            time.sleep(0.05)
    finally:
        kill_group(proc)  # snakemake and every job it started, at once
        proc.wait()

    with SQLiteCache(killed / "cache" / "llm_cache.sqlite") as cache:
        stored = {
            call_digest(
                [{"role": m["role"], "content": m["content"]} for m in json.loads(r[0])["messages"]],
                json.loads(r[0])["sample_index"],
            )
            for r in cache._db.execute("SELECT request_json FROM answers")
        }
        stored_keys = {row[0] for row in cache._db.execute("SELECT key FROM answers")}
    total_calls = 2 * 8 * 2 * (10 + 3)
    assert 0 < len(stored) < total_calls, "the kill did not land mid-judging"
    before = len(calls.read_text().split())
    ledger = killed / "results" / "ledger"
    ledgers_at_kill = {path: path.read_text() for path in ledger.glob("*.jsonl")}

    run(killed, config, "--unlock")
    run(killed, config, "--", fig2, env={"RUBRICLAB_FAKE_CALL_LOG": str(calls)})
    after_kill = calls.read_text().split()[before:]
    # Judged by cache key, not by the fake log's digest: the digest leaves the model out, and the
    # second judge and generator (SECOND_JUDGE) send the same messages as a new request.
    rerun_rows = [json.loads(line) for path in sorted(ledger.glob("*.jsonl"))
                  if ledgers_at_kill.get(path) != path.read_text()
                  for line in path.read_text().splitlines()]
    asked_again = {r["key"] for r in rerun_rows if not r["cached"]} & stored_keys
    assert not asked_again, "an answer stored before the kill was asked again"
    assert len(stored) + len(after_kill) >= total_calls

    run(clean, write_config(clean, judge, n=4), "--", fig2)
    resumed = pd.read_csv(killed / fig2)
    uninterrupted = pd.read_csv(clean / fig2)
    pd.testing.assert_frame_equal(resumed, uninterrupted)


def test_report_builds_offline_with_the_figure_and_its_caption(finished_run):
    workdir, config = finished_run
    run(workdir, config, "--report", str(workdir / "report.html"))
    html = (workdir / "report.html").read_text()
    assert "fig2_checklist_length.png" in html
    assert "judged by <tt class=\\\"docutils literal\\\">fake/hash</tt>" in html
    assert "all-must-pass aggregation, mean of 2 run(s)" in html
    # every carry and transfer output is in, each with its own caption (picked by wildcard)
    for name in ("fig6_gated_quality.png", "table2_gate_replay.md", "figA4_by_response_model.png",
                 "tableA9_edit_sizes.md"):
        assert name in html
    assert "carry, Figure 6: quality of the rubric after the last round" in html
    assert "transfer, Table A.9: how much each intervention changes the response" in html
    # every item in a category and subcategory of its own, none under Snakemake's "Other"
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", html, re.S).group(1))
    items = [(c, s) for c, subs in categories.items() for s, found in subs.items()
             for _ in found]
    assert len(items) >= 29 and not [i for i in items if "Other" in i]
    assert {("carry", "Figure 6"), ("transfer", "Table A.9")} <= set(items)


def test_report_by_a_later_command_with_another_judge_keeps_the_judge_of_the_run(finished_run):
    """Captions come from the provenance written with each figure, not from the report's config."""
    workdir, config = finished_run
    provenance = json.loads((workdir / "figures/carry/fig2_checklist_length.provenance.json")
                            .read_text())
    assert provenance["models"]["judge"] == {"model": "fake/hash", "label": "fake/hash"}
    run(workdir, config, "--report", str(workdir / "report_b.html"), "--config",
        "models={'judge': 'fake/yes'}", "carry={'judges': ['fake/yes']}")
    html = (workdir / "report_b.html").read_text()
    assert "judged by <tt class=\\\"docutils literal\\\">fake/hash</tt>" in html
    assert "judged by <tt class=\\\"docutils literal\\\">fake/yes</tt>" not in html
    assert provenance["config_digest"][:19] in html


def test_report_opens_on_the_replication_headlines_linking_outputs_and_verdicts(finished_run):
    """report.html's first page is workflow/report/workflow.rst's "Replication at a glance"
    (rubriclab.report_items.replication_landing): in headless chromium, clicking as a reader
    does, each tested claim's headline with its verdict is what the page opens on, its links
    open its outputs and the verdict browser in the report, and the replication table's view
    icon shows the table."""
    from urllib.parse import unquote

    from ..headless_chromium import OUTPUT, Chromium, chromium_or_skip
    from ..report_browser import click, frame_text, result_panel_shows, view_icon, wait_for

    workdir, config = finished_run
    binary = chromium_or_skip()
    page = workdir / "report_landing.html"
    run(workdir, config, "--report", str(page))
    table = pd.read_csv(workdir / "figures/replication.csv", keep_default_na=False, dtype=str)
    tested = table[(table.verdict != "not computed") & (table.kind != "arithmetic")]
    assert len(tested) >= 40
    screenshot = OUTPUT / "report_landing.png"
    landing = "document.getElementById('replication-at-a-glance')"
    at_home = f"{landing} && {landing}.querySelector('li')"
    # per work (its h2), per headline: the verdict, the text, every link's href
    headlines = (
        f"Object.fromEntries([...{landing}.querySelectorAll('div.section')].map(s => "
        "[s.querySelector('h2').textContent, [...s.querySelectorAll(':scope > ul > li')].map("
        "li => ({verdict: li.querySelector('strong').textContent,"
        " text: li.textContent.replace(/\\s+/g, ' '),"
        " links: [...li.querySelectorAll('a')].map(a => a.getAttribute('href'))}))]))")
    opens = re.compile(r"^javascript:app\.showResultInfo\('([^']+)'\)$")

    def target(href: str) -> str:
        found = opens.match(href)
        assert found, f"a headline link that opens no report item: {href}"
        return unquote(found.group(1))

    def follow(href: str, path: str) -> None:
        """Click the landing page's link `href` and wait for the panel of `path`."""
        click(browser, f"[...{landing}.querySelectorAll('a')]"
                       f".find(a => a.getAttribute('href') === {json.dumps(href)})",
              f"the link to {path}")
        wait_for(browser, result_panel_shows(path), f"the panel of {path}")

    def home() -> None:
        click(browser, "document.querySelector('nav nav a')", "home (the first breadcrumb)")
        wait_for(browser, at_home, "the landing page, back home")

    with Chromium(binary) as browser:
        browser.open(page)
        # (a) the first page: the headlines, from the top of the window, not the rule graph
        wait_for(browser, at_home, "the landing page")
        seen = browser.evaluate(
            f"(() => {{ const h = {landing}.querySelector('h1'), li = {landing}.querySelector('li');"
            " const r = h.getBoundingClientRect(), first = li.getBoundingClientRect();"
            " const at = document.elementFromPoint(r.left + 5, r.top + r.height / 2);"
            " return {title: h.textContent, top: r.top, first: first.top,"
            " height: window.innerHeight, onTop: h.contains(at)}; })()")
        assert seen["title"] == "Replication at a glance", seen
        assert 0 <= seen["top"] < seen["first"] < seen["height"] and seen["onTop"], seen
        browser.screenshot(screenshot)
        assert not browser.evaluate("document.querySelectorAll('.system-message').length"), \
            "docutils left a warning on the landing page"
        shown = browser.evaluate(headlines)
        assert sorted(shown) == sorted(set(tested.work)), sorted(shown)
        items = set(browser.evaluate("Object.keys(results)"))
        assert {"figures/replication.html", "figures/verdicts.html"} <= items
        outputs: dict[str, str] = {}  # each output a headline links to: its link
        for work, rows in tested.groupby("work", sort=False):
            assert [h["verdict"] for h in shown[work]] == list(rows.verdict), work
            for row, headline in zip(rows.itertuples(), shown[work], strict=True):
                assert f"{row.verdict}, " in headline["text"], (row.where, headline)
                linked = [target(href) for href in headline["links"]]
                # (c) each headline links to the verdicts behind it, an item of the report
                assert linked[-1] == "figures/verdicts.html", headline
                # (b) and to the report item of each figure or table it rests on
                stems = {Path(s).stem for s in row.outputs.split()}
                assert {Path(p).stem for p in linked[:-1]} == {
                    Path(p).stem for p in items if Path(p).suffix in (".png", ".md")} & stems, \
                    (row.outputs, headline)
                for href, path in zip(headline["links"], linked[:-1]):
                    outputs.setdefault(path, href)
        assert {Path(p).suffix for p in outputs} == {".png", ".md"}, outputs
        # a click on each output's link opens its panel: its path and its caption
        for path, href in outputs.items():
            follow(href, path)
        figure = next(p for p in outputs if p.endswith(".png"))
        follow(outputs[figure], figure)
        click(browser, view_icon(figure), f"the view icon of {figure}")
        drawn = ("(() => { const i = document.querySelector('#app img[src^=\"data:image/png\"]');"
                 " return i && i.complete && i.naturalWidth; })()")
        assert wait_for(browser, drawn, f"{figure} drawn") > 100
        home()
        # (d) the replication table's link and view icon; then the verdicts'
        whole_table = browser.evaluate(f"{landing}.querySelector('p a').getAttribute('href')")
        verdicts = next(iter(shown.values()))[0]["links"][-1]
        claims = f"Claims tested on this run's models \\({len(tested)}\\)"
        for path, href, shows in (("figures/replication.html", whole_table, claims),
                                  ("figures/verdicts.html", verdicts, r"\d+ of \d+ verdicts")):
            follow(href, path)
            click(browser, view_icon(path), f"the view icon of {path}")
            frame_text(browser, "data:text/html", shows, f"{path} shown by its view icon")
            home()
        # (e)
        assert not browser.errors, browser.errors
    assert screenshot.read_bytes()[:4] == b"\x89PNG", f"screenshot at {screenshot}"


def test_data_summary_tabulates_every_prepared_dataset(finished_run):
    workdir, _ = finished_run
    summary = (workdir / "figures/data_summary.md").read_text()
    for name in ("summedits", "ragtruth", "healthbench", "recon72", "recon108"):
        assert f"## {name}\n" in summary
    recon72 = summary.split("## recon72")[1].split("## recon108")[0]
    assert "| total       |        24 |       48 |      72 |" in recon72
    healthbench = summary.split("## healthbench")[1].split("## recon72")[0]
    assert healthbench.count("|            5 |") == 7  # 5 per theme, 7 themes
    assert "in HealthBench-Hard" in healthbench


def test_verify_calibration_table_has_the_post_and_each_judged_dataset(finished_run):
    workdir, _ = finished_run
    table = pd.read_csv(workdir / "figures/verify/table_calibration.csv")
    post = table.iloc[0]
    assert (post.tp, post.fn, post.fp, post.tn) == (37, 1, 4, 8)
    assert round(post.corrected, 3) == 0.651
    # Rogan-Gladen with the study's default interval, PPI beside it (the post's labels are a
    # subset of its judged replies); raw and clipped values both in the csv
    assert post.method == "lang_reiczigel" and post.corrected_low < post.corrected_high
    assert post.ppi == pytest.approx(0.68) and post.ppi_low < 0.68 < post.ppi_high
    assert post.stable and (table.corrected_low_clipped.dropna() >= 0).all()
    judged = table.iloc[1:]
    assert sorted(zip(judged.dataset, judged.rendering)) == [
        ("ragtruth", "one call per check"), ("ragtruth", "paragraph"),
        ("summedits", "one call per check"), ("summedits", "paragraph")]
    # Calibration split: 2 + 2 labelled items; evaluation split: 3 + 3 judged items.
    assert ((judged.tp + judged.fn + judged.fp + judged.tn + judged.n_undetermined) == 4).all()
    assert (judged.n_judged <= 6).all() and (judged.human_pass_rate == 0.5).all()
    markdown = (workdir / "figures/verify/table_calibration.md").read_text()
    assert "## The worked example, run" in markdown and "2 trials" in markdown
    assert "Rogan-Gladen p, Lang-Reiczigel adjusted Wald interval" in markdown
    # 2 + 2 labels: no row of the datasets has an interval to trust, and each says why
    assert (~judged.stable).all() and judged.interval_flags.str.len().gt(0).all()
    assert markdown.count("| unstable: ") == len(judged)
    assert (workdir / "figures/verify/fig2_calibration.png").read_bytes()[:4] == b"\x89PNG"


def test_table1_is_built_from_the_seed_example(finished_run):
    workdir, _ = finished_run
    table = pd.read_csv(workdir / "figures/carry/table1_shapley_example.csv").set_index("check_id")
    assert table.loc["A", "credit"] == pytest.approx(1.5) and table.loc["A", "unique_catches"] == 1
    assert table.loc["D", "blame"] == pytest.approx(1)
    assert "| R1 | flawed | A | A: 1 (unique catch) |" in (
        workdir / "figures/carry/table1_shapley_example.md").read_text()


def planned_rules(plan: str) -> set[str]:
    """Rule names of a dry run's job table ("rule  count" lines)."""
    rules = set()
    for line in plan.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total"):
            rules.add(parts[0])
    return rules


def test_carry_rates_are_the_all_must_pass_outcomes_of_the_judged_verdicts(finished_run):
    workdir, _ = finished_run
    rates = pd.read_csv(workdir / "results/carry/rates.csv", keep_default_na=False,
                        na_values=["NaN"])
    hand = json.loads((workdir / "results/carry/rubrics/recon/hand.json").read_text())
    items = pd.read_csv(workdir / "results/carry/items/recon.csv", keep_default_na=False)
    judged = sorted((workdir / "results/carry/judged/recon").iterdir())
    main = next(d for d in judged if d.name.startswith("fake_hash-"))
    verdicts = pd.read_csv(main / "verdicts.csv", keep_default_na=False)
    answers = verdicts[verdicts.kind == "check"].set_index(["item_id", "check_text"]).answer
    passed = {}
    for item in items[items.in_recon72.astype(str) == "True"].itertuples():
        texts = [c["text"] for c in hand["rubrics"][item.scope]["checks"]]
        passed[item.item_id] = (item.label, all(answers[(item.item_id, t)] == "yes" for t in texts))
    correct = [p for label, p in passed.values() if label == "correct"]
    row = rates[(rates.judge == "fake/hash") & (rates.dataset == "recon") & (rates.item_set == "recon72")
                & (rates.source == "hand") & (rates.rendering == "per_check")
                & (rates.metric == "correct_passed")]
    assert row.value.item() == pytest.approx(100 * sum(correct) / len(correct))
    assert row.n.item() == len(correct) == 4  # two environments, two correct reports each
    # Every rendering of every start rubric, and gated replays of every chain, are there.
    recon72 = rates[(rates.dataset == "recon") & (rates.item_set == "recon72")]
    assert set(recon72.rendering) == {"per_check", "all_in_one", "paragraph", "scale"}
    assert set(recon72.source) == {"hand", "generated", "label"}
    chains = rates[(rates.dataset == "recon") & (rates["round"] == 2)]
    assert set(chains.gate) == {"none", "R", "P", "S", "S+P"}
    assert set(chains.variant) == {"standard", "loo"}


def test_carry_tables_have_a_row_per_chain_and_a_column_per_judge(finished_run):
    workdir, _ = finished_run
    table2 = (workdir / "figures/carry/table2_gate_replay.md").read_text()
    # judges by their display labels: the query string's values in parentheses
    assert "fake/hash judge" in table2 and "fake/hash (delay_s=0) judge" in table2
    assert "?delay_s" not in table2
    rows = pd.read_csv(workdir / "figures/carry/table2_gate_replay.csv")
    # the paper's shape: carry.recon.table2_chains (config.yaml: hand and label free, seed 1)
    assert len(rows) == 6 and list(rows["source"])[::3] == ["hand", "label"]
    assert set(rows["mode"]) == {"free"}
    assert "95% Clopper-Pearson intervals" in table2 and "Refused without evidence" in table2
    gated = rows[rows.rubric_or_gate == "Gate S+P, leave-one-out"]
    assert gated["fake/hash refused without evidence"].notna().all()
    supplement = pd.read_csv(workdir / "figures/carry/table2_supplement.csv")
    # every chain: 2 starts x 3 modes, the free ones the paper's
    assert (supplement.rubric_or_gate == "Gate S+P, leave-one-out").sum() == 6
    assert set(supplement.loc[supplement["paper_chain"], "mode"]) == {"free"}
    table3 = pd.read_csv(workdir / "figures/carry/table3_gates_human_labeled.csv")
    # summedits and ragtruth x (generated free, label free), the main reviser's seed 1
    assert len(table3) == 4 and set(table3["seed"]) == {1}
    table3s = pd.read_csv(workdir / "figures/carry/table3_supplement.csv")
    assert (table3s["kind"] == "chain").sum() == 4 and len(table3s) == 8
    fig6 = pd.read_csv(workdir / "results/carry/figures/fig6_gated_quality.csv")
    assert set(fig6["chains"]) == {1} and fig6["no_evidence"].notna().all()  # the free chain
    fig6s = pd.read_csv(workdir / "figures/carry/fig6_supplement.csv")
    assert len(fig6s) == 6 and fig6s["paper_chain"].sum() == 2
    assert (workdir / "figures/carry/fig5b_supplement.md").read_text().startswith(
        "# carry, Figure 5b supplement")
    for name in ("fig1_strictness", "fig3_accuracy_vs_flawed_share", "fig4_self_review_drift",
                 "fig5_attribution_by_origin", "fig6_gated_quality"):
        assert (workdir / f"figures/carry/{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert (workdir / f"figures/carry/{name}.pdf").read_bytes()[:5] == b"%PDF-"


def test_transfer_q_metric_is_the_micro_average_of_the_judged_edits(finished_run):
    workdir, _ = finished_run
    stats = pd.read_csv(workdir / "results/transfer/analysis/stats.csv", keep_default_na=False,
                        na_values=["NaN"])
    assert {"existing", "framing", "it", "degradation", "similarity"} <= set(stats.family)
    verdicts = pd.concat([pd.read_csv(p, keep_default_na=False)
                          for p in (workdir / "results/transfer/verdicts").glob("*.csv")])
    vector = {k: g.sort_values("criterion_index").verdict.to_numpy()
              for k, g in verdicts.groupby(["response_id", "rubric"])}
    examples = sorted({r.split("|")[0] for r, _ in vector if "|rubric_edit|" in r})
    gained = could = 0
    for example in examples:  # Q+(Cg->C*): pass the generated rubric, measure the expert one
        before = vector[(f"{example}|original|fake/hash|0", "expert")]
        after = vector[(f"{example}|rubric_edit|fake/hash|fake/hash|-1|+", "expert")]
        gained += int((after == 1).sum()) - int((before == 1).sum())
        could += int((before == 0).sum())
    row = stats[(stats.family == "it") & (stats.metric == "Q+(Cg->C*)")
                & (stats.generator == "fake/hash") & (stats.generator_b == "")]
    assert row.estimate.item() == pytest.approx(gained / could)
    for name in ("fig4_existing_approaches", "fig5_interventional_transfer", "fig6_criteria_level",
                 "figA1_matching_framings", "figA2_panel_sensitivity", "figA4_by_response_model"):
        assert (workdir / f"figures/transfer/{name}.png").read_bytes()[:4] == b"\x89PNG"
    edit_sizes = pd.read_csv(workdir / "figures/transfer/tableA9_edit_sizes.csv")
    assert len(edit_sizes) == 4


def test_the_verdict_browser_of_the_run_loads_in_headless_chromium(finished_run):
    import re

    from rubriclab.labels import default_label

    from ..headless_chromium import OUTPUT, Chromium, chromium_or_skip

    workdir, _ = finished_run
    page = workdir / "figures/verdicts.html"
    assert page.is_file()
    results = workdir / "results"
    counts = {
        "carry fig2": sum(len(pd.read_csv(p)) for p in results.glob("carry/fig2/*/verdicts.csv")),
        "verify": sum(len(pd.read_csv(p))
                      for p in results.glob("verify/judge_labels/*/verdicts.csv")),
        "carry": sum(len(pd.read_csv(p)) for p in results.glob("carry/judged/*/*/verdicts.csv")),
        "transfer": sum(len(pd.read_csv(p)) for p in results.glob("transfer/verdicts/*.csv")),
    }
    total = sum(counts.values())
    binary = chromium_or_skip()
    screenshot = OUTPUT / "verdict_browser_smoke_run.png"

    def matching(browser) -> int:
        text = browser.evaluate("document.getElementById('count').textContent")
        found = re.match(r"(\d+) of (\d+) verdicts", text)
        assert found and int(found.group(2)) == total, text
        return int(found.group(1))

    def choose(browser, element, value) -> int:
        browser.evaluate(f"(() => {{ const e = document.getElementById('{element}'); "
                         f"e.value = {json.dumps(value)}; "
                         "e.dispatchEvent(new Event('change')); })()")
        return matching(browser)

    with Chromium(binary) as browser:
        browser.open(page)
        assert matching(browser) == total
        assert browser.evaluate("document.querySelectorAll('#rows tr').length") == min(300, total)
        for study, n in counts.items():
            assert choose(browser, "f-study", study) == n > 0
        choose(browser, "f-study", "")
        # the second judge judges Recon only (carry.all_judges_on [recon], the default)
        second = [p for p in results.glob(f"carry/judged/*/{model_slug(SECOND_JUDGE)}/verdicts.csv")]
        assert [p.parts[-3] for p in second] == ["recon"]
        # judges by their display names (rubriclab.labels), as in the figures
        assert choose(browser, "f-judge", default_label(SECOND_JUDGE)) == \
            len(pd.read_csv(second[0]))
        choose(browser, "f-judge", "")
        # every answer shown is the cached text of the key it names, or a note where none is
        shown = browser.evaluate("[...document.querySelectorAll('td.answer pre')]"
                                 ".map(p => [p.title.replace('cache key ', ''), p.textContent])")
        assert len(shown) >= 300
        with SQLiteCache.read_only(workdir / "cache" / "llm_cache.sqlite") as cache:
            for key, text in shown:
                text, hit = re.sub(r"^vote \d+: ", "", text), cache.get(key)
                assert text == (hit.text if hit is not None else "(not in the cache)") or \
                    (hit is None and text.startswith("(a fake model's answer: not cached")) or \
                    (hit is None and text.startswith(("unparseable: ", "failed: ")))
        browser.screenshot(screenshot)
        assert not browser.errors, browser.errors
    assert screenshot.read_bytes()[:4] == b"\x89PNG", f"screenshot at {screenshot}"


@pytest.mark.long
def test_swapping_the_reviser_reruns_only_revisions_gates_and_figures(own_copy_of_the_run):
    """The judge is asked only about new check texts."""
    workdir, config = own_copy_of_the_run
    swap = ("--config", "models={'reviser': 'fake/hash?salt=another-reviser'}")
    plan = planned_rules(run(workdir, config, "-n", *swap).stdout)
    assert {"carry_chain", "carry_judge", "carry_analyse", "carry_figure", "carry_table"} <= plan
    assert not plan & {"carry_rubric_model", "carry_rubric_hand", "carry_items",
                       "carry_fig2_judge", "verify_judge_labels", "prepare_dataset"}
    assert not {rule for rule in plan if rule.startswith("transfer_")}
    verdict_file = next((workdir / "results/carry/judged/recon").glob("fake_hash-*/verdicts.csv"))
    before = pd.read_csv(verdict_file, keep_default_na=False)
    asked_before = set(zip(before.item_id, before.check_text, before.rendering, before.source))
    run(workdir, config, *swap)
    after = pd.read_csv(verdict_file, keep_default_na=False)
    new_questions = set(zip(after.item_id, after.check_text, after.rendering, after.source)) - asked_before
    ledger = workdir / f"results/ledger/carry_judge-recon-{verdict_file.parent.name}.jsonl"
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert new_questions and sum(not r["cached"] for r in rows) == len(new_questions)
    assert len(rows) == len(after)


def test_the_replication_page_sets_the_papers_numbers_beside_the_run(finished_run):
    workdir, _ = finished_run
    table = pd.read_csv(workdir / "figures/replication.csv", keep_default_na=False)
    assert table["group"].nunique() >= 40 and (table["verdict"] != "").all()
    verdicts = table.set_index("id")["verdict"]
    arithmetic = table["kind"] == "arithmetic"
    # no model behind these: the seeds' own numbers give them, and they are never counted as
    # replications
    assert (verdicts[verdicts.index.str.startswith("carry.table1.")] == "matches").all()
    assert verdicts["verify.correction.formula"] == "matches"
    assert not table.loc[arithmetic, "verdict"].isin(["replicates", "holds"]).any()
    # fake models are never compared with the paper's, whatever their numbers say
    measured = table[~arithmetic & (table["verdict"] != "not computed")]
    assert set(measured["verdict"]) <= {"other models", "cannot tell"}
    compared = measured[measured["as_measured"].isin(["replicates", "does not replicate",
                                                       "holds", "does not hold"])]
    assert len(compared) and (compared["verdict"] == "other models").all()
    # every claim the pipeline cannot compute says why
    missing = table[table["verdict"] == "not computed"]
    assert len(missing) and (missing["note"].str.len() > 20).all()
    page = (workdir / "figures/replication.md").read_text()
    counts = page.split("\n")[2]
    assert "Arithmetic checks of the seeds' own numbers, not replications" in counts
    arithmetic_section = page.split("## Arithmetic checks")[1].split("## Not computed")[0]
    assert "Table 1" in arithmetic_section and "Table 1" not in page.split("## Arithmetic")[0]
    assert "## Not computed by this pipeline" in page and "Reading: Recon gate evidence" in page


def _model_strings(config: dict) -> set[str]:
    """Every model string the config names: models.*, carry.judges, every model of transfer
    (generators, response and panel models, "model@k" as its model), llm.per_model's keys."""
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
    found = [*strings(config["models"]), *strings(config["carry"].get("judges") or []),
             *strings(config["transfer"]), *config["llm"].get("per_model", {})]
    return {m.split("@", 1)[0] for m in found if "/" in m and " " not in m}


def _without_model_string_cells(markdown: str) -> str:
    """A bill's markdown (cost_report.md, plan.md) less its `model string` column's cells,
    the one place an accounting table prints the exact model billed."""
    kept, column = [], None
    for line in markdown.splitlines():
        cells = line.split("|") if line.startswith("|") else None
        if cells is None:
            column = None
        elif "model string" in [c.strip() for c in cells]:
            column = [c.strip() for c in cells].index("model string")
        elif column is not None and not set(line) <= set("|-: "):
            assert re.fullmatch(r" `[^`]+` | ", cells[column]), line  # blank: the total
            cells[column] = ""
            line = "|".join(cells)
        kept.append(line)
    return "\n".join(kept)


def test_no_raw_model_string_in_any_table_or_note(finished_run):
    """Issue 38: every table and note under figures/ names a model by its display name; only
    the bills' `model string` cells print the exact model string."""
    from rubriclab.labels import ModelLabels

    workdir, config_path = finished_run
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    merge_config(config, yaml.safe_load(config_path.read_text()))
    labels = ModelLabels(config.get("labels"), stand_ins=config.get("stand_ins"))
    models = _model_strings(config)
    assert {"fake/hash", SECOND_JUDGE, "fake-embed/words"} <= models
    # fake/hash reads as itself; a model string whose label differs must never be printed
    raw = {m: labels(m) for m in models if labels(m) != m}
    assert raw[SECOND_JUDGE] == "fake/hash (delay_s=0)"
    texts = {}
    for path in sorted((workdir / "figures").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if path.name in ("cost_report.md", "plan.md"):
            assert f"| {raw[SECOND_JUDGE]} | `{SECOND_JUDGE}` |" in text or \
                path.name == "plan.md", path
            text = _without_model_string_cells(text)
        texts[str(path.relative_to(workdir))] = text
    replication = pd.read_csv(workdir / "figures/replication.csv", dtype=str,
                              keep_default_na=False)
    for column in replication.columns:
        texts[f"figures/replication.csv, {column}"] = "\n".join(replication[column])
    found = {(where, model) for where, text in texts.items() for model in raw if model in text}
    assert not found, sorted(found)
    # not vacuous: the notes name the second judge, by its display name
    notes = replication["note"]
    assert notes.str.contains(raw[SECOND_JUDGE], regex=False).any()
    assert "figures/cost_report.md" in texts and "figures/replication.md" in texts
