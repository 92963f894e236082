"""Turning a judge tool's log into rubriclab's verdict table: Inspect AI, promptfoo, lm-eval.

`read_log(path, format)` reads the file a tool wrote and returns its verdicts as one row per
item and check (``item_id``, ``check_id``, ``verdict`` pass / fail), the table `attribute` and
`gate` take; `read_judged` gives one verdict per item, the table `correct` takes. Each tool's
scores become pass or fail by one rule, below; a score that is neither (partial credit, a
number between 0 and 1, an errored sample) is refused with its place in the file, never
dropped or rounded.

- **inspect** (Inspect AI eval logs, ``.json`` or ``.eval``; format:
  https://inspect.aisi.org.uk/eval-logs.html, read here as inspect-ai 0.3.285 writes it): an
  item is a sample (``id``; ``id#epoch`` when the log has several epochs), a check a scorer
  (``scorer/key`` for each key of a scorer that returns a dict). A score's value follows
  Inspect's own `value_to_float` (inspect_ai/scorer/_metric.py): "C" (CORRECT) and 1, True,
  "yes", "true" are pass; "I" (INCORRECT), "N" (NOANSWER) and 0, False, "no", "false" are
  fail; "P" (PARTIAL, 0.5) and any other value are refused. A log whose status is not
  "success" is refused (its samples are not all there). Inspect compresses a ``.eval`` log's
  members with zstd since 0.3.1xx, which Python's zipfile reads from 3.14 on; before that,
  convert it: ``inspect log convert LOG.eval --to json --output-dir DIR``.
- **promptfoo** (``promptfoo eval -o results.json``; results version 3, as promptfoo 0.121
  writes it; https://www.promptfoo.dev/docs/configuration/outputs/): an item is a test case
  (its ``item_id`` variable where every test has one, else promptfoo's ``testIdx``; with
  several prompts or providers, ``item/promptIdx/provider``), a check an assertion (its
  ``metric`` name, else its type; ``#k`` for the k-th of one name), its verdict the
  assertion's ``pass``. The item's own verdict, `read_judged`'s default, is the test's
  ``success`` (promptfoo's pass: every assertion passes, or the threshold is met). A result
  that errored (failureReason 2, src/types/index.ts ResultFailureReason) is refused.
- **lm-eval** (lm-evaluation-harness ``samples_<task>_<time>.jsonl``, written with
  ``--log_samples``; lm-eval 0.4.13, lm_eval/loggers/evaluation_tracker.py): an item is a
  document (``doc_id``), a check a metric the line lists in ``metrics`` (``metric,filter``, as
  lm-eval's results name it, when the file holds several filters); 1 (or True) is pass, 0
  fail, any other value (a BLEU score, a perplexity) refused.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rubriclab.methods import tables
from rubriclab.methods.tables import InputError

FORMATS = ("inspect", "promptfoo", "lm-eval")
TABLE = "table"
VERDICT_COLUMNS = ["item_id", "check_id", "verdict"]
INSPECT_WORDS = {"c": True, "i": False, "n": False, "yes": True, "no": False, "true": True,
                 "false": False}
PROMPTFOO_ERROR = 2  # ResultFailureReason.ERROR


@dataclass(frozen=True)
class Log:
    """A tool's log as verdicts: `checks` one row per item and check; `overall` the tool's
    own verdict per item where it gives one (promptfoo's test success), else None."""

    checks: pd.DataFrame
    overall: pd.DataFrame | None = None


def read_log(path: str | Path, format: str, *, name: str | None = None) -> Log:
    """The verdicts in a file that Inspect AI, promptfoo or lm-eval wrote (see the module)."""
    path = Path(path)
    label = name or str(path)
    if format not in FORMATS:
        raise InputError("--format", None, f"unknown format {format!r}; one of "
                                           f"{', '.join((TABLE, *FORMATS))}")
    if not path.is_file():
        raise InputError(label, None, f"no such file: {path}")
    reader = {"inspect": _inspect, "promptfoo": _promptfoo, "lm-eval": _lm_eval}[format]
    rows, overall = reader(path, label)
    if not rows:
        raise InputError(label, None, f"holds no scored {format} results")
    checks = _frame(rows, VERDICT_COLUMNS, label)
    repeated = checks.duplicated(["item_id", "check_id"]).to_numpy()
    if repeated.any():
        item, check = checks.iloc[int(repeated.nonzero()[0][0])][["item_id", "check_id"]]
        raise InputError(label, None, f"item {item!r} has two verdicts of check {check!r}: "
                                      "its ids are not unique")
    return Log(checks, _frame(overall, ["item_id", "verdict"], label) if overall else None)


def read_verdicts(source: str | Path, format: str = TABLE) -> pd.DataFrame:
    """The long verdict table (item_id, check_id, verdict) from a table or a tool's log."""
    return tables.read_table(source) if format == TABLE else read_log(source, format).checks


def read_judged(source: str | Path, format: str = TABLE, check: str | None = None
                ) -> pd.DataFrame:
    """One verdict per item (item_id, verdict) from a table or a tool's log.

    From a log: the verdicts of `check`; without it, the tool's own verdict per item
    (promptfoo) or the log's only check; a log of several checks needs one named.
    """
    if format == TABLE:
        if check is not None:
            raise InputError("--check", None, "picks a check of a judge log: give --format too")
        return tables.read_table(source)
    log = read_log(source, format)
    label = str(source)
    names = list(dict.fromkeys(log.checks["check_id"]))
    if check is None:
        if log.overall is not None:
            return log.overall
        if len(names) > 1:
            raise InputError(label, None, f"holds {len(names)} checks ({', '.join(names)}): "
                                          "name the one to correct with --check")
        check = names[0]
    if check not in names:
        raise InputError(label, None, f"has no check {check!r}; its checks: {', '.join(names)}")
    chosen = log.checks[log.checks["check_id"] == check][["item_id", "verdict"]]
    frame = chosen.reset_index(drop=True)
    frame.attrs[tables.ATTRS_KEY] = {"name": f"{label} (check {check})", "header_lines": 0}
    return frame


def _frame(rows: list, columns: list[str], label: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs[tables.ATTRS_KEY] = {"name": label, "header_lines": 0}
    return frame


def _word(passed: bool) -> str:
    return "pass" if passed else "fail"


def _load_json(path: Path, label: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise InputError(label, None, f"cannot read {path} as JSON: {exc}") from exc


# Inspect AI

def _inspect(path: Path, label: str):
    if path.suffix == ".eval":
        header, samples = _eval_archive(path, label)
    else:
        header = _load_json(path, label)
        if not isinstance(header, dict) or "eval" not in header:
            raise InputError(label, None, "is not an Inspect eval log (no 'eval' field)")
        samples = header.get("samples")
    status = header.get("status")
    if status != "success":
        raise InputError(label, None, f"the eval's status is {status!r}, not 'success': its "
                                      "samples are not all there")
    if not samples:
        raise InputError(label, None, "holds no samples (was it written with "
                                      "--no-log-samples?)")
    several_epochs = any(s.get("epoch", 1) != 1 for s in samples)
    rows = []
    for sample in samples:
        item = str(sample.get("id"))
        if several_epochs:
            item = f"{item}#{sample.get('epoch', 1)}"
        where = f"sample {item!r}"
        if sample.get("error"):
            message = str(sample["error"].get("message", sample["error"]))[:200]
            raise InputError(label, None, f"{where} errored ({message}): it has no verdict")
        scores = sample.get("scores") or {}
        if not scores:
            raise InputError(label, None, f"{where} has no score")
        for scorer, score in scores.items():
            value = score.get("value") if isinstance(score, dict) else score
            parts = value.items() if isinstance(value, dict) else [(None, value)]
            for key, part in parts:
                check = scorer if key is None else f"{scorer}/{key}"
                rows.append((item, check, _word(_inspect_value(part, label, where, check))))
    return rows, None


def _eval_archive(path: Path, label: str):
    try:
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read("header.json"))
            names = [n for n in archive.namelist()
                     if n.startswith("samples/") and n.endswith(".json")]
            samples = [json.loads(archive.read(n)) for n in names]
    except NotImplementedError as exc:  # zstd members before Python 3.14
        raise InputError(label, None, f"this Python cannot decompress the .eval log ({exc}); "
                                      "convert it to JSON first: inspect log convert "
                                      f"{path.name} --to json --output-dir DIR") from exc
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise InputError(label, None, f"cannot read {path} as an Inspect .eval log: "
                                      f"{exc}") from exc
    return header, samples


def _inspect_value(value, label: str, where: str, check: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip().lower() in INSPECT_WORDS:
        return INSPECT_WORDS[value.strip().lower()]
    if isinstance(value, str) and value.strip() in ("0", "1", "0.0", "1.0"):
        return float(value) == 1
    raise InputError(label, None, f"{where}, scorer {check!r}: the score {tables.shown(value)} "
                                  "is neither pass nor fail (C / I / N, 1 / 0, yes / no, "
                                  "true / false)")


# promptfoo

def _promptfoo(path: Path, label: str):
    data = _load_json(path, label)
    results = data.get("results") if isinstance(data, dict) else None
    entries = results.get("results") if isinstance(results, dict) else None
    if not isinstance(entries, list):
        raise InputError(label, None, "is not a promptfoo results file (no results.results; "
                                      "write it with promptfoo eval -o results.json)")
    has_item_var = bool(entries) and all("item_id" in (e.get("vars") or {}) for e in entries)
    pairs = {(e.get("promptIdx"), _provider(e)) for e in entries}
    rows, overall = [], []
    for entry in entries:
        item = str(entry["vars"]["item_id"]) if has_item_var else str(entry.get("testIdx"))
        if len(pairs) > 1:
            item = f"{item}/{entry.get('promptIdx')}/{_provider(entry)}"
        where = f"test {item!r}"
        grading = entry.get("gradingResult")
        if entry.get("failureReason") == PROMPTFOO_ERROR or not isinstance(grading, dict):
            reason = str(entry.get("error") or "no grading result")[:200]
            raise InputError(label, None, f"{where} errored ({reason}): it has no verdict")
        if not isinstance(entry.get("success"), bool):
            raise InputError(label, None, f"{where} has no success field")
        overall.append((item, _word(entry["success"])))
        seen: dict[str, int] = {}
        for component in grading.get("componentResults") or []:
            assertion = component.get("assertion") or {}
            name = str(assertion.get("metric") or assertion.get("type") or "assertion")
            seen[name] = seen.get(name, 0) + 1
            check = name if seen[name] == 1 else f"{name}#{seen[name]}"
            if not isinstance(component.get("pass"), bool):
                raise InputError(label, None, f"{where}, assertion {check!r} has no pass field")
            rows.append((item, check, _word(component["pass"])))
    if not rows:  # tests without assertions: the test's success is the only verdict
        rows = [(item, "success", verdict) for item, verdict in overall]
    return rows, overall


def _provider(entry: dict) -> str:
    provider = entry.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id"))
    return str(provider)


# lm-evaluation-harness

def _lm_eval(path: Path, label: str):
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                lines.append((number, json.loads(line)))
            except ValueError as exc:
                raise InputError(label, None, f"line {number} is not JSON: {exc}") from exc
    if not lines or not all(isinstance(d, dict) and "doc_id" in d and "metrics" in d
                            for _, d in lines):
        raise InputError(label, None, "is not an lm-eval samples file (each line needs doc_id "
                                      "and metrics; write it with --log_samples)")
    several_filters = len({d.get("filter") for _, d in lines}) > 1
    rows = []
    for number, doc in lines:
        item = str(doc["doc_id"])
        for metric in doc["metrics"]:
            check = f"{metric},{doc.get('filter')}" if several_filters else metric
            value = doc.get(metric)
            if isinstance(value, (bool, int, float)) and value in (0, 1):
                rows.append((item, check, _word(value == 1)))
            else:
                raise InputError(label, None, f"line {number} (doc_id {item}), metric "
                                              f"{metric!r}: {tables.shown(value)} is neither 1 "
                                              "(pass) nor 0 (fail)")
    return rows, None
