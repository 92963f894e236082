"""Small file helpers shared by the data and model layers."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

CHUNK_SIZE = 8 << 20


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            digest.update(chunk)
    return digest.hexdigest()


def tree_fingerprint(*roots: str | Path, pattern: str = "*") -> str:
    """sha256 over the relative paths and contents of every file under `roots`.

    Rules declare it as a param for code they run from the package (Snakemake tracks only the
    script file itself), so editing the generator reruns exactly what it feeds.
    """
    digest = hashlib.sha256()
    for root in map(Path, roots):
        for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def model_slug(model: str) -> str:
    """A file-name-safe, readable, unique name for a model string (results/... paths)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model) + "-" + hashlib.sha256(model.encode()).hexdigest()[:6]
