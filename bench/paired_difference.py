"""Two experiments on the same tasks, compared run by run.

    .venv/bin/python bench/paired_difference.py docs/results/low_capability/posterior_given \
        docs/results/low_capability/sequential [--metric heldout_agreement] [--task 5]

Runs of one base seed see the same tasks and the same held-out pool whatever the
method, so the per-run difference of a metric is a paired sample: its mean with a
Student-t 95% interval, and how many runs the first experiment won, tied and lost.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from cecm_ros.core.experiment import mean_ci95


def values_at_task(folder: Path, metric: str, task: int) -> dict[int, float]:
    with (folder / 'runs.csv').open() as rows:
        return {int(row['run']): float(row[metric]) for row in csv.DictReader(rows)
                if int(row['task_index']) == task - 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('first', type=Path, help='a cecm experiment output folder')
    parser.add_argument('second', type=Path, help='another, run with the same seed')
    parser.add_argument('--metric', default='heldout_agreement', help='a runs.csv column')
    parser.add_argument('--task', type=int, default=5, help='compare after this task')
    args = parser.parse_args()
    first = values_at_task(args.first, args.metric, args.task)
    second = values_at_task(args.second, args.metric, args.task)
    if not first or sorted(first) != sorted(second):
        parser.error(f'the two folders must hold the same runs at task {args.task} '
                     f'({sorted(first)} vs {sorted(second)})')
    differences = [first[run] - second[run] for run in sorted(first)]
    ci = mean_ci95(differences)
    won = sum(d > 0 for d in differences)
    tied = sum(d == 0 for d in differences)
    print(f'{args.metric} at task {args.task}, {args.first} minus {args.second}: '
          f'{ci["mean"]:+.3f} [{ci["ci95_low"]:+.3f}, {ci["ci95_high"]:+.3f}] over '
          f'{len(differences)} runs; won {won}, tied {tied}, lost '
          f'{len(differences) - won - tied}')


if __name__ == '__main__':
    main()
