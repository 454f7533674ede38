"""How many tasks each experiment needs to reach a held-out agreement.

    .venv/bin/python bench/tasks_needed.py 0.9 docs/results/low_capability/posterior_*

For each ``cecm experiment`` folder: the mean held-out agreement after each task (from
``summary.json``) and how many runs have reached the threshold by each task (from
``runs.csv``; a run counts from the first task at which it reached it).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path


def tasks_needed(folder: Path, threshold: float) -> tuple[list[float], list[int]]:
    summary = json.loads((folder / 'summary.json').read_text())
    means = [task['heldout_agreement']['mean'] for task in summary['per_task']]
    first_reached: dict[int, int | None] = {}
    with (folder / 'runs.csv').open() as rows:
        for row in csv.DictReader(rows):
            run, task = int(row['run']), int(row['task_index'])
            first_reached.setdefault(run, None)
            if float(row['heldout_agreement']) >= threshold:
                earliest = first_reached[run]
                first_reached[run] = task if earliest is None else min(earliest, task)
    reached = [sum(1 for first in first_reached.values() if first is not None and first <= k)
               for k in range(len(means))]
    return means, reached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('threshold', type=float, help='held-out agreement to reach, e.g. 0.9')
    parser.add_argument('folders', nargs='+', type=Path, help='cecm experiment output folders')
    args = parser.parse_args()
    print('| experiment | mean held-out agreement per task | runs reached by task k |')
    print('|---|---|---|')
    for folder in args.folders:
        if not (folder / 'summary.json').is_file() or not (folder / 'runs.csv').is_file():
            parser.error(f'{folder}: not a cecm experiment folder '
                         '(needs summary.json and runs.csv)')
        means, reached = tasks_needed(folder, args.threshold)
        print(f"| {folder} | {', '.join(f'{m:.3f}' for m in means)} | "
              f"{', '.join(str(n) for n in reached)} |")


if __name__ == '__main__':
    main()
