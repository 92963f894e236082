"""Statistics shared by the works: the paired bootstrap over examples (transfer, Algorithm 4)."""

from rubriclab.stats.bootstrap import (
    BOOTSTRAP_COLUMNS,
    difference,
    paired_bootstrap,
    percentile_interval,
    replicate_values,
    resample_indices,
)

__all__ = [
    "BOOTSTRAP_COLUMNS",
    "difference",
    "paired_bootstrap",
    "percentile_interval",
    "replicate_values",
    "resample_indices",
]
