"""What each likelihood costs an update: a demo-like session per likelihood, one process.

    .venv/bin/python bench/likelihood_cost.py --likelihoods indicator stepwise kernel

Runs ``cecm_ros.experiments.bench.run_session_benchmark`` (the session ``make demo`` runs:
``--tasks`` tasks, each the most informative of 5, on a new plan store and again on the
plans it left) once per likelihood, in this process, one after another, and prints per
likelihood the first task's time, the median and 95th percentile of the cold updates
and the plans they made, with each figure's ratio to the first likelihood's. Only the
ratios carry over to another machine; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys

from cecm_ros.domains import load_domain
from cecm_ros.experiments.bench import run_session_benchmark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--domain', default='tidyup')
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--likelihoods', nargs='+', default=['indicator', 'stepwise'])
    parser.add_argument('--samples', type=int, default=500)
    parser.add_argument('--tasks', type=int, default=5)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--json-out')
    args = parser.parse_args(argv)
    domain = load_domain(args.domain)
    keys = ('first_task_s', 'update_median_s', 'update_p95_s', 'session_plans_made')
    results = {}
    for likelihood in args.likelihoods:
        result = run_session_benchmark(domain, args.partner, samples=args.samples,
                                       seed=args.seed, jobs=args.jobs, tasks=args.tasks,
                                       likelihood=likelihood)
        results[likelihood] = {key: result.get(key) for key in keys}
        reference = results[args.likelihoods[0]]
        cells = []
        for key in keys:
            value, base = results[likelihood][key], reference[key]
            ratio = f' ({value / base:.2f}x)' if isinstance(value, (int, float)) and base \
                else ''
            cells.append(f'{key} {value:.2f}{ratio}' if isinstance(value, float)
                         else f'{key} {value}{ratio}')
        print(f'{likelihood}: ' + ', '.join(cells), flush=True)
    if args.json_out:
        with open(args.json_out, 'w') as handle:
            json.dump({'settings': vars(args), 'results': results}, handle, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
