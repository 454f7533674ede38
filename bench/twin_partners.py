"""Which runs of an experiment cannot tell two partners apart.

    .venv/bin/python bench/twin_partners.py mobility_limited no_bedroom_study_work \
        --seed 0 --runs 20 --tasks 5 [--results DIR_A DIR_B ...]

With the given task order the observed trajectories depend on the task and the
partner's capabilities only (the partner enforces its own plan; with
``forgo_probability`` 0, the experiment's default), so in a run where two
partners produce the same trajectory on every task, every estimator that sees only the
trajectories (and its seed) ends that run with the same belief for both. This prints,
per run, whether the two partners were told apart by the tasks of that run and, given
``cecm experiment`` output folders of both partners per method, the held-out agreement
each method reached for each, so a method's gain on one twin can be set against its
loss on the other.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from paired_difference import values_at_task

from cecm_ros.core.tasks import TaskSequence
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import run_seed


def first_telling_task(planner: FastDownwardPlanner, seed: int, runs: int, tasks: int,
                       first: str, second: str) -> list[int | None]:
    """Per run of ``cecm experiment --seed SEED`` with given tasks: the index of the first
    task whose observed trajectory differs between the two partners, or None when every
    task looks the same. (The observed trajectory is the partner's own plan, as with
    the experiment's default ``forgo_probability`` 0.)"""
    catalog = planner.model.catalog
    vectors = catalog.resolve(first), catalog.resolve(second)
    answers = []
    for run in range(runs):
        sequence = TaskSequence(planner.model, run_seed(seed, run), count=tasks)
        differs = None
        for index in range(tasks):
            sequence.offer()
            task = sequence.take(0)
            a, b = (planner.plan(task, vector).trajectory for vector in vectors)
            if differs is None and a != b:
                differs = index
        answers.append(differs)
    return answers


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('first', help='a partner type or capability vector')
    parser.add_argument('second', help='its twin')
    parser.add_argument('--seed', type=int, default=0, help='the experiment base seed')
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--tasks', type=int, default=5)
    parser.add_argument('--results', nargs='*', type=Path, default=[],
                        metavar='DIR', help='pairs of experiment folders, first partner '
                        'then second, one pair per method (named by the first folder)')
    args = parser.parse_args()
    if len(args.results) % 2:
        parser.error('--results takes folders in pairs (first partner, second partner)')
    model = TidyUpModel()
    with FastDownwardPlanner(model, workers=2) as planner:
        differs = first_telling_task(planner, args.seed, args.runs, args.tasks,
                                     args.first, args.second)
    same = [run for run, index in enumerate(differs) if index is None]
    print(f'{args.first} vs {args.second}, seed {args.seed}, {args.runs} runs x '
          f'{args.tasks} given tasks: {len(same)} runs cannot tell them apart '
          f'({", ".join(map(str, same)) or "none"})')
    pairs = list(zip(args.results[::2], args.results[1::2]))
    if not pairs:
        return
    header = ['method', f'{args.first}', f'{args.second}', 'mean of the two',
              f'runs alike: {args.first}', f'runs alike: {args.second}',
              'runs alike: mean of the two']
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    for first_dir, second_dir in pairs:
        a = values_at_task(first_dir, 'heldout_agreement', args.tasks)
        b = values_at_task(second_dir, 'heldout_agreement', args.tasks)
        runs = sorted(set(a) & set(b))
        alike = [run for run in runs if run in same]
        row = [mean(a[r] for r in runs), mean(b[r] for r in runs),
               mean((a[r] + b[r]) / 2 for r in runs), mean(a[r] for r in alike),
               mean(b[r] for r in alike), mean((a[r] + b[r]) / 2 for r in alike)]
        name = first_dir.name
        print(f'| {name} | ' + ' | '.join(f'{v:.3f}' for v in row) + ' |')


if __name__ == '__main__':
    main()
