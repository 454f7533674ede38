"""Per-task table of a switch sweep's cells from their run files (no summary needed):
Hamming, wrong but known, decided and the change reported, mean [95% interval] over runs.

    python bench/switch_table.py docs/results/partners/switch_overcooked_screen
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cecm_ros.experiments.experiment import mean_ci95

METRICS = ('hamming', 'wrong_known', 'decided', 'partner_changed')
TASKS = (1, 5, 6, 7, 8, 10)


def _cell(value_rows: list[float]) -> str:
    c = mean_ci95(value_rows)
    if len(value_rows) < 2:
        return f"{c['mean']:.2f}"
    return f"{c['mean']:.2f} [{c['ci95_low']:.2f}, {c['ci95_high']:.2f}]"


def main(base: str) -> None:
    for cell in sorted(p for p in (Path(base) / 'runs').iterdir() if p.is_dir()):
        runs = [json.loads(f.read_text())['rows'] for f in sorted(cell.glob('run-*.json'))]
        print(f'{cell.name}: {len(runs)} runs')
        print('| task | Hamming | wrong but known | decided | change reported |')
        for task in TASKS:
            if all(len(rows) >= task for rows in runs) and runs:
                values = [_cell([float(rows[task - 1][k]) for rows in runs]) for k in METRICS]
                print(f'| {task} | ' + ' | '.join(values) + ' |')


if __name__ == '__main__':
    main(sys.argv[1])
