"""Existing approaches to rubric evaluation (transfer work, Section 4.2, Figure 4, Table A.5).

- LLM matching (RubricRAG; Algorithm 2): P, R, F1 from 0-9 similarity scores.
- Embedding matching (Hong et al.; Table A.2): P, R, F1 from cosine similarity > tau = 0.7.
- Score correlation on a panel (GenRubric; Algorithm 3 and Table A.2): per example, over the
  K panel responses, Spearman rho (Algorithm 3 line 8), Kendall tau-b, top-1 consistency and
  pairwise accuracy; examples where either score vector is constant are left out.
- Score correlation on physician responses, discrimination against degraded responses
  (RubricRAG; Section 4.2) and the expert-score drop of degraded responses (Table A.5).

Every baseline is a mean over examples (Appendix D preamble); the *_records functions give
the per-example values that Algorithm 4 resamples, and `mean_statistic` turns one column
into a bootstrap statistic.

Spearman rho and Kendall tau-b are scipy's (scipy.stats.spearmanr, scipy.stats.kendalltau with
variant "b"). A constant score vector has no ranking to correlate: the two functions return NaN
for it themselves, before scipy is asked (scipy would warn and return NaN), and panel_records
leaves such an example out and counts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from rubriclab.stats.bootstrap import Statistic

SIMILARITY_MAX = 9          # Algorithm 2 line 5: integers 0..9
EMBEDDING_TAU = 0.7         # Table A.2, matching rule of Hong et al.
MATCH_COLUMNS = ["precision", "recall", "f1"]
PANEL_COLUMNS = ["n_responses", "left_out", "spearman", "kendall_tau_b", "top1",
                 "pairwise_accuracy"]
PANEL_STATISTICS = ["spearman", "kendall_tau_b", "top1", "pairwise_accuracy"]


@dataclass(frozen=True)
class MatchScores:
    """Precision, recall and F1 of one example's generated rubric against its expert rubric."""

    precision: float
    recall: float
    f1: float


# --- Algorithm 2: RubricRAG LLM matching ------------------------------------------------

def llm_matching_scores(similarity: np.ndarray, example_id: Hashable = None) -> MatchScores:
    """P_i, R_i, F1_i of Algorithm 2 (lines 6-8) for one example; no threshold is applied.

    similarity: integers 0..9, shape (|C^g_i|, |C^*_i|): rows generated criteria, columns
    expert criteria. P_i averages each generated criterion's best expert score / 9, R_i each
    expert criterion's best generated score / 9, F1_i = 2PR/(P+R), or 0 when P + R = 0.
    An empty rubric makes P_i or R_i a mean over nothing: ValueError (Algorithm 2 is silent).
    """
    matrix = _similarity_matrix(similarity, example_id)
    precision = float(matrix.max(axis=1).mean() / SIMILARITY_MAX)
    recall = float(matrix.max(axis=0).mean() / SIMILARITY_MAX)
    return MatchScores(precision, recall, harmonic_f1(precision, recall))


def llm_matching_records(similarities: Mapping[Hashable, np.ndarray]) -> pd.DataFrame:
    """Algorithm 2 for every example: a frame indexed by example_id with MATCH_COLUMNS."""
    return _match_records({example: llm_matching_scores(matrix, example)
                           for example, matrix in similarities.items()})


def similarity_matrices(
    table: pd.DataFrame, examples: Sequence[Hashable], *, value: str = "similarity",
) -> dict[Hashable, np.ndarray]:
    """Long similarity rows -> one (generated x expert) matrix per example, in `examples` order.

    table: one row per (example_id, generated_id, expert_id) with a `value` column. Rows and
    columns of each matrix follow the order of first appearance of the criterion ids. Every
    example must have rows (an example without any has an empty rubric, which Algorithm 2
    cannot score) and every pair of an example must be present exactly once.
    """
    keys = ["example_id", "generated_id", "expert_id"]
    _require_columns(table, keys + [value], "similarity table")
    duplicated = table.duplicated(subset=keys, keep=False)
    if duplicated.any():
        where = table.loc[duplicated, keys].drop_duplicates().head(5).to_dict("records")
        raise ValueError(f"similarity table: more than one score for {where}")
    unknown = sorted(set(table["example_id"]) - set(examples), key=str)
    if unknown:
        raise ValueError(f"similarity table holds examples not asked for: {unknown[:5]}")
    groups = dict(iter(table.groupby("example_id", sort=False)))
    matrices = {}
    for example in examples:
        if example not in groups:
            raise ValueError(f"example {example!r}: no similarity rows (an empty rubric?)")
        rows = groups[example]
        matrix = rows.pivot(index="generated_id", columns="expert_id", values=value)
        matrix = matrix.reindex(index=rows["generated_id"].unique(),
                                columns=rows["expert_id"].unique())
        if matrix.isna().any().any():
            gaps = matrix.isna().stack()
            raise ValueError(f"example {example!r}: no score for (generated_id, expert_id) "
                             f"{list(gaps[gaps].index[:5])}")
        matrices[example] = matrix.to_numpy()
    return matrices


def harmonic_f1(precision: float, recall: float) -> float:
    """2PR / (P + R), or 0 when P + R = 0 (Algorithm 2, line 8)."""
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


# --- Embedding cosine matching (Hong et al., Table A.2) ----------------------------------

def cosine_similarity_matrix(generated: np.ndarray, expert: np.ndarray,
                             example_id: Hashable = None) -> np.ndarray:
    """cos(c^g, c^*) for every pair: shape (n_generated, n_expert) from (n, d) embeddings."""
    generated = _embeddings(generated, "generated", example_id)
    expert = _embeddings(expert, "expert", example_id)
    if generated.shape[1] != expert.shape[1]:
        raise ValueError(f"example {example_id!r}: generated embeddings have dimension "
                         f"{generated.shape[1]}, expert ones {expert.shape[1]}")
    unit_generated = generated / np.linalg.norm(generated, axis=1, keepdims=True)
    unit_expert = expert / np.linalg.norm(expert, axis=1, keepdims=True)
    return unit_generated @ unit_expert.T


def embedding_matching_scores(generated: np.ndarray, expert: np.ndarray, *,
                              tau: float = EMBEDDING_TAU,
                              example_id: Hashable = None) -> MatchScores:
    """P, R, F1 of Table A.2 (Hong et al.) with match = 1[cos(c^g, c^*) > tau], tau = 0.7.

    P: share of generated criteria matching at least one expert criterion; R: share of
    expert criteria matched by at least one generated criterion; F1 as in Algorithm 2.
    """
    return match_set_scores(cosine_similarity_matrix(generated, expert, example_id) > tau)


def match_set_scores(matches: np.ndarray) -> MatchScores:
    """P, R, F1 from a 0/1 match matrix (generated x expert): the shares of generated and of
    expert criteria with at least one match (Table A.2; also the framings of Figure A.1)."""
    precision = float(matches.any(axis=1).mean())
    recall = float(matches.any(axis=0).mean())
    return MatchScores(precision, recall, harmonic_f1(precision, recall))


def embedding_matching_records(
    embeddings: Mapping[Hashable, tuple[np.ndarray, np.ndarray]], *, tau: float = EMBEDDING_TAU,
) -> pd.DataFrame:
    """embedding_matching_scores for every example: {example_id: (generated, expert)}."""
    return _match_records({
        example: embedding_matching_scores(pair[0], pair[1], tau=tau, example_id=example)
        for example, pair in embeddings.items()})


# --- Algorithm 3: GenRubric score correlation on a panel --------------------------------

def pass_fractions(verdicts: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """frac(C; R): the share of a rubric's criteria a response passes, per `by` group.

    verdicts: one row per judged criterion with a 0/1 `passed` column and the `by` columns.
    """
    by = list(by)
    _require_columns(verdicts, by + ["passed"], "verdicts")
    bad = ~verdicts["passed"].isin([0, 1]) | verdicts["passed"].isna()
    if bad.any():
        where = verdicts.loc[bad, by].head(5).to_dict("records")
        raise ValueError(f"verdicts: passed must be 0 or 1, bad at {where}")
    return verdicts.groupby(by, sort=False)["passed"].mean()


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """corr(rank(x), rank(y)), ties averaged (Algorithm 3 line 8); NaN if x or y is constant."""
    x, y = _paired(x, y)
    if _is_constant(x) or _is_constant(y):
        return math.nan
    return float(stats.spearmanr(x, y).statistic)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (Table A.2): (C - D) / sqrt(n_x * n_y); NaN if x or y is constant.

    Over the pairs k < l, C counts concordant and D discordant pairs, n_x the pairs not
    tied in x and n_y the pairs not tied in y (a pair tied in both is in neither).
    """
    x, y = _paired(x, y)
    if _is_constant(x) or _is_constant(y):
        return math.nan
    return float(stats.kendalltau(x, y, variant="b").statistic)


def top1_consistency(generated: np.ndarray, expert: np.ndarray) -> float:
    """1[argmax_k s^g_k in argmax_k s^*_k] (Table A.2), ties in s^g broken uniformly at random.

    With several k at the maximum of s^g, the value is the expected indicator: the share of
    those k that are also at the maximum of s^*. It is the plain indicator otherwise.
    """
    generated, expert = _paired(generated, expert)
    top_generated = generated == generated.max()
    top_expert = expert == expert.max()
    return float(np.count_nonzero(top_generated & top_expert) / np.count_nonzero(top_generated))


def pairwise_accuracy(generated: np.ndarray, expert: np.ndarray) -> float:
    """Share of pairs k < l with sign(s^g_k - s^g_l) = sign(s^*_k - s^*_l) (Table A.2)."""
    generated, expert = _paired(generated, expert)
    return float(np.mean(_pair_signs(generated) == _pair_signs(expert)))


def panel_records(panel: pd.DataFrame) -> pd.DataFrame:
    """Algorithm 3 per example, over its K panel responses; one row per example.

    panel: one row per (example_id, response_model) with generated_frac = frac(C^g_i; R_ik)
    and expert_frac = frac(C^*_i; R_ik) in [0, 1]. Every example must have the same set of
    at least 2 response models. Returns PANEL_COLUMNS indexed by example_id; `left_out` is
    True where s^g or s^* is constant over k (Algorithm 3 line 5), and then all four
    statistics are NaN: with no ordering to compare, the example is left out of every mean.
    """
    keys = ["example_id", "response_model"]
    _require_columns(panel, keys + ["generated_frac", "expert_frac"], "panel")
    _check_fractions(panel, ["generated_frac", "expert_frac"], keys, "panel")
    duplicated = panel.duplicated(subset=keys, keep=False)
    if duplicated.any():
        where = panel.loc[duplicated, keys].drop_duplicates().head(5).to_dict("records")
        raise ValueError(f"panel: more than one response for {where}")
    rows, models = {}, None
    for example, group in panel.groupby("example_id", sort=False):
        group = group.sort_values("response_model", kind="stable")
        these = group["response_model"].tolist()
        if models is None:
            models = these
        if these != models:
            raise ValueError(f"panel: example {example!r} has responses from {these}, "
                             f"the first example from {models}")
        if len(these) < 2:
            raise ValueError(f"panel: example {example!r} has {len(these)} response; need >= 2")
        rows[example] = _panel_row(group["generated_frac"].to_numpy(),
                                   group["expert_frac"].to_numpy())
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=PANEL_COLUMNS)
    return frame.rename_axis("example_id")


def panel_summary(records: pd.DataFrame) -> dict[str, float]:
    """Algorithm 3 line 9 for each statistic: the mean over examples not left out.

    Returns the four means (NaN if every example is left out), n_examples and n_left_out.
    """
    _require_columns(records, PANEL_COLUMNS, "panel records")
    kept = records[~records["left_out"].astype(bool)]
    summary = {name: (float(kept[name].mean()) if len(kept) else math.nan)
               for name in PANEL_STATISTICS}
    summary["n_examples"] = int(len(records))
    summary["n_left_out"] = int(records["left_out"].astype(bool).sum())
    return summary


# --- RubricRAG on physician responses (Section 4.2) and Table A.5 ------------------------

def physician_correlation(scores: pd.DataFrame) -> float:
    """Spearman correlation ACROSS examples of frac(C^g; R^phy) and frac(C^*; R^phy).

    Rests on Section 4.2: "We compute the Spearman correlation over the examples that have
    a physician response (92/105 examples in our context)". scores: one row per example that
    has a physician response, columns example_id, generated_frac, expert_frac. NaN when
    either column is constant.
    """
    _check_per_example(scores, ["generated_frac", "expert_frac"], "physician scores")
    return spearman_rho(scores["generated_frac"].to_numpy(), scores["expert_frac"].to_numpy())


def physician_correlation_statistic(scores: pd.DataFrame,
                                    examples: Sequence[Hashable]) -> Statistic:
    """`physician_correlation` on a draw of positions into `examples` (None if undefined).

    Algorithm 4 draws from all n examples; `scores` holds the subset with a physician
    response, and a drawn example outside it adds nothing to that draw's correlation.
    """
    _check_per_example(scores, ["generated_frac", "expert_frac"], "physician scores")
    order = _example_positions(examples)
    unknown = [e for e in scores["example_id"] if e not in order]
    if unknown:
        raise ValueError(f"physician scores hold examples not in the order: {unknown[:5]}")
    generated = np.full(len(order), np.nan)
    expert = np.full(len(order), np.nan)
    positions = [order[e] for e in scores["example_id"]]
    generated[positions] = scores["generated_frac"].to_numpy(dtype=np.float64)
    expert[positions] = scores["expert_frac"].to_numpy(dtype=np.float64)

    def statistic(indices: np.ndarray) -> float | None:
        drawn = indices[~np.isnan(generated[indices])]
        if drawn.size < 2:
            return None
        rho = spearman_rho(generated[drawn], expert[drawn])
        return None if math.isnan(rho) else rho

    return statistic


def discrimination_records(scores: pd.DataFrame) -> pd.Series:
    """Per example 1[frac(C; R^phy) > frac(C; R^bad)] (Section 4.2 formula; ties count 0).

    scores: one row per example, columns example_id, physician_frac, bad_frac, for one
    rubric C (generated or expert). The mean of the result is the discrimination rate.
    """
    _check_per_example(scores, ["physician_frac", "bad_frac"], "discrimination scores")
    preferred = (scores["physician_frac"] > scores["bad_frac"]).astype(np.float64)
    return pd.Series(preferred.to_numpy(), index=scores["example_id"].to_numpy(),
                     name="physician_preferred").rename_axis("example_id")


def discrimination_rate(scores: pd.DataFrame) -> float:
    """E[1[frac(C; R^phy) > frac(C; R^bad)]] over examples (Section 4.2, Figure 4 right)."""
    return float(discrimination_records(scores).mean())


def degradation_records(scores: pd.DataFrame) -> pd.Series:
    """Per example frac(C^*; R) - frac(C^*; R^degraded): the drop in expert score (Table A.5).

    Rests on Section 4.3: "we investigate directly the impact of their approach for
    constructing 'bad' responses by measuring the change in expert score before and after
    the degradation". scores: example_id, original_frac, degraded_frac for one response model.
    """
    _check_per_example(scores, ["original_frac", "degraded_frac"], "degradation scores")
    drop = scores["original_frac"] - scores["degraded_frac"]
    return pd.Series(drop.to_numpy(dtype=np.float64), index=scores["example_id"].to_numpy(),
                     name="expert_drop").rename_axis("example_id")


def degradation_drop(scores: pd.DataFrame) -> float:
    """Mean over examples of the drop in expert-rubric fraction (Table A.5, one model)."""
    return float(degradation_records(scores).mean())


# --- bootstrap helper --------------------------------------------------------------------

def mean_statistic(values: pd.Series, examples: Sequence[Hashable], *,
                   allow_absent: bool = False) -> Statistic:
    """The mean of the defined (non-NaN) values on a draw of positions into `examples`.

    For Algorithm 4 over per-example baseline values: a column of llm_matching_records or
    panel_records, or discrimination_records, indexed by example_id. Returns None on a draw
    with no defined value. An example of `examples` missing from `values` raises, unless
    allow_absent (for statistics defined on a subset, e.g. examples with a physician
    response), when it counts as undefined.
    """
    if not isinstance(values, pd.Series):
        raise ValueError(
            "mean_statistic needs a Series of per-example values indexed by example_id")
    order = _example_positions(examples)
    if not values.index.is_unique:
        raise ValueError("values hold an example id more than once: "
                         f"{values.index[values.index.duplicated()].unique().tolist()[:5]}")
    unknown = [e for e in values.index if e not in order]
    if unknown:
        raise ValueError(f"values hold examples not in the order: {unknown[:5]}")
    missing = [e for e in order if e not in values.index]
    if missing and not allow_absent:
        raise ValueError(f"values lack examples {missing[:5]} (pass allow_absent=True if the "
                         "statistic is defined on a subset)")
    array = values.reindex(list(order)).to_numpy(dtype=np.float64)

    def statistic(indices: np.ndarray) -> float | None:
        drawn = array[indices]
        drawn = drawn[~np.isnan(drawn)]
        return float(drawn.mean()) if drawn.size else None

    return statistic


# --- helpers -----------------------------------------------------------------------------

def _example_positions(examples: Sequence[Hashable]) -> dict[Hashable, int]:
    examples = list(examples)
    order = {example: position for position, example in enumerate(examples)}
    if len(order) != len(examples):
        raise ValueError("the example order lists an example id more than once")
    return order


def _panel_row(generated: np.ndarray, expert: np.ndarray) -> list:
    n = len(generated)
    if _is_constant(generated) or _is_constant(expert):
        return [n, True, math.nan, math.nan, math.nan, math.nan]
    return [n, False, spearman_rho(generated, expert), kendall_tau_b(generated, expert),
            top1_consistency(generated, expert), pairwise_accuracy(generated, expert)]


def _pair_signs(values: np.ndarray) -> np.ndarray:
    """sign(v_k - v_l) for every pair k < l, as a flat array."""
    upper_k, upper_l = np.triu_indices(len(values), k=1)
    return np.sign(values[upper_k] - values[upper_l])


def _paired(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(f"need two score vectors of one length, got shapes {x.shape}, {y.shape}")
    if len(x) == 0:
        raise ValueError("need at least one score in each vector")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("score vectors contain NaN")
    return x, y


def _is_constant(values: np.ndarray) -> bool:
    return bool(np.all(values == values[0]))


def _similarity_matrix(similarity: np.ndarray, example_id: Hashable) -> np.ndarray:
    matrix = np.asarray(similarity)
    if matrix.ndim != 2:
        raise ValueError(f"example {example_id!r}: similarity must be a (generated x expert) "
                         f"matrix, got shape {matrix.shape}")
    if matrix.shape[0] == 0:
        raise ValueError(f"example {example_id!r}: empty generated rubric, P is undefined")
    if matrix.shape[1] == 0:
        raise ValueError(f"example {example_id!r}: empty expert rubric, R is undefined")
    numeric = matrix.astype(np.float64)
    bad = (np.isnan(numeric) | (numeric < 0) | (numeric > SIMILARITY_MAX)
           | (numeric != np.round(numeric)))
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ValueError(f"example {example_id!r}: similarity must be an integer 0..9, got "
                         f"{matrix[row, column]!r} at (generated {row}, expert {column})")
    return numeric


def _embeddings(vectors: np.ndarray, which: str, example_id: Hashable) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0:
        raise ValueError(f"example {example_id!r}: {which} embeddings must be a non-empty "
                         f"(criteria x dimension) matrix, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"example {example_id!r}: {which} embeddings are not all finite")
    zero = np.flatnonzero(np.linalg.norm(array, axis=1) == 0)
    if zero.size:
        raise ValueError(f"example {example_id!r}: {which} criterion {int(zero[0])} has a "
                         f"zero embedding, cosine undefined")
    return array


def _match_records(scores: Mapping[Hashable, MatchScores]) -> pd.DataFrame:
    if not scores:
        raise ValueError("no examples to score")
    rows = {example: [s.precision, s.recall, s.f1] for example, s in scores.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=MATCH_COLUMNS)
    return frame.rename_axis("example_id")


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{what} lack column(s) {missing}")


def _check_fractions(frame: pd.DataFrame, columns: Sequence[str], keys: Sequence[str],
                     what: str) -> None:
    for column in columns:
        values = frame[column]
        bad = values.isna() | (values < 0) | (values > 1)
        if bad.any():
            where = frame.loc[bad, list(keys)].head(5).to_dict("records")
            raise ValueError(f"{what}: {column} must be a fraction in [0, 1], bad at {where}")


def _check_per_example(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    _require_columns(frame, ["example_id"] + list(columns), what)
    if frame.empty:
        raise ValueError(f"{what}: no examples")
    duplicated = frame["example_id"].duplicated()
    if duplicated.any():
        raise ValueError(f"{what}: example ids listed twice: "
                         f"{frame.loc[duplicated, 'example_id'].head(5).tolist()}")
    _check_fractions(frame, columns, ["example_id"], what)
