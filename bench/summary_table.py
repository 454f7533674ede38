"""Markdown tables from experiment summaries (``cecm experiment`` output folders).

    .venv/bin/python bench/summary_table.py docs/results/low_capability/* --tasks 1,5

One row per summary and task: the mean and 95% interval over runs of the metrics the
docs report. A folder with ``comparison.json`` (``--compare``) gives one row per method.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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


def table(paths: list[Path], tasks: set[int] | None, labels: dict[str, str]) -> str:
    lines = ['| run | task | ' + ' | '.join(name for _, name, _ in METRICS) + ' |',
             '|---|---|' + '---|' * len(METRICS)]
    for path in paths:
        for label, summary in summaries(path):
            for entry in summary['per_task']:
                if tasks and entry['task'] not in tasks:
                    continue
                cells = [cell(entry.get(key), digits) for key, _, digits in METRICS]
                lines.append(f'| {labels.get(label, label)} | {entry["task"]} | '
                             + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('paths', nargs='+', type=Path)
    parser.add_argument('--tasks', help='comma-separated task numbers (default: all)')
    parser.add_argument('--label', action='append', default=[], metavar='FOLDER=TEXT',
                        help='show a folder under another name')
    args = parser.parse_args()
    tasks = {int(t) for t in args.tasks.split(',')} if args.tasks else None
    labels = dict(item.split('=', 1) for item in args.label)
    print(table(args.paths, tasks, labels))


if __name__ == '__main__':
    main()
