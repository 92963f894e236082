"""figures/replication.md and .csv: every claim of the three works beside this run's evidence,
with a verdict each (the claims: resources/replication/claims_<work>.yaml; the schema:
claims.yaml there)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd
import yaml

from rubriclab.labels import current_labels

from . import readers_carry, readers_transfer, readers_verify
from .evidence import Evidence, Outputs, Reader, with_display_names
from .verdicts import (CANNOT_TELL, KINDS, NOT_COMPUTED, as_measured, models_of, verdict,
                       why_cannot_tell)

# A folder on disk (load_claims globs it): the package is installed as plain files.
CLAIMS_DIR = Path(str(files("rubriclab") / "resources" / "replication"))
WORKS = ("carry", "verify", "transfer")
REQUIRED = ("id", "group", "work", "where", "sentence", "kind")
READERS: dict[str, Reader] = {**readers_carry.READERS, **readers_verify.READERS,
                              **readers_transfer.READERS}


def _entries(folder: Path, work: str) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(file, position, entry) of a work's claims: claims_<work>.yaml, then its parts,
    claims_<work>_<part>.yaml, in name order."""
    for path in [folder / f"claims_{work}.yaml", *sorted(folder.glob(f"claims_{work}_*.yaml"))]:
        for k, entry in enumerate(yaml.safe_load(path.read_text(encoding="utf-8")) or []):
            yield path, k, entry


def load_claims(folder: Path | None = None) -> list[dict[str, Any]]:
    """Every claim entry of claims_<work>.yaml and its parts, checked against the schema."""
    folder = Path(folder or CLAIMS_DIR)
    claims: list[dict[str, Any]] = []
    seen: set[str] = set()
    for work in WORKS:
        for path, k, entry in _entries(folder, work):
            where = f"{path}: entry {k} ({entry.get('id', 'no id')})"
            missing = [key for key in REQUIRED if key not in entry]
            if missing:
                raise ValueError(f"{where} lacks {missing}")
            if entry["id"] in seen:
                raise ValueError(f"{where}: id given twice")
            if entry["work"] != work:
                raise ValueError(f"{where}: work {entry['work']!r} in the file of {work}")
            if entry["kind"] not in KINDS:
                raise ValueError(f"{where}: kind {entry['kind']!r} is not one of {KINDS}")
            if "missing" not in entry and "seed" not in entry:
                raise ValueError(f"{where}: a claim the run tests needs its `seed`")
            if entry["kind"] == "qualitative" and "missing" not in entry \
                    and entry["seed"] is not True:
                raise ValueError(f"{where}: a qualitative claim's seed is `true` (the sentence)")
            if entry["kind"] != "arithmetic" and "missing" not in entry \
                    and not entry.get("models"):
                raise ValueError(f"{where}: a {entry['kind']} claim rests on models: name their "
                                 "config keys in `models` (a claim on the seed's own numbers "
                                 "is arithmetic)")
            seen.add(entry["id"])
            claims.append(entry)
    return claims


class _Recorded(Mapping[str, Path]):
    """A run's outputs that remember which of them a reader asked for: the outputs a claim's
    value rests on (the `outputs` column; report.html links each headline to them)."""

    def __init__(self, outputs: Outputs):
        self.outputs = outputs
        self.read: list[str] = []

    def __getitem__(self, name: str) -> Path:
        value = self.outputs[name]
        self.read.append(str(value))
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.outputs)

    def __len__(self) -> int:
        return len(self.outputs)


def _evidence(entry: Mapping[str, Any], outputs: Outputs,
              config: Mapping[str, Any]) -> Evidence:
    """The claim's evidence, each model in its words named by its display name."""
    return with_display_names(_read(entry, outputs, config), config)


def _read(entry: Mapping[str, Any], outputs: Outputs, config: Mapping[str, Any]) -> Evidence:
    if entry["id"] not in READERS:
        raise ValueError(f"claim {entry['id']!r} has neither `missing` nor a reader in "
                         "rubriclab.replication.readers_<work>.READERS")
    try:
        return READERS[entry["id"]](outputs, config)
    except KeyError as exc:  # an output, a column or a row this run does not make
        return Evidence(cannot=f"not in this run's outputs ({exc})")
    except FileNotFoundError as exc:  # an output this run did not build
        return Evidence(cannot=f"not built by this run ({exc.filename})")


def _show(value: Any) -> str:
    if value is None:
        return ""
    if value is True:
        return "yes"
    if isinstance(value, list):
        return f"{value[0]:g}-{value[1]:g}"
    return f"{float(value):.4g}"


def _parts(evidence: Evidence) -> str:
    mark = {True: "yes", False: "no", None: "?"}
    return "; ".join(f"{part.name}: {mark[part.holds]}" + (f" ({part.detail})" if part.detail
                                                            else "")
                     for part in evidence.parts)


def replication_table(outputs: Outputs, config: Mapping[str, Any],
                      claims: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    rows = []
    for entry in claims if claims is not None else load_claims():
        base = {"id": entry["id"], "group": entry["group"], "work": entry["work"],
                "where": entry["where"], "kind": entry["kind"], "sentence": entry["sentence"],
                "seed": _show(entry.get("seed")), "min_n": entry.get("min_n", "")}
        if "missing" in entry:
            rows.append({**base, "run": "", "interval": "", "n": "", "models": "",
                         "as_measured": NOT_COMPUTED, "verdict": NOT_COMPUTED,
                         "note": entry["missing"], "outputs": ""})
            continue
        recorded = _Recorded(outputs)
        evidence = _evidence(entry, recorded, config)
        measured = as_measured(entry, evidence)
        notes = [why_cannot_tell(entry, evidence)] if measured == CANNOT_TELL else []
        notes += [n for n in (_parts(evidence), evidence.note) if n and n not in notes]
        models = models_of(config, list(entry.get("models", [])))
        rows.append({
            **base,
            "run": "" if evidence.parts else _show(evidence.value),
            "interval": (f"[{evidence.low:.4g}, {evidence.high:.4g}]"
                         if evidence.low is not None and evidence.high is not None else ""),
            "n": "" if evidence.n is None else evidence.n,
            "models": ", ".join(dict.fromkeys(current_labels()(m) for m in models)),
            "as_measured": measured, "verdict": verdict(entry, evidence, config),
            "note": "; ".join(notes),
            "outputs": " ".join(dict.fromkeys(recorded.read)),
        })
    return pd.DataFrame(rows)


NOTE_CHARS = 600  # a note on the page; the csv keeps it whole


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A pipe table without padding: tidy.markdown_table pads every cell to its column's
    widest, and one long note then makes the page a megabyte."""
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)]


def _short(note: str) -> str:
    return note if len(note) <= NOTE_CHARS else \
        note[:NOTE_CHARS].rsplit(" ", 1)[0] + " … (the whole note: replication.csv)"


def _counts(rows: pd.DataFrame) -> str:
    counts = rows["verdict"].value_counts()
    return ", ".join(f"{counts[v]} {v}" for v in counts.index) or "none"


def replication_markdown(table: pd.DataFrame, run_name: str | None = None,
                         readings: Sequence[str] = ()) -> str:
    """The page; `readings`: a sentence per reading of the seeds this run took where they
    allow several (e.g. carry.analysis.gate_evidence_reading)."""
    computed = table[table["verdict"] != NOT_COMPUTED]
    tested = computed[computed["kind"] != "arithmetic"]
    arithmetic = computed[computed["kind"] == "arithmetic"]
    missing = table[table["verdict"] == NOT_COMPUTED]
    header = ["where", "the paper says", "kind", "seed", "run", "interval", "n", "models",
              "as measured", "verdict"]

    def claim_rows(rows: pd.DataFrame) -> list[list[Any]]:
        return [[r.where, f"“{r.sentence}”", r.kind, r.seed, r.run, r.interval, r.n,
                 r.models, r.as_measured,
                 f"**{r.verdict}**" + (f" ({_short(r.note)})" if r.note else "")]
                for r in rows.itertuples(index=False)]

    lines = [
        "# Replication at a glance" + (f": run {run_name}" if run_name else ""), "",
        f"{table['group'].nunique()} claim groups of the three works ({len(table)} rows). "
        f"Claims tested on this run's models ({len(tested)}): {_counts(tested)}. "
        f"Arithmetic checks of the seeds' own numbers, not replications ({len(arithmetic)}): "
        f"{_counts(arithmetic)}. Not computed by this pipeline: {len(missing)}.", "",
        "How to read it. *Seed*: the paper's value or range; *run*: this run's, with its 95% "
        "interval from the run (exact binomial or the project's bootstrap) and the items behind "
        "it (*n*; a claim needs at least its *min_n*). *As measured*: what the numbers say "
        "whoever the models were: a measured claim *replicates* when the seed's value lies in "
        "the run's interval (equal at the seed's printed precision where there is no "
        "interval); a qualitative one *holds* only when every part of its sentence holds "
        "(the parts are in the note); *cannot tell* when a part could not be tested, a value "
        "is missing or NaN, or too few items stand behind it. *Verdict*: the same, except "
        "*other models* when a model behind the claim is a `fake/` or `local/` one and "
        "*stand-in* when it stands in for the model the paper names.", "",
        *[line for reading in readings for line in (f"Reading: {reading}", "")],
    ]
    for work in WORKS:
        rows = tested[tested["work"] == work]
        if len(rows):
            lines += [f"## {work}: claims", "", *markdown_table(header, claim_rows(rows)), ""]
    if len(arithmetic):
        lines += ["## Arithmetic checks (the seeds' own numbers recomputed)", "",
                  "These follow from numbers the seeds print, with no model: they test the "
                  "pipeline's arithmetic, not the papers' findings.", "",
                  *markdown_table(["work", "where", "the paper says", "seed", "run", "verdict"],
                                  [[r.work, r.where, f"“{r.sentence}”", r.seed, r.run,
                                    f"**{r.verdict}**"]
                                   for r in arithmetic.itertuples(index=False)]), ""]
    if len(missing):
        lines += ["## Not computed by this pipeline", "",
                  *markdown_table(["work", "where", "the paper says", "why"],
                                  [[r.work, r.where, f"“{r.sentence}”", r.note]
                                   for r in missing.itertuples(index=False)]), ""]
    lines += ["The claims, the seeds' sentences and the values: "
              "`src/rubriclab/resources/replication/claims_<work>.yaml`; the rules: "
              "`rubriclab.replication.verdicts`.", ""]
    return "\n".join(lines)
