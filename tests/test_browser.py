"""The verdict browser (rubriclab.browser): tidy rows from each verdict table, disagreements,
answers looked up in a real call cache, and the page itself in a headless chromium."""

import csv
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from rubriclab import browser as B
from rubriclab.llm import Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.request import cache_key

from .headless_chromium import OUTPUT, Chromium, chromium_or_skip


JUDGE_A, JUDGE_B = "fake/hash?salt=judge-a", "fake/hash?salt=judge-b"
RESPONDER = "fake/hash?salt=responder"
LABELS = {JUDGE_B: "Judge B"}  # judge a goes by its default display name, "fake/hash (judge-a)"
AIO_ANSWER = '["yes",\n "yes"]'  # a comma, quotes and a line break, for the CSV
ITEMS = pd.DataFrame([
    dict(item_id="s1", task="The committee met on Tuesday and approved the budget of 4 million.",
         output="The committee rejected the budget on Tuesday after a long debate.",
         label="flawed"),
    dict(item_id="s2", task="Rain is expected in the north of the country for the whole week.",
         output="It will rain in the north all week, the forecast says.", label="correct"),
])


def prompt_of(item_id: str, question: str) -> str:
    """A judge's prompt: the item's texts inside a template, as the judging rules write it."""
    item = ITEMS.set_index("item_id").loc[item_id]
    return (f"Document:\n{item.task}\n\nSummary:\n{item.output}\n\nQuestion: {question}\n"
            "Answer Yes or No.")


def stored(cache: SQLiteCache, prompt: str, text: str | None, sample: int = 0) -> str:
    """The key of a request for `prompt`; its answer `text` stored in the cache (None: an
    answer that never parsed, so nothing is stored)."""
    request = Request.chat("fake/hash", [{"role": "system", "content": "You are a judge."},
                                         {"role": "user", "content": prompt}],
                           sample_index=sample)
    key = cache_key(request, "fixture")
    if text is not None:
        cache.put(make_answer(key, request, text, 10, 1, 0.0, "fixture"))
    return key


@pytest.fixture
def run(tmp_path):
    """Tiny verdict tables of each kind, the cache holding their answers and prompts, and the
    items' texts."""
    cache = SQLiteCache(tmp_path / "llm_cache.sqlite")

    def key(prompt, text, item=None, sample=0):
        return stored(cache, prompt_of(item, prompt) if item else prompt, text, sample)

    # carry Figure 2 on one item, one run: checks c1 (yes), c2 (no); the paragraph of both says
    # yes (the renderings disagree); a second item with an unparseable paragraph.
    fig2 = pd.DataFrame([
        dict(item_id="s1", label="flawed", run=0, rendering="per_check", length=1, check_id="c1",
             verdict="yes", cache_key=key("Is it faithful?", "Yes", "s1")),
        dict(item_id="s1", label="flawed", run=0, rendering="per_check", length=2, check_id="c2",
             verdict="no", cache_key=key("c2", "No.", "s1")),
        dict(item_id="s1", label="flawed", run=0, rendering="paragraph", length=2, check_id="",
             verdict="yes", cache_key=key("c1 and c2", "Yes", "s1")),
        dict(item_id="s2", label="correct", run=0, rendering="per_check", length=1,
             check_id="c1", verdict="yes", cache_key=key("Is it faithful?", "Yes", "s2")),
        dict(item_id="s2", label="correct", run=0, rendering="per_check", length=2,
             check_id="c2", verdict="yes", cache_key=key("c2", "Yes", "s2")),
        dict(item_id="s2", label="correct", run=0, rendering="paragraph", length=2,
             check_id="", verdict="unparseable", cache_key=key("c1 and c2", None, "s2")),
    ])
    # carry judged, two judges on one Recon item, 2 votes: judge A says yes/yes to check X,
    # judge B no/no (the judges disagree); A's votes on Y split; A's all_in_one of the hand
    # rubric (X, Y) says pass while its check-by-check vote 1 fails Y.
    def judged(judge, answers, all_in_one):
        rows = []
        for vote in (0, 1):
            for text, votes in answers.items():
                rows.append(dict(item_id="r1", kind="check", scope="e1", source="",
                                 rendering="per_check", check_text=text, vote=vote,
                                 answer=votes[vote], cache_key=key(
                                     f"{judge} {text} {votes} {vote}", votes[vote].title())))
            rows.append(dict(item_id="r1", kind="rendering", scope="e1", source="hand",
                             rendering="all_in_one", check_text="", vote=vote,
                             answer=all_in_one[vote],
                             cache_key=key(f"{judge} aio {all_in_one} {vote}", AIO_ANSWER)))
        return pd.DataFrame(rows)
    judge_a = judged("a", {"X holds.": ["yes", "yes"], "Y holds.": ["yes", "no"],
                           "Z proposed.": ["yes", "yes"]}, ["pass", "pass"])
    judge_b = judged("b", {"X holds.": ["no", "no"], "Y holds.": ["yes", "yes"],
                           "Z proposed.": ["yes", "yes"]}, ["fail", "fail"])
    recon = pd.DataFrame([dict(item_id="r1", label="correct", task="Audit account 7.",
                               output="Findings: the bucket logs-7 is public.")])
    starts = {"hand": {"e1": ["X holds.", "Y holds."]}, "label": {"all": ["Y holds."]}}
    # transfer: one response on the expert rubric, 2 criteria, 3 votes of one prompt (one vote
    # unparseable); the response's id names its model.
    response = f"e1|original|{RESPONDER}|0"
    votes = [key("Score the response: it says drink water often.", text, sample=n)
             for n, text in enumerate(["[1, 0]", "[1, 1]", None])]
    transfer = pd.DataFrame([
        dict(example_id="e1", response_id=response, rubric="expert", criterion_index=i,
             verdict=v, votes_yes=y, votes=3, cache_keys=" ".join(votes))
        for i, (v, y) in enumerate([(1, 2), (-1, 1)])])
    responses = pd.DataFrame([dict(response_id=response, text="Drink water often.")])
    ledger = pd.DataFrame([dict(key=votes[2], outcome="unparseable",
                                error="expected a list of 2 scores, got 'I am not sure'"),
                           dict(key=fig2.cache_key[5], outcome="unparseable",
                                error="expected exactly 'Yes' or 'No', got 'Perhaps'")])
    table = B.disagreements(pd.concat([
        B.fig2_rows(fig2, "carry fig2", "summedits", JUDGE_A, {"c1": "Is it faithful?"}),
        B.carry_rows(judge_a, "recon", JUDGE_A, recon, starts),
        B.carry_rows(judge_b, "recon", JUDGE_B, recon, starts),
        B.transfer_rows(transfer, "original-m", JUDGE_A),
    ]))
    keys = B.keys_of(table)
    texts, prompts = B.cached_answers(keys, cache)
    notes = B.ledger_errors(ledger, keys)
    items: dict = {}
    B.add_items(items, B.item_texts(ITEMS, "summedits"), "items")
    B.add_items(items, B.item_texts(recon, "recon"), "recon items")
    B.add_items(items, B.item_texts(responses, "healthbench", ("text",), "response_id"),
                "responses")
    cache.close()
    return SimpleNamespace(table=table, texts=texts, notes=notes, prompts=prompts, items=items)


def rows_where(table, **values):
    mask = pd.Series(True, index=table.index)
    for column, value in values.items():
        mask &= table[column] == value
    return table[mask]


def test_tidy_rows_of_each_table(run):
    table = run.table
    assert list(table.columns) == B.TIDY_COLUMNS
    assert len(table) == 6 + 2 * 8 + 2
    fig2 = rows_where(table, study="carry fig2")
    assert fig2.check.tolist()[:2] == ["c1: Is it faithful?", "c2"]  # c2 has no text given
    assert set(fig2.rubric) == {"generic", "generic, first 2 checks"}
    carry = rows_where(table, study="carry", judge=JUDGE_A)
    # a check's rubric names the start rubrics holding its text; a revision's text: revisions
    assert dict(zip(carry.check, carry.rubric)) == {
        "X holds.": "hand", "Y holds.": "hand, label", "Z proposed.": "revisions", "": "hand"}
    assert set(carry.label) == {"correct"}
    assert rows_where(carry, check="Y holds.").votes.tolist() == ["no 1 · yes 1"] * 2
    transfer = rows_where(table, study="transfer")
    assert transfer.verdict.tolist() == ["pass", "undetermined"]
    assert transfer.votes.tolist() == ["yes 2 of 3", "yes 1 of 3"]
    assert set(transfer.label) == {"original"} and set(transfer.dataset) == {"healthbench"}


def test_disagreements_of_judges_renderings_and_votes(run):
    table = run.table
    marked = {(r.study, r.judge, r.item_id, r.check, r.rendering, r.sample): r.disagreement
              for r in table.itertuples()}
    # fig2 s1: c1 yes + c2 no fail together; the paragraph said yes
    for check, rendering in (("c1: Is it faithful?", "per_check"), ("c2", "per_check"),
                             ("", "paragraph")):
        assert marked[("carry fig2", JUDGE_A, "s1", check, rendering, "0")] == "renderings"
    # s2's paragraph never parsed: nothing to compare, nothing marked
    assert set(rows_where(table, item_id="s2").disagreement) == {""}
    # carry: X, yes by judge a and no by judge b, both votes
    for judge in (JUDGE_A, JUDGE_B):
        for vote in "01":
            assert "judges" in marked[("carry", judge, "r1", "X holds.", "per_check", vote)]
    assert "judges" not in marked[("carry", JUDGE_A, "r1", "Z proposed.", "per_check", "0")]
    # judge a's all_in_one says pass on both votes; check by check, vote 1 fails (Y: no)
    assert "renderings" in marked[("carry", JUDGE_A, "r1", "", "all_in_one", "1")]
    assert "renderings" not in marked[("carry", JUDGE_A, "r1", "", "all_in_one", "0")]
    assert "votes" in marked[("carry", JUDGE_A, "r1", "Y holds.", "per_check", "0")]
    # judge b: fails X, so fails the rubric, as its all_in_one says
    assert "renderings" not in marked[("carry", JUDGE_B, "r1", "", "all_in_one", "0")]
    # transfer: criterion 0's votes split 2 of 3 yes; criterion 1's 1 yes 1 no, 1 unparseable
    assert rows_where(table, study="transfer").disagreement.tolist() == ["votes", "votes"]


def test_answers_and_prompts_are_the_cached_ones_and_unparseable_ones_the_ledger_s(run):
    table, texts, notes, prompts = run.table, run.texts, run.notes, run.prompts
    fig2 = rows_where(table, study="carry fig2")
    assert [texts.get(k) for k in fig2.cache_key] == ["Yes", "No.", "Yes", "Yes", "Yes", None]
    assert notes[fig2.cache_key.iloc[5]] == ("unparseable: expected exactly 'Yes' or 'No', got "
                                             "'Perhaps'")
    # the prompt is the cached request's messages, as sent
    assert prompts[fig2.cache_key.iloc[0]] == (
        ("system", "You are a judge."), ("user", prompt_of("s1", "Is it faithful?")))
    assert fig2.cache_key.iloc[5] not in prompts  # never parsed: not cached, no request kept
    keys = rows_where(table, study="transfer").cache_key.iloc[0].split()
    assert [texts.get(k) for k in keys] == ["[1, 0]", "[1, 1]", None]
    assert "I am not sure" in notes[keys[2]]


def test_a_table_without_cache_keys_is_refused_naming_the_file():
    old = pd.DataFrame(columns=["item_id", "label", "run", "rendering", "length", "check_id",
                                "verdict"])
    with pytest.raises(ValueError, match=r"results/x\.csv: .*missing column\(s\) \['cache_key'\]"):
        B.fig2_rows(old, "carry fig2", "summedits", "j", where="results/x.csv")


def test_an_item_given_two_texts_is_refused_naming_the_table():
    items: dict = {}
    B.add_items(items, B.item_texts(ITEMS, "summedits"), "data/prepared/summedits.csv")
    other = ITEMS.assign(output=["changed", "changed"])
    with pytest.raises(ValueError, match=r"results/carry/items/summedits\.csv: item 's1' of "
                                         "summedits has other texts"):
        B.add_items(items, B.item_texts(other, "summedits"), "results/carry/items/summedits.csv")


def page_data_of(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                page, re.S).group(1))


def decoded_prompt(data: dict, key: str) -> tuple:
    strings = data["strings"]
    return tuple((strings[role], "".join(strings[p] for p in parts))
                 for role, parts in data["prompts"][key])


def test_page_holds_the_data_and_nothing_that_ends_its_script_early(run):
    table = run.table
    texts = {**run.texts, B.keys_of(table)[0]: "</script><script>alert(1)</script>"}
    page = B.page_html(table, texts, run.notes, title="Verdicts <of> run", subtitle="smoke",
                       prompts=run.prompts, items=run.items, labels=LABELS)
    assert page.count("</script>") == 2  # the data's and the code's
    assert "Verdicts &lt;of&gt; run" in page and "http://" not in page and "https://" not in page
    data = page_data_of(page)
    assert data["n"] == len(table)
    column = data["columns"]["check"]
    assert [column["values"][c] for c in column["codes"]] == table.check.tolist()
    assert data["texts"][B.keys_of(table)[0]].startswith("</script>")
    # every prompt reads back as sent; an item's texts are stored once, not in each prompt
    for key, prompt in run.prompts.items():
        assert decoded_prompt(data, key) == prompt
    assert data["strings"].count(ITEMS.task[0]) == 1
    assert page.count(ITEMS.task[0]) == 1


def test_models_read_by_their_display_names(run):
    page = B.page_html(run.table, run.texts, run.notes, prompts=run.prompts, items=run.items,
                       labels=LABELS)
    judges = page_data_of(page)["columns"]["judge"]["values"]
    assert sorted(judges) == ["Judge B", "fake/hash (judge-a)"]
    items = page_data_of(page)["columns"]["item_id"]["values"]
    assert "e1|original|fake/hash (responder)|0" in items
    assert "?salt=" not in page


def test_no_folder_of_the_machine_is_named(run, tmp_path):
    """The run's folder, the cache's and the home folder, wherever a text names them, read
    relative to the run, as <cache> and as ~."""
    key = B.keys_of(run.table)[0]
    home = str(Path.home())
    notes = {key: f"failed: {tmp_path}/results/ledger/x.jsonl; {tmp_path / 'cache'}/llm.db; "
                  f"{home}/.config/keys; {tmp_path}"}
    paths = B.machine_paths(tmp_path, tmp_path / "cache")
    page = B.page_html(run.table, run.texts, notes, subtitle=f"cache at {tmp_path / 'cache'}",
                       paths=paths, prompts=run.prompts, items=run.items)
    assert str(tmp_path) not in page and home not in page and "/tmp/" not in page
    assert page_data_of(page)["notes"][key] == (
        "failed: results/ledger/x.jsonl; <cache>/llm.db; ~/.config/keys; .")
    # a folder is not taken for the start of a longer name
    assert B._hide_paths(f"{tmp_path}-old/x", paths) == f"{tmp_path}-old/x"


# --- in a browser -------------------------------------------------------------------------------

VISIBLE = "document.querySelectorAll('#rows tr').length"


def set_filter(browser, element: str, value) -> int:
    """Set a filter as a user would (its value, then its change/input event); the rows shown."""
    prop = "checked" if isinstance(value, bool) else "value"
    event = "input" if element == "f-search" else "change"
    browser.evaluate(f"(() => {{ const e = document.getElementById({json.dumps(element)}); "
                     f"e.{prop} = {json.dumps(value)}; "
                     f"e.dispatchEvent(new Event({json.dumps(event)})); }})()")
    return browser.evaluate(VISIBLE)


def column_of(browser, header: str) -> list[str]:
    """The texts of a column of the rows shown, by its header."""
    return browser.evaluate(
        f"(() => {{ const n = [...document.querySelectorAll('#head th')].findIndex("
        f"th => th.textContent === {json.dumps(header)}); return [...document.querySelectorAll("
        f"'#rows tr')].map(tr => tr.children[n].textContent); }})()")


def click_header(browser, header: str) -> None:
    browser.evaluate(f"[...document.querySelectorAll('#head th')].find(th => th.textContent === "
                     f"{json.dumps(header)}).click()")


def write(run, path, table=None, **extra):
    B.write_page(path, run.table if table is None else table, run.texts, run.notes,
                 title="Verdicts", subtitle="fixture", paths=B.machine_paths(path.parent),
                 prompts=run.prompts, items=run.items, labels=LABELS, **extra)
    return path


def test_the_page_loads_and_filters_in_headless_chromium(run, tmp_path):
    binary = chromium_or_skip()
    table = run.table
    page = write(run, tmp_path / "verdicts.html")
    screenshot = OUTPUT / "verdict_browser_fixture.png"
    with Chromium(binary) as browser:
        browser.open(page)
        assert browser.evaluate(VISIBLE) == len(table) == 24
        assert browser.evaluate("document.getElementById('count').textContent") == \
            "24 of 24 verdicts"
        # the raw text of a row, from the cache; an unparseable one's ledger note
        answers = browser.evaluate("[...document.querySelectorAll('td.answer')]"
                                   ".map(td => td.textContent)")
        assert answers[:3] == ["Yes", "No.", "Yes"]
        assert "got 'Perhaps'" in answers[5]
        assert set_filter(browser, "f-dataset", "recon") == 16
        assert set_filter(browser, "f-judge", "Judge B") == 8
        # judge b against a: X on both votes, Y on vote 1, the all_in_one on both votes
        assert set_filter(browser, "f-disagree", "judges") == len(rows_where(
            table, dataset="recon", judge=JUDGE_B)[lambda t: t.disagreement.str.contains(
                "judges")]) == 5
        set_filter(browser, "f-judge", "")
        set_filter(browser, "f-dataset", "")
        # fig2 s1's two checks and paragraph; judge a's vote 1: X, Y and the all_in_one
        assert set_filter(browser, "f-disagree", "renderings") == 3 + 3
        set_filter(browser, "f-disagree", "")
        assert set_filter(browser, "f-unparseable", True) == 1
        set_filter(browser, "f-unparseable", False)
        # search reaches the answer texts and the ledger's notes
        assert set_filter(browser, "f-search", "perhaps") == 1
        assert set_filter(browser, "f-search", "not sure") == 2
        # nothing matches: no empty table, a sentence, no export
        assert set_filter(browser, "f-search", "no verdict says this") == 0
        assert browser.evaluate("[document.getElementById('verdicts').hidden, "
                                "document.getElementById('none').hidden, "
                                "document.getElementById('export').disabled]") == \
            [True, False, True]
        assert set_filter(browser, "f-search", "") == 24
        assert browser.evaluate("document.getElementById('verdicts').hidden") is False
        browser.screenshot(screenshot)
        assert not browser.errors, browser.errors
    assert screenshot.read_bytes()[:4] == b"\x89PNG", f"screenshot at {screenshot}"
    print(f"screenshot: {screenshot}")


def test_a_row_shows_its_item_s_text_and_the_judge_s_prompt_folded(run, tmp_path):
    binary = chromium_or_skip()
    page = write(run, tmp_path / "verdicts.html")
    first = "document.querySelector('#rows tr')"
    with Chromium(binary) as browser:
        browser.open(page)
        # folded: the row shows the item's id and the prompt's size, not their texts
        shown = browser.evaluate(f"{first}.innerText")
        assert "s1" in shown and ITEMS.task[0] not in shown and "Question:" not in shown
        browser.evaluate(f"{first}.querySelectorAll('summary').forEach(s => s.click())")
        item = browser.evaluate(f"{first}.querySelector('td.item').innerText")
        assert ITEMS.task[0] in item and ITEMS.output[0] in item
        prompt = browser.evaluate(f"{first}.querySelector('td.prompt').innerText")
        assert prompt_of("s1", "Is it faithful?") in prompt and "You are a judge." in prompt
        # an answer that never parsed has no cached request: the row says so
        assert "no cached request" in browser.evaluate(
            "document.querySelectorAll('#rows tr')[5].querySelector('td.prompt').innerText")
        # transfer's three votes of one prompt show it once
        set_filter(browser, "f-study", "transfer")
        assert browser.evaluate(f"{first}.querySelectorAll('td.prompt details').length") == 1
        assert browser.evaluate(f"{first}.querySelector('td.item summary').textContent") == \
            "e1|original|fake/hash (responder)|0"
        # the page's texts are text, never markup
        assert browser.evaluate("document.querySelectorAll('#rows script, #rows img').length") \
            == 0
        assert not browser.errors, browser.errors


def test_clicking_a_header_sorts_by_its_column(run, tmp_path):
    binary = chromium_or_skip()
    page = write(run, tmp_path / "verdicts.html")
    with Chromium(binary) as browser:
        browser.open(page)
        before = column_of(browser, "verdict")
        assert before == run.table.verdict.tolist() and before != sorted(before)
        click_header(browser, "verdict")
        assert column_of(browser, "verdict") == sorted(before)
        click_header(browser, "verdict")
        assert column_of(browser, "verdict") == sorted(before, reverse=True)
        assert browser.evaluate("[...document.querySelectorAll('#head th')].find("
                                "th => th.textContent === 'verdict').getAttribute('aria-sort')") \
            == "descending"
        # the order holds through a filter, ties kept in the table's order
        set_filter(browser, "f-judge", "Judge B")
        checks = column_of(browser, "check")
        click_header(browser, "check")
        assert column_of(browser, "check") == sorted(checks)
        assert not browser.errors, browser.errors


def test_csv_export_holds_the_rows_shown_in_their_order(run, tmp_path):
    binary = chromium_or_skip()
    page = write(run, tmp_path / "verdicts.html")
    # The button's download, caught: the Blob it hands to URL.createObjectURL, read as text.
    catch = ("(() => { window.caught = null; const make = URL.createObjectURL; "
             "URL.createObjectURL = blob => { window.caught = blob; return make(blob); }; "
             "document.getElementById('export').click(); return window.caught.text(); })()")
    with Chromium(binary) as browser:
        browser.open(page)
        set_filter(browser, "f-dataset", "recon")
        set_filter(browser, "f-judge", "Judge B")
        click_header(browser, "check")
        rows = list(csv.DictReader(io.StringIO(browser.evaluate(catch))))
        assert browser.evaluate("window.caught.type") == "text/csv;charset=utf-8"
        assert list(rows[0]) == ["study", "dataset", "item_id", "label", "rubric", "check",
                                 "rendering", "judge", "sample", "verdict", "votes",
                                 "disagreement", "answer", "cache_key"]
        expected = rows_where(run.table, dataset="recon", judge=JUDGE_B)
        assert len(rows) == len(expected) == browser.evaluate(VISIBLE) == 8
        assert [r["check"] for r in rows] == column_of(browser, "check")
        assert [r["check"] for r in rows] == sorted(expected.check)
        assert {r["judge"] for r in rows} == {"Judge B"}
        for r in rows:
            assert r["answer"] == run.texts[r["cache_key"]]
        # a text with a comma, a quote and a line break survives the round trip
        aio = [r for r in rows if r["rendering"] == "all_in_one"]
        assert aio and all(r["answer"] == AIO_ANSWER for r in aio)
        assert not browser.errors, browser.errors


def test_filters_appear_only_where_they_can_match(run, tmp_path):
    binary = chromium_or_skip()
    table = run.table
    one_judge = table[table.judge == JUDGE_A]
    present = "(id => document.getElementById(id) !== null)"
    options = ("[...document.querySelectorAll('#f-disagree option')].map(o => o.value)")
    with Chromium(binary) as browser:
        # two judges: "judges disagree" is offered and matches
        browser.open(write(run, tmp_path / "two.html"))
        assert "judges" in browser.evaluate(options)
        assert set_filter(browser, "f-disagree", "judges") == \
            table.disagreement.str.contains("judges").sum() > 0
        # one judge: no judge filter, no "judges disagree" (even where the rows still carry the
        # marks of a comparison with a judge no longer in the table)
        browser.open(write(run, tmp_path / "one.html", one_judge))
        assert browser.evaluate(f"{present}('f-judge')") is False
        assert browser.evaluate(options) == ["", "any", "renderings", "votes"]
        # one study, no disagreement, nothing unparseable: only the search is left
        calm = one_judge[(one_judge.study == "carry fig2") & (one_judge.item_id == "s2")
                         & (one_judge.verdict != "unparseable")]
        browser.open(write(run, tmp_path / "calm.html", calm))
        assert [browser.evaluate(f"{present}('{f}')") for f in
                ("f-study", "f-dataset", "f-judge", "f-unparseable", "f-disagree", "f-search")] \
            == [False, False, False, False, False, True]
        assert browser.evaluate(VISIBLE) == len(calm) == 2
        assert not browser.errors, browser.errors


def test_without_chromium_the_browser_tests_skip_saying_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RUBRICLAB_CHROMIUM", str(tmp_path / "no-such-chromium"))
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        chromium_or_skip()
