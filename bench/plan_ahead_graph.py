"""Planning ahead in the node graph: the pause after each task with and without it.

    .venv/bin/python bench/plan_ahead_graph.py --seeds 0 1 --tasks 5

Runs ``cecm demo`` (the node graph over DDS, a new plan store each time: ``--no-plan-store``)
once as it is, with the capability estimator planning ahead while the team works, and
once with ``--no-plan-ahead``, per seed. From the estimator's log it prints each update's
seconds (the pause a person feels between a task's end and the robot's next move is at
least that), the plans made ahead for it, the demo's wall time, and whether the two
sessions' estimates after every task were the same. Times are printed, never asserted on.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CECM = str(Path(sys.executable).with_name('cecm'))
UPDATE = re.compile(r'; estimate lacks (.*) \(\d+ tasks seen; the update took ([0-9.]+) s\)')
AHEAD = re.compile(r'\((\d+) plans made or read from the plan store ahead\)')


def session(seed: int, tasks: int, ahead: bool, out: Path) -> dict:
    flags = [] if ahead else ['--no-plan-ahead']
    began = time.perf_counter()
    done = subprocess.run([CECM, 'demo', '--no-plan-store', '--tasks', str(tasks), '--seed',
                           str(seed), '--out', str(out), *flags],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    logs = sorted((out / 'logs').glob('capability_estimator*'))
    text = logs[0].read_text() if logs else ''
    updates = [(lacks, float(seconds)) for lacks, seconds in UPDATE.findall(text)]
    return {'code': done.returncode, 'wall_s': wall,
            'update_s': [seconds for _, seconds in updates],
            'estimates': [lacks for lacks, _ in updates],
            'ahead': [int(n) for n in AHEAD.findall(text)],
            'tail': (done.stdout + done.stderr)[-2000:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0])
    parser.add_argument('--tasks', type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    print(f'{"seed":>4} {"planning ahead":>14} {"demo s":>7} {"median":>7} {"max":>6}  '
          'updates s (plans made ahead)                         same estimates')
    with tempfile.TemporaryDirectory(prefix='cecm-ahead-') as scratch:
        for seed in args.seeds:
            runs = {}
            for ahead in (True, False):
                runs[ahead] = run = session(seed, args.tasks, ahead,
                                            Path(scratch) / f'{seed}-{ahead}')
                if run['code'] != 0 or len(run['update_s']) != args.tasks:
                    print(f'seed {seed}: the demo ended with {run["code"]} after '
                          f'{len(run["update_s"])} updates\n{run["tail"]}', file=sys.stderr)
                    return 1
            same = runs[True]['estimates'] == runs[False]['estimates']
            for ahead, run in runs.items():
                times = np.array(run['update_s'])
                each = ', '.join(f'{t:.2f}' + (f' ({n})' if ahead else '')
                                 for t, n in zip(times, run['ahead'], strict=True))
                print(f'{seed:>4} {"on" if ahead else "off":>14} {run["wall_s"]:>7.1f} '
                      f'{np.median(times):>7.2f} {times.max():>6.2f}  {each:<52} '
                      f'{"yes" if same else "NO"}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
