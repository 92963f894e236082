"""Checklists: ordered checks that a judge applies with all-must-pass aggregation."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

GENERIC_RESOURCE = ("resources", "checklists", "generic.yaml")
OWN_ORIGIN = "own"


@dataclass(frozen=True)
class Check:
    """One yes/no requirement; "Yes" means the output meets it."""

    id: str
    text: str
    origin: str


@dataclass(frozen=True)
class Checklist:
    """An ordered tuple of checks plus a description of what is being graded."""

    name: str
    checks: tuple[Check, ...]
    task_description: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))
        ids = [check.id for check in self.checks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"checklist {self.name!r} has duplicate check ids: {duplicates}")

    def __len__(self) -> int:
        return len(self.checks)

    def prefix(self, length: int) -> Checklist:
        """The checklist made of the first `length` checks."""
        if not 1 <= length <= len(self.checks):
            raise ValueError(
                f"checklist {self.name!r} has {len(self.checks)} checks; "
                f"cannot take a prefix of length {length}"
            )
        return Checklist(
            name=f"{self.name}[:{length}]",
            checks=self.checks[:length],
            task_description=self.task_description,
        )


def load_generic_checklist(dataset: str) -> Checklist:
    """The generic checklist for `dataset` ("summedits" or "ragtruth") from generic.yaml."""
    document = _read_generic_yaml()
    if dataset not in document:
        raise KeyError(
            f"no generic checklist for dataset {dataset!r}; available: {sorted(document)}"
        )
    return _checklist_from_entry(dataset, document[dataset])


def load_checklist_file(path: str | Path, name: str | None = None) -> Checklist:
    """A checklist of your own from a YAML file::

        name: Travel desk replies          # optional; default the file's stem
        task_description: A customer asked to change a booking; ...
        origin: own                        # optional; the origin of every check
        checks:
          - {id: confirms_new_date, text: Confirms the new travel date the customer asked for.}

    Check ids are the names the figures and tables show. Errors name the file.
    """
    import yaml  # here: the light install (no pyyaml) imports this module through gate

    path = Path(path)
    try:
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"checklist file {path}: {exc}") from exc
    if not isinstance(entry, dict):
        raise ValueError(f"checklist file {path}: expected a mapping with task_description and "
                         "checks")
    entry = {"origin": OWN_ORIGIN, **entry}
    label = name or str(entry.get("name") or path.stem)
    checklist = _checklist_from_entry(label, entry, f"checklist file {path}")
    return Checklist(name=label, checks=checklist.checks,
                     task_description=checklist.task_description)


def _read_generic_yaml() -> dict[str, Any]:
    import yaml

    path = resources.files("rubriclab")
    for part in GENERIC_RESOURCE:
        path = path / part
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{'/'.join(GENERIC_RESOURCE)} must map dataset names to checklists")
    return document


def _checklist_from_entry(dataset: str, entry: Any, what: str | None = None) -> Checklist:
    """The checklist of a generic.yaml entry (or of a file: `what` names it in errors)."""
    what = what or f"generic checklist {dataset!r}"
    if not isinstance(entry, dict):
        raise ValueError(f"{what} must be a mapping")
    task_description = _required_text(entry, "task_description", what)
    origin = _required_text(entry, "origin", what)
    raw_checks = entry.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ValueError(f"{what} needs a non-empty list 'checks'")
    checks = tuple(
        _check_from_entry(what, index, raw, origin) for index, raw in enumerate(raw_checks)
    )
    return Checklist(name=f"generic-{dataset}", checks=checks, task_description=task_description)


def _check_from_entry(what: str, index: int, raw: Any, origin: str) -> Check:
    where = f"{what}, check index {index}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping with 'id' and 'text', got {raw!r}")
    return Check(
        id=_required_text(raw, "id", where),
        text=_required_text(raw, "text", where),
        origin=origin,
    )


def _required_text(mapping: dict, key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    return value.strip()
