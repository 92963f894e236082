"""Checklists: ordered checks that a judge applies with all-must-pass aggregation."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

GENERIC_RESOURCE = ("resources", "checklists", "generic.yaml")


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


def _read_generic_yaml() -> dict[str, Any]:
    path = resources.files("rubriclab")
    for part in GENERIC_RESOURCE:
        path = path / part
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{'/'.join(GENERIC_RESOURCE)} must map dataset names to checklists")
    return document


def _checklist_from_entry(dataset: str, entry: Any) -> Checklist:
    if not isinstance(entry, dict):
        raise ValueError(f"generic checklist {dataset!r} must be a mapping")
    task_description = _required_text(entry, "task_description", f"generic checklist {dataset!r}")
    origin = _required_text(entry, "origin", f"generic checklist {dataset!r}")
    raw_checks = entry.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ValueError(f"generic checklist {dataset!r} needs a non-empty list 'checks'")
    checks = tuple(
        _check_from_entry(dataset, index, raw, origin) for index, raw in enumerate(raw_checks)
    )
    return Checklist(name=f"generic-{dataset}", checks=checks, task_description=task_description)


def _check_from_entry(dataset: str, index: int, raw: Any, origin: str) -> Check:
    where = f"generic checklist {dataset!r}, check index {index}"
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
