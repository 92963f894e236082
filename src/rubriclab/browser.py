"""The verdict browser: one self-contained HTML page of every judge verdict of a run.

Each verdict table of the run (carry Figure 2 and verify's judge labels: one row per request;
carry's judged tables: one row per vote; transfer's: one row per criterion, its votes tallied)
becomes rows of one tidy table (`TIDY_COLUMNS`): per study, dataset, item, rubric and check, the
judge, the rendering, the sample (run or vote), the verdict, the label, the votes and the cache
key(s) of the answer. The raw answer text is looked up in the call cache by that key
(`answer_texts`), never copied from anywhere else; an answer that never parsed is not cached, so
its row shows what the ledger recorded of it (`ledger_errors`). `disagreements` marks where two
judges, two renderings of one rubric, or the votes of one question differ. `page_html` writes
the page: the data inline as JSON, with filters in inline JavaScript, no server and no network.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

TIDY_COLUMNS = ["study", "dataset", "judge", "item_id", "label", "rubric", "check", "rendering",
                "sample", "verdict", "votes", "cache_key", "disagreement"]
# What a verdict says of the output, to compare verdicts of different formats.
_OUTCOME = {"yes": "pass", "pass": "pass", "1": "pass", "no": "fail", "fail": "fail", "0": "fail"}
UNPARSEABLE = "unparseable"
DISAGREEMENTS = ("judges", "renderings", "votes")


def _require(table: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{where}: not a verdict table of this release, missing column(s) "
                         f"{missing} (a table written before verdicts kept their cache key? "
                         "rerun its judging rule)")


def outcome(verdict: object) -> str:
    """'pass', 'fail' or '' (unparseable, undetermined) of a verdict of any table."""
    return _OUTCOME.get(str(verdict).strip().lower(), "")


def _tally(table: pd.DataFrame, group: list[str]) -> pd.Series:
    """Per row: the verdicts of its group (its samples), e.g. 'yes 2 · no 1'."""
    def describe(verdicts: pd.Series) -> str:
        counts = verdicts.astype(str).value_counts()
        return " · ".join(f"{v} {n}" for v, n in sorted(counts.items()))
    return table.groupby(group, sort=False)["verdict"].transform(describe)


# --- verdict tables -> tidy rows ----------------------------------------------------------------

def fig2_rows(verdicts: pd.DataFrame, study: str, dataset: str, judge: str,
              check_texts: Mapping[str, str] | None = None, checklist: str = "generic",
              where: str = "verdict table") -> pd.DataFrame:
    """Rows of a carry Figure 2 or verify judge-labels table (carry.judge_fig2): per_check rows
    are one check of the checklist (their `length` is its position), paragraph rows the first
    `length` checks in one call."""
    _require(verdicts, ["item_id", "label", "run", "rendering", "length", "check_id", "verdict",
                        "cache_key"], where)
    verdicts = verdicts.reset_index(drop=True)
    texts = dict(check_texts or {})
    per_check = verdicts["rendering"] == "per_check"
    out = pd.DataFrame({
        "study": study, "dataset": dataset, "judge": judge,
        "item_id": verdicts["item_id"].astype(str), "label": verdicts["label"].astype(str),
        "rubric": [checklist if p else f"{checklist}, first {n} checks"
                   for p, n in zip(per_check, verdicts["length"])],
        "check": [f"{c}: {texts[c]}" if p and c in texts else (str(c) if p else "")
                  for p, c in zip(per_check, verdicts["check_id"])],
        "rendering": verdicts["rendering"].astype(str),
        "sample": verdicts["run"].astype(str),
        "verdict": verdicts["verdict"].astype(str),
        "cache_key": verdicts["cache_key"].astype(str),
    })
    out["votes"] = _tally(out, ["item_id", "rubric", "check", "rendering"])
    out["disagreement"] = ""
    # Renderings: the first L per-check verdicts, all must pass, against the paragraph of L.
    lengths = pd.to_numeric(verdicts["length"])
    flagged: set[int] = set()
    for (item, run), group in out.assign(_length=lengths.to_numpy()).groupby(
            ["item_id", "sample"], sort=False):
        checks = group[group["rendering"] == "per_check"]
        for index, paragraph in group[group["rendering"] == "paragraph"].iterrows():
            covered = checks[checks["_length"] <= paragraph["_length"]]
            if covered.empty:
                continue
            combined = _all_must_pass(covered["verdict"])
            said = outcome(paragraph["verdict"])
            if combined and said and combined != said:
                flagged |= {index, *covered.index}
    _mark(out, flagged, "renderings")
    _mark_votes(out, ["item_id", "rubric", "check", "rendering"])
    return out[TIDY_COLUMNS]


def carry_rows(verdicts: pd.DataFrame, dataset: str, judge: str, items: pd.DataFrame,
               starts: Mapping[str, Mapping[str, Sequence[str]]],
               where: str = "verdict table") -> pd.DataFrame:
    """Rows of a carry judged table (carry.experiment.verdict_rows): one per vote. `items`: the
    carry item table (item_id, label); `starts`: source -> scope -> the check texts of the
    start rubric of that scope ('all' for every scope). A check row's rubric names the start
    rubrics holding its text (a text only a revision proposed: 'revisions')."""
    _require(verdicts, ["item_id", "kind", "scope", "source", "rendering", "check_text", "vote",
                        "answer", "cache_key"], where)
    verdicts = verdicts.reset_index(drop=True)
    labels = dict(zip(items["item_id"].astype(str), items["label"].astype(str)))

    def texts_of(source: str, scope: str) -> Sequence[str]:
        scoped = starts.get(source, {})
        return scoped.get(scope, scoped.get("all", ()))

    def rubric(row) -> str:
        if row.kind != "check":
            return str(row.source)
        holding = [s for s in starts if row.check_text in texts_of(s, row.scope)]
        return ", ".join(holding) or "revisions"

    out = pd.DataFrame({
        "study": "carry", "dataset": dataset, "judge": judge,
        "item_id": verdicts["item_id"].astype(str),
        "label": [labels.get(str(i), "") for i in verdicts["item_id"]],
        "rubric": [rubric(r) for r in verdicts.itertuples(index=False)],
        "check": verdicts["check_text"].astype(str),
        "rendering": verdicts["rendering"].astype(str),
        "sample": verdicts["vote"].astype(str),
        "verdict": verdicts["answer"].astype(str),
        "cache_key": verdicts["cache_key"].astype(str),
    })
    out["votes"] = _tally(out, ["item_id", "rubric", "check", "rendering"])
    out["disagreement"] = ""
    # Renderings: a one-call rendering of a source's rubric against that rubric's checks judged
    # one by one (all must pass), item by item and vote by vote.
    flagged: set[int] = set()
    scopes = dict(zip(verdicts.index, verdicts["scope"].astype(str)))
    for (item, vote), group in out.groupby(["item_id", "sample"], sort=False):
        checks = group[group["rendering"] == "per_check"]
        by_text = dict(zip(checks["check"], checks.index))
        for index, rendered in group[group["rendering"] != "per_check"].iterrows():
            texts = texts_of(rendered["rubric"], scopes[index])
            covered = [by_text[t] for t in texts if t in by_text]
            if not covered or len(covered) < len(texts):
                continue
            combined = _all_must_pass(out.loc[covered, "verdict"])
            said = outcome(rendered["verdict"])
            if combined and said and combined != said:
                flagged |= {index, *covered}
    _mark(out, flagged, "renderings")
    _mark_votes(out, ["item_id", "rubric", "check", "rendering"])
    return out[TIDY_COLUMNS]


def transfer_rows(verdicts: pd.DataFrame, responses: str, judge: str,
                  where: str = "verdict table") -> pd.DataFrame:
    """Rows of a transfer verdict table (transfer.pipeline.judge_responses): one per
    criterion, its votes tallied; the label is the kind of response (the table's name up to
    its first '-': physician, original, degraded, interventions)."""
    _require(verdicts, ["example_id", "response_id", "rubric", "criterion_index", "verdict",
                        "votes_yes", "votes", "cache_keys"], where)
    verdicts = verdicts.reset_index(drop=True)
    verdict = verdicts["verdict"].astype(int).map({1: "pass", 0: "fail"}).fillna("undetermined")
    out = pd.DataFrame({
        "study": "transfer", "dataset": "healthbench", "judge": judge,
        "item_id": verdicts["response_id"].astype(str), "label": responses.split("-")[0],
        "rubric": verdicts["rubric"].astype(str),
        "check": [f"criterion {int(i)}" for i in verdicts["criterion_index"]],
        "rendering": "all criteria in one call", "sample": "",
        "verdict": verdict,
        "votes": [f"yes {int(y)} of {int(n)}" for y, n in zip(verdicts["votes_yes"],
                                                              verdicts["votes"])],
        "cache_key": verdicts["cache_keys"].astype(str),
        "disagreement": [
            "votes" if 0 < int(y) < int(n) else "" for y, n in zip(verdicts["votes_yes"],
                                                                  verdicts["votes"])],
    })
    return out[TIDY_COLUMNS]


def _all_must_pass(verdicts: pd.Series) -> str:
    outcomes = [outcome(v) for v in verdicts]
    if "fail" in outcomes:
        return "fail"
    return "pass" if outcomes and all(o == "pass" for o in outcomes) else ""


def _mark(table: pd.DataFrame, rows: Iterable, what: str) -> None:
    rows = list(rows)
    if rows:
        table.loc[rows, "disagreement"] = [
            f"{old}, {what}" if old and what not in old.split(", ") else (old or what)
            for old in table.loc[rows, "disagreement"]]


def _mark_votes(table: pd.DataFrame, group: list[str]) -> None:
    """Questions asked more than once (votes, runs) whose parsed answers differ."""
    distinct = table.groupby(group, sort=False)["verdict"].transform(
        lambda v: len({outcome(x) for x in v} - {""}))
    _mark(table, table.index[distinct > 1], "votes")


def disagreements(table: pd.DataFrame) -> pd.DataFrame:
    """The tidy table with judge disagreements marked too: one question (study, dataset,
    item, rubric, check, rendering, sample) whose judges' parsed verdicts differ."""
    table = table.reset_index(drop=True).copy()
    question = ["study", "dataset", "item_id", "rubric", "check", "rendering", "sample"]
    outcomes = table["verdict"].map(outcome)
    grouped = table.assign(_outcome=outcomes).groupby(question, sort=False)
    judges = grouped["judge"].transform("nunique")
    distinct = grouped["_outcome"].transform(lambda o: len(set(o) - {""}))
    _mark(table, table.index[(judges > 1) & (distinct > 1)], "judges")
    return table


# --- the answers' texts -------------------------------------------------------------------------

def keys_of(table: pd.DataFrame) -> list[str]:
    """Every cache key of the table's rows (a row may hold several, space-separated)."""
    return sorted({k for cell in table["cache_key"] for k in str(cell).split() if k})


def answer_texts(keys: Iterable[str], cache) -> dict[str, str]:
    """key -> the cached answer's text, for the keys the cache (an llm.cache.SQLiteCache,
    e.g. SQLiteCache.read_only) holds."""
    texts = {}
    for key in keys:
        hit = cache.get(key)
        if hit is not None:
            texts[key] = hit.text
    return texts


def ledger_errors(ledger: pd.DataFrame, keys: Iterable[str]) -> dict[str, str]:
    """key -> what the ledger recorded of the last answer that did not parse or failed (the
    cache keeps no such answer)."""
    wanted = set(keys)
    rows = ledger[ledger["key"].isin(wanted) & (ledger["outcome"] != "ok")]
    return {key: f"{outcome_}: {error}" for key, outcome_, error in
            zip(rows["key"], rows["outcome"], rows["error"].fillna(""))}


# --- the page -----------------------------------------------------------------------------------

def page_data(table: pd.DataFrame, texts: Mapping[str, str],
              notes: Mapping[str, str]) -> dict:
    """The page's data: columns of the tidy table dictionary-encoded (each column its
    distinct values and one index per row), and the answers by key."""
    missing = [c for c in TIDY_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"page_data: the table lacks column(s) {missing}")
    columns = {}
    for column in TIDY_COLUMNS:
        values = table[column].astype(str)
        codes, uniques = pd.factorize(values, sort=False)
        columns[column] = {"values": [str(u) for u in uniques], "codes": codes.tolist()}
    keys = set(keys_of(table))
    return {"n": len(table), "columns": columns,
            "texts": {k: v for k, v in texts.items() if k in keys},
            "notes": {k: v for k, v in notes.items() if k in keys}}


def page_html(table: pd.DataFrame, texts: Mapping[str, str], notes: Mapping[str, str] | None = None,
              title: str = "Verdicts", subtitle: str = "") -> str:
    """The self-contained page (inline CSS, JavaScript and data)."""
    data = json.dumps(page_data(table, texts, notes or {}), ensure_ascii=False,
                      separators=(",", ":"))
    # In a <script> element only "</" could end it early; JSON allows "<" as \u003c.
    data = data.replace("<", "\\u003c")
    return (_TEMPLATE.replace("@TITLE@", html.escape(title))
            .replace("@SUBTITLE@", html.escape(subtitle))
            .replace("@DATA@", data))


def write_page(path: Path, table: pd.DataFrame, texts: Mapping[str, str],
               notes: Mapping[str, str] | None = None, title: str = "Verdicts",
               subtitle: str = "") -> None:
    Path(path).write_text(page_html(table, texts, notes, title, subtitle), encoding="utf-8")


_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1em 1.5em;color:#222}
h1{font-size:1.4em;margin:.2em 0}.sub{color:#555;margin:0 0 .8em}
#filters{display:flex;flex-wrap:wrap;gap:.6em 1.2em;align-items:center;padding:.6em;
 background:#f3f4f6;border-radius:6px;position:sticky;top:0;z-index:1}
#filters label{font-size:.9em}select,input[type=search]{font-size:.9em;padding:2px 4px}
#count{font-weight:600;margin:.6em 0}
table{border-collapse:collapse;width:100%;font-size:.85em}
th,td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#fafafa;position:sticky;top:3.2em}
tr.unparseable td.verdict{color:#b00020;font-weight:600}
tr.disagree{background:#fff7e0}
td.answer pre{margin:0;white-space:pre-wrap;max-height:9em;overflow:auto;font-size:.95em}
.note{color:#b00020;font-style:italic}.missing{color:#888;font-style:italic}
.key{font-family:monospace;font-size:.8em;color:#777}
button{font-size:.9em}
</style></head><body>
<h1>@TITLE@</h1><p class="sub">@SUBTITLE@</p>
<div id="filters">
<label>Study <select id="f-study"></select></label>
<label>Dataset <select id="f-dataset"></select></label>
<label>Judge <select id="f-judge"></select></label>
<label><input type="checkbox" id="f-unparseable"> unparseable only</label>
<label>Disagreement <select id="f-disagree">
 <option value="">all rows</option><option value="any">any disagreement</option>
 <option value="judges">judges disagree</option>
 <option value="renderings">renderings disagree</option>
 <option value="votes">votes disagree</option></select></label>
<label>Search <input type="search" id="f-search" placeholder="item, check, answer text"></label>
</div>
<div id="count"></div>
<table><thead><tr><th>study</th><th>dataset</th><th>item</th><th>label</th><th>rubric</th>
<th>check</th><th>rendering</th><th>judge</th><th>sample</th><th>verdict</th><th>votes</th>
<th>disagreement</th><th>raw answer</th></tr></thead><tbody id="rows"></tbody></table>
<p><button id="more">show more</button></p>
<script type="application/json" id="data">@DATA@</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const C = DATA.columns, N = DATA.n, PAGE = 300;
const val = (col, i) => C[col].values[C[col].codes[i]];
let shown = PAGE, matching = [];
function options(id, col) {
  const select = document.getElementById(id);
  const all = document.createElement("option"); all.value = ""; all.textContent = "all";
  select.appendChild(all);
  for (const v of [...C[col].values].sort()) {
    const o = document.createElement("option"); o.value = v; o.textContent = v;
    select.appendChild(o);
  }
}
options("f-study", "study"); options("f-dataset", "dataset"); options("f-judge", "judge");
function answerOf(i) {
  const keys = val("cache_key", i).split(" ").filter(k => k);
  return keys.map(k => ({key: k, text: DATA.texts[k], note: DATA.notes[k]}));
}
function searchable(i) {
  const parts = ["item_id", "label", "rubric", "check", "verdict", "judge"].map(c => val(c, i));
  for (const a of answerOf(i)) parts.push(a.text || "", a.note || "");
  return parts.join("\n").toLowerCase();
}
function filter() {
  const f = id => document.getElementById(id).value;
  const study = f("f-study"), dataset = f("f-dataset"), judge = f("f-judge");
  const disagree = f("f-disagree"), search = f("f-search").trim().toLowerCase();
  const unparseable = document.getElementById("f-unparseable").checked;
  matching = [];
  for (let i = 0; i < N; i++) {
    if (study && val("study", i) !== study) continue;
    if (dataset && val("dataset", i) !== dataset) continue;
    if (judge && val("judge", i) !== judge) continue;
    if (unparseable && val("verdict", i) !== "unparseable") continue;
    const d = val("disagreement", i);
    if (disagree === "any" && !d) continue;
    if (disagree && disagree !== "any" && !d.split(", ").includes(disagree)) continue;
    if (search && !searchable(i).includes(search)) continue;
    matching.push(i);
  }
  shown = PAGE; render();
}
function cell(tr, text, cls) {
  const td = document.createElement("td"); td.textContent = text;
  if (cls) td.className = cls; tr.appendChild(td); return td;
}
function render() {
  const body = document.getElementById("rows"); body.replaceChildren();
  for (const i of matching.slice(0, shown)) {
    const tr = document.createElement("tr");
    if (val("verdict", i) === "unparseable") tr.classList.add("unparseable");
    if (val("disagreement", i)) tr.classList.add("disagree");
    for (const c of ["study", "dataset", "item_id", "label", "rubric", "check", "rendering",
                     "judge", "sample"]) cell(tr, val(c, i));
    cell(tr, val("verdict", i), "verdict"); cell(tr, val("votes", i));
    cell(tr, val("disagreement", i));
    const td = cell(tr, "", "answer"), answers = answerOf(i);
    answers.forEach((a, n) => {
      const pre = document.createElement("pre");
      const prefix = answers.length > 1 ? "vote " + n + ": " : "";
      if (a.text !== undefined) pre.textContent = prefix + a.text;
      else if (a.note !== undefined) { pre.textContent = prefix + a.note; pre.className = "note"; }
      else {
        // A fake model's answers are kept only with llm.cache_fake_answers: true.
        pre.textContent = prefix + (String(val("judge", i)).startsWith("fake/")
          ? "(a fake model's answer: not cached unless llm.cache_fake_answers is true)"
          : "(not in the cache)");
        pre.className = "missing";
      }
      pre.title = "cache key " + a.key; td.appendChild(pre);
    });
    body.appendChild(tr);
  }
  document.getElementById("count").textContent =
    matching.length + " of " + N + " verdicts" +
    (matching.length > shown ? " (first " + shown + " shown)" : "");
  document.getElementById("more").style.display = matching.length > shown ? "" : "none";
}
for (const id of ["f-study", "f-dataset", "f-judge", "f-unparseable", "f-disagree"])
  document.getElementById(id).addEventListener("change", filter);
document.getElementById("f-search").addEventListener("input", filter);
document.getElementById("more").addEventListener("click", () => { shown += PAGE; render(); });
filter();
</script></body></html>
"""
