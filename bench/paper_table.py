"""The paper's section 5.3 table from sweep cells: accepted samples per task and the
Hamming distance, per partner type and method, over the runs the cells share.

    .venv/bin/python bench/paper_table.py \\
        'CE-CM=results/sweeps/overcooked_partners/runs/algorithm_1-independent-{type}-*' \\
        'CE-CM-Div=results/sweeps/overcooked_div/runs/0.35-{type}-*' \\
        --types type_1 type_2 type_3

Each argument is LABEL=GLOB with ``{type}`` standing for the partner type; the runs
compared are those every cell of a type has (the same seeds, so the same partners and
tasks). Mean and 95% interval (Student t) over those runs.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

from cecm_ros.experiments.experiment import mean_ci95


def runs_of(folder: Path) -> dict[int, list[dict]]:
    found = {}
    for path in folder.glob('run-*.json'):
        data = json.loads(path.read_text())
        found[data['run']] = sorted(data['rows'], key=lambda r: r['task_index'])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('cells', nargs='+', metavar='LABEL=GLOB')
    parser.add_argument('--types', nargs='+', required=True)
    args = parser.parse_args()
    print('| type | method | runs | ' + ' | '.join(f'accepted, task {t}' for t in range(1, 6))
          + ' | Hamming, task 1 | Hamming, task 5 |')
    print('|---|---|---|' + '---|' * 7)
    for kind in args.types:
        cells = {}
        for spec in args.cells:
            label, pattern = spec.split('=', 1)
            folders = glob.glob(pattern.format(type=kind))
            if len(folders) != 1:
                raise SystemExit(f'{pattern.format(type=kind)}: {len(folders)} folders')
            cells[label] = runs_of(Path(folders[0]))
        shared = sorted(set.intersection(*(set(c) for c in cells.values())))
        for label, runs in cells.items():
            rows = [runs[r] for r in shared]
            tasks = min(len(r) for r in rows)
            accepted = [mean_ci95([r[t]['accepted_samples'] for r in rows])
                        for t in range(tasks)]
            hamming = [mean_ci95([r[t]['hamming'] for r in rows]) for t in (0, tasks - 1)]
            print(f'| {kind} | {label} | {len(shared)} | '
                  + ' | '.join(f"{a['mean']:.1f} [{a['ci95_low']:.1f}, {a['ci95_high']:.1f}]"
                               for a in accepted)
                  + ' | ' + ' | '.join(f"{h['mean']:.2f} [{h['ci95_low']:.2f}, "
                                       f"{h['ci95_high']:.2f}]" for h in hamming) + ' |')


if __name__ == '__main__':
    main()
