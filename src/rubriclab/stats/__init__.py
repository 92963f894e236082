"""Statistics shared by the works.

- `bootstrap`: the paired bootstrap over examples (transfer, Algorithm 4; carry's rates);
- `prevalence`: the interval methods for a judge's corrected pass rate (verify);
- `coverage`: the simulation study of every interval's coverage (benchmarks/coverage.py,
  docs/statistics.md).
"""

from rubriclab.stats.bootstrap import (
    BOOTSTRAP_COLUMNS,
    difference,
    paired_bootstrap,
    percentile_interval,
    percentile_rows,
    replicate_values,
    resample_indices,
)

__all__ = [
    "BOOTSTRAP_COLUMNS",
    "difference",
    "paired_bootstrap",
    "percentile_interval",
    "percentile_rows",
    "replicate_values",
    "resample_indices",
]
