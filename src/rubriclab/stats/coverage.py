"""A simulation study of the intervals the project reports: coverage and width in known worlds.

Each *cell* is a world with a known true value and a sample size; each of R seeded replicates
draws data from the world, computes every interval method on it, and records whether the
interval covers the truth and how wide it is (clipped to [0, 1] for rates). Coverage is the
share of replicates whose interval covers the truth; a replicate with no interval (an undefined
estimate) counts as not covering and is also counted on its own (`undefined`); the coverage
among the replicates that have an interval is `coverage_defined`. The Monte Carlo
error of a coverage c over R replicates is sqrt(c (1 - c) / R); of a mean width, the standard
deviation of the widths over sqrt(their count).

Three families, one per work:

- verify (`verify_cell`): true pass rate p, judge TPR and TNR, a labelled slice of m items and a
  judged set of n items, the slice either independent of the judged set or a random subset of
  it. Methods (`VERIFY_METHODS`): rubriclab.stats.prevalence.METHODS, truescore's delta-method
  interval and the guaranteed-coverage projection interval
  (rubriclab.stats.exact_prevalence).
- transfer (`transfer_cell`): Algorithm 4's paired percentile bootstrap over n examples for a
  micro-averaged Q metric (Algorithm 1), a paired difference of two generators' Q on the same
  examples, and an Algorithm 3 mean of per-example Spearman correlations with undefined
  examples left out. Every world has its true value in closed form (see `TRANSFER_WORLDS`).
- carry (`carry_cell`): one rate (correct passed, flawed caught, unplanned caught) over the
  m items of its kind among the N items carry's rate rows are computed over, at every (m, N)
  the carry tables use (`CARRY_SIZES`): carry's ratio bootstrap (Algorithm 4 over items) and
  the binomial intervals of rubriclab.stats.intervals.

Whether a method *holds* its coverage at a size (`held`) is decided by a rule fixed before the
study was run: every cell of that size covers at least 0.93 give or take one Monte Carlo
error (coverage + coverage_mc >= 0.93). `decisions` applies the rules that choose from it;
both, and the study's tables, are in rubriclab.stats.coverage_report.

Everything is vectorised over replicates with numpy; memory is bounded by `chunk`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import product

import numpy as np
import pandas as pd
from scipy.stats import binom, rankdata

from rubriclab.stats import exact_prevalence, intervals, prevalence
from rubriclab.stats.bootstrap import percentile_rows

VERIFY_METHODS = (*prevalence.METHODS, "delta_method", "exact")

RESULT_COLUMNS = ["family", "world", "size", "method", "truth", "replicates", "coverage",
                  "coverage_mc", "undefined", "coverage_defined", "mean_width", "width_mc",
                  "wider_than_unit", "undefined_draws"]


@dataclass(frozen=True)
class VerifyCell:
    p: float
    tpr: float
    tnr: float
    m: int  # labelled slice
    n: int  # judged set
    design: str  # "independent" or "subset"

    def __post_init__(self) -> None:
        if self.design not in ("independent", "subset"):
            raise ValueError(f"design must be 'independent' or 'subset', got {self.design!r}")
        if self.design == "subset" and self.m > self.n:
            raise ValueError(f"a labelled subset of {self.m} items needs a judged set of at "
                             f"least as many, got n={self.n}")
        for name in ("p", "tpr", "tnr"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")

    @property
    def q(self) -> float:
        return self.tpr * self.p + (1 - self.tnr) * (1 - self.p)

    @property
    def world(self) -> str:
        return f"p={self.p:g} TPR={self.tpr:g} TNR={self.tnr:g}"

    @property
    def size(self) -> str:
        return f"m={self.m} n={self.n} {self.design}"


@dataclass(frozen=True)
class VerifyGrid:
    """The verify grid of the issue; `cells()` drops subset cells whose slice exceeds the set.

    extra: (m, n, design) sizes studied beside the grid's product: the tutorial's 40 labelled
    of 160 judged (docs/tutorial.md, section 3), and verify's calibration table at paper scale
    (config/paper.yaml): SummEdits' 100 labelled apart from its 100 judged, RAGTruth's 112 apart
    from 112. Added after the grid, so the grid's cells keep their seeds.
    """

    p: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    tpr: tuple[float, ...] = (0.6, 0.8, 0.99)
    tnr: tuple[float, ...] = (0.6, 0.8, 0.99)
    m: tuple[int, ...] = (20, 50, 200)
    n: tuple[int, ...] = (100, 400, 2000)
    designs: tuple[str, ...] = ("independent", "subset")
    extra: tuple[tuple[int, int, str], ...] = ((40, 160, "subset"), (100, 100, "independent"),
                                               (112, 112, "independent"))

    def cells(self) -> list[VerifyCell]:
        sizes = [(m, n, design) for design, m, n in product(self.designs, self.m, self.n)
                 if not (design == "subset" and m > n)]
        sizes += [size for size in self.extra if size not in sizes]
        return [VerifyCell(p, tpr, tnr, m, n, design)
                for m, n, design in sizes
                for p, tpr, tnr in product(self.p, self.tpr, self.tnr)]


def draw_verify(cell: VerifyCell, replicates: int, rng: np.random.Generator) -> dict:
    """Counts of `replicates` independent studies in the world of `cell`.

    Labelled slice: m items, each a human pass with probability p; the judge passes a human
    pass with probability TPR and fails a human fail with probability TNR. Judged set: n items
    whose judge verdict passes with probability q = TPR p + (1 - TNR)(1 - p); in the subset
    design the slice is m of them (so k counts the slice's judge passes), the other n - m are
    the unlabelled items PPI uses; in the independent design all n are.
    """
    n_pos = rng.binomial(cell.m, cell.p, size=replicates)
    tp = rng.binomial(n_pos, cell.tpr)
    tn = rng.binomial(cell.m - n_pos, cell.tnr)
    fn, fp = n_pos - tp, cell.m - n_pos - tn
    n_unlabelled = cell.n - cell.m if cell.design == "subset" else cell.n
    k_unlabelled = rng.binomial(n_unlabelled, cell.q, size=replicates)
    k = k_unlabelled + tp + fp if cell.design == "subset" else k_unlabelled
    return {"k": k, "n": np.full(replicates, cell.n), "tp": tp, "fn": fn, "fp": fp, "tn": tn,
            "k_unlabelled": k_unlabelled, "n_unlabelled": np.full(replicates, n_unlabelled)}


def verify_intervals(counts: dict, method: str, *, n_boot: int, rng: np.random.Generator,
                     level: float = 0.95) -> prevalence.Intervals:
    """One method's intervals for every replicate of `counts` (see `draw_verify`)."""
    cells = (counts["tp"], counts["fn"], counts["fp"], counts["tn"])
    if method == "jeffreys_bootstrap":
        return prevalence.jeffreys_bootstrap(counts["k"], counts["n"], *cells, n_boot=n_boot,
                                             rng=rng, level=level)
    if method == "labelled_bootstrap":
        return prevalence.labelled_bootstrap(counts["k"], counts["n"], *cells, n_boot=n_boot,
                                             rng=rng, level=level)
    if method == "lang_reiczigel":
        return prevalence.lang_reiczigel(counts["k"], counts["n"], *cells, level=level)
    if method == "delta_method":
        return exact_prevalence.delta_method(counts["k"], counts["n"], *cells, level=level)
    if method == "exact":
        return exact_prevalence.exact_projection(counts["k"], counts["n"], *cells, level=level)
    if method in ("ppi", "ppi_plus_plus"):
        return prevalence.ppi(counts["k_unlabelled"], counts["n_unlabelled"], *cells,
                              level=level, power_tuned=method == "ppi_plus_plus")
    raise ValueError(f"unknown method {method!r}; methods: {', '.join(VERIFY_METHODS)}")


def verify_cell(cell: VerifyCell, *, replicates: int, n_boot: int, seed: int,
                methods: tuple[str, ...] = VERIFY_METHODS, level: float = 0.95,
                chunk: int = 250) -> list[dict]:
    """Coverage and width of each method in one verify cell; one result row per method."""
    rng = np.random.default_rng(seed)
    counts = draw_verify(cell, replicates, rng)
    rows = []
    for method in methods:
        lows, highs, drawn_out = [], [], []
        for start in range(0, replicates, chunk):
            part = {key: value[start:start + chunk] for key, value in counts.items()}
            result = verify_intervals(part, method, n_boot=n_boot, rng=rng, level=level)
            lows.append(result.low)
            highs.append(result.high)
            drawn_out.append(result.n_undefined / result.n_draws if result.n_draws
                             else np.zeros_like(result.low))
        rows.append(summarise("verify", cell.world, cell.size, method, cell.p,
                              np.concatenate(lows), np.concatenate(highs),
                              undefined_draws=np.concatenate(drawn_out), clip=True))
    return rows


def summarise(family: str, world: str, size: str, method: str, truth: float, low: np.ndarray,
              high: np.ndarray, *, undefined_draws: np.ndarray | None = None,
              clip: bool) -> dict:
    """One result row (RESULT_COLUMNS) from the raw bounds of R replicates."""
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    replicates = low.size
    exists = ~np.isnan(low) & ~np.isnan(high)
    covered = exists & (low <= truth) & (truth <= high)
    coverage = float(covered.mean())
    shown_low, shown_high = (np.clip(low, 0, 1), np.clip(high, 0, 1)) if clip else (low, high)
    widths = (shown_high - shown_low)[exists]
    return {
        "family": family, "world": world, "size": size, "method": method, "truth": truth,
        "replicates": replicates, "coverage": coverage,
        "coverage_mc": math.sqrt(coverage * (1 - coverage) / replicates),
        "undefined": float(1 - exists.mean()),
        "coverage_defined": float(covered[exists].mean()) if exists.any() else math.nan,
        "mean_width": float(widths.mean()) if widths.size else math.nan,
        "width_mc": float(widths.std(ddof=1) / math.sqrt(widths.size)) if widths.size > 1
        else math.nan,
        "wider_than_unit": float(((high - low)[exists] > 1).mean()) if exists.any() else math.nan,
        "undefined_draws": float(np.mean(undefined_draws)) if undefined_draws is not None
        else 0.0,
    }


# --- transfer: Algorithm 4 over examples ---------------------------------------------------

@dataclass(frozen=True)
class QWorld:
    """One Q metric's world (Algorithm 1 with a known value).

    Example i has K_i = 1 + Binomial(19, 1/2) measurement criteria, h_i ~ Binomial(K_i, a) of
    them at the start state a, and a per-example transfer rate theta_i = mu * w_i with
    w_i ~ 2 Beta(3, 3) (mean 1; it makes examples differ). After the intervention
    Binomial(h_i, theta_i) of the h_i move to b, and Binomial(K_i - h_i, back) of those already
    at b move away, so g_i = moved - moved back. Q = sum g / sum h has the population value
    mu - back (1 - a) / a. A second generator on the same examples has mu_other, the same w_i
    (its transfers rise and fall with the example's) and the same h_i (the measurement rubric
    is shared), so the paired difference Q - Q_other has the value mu - mu_other.
    """

    name: str
    mu: float
    a: float
    back: float = 0.02
    mu_other: float | None = None

    def __post_init__(self) -> None:
        for value in (self.mu, self.mu_other):
            if value is not None and not 0 <= 2 * value <= 1:
                raise ValueError(f"{self.name}: transfer rates must be in [0, 0.5], got {value}")

    @property
    def truth(self) -> float:
        if self.mu_other is not None:
            return self.mu - self.mu_other
        return self.mu - self.back * (1 - self.a) / self.a


# The four Q metrics of transfer's Figure 3, each with its own start share and transfer rate,
# and the Figure 5 comparison of two generators (a difference of 0.1, and none).
TRANSFER_WORLDS = (
    QWorld("Q+(Cg->C*)", mu=0.2, a=0.4),
    QWorld("Q-(Cg->C*)", mu=0.45, a=0.6),
    QWorld("Q+(C*->Cg)", mu=0.3, a=0.35),
    QWorld("Q-(C*->Cg)", mu=0.4, a=0.65),
)
DIFFERENCE_WORLDS = (
    QWorld("Q+(Cg->C*) G1 - G2", mu=0.3, a=0.4, mu_other=0.2),
    QWorld("Q+(Cg->C*) G1 - G2 (no difference)", mu=0.2, a=0.4, mu_other=0.2),
)


@dataclass(frozen=True)
class SpearmanWorld:
    """Algorithm 3: a panel of 8 responses per example whose (generated, expert) scores are
    bivariate normal with correlation r; an example is undefined (a constant score) with
    probability `undefined` and left out of the mean. The mean Spearman correlation of 8 such
    pairs is (6 / pi) ((K - 2) / (K + 1) asin(r / 2) + asin(r) / (K + 1)) (Moran, 1948)."""

    name: str
    r: float
    undefined: float = 0.1
    panel: int = 8

    @property
    def truth(self) -> float:
        k = self.panel
        return 6 / math.pi * ((k - 2) / (k + 1) * math.asin(self.r / 2)
                              + math.asin(self.r) / (k + 1))


SPEARMAN_WORLDS = (SpearmanWorld("Algorithm 3 mean Spearman, r=0.3", 0.3),
                   SpearmanWorld("Algorithm 3 mean Spearman, r=0.7", 0.7))

TRANSFER_SIZES = (5, 10, 15, 20, 25, 35, 105)


def draw_q(world: QWorld, n: int, replicates: int, rng: np.random.Generator):
    """(h, g, g_other): (replicates, n) arrays of per-example counts."""
    size = (replicates, n)
    k = 1 + rng.binomial(19, 0.5, size=size)
    h = rng.binomial(k, world.a)
    w = 2 * rng.beta(3, 3, size=size)
    at_b = k - h
    g = rng.binomial(h, world.mu * w) - rng.binomial(at_b, world.back)
    g_other = None
    if world.mu_other is not None:
        g_other = rng.binomial(h, world.mu_other * w) - rng.binomial(at_b, world.back)
    return h, g, g_other


def bootstrap_sums(values: list[np.ndarray], n_boot: int, rng: np.random.Generator,
                   ) -> list[np.ndarray]:
    """Algorithm 4's draws for many replicates: for each (replicates, n) array its sums over
    n_boot draws of n examples with replacement, one draw shared by every array (paired)."""
    replicates, n = values[0].shape
    indices = rng.integers(0, n, size=(replicates, n_boot, n))
    rows = np.arange(replicates)[:, None, None]
    return [array[rows, indices].sum(axis=-1) for array in values]


def transfer_cell(world: QWorld | SpearmanWorld, n: int, *, replicates: int, n_boot: int,
                  seed: int, level: float = 0.95, chunk: int = 100) -> dict:
    """Coverage of Algorithm 4's percentile interval for one transfer statistic at n examples."""
    rng = np.random.default_rng(seed)
    lows, highs, drawn_out = [], [], []
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        if isinstance(world, SpearmanWorld):
            rho, defined = draw_spearman(world, n, size, rng)
            total, count = bootstrap_sums([np.where(defined, rho, 0.0),
                                           defined.astype(np.float64)], n_boot, rng)
            with np.errstate(invalid="ignore", divide="ignore"):
                replicate = np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)
        else:
            h, g, g_other = draw_q(world, n, size, rng)
            if g_other is None:
                sum_h, sum_g = bootstrap_sums([h, g], n_boot, rng)
                with np.errstate(invalid="ignore", divide="ignore"):
                    replicate = np.where(sum_h > 0, sum_g / np.where(sum_h > 0, sum_h, 1), np.nan)
            else:
                sum_h, sum_g, sum_o = bootstrap_sums([h, g, g_other], n_boot, rng)
                with np.errstate(invalid="ignore", divide="ignore"):
                    replicate = np.where(sum_h > 0, (sum_g - sum_o) / np.where(sum_h > 0, sum_h,
                                                                               1), np.nan)
        low, high, n_used = percentile_rows(replicate, level)
        lows.append(low)
        highs.append(high)
        drawn_out.append(1 - n_used / n_boot)
    return summarise("transfer", world.name, f"n={n}", "algorithm4_percentile", world.truth,
                     np.concatenate(lows), np.concatenate(highs),
                     undefined_draws=np.concatenate(drawn_out), clip=False)


def draw_spearman(world: SpearmanWorld, n: int, replicates: int, rng: np.random.Generator):
    """(rho, defined): per-example Spearman correlations of panels of `world.panel` responses."""
    size = (replicates, n, world.panel)
    x = rng.standard_normal(size)
    y = world.r * x + math.sqrt(1 - world.r ** 2) * rng.standard_normal(size)
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    rho = (rx * ry).sum(axis=-1) / np.sqrt((rx ** 2).sum(axis=-1) * (ry ** 2).sum(axis=-1))
    defined = rng.random((replicates, n)) >= world.undefined
    return rho, defined


# --- carry: single rates ---------------------------------------------------------------------

@dataclass(frozen=True)
class CarrySize:
    """One rate's denominator as carry's tables use it: `members` items (e.g. the 12 unplanned
    reports of Recon-108) among the `items` the rate rows are computed over (carry's ratio
    bootstrap resamples all of them, so a resample holds a varying number of members)."""

    members: int
    items: int
    where: str

    def __post_init__(self) -> None:
        if not 0 < self.members <= self.items:
            raise ValueError(f"{self.where}: need 0 < members <= items, got {self.members} of "
                             f"{self.items}")

    @property
    def label(self) -> str:
        return f"{self.members} of {self.items} ({self.where})"


# Every denominator of carry's rate rows: Recon-108 (Table 2: 36 correct, 72 flawed, 12
# unplanned), the 8 evaluation environments (Figure 6: 24, 48, 8 of 72), Recon-72 (24, 48, 12
# of 72), SummEdits (51 consistent, 49 inconsistent of 100) and RAGTruth (56 + 56 of 112).
CARRY_SIZES = (
    CarrySize(8, 72, "unplanned, Figure 6"),
    CarrySize(12, 72, "unplanned, Recon-72"),
    CarrySize(12, 108, "unplanned, Table 2"),
    CarrySize(24, 72, "correct, Figure 6 and Recon-72"),
    CarrySize(36, 108, "correct, Recon-108"),
    CarrySize(48, 72, "flawed, Figure 6 and Recon-72"),
    CarrySize(49, 100, "inconsistent, SummEdits"),
    CarrySize(51, 100, "consistent, SummEdits"),
    CarrySize(56, 112, "either kind, RAGTruth"),
    CarrySize(72, 108, "flawed, Recon-108"),
)
CARRY_RATES = (0.01, 0.03, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 0.99)
CARRY_METHODS = ("ratio_bootstrap", *intervals.RATE_METHODS)


@dataclass(frozen=True)
class CarryCell:
    rate: float
    size: CarrySize

    def __post_init__(self) -> None:
        if not 0 <= self.rate <= 1:
            raise ValueError(f"rate must be in [0, 1], got {self.rate!r}")

    @property
    def world(self) -> str:
        return f"rate={self.rate:g}"


def carry_cells() -> list[CarryCell]:
    return [CarryCell(rate, size) for size, rate in product(CARRY_SIZES, CARRY_RATES)]


def carry_cell(cell: CarryCell, *, replicates: int, n_boot: int, seed: int, level: float = 0.95,
               methods: tuple[str, ...] = CARRY_METHODS, chunk: int = 500) -> list[dict]:
    """Coverage of every method for one rate: each replicate draws k ~ Binomial(m, rate)
    successes among the m members.

    ratio_bootstrap is carry's (rubriclab.stats.bootstrap.ratio_bootstrap over all N items) in
    distribution: a resample of N items holds M ~ Binomial(N, m / N) members, of which
    Binomial(M, k / m) are successes, the rate undefined (left out) where M = 0. Drawing those
    two counts instead of N indices gives the same percentiles' distribution at a fraction of
    the cost. The binomial methods are rubriclab.stats.intervals.binomial_interval at k of m.
    """
    rng = np.random.default_rng(seed)
    m, n_items = cell.size.members, cell.size.items
    k = rng.binomial(m, cell.rate, size=replicates)
    rows = []
    for method in methods:
        if method == "ratio_bootstrap":
            lows, highs = [], []
            for start in range(0, replicates, chunk):
                part = k[start:start + chunk]
                members = rng.binomial(n_items, m / n_items, size=(part.size, n_boot))
                hits = rng.binomial(members, (part / m)[:, None])
                with np.errstate(invalid="ignore", divide="ignore"):
                    rates = np.where(members > 0, hits / np.where(members > 0, members, 1),
                                     np.nan)
                low, high, _ = percentile_rows(rates, level)
                lows.append(low)
                highs.append(high)
            low, high = np.concatenate(lows), np.concatenate(highs)
        else:
            table_low, table_high = intervals.binomial_intervals(np.arange(m + 1), m, method,
                                                                 level)
            low, high = table_low[k], table_high[k]
        rows.append(summarise("carry", cell.world, cell.size.label, method, cell.rate, low,
                              high, clip=True))
    return rows


def binomial_coverage(method: str, n: int, rates: np.ndarray, level: float = 0.95
                      ) -> np.ndarray:
    """The exact coverage of a binomial interval at n for each true rate: the Binomial(n, rate)
    probability of the k whose interval holds the rate (no Monte Carlo error)."""
    rates = np.asarray(rates, dtype=np.float64)
    low, high = intervals.binomial_intervals(np.arange(n + 1), n, method, level)
    holds = (low[None, :] <= rates[:, None]) & (rates[:, None] <= high[None, :])
    return (binom.pmf(np.arange(n + 1)[None, :], n, rates[:, None]) * holds).sum(axis=1)


# --- the whole study ------------------------------------------------------------------------

@dataclass(frozen=True)
class StudySize:
    """Replicates and bootstrap draws per cell (the defaults are the benchmark's)."""

    verify_replicates: int = 400
    verify_boot: int = 1000
    transfer_replicates: int = 1000
    transfer_boot: int = 1000
    carry_replicates: int = 2000
    carry_boot: int = 1000
    verify_grid: VerifyGrid = field(default_factory=VerifyGrid)


def run_study(size: StudySize, *, seed: int = 0, families=("verify", "transfer", "carry"),
              progress=None) -> pd.DataFrame:
    """Every cell of every family; each cell seeded from (seed, its position) so that cells can
    be rerun alone. Returns one row per cell and method (RESULT_COLUMNS)."""
    rows: list[dict] = []
    verify_seeds, transfer_seeds, carry_seeds = np.random.SeedSequence(seed).spawn(3)
    if "verify" in families:
        cells = size.verify_grid.cells()
        for i, (cell, child) in enumerate(zip(cells, verify_seeds.spawn(len(cells)))):
            rows += verify_cell(cell, replicates=size.verify_replicates,
                                n_boot=size.verify_boot, seed=_seed(child))
            if progress:
                progress("verify", i + 1, len(cells))
    if "transfer" in families:
        worlds = [(w, n) for w in TRANSFER_WORLDS + DIFFERENCE_WORLDS + SPEARMAN_WORLDS
                  for n in TRANSFER_SIZES]
        for i, ((world, n), child) in enumerate(zip(worlds, transfer_seeds.spawn(len(worlds)))):
            rows.append(transfer_cell(world, n, replicates=size.transfer_replicates,
                                      n_boot=size.transfer_boot, seed=_seed(child)))
            if progress:
                progress("transfer", i + 1, len(worlds))
    if "carry" in families:
        grid = carry_cells()
        for i, (carry, child) in enumerate(zip(grid, carry_seeds.spawn(len(grid)))):
            rows += carry_cell(carry, replicates=size.carry_replicates, n_boot=size.carry_boot,
                               seed=_seed(child))
            if progress:
                progress("carry", i + 1, len(grid))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _seed(sequence: np.random.SeedSequence) -> int:
    return int(sequence.generate_state(1)[0])
