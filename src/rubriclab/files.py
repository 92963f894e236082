"""Small file helpers shared by the data and model layers."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK_SIZE = 8 << 20


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            digest.update(chunk)
    return digest.hexdigest()
