"""What the coverage study (rubriclab.stats.coverage) decides and how its results read: the
rule that a method holds its coverage (`held`), the choices the study makes by it
(`decisions`), and the markdown tables of its cells, of its summary per method and of the
binomial intervals' exact coverage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rubriclab.stats import intervals
from rubriclab.stats.coverage import CARRY_RATES, CARRY_SIZES, binomial_coverage
from rubriclab.tidy import markdown_table


METHOD_NAMES = {
    "jeffreys_bootstrap": "Jeffreys bootstrap", "labelled_bootstrap": "labelled bootstrap",
    "lang_reiczigel": "Lang-Reiczigel", "ppi": "PPI", "ppi_plus_plus": "PPI++",
    "delta_method": "delta method (truescore)", "exact": "exact projection",
    "algorithm4_percentile": "Algorithm 4", "ratio_bootstrap": "Algorithm 4 (ratio)",
    **intervals.RATE_METHOD_TITLES,
}
FLOOR = 0.93
# The corrected-rate intervals `rubriclab correct` offers (verify.calibration.INTERVAL_METHODS):
# the candidates for its default. PPI estimates the rate another way and truescore's delta
# method is studied as a peer; neither is a candidate.
CORRECT_CANDIDATES = ("exact", "lang_reiczigel", "jeffreys_bootstrap", "labelled_bootstrap")
NOMINAL = 0.95


def held(cells: pd.DataFrame, floor: float = FLOOR) -> bool:
    """The study's rule: every cell covers at least `floor` within one Monte Carlo error."""
    return bool(((cells["coverage"] + cells["coverage_mc"]) >= floor).all())


def _size_n(size: str) -> int:
    return int(str(size).removeprefix("n=").split()[0])


def decisions(table: pd.DataFrame, floor: float = FLOOR, nominal: float = NOMINAL) -> dict:
    """What the study chooses, by rules fixed before it was run:

    - carry_method: among the binomial intervals that hold at every carry size, the one with
      the smallest mean width over the carry cells (None where none holds);
    - carry_held: per carry method, whether it holds at every size;
    - transfer_held_from: the smallest transfer size n from which Algorithm 4 holds at that
      size and every larger one studied (None where it does not hold at the largest);
    - verify_held: per verify method, the sizes (m, n, design) at which it covers at least
      the nominal `nominal` in every cell within one Monte Carlo error;
    - correct_default: among CORRECT_CANDIDATES that hold the nominal coverage at every verify
      size, the one with the smallest mean width over the verify cells (None where none does).
    """
    out: dict = {}
    verify = table[table["family"] == "verify"]
    if not verify.empty:
        sizes = list(dict.fromkeys(verify["size"]))
        out["verify_held"] = {
            method: [size for size, group in part.groupby("size", sort=False)
                     if held(group, nominal)]
            for method, part in verify.groupby("method", sort=False)}
        valid = [m for m in CORRECT_CANDIDATES
                 if m in out["verify_held"] and len(out["verify_held"][m]) == len(sizes)]
        widths = verify.groupby("method")["mean_width"].mean()
        out["correct_default"] = min(valid, key=lambda m: widths[m]) if valid else None
    carry = table[table["family"] == "carry"]
    if not carry.empty:
        out["carry_held"] = {method: all(held(group, floor) for _, group in
                                         part.groupby("size", sort=False))
                             for method, part in carry.groupby("method", sort=False)}
        candidates = [m for m in intervals.RATE_METHODS if out["carry_held"].get(m)]
        widths = carry.groupby("method")["mean_width"].mean()
        out["carry_method"] = min(candidates, key=lambda m: widths[m]) if candidates else None
    transfer = table[table["family"] == "transfer"]
    if not transfer.empty:
        by_n = {n: held(group, floor) for n, group in
                transfer.groupby(transfer["size"].map(_size_n))}
        held_from = None
        for n in sorted(by_n, reverse=True):
            if not by_n[n]:
                break
            held_from = n
        out["transfer_held"] = by_n
        out["transfer_held_from"] = held_from
    return out


def _cover(row) -> str:
    return f"{row.coverage:.3f} ± {row.coverage_mc:.3f}"


def _width(row) -> str:
    if math.isnan(row.mean_width):
        return "n/a"
    return f"{row.mean_width:.3f} ± {row.width_mc:.3f}"


def cell_markdown(table: pd.DataFrame, family: str) -> str:
    """Every cell of one family, one line per cell, each method's coverage and mean width with
    their Monte Carlo errors ("c ± mc | w ± mc"); verify adds the share without an interval."""
    part = table[table["family"] == family]
    if part.empty:
        return ""
    methods = list(dict.fromkeys(part["method"]))
    header = ["world", "size"]
    for method in methods:
        name = METHOD_NAMES.get(method, method)
        header += [f"{name} coverage", f"{name} width"]
    if family == "verify":
        header += ["no interval (RG / PPI)"]
    rows = []
    for (size, world), cell in part.groupby(["size", "world"], sort=False):
        by_method = {row.method: row for row in cell.itertuples(index=False)}
        values = [world, size]
        for method in methods:
            row = by_method[method]
            values += [_cover(row), _width(row)]
        if family == "verify":
            rg = by_method.get("lang_reiczigel", next(iter(by_method.values())))
            ppi = by_method.get("ppi", rg)
            values.append(f"{rg.undefined:.3f} / {ppi.undefined:.3f}")
        rows.append(values)
    return "\n".join(markdown_table(header, rows)) + "\n"


def summary_markdown(table: pd.DataFrame, floor: float = 0.93) -> str:
    """Per family and method (and, for verify, labelled-slice size m): the mean coverage over
    cells, the share of cells below `floor`, the lowest cell, and the mean width."""
    lines = []
    for family, part in table.groupby("family", sort=False):
        keys = ["method"]
        if family == "verify":
            part = part.assign(m=part["size"].str.extract(r"m=(\d+)")[0].astype(int))
            keys = ["method", "m"]
        elif family == "transfer":
            keys = ["method", "size"]
        elif family == "carry":
            keys = ["size", "method"]
        holds = family in ("carry", "transfer")
        header = [*keys, "cells", "mean coverage", f"cells below {floor:.2f}", "lowest cell",
                  "mean coverage with an interval", "mean width",
                  *(["holds (every cell + MC error >= 0.93)"] if holds else [])]
        rows = []
        for key, group in part.groupby(keys, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            rows.append([*(METHOD_NAMES.get(str(k), str(k)) for k in key), len(group),
                         f"{group.coverage.mean():.3f}", f"{(group.coverage < floor).mean():.2f}",
                         f"{group.coverage.min():.3f}", f"{group.coverage_defined.mean():.3f}",
                         f"{group.mean_width.mean():.3f}",
                         *(["yes" if held(group, floor) else "no"] if holds else [])])
        lines += [f"### {family}", "", *markdown_table(header, rows)]
        lines.append("")
    return "\n".join(lines)


def exact_markdown(sizes=CARRY_SIZES, methods=intervals.RATE_METHODS, level: float = 0.95,
                   step: float = 0.001) -> str:
    """Per carry denominator m and binomial method, its exact coverage (`binomial_coverage`,
    no Monte Carlo error): the lowest over true rates step, 2 step, ..., 1 - step, and the
    lowest over the study's rates (CARRY_RATES)."""
    grid = np.arange(step, 1 - step / 2, step)
    header = ["m", "method", f"lowest exact coverage, rates {step:g} to {1 - step:g}",
              "at rate", "lowest at the study's rates"]
    rows = []
    for m in sorted({size.members for size in sizes}):
        for method in methods:
            fine = binomial_coverage(method, m, grid, level)
            study = binomial_coverage(method, m, np.array(CARRY_RATES), level)
            rows.append([m, METHOD_NAMES.get(method, method), f"{fine.min():.3f}",
                         f"{grid[fine.argmin()]:.3f}", f"{study.min():.3f}"])
    return "\n".join(markdown_table(header, rows)) + "\n"


def verify_size_markdown(table: pd.DataFrame, nominal: float = NOMINAL) -> str:
    """Per verify size (m, n, design) and method: the cells' mean and lowest coverage, the
    share of cells below `nominal`, the mean width (clipped to [0, 1]) and whether every cell
    covers at least `nominal` within one Monte Carlo error (the rule `decisions` applies)."""
    part = table[table["family"] == "verify"]
    if part.empty:
        return ""
    header = ["size", "method", "cells", "mean coverage", "lowest cell",
              f"cells below {nominal:.2f}", "mean width",
              f"holds (every cell + MC error >= {nominal:.2f})"]
    rows = []
    for (size, method), group in part.groupby(["size", "method"], sort=False):
        rows.append([size, METHOD_NAMES.get(method, method), len(group),
                     f"{group.coverage.mean():.3f}", f"{group.coverage.min():.3f}",
                     f"{(group.coverage < nominal).mean():.2f}",
                     f"{group.mean_width.mean():.3f}",
                     "yes" if held(group, nominal) else "no"])
    return "\n".join(markdown_table(header, rows)) + "\n"


def verify_pivot_markdown(table: pd.DataFrame, nominal: float = NOMINAL) -> str:
    """One line per verify size (m, n, design), one column per method: "mean coverage
    (lowest cell) / mean width", a * where every cell holds `nominal` within one MC error."""
    part = table[table["family"] == "verify"]
    if part.empty:
        return ""
    methods = list(dict.fromkeys(part["method"]))
    header = ["size", *(METHOD_NAMES.get(m, m) for m in methods)]
    rows = []
    for size, group in part.groupby("size", sort=False):
        values = [size]
        for method in methods:
            cells = group[group["method"] == method]
            mark = "*" if held(cells, nominal) else ""
            values.append(f"{cells.coverage.mean():.3f} ({cells.coverage.min():.3f}){mark} / "
                          f"{cells.mean_width.mean():.3f}")
        rows.append(values)
    return "\n".join(markdown_table(header, rows)) + "\n"
