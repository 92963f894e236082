"""Load RAGTruth (Niu et al., 2024) responses into the common item table.

Three formats are accepted, recognised from the fields of each file's first row:
1. FaithJudge files ``ragtruth_{qa,summary,data2txt}.jsonl``: one source per line with its
   ``responses``; the task type comes from the file name.
2. The derived pair ``ragtruth_test_responses.jsonl`` (``uid``, ``task_type``, ``response``...)
   + ``ragtruth_test_sources.jsonl`` (``question``, ``context``), joined on (task_type, source_id).
3. The original ParticleMedia pair ``response.jsonl`` (``id``, ``source_id``, ``model``,
   ``response``, ``labels``, ``split``...) + ``source_info.jsonl`` (``task_type``,
   ``source_info``...), joined on source_id.

The judge-facing ``task`` text is built the same way from every format (see ``task_text``), so
a response gets the same task whichever format it was read from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from rubriclab.data.errors import (
    DataFormatError, Fail, ensure_unique, failer, iter_json_lines, require_fields,
)

DATASET = "ragtruth"
TASK_TYPES = ("QA", "Summary", "Data2txt")
FAITHJUDGE_NAME = re.compile(r"ragtruth_(qa|summary|data2txt)$")
COLUMNS = [
    "item_id", "dataset", "domain", "group", "task", "output", "label", "flaw_type",
    "model", "upstream_split", "source_file", "source_line",
]

FAITHJUDGE = "FaithJudge file"
DERIVED_RESPONSES = "derived responses file"
DERIVED_SOURCES = "derived sources file"
ORIGINAL_RESPONSES = "original response file"
ORIGINAL_SOURCES = "original source_info file"


def load_ragtruth(paths: list[Path]) -> pd.DataFrame:
    """One row per RAGTruth response in ``paths`` (any mix of the three formats).

    Sources files are only used to look up the task of their responses files. Malformed rows,
    unknown sources and duplicate item ids raise DataFormatError naming file and line.
    """
    return load_ragtruth_tables((Path(path), list(iter_json_lines(Path(path)))) for path in paths)


def load_ragtruth_tables(tables) -> pd.DataFrame:
    """``load_ragtruth`` on already decoded tables: (source, [(row number, row)]), e.g. the
    splits of a Hugging Face dataset (rubriclab.data.hub.load_tables) in the derived or the
    original format (a responses table and its sources table)."""
    files = [(path, table_format(path, rows), rows) for path, rows in tables]
    derived_sources: dict[tuple[str, str], tuple[str, Path, int]] = {}
    original_sources: dict[str, tuple[str, str, Path, int]] = {}
    for path, kind, rows in files:
        if kind == DERIVED_SOURCES:
            add_derived_sources(path, rows, derived_sources)
        elif kind == ORIGINAL_SOURCES:
            add_original_sources(path, rows, original_sources)

    records: list[dict] = []
    for path, kind, rows in files:
        if kind == FAITHJUDGE:
            records += faithjudge_records(path, rows)
        elif kind == DERIVED_RESPONSES:
            _require_sources(path, derived_sources, "ragtruth_test_sources.jsonl")
            records += derived_response_records(path, rows, derived_sources)
        elif kind == ORIGINAL_RESPONSES:
            _require_sources(path, original_sources, "source_info.jsonl")
            records += original_response_records(path, rows, original_sources)

    first_seen: dict[str, tuple[str, int]] = {}
    for record in records:
        ensure_unique(record["item_id"], record.pop("_path"), record["source_line"], first_seen)
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def read_rows_and_format(path: Path) -> tuple[str | None, list[tuple[int, Any]]]:
    rows = list(iter_json_lines(path))
    return table_format(path, rows), rows


def table_format(path, rows: list[tuple[int, Any]]) -> str | None:
    """Which of the formats `rows` are in, from the fields of the first row (None: no rows)."""
    if not rows:
        return None
    line, first = rows[0]
    fields = set(first) if isinstance(first, dict) else set()
    if {"source_id", "source", "responses"} <= fields:
        kind = FAITHJUDGE
    elif {"uid", "task_type", "response"} <= fields:
        kind = DERIVED_RESPONSES
    elif {"task_type", "context"} <= fields:
        kind = DERIVED_SOURCES
    elif {"task_type", "source_info"} <= fields:
        kind = ORIGINAL_SOURCES
    elif {"source_id", "model", "response"} <= fields:
        kind = ORIGINAL_RESPONSES
    else:
        raise DataFormatError(path, line, f"not a known RAGTruth format (fields {sorted(fields)})")
    return kind


def task_text(task_type: str, question: str | None, context: str | dict) -> str:
    """The judge-facing input of a response: what the generating model was given."""
    if task_type == "QA":
        return f"Question: {question}\n\nPassages:\n{context}"
    if task_type == "Data2txt":
        return json.dumps(context, ensure_ascii=False, indent=1)
    if not isinstance(context, str):
        raise TypeError(f"a {task_type} context must be a string, got {type(context).__name__}")
    return context


# --- format 1: FaithJudge -------------------------------------------------------------------

def faithjudge_records(path: Path, rows: list[tuple[int, Any]]) -> list[dict]:
    match = FAITHJUDGE_NAME.fullmatch(path.name.split(".", 1)[0])
    if match is None:
        raise DataFormatError(path, None, "a FaithJudge file must be named ragtruth_<qa|summary|data2txt>.jsonl")
    task_type = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}[match.group(1)]
    records = []
    for line, row in rows:
        fail = failer(path, line)
        require_fields(row, ("source_id", "source", "responses"), fail)
        source_id = _source_id(row["source_id"], fail)
        task = task_text(task_type, *_split_source(task_type, row["source"], fail))
        if not isinstance(row["responses"], list):
            fail("field 'responses' must be a list")
        for index, response in enumerate(row["responses"]):
            response_fail = failer(path, line, prefix=f"responses[{index}]: ")
            require_fields(response, ("model", "response", "labels"), response_fail)
            records.append(response_record(task_type, source_id, task, response, "", path, line, response_fail))
    return records


def _split_source(task_type: str, source: Any, fail: Fail) -> tuple[str | None, str | dict]:
    """(question, context) of a FaithJudge or original source, checked against its task type."""
    if task_type == "QA":
        if not (isinstance(source, dict) and isinstance(source.get("question"), str)
                and isinstance(source.get("passages"), str)):
            fail("a QA source must be an object with string fields 'question' and 'passages'")
        return source["question"], source["passages"]
    if task_type == "Summary":
        if not isinstance(source, str):
            fail(f"a Summary source must be a string, got {type(source).__name__}")
        return None, source
    if not isinstance(source, dict):
        fail(f"a Data2txt source must be an object, got {type(source).__name__}")
    return None, source


# --- format 2: derived pair -----------------------------------------------------------------

def add_derived_sources(path: Path, rows, sources: dict) -> None:
    for line, row in rows:
        fail = failer(path, line)
        require_fields(row, ("source_id", "task_type", "question", "context"), fail)
        task_type = _task_type(row["task_type"], fail)
        if not isinstance(row["context"], str):
            fail("field 'context' must be a string")
        if task_type == "QA" and not isinstance(row["question"], str):
            fail("field 'question' must be a string for QA")
        context = row["context"]
        if task_type == "Data2txt":
            try:
                context = json.loads(context)
            except json.JSONDecodeError as exc:
                fail(f"a Data2txt context must be JSON text: {exc}")
            if not isinstance(context, dict):
                fail("a Data2txt context must be a JSON object")
        key = (task_type, _source_id(row["source_id"], fail))
        _ensure_new_source(key, sources, path, line)
        sources[key] = (task_text(task_type, row["question"], context), path, line)


def derived_response_records(path: Path, rows, sources: dict) -> list[dict]:
    records = []
    for line, row in rows:
        fail = failer(path, line)
        require_fields(row, ("uid", "task_type", "source_id", "model", "response", "labels"), fail)
        task_type = _task_type(row["task_type"], fail)
        source_id = _source_id(row["source_id"], fail)
        if (task_type, source_id) not in sources:
            fail(f"no source {task_type} {source_id} in the sources files")
        task = sources[(task_type, source_id)][0]
        record = response_record(task_type, source_id, task, row, "", path, line, fail)
        if row["uid"] != record["group"] + "-" + str(row["model"]):
            fail(f"field 'uid' is {row['uid']!r}, expected {record['group']}-{row['model']}")
        if "hallucinated" in row and row["hallucinated"] != int(record["label"] == "flawed"):
            fail(f"field 'hallucinated' is {row['hallucinated']!r} but the response has {len(row['labels'])} spans")
        records.append(record)
    return records


# --- format 3: original ParticleMedia pair --------------------------------------------------

def add_original_sources(path: Path, rows, sources: dict) -> None:
    for line, row in rows:
        fail = failer(path, line)
        require_fields(row, ("source_id", "task_type", "source_info"), fail)
        task_type = _task_type(row["task_type"], fail)
        source_id = _source_id(row["source_id"], fail)
        _ensure_new_source(source_id, sources, path, line)
        task = task_text(task_type, *_split_source(task_type, row["source_info"], fail))
        sources[source_id] = (task_type, task, path, line)


def original_response_records(path: Path, rows, sources: dict) -> list[dict]:
    records = []
    for line, row in rows:
        fail = failer(path, line)
        require_fields(row, ("source_id", "model", "response", "labels"), fail)
        source_id = _source_id(row["source_id"], fail)
        if source_id not in sources:
            fail(f"no source {source_id} in the source_info files")
        split = row.get("split", "")
        if not isinstance(split, str):
            fail(f"field 'split' must be a string, got {split!r}")
        task_type, task = sources[source_id][:2]
        records.append(response_record(task_type, source_id, task, row, split, path, line, fail))
    return records


# --- shared ---------------------------------------------------------------------------------

def response_record(task_type, source_id, task, response, upstream_split, path, line, fail: Fail) -> dict:
    """Validate one response (model, response, labels) and map it to the item columns."""
    model, text, spans = response["model"], response["response"], response["labels"]
    if not isinstance(model, str) or not model:
        fail(f"field 'model' must be a non-empty string, got {model!r}")
    if not isinstance(text, str):
        fail(f"field 'response' must be a string, got {type(text).__name__}")
    _validate_spans(spans, text, fail)
    group = f"{task_type}-{source_id}"
    return {
        "item_id": f"{DATASET}:{group}-{model}",
        "dataset": DATASET,
        "domain": task_type,
        "group": group,
        "task": task,
        "output": text,
        "label": "flawed" if spans else "correct",
        "flaw_type": ";".join(sorted({span["label_type"] for span in spans})),
        "model": model,
        "upstream_split": upstream_split,
        "source_file": path.name,
        "source_line": line,
        "_path": path,  # full path for error messages; dropped in load_ragtruth
    }


def _validate_spans(spans: Any, response: str, fail: Fail) -> None:
    if not isinstance(spans, list):
        fail(f"field 'labels' must be a list, got {type(spans).__name__}")
    for index, span in enumerate(spans):
        where = f"labels[{index}]"
        if not isinstance(span, dict):
            fail(f"{where} must be an object")
        for field, kind in (("start", int), ("end", int), ("text", str), ("label_type", str)):
            if type(span.get(field)) is not kind:
                fail(f"{where}: field {field!r} must be {kind.__name__}, got {span.get(field)!r:.60}")
        start, end = span["start"], span["end"]
        if not 0 <= start <= end <= len(response):
            fail(f"{where}: offsets {start}:{end} are outside the response ({len(response)} characters)")
        if response[start:end] != span["text"]:
            fail(f"{where}: response[{start}:{end}] is {response[start:end]!r:.80}, "
                 f"not the span text {span['text']!r:.80}")


def _source_id(value: Any, fail: Fail) -> str:
    """FaithJudge writes source ids as ints, the original and derived files as strings."""
    if type(value) is int or (isinstance(value, str) and value):
        return str(value)
    fail(f"field 'source_id' must be an int or a non-empty string, got {value!r}")


def _task_type(value: Any, fail: Fail) -> str:
    if value not in TASK_TYPES:
        fail(f"field 'task_type' must be one of {list(TASK_TYPES)}, got {value!r}")
    return value


def _ensure_new_source(key, sources: dict, path: Path, line: int) -> None:
    if key in sources:
        first_path, first_line = sources[key][-2:]
        raise DataFormatError(path, line, f"duplicate source {key}, first seen in {first_path}, line {first_line}")


def _require_sources(path: Path, sources: dict, name: str) -> None:
    if not sources:
        raise DataFormatError(path, None, f"its sources are missing: pass the matching {name} as well")
