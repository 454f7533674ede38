"""The estimator's updates with their searches here and on a local Ray head of 1 and 2 CPUs.

    .venv/bin/python bench/ray_scaling.py                  # TidyUP, N = 500, 5 tasks
    .venv/bin/python bench/ray_scaling.py --cpus 1 2 4 --rounds 2 --json
    .venv/bin/python bench/ray_scaling.py --tasks 3 \
        --household config/households/tidyup_10_rooms.yaml \
        --capabilities-file config/households/capabilities_10_rooms.yaml

The same fixed tasks (seeded, in the order drawn) and what a partner did in them (its
plan, made beforehand) are given to a new CE-CM posterior in every setting: first with
the planner searching in this process (``--workers`` searches at a time), then with its
searches sent to a Ray head of N CPUs started in this process (``ray_address
local:N``). Every setting starts without plans (no plan store, a new planner), so each
makes the same searches. Per setting it prints the seconds to connect and for the
workers to make their planners (a cost paid once per cluster, not per update), each
update's seconds, their sum, the plans made, and the sum as a ratio to the run here in
the same round (``--rounds`` repeats the settings, alternating, for ratios under the same
load). The load average is printed before and after each setting: on a shared machine
only the ratios of one round carry over. Checks that every setting reaches the same
belief.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.domains import load_domain, planner_for


def load() -> float:
    return round(os.getloadavg()[0], 2)


def run_setting(model, evidence, address: str, args) -> dict:
    """One new planner and posterior over the fixed evidence; its timings."""
    entry: dict = {'setting': address or 'here', 'load_before': load()}
    started = time.perf_counter()
    planner = planner_for(model, workers=args.workers, plan_cache=False,
                          ray_address=address)
    try:
        entry['connect_s'] = round(time.perf_counter() - started, 2) if address else 0.0
        offload = getattr(planner, 'offload', None)
        entry['warm_up_s'] = round(offload.warm_up(), 2) if offload is not None else 0.0
        cecm = make_estimator('cecm', model, evaluator_for('cecm', planner),
                              EstimatorSettings(samples=args.samples), seed=args.seed)
        updates = []
        for task, observed in evidence:
            started = time.perf_counter()
            cecm.update(task, observed)
            updates.append(round(time.perf_counter() - started, 3))
        entry.update(updates_s=updates, update_total_s=round(sum(updates), 2),
                     update_median_s=round(statistics.median(updates), 3),
                     plans_made=planner.calls,
                     belief=json.dumps(cecm.belief.to_dict(), sort_keys=True, default=str))
        if offload is not None:
            entry['chunks'] = offload.chunks
            entry['worker_processes'] = len(offload.processes)
    finally:
        planner.close()
    entry['load_after'] = load()
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--domain', default='tidyup')
    parser.add_argument('--household', help='tidyup: household file')
    parser.add_argument('--capabilities-file', help='tidyup: capability catalogue')
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--samples', type=int, default=500, help='N (default: 500)')
    parser.add_argument('--tasks', type=int, default=5, help='updates (default: 5)')
    parser.add_argument('--seed', type=int, default=0,
                        help="the tasks' and the estimator's seed (default: 0)")
    parser.add_argument('--workers', type=int, default=2,
                        help='searches at a time here (default: 2, the cores of the '
                             'development machine)')
    parser.add_argument('--cpus', type=int, nargs='+', default=[1, 2],
                        help='CPUs of the local Ray heads (default: 1 2)')
    parser.add_argument('--rounds', type=int, default=1,
                        help='repeat every setting, alternating (default: 1)')
    parser.add_argument('--json', action='store_true', help='one JSON object per setting')
    args = parser.parse_args()

    options = {key: value for key, value in (('household', args.household),
                                             ('capabilities', args.capabilities_file))
               if value}
    model = load_domain(args.domain, **options)
    truth = model.catalog.resolve(args.partner)
    tasks = model.task_generator(args.seed).tasks(args.tasks)
    with planner_for(model, workers=args.workers, plan_cache=False) as planner:
        evidence = [(task, planner.plan(task, truth).trajectory) for task in tasks]
    print(f'[ray_scaling] {args.domain}, partner {args.partner}, N = {args.samples}, '
          f'{args.tasks} tasks (seed {args.seed}), {os.cpu_count()} cores here, load '
          f'{load()}', file=sys.stderr)

    beliefs = set()
    for round_index in range(args.rounds):
        here = None
        for address in ['', *(f'local:{n}' for n in args.cpus)]:
            entry = run_setting(model, evidence, address, args)
            beliefs.add(entry.pop('belief'))
            if here is None:
                here = entry['update_total_s']
            entry['round'] = round_index + 1
            entry['ratio'] = round(entry['update_total_s'] / here, 2) if here else None
            if args.json:
                print(json.dumps(entry), flush=True)
                continue
            updates = ' '.join(f'{u:.2f}' for u in entry['updates_s'])
            print(f"round {entry['round']} {entry['setting']:>8}: connect "
                  f"{entry['connect_s']:5.2f} s, warm-up {entry['warm_up_s']:5.2f} s, "
                  f"updates {updates} s, sum {entry['update_total_s']:6.2f} s "
                  f"(x{entry['ratio']:.2f} of here), {entry['plans_made']} plans, load "
                  f"{entry['load_before']}-{entry['load_after']}", flush=True)
    if len(beliefs) != 1:
        print('[ray_scaling] the settings reached different beliefs', file=sys.stderr)
        return 1
    print('[ray_scaling] every setting reached the same belief', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
