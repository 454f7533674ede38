"""Plans over the rooms a task involves against plans over every room (``plan_rooms``).

    .venv/bin/python bench/task_rooms.py --seeds 10            # --json-out FILE

For the household given (default: the 10-room one, which asks for ``plan_rooms: task``),
per seed its first three tasks, each from its start and from the states a third and
two thirds along the ``low_capability`` partner's plan (the states the stepwise
likelihood plans from), under every partner type of the catalogue and eight sampled
vectors (densities 0.97 and 0.93 twice, 0.85 twice, 0.7 and 0.5; ``--vector-seed``).
Both planners run here, without a plan store. Prints how many plans are the same, every
one that is not (with both household costs), any vector with a plan over one room set
only, and the seconds each planner searched.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.errors import UnsolvableTaskError
from cecm_ros.domains import planner_for
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.domains.tidyup.model import TidyUpModel

REPO = Path(__file__).resolve().parent.parent
DENSITIES = (0.97, 0.97, 0.93, 0.93, 0.85, 0.85, 0.7, 0.5)


def plans_of(planner, task, vectors) -> list:
    """The plans of ``vectors``, None where a vector has none."""
    try:
        return planner.plan_many(task, vectors)
    except UnsolvableTaskError:
        plans = []
        for vector in vectors:
            try:
                plans.append(planner.plan(task, vector))
            except UnsolvableTaskError:
                plans.append(None)
        return plans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--household', type=Path,
                        default=REPO / 'config/households/tidyup_10_rooms.yaml')
    parser.add_argument('--capabilities-file', type=Path,
                        default=REPO / 'config/households/capabilities_10_rooms.yaml')
    parser.add_argument('--seeds', type=int, default=10, help='task seeds 0..N-1')
    parser.add_argument('--tasks', type=int, default=3, help='tasks per seed')
    parser.add_argument('--vector-seed', type=int, default=7)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--json-out', type=Path)
    args = parser.parse_args()

    household = replace(Household.from_yaml(args.household), plan_rooms='task')
    catalog = CapabilityCatalog.from_yaml(args.capabilities_file)
    scoped = TidyUpModel(household, catalog)
    every = TidyUpModel(replace(household, plan_rooms='all'), catalog)
    rng = np.random.default_rng(args.vector_seed)
    partners = [catalog.resolve(name) for name in catalog.partner_types]
    asked, differing, seconds = 0, [], {'task': 0.0, 'all': 0.0}
    unsolvable: list[dict] = []     # a plan over one room set and none over the other
    rooms_kept = []
    with planner_for(scoped, workers=args.jobs, plan_cache=False) as small, \
            planner_for(every, workers=args.jobs, plan_cache=False) as full:
        for seed in range(args.seeds):
            for task in scoped.task_generator(seed).tasks(args.tasks):
                path = full.plan(task, catalog.resolve('low_capability')).trajectory
                states = [task] + [scoped.task_from_state(task, path[k])
                                   for k in (len(path) // 3, 2 * len(path) // 3)]
                vectors = partners + [rng.random(len(catalog)) < d for d in DENSITIES]
                for state in states:
                    rooms_kept.append(len(scoped.task_rooms(state)))
                    started = time.perf_counter()
                    mine = plans_of(small, state, vectors)
                    seconds['task'] += time.perf_counter() - started
                    started = time.perf_counter()
                    theirs = plans_of(full, state, vectors)
                    seconds['all'] += time.perf_counter() - started
                    for vector, one, other in zip(vectors, mine, theirs):
                        asked += 1
                        if one is None or other is None:
                            if one is not other:
                                unsolvable.append({'task': task.task_id,
                                                   'vector': catalog.format_vector(vector),
                                                   'task_rooms': one is not None,
                                                   'all_rooms': other is not None})
                            continue
                        if one.sequential != other.sequential:
                            differing.append({
                                'task': task.task_id, 'start': sorted(state.initial),
                                'vector': catalog.format_vector(vector),
                                'cost_task_rooms': one.cost, 'cost_all_rooms': other.cost,
                                'plan_task_rooms': list(one.sequential or ()),
                                'plan_all_rooms': list(other.sequential or ())})
            print(f'seed {seed}: {asked} plans compared, {len(differing)} differ, '
                  f'{len(unsolvable)} found over one room set only', flush=True)
    summary = {'household': household.name, 'rooms': len(household.rooms),
               'seeds': args.seeds, 'tasks_per_seed': args.tasks,
               'vector_seed': args.vector_seed, 'plans_compared': asked,
               'same': asked - len(differing) - len(unsolvable),
               'same_household_cost': asked - len(unsolvable) - sum(
                   d['cost_task_rooms'] != d['cost_all_rooms'] for d in differing),
               'solvable_over_one_only': unsolvable,
               'rooms_per_problem_mean': round(float(np.mean(rooms_kept)), 2),
               'search_s_task_rooms': round(seconds['task'], 1),
               'search_s_all_rooms': round(seconds['all'], 1),
               'differing': differing}
    for entry in differing:
        print(f"{entry['task']} {entry['vector']}: household cost "
              f"{entry['cost_task_rooms']:g} over the task's rooms, "
              f"{entry['cost_all_rooms']:g} over all\n  task rooms: "
              f"{' '.join(entry['plan_task_rooms'])}\n  all rooms:  "
              f"{' '.join(entry['plan_all_rooms'])}")
    print(json.dumps({k: v for k, v in summary.items() if k != 'differing'}))
    if args.json_out:
        args.json_out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
