"""Statistics shared by the works.

- `bootstrap`: the paired bootstrap over examples (transfer, Algorithm 4; carry's rates, beside
  their intervals);
- `prevalence`: the interval methods for a judge's corrected pass rate (verify);
- `intervals`: the interval of a single rate (carry's rates: Clopper-Pearson, chosen by the
  coverage study) and the marks tables print beside an interval that says less than it should;
- `coverage`: the simulation study of every interval's coverage (benchmarks/coverage.py,
  docs/statistics.md).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Loaded on first use (PEP 562): importing one module of the package (rubriclab.stats.intervals,
# say) loads that module, not bootstrap and pandas with it.
if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module(f"{__name__}.bootstrap"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
