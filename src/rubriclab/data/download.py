"""Get the original dataset files, byte for byte, from their public source or a local mirror.

Files are written to a temporary file in the destination folder and moved into place with
``os.replace`` only after the checksum is verified, so a destination file is either complete
and verified or absent.
"""

from __future__ import annotations

import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from rubriclab.files import sha256_of

REGISTRY_PATH = Path(__file__).resolve().parent.parent / "resources" / "datasets.yaml"
CHUNK_SIZE = 1 << 20


class DownloadError(RuntimeError):
    """A file could not be obtained."""


class ChecksumError(DownloadError):
    """A file was obtained but its sha256 is not the expected one."""


def fetch(url: str, dest: Path, sha256: str | None, timeout: float = 60) -> Path:
    """Download ``url`` to ``dest``, verifying its sha256 when one is given."""

    def download_to(handle) -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                shutil.copyfileobj(response, handle, CHUNK_SIZE)
        except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the open connection
            raise DownloadError(
                f"could not download {url}: {exc}; without network, set data_mirror in the "
                "config (or RUBRICLAB_DATA_MIRROR) to a folder of copies of the original files"
            ) from exc

    return _write_verified(dest, download_to, sha256, source=url)


def copy_from_mirror(mirror_dir: Path, name: str, dest: Path,
                     sha256: str | Sequence[str] | None) -> Path:
    """Copy ``mirror_dir / name`` to ``dest`` byte for byte, verifying its sha256 when given
    (one checksum, or several, any of which is accepted)."""
    mirror_dir = Path(mirror_dir)
    source = mirror_dir / name
    if not source.is_file():
        raise DownloadError(f"mirror file not found: {source} (data_mirror is {str(mirror_dir.parent)!r}; "
                            f"it holds one folder per dataset, here {mirror_dir.name}/)")

    def copy_to(handle) -> None:
        with open(source, "rb") as original:
            shutil.copyfileobj(original, handle, CHUNK_SIZE)

    return _write_verified(dest, copy_to, sha256, source=str(source))


def acquire(spec: dict, dest_dir: Path, mirror_dir: Path | None) -> Path:
    """Obtain one registry file entry as ``dest_dir / spec["name"]``.

    ``mirror_dir`` is the mirror's folder for this dataset (for example
    ``../shared/data/summedits``); when given, the file is copied from
    ``mirror_dir / spec["mirror_name"]`` instead of downloaded from ``spec["url"]``.
    An entry with ``url`` null exists only in a mirror: without one it raises DownloadError.
    """
    dest = Path(dest_dir) / spec["name"]
    if mirror_dir is None:
        if not spec.get("url"):
            raise DownloadError(
                f"{spec['name']} has no public URL: only available from a data mirror "
                f"(set data_mirror in the config, or leave it out of the configured files)"
            )
        return fetch(spec["url"], dest, spec.get("sha256"))
    if not spec.get("mirror_name"):
        raise DownloadError(
            f"{spec['name']} has no mirror copy (mirror_name is null in the dataset registry); "
            f"download it from {spec['url']} or leave it out of the configured files"
        )
    return copy_from_mirror(Path(mirror_dir), spec["mirror_name"], dest, mirror_checksums(spec))


def mirror_checksums(spec: dict) -> tuple[str, ...] | None:
    """The checksums a mirror's copy of a registry entry may have: that of the mirror's own
    copy where it is not the original (``mirror_sha256``: a partial copy, as HealthBench's), and
    the original's (``sha256``), which a mirror holding the original has; None when neither is
    known (then nothing is verified)."""
    known = tuple(c for c in (spec.get("mirror_sha256"), spec.get("sha256")) if c)
    return known or None


def dataset_files(dataset: str, names: list[str] | None = None) -> list[dict]:
    """The registry entries of ``dataset``.

    Without ``names``: the entries under ``files`` (those fetched by default). With
    ``names``: those entries, in the order given, looked up in ``files`` and ``original_files``.
    """
    registry = load_registry()
    if dataset not in registry:
        raise ValueError(f"unknown dataset {dataset!r}; the registry has {sorted(registry)}")
    entry = registry[dataset]
    if names is None:
        return [dict(spec) for spec in entry["files"]]
    by_name = {spec["name"]: spec for spec in entry["files"] + entry.get("original_files", [])}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(f"dataset {dataset!r} has no files named {unknown}; known: {sorted(by_name)}")
    return [dict(by_name[name]) for name in names]


def load_registry(path: Path = REGISTRY_PATH) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _write_verified(dest: Path, write: Callable, sha256: str | Sequence[str] | None,
                    source: str) -> Path:
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        _verify_checksum(temp, sha256, source)
        os.replace(temp, dest)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return dest


def _verify_checksum(path: Path, expected: str | Sequence[str] | None, source: str) -> None:
    if not expected:
        return
    accepted = [expected] if isinstance(expected, str) else list(expected)
    actual = sha256_of(path)
    if actual not in [c.lower() for c in accepted]:
        raise ChecksumError(f"checksum mismatch for {source}: expected sha256 "
                            f"{' or '.join(accepted)}, got {actual} (a damaged or cut-short "
                            "copy, or another version of the file; nothing was written)")
