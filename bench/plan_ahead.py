"""Planning ahead while the team works: how much of an update is left after it.

    .venv/bin/python bench/plan_ahead.py \
        --household config/households/tidyup_10_rooms.yaml --tasks 2 --seed 0

Runs the same session (``cecm experiment``'s run, no held-out pool, no plan store)
twice in this process, each with a planner of its own: once as it is, once calling
``Estimator.plan_ahead`` with the states observed so far after each step of a task (what
a caller that sees the team's states as they come would do) before the task's update.
Per task it prints the plans and seconds spent ahead, the plans and seconds the update
then took, the same for the session without planning ahead, and whether the belief
(theta and every capability's status) came out the same. The steps of a simulated task
take no time here, so "ahead" is the work a real task's steps would have to hide.
Times are printed, never asserted on.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import cecm_ros.experiments.experiment as experiment
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.domains import load_domain, planner_for


def session(model, settings, ahead: bool) -> tuple[list[dict], list]:
    """Per task: plans and seconds ahead and in the update; and the beliefs."""
    rows: list[dict] = []
    beliefs: list = []
    make = experiment.make_estimator

    def made(*args, **kwargs):
        estimator = make(*args, **kwargs)
        update = estimator.update
        planner = estimator.evaluator.planner

        def measured(task, observed, progress=None):
            row = {'task': task.task_id, 'ahead_plans': 0, 'ahead_s': 0.0}
            if ahead:
                calls, began = planner.calls, time.perf_counter()
                for count in range(1, len(observed) + 1):
                    estimator.plan_ahead(task, observed[:count])
                row.update(ahead_plans=planner.calls - calls,
                           ahead_s=time.perf_counter() - began)
            calls, began = planner.calls, time.perf_counter()
            report = update(task, observed, progress)
            row.update(update_plans=planner.calls - calls,
                       update_s=time.perf_counter() - began)
            rows.append(row)
            beliefs.append(estimator.belief)
            return report

        estimator.update = measured
        return estimator

    experiment.make_estimator = made
    try:
        with planner_for(model, workers=settings.jobs) as planner:
            experiment.run_once(model, planner, settings, 0)
    finally:
        experiment.make_estimator = make
    return rows, beliefs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--domain', default='tidyup')
    parser.add_argument('--household', help='household file (default: the default one)')
    parser.add_argument('--capabilities-file', help='capability catalogue (default: the '
                        "household's, else the package's)")
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--samples', type=int, default=500)
    parser.add_argument('--tasks', type=int, default=2)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--task-choice', choices=('given', 'informative'), default='given')
    args = parser.parse_args()
    model = load_domain(args.domain, household=args.household,
                        capabilities=args.capabilities_file)
    settings = experiment.ExperimentSettings(
        partner=args.partner, method='cecm', runs=1, tasks=args.tasks, seed=args.seed,
        jobs=args.jobs, heldout=0, task_choice=args.task_choice,
        estimator=EstimatorSettings(samples=args.samples))
    plain, plain_beliefs = session(model, settings, ahead=False)
    ahead, ahead_beliefs = session(model, settings, ahead=True)
    print(f'{"task":<18} {"ahead: plans":>12} {"s":>6} {"then update: plans":>18} {"s":>6}'
          f' {"without: plans":>14} {"s":>6}  same belief')
    for one, other, first, second in zip(plain, ahead, plain_beliefs, ahead_beliefs):
        same = np.allclose(first.theta, second.theta) and \
            [r.status for r in first.report] == [r.status for r in second.report]
        print(f'{other["task"]:<18} {other["ahead_plans"]:>12} {other["ahead_s"]:>6.1f} '
              f'{other["update_plans"]:>18} {other["update_s"]:>6.1f} '
              f'{one["update_plans"]:>14} {one["update_s"]:>6.1f}  {"yes" if same else "NO"}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
