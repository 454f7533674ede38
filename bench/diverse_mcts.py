"""How DiverseMCTS's L_min and delta shape CE-CM-Div's Overcooked sets (appendix C.3).

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/diverse_mcts.py --seeds 1 2 3 \
        --min-length 1 3 5 8 --diversity 0.1 0.2 0.35 0.5

For every task and partner type, the set of the partner's true vector (seed 0, the
robot's search) is built under each L_min and delta, and compared with the plans the
partner's own searches make (seeds given, what an `independent` partner does). Per
setting it prints the plans per set and how often the set explains the partner's
trajectory (some plan within epsilon): with a set of one plan (CE-CM) the partner is
explained only when its search happens to find the robot's plan.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cecm_ros.domains.overcooked.diverse import SetRules, candidate_paths, select
from cecm_ros.domains.overcooked.mcts import MctsPlanner, MctsSettings, search_plan
from cecm_ros.domains.overcooked.model import OvercookedDomain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 2, 3])
    parser.add_argument('--min-length', type=int, nargs='+', default=[1, 3, 5, 8])
    parser.add_argument('--diversity', type=float, nargs='+', default=[0.1, 0.2, 0.35, 0.5])
    parser.add_argument('--size', type=int, default=50)
    parser.add_argument('--tasks', nargs='*', default=None, help='task ids (default: all 9)')
    args = parser.parse_args()
    domain = OvercookedDomain()
    epsilon = domain.default_epsilon
    tasks = [t for t in domain.task_universe() if not args.tasks or t.task_id in args.tasks]
    planner = MctsPlanner(domain, plan_cache=False)
    settings = MctsSettings()
    # (L_min, delta) -> [set sizes], [explained flags]; 'one plan' -> flags.
    sizes: dict[tuple, list[int]] = {}
    explained: dict[tuple, list[bool]] = {}
    single: list[bool] = []
    survived: dict[int, list[int]] = {}
    unfinished: list[float] = []
    started = time.perf_counter()
    for task in tasks:
        for partner in sorted(domain.catalog.partner_types):
            vector = domain.catalog.partner_vector(partner) | ~domain.relevant_mask(task)
            tree: list = []
            own = search_plan(domain, task, vector, settings, tree)
            search, root, chosen = tree
            observed = [planner.with_seed(seed).plan(task, vector).trajectory
                        for seed in args.seeds]
            single.extend(domain.distance(own.trajectory, o) <= epsilon for o in observed)
            for min_length in args.min_length:
                candidates, counts = candidate_paths(search, root, domain, min_length)
                survived.setdefault(min_length, []).append(len(candidates))
                if min_length == args.min_length[0]:
                    unfinished.append(counts['unfinished'] / max(1, counts['paths']))
                for delta in args.diversity:
                    rules = SetRules(args.size, delta, min_length)
                    kept = [t for _, t in select((chosen, list(own.trajectory)), candidates,
                                                 rules)]
                    sizes.setdefault((min_length, delta), []).append(len(kept))
                    explained.setdefault((min_length, delta), []).extend(
                        min(domain.distance(t, o) for t in kept) <= epsilon for o in observed)
    print(f'{len(tasks)} tasks x {len(domain.catalog.partner_types)} partner types x '
          f'{len(args.seeds)} independent searches, epsilon {epsilon}, k {args.size} '
          f'({time.perf_counter() - started:.0f} s)')
    print(f'one plan (CE-CM): explained {np.mean(single):.2f}')
    print(f'tree paths left unfinished by the completion: {np.mean(unfinished):.2f}')
    for min_length in args.min_length:
        print(f'L_min {min_length}: completed candidates per set '
              f'{np.mean(survived[min_length]):.1f}')
    print('| L_min | delta | plans per set (mean, min-max) | explained |')
    print('|---|---|---|---|')
    for (min_length, delta), values in sizes.items():
        print(f'| {min_length} | {delta} | {np.mean(values):.1f} ({min(values)}-{max(values)}) '
              f'| {np.mean(explained[(min_length, delta)]):.2f} |')


if __name__ == '__main__':
    main()
