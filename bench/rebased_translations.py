"""Re-plans from states on the way: the task's translation rebased against a fresh one.

    .venv/bin/python bench/rebased_translations.py --tasks 6 --seed 3

For each task, plans four vectors (the fully capable partner and three drawn at
0.8), then re-plans every state along two of those plans for the four vectors twice:
with a planner that reuses the task's Fast Downward translation with the start
replaced (``TranslatedTask.rebased``) and with a fresh planner that translates the
state afresh. Prints how many plans agree step for step, how many re-plans were
served by a rebased translation, and both paths' time (only their ratio carries over).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cecm_ros.domains import load_domain
from cecm_ros.domains.pddl.planner import FastDownwardPlanner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--tasks', type=int, default=6)
    parser.add_argument('--seed', type=int, default=3)
    args = parser.parse_args()
    model = load_domain('tidyup')
    tasks = model.task_generator(args.seed)
    agree = differ = rebased = fresh_runs = 0
    fresh_s = rebased_s = 0.0
    for index in range(args.tasks):
        task = tasks.next_task()
        full = np.ones(len(model.catalog), dtype=bool)
        rng = np.random.default_rng(args.seed * 1000 + index)
        vectors = np.array([full] + [rng.random(len(full)) < 0.8 for _ in range(3)])
        with FastDownwardPlanner(model) as reusing:
            for plan in reusing.plan_many(task, vectors)[:2]:
                for state in plan.trajectory[1:-1]:
                    derived = model.task_from_state(task, state)
                    bare = type(derived)(derived.task_id, derived.initial, derived.goal)
                    with FastDownwardPlanner(model) as other:
                        started = time.perf_counter()
                        expected = other.plan_many(bare, vectors)
                        fresh_s += time.perf_counter() - started
                        fresh_runs += other.fresh_translations
                    started = time.perf_counter()
                    got = reusing.plan_many(derived, vectors)
                    rebased_s += time.perf_counter() - started
                    for first, second in zip(expected, got):
                        agree += first.steps == second.steps
                        differ += first.steps != second.steps
            rebased += reusing.rebased_translations
    print(f'{agree} plans agree, {differ} differ; {rebased} re-plans from a rebased '
          f'translation ({fresh_runs} fresh translations on the other side); fresh '
          f'{fresh_s:.1f} s, rebased {rebased_s:.1f} s ({rebased_s / fresh_s:.2f}x)')


if __name__ == '__main__':
    main()
