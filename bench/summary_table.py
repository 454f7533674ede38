"""Markdown tables from experiment summaries (``cecm experiment`` output folders).

    .venv/bin/python bench/summary_table.py docs/results/low_capability/* --tasks 1,5

One row per summary and task: the mean and 95% interval over runs of the metrics the
docs report. A folder with ``comparison.json`` (``--compare``) gives one row per method.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# Every metric a table may show: (key, column title, digits); METRICS by default.
ALL_METRICS = {'hamming': ('hamming', 'Hamming', 2),
               'decided': ('decided', 'decided', 1),
               'partner_deviation': ('partner_deviation', 'partner steps off plan', 2),
               'infeasible_assigned': ('infeasible_assigned', 'infeasible assigned', 1),
               'accepted_samples': ('accepted_samples', 'accepted', 0),
               'heldout_feasible': ('heldout_feasible', 'feasible held-out', 2),
               'partner_changed': ('partner_changed', 'change reported', 2)}
METRICS = (('hamming_active', 'Hamming (non-inert)', 3),
           ('hamming_identifiable', 'Hamming (identifiable)', 3),
           ('correction_ratio', 'corrected', 3),
           ('iou', 'IoU', 2),
           ('heldout_agreement', 'held-out agreement', 3),
           ('wrong_known', 'wrong but known', 2))


def summaries(path: Path):
    """(label, summary) for a summary file, a run folder or a --compare folder."""
    if path.is_file() and path.suffix == '.json':
        yield path.parent.name, json.loads(path.read_text())
    elif (path / 'summary.json').is_file():
        yield path.name, json.loads((path / 'summary.json').read_text())
    elif (path / 'comparison.json').is_file():
        for method in sorted(p for p in path.iterdir() if (p / 'summary.json').is_file()):
            yield f'{path.name}/{method.name}', json.loads((method / 'summary.json').read_text())


def cell(metric: dict | None, digits: int) -> str:
    if metric is None:
        return ''
    return (f"{metric['mean']:.{digits}f} [{metric['ci95_low']:.{digits}f}, "
            f"{metric['ci95_high']:.{digits}f}]")


def table(paths: list[Path], tasks: set[int] | None, labels: dict[str, str],
          metrics=METRICS) -> str:
    lines = ['| run | task | ' + ' | '.join(name for _, name, _ in metrics) + ' |',
             '|---|---|' + '---|' * len(metrics)]
    for path in paths:
        for label, summary in summaries(path):
            for entry in summary['per_task']:
                if tasks and entry['task'] not in tasks:
                    continue
                cells = [cell(entry.get(key), digits) for key, _, digits in metrics]
                lines.append(f'| {labels.get(label, label)} | {entry["task"]} | '
                             + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('paths', nargs='+', type=Path)
    parser.add_argument('--tasks', help='comma-separated task numbers (default: all)')
    parser.add_argument('--label', action='append', default=[], metavar='FOLDER=TEXT',
                        help='show a folder under another name')
    parser.add_argument('--metrics', help='comma-separated metric keys (default: the '
                        'Hamming distances, corrections, IoU, held-out agreement, wrong '
                        f'but known; also {", ".join(ALL_METRICS)})')
    args = parser.parse_args()
    tasks = {int(t) for t in args.tasks.split(',')} if args.tasks else None
    labels = dict(item.split('=', 1) for item in args.label)
    known = {key: (key, name, digits) for key, name, digits in METRICS} | ALL_METRICS
    metrics = tuple(known[key] for key in args.metrics.split(',')) if args.metrics \
        else METRICS
    print(table(args.paths, tasks, labels, metrics))


if __name__ == '__main__':
    main()
