#!/usr/bin/env python3
"""Where the point estimate the robot plans with is wrong, per cell of a sweep.

Held-out agreement counts the pool tasks planned exactly as under the truth, so it falls
with every capability the estimate gets wrong that a pool task needs. This prints, per
cell at one task, the mean count of capabilities planned present that the partner lacks
(``planned present, absent``) and planned absent that it has (``planned absent,
present``), the capabilities most often so, and held-out agreement; inert capabilities
are left out (no plan can use them). ``--known`` adds how often the named capabilities
were reported known present.

    python bench/estimate_errors.py docs/results/partners/sweeps/tidyup_out_of_model \\
        --task 5 --only low_capability --known move_living_room,move_bedroom,move_study
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import math
from pathlib import Path

from cecm_ros.domains import load_domain


def cells(folder: Path):
    """(cell name, its cell.json, its run files) under a sweep folder."""
    for cell in sorted(glob.glob(str(folder / 'runs' / '*' / 'cell.json'))):
        path = Path(cell).parent
        yield path.name, json.loads(Path(cell).read_text()), sorted(path.glob('run-*.json'))


def errors_of(names: list[str], rows: list[dict], known: list[str]) -> dict:
    """The counts over one cell's rows of one task."""
    watched = [names.index(name) for name in known]
    known_present = sum(row['status'][i] == 'P' for row in rows for i in watched)
    wrong_present, wrong_absent = collections.Counter(), collections.Counter()
    present, absent, heldout = [], [], []
    for row in rows:
        pairs = [(i, e, t) for i, (e, t, s) in enumerate(zip(row['estimate'], row['truth'],
                                                              row['status'])) if s != 'I']
        over = [names[i] for i, e, t in pairs if e == '1' and t == '0']
        under = [names[i] for i, e, t in pairs if e == '0' and t == '1']
        wrong_present.update(over)
        wrong_absent.update(under)
        present.append(len(over))
        absent.append(len(under))
        value = row.get('heldout_agreement')
        if isinstance(value, (int, float)) and not math.isnan(value):
            heldout.append(value)
    return {'runs': len(rows), 'heldout': sum(heldout) / len(heldout) if heldout else math.nan,
            'planned_present_absent': sum(present) / len(rows),
            'planned_absent_present': sum(absent) / len(rows),
            'most_present_absent': wrong_present.most_common(4),
            'most_absent_present': wrong_absent.most_common(4),
            'known_present': f'{known_present} of {len(rows) * len(watched)}'}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folders', nargs='+', type=Path, help='sweep output folders')
    parser.add_argument('--task', type=int, default=5, help='task (1-based; default 5)')
    parser.add_argument('--only', default='', help='cells whose name contains this text')
    parser.add_argument('--known', default='',
                        help='capabilities (comma-separated) whose "known present" to count')
    args = parser.parse_args()
    known = [name for name in args.known.split(',') if name]
    extra = ' known present (of --known) |' if known else ''
    print('| cell | runs | held-out agreement | planned present, absent | planned absent, '
          f'present | most often planned present | most often planned absent |{extra}')
    print('|---|---|---|---|---|---|---|' + ('---|' if known else ''))
    for folder in args.folders:
        for name, cell, files in cells(folder):
            if args.only not in name:
                continue
            domain = load_domain(cell['domain_spec'], **cell.get('domain_options', {}))
            rows = [row for path in files for row in json.loads(path.read_text())['rows']
                    if row['task_index'] == args.task - 1]
            if not rows:
                continue
            names = list(domain.catalog.names)
            unknown = [name for name in known if name not in names]
            if unknown:
                raise SystemExit(f'--known: {", ".join(unknown)} not among the capabilities '
                                 f'of {cell["domain_spec"]} ({", ".join(names)})')
            found = errors_of(names, rows, known)
            listed = [', '.join(f'{n} {c}' for n, c in found[key])
                      for key in ('most_present_absent', 'most_absent_present')]
            print(f"| {name} | {found['runs']} | {found['heldout']:.3f} | "
                  f"{found['planned_present_absent']:.2f} | "
                  f"{found['planned_absent_present']:.2f} | {listed[0]} | {listed[1]} |"
                  + (f" {found['known_present']} |" if known else ''))


if __name__ == '__main__':
    main()
