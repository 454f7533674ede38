#!/usr/bin/env python3
"""Is "known" known? Calibration of the belief over the run files of sweeps or experiments.

Pools every task row of the given sweep (or experiment) folders: per capability that is
not inert, the probability the belief reported (theta) against the partner's truth, in
bins of reported mass, and, of the capabilities reported known present or known absent,
how many were wrong. Prints a Markdown table (and ``--json`` the numbers).

    python bench/calibration.py results/sweeps/tidyup_out_of_model \\
        results/sweeps/overcooked_out_of_model --exclude indicator algorithm_1

``--exclude`` leaves out cells whose folder name contains a text (inference that reports
no statuses, or that is not the default).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
from pathlib import Path

BINS = (0.0, 0.01, 0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.99, 1.0000001)
KNOWN = {'P': 'present', 'A': 'absent'}


def rows_of(folder: Path):
    """Every task row under a sweep folder (runs/CELL/run-*.json) or an experiment's."""
    for path in sorted(glob.glob(str(folder / 'runs' / '*' / 'run-*.json'))):
        cell = Path(path).parent.name
        for row in json.loads(Path(path).read_text())['rows']:
            yield cell, row


def wilson(hits: int, count: int) -> tuple[float, float]:
    """The 95% Wilson interval of a proportion."""
    if not count:
        return (math.nan, math.nan)
    z, p = 1.96, hits / count
    centre = (p + z * z / (2 * count)) / (1 + z * z / count)
    half = z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count)) / \
        (1 + z * z / count)
    return (max(0.0, centre - half), min(1.0, centre + half))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folders', nargs='+', type=Path)
    parser.add_argument('--exclude', nargs='*', default=[])
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args()
    bins = [[0, 0, 0.0] for _ in BINS[:-1]]   # capabilities, present, reported mass
    known = {'P': [0, 0], 'A': [0, 0]}          # reported, wrong
    cells, rows = set(), 0
    for folder in args.folders:
        for cell, row in rows_of(folder):
            if any(text in cell for text in args.exclude) or not row.get('status'):
                continue
            cells.add(f'{folder.name}/{cell}')
            rows += 1
            thetas = [float(v) for v in row['theta'].split()]
            for status, theta, truth in zip(row['status'], thetas, row['truth']):
                if status == 'I':
                    continue
                index = next(i for i in range(len(BINS) - 1) if theta < BINS[i + 1])
                bins[index][0] += 1
                bins[index][1] += truth == '1'
                bins[index][2] += theta
                if status in known:
                    known[status][0] += 1
                    known[status][1] += (truth == '1') != (status == 'P')
    result = {'cells': len(cells), 'rows': rows, 'bins': [], 'known': {}}
    print(f'{len(cells)} cells, {rows} task rows\n')
    print('| reported P(present) | capabilities | mean reported | observed present '
          '[95% interval] |')
    print('|---|---|---|---|')
    for (low, high), (count, present, mass) in zip(zip(BINS, BINS[1:]), bins):
        if not count:
            continue
        lo, hi = wilson(present, count)
        print(f'| [{low:.2f}, {min(high, 1.0):.2f}{"]" if high > 1 else ")"} | {count} | '
              f'{mass / count:.3f} | {present / count:.3f} [{lo:.3f}, {hi:.3f}] |')
        result['bins'].append({'low': low, 'high': min(high, 1.0), 'count': count,
                               'mean_reported': mass / count,
                               'observed': present / count})
    print()
    total = sum(v[0] for v in known.values())
    wrong = sum(v[1] for v in known.values())
    for status, (count, bad) in known.items():
        lo, hi = wilson(bad, count)
        print(f'known {KNOWN[status]}: {count} reported, {bad} wrong '
              f'({bad / max(1, count):.2%} [{lo:.2%}, {hi:.2%}])')
        result['known'][KNOWN[status]] = {'reported': count, 'wrong': bad}
    lo, hi = wilson(wrong, total)
    print(f'known, in all: {total} reported, {wrong} wrong ({wrong / max(1, total):.2%} '
          f'[{lo:.2%}, {hi:.2%}])')
    if args.json:
        print(json.dumps(result, indent=1))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
