"""Load HealthBench (Arora et al., 2025) and draw the theme-stratified sample of the transfer work.

Three file formats are read:
- ``load_healthbench``: the original item schema of ``oss_eval`` and ``hard``, one JSON object
  per line with ``prompt_id``, ``prompt`` (the conversation), ``rubrics`` (``criterion``,
  ``points``, ``tags``), ``example_tags`` (exactly one ``theme:<name>``) and
  ``ideal_completions_data`` (null or an object with the physician-written
  ``ideal_completion``). The consensus file has the same fields (its rubrics hold only the
  cluster-level consensus criteria) and is read the same way. ``canary`` and any other field
  are ignored.
- ``load_srh_partial``: the mirror-only ``srh_subset_partial.jsonl``, a partial third-party
  copy whose rubric entries lost their tags (only ``criterion`` and ``points``), with a per-item
  ``theme`` instead of ``example_tags`` and no physician completion.
- ``load_hard_ids``: HealthBench-Hard membership, from the mirror-only
  ``hard_prompt_ids_known.json`` (a JSON array of prompt_ids) or from a ``hard.jsonl`` file
  in the item schema (its prompt_ids).

Both item loaders return one row per item with the columns ``COLUMNS``:
- ``item_id`` = ``healthbench:<prompt_id>``; ``dataset`` = ``healthbench``;
- ``theme`` without the ``theme:`` prefix;
- ``prompt_json``: the conversation, ``json.dumps`` of ``[{"role", "content"}, ...]``;
- ``task``: the conversation as text, one block per message, ``"<role>: <content>"``, blocks
  joined by a blank line (``"user: ...\\n\\nassistant: ...\\n\\nuser: ..."``), see ``render_task``;
- ``rubric_json``: ``json.dumps`` of ``[{"criterion", "points", "tags", "negative"}, ...]`` in
  file order, ``negative`` being ``points < 0`` (``tags`` is ``[]`` in the SRH file);
- ``n_criteria``, ``n_negative``; ``ideal_completion`` (physician-written text, or "") and
  ``has_ideal_completion`` (True when that text is not blank);
- ``rubric_tags_available``: True for the original schema, False for the SRH file;
- ``source_file`` (file name) and ``source_line`` (1-based).
Malformed rows raise DataFormatError naming file and line.

Duplicate prompt_ids (the consensus file repeats items of oss_eval with other rubrics): the
first occurrence, in the order of ``paths`` then of lines, is kept; every later one is
dropped and recorded in ``items.attrs["duplicates"]`` (a list of dicts with item_id,
prompt_id, theme, source_file, source_line and reason). ``sample_by_theme`` reads that list
(or its ``duplicates`` argument) and reports the dropped rows in ``left_out`` and in the
manifest. ``attrs`` do not survive a CSV round trip: load and sample in the same process, or
pass ``duplicates`` explicitly.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from rubriclab.data.errors import (
    DataFormatError,
    Fail,
    ensure_unique,
    failer,
    iter_json_lines,
    read_text,
    require_fields,
)
from rubriclab.data.summedits import iter_json_array

log = logging.getLogger("rubriclab.data.healthbench")

DATASET = "healthbench"
THEMES = (
    "communication", "complex_responses", "context_seeking", "emergency_referrals",
    "global_health", "health_data_tasks", "hedging",
)
SHORT_THEME_POLICIES = ("error", "take_all", "top_up")
COLUMNS = [
    "item_id", "prompt_id", "dataset", "theme", "prompt_json", "task", "rubric_json",
    "n_criteria", "n_negative", "ideal_completion", "has_ideal_completion",
    "rubric_tags_available", "source_file", "source_line",
]
LEFT_OUT_COLUMNS = ["item_id", "prompt_id", "theme", "pool", "source_file", "source_line", "reason"]
ROLES = ("system", "user", "assistant")
THEME_PREFIX = "theme:"

HARD_REASON = "in HealthBench-Hard"
NOT_SAMPLED = "not sampled"
DUPLICATE_PREFIX = "duplicate prompt_id"
FULL_ITEM_AVAILABLE = "full-format item available"
THEME_NOT_SHORT = "theme not short: no top-up needed"
THEME_NOT_SELECTED = "theme not selected: "
TOP_UP_STREAM = 1  # third SeedSequence word of the top-up stream (a trailing 0 would alias the main one)

SAMPLING_RULE = (
    "rows sorted by item_id; Hard ids left out; for each theme t, its eligible rows are ordered by "
    "numpy.random.default_rng([seed, zlib.crc32(t.encode('utf-8'))]).permutation(n_t) and the first "
    "per_theme are taken; top-up rows of t are ordered the same way with "
    "numpy.random.default_rng([seed, zlib.crc32(t.encode('utf-8')), 1])"
)


# --- loading -------------------------------------------------------------------------------

def load_healthbench(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per item of the original-schema files in ``paths`` (oss_eval, hard, consensus).

    A prompt_id seen before (in an earlier file or line) is dropped and recorded in
    ``items.attrs["duplicates"]``; see the module docstring.
    """
    return load_healthbench_tables((path, iter_json_lines(path)) for path in map(Path, paths))


def load_healthbench_tables(tables) -> pd.DataFrame:
    """``load_healthbench`` on already decoded tables: (source, [(row number, row)]), e.g. the
    splits of a Hugging Face dataset in the original item schema (rubriclab.data.hub)."""
    records: list[dict] = []
    duplicates: list[dict] = []
    first_seen: dict[str, tuple[str, int]] = {}
    for path, rows in tables:
        for line, row in rows:
            record = full_item_record(row, path, line)
            prompt_id = record["prompt_id"]
            if prompt_id in first_seen:
                first_file, first_line = first_seen[prompt_id]
                duplicates.append({
                    "item_id": record["item_id"], "prompt_id": prompt_id, "theme": record["theme"],
                    "source_file": record["source_file"], "source_line": line,
                    "reason": f"{DUPLICATE_PREFIX}, first in {first_file}, line {first_line}",
                })
                continue
            first_seen[prompt_id] = (path.name, line)
            records.append(record)
    items = pd.DataFrame.from_records(records, columns=COLUMNS)
    items.attrs["duplicates"] = duplicates
    if duplicates:
        log.info("healthbench: kept the first of %d duplicate prompt_ids", len(duplicates))
    return items


def load_srh_partial(path: str | Path) -> pd.DataFrame:
    """One row per item of ``srh_subset_partial.jsonl`` (rubrics without tags), columns ``COLUMNS``.

    ``rubric_tags_available`` is False, ``ideal_completion`` is "". A prompt_id repeated within
    the file raises DataFormatError.
    """
    path = Path(path)
    records = []
    first_seen: dict[str, tuple[str, int]] = {}
    for line, row in iter_json_lines(path):
        fail = failer(path, line)
        require_fields(row, ("prompt_id", "prompt", "rubrics", "theme"), fail)
        prompt_id = _prompt_id(row["prompt_id"], fail)
        conversation = _conversation(row["prompt"], fail)
        rubric = _rubric(row["rubrics"], fail, tags_required=False)
        theme = row["theme"]
        if not isinstance(theme, str) or not theme.strip():
            fail(f"field 'theme' must be a non-empty string, got {theme!r:.60}")
        record = _record(prompt_id, theme, conversation, rubric, "", False, path, line)
        ensure_unique(record["item_id"], path, line, first_seen)
        records.append(record)
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def load_hard_ids(paths: str | Path | Iterable[str | Path]) -> set[str]:
    """The HealthBench-Hard prompt_ids in one file or the union over several files.

    A file starting with ``[`` is a JSON array of prompt_id strings
    (``hard_prompt_ids_known.json``); one starting with ``{`` is JSON lines of items, as in
    ``hard.jsonl``, whose ``prompt_id`` fields are read (the rest of each item is not checked).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    ids: set[str] = set()
    for path in map(Path, paths):
        text = read_text(path)
        stripped = text.lstrip(" \t\r\n")
        if stripped.startswith("["):
            for line, value in iter_json_array(path, text):
                ids.add(_prompt_id(value, failer(path, line), what="a Hard id"))
        elif stripped.startswith("{"):
            for line, row in iter_json_lines(path, text):
                fail = failer(path, line)
                require_fields(row, ("prompt_id",), fail)
                ids.add(_prompt_id(row["prompt_id"], fail))
        else:
            line = text.count("\n", 0, len(text) - len(stripped)) + 1
            raise DataFormatError(path, line, "expected a JSON array of prompt_ids or JSON lines of items")
    return ids


def render_task(conversation: list[dict]) -> str:
    """The conversation as text: ``"<role>: <content>"`` per message, joined by a blank line."""
    return "\n\n".join(f"{message['role']}: {message['content']}" for message in conversation)


def full_item_record(row: Any, path: Path, line: int) -> dict:
    """Validate one original-schema item and map it to ``COLUMNS``."""
    fail = failer(path, line)
    require_fields(row, ("prompt_id", "prompt", "rubrics", "example_tags"), fail)
    prompt_id = _prompt_id(row["prompt_id"], fail)
    conversation = _conversation(row["prompt"], fail)
    rubric = _rubric(row["rubrics"], fail, tags_required=True)
    theme = _theme_from_tags(row["example_tags"], fail)
    ideal = _ideal_completion(row.get("ideal_completions_data"), fail)
    return _record(prompt_id, theme, conversation, rubric, ideal, True, path, line)


def _record(prompt_id, theme, conversation, rubric, ideal, tags_available, path: Path, line: int) -> dict:
    return {
        "item_id": f"{DATASET}:{prompt_id}",
        "prompt_id": prompt_id,
        "dataset": DATASET,
        "theme": theme,
        "prompt_json": json.dumps(conversation, ensure_ascii=False),
        "task": render_task(conversation),
        "rubric_json": json.dumps(rubric, ensure_ascii=False),
        "n_criteria": len(rubric),
        "n_negative": sum(entry["negative"] for entry in rubric),
        "ideal_completion": ideal,
        "has_ideal_completion": bool(ideal.strip()),
        "rubric_tags_available": tags_available,
        "source_file": path.name,
        "source_line": line,
    }


def _prompt_id(value: Any, fail: Fail, what: str = "field 'prompt_id'") -> str:
    if not isinstance(value, str) or not value.strip():
        fail(f"{what} must be a non-empty string, got {value!r:.60}")
    return value


def _conversation(prompt: Any, fail: Fail) -> list[dict]:
    if not isinstance(prompt, list) or not prompt:
        fail("field 'prompt' must be a non-empty list of messages")
    conversation = []
    for index, message in enumerate(prompt):
        if not isinstance(message, dict):
            fail(f"prompt[{index}] must be an object with 'role' and 'content'")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            fail(f"prompt[{index}]: 'role' must be one of {list(ROLES)}, got {role!r:.60}")
        if not isinstance(content, str):
            fail(f"prompt[{index}]: 'content' must be a string, got {type(content).__name__}")
        conversation.append({"role": role, "content": content})
    return conversation


def _rubric(rubrics: Any, fail: Fail, tags_required: bool) -> list[dict]:
    if not isinstance(rubrics, list) or not rubrics:
        fail("field 'rubrics' must be a non-empty list")
    entries = []
    for index, entry in enumerate(rubrics):
        entry_fail = _failer_from(fail, f"rubrics[{index}]: ")
        required = ("criterion", "points", "tags") if tags_required else ("criterion", "points")
        require_fields(entry, required, entry_fail)
        criterion, points = entry["criterion"], entry["points"]
        if not isinstance(criterion, str) or not criterion.strip():
            entry_fail(f"'criterion' must be a non-empty string, got {criterion!r:.60}")
        # bool is a subclass of int; true/false are not points
        if type(points) is not int:
            entry_fail(f"'points' must be an integer, got {points!r}")
        tags = entry.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            entry_fail(f"'tags' must be a list of strings, got {tags!r:.60}")
        entries.append({"criterion": criterion, "points": points, "tags": list(tags), "negative": points < 0})
    return entries


def _failer_from(fail: Fail, prefix: str) -> Fail:
    def prefixed(message: str) -> NoReturn:
        fail(prefix + message)
    return prefixed


def _theme_from_tags(example_tags: Any, fail: Fail) -> str:
    if not isinstance(example_tags, list) or not all(isinstance(tag, str) for tag in example_tags):
        fail(f"field 'example_tags' must be a list of strings, got {example_tags!r:.60}")
    themes = [tag for tag in example_tags if tag.startswith(THEME_PREFIX)]
    if len(themes) != 1:
        fail(f"field 'example_tags' must hold exactly one '{THEME_PREFIX}' tag, found {len(themes)}: {themes}")
    theme = themes[0].removeprefix(THEME_PREFIX)
    if not theme.strip():
        fail(f"empty theme in example_tags: {themes[0]!r}")
    return theme


def _ideal_completion(data: Any, fail: Fail) -> str:
    if data is None:
        return ""
    if not isinstance(data, dict):
        fail(f"field 'ideal_completions_data' must be null or an object, got {type(data).__name__}")
    text = data.get("ideal_completion")
    if text is None:
        return ""
    if not isinstance(text, str):
        fail(f"'ideal_completions_data.ideal_completion' must be a string, got {type(text).__name__}")
    return text


# --- sampling ------------------------------------------------------------------------------

def sample_by_theme(
    items: pd.DataFrame,
    *,
    per_theme: int,
    seed: int,
    exclude_ids: Iterable[str],
    themes: Iterable[str],
    short_theme: str,
    top_up: pd.DataFrame | None = None,
    duplicates: list[dict] | pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Draw ``per_theme`` items of each theme; return (sample, left_out, manifest).

    The procedure, fully determined by the set of rows, ``seed`` and the arguments (not by the
    row order nor by the order of ``themes``):
    1. Sort ``items`` by item_id.
    2. Leave out, with the first reason that applies: a prompt_id (or item_id) in
       ``exclude_ids`` ("in HealthBench-Hard"); a theme not in ``themes``
       ("theme not selected: <theme>").
    3. For each theme t, order its eligible rows by
       ``numpy.random.default_rng([seed, zlib.crc32(t.encode("utf-8"))]).permutation(n_t)``
       (one independent stream per theme, so a theme's draw does not depend on the others) and
       take the first ``per_theme``; the rest are left out as "not sampled".
    4. A theme with fewer than ``per_theme`` eligible rows is short; ``short_theme`` says what
       happens, and it is never silent:
       - "error": ValueError naming every short theme with requested and available counts;
       - "take_all": take all of them, log a WARNING, record ``short_themes`` in the manifest;
       - "top_up": fill the gap from ``top_up`` (the SRH partial items): its rows are left out
         when in ``exclude_ids``, when their prompt_id is in ``items`` ("full-format item
         available"), when their theme is not selected or not short; the eligible rows of a
         short theme t are ordered by ``default_rng([seed, zlib.crc32(t), 1]).permutation``
         and the first (per_theme - available) are taken. Logged as a WARNING, recorded in
         ``topped_up`` and ``short_themes``. Those rows keep ``rubric_tags_available`` False.
         If even then a theme is short, ValueError. ``top_up`` may be None (the full
         HealthBench from its hub, where no theme is short and the partial file does not
         exist): then a short theme is a ValueError, as under "error".
    ``duplicates`` (default ``items.attrs["duplicates"]`` from ``load_healthbench``) are the
    rows the loader dropped; they are listed in ``left_out`` and counted in the manifest.

    ``sample``: the item columns plus ``split`` = "evaluation", sorted by theme then item_id.
    ``left_out``: ``LEFT_OUT_COLUMNS``, one row per unused input row (``pool`` is "items" or
    "top_up"). ``manifest``: JSON-able summary (see ``build_manifest``).
    """
    themes = _check_themes(themes)
    _check_per_theme(per_theme)
    _check_seed(seed)
    if short_theme not in SHORT_THEME_POLICIES:
        raise ValueError(f"short_theme must be one of {list(SHORT_THEME_POLICIES)}, got {short_theme!r}")
    excluded = set(exclude_ids)
    if duplicates is None:
        duplicates = items.attrs.get("duplicates", [])
    duplicate_rows = pd.DataFrame(duplicates, columns=[c for c in LEFT_OUT_COLUMNS if c != "pool"])
    _check_items(items, "items")

    items = items.sort_values("item_id", kind="stable").reset_index(drop=True)
    reasons = _initial_reasons(items, excluded, themes)
    taken, short = [], {}
    for theme in themes:
        pool = items.index[(reasons == "") & (items["theme"] == theme)]
        order = pool[_theme_rng(seed, theme).permutation(len(pool))]
        taken.append(order[:per_theme])
        reasons.loc[order[per_theme:]] = NOT_SAMPLED
        if len(pool) < per_theme:
            short[theme] = {"requested": int(per_theme), "available": int(len(pool))}

    no_top_up = short_theme == "top_up" and top_up is None
    if short and (short_theme == "error" or no_top_up):
        detail = "; ".join(f"{t}: requested {s['requested']}, available {s['available']}" for t, s in short.items())
        if no_top_up:
            detail += ("; short_theme is top_up, but there is no top-up table to fill them from "
                       "(datasets.healthbench.top_up_files are read only from a data mirror)")
        raise ValueError(f"healthbench: too few eligible items for {len(short)} theme(s): {detail}")
    for theme, counts in short.items():
        if short_theme == "take_all":
            log.warning("healthbench: theme %s has %d eligible items, %d requested; "
                        "taking all of them (short_theme=take_all)", theme, counts["available"], per_theme)

    top, top_reasons, top_taken = None, None, pd.Index([], dtype=int)
    topped_up: dict[str, int] = {}
    if short_theme == "top_up" and top_up is not None:
        _check_items(top_up, "top_up")
        top = top_up.sort_values("item_id", kind="stable").reset_index(drop=True)
        top_taken, top_reasons = _top_up(top, items, excluded, themes, short, per_theme, seed, topped_up)

    sample_parts = [items.loc[np.concatenate([index.to_numpy() for index in taken])]]
    if top is not None:
        sample_parts.append(top.loc[top_taken])
    sample = pd.concat(sample_parts, ignore_index=True) if len(sample_parts) > 1 else sample_parts[0]
    sample = (
        sample[COLUMNS].assign(split="evaluation")
        .sort_values(["theme", "item_id"], kind="stable")
        .reset_index(drop=True)
    )
    sample.attrs = {}

    left_parts = [_left_out_rows(items, reasons, "items"), duplicate_rows.assign(pool="items")[LEFT_OUT_COLUMNS]]
    if top is not None:
        left_parts.append(_left_out_rows(top, top_reasons, "top_up"))
    left_parts = [part for part in left_parts if len(part)]
    left_out = (pd.concat(left_parts, ignore_index=True) if left_parts
                else pd.DataFrame(columns=LEFT_OUT_COLUMNS))
    left_out.attrs = {}

    manifest = build_manifest(
        sample, left_out, items=items, top=top, themes=themes, per_theme=per_theme, seed=seed,
        short_theme=short_theme, short=short, topped_up=topped_up, n_excluded=len(excluded),
        n_duplicates=len(duplicate_rows),
    )
    return sample, left_out, manifest


def _top_up(top, items, excluded, themes, short, per_theme, seed, topped_up) -> tuple[pd.Index, pd.Series]:
    """The top-up rows chosen for the short themes, and the reason each other top-up row is left out.

    Fills ``topped_up`` and adds ``topped_up`` and ``top_up_available`` to each entry of ``short``.
    """
    reasons = _initial_reasons(top, excluded, themes)
    present = top["prompt_id"].isin(set(items["prompt_id"])) & (reasons == "")
    reasons.loc[present] = FULL_ITEM_AVAILABLE
    chosen, still_short = [], []
    for theme in themes:
        pool = top.index[(reasons == "") & (top["theme"] == theme)]
        if theme not in short:
            reasons.loc[pool] = THEME_NOT_SHORT
            continue
        need = per_theme - short[theme]["available"]
        order = pool[_theme_rng(seed, theme, TOP_UP_STREAM).permutation(len(pool))]
        chosen.append(order[:need])
        reasons.loc[order[need:]] = NOT_SAMPLED
        topped_up[theme] = int(min(need, len(pool)))
        short[theme].update(topped_up=topped_up[theme], top_up_available=int(len(pool)))
        if len(pool) < need:
            still_short.append(f"{theme}: requested {per_theme}, available {short[theme]['available']} "
                               f"+ {len(pool)} for top-up")
        else:
            log.warning("healthbench: theme %s has %d eligible items, %d requested; topped up with %d "
                        "items from the partial SRH file (rubric entries without tags)",
                        theme, short[theme]["available"], per_theme, need)
    if still_short:
        raise ValueError("healthbench: too few items even after topping up: " + "; ".join(still_short))
    taken = pd.Index(np.concatenate([index.to_numpy() for index in chosen])) if chosen else pd.Index([], dtype=int)
    return taken, reasons


def build_manifest(sample, left_out, *, items, top, themes, per_theme, seed, short_theme, short, topped_up,
                   n_excluded, n_duplicates) -> dict:
    """A JSON-able summary: what was asked for, what was drawn per theme, and what was left out."""
    counts_by_theme = {}
    for theme in themes:
        rows = sample[sample["theme"] == theme]
        full = rows["rubric_tags_available"].astype(bool)
        counts_by_theme[theme] = {
            "total": int(len(rows)),
            "full": int(full.sum()),
            "topped_up": int((~full).sum()),
            "n_criteria": int(rows["n_criteria"].sum()),
            "n_negative": int(rows["n_negative"].sum()),
            "with_ideal_completion": int(rows["has_ideal_completion"].astype(bool).sum()),
        }
    left_out_counts = {}
    for pool in ("items", "top_up"):
        reasons = left_out.loc[left_out["pool"] == pool, "reason"]
        left_out_counts[pool] = {r: int(n) for r, n in sorted(Counter(map(_reason_key, reasons)).items())}
    return {
        "dataset": DATASET,
        "seed": int(seed),
        "per_theme": int(per_theme),
        "themes": list(themes),
        "short_theme": short_theme,
        "sampling": SAMPLING_RULE,
        "input_items": int(len(items)),
        "input_duplicates_dropped": int(n_duplicates),
        "top_up_items": int(len(top)) if top is not None else 0,
        "exclude_ids": int(n_excluded),
        "sample_items": int(len(sample)),
        "counts_by_theme": counts_by_theme,
        "short_themes": {theme: dict(counts) for theme, counts in short.items()},
        "topped_up": dict(topped_up),
        "n_criteria": int(sample["n_criteria"].sum()),
        "n_negative": int(sample["n_negative"].sum()),
        "items_with_ideal_completion": int(sample["has_ideal_completion"].astype(bool).sum()),
        "items_without_rubric_tags": int((~sample["rubric_tags_available"].astype(bool)).sum()),
        "left_out": left_out_counts,
    }


def _initial_reasons(frame: pd.DataFrame, excluded: set[str], themes: list[str]) -> pd.Series:
    reasons = pd.Series("", index=frame.index, dtype=object)
    hard = frame["prompt_id"].isin(excluded) | frame["item_id"].isin(excluded)
    reasons.loc[hard] = HARD_REASON
    other = ~frame["theme"].isin(themes) & (reasons == "")
    reasons.loc[other] = THEME_NOT_SELECTED + frame.loc[other, "theme"].astype(str)
    return reasons


def _left_out_rows(frame: pd.DataFrame, reasons: pd.Series, pool: str) -> pd.DataFrame:
    rows = frame.assign(reason=reasons, pool=pool)[reasons != ""]
    return rows[LEFT_OUT_COLUMNS].reset_index(drop=True)


def _theme_rng(seed: int, theme: str, *stream: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(theme.encode("utf-8")), *stream])


def _reason_key(reason: str) -> str:
    """Manifest key of a reason: duplicates are counted together, not per first occurrence."""
    return DUPLICATE_PREFIX if reason.startswith(DUPLICATE_PREFIX) else reason


def _check_items(frame: pd.DataFrame, name: str) -> None:
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} table lacks columns {missing}")
    repeated = frame["item_id"][frame["item_id"].duplicated()]
    if len(repeated):
        raise ValueError(f"{name}: item ids must be unique, repeated: {sorted(set(repeated))[:5]}")


def _check_themes(themes: Iterable[str]) -> list[str]:
    themes = list(themes)
    if not themes or not all(isinstance(t, str) and t for t in themes) or len(set(themes)) != len(themes):
        raise ValueError(f"themes must be a non-empty list of distinct names, got {themes!r}")
    return themes


def _check_per_theme(per_theme: int) -> None:
    if not isinstance(per_theme, (int, np.integer)) or isinstance(per_theme, bool) or per_theme < 1:
        raise ValueError(f"per_theme must be a positive integer, got {per_theme!r}")


def _check_seed(seed: int) -> None:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
