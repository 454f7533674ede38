"""Does CE-CM-Div's plan set of a partner's own capabilities hold what it does when it
declines one?

    .venv/bin/python bench/declined_plans.py high_capability --seed 0 --runs 20 \
        --tasks 5 --forgo-probability 0.3 --cost-slack 0.25 0.5 1.0 none

Replays the tasks and the partner choices of ``cecm experiment --forgo-probability P``
with given tasks (the same seeds) and counts, per cost bound of the plan sets, the
tasks in which the partner declined a capability and the set of its true capabilities
still explains what it did (distance below epsilon). A set that misses it leaves the
truth out of the posterior, and the belief can then claim something false as known.
"""

from __future__ import annotations

import argparse

import numpy as np

from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.core.hypotheses import DiversePlanEvaluator
from cecm_ros.core.partners import SimulatedHuman, partner_seed
from cecm_ros.core.tasks import TaskSequence
from cecm_ros.core.trajectory import min_jaccard_distance
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import run_seed


def slack_value(text: str) -> float | None:
    if text.lower() == 'none':
        return None
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'a cost slack must be at least 0, got {text}')
    return value


def count_explained(planner: FastDownwardPlanner, partner: str, seed: int, runs: int, tasks: int,
                    forgo: float, slacks: list[float | None],
                    epsilon: float = EstimatorSettings().epsilon) -> dict:
    """Per slack: tasks explained among those with a declined capability, and the mean
    size of the true capabilities' set over all tasks."""
    truth = planner.model.catalog.resolve(partner)
    evaluators = [DiversePlanEvaluator(planner, cost_slack=slack) for slack in slacks]
    declined, explained = 0, np.zeros(len(slacks), dtype=int)
    sizes = np.zeros(len(slacks))
    for run in range(runs):
        base = run_seed(seed, run)
        sequence = TaskSequence(planner.model, base, count=tasks, candidates=1)
        for _ in range(tasks):
            sequence.offer()
            task = sequence.take(0)
            human = SimulatedHuman(planner, truth, forgo, seed=partner_seed(base, task.task_id))
            observed = human.begin_task(task).trajectory
            for index, evaluator in enumerate(evaluators):
                (own,) = evaluator.trajectory_sets(task, truth[None, :])
                sizes[index] += len(own)
                if human.forgone is not None:
                    explained[index] += min_jaccard_distance(own, observed) < epsilon
            declined += human.forgone is not None
    return {'declined': declined, 'explained': explained.tolist(),
            'mean_set_size': (sizes / (runs * tasks)).tolist()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('partner', help='named partner type or name=0,... vector')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--tasks', type=int, default=5)
    parser.add_argument('--forgo-probability', type=float, default=0.3)
    parser.add_argument('--cost-slack', type=slack_value, nargs='+',
                        default=[0.25, 0.5, 1.0, None],
                        help="cost bounds to compare ('none': no bound, the default set)")
    args = parser.parse_args(argv)
    with FastDownwardPlanner(TidyUpModel()) as planner:
        counts = count_explained(planner, args.partner, args.seed, args.runs, args.tasks,
                                 args.forgo_probability, args.cost_slack)
    print(f'{args.partner}, seed {args.seed}, {args.runs} runs x {args.tasks} tasks: the '
          f'partner declined a capability in {counts["declined"]} tasks')
    print('| cost bound | tasks explained by the true capabilities | mean set size |')
    print('|---|---|---|')
    for slack, explained, size in zip(args.cost_slack, counts['explained'],
                                      counts['mean_set_size']):
        bound = 'none' if slack is None else f'{1 + slack:g} x optimum'
        print(f'| {bound} | {explained} of {counts["declined"]} | {size:.2f} |')


if __name__ == '__main__':
    main()
