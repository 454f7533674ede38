"""How often a hypothesis's own plans land near what a partner who is not optimal does.

    .venv/bin/python bench/likelihood_calibration.py --domain overcooked \
        --partners type_1 type_2 type_3 --partner-seeds 3 --robot-seeds 4
    .venv/bin/python bench/likelihood_calibration.py --domain tidyup \
        --partners low_capability --partner-behaviour noisy:0.1 --tasks 12 --robot-seeds 1

For every task of a domain with few tasks (``task_universe``; else ``--tasks`` tasks of
its seeded stream), every partner type and ``--partner-seeds`` seeds of the partner's
own choices, the observed trajectory is what a shared task with that partner
(``--partner-behaviour``, default independent: its own search seed) and a robot that
takes it for fully capable produces, corrections and all. Each is compared with the
plans ``--robot-seeds`` searches of the robot make for
the true vector and for every single change of it that the task can use (the robot's
planner seed, then the likelihood's extra seeds). Printed per partner type: the share of
(task, partner seed, robot seed) within epsilon for the truth and for the single
changes, and the mean per-task log-likelihood ratio, truth over change, that the graded
likelihood gives with 1 and with all the robot's seeds at a few lapses: the evidence a
task carries against a wrong capability, on average.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from cecm_ros.core.likelihood import Likelihood, seeded_planners
from cecm_ros.core.partners import (
    PartnerBehaviour,
    RobotTeammate,
    SimulatedHuman,
    partner_seed,
    run_shared_task,
)
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.experiments.experiment import partner_search_seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--domain', default='overcooked')
    parser.add_argument('--partners', nargs='+', default=['type_1', 'type_2', 'type_3'])
    parser.add_argument('--partner-seeds', type=int, default=5)
    parser.add_argument('--robot-seeds', type=int, default=4)
    parser.add_argument('--lapses', type=float, nargs='+', default=[0.02, 0.1, 0.3])
    parser.add_argument('--epsilon', type=float)
    parser.add_argument('--partner-behaviour', default='independent')
    parser.add_argument('--tasks', type=int, default=12,
                        help='tasks of an open-ended domain (default: 12)')
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    domain = load_domain(args.domain)
    tasks = domain.task_universe() or domain.task_generator(0).tasks(args.tasks)
    behaviour = PartnerBehaviour.parse(args.partner_behaviour)
    epsilon = args.epsilon or domain.default_epsilon or 0.24
    planner = planner_for(domain, workers=args.jobs)
    robots = seeded_planners(planner, args.robot_seeds)
    started = time.perf_counter()
    results = {}
    for partner in args.partners:
        truth = domain.catalog.resolve(partner)
        # distances[kind] -> list of (task, partner seed) rows of per-robot-seed distances
        truth_rows, change_rows = [], []
        for task in tasks:
            relevant = np.flatnonzero(domain.relevant_mask(task) & ~domain.inert_mask) \
                if hasattr(domain, 'relevant_mask') else np.flatnonzero(~domain.inert_mask)
            changes = np.repeat(truth[None, :], len(relevant), axis=0)
            changes[np.arange(len(relevant)), relevant] ^= True
            vectors = np.vstack([truth[None, :], changes])
            per_robot = [robot.plan_many(task, vectors) for robot in robots]
            for p in range(args.partner_seeds):
                twin = planner.with_seed(partner_search_seed(1000 + p)) \
                    if behaviour.own_search else None
                human = SimulatedHuman(twin or planner, truth, behaviour=behaviour,
                                       seed=partner_seed(1000 + p, task.task_id))
                record = run_shared_task(domain, task,
                                         RobotTeammate(planner, domain.catalog.all_capable()),
                                         human)
                observed = tuple(record.trajectory)
                distances = np.array([[domain.distance(plans[v].trajectory, observed)
                                       for plans in per_robot] for v in range(len(vectors))])
                truth_rows.append(distances[0])
                change_rows.extend(distances[1:])
        truth_d, change_d = np.array(truth_rows), np.array(change_rows)
        entry = {'within_epsilon_truth': float((truth_d < epsilon).mean()),
                 'within_epsilon_changes': float((change_d < epsilon).mean()),
                 'median_distance_truth': float(np.median(truth_d)),
                 'median_distance_changes': float(np.median(change_d)),
                 'log_ratio': {}}
        for lapse in args.lapses:
            form = Likelihood(epsilon, lapse)
            for seeds in sorted({1, args.robot_seeds}):
                ok = np.ones(len(truth_d), dtype=bool)
                mine = form.log_values(truth_d[:, :seeds], ok).mean()
                theirs = form.log_values(change_d[:, :seeds], np.ones(len(change_d), bool)).mean()
                entry['log_ratio'][f'lapse={lapse:g},seeds={seeds}'] = float(mine - theirs)
        results[partner] = entry
        print(f'{partner}: within epsilon {epsilon:g}: truth {entry["within_epsilon_truth"]:.2f}, '
              f'single changes {entry["within_epsilon_changes"]:.2f}; median distance '
              f'{entry["median_distance_truth"]:.3f} / {entry["median_distance_changes"]:.3f}',
              flush=True)
        for label, value in entry['log_ratio'].items():
            print(f'    mean log-likelihood ratio truth/change per task ({label}): {value:+.2f}')
    print(f'{time.perf_counter() - started:.0f} s; {planner.calls} searches '
          f'({sum(r.calls for r in robots[1:])} of other seeds)', file=sys.stderr)
    if args.json_out:
        with open(args.json_out, 'w') as handle:
            json.dump({'settings': vars(args), 'epsilon': epsilon, 'results': results}, handle,
                      indent=1)
    planner.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
