"""Fast Downward heuristics on the searches a TidyUP session's updates make.

    .venv/bin/python bench/heuristics.py --tasks 3
    .venv/bin/python bench/heuristics.py --tasks 1 \\
        --household config/households/tidyup_10_rooms.yaml \\
        --capabilities-file config/households/capabilities_10_rooms.yaml

Runs a session (``low_capability``, N = 500, given tasks, seed 0, a new plan store) and
keeps the input of every search it makes; then runs each of those searches again under
every heuristic named (``--search``, default: the domain's own and CEGAR over the
goals), one at a time, and prints per heuristic the seconds in all, the median and the
largest, and how many searches found a plan with the same actions as the first
heuristic's (the order of actions is the planner's to choose; the joint plan is made
from the actions alone).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import cecm_ros.domains.pddl.fast_downward as fast_downward
from cecm_ros.domains import load_domain
from cecm_ros.experiments.bench import run_session_benchmark

CEGAR = 'astar(cegar(subtasks=[goals()]),verbosity=silent)'


def record_searches(args) -> tuple[list[str], str, Path]:
    """The SAS input of every search of the session, in order (duplicates dropped)."""
    kept: dict[str, None] = {}
    original = fast_downward.FastDownwardSearch.search
    own = CEGAR

    def search(self, sas_text, label='task'):
        nonlocal own
        kept.setdefault(sas_text, None)
        own = self.search_options
        return original(self, sas_text, label)

    options = {}
    if args.household:
        options = {'household': args.household, 'capabilities': args.capabilities_file}
    model = load_domain('tidyup', **options)
    fast_downward.FastDownwardSearch.search = search  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory(prefix='cecm-heuristics-') as scratch:
            run_session_benchmark(model, args.partner, samples=args.samples, seed=args.seed,
                                  jobs=args.jobs, tasks=args.tasks, task_choice='given',
                                  store_path=str(Path(scratch) / 'plans.sqlite'))
    finally:
        fast_downward.FastDownwardSearch.search = original  # type: ignore[method-assign]
    root = fast_downward.fast_downward_root()
    assert root is not None, 'up-fast-downward is not installed'
    return list(kept), own, root / 'builds/release/bin/downward'


def run_search(binary: Path, options: str, sas: str) -> tuple[float, collections.Counter]:
    with tempfile.TemporaryDirectory(prefix='cecm-heuristics-') as folder:
        started = time.perf_counter()
        subprocess.run([str(binary), '--search', options, '--internal-plan-file', 'plan'],
                       input=sas, capture_output=True, text=True, cwd=folder, check=False)
        seconds = time.perf_counter() - started
        plan = Path(folder) / 'plan'
        actions = collections.Counter(
            line.strip() for line in plan.read_text().splitlines()
            if line.strip() and not line.startswith(';')) if plan.is_file() else None
    return seconds, actions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--household')
    parser.add_argument('--capabilities-file')
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--samples', type=int, default=500)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--tasks', type=int, default=3)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--search', action='append',
                        help='a Fast Downward search (repeat; default: the domain\'s and '
                             'CEGAR over the goals)')
    parser.add_argument('--json-out', type=Path)
    args = parser.parse_args()

    searches, own, binary = record_searches(args)
    configs = args.search or list(dict.fromkeys([own, CEGAR]))
    print(f'{len(searches)} distinct searches recorded (load {os.getloadavg()[0]:.2f})',
          flush=True)
    rows, reference = [], None
    for options in configs:
        times, plans = [], []
        for sas in searches:
            seconds, actions = run_search(binary, options, sas)
            times.append(seconds)
            plans.append(actions)
        reference = reference or plans
        same = sum(a == b for a, b in zip(plans, reference))
        rows.append({'search': options, 'searches': len(searches),
                     'seconds': round(sum(times), 2),
                     'median_s': round(statistics.median(times), 4),
                     'max_s': round(max(times), 3), 'same_actions_as_first': same,
                     'load_after': round(os.getloadavg()[0], 2)})
        print(json.dumps(rows[-1]), flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
