"""The work of an update that does not plan, at large N: distinct hypotheses and the
graded distance, each against the plain version it replaced, in this process.

    .venv/bin/python bench/planning_free.py [--samples 500 5000] [--capabilities 40]

* distinct rows: ``core.vectors.unique_rows`` (rows packed into bytes, sorted as
  whole keys) against ``np.unique(rows, axis=0)``, on N random boolean rows; both must
  give the same rows in the same order.
* graded distance: ``core.inference.graded_distance`` (states as 64-bit words, bits
  counted by numpy) against the pure-Python definition it replaced, on pairs of
  trajectories of bit-mask states; both must give the same number.

Per case: the median time per call over ``--repeats`` and the ratio (plain / ours).
Times are printed, never asserted on.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from cecm_ros.core.inference import graded_distance
from cecm_ros.core.vectors import unique_rows


def _median_s(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def plain_graded_distance(predicted, observed) -> float:
    """The definition, one pair of states at a time (what graded_distance was)."""
    differ = [[bin(a ^ b).count('1') for b in observed] for a in predicted]
    forward = sum(min(row[j] for row in differ) for j in range(len(observed))) / len(observed)
    backward = sum(min(row) for row in differ) / len(predicted)
    return (forward + backward) / 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--samples', type=int, nargs='+', default=[500, 5000])
    parser.add_argument('--capabilities', type=int, default=40)
    parser.add_argument('--states', type=int, default=30, help='states per trajectory')
    parser.add_argument('--bits', type=int, default=150, help='propositions per state')
    parser.add_argument('--repeats', type=int, default=50)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f'{"case":<34} {"plain (ms)":>11} {"ours (ms)":>10} {"ratio":>7}')
    for samples in args.samples:
        # Particles repeat: draw from a pool a tenth of N, as a posterior's do.
        pool = rng.random((max(1, samples // 10), args.capabilities)) < 0.5
        rows = pool[rng.integers(0, len(pool), samples)]
        expected = np.unique(rows, axis=0, return_counts=True)
        found = unique_rows(rows, return_counts=True)
        if not all(np.array_equal(a, b) for a, b in zip(expected, found)):
            raise SystemExit('unique_rows gives other rows than np.unique')
        plain = _median_s(lambda rows=rows: np.unique(rows, axis=0, return_counts=True),
                          args.repeats)
        ours = _median_s(lambda rows=rows: unique_rows(rows, return_counts=True), args.repeats)
        print(f'{f"distinct rows, N = {samples:,} x {args.capabilities}":<34} '
              f'{plain * 1e3:>11.3f} {ours * 1e3:>10.3f} {plain / ours:>6.1f}x')
    top = 1 << args.bits
    width = (args.bits + 7) // 8
    first = [int.from_bytes(rng.bytes(width), 'little') % top for _ in range(args.states)]
    second = [state ^ (1 << int(rng.integers(0, args.bits))) for state in first]
    if abs(graded_distance(first, second) - plain_graded_distance(first, second)) > 1e-12:
        raise SystemExit('graded_distance differs from its definition')
    plain = _median_s(lambda: plain_graded_distance(first, second), args.repeats)
    ours = _median_s(lambda: graded_distance(first, second), args.repeats)
    print(f'{f"graded distance, {args.states}x{args.states} of {args.bits} bits":<34} '
          f'{plain * 1e3:>11.3f} {ours * 1e3:>10.3f} {plain / ours:>6.1f}x')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
