"""The verdict browser: one self-contained HTML page of every judge verdict of a run.

Each verdict table of the run (carry Figure 2 and verify's judge labels: one row per request;
carry's judged tables: one row per vote; transfer's: one row per criterion, its votes tallied)
becomes rows of one tidy table (`TIDY_COLUMNS`): per study, dataset, item, rubric and check, the
judge, the rendering, the sample (run or vote), the verdict, the label, the votes and the cache
key(s) of the answer. The raw answer and the prompt that asked for it are looked up in the call
cache by that key (`cached_answers`: the answer's text and its stored request), never copied
from anywhere else; an answer that never parsed is not cached, so its row shows what the ledger
recorded of it (`ledger_errors`). The item's texts come from the run's item tables
(`item_texts`). `disagreements` marks where two judges, two renderings of one rubric, or the
votes of one question differ. `page_html` writes the page (resources/verdict_browser.html): the
data inline as JSON, models by their display names, filters, sorting and CSV export in inline
JavaScript, no server and no network.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from .labels import ModelLabels

TIDY_COLUMNS = ["study", "dataset", "judge", "item_id", "label", "rubric", "check", "rendering",
                "sample", "verdict", "votes", "cache_key", "disagreement"]
# What a verdict says of the output, to compare verdicts of different formats.
_OUTCOME = {"yes": "pass", "pass": "pass", "1": "pass", "no": "fail", "fail": "fail", "0": "fail"}
UNPARSEABLE = "unparseable"
DISAGREEMENTS = ("judges", "renderings", "votes")
Prompt = tuple[tuple[str, str], ...]  # (role, content) per message
ItemRef = tuple[str, str]  # (dataset, item id)
Fields = tuple[tuple[str, str], ...]  # (field, text) per text of an item


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


# --- the answers' texts, their prompts and the items ------------------------------------------

def keys_of(table: pd.DataFrame) -> list[str]:
    """Every cache key of the table's rows (a row may hold several, space-separated)."""
    return sorted({k for cell in table["cache_key"] for k in str(cell).split() if k})


def cached_answers(keys: Iterable[str], cache) -> tuple[dict[str, str], dict[str, Prompt]]:
    """(key -> the cached answer's text, key -> the prompt of its cached request: (role,
    content) per message), for the keys the cache (llm.storage.open_cache, SQLite or
    PostgreSQL) holds. The request is the one the model layer keyed and stored with the answer
    (`CachedAnswer.request_json`), so the prompt shown is the prompt sent."""
    texts: dict[str, str] = {}
    prompts: dict[str, Prompt] = {}
    for key in keys:
        hit = cache.get(key)
        if hit is None:
            continue
        texts[key] = hit.text
        try:
            messages = json.loads(hit.request_json)["messages"]
            prompts[key] = tuple((str(m["role"]), str(m["content"])) for m in messages)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"the call cache's entry {key}: its stored request is not a "
                             f"request of this release ({exc!r})") from exc
    return texts, prompts


def answer_texts(keys: Iterable[str], cache) -> dict[str, str]:
    """key -> the cached answer's text, for the keys the cache holds."""
    return cached_answers(keys, cache)[0]


def ledger_errors(ledger: pd.DataFrame, keys: Iterable[str]) -> dict[str, str]:
    """key -> what the ledger recorded of the last answer that did not parse or failed (the
    cache keeps no such answer)."""
    wanted = set(keys)
    rows = ledger[ledger["key"].isin(wanted) & (ledger["outcome"] != "ok")]
    return {key: f"{outcome_}: {error}" for key, outcome_, error in
            zip(rows["key"], rows["outcome"], rows["error"].fillna(""))}


def item_texts(items: pd.DataFrame, dataset: str, fields: Sequence[str] = ("task", "output"),
               id_column: str = "item_id", where: str = "item table") -> dict[ItemRef, Fields]:
    """(dataset, item id) -> the item's texts ((field, text) per field that is not empty), from
    a table of items (data/prepared, carry's items; transfer's responses: ('text',) by
    'response_id')."""
    _require(items, [id_column, *fields], where)
    out: dict[ItemRef, Fields] = {}
    for row in items[[id_column, *fields]].astype(str).itertuples(index=False):
        out[(dataset, row[0])] = tuple((f, t) for f, t in zip(fields, row[1:]) if t.strip())
    return out


def add_items(into: dict[ItemRef, Fields], items: Mapping[ItemRef, Fields], where: str) -> None:
    """Add `items` (item_texts) to `into`; an item given two different texts is an error."""
    for ref, fields in items.items():
        if into.setdefault(ref, fields) != fields:
            raise ValueError(f"{where}: item {ref[1]!r} of {ref[0]} has other texts than the "
                             "same item in an item table read before it")


# --- the page -----------------------------------------------------------------------------------

# A text of an item at least this long is stored once and referred to from every prompt
# quoting it (a prompt is mostly its item's texts and a template shared by many prompts).
_SHARED_TEXT_MIN = 32
_LABELLED = ("judge", "rubric", "item_id")  # columns whose model strings read as display names


class _Strings:
    """Each distinct string once; the page refers to them by index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def values(self) -> list[str]:
        return list(self.index)


def _segments(content: str, shared: Sequence[str]) -> list[str]:
    """`content` cut around each occurrence of the `shared` texts (longest first)."""
    segments, whole = [content], set[str]()
    for text in sorted(set(shared), key=len, reverse=True):
        if len(text) < _SHARED_TEXT_MIN:
            continue
        cut: list[str] = []
        for segment in segments:
            if segment in whole or text not in segment:
                cut.append(segment)
                continue
            for n, piece in enumerate(segment.split(text)):
                if n:
                    cut.append(text)
                if piece:
                    cut.append(piece)
        segments, whole = cut, whole | {text}
    return segments


def _display(labels: Mapping[str, str] | None) -> Callable[[str], str]:
    """A model string's display name (labels, else ModelLabels' default) and any other value
    as it is; an id made of '|'-separated parts (transfer's responses) part by part."""
    named, default = dict(labels or {}), ModelLabels()

    def one(value: str) -> str:
        return named.get(value) or default(value)

    def shown(value: str) -> str:
        return one(value) if value in named else "|".join(one(p) for p in value.split("|"))
    return shown


def display_name(value: str, labels: Mapping[str, str] | None = None) -> str:
    """How the page shows a model string (or an id holding model strings): see _display."""
    return _display(labels)(str(value))


def page_data(table: pd.DataFrame, texts: Mapping[str, str], notes: Mapping[str, str],
              prompts: Mapping[str, Prompt] | None = None,
              items: Mapping[ItemRef, Fields] | None = None,
              labels: Mapping[str, str] | None = None,
              uncached: Mapping[str, str] | None = None) -> dict:
    """The page's data: columns of the tidy table dictionary-encoded (each column its
    distinct values and one index per row), judges, rubrics and items by their display names
    (`labels`: model string -> display name); the answers by key; every longer text once in
    `strings`: each item's texts (by dataset and shown item id) and each key's prompt (role
    and content per message, a content as the strings it is made of, its item's texts among
    them); `uncached`: judge -> what a row says of an answer the cache does not hold."""
    missing = [c for c in TIDY_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"page_data: the table lacks column(s) {missing}")
    shown = _display(labels)
    strings = _Strings()
    columns = {}
    for column in TIDY_COLUMNS:
        values = table[column].astype(str)
        codes, uniques = pd.factorize(values, sort=False)
        names = [shown(str(u)) if column in _LABELLED else str(u) for u in uniques]
        columns[column] = {"values": names, "codes": codes.tolist()}
    item_of: dict[str, ItemRef] = {}
    for dataset, item, cell in zip(table["dataset"].astype(str), table["item_id"].astype(str),
                                   table["cache_key"].astype(str)):
        for key in cell.split():
            item_of.setdefault(key, (dataset, item))
    items, prompts = dict(items or {}), dict(prompts or {})
    in_table = set(zip(table["dataset"].astype(str), table["item_id"].astype(str)))
    page_items = {f"{dataset}\u001f{shown(item)}": [[strings(f), strings(t)] for f, t in fields]
                  for (dataset, item), fields in items.items() if (dataset, item) in in_table}
    page_prompts = {}
    for key in sorted(item_of):
        if key in prompts:
            quoted = [t for _, t in items.get(item_of[key], ())]
            page_prompts[key] = [[strings(role), [strings(s) for s in _segments(content, quoted)]]
                                 for role, content in prompts[key]]
    return {"n": len(table), "columns": columns,
            "texts": {k: v for k, v in texts.items() if k in item_of},
            "notes": {k: v for k, v in notes.items() if k in item_of},
            "items": page_items, "prompts": page_prompts, "strings": strings.values(),
            "uncached": {shown(j): note for j, note in (uncached or {}).items()}}


def machine_paths(run: str | Path, cache_dir: str | Path | None = None) -> dict[str, str]:
    """The folders of this machine a page must not name -> how it names them instead: the
    run's folder (its paths read relative to it), the cache's folder and the home folder."""
    named = {str(Path(run).resolve()): "", str(Path.home()): "~"}
    if cache_dir is not None:
        named[str(Path(cache_dir).expanduser().resolve())] = "<cache>"
    return named


def _hide_paths(text: str, paths: Mapping[str, str]) -> str:
    """`text` with each folder of `paths` (longest first) replaced by its name: "<run>/a/b"
    reads "a/b", "<home>/x" "~/x"; a folder "/x" is not taken for the start of "/xy". The root
    folder "/" is never replaced."""
    for folder in sorted(paths, key=len, reverse=True):
        if len(Path(folder).parts) < 2:
            continue
        name, escaped = paths[folder], re.escape(folder)
        inside, itself = (f"{name}/" if name else ""), (name or ".")
        text = re.sub(escaped + "/", lambda _: inside, text)
        text = re.sub(escaped + r"(?![\w.-])", lambda _: itself, text)
    return text


def page_html(table: pd.DataFrame, texts: Mapping[str, str], notes: Mapping[str, str] | None = None,
              title: str = "Verdicts", subtitle: str = "",
              paths: Mapping[str, str] | None = None, **data: Any) -> str:
    """The self-contained page (inline CSS, JavaScript and data); `paths`: folders of this
    machine that no text of the page may name (machine_paths; default: the current folder's
    and the home folder's); `data`: page_data's prompts, items, labels and uncached."""
    paths = machine_paths(Path.cwd()) if paths is None else paths
    encoded = json.dumps(page_data(table, texts, notes or {}, **data), ensure_ascii=False,
                         separators=(",", ":"))
    encoded, subtitle = _hide_paths(encoded, paths), _hide_paths(subtitle, paths)
    # In a <script> element only "</" could end it early; JSON allows "<" as \u003c. U+2028
    # and U+2029 are escaped too, for any reader that takes the data for JavaScript.
    encoded = (encoded.replace("<", "\\u003c").replace("\u2028", "\\u2028")
               .replace("\u2029", "\\u2029"))
    template = resources.files("rubriclab").joinpath(_TEMPLATE).read_text(encoding="utf-8")
    return (template.replace("@TITLE@", html.escape(_hide_paths(title, paths)))
            .replace("@SUBTITLE@", html.escape(subtitle))
            .replace("@DATA@", encoded))


def write_page(path: Path, table: pd.DataFrame, texts: Mapping[str, str],
               notes: Mapping[str, str] | None = None, title: str = "Verdicts",
               subtitle: str = "", paths: Mapping[str, str] | None = None, **data: Any) -> None:
    Path(path).write_text(page_html(table, texts, notes, title, subtitle, paths, **data),
                          encoding="utf-8")


_PAGE_DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


def read_page_table(page: str, columns: Sequence[str]) -> pd.DataFrame:
    """The tidy table's `columns` (as strings, models by their display names) back from a page
    page_html wrote. ValueError when the page holds no data or not those columns."""
    match = _PAGE_DATA.search(page)
    if match is None:
        raise ValueError("holds no verdict data")
    try:
        stored = json.loads(match.group(1))["columns"]
        return pd.DataFrame({c: [str(stored[c]["values"][i]) for i in stored[c]["codes"]]
                             for c in columns}, dtype=str)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"its verdict data is not a tidy verdict table "
                         f"({', '.join(TIDY_COLUMNS)}): {exc!r}") from None


# The page: its markup, style and code (data goes in at @DATA@).
_TEMPLATE = "resources/verdict_browser.html"
