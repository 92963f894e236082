"""The coverage study: its worlds have the values they claim, and the defaults keep coverage.

The two seeded coverage tests are the issue's acceptance checks: on a small grid at the papers'
sizes the default verify interval covers at least 93% of simulated studies, and so does
Algorithm 4's interval for a Q metric at n = 105, each with Monte Carlo error under 0.01.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from rubriclab.stats.bootstrap import ratio_bootstrap
from rubriclab.stats.coverage import (
    CARRY_METHODS,
    CARRY_RATES,
    CARRY_SIZES,
    DIFFERENCE_WORLDS,
    RESULT_COLUMNS,
    TRANSFER_SIZES,
    TRANSFER_WORLDS,
    CarryCell,
    CarrySize,
    QWorld,
    SpearmanWorld,
    StudySize,
    VerifyCell,
    VerifyGrid,
    binomial_coverage,
    bootstrap_sums,
    carry_cell,
    draw_q,
    draw_spearman,
    draw_verify,
    run_study,
    summarise,
    transfer_cell,
    verify_cell,
)
from rubriclab.stats.coverage_report import decisions, held
from rubriclab.stats.intervals import RATE_METHODS, binomial_interval
from rubriclab.stats.coverage import VERIFY_METHODS
from rubriclab.verify.calibration import DEFAULT_METHOD

# The papers' sizes: the post's 50 labelled of 400 judged replies (a subset), with its judge
# (TPR 37/38, TNR 8/12) at its corrected rate and a lower one; carry's SummEdits and RAGTruth
# judges calibrated on about 100 labels and corrected on about 100 other items.
PAPER_CELLS = [
    VerifyCell(0.65, 37 / 38, 2 / 3, 50, 400, "subset"),
    VerifyCell(0.3, 37 / 38, 2 / 3, 50, 400, "subset"),
    VerifyCell(0.5, 0.8, 0.8, 100, 100, "independent"),
    VerifyCell(0.5, 0.9, 0.7, 100, 100, "independent"),
]


@pytest.mark.parametrize("cell", PAPER_CELLS, ids=lambda c: f"{c.world} {c.size}")
def test_the_default_verify_interval_keeps_coverage_at_the_papers_sizes(cell):
    (row,) = verify_cell(cell, replicates=1000, n_boot=1000, seed=2026,
                         methods=(DEFAULT_METHOD,))
    assert row["coverage_mc"] < 0.01
    assert row["coverage"] >= 0.93, row


@pytest.mark.parametrize("world", TRANSFER_WORLDS[:2], ids=lambda w: w.name)
def test_algorithm4_keeps_coverage_for_a_q_metric_at_105_examples(world):
    row = transfer_cell(world, 105, replicates=2000, n_boot=1000, seed=2026)
    assert row["coverage_mc"] < 0.01
    assert row["coverage"] >= 0.93, row


def test_q_world_truth_is_the_population_micro_average():
    world = QWorld("test", mu=0.3, a=0.4, back=0.05, mu_other=0.1)
    h, g, g_other = draw_q(world, 100_000, 4, np.random.default_rng(0))
    assert world.truth == pytest.approx(0.2)
    q = lambda moved: moved.sum() / h.sum()  # noqa: E731
    assert q(g) - q(g_other) == pytest.approx(0.2, abs=0.003)
    single = QWorld("single", mu=0.3, a=0.4, back=0.05)
    h, g, _ = draw_q(single, 100_000, 4, np.random.default_rng(1))
    assert g.sum() / h.sum() == pytest.approx(single.truth, abs=0.003)
    assert single.truth == pytest.approx(0.3 - 0.05 * 0.6 / 0.4)


def test_spearman_world_truth_is_morans_mean():
    world = SpearmanWorld("test", r=0.5, undefined=0.2)
    rho, defined = draw_spearman(world, 50_000, 4, np.random.default_rng(0))
    assert rho[defined].mean() == pytest.approx(world.truth, abs=0.004)
    assert defined.mean() == pytest.approx(0.8, abs=0.01)
    # each per-example value is scipy's Spearman correlation of that panel
    x = np.random.default_rng(5).standard_normal((3, 8))
    y = 0.5 * x + np.random.default_rng(6).standard_normal((3, 8))
    from scipy.stats import rankdata
    rx, ry = rankdata(x, axis=-1), rankdata(y, axis=-1)
    for row in range(3):
        expected = stats.spearmanr(x[row], y[row]).statistic
        assert np.corrcoef(rx[row], ry[row])[0, 1] == pytest.approx(expected)


def test_bootstrap_sums_draw_as_the_ratio_bootstrap_does():
    """One replicate's Algorithm 4 draws are those of rubriclab.stats.bootstrap (same seed),
    so the study's transfer and carry intervals are the project's own."""
    rng = np.random.default_rng(3)
    numerators = rng.integers(0, 5, size=(1, 30)).astype(float)
    denominators = numerators + rng.integers(0, 3, size=(1, 30))
    top, bottom = bootstrap_sums([numerators, denominators], 200, np.random.default_rng(9))
    from rubriclab.stats.bootstrap import percentile_rows
    low, high, _ = percentile_rows(top / bottom, 0.95)
    table = ratio_bootstrap(numerators.T, denominators.T, B=200, seed=9)
    assert (low[0], high[0]) == pytest.approx((table.low[0], table.high[0]), abs=1e-12)


def test_draw_verify_keeps_the_designs_apart():
    rng = np.random.default_rng(0)
    subset = draw_verify(VerifyCell(0.6, 0.9, 0.8, 50, 400, "subset"), 2000, rng)
    cells = subset["tp"] + subset["fn"] + subset["fp"] + subset["tn"]
    assert (cells == 50).all()
    assert (subset["k"] == subset["k_unlabelled"] + subset["tp"] + subset["fp"]).all()
    assert (subset["n_unlabelled"] == 350).all()
    assert subset["k"].mean() / 400 == pytest.approx(0.9 * 0.6 + 0.2 * 0.4, abs=0.005)
    independent = draw_verify(VerifyCell(0.6, 0.9, 0.8, 50, 400, "independent"), 2000, rng)
    assert (independent["k"] == independent["k_unlabelled"]).all()
    assert (independent["n_unlabelled"] == 400).all()
    with pytest.raises(ValueError, match="labelled subset of 200 items"):
        VerifyCell(0.5, 0.9, 0.9, 200, 100, "subset")
    with pytest.raises(ValueError, match="design must be"):
        VerifyCell(0.5, 0.9, 0.9, 20, 100, "nested")


def test_summarise_counts_missing_intervals_as_misses():
    low = np.array([0.1, 0.6, np.nan, -0.5])
    high = np.array([0.9, 0.8, np.nan, 1.7])
    row = summarise("verify", "w", "s", "m", 0.5, low, high, clip=True)
    assert row["coverage"] == 0.5 and row["undefined"] == 0.25
    assert row["coverage_defined"] == pytest.approx(2 / 3)
    assert row["coverage_mc"] == pytest.approx(math.sqrt(0.25 / 4))
    assert row["mean_width"] == pytest.approx((0.8 + 0.2 + 1.0) / 3)  # clipped widths
    assert row["wider_than_unit"] == pytest.approx(1 / 3)
    assert set(row) == set(RESULT_COLUMNS)


def test_a_tiny_study_has_a_row_for_every_method_and_cell():
    grid = VerifyGrid(p=(0.5,), tpr=(0.9,), tnr=(0.8,), m=(20, 200), n=(100,),
                      extra=((40, 160, "subset"),))
    size = StudySize(verify_replicates=30, verify_boot=50, transfer_replicates=20,
                     transfer_boot=50, carry_replicates=20, carry_boot=50, verify_grid=grid)
    table = run_study(size, seed=1)
    verify = table[table.family == "verify"]
    # (m=200, n=100, subset) is not a cell: the slice would exceed the judged set
    assert sorted(set(verify["size"])) == ["m=20 n=100 independent", "m=20 n=100 subset",
                                           "m=200 n=100 independent", "m=40 n=160 subset"]
    assert len(verify) == 4 * len(VERIFY_METHODS)
    transfer = table[table.family == "transfer"]
    assert len(transfer) == len(TRANSFER_SIZES) * (len(TRANSFER_WORLDS)
                                                   + len(DIFFERENCE_WORLDS) + 2)
    carry = table[table.family == "carry"]
    assert len(carry) == len(CARRY_SIZES) * len(CARRY_RATES) * len(CARRY_METHODS)
    assert table["coverage"].between(0, 1).all()
    again = run_study(size, seed=1, families=("transfer",))
    np.testing.assert_array_equal(again["coverage"], transfer["coverage"])  # seeded per family


def test_the_study_covers_every_denominator_the_carry_tables_use():
    """Table 2 (36 correct, 72 flawed, 12 unplanned of Recon-108), Figure 6 (24, 48, 8 of the
    8 evaluation environments' 72), Recon-72 and the SummEdits / RAGTruth evaluation splits;
    rates near 0 and 1; transfer at 35 examples or fewer."""
    sizes = {(s.members, s.items) for s in CARRY_SIZES}
    assert {(36, 108), (72, 108), (12, 108), (8, 72), (24, 72), (48, 72), (12, 72),
            (51, 100), (49, 100), (56, 112)} <= sizes
    assert min(CARRY_RATES) <= 0.01 and max(CARRY_RATES) >= 0.99
    assert {5, 10, 15, 20, 25, 35} <= set(TRANSFER_SIZES)
    with pytest.raises(ValueError, match="members <= items"):
        CarrySize(13, 12, "x")


def test_carry_cell_rates():
    rows = carry_cell(CarryCell(0.8, CarrySize(51, 100, "SummEdits")), replicates=400,
                      n_boot=200, seed=0)
    assert [row["method"] for row in rows] == list(CARRY_METHODS)
    assert all(row["truth"] == 0.8 and 0.85 < row["coverage"] <= 1 for row in rows)
    assert all(row["size"] == "51 of 100 (SummEdits)" for row in rows)


def test_the_carry_bootstrap_shortcut_has_the_ratio_bootstraps_distribution():
    """carry_cell draws (members, hits) counts instead of N item indices: the percentiles of
    the ratio must have the distribution ratio_bootstrap's give on the same sample."""
    m, n_items, k = 12, 108, 9
    member = np.arange(n_items) < m
    hit = np.arange(n_items) < k

    def rate(indices):
        return hit[indices].sum() / member[indices].sum() if member[indices].any() else None

    from rubriclab.stats.bootstrap import replicate_values
    reference = replicate_values(n_items, {"rate": rate}, B=20000, seed=4)["rate"].to_numpy()
    rng = np.random.default_rng(5)
    members = rng.binomial(n_items, m / n_items, size=20000)
    hits = rng.binomial(members, k / m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(members > 0, hits / np.where(members > 0, members, 1), np.nan)
    # the same distribution: CDFs within sampling error everywhere (a two-sample KS test)
    assert stats.ks_2samp(rates[~np.isnan(rates)], reference[~np.isnan(reference)]).pvalue > 0.01
    assert np.nanstd(rates) == pytest.approx(np.nanstd(reference), rel=0.03)
    assert np.isnan(rates).mean() == pytest.approx(np.isnan(reference).mean(), abs=0.002)


def test_the_ratio_bootstrap_collapses_where_every_item_passes():
    """The issue's failure: at a rate of 0.99 over 12 unplanned reports every report passes
    89% of the time and the bootstrap interval is [100, 100]; Clopper-Pearson holds."""
    rows = {row["method"]: row for row in carry_cell(
        CarryCell(0.99, CarrySize(12, 108, "Table 2")), replicates=2000, n_boot=500, seed=1)}
    assert rows["ratio_bootstrap"]["coverage"] < 0.2
    assert rows["clopper_pearson"]["coverage"] >= 0.95


@pytest.mark.parametrize("method", RATE_METHODS)
def test_simulated_coverage_matches_the_exact_coverage(method):
    cell = CarryCell(0.97, CarrySize(36, 108, "Recon-108"))
    (row,) = carry_cell(cell, replicates=4000, n_boot=10, seed=3, methods=(method,))
    exact = binomial_coverage(method, 36, np.array([0.97]))[0]
    assert row["coverage"] == pytest.approx(exact, abs=3 * row["coverage_mc"] + 1e-9)
    # and the exact coverage is that of the intervals it sums over
    k = np.arange(37)
    holds = [binomial_interval(i, 36, method)[0] <= 0.97 <= binomial_interval(i, 36, method)[1]
             for i in k]
    assert exact == pytest.approx(stats.binom.pmf(k, 36, 0.97)[holds].sum())


def test_clopper_pearson_holds_exactly_at_every_carry_size():
    rates = np.linspace(0.001, 0.999, 999)
    for size in CARRY_SIZES:
        assert binomial_coverage("clopper_pearson", size.members, rates).min() >= 0.95
    # the check can fail: Wilson does not at 12 items near 1
    assert binomial_coverage("wilson", 12, rates).min() < 0.9


def test_the_decision_rules():
    def rows(family, method, size, coverages):
        return [dict(family=family, method=method, size=size, world=str(i), coverage=c,
                     coverage_mc=0.005, mean_width=width[method])
                for i, c in enumerate(coverages)]
    width = {"clopper_pearson": 0.3, "wilson": 0.2, "jeffreys": 0.25, "ratio_bootstrap": 0.1,
             "algorithm4_percentile": 0.2}
    import pandas as pd
    table = pd.DataFrame(
        rows("carry", "clopper_pearson", "a", [0.96, 0.99])
        + rows("carry", "wilson", "a", [0.96, 0.90])
        + rows("carry", "jeffreys", "a", [0.95, 0.926])  # 0.926 + 0.005 >= 0.93
        + rows("carry", "ratio_bootstrap", "a", [0.95, 0.3])
        + rows("transfer", "algorithm4_percentile", "n=5", [0.95, 0.80])
        + rows("transfer", "algorithm4_percentile", "n=15", [0.95, 0.94])
        + rows("transfer", "algorithm4_percentile", "n=35", [0.95, 0.90])
        + rows("transfer", "algorithm4_percentile", "n=105", [0.95, 0.94]))
    assert held(table.iloc[4:6]) and not held(table.iloc[2:4])
    chosen = decisions(table)
    assert chosen["carry_method"] == "jeffreys"  # the narrowest that holds
    assert chosen["carry_held"] == {"clopper_pearson": True, "wilson": False, "jeffreys": True,
                                    "ratio_bootstrap": False}
    # n=35 fails, so holding at n=15 does not count: it holds from 105 on
    assert chosen["transfer_held_from"] == 105


def test_the_coverage_check_can_fail():
    """The same check on intervals that promise less (80%) finds them well short of 0.93, and
    on the transfer side likewise: the acceptance tests above have the power to fail."""
    (row,) = verify_cell(PAPER_CELLS[0], replicates=1000, n_boot=1000, seed=2026,
                         methods=(DEFAULT_METHOD,), level=0.8)
    assert row["coverage"] < 0.9
    short = transfer_cell(TRANSFER_WORLDS[0], 105, replicates=500, n_boot=500, seed=2026,
                          level=0.8)
    assert short["coverage"] < 0.88


def test_the_study_holds_the_sizes_of_verifys_paper_scale_table():
    """verify's calibration table labels each dataset's calibration split and judges its
    evaluation split (apart): the coverage study must have those sizes, read from paper.yaml
    so that a change of the paper's sizes leaves the study visibly behind."""
    paper = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "paper.yaml")
                           .read_text())
    sizes = {(cell.m, cell.n, cell.design) for cell in VerifyGrid().cells()}
    for name in ("summedits", "ragtruth"):
        split = paper["datasets"][name]
        m, n = sum(split["calibration"].values()), sum(split["evaluation"].values())
        assert (m, n, "independent") in sizes, name
    assert (40, 160, "subset") in sizes  # the tutorial's
