"""Closed-form Shapley attribution against brute-force enumeration, and at scale.

1. On one random verdict matrix (200 outputs x 12 checks) both compute catch credit and
   false-fail blame; the best-of-repeats times, their ratio and the largest difference are
   printed. Brute force enumerates all 2^12 coalitions for each of the two games.
2. The closed form alone on 10^6 outputs x 64 checks, with per-check fail rates drawn
   uniformly in [0.01, 0.20] (a check answers No on 1% to 20% of outputs) and 2/3 of the
   outputs flawed; matrix generation is timed apart from the attribution.

    .venv/bin/python benchmarks/shapley_closed_form.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rubriclab.carry.attribution import shapley_attribution, shapley_brute_force


def random_verdicts(rng, n_outputs: int, n_checks: int) -> tuple[np.ndarray, np.ndarray]:
    fail_rates = rng.uniform(0.01, 0.20, size=n_checks).astype(np.float32)
    fails = rng.random((n_outputs, n_checks), dtype=np.float32) < fail_rates
    flawed = rng.random(n_outputs) < 2 / 3
    return fails, flawed


def best_time(function, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), result


def compare_with_brute_force(rng, repeats: int) -> None:
    fails, flawed = random_verdicts(rng, 200, 12)
    closed_s, closed = best_time(lambda: shapley_attribution(fails, flawed), repeats * 100)
    brute_s, brute = best_time(lambda: (shapley_brute_force(fails, flawed, "catches"),
                                        shapley_brute_force(fails, flawed, "false_fails")),
                               repeats)
    gap = max(np.abs(brute[0] - closed.credit).max(), np.abs(brute[1] - closed.blame).max())
    print("200 outputs x 12 checks (credit and blame)")
    print(f"  closed form  {closed_s * 1e3:10.3f} ms")
    print(f"  brute force  {brute_s * 1e3:10.3f} ms  (2 games x 4096 coalitions)")
    print(f"  ratio        {brute_s / closed_s:10.0f} x")
    print(f"  max |difference| = {gap:.2e}  ({'equal' if gap < 1e-9 else 'NOT EQUAL'})")


def time_at_scale(rng, repeats: int) -> None:
    started = time.perf_counter()
    fails, flawed = random_verdicts(rng, 10**6, 64)
    generated_s = time.perf_counter() - started
    closed_s, closed = best_time(lambda: shapley_attribution(fails, flawed), repeats)
    print("10^6 outputs x 64 checks")
    print(f"  matrix generation {generated_s:.2f} s; fail rate {fails.mean():.3f}; "
          f"flawed caught {closed.flawed_caught}, correct failed {closed.correct_failed}")
    print(f"  closed form  {closed_s:.3f} s (best of {repeats})")
    print(f"  efficiency: credit sum - flawed caught = "
          f"{closed.credit.sum() - closed.flawed_caught:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    compare_with_brute_force(rng, args.repeats)
    time_at_scale(rng, args.repeats)


if __name__ == "__main__":
    main()
