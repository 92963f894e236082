"""The verdict browser (rubriclab.browser): tidy rows from each verdict table, disagreements,
answers looked up in a real call cache, and the page itself in a headless chromium."""

import json
import re

import pandas as pd
import pytest

from rubriclab import browser as B
from rubriclab.llm import Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.request import cache_key

from .headless_chromium import OUTPUT, Chromium, chromium_or_skip


def stored(cache: SQLiteCache, prompt: str, text: str | None) -> str:
    """The key of a request for `prompt`; its answer `text` stored in the cache (None: an
    answer that never parsed, so nothing is stored)."""
    request = Request.chat("fake/hash", [{"role": "user", "content": prompt}])
    key = cache_key(request, "fixture")
    if text is not None:
        cache.put(make_answer(key, request, text, 10, 1, 0.0, "fixture"))
    return key


@pytest.fixture
def run(tmp_path):
    """Tiny verdict tables of each kind and the cache holding their answers."""
    cache = SQLiteCache(tmp_path / "llm_cache.sqlite")

    def key(prompt, text):
        return stored(cache, prompt, text)

    # carry Figure 2 on one item, one run: checks c1 (yes), c2 (no); the paragraph of both says
    # yes (the renderings disagree); a second item with an unparseable paragraph.
    fig2 = pd.DataFrame([
        dict(item_id="s1", label="flawed", run=0, rendering="per_check", length=1, check_id="c1",
             verdict="yes", cache_key=key("s1 c1", "Yes")),
        dict(item_id="s1", label="flawed", run=0, rendering="per_check", length=2, check_id="c2",
             verdict="no", cache_key=key("s1 c2", "No.")),
        dict(item_id="s1", label="flawed", run=0, rendering="paragraph", length=2, check_id="",
             verdict="yes", cache_key=key("s1 p2", "Yes")),
        dict(item_id="s2", label="correct", run=0, rendering="per_check", length=1,
             check_id="c1", verdict="yes", cache_key=key("s2 c1", "Yes")),
        dict(item_id="s2", label="correct", run=0, rendering="per_check", length=2,
             check_id="c2", verdict="yes", cache_key=key("s2 c2", "Yes")),
        dict(item_id="s2", label="correct", run=0, rendering="paragraph", length=2,
             check_id="", verdict="unparseable", cache_key=key("s2 p2", None)),
    ])
    # carry judged, two judges on one Recon item, 2 votes: judge A says yes/yes to check X,
    # judge B no/no (the judges disagree); A's votes on Y split; A's all_in_one of the hand
    # rubric (X, Y) says pass while its check-by-check vote 1 fails Y.
    def judged(answers, all_in_one):
        rows = []
        for vote in (0, 1):
            for text, votes in answers.items():
                rows.append(dict(item_id="r1", kind="check", scope="e1", source="",
                                 rendering="per_check", check_text=text, vote=vote,
                                 answer=votes[vote], cache_key=key(f"{text} {votes} {vote}",
                                                                   votes[vote].title())))
            rows.append(dict(item_id="r1", kind="rendering", scope="e1", source="hand",
                             rendering="all_in_one", check_text="", vote=vote,
                             answer=all_in_one[vote],
                             cache_key=key(f"aio {all_in_one} {vote}", '["yes", "yes"]')))
        return pd.DataFrame(rows)
    judge_a = judged({"X holds.": ["yes", "yes"], "Y holds.": ["yes", "no"],
                      "Z proposed.": ["yes", "yes"]}, ["pass", "pass"])
    judge_b = judged({"X holds.": ["no", "no"], "Y holds.": ["yes", "yes"],
                      "Z proposed.": ["yes", "yes"]}, ["fail", "fail"])
    items = pd.DataFrame([dict(item_id="r1", label="correct")])
    starts = {"hand": {"e1": ["X holds.", "Y holds."]}, "label": {"all": ["Y holds."]}}
    # transfer: one response on the expert rubric, 2 criteria, 3 votes (one vote unparseable).
    votes = [key("t v0", "[1, 0]"), key("t v1", "[1, 1]"), key("t v2", None)]
    transfer = pd.DataFrame([
        dict(example_id="e1", response_id="e1|original|m|0", rubric="expert", criterion_index=i,
             verdict=v, votes_yes=y, votes=3, cache_keys=" ".join(votes))
        for i, (v, y) in enumerate([(1, 2), (-1, 1)])])
    ledger = pd.DataFrame([dict(key=votes[2], outcome="unparseable",
                                error="expected a list of 2 scores, got 'I am not sure'"),
                           dict(key=fig2.cache_key[5], outcome="unparseable",
                                error="expected exactly 'Yes' or 'No', got 'Perhaps'")])
    table = B.disagreements(pd.concat([
        B.fig2_rows(fig2, "carry fig2", "summedits", "fake/a", {"c1": "Is it faithful?"}),
        B.carry_rows(judge_a, "recon", "fake/a", items, starts),
        B.carry_rows(judge_b, "recon", "fake/b", items, starts),
        B.transfer_rows(transfer, "original-m", "fake/a"),
    ]))
    keys = B.keys_of(table)
    texts = B.answer_texts(keys, cache)
    notes = B.ledger_errors(ledger, keys)
    cache.close()
    return table, texts, notes


def rows_where(table, **values):
    mask = pd.Series(True, index=table.index)
    for column, value in values.items():
        mask &= table[column] == value
    return table[mask]


def test_tidy_rows_of_each_table(run):
    table, _, _ = run
    assert list(table.columns) == B.TIDY_COLUMNS
    assert len(table) == 6 + 2 * 8 + 2
    fig2 = rows_where(table, study="carry fig2")
    assert fig2.check.tolist()[:2] == ["c1: Is it faithful?", "c2"]  # c2 has no text given
    assert set(fig2.rubric) == {"generic", "generic, first 2 checks"}
    carry = rows_where(table, study="carry", judge="fake/a")
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
    table, _, _ = run
    marked = {(r.study, r.judge, r.item_id, r.check, r.rendering, r.sample): r.disagreement
              for r in table.itertuples()}
    # fig2 s1: c1 yes + c2 no fail together; the paragraph said yes
    for check, rendering in (("c1: Is it faithful?", "per_check"), ("c2", "per_check"),
                             ("", "paragraph")):
        assert marked[("carry fig2", "fake/a", "s1", check, rendering, "0")] == "renderings"
    # s2's paragraph never parsed: nothing to compare, nothing marked
    assert set(rows_where(table, item_id="s2").disagreement) == {""}
    # carry: X, yes by judge a and no by judge b, both votes
    for judge in ("fake/a", "fake/b"):
        for vote in "01":
            assert "judges" in marked[("carry", judge, "r1", "X holds.", "per_check", vote)]
    assert "judges" not in marked[("carry", "fake/a", "r1", "Z proposed.", "per_check", "0")]
    # judge a's all_in_one says pass on both votes; check by check, vote 1 fails (Y: no)
    assert "renderings" in marked[("carry", "fake/a", "r1", "", "all_in_one", "1")]
    assert "renderings" not in marked[("carry", "fake/a", "r1", "", "all_in_one", "0")]
    assert "votes" in marked[("carry", "fake/a", "r1", "Y holds.", "per_check", "0")]
    # judge b: fails X, so fails the rubric, as its all_in_one says
    assert "renderings" not in marked[("carry", "fake/b", "r1", "", "all_in_one", "0")]
    # transfer: criterion 0's votes split 2 of 3 yes; criterion 1's 1 yes 1 no, 1 unparseable
    assert rows_where(table, study="transfer").disagreement.tolist() == ["votes", "votes"]


def test_answers_are_the_cached_texts_and_unparseable_ones_the_ledger_s(run):
    table, texts, notes = run
    fig2 = rows_where(table, study="carry fig2")
    assert [texts.get(k) for k in fig2.cache_key] == ["Yes", "No.", "Yes", "Yes", "Yes", None]
    assert notes[fig2.cache_key.iloc[5]] == ("unparseable: expected exactly 'Yes' or 'No', got "
                                             "'Perhaps'")
    keys = rows_where(table, study="transfer").cache_key.iloc[0].split()
    assert [texts.get(k) for k in keys] == ["[1, 0]", "[1, 1]", None]
    assert "I am not sure" in notes[keys[2]]


def test_a_table_without_cache_keys_is_refused_naming_the_file():
    old = pd.DataFrame(columns=["item_id", "label", "run", "rendering", "length", "check_id",
                                "verdict"])
    with pytest.raises(ValueError, match=r"results/x\.csv: .*missing column\(s\) \['cache_key'\]"):
        B.fig2_rows(old, "carry fig2", "summedits", "j", where="results/x.csv")


def test_page_holds_the_data_and_nothing_that_ends_its_script_early(run):
    table, texts, notes = run
    texts = {**texts, B.keys_of(table)[0]: "</script><script>alert(1)</script>"}
    page = B.page_html(table, texts, notes, title="Verdicts <of> run", subtitle="smoke")
    assert page.count("</script>") == 2  # the data's and the code's
    assert "Verdicts &lt;of&gt; run" in page and "http://" not in page and "https://" not in page
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                page, re.S).group(1))
    assert data["n"] == len(table)
    column = data["columns"]["check"]
    assert [column["values"][c] for c in column["codes"]] == table.check.tolist()
    assert data["texts"][B.keys_of(table)[0]].startswith("</script>")


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


def test_the_page_loads_and_filters_in_headless_chromium(run, tmp_path):
    binary = chromium_or_skip()
    table, texts, notes = run
    page = tmp_path / "verdicts.html"
    B.write_page(page, table, texts, notes, title="Verdicts", subtitle="fixture")
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
        assert set_filter(browser, "f-judge", "fake/b") == 8
        # judge b against a: X on both votes, Y on vote 1, the all_in_one on both votes
        assert set_filter(browser, "f-disagree", "judges") == len(rows_where(
            table, dataset="recon", judge="fake/b")[lambda t: t.disagreement.str.contains(
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
        assert set_filter(browser, "f-search", "") == 24
        browser.screenshot(screenshot)
        assert not browser.errors, browser.errors
    assert screenshot.read_bytes()[:4] == b"\x89PNG", f"screenshot at {screenshot}"
    print(f"screenshot: {screenshot}")


def test_without_chromium_the_browser_tests_skip_saying_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RUBRICLAB_CHROMIUM", str(tmp_path / "no-such-chromium"))
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        chromium_or_skip()
