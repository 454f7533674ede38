"""Two experiments on the same tasks, compared run by run.

    .venv/bin/python bench/paired_difference.py docs/results/low_capability/posterior_given \
        docs/results/low_capability/sequential [--metric heldout_agreement] [--task 5]

Runs of one base seed see the same tasks and the same held-out pool whatever the
method, so the per-run difference of a metric is a paired sample: its mean with a
Student-t 95% interval, and how many runs the first experiment won, tied and lost.
More pairs (FIRST SECOND FIRST SECOND ..., e.g. other base seeds) pool their runs.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from cecm_ros.experiments.experiment import mean_ci95


def values_at_task(folder: Path, metric: str, task: int) -> dict[int, float]:
    with (folder / 'runs.csv').open() as rows:
        return {int(row['run']): float(row[metric]) for row in csv.DictReader(rows)
                if int(row['task_index']) == task - 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folders', type=Path, nargs='+', metavar='FIRST SECOND',
                        help='cecm experiment output folders in pairs, each pair run with '
                             'one base seed; several pairs (other seeds) are pooled')
    parser.add_argument('--metric', default='heldout_agreement', help='a runs.csv column')
    parser.add_argument('--task', type=int, default=5, help='compare after this task')
    args = parser.parse_args()
    if len(args.folders) % 2:
        parser.error(f'folders come in pairs (FIRST SECOND ...); got {len(args.folders)}')
    pairs = list(zip(args.folders[::2], args.folders[1::2], strict=True))
    differences = []
    for first_folder, second_folder in pairs:
        first = values_at_task(first_folder, args.metric, args.task)
        second = values_at_task(second_folder, args.metric, args.task)
        if not first or sorted(first) != sorted(second):
            parser.error(f'{first_folder} and {second_folder} must hold the same runs at '
                         f'task {args.task} ({sorted(first)} vs {sorted(second)})')
        differences += [first[run] - second[run] for run in sorted(first)]
    ci = mean_ci95(differences)
    won = sum(d > 0 for d in differences)
    tied = sum(d == 0 for d in differences)
    which = (f'{pairs[0][0]} minus {pairs[0][1]}' if len(pairs) == 1 else
             f'{len(pairs)} pairs pooled (first minus second)')
    print(f'{args.metric} at task {args.task}, {which}: '
          f'{ci["mean"]:+.3f} [{ci["ci95_low"]:+.3f}, {ci["ci95_high"]:+.3f}] over '
          f'{len(differences)} runs; won {won}, tied {tied}, lost '
          f'{len(differences) - won - tied}')


if __name__ == '__main__':
    main()
