"""How the cost of a CE-CM update grows with the household and the number of samples.

    .venv/bin/python bench/scale.py --samples 500 5000 --seeds 0 1
    .venv/bin/python bench/scale.py \
        --household config/households/tidyup_10_rooms.yaml \
        --capabilities-file config/households/capabilities_10_rooms.yaml \
        --samples 500 5000 --seeds 0 1 --json-out results/scale_10_rooms.json

Every (samples, seed) cell runs in a process of its own (so that its peak RSS is its
own) with a new, empty ``CECM_CACHE_DIR``, and measures:

* the session benchmark (``cecm_ros.experiments.bench.run_session_benchmark``: a ``--tasks``-task
  session with informative task choice, as the demo runs it, on a new plan store and
  then again on the plans it left), and, per update of the cold session, the plans the
  planner made during it (``plans``), the hypotheses whose distance to the new and older
  tasks it computed (``evaluated``, each a distinct vector on one task) and the distinct
  hypotheses among the particles afterwards (``distinct``);
* one evaluation of N prior samples on the first task with shared plans (the fast path
  of ``cecm bench``, without the naive one), its planner calls and the distinct
  vectors among the samples (inert capabilities set);
* with ``--naive-up-to M`` and N <= M, ``cecm bench``'s naive-vs-shared comparison too
  (one full planner call per sample: slow).

``--profile DIR`` writes a cProfile of the cold session's updates per cell (only the
calling thread is profiled: time spent waiting for the planner's search threads shows
as ``acquire`` under ``plan_many``). Times are printed, never asserted on.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cecm_ros.domains import planner_for

HERE = Path(__file__).resolve()


def _rss_mb() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {'peak_rss_mb': round(own, 1), 'peak_rss_children_mb': round(children, 1)}


def _posterior_memo_size(estimator) -> int:
    posterior = estimator.belief.posterior
    if posterior is None:
        return 0
    return sum(len(memo) for memo in posterior._distances.values())


def instrument(model, per_update: list[dict], profile: cProfile.Profile | None,
               timeout: float | None = None):
    """Record, per estimator update, the planner calls, evaluated hypotheses and distinct
    particles (and give every planner ``timeout`` seconds per search, when set); returns a
    function that undoes the patches."""
    import cecm_ros.experiments.bench as bench
    import cecm_ros.experiments.experiment as experiment

    planners = []
    make_planner, make_estimator = bench.planner_for, experiment.make_estimator

    def planner(*args, **kwargs):
        if timeout is not None:
            kwargs.setdefault('timeout_s', timeout)
        made = make_planner(*args, **kwargs)
        planners.append(made)
        return made

    def estimator(*args, **kwargs):
        made = make_estimator(*args, **kwargs)
        update = made.update

        def timed_update(task, observed, *rest, **options):
            calls = planners[-1].calls
            memo = _posterior_memo_size(made)
            if profile is not None:
                profile.enable()
            started = time.perf_counter()
            try:
                report = update(task, observed, *rest, **options)
            finally:
                seconds = time.perf_counter() - started
                if profile is not None:
                    profile.disable()
            posterior = made.belief.posterior
            per_update.append({
                'task': task.task_id, 'update_s': round(seconds, 3),
                'plans': planners[-1].calls - calls,
                'evaluated': _posterior_memo_size(made) - memo,
                'distinct': int(len(np.unique(posterior.particles, axis=0)))
                if posterior is not None and posterior.particles is not None else None,
                # Equal digests: the same particles (two settings reached one belief).
                'particles_digest': hashlib.sha256(np.ascontiguousarray(
                    posterior.particles).tobytes()).hexdigest()[:12]
                if posterior is not None and posterior.particles is not None else None,
                'survivors': report.samples_accepted})
            return report

        made.update = timed_update
        return made

    bench.planner_for = planner
    experiment.make_estimator = estimator

    def undo() -> None:
        bench.planner_for = make_planner
        experiment.make_estimator = make_estimator
    return undo


def fast_evaluation(model, partner: str, samples: int, seed: int, jobs: int,
                    timeout: float | None = None) -> dict:
    """N prior samples of the first task evaluated with shared plans (no plan store)."""
    from cecm_ros.core.estimator import CecmEstimator, EstimatorSettings
    from cecm_ros.core.hypotheses import SharedPlanEvaluator

    truth = model.catalog.resolve(partner)
    task = model.task_generator(seed).tasks(1)[0]
    options = {} if timeout is None else {'timeout_s': timeout}
    with planner_for(model, **options) as planner:
        observed = planner.plan(task, truth).trajectory
    settings = EstimatorSettings.preset('paper', samples=samples)
    vectors = CecmEstimator(model, None, settings, seed).draw_samples()
    effective = vectors | model.inert_mask
    with planner_for(model, workers=jobs, **options) as planner:
        started = time.perf_counter()
        SharedPlanEvaluator(planner).distances(task, vectors, observed)
        seconds = time.perf_counter() - started
        calls = planner.calls
    return {'fast_s': round(seconds, 3), 'fast_planner_calls': calls,
            'distinct_vectors': int(len(np.unique(effective, axis=0)))}


def run_cell(args) -> dict:
    """One (samples, seed) cell, in this process."""
    from cecm_ros.core.errors import PlanningError
    from cecm_ros.domains import load_domain
    from cecm_ros.experiments.bench import run_session_benchmark, run_update_benchmark

    model = load_domain(args.domain, household=args.household,
                        capabilities=args.capabilities_file)
    samples, seed = args.samples[0], args.seeds[0]
    cell = {'household': getattr(model, 'household', None) and model.household.name,
            'capabilities': len(model.catalog), 'live_capabilities':
            int((~model.inert_mask).sum()), 'partner': args.partner, 'samples': samples,
            'seed': seed, 'jobs': args.jobs, 'load_before': os.getloadavg()[0]}
    per_update: list[dict] = []
    profile = cProfile.Profile() if args.profile else None
    if args.tasks > 0:
        undo = instrument(model, per_update, profile, args.planner_timeout)
        try:
            session = run_session_benchmark(model, args.partner, samples=samples, seed=seed,
                                            jobs=args.jobs, tasks=args.tasks,
                                            task_choice=args.task_choice)
        except PlanningError as error:
            # A search that outlasts the planner's timeout ends the session: say where.
            cell.update({'error': f'{type(error).__name__}: {error}',
                         'per_update': per_update, 'load_after': os.getloadavg()[0]})
            cell.update(_rss_mb())
            return cell
        finally:
            undo()
        cell.update(session)
        cell['per_update'] = per_update[:args.tasks]   # the cold session's
        if profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
            profile.dump_stats(str(args.profile / f'{cell["household"]}_n{samples}_s{seed}.prof'))
    if not args.no_fast:
        cell.update(fast_evaluation(model, args.partner, samples, seed, args.jobs,
                                    args.planner_timeout))
    if samples <= args.naive_up_to:
        naive = run_update_benchmark(model, args.partner, samples=samples, seed=seed,
                                     jobs=args.jobs)
        cell.update({'naive_s': naive['naive_s'], 'naive_fast_s': naive['fast_s'],
                     'naive_speedup': naive['speedup'], 'naive_agreement': naive['agreement']})
    cell['load_after'] = os.getloadavg()[0]
    cell.update(_rss_mb())
    return cell


def spawn_cell(args, samples: int, seed: int) -> dict:
    command = [sys.executable, str(HERE), '--cell', '--samples', str(samples),
               '--seeds', str(seed), '--partner', args.partner, '--jobs', str(args.jobs),
               '--tasks', str(args.tasks), '--naive-up-to', str(args.naive_up_to),
               '--domain', args.domain]
    if args.planner_timeout is not None:
        command += ['--planner-timeout', str(args.planner_timeout)]
    command += ['--task-choice', args.task_choice] + (['--no-fast'] if args.no_fast else [])
    for option, value in (('--household', args.household),
                          ('--capabilities-file', args.capabilities_file),
                          ('--profile', args.profile)):
        if value:
            command += [option, str(value)]
    with tempfile.TemporaryDirectory(prefix='cecm-scale-') as cache:
        environment = dict(os.environ, CECM_CACHE_DIR=cache)
        started = time.perf_counter()
        done = subprocess.run(command, env=environment, stdout=subprocess.PIPE, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {'samples': samples, 'seed': seed, 'error': f'exit code {done.returncode}'}
    cell = json.loads(lines[-1])
    cell['cell_wall_s'] = round(time.perf_counter() - started, 1)
    return cell


def _spread(values) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return '-'
    if len(values) == 1:
        return f'{values[0]:.3g}'
    return f'{statistics.mean(values):.3g} ({min(values):.3g}-{max(values):.3g})'


def print_table(cells: list[dict]) -> None:
    columns = [('update median s', lambda c: c.get('update_median_s')),
               ('update p95 s', lambda c: c.get('update_p95_s')),
               ('update max s', lambda c: max((u['update_s'] for u in c.get('per_update', [])),
                                              default=None)),
               ('first task s', lambda c: c.get('first_task_s')),
               ('session cold s', lambda c: c.get('session_cold_s')),
               ('session warm s', lambda c: c.get('session_warm_s')),
               ('plans/update', lambda c: statistics.mean(
                   u['plans'] for u in c['per_update']) if c.get('per_update') else None),
               ('evaluated/update', lambda c: statistics.mean(
                   u['evaluated'] for u in c['per_update']) if c.get('per_update') else None),
               ('fast eval s', lambda c: c.get('fast_s')),
               ('fast eval calls', lambda c: c.get('fast_planner_calls')),
               ('distinct of N', lambda c: c.get('distinct_vectors')),
               ('peak RSS MB', lambda c: c.get('peak_rss_mb')),
               ('load', lambda c: c.get('load_before'))]
    print('| N | seeds | ' + ' | '.join(name for name, _ in columns) + ' |')
    print('|---|---|' + '---|' * len(columns))
    for samples in sorted({c['samples'] for c in cells}):
        group = [c for c in cells if c['samples'] == samples and 'error' not in c]
        seeds = ','.join(str(c['seed']) for c in group)
        print(f'| {samples} | {seeds} | '
              + ' | '.join(_spread([get(c) for c in group]) for _, get in columns) + ' |')
    for cell in cells:
        if 'error' in cell:
            print(f'N={cell["samples"]} seed {cell["seed"]}: {cell["error"]}')


def run_paired(args) -> list[dict]:
    """Every N for each seed in this one process, the order of N reversed from seed to
    seed, so that the ratios between N compare runs under the same load."""
    from cecm_ros.domains import load_domain
    from cecm_ros.experiments.bench import run_session_benchmark

    model = load_domain(args.domain, household=args.household,
                        capabilities=args.capabilities_file)
    cells = []
    for turn, seed in enumerate(args.seeds):
        for samples in (args.samples if turn % 2 == 0 else args.samples[::-1]):
            cell = {'samples': samples, 'seed': seed, 'load_before': os.getloadavg()[0]}
            per_update: list[dict] = []
            if args.tasks > 0:
                undo = instrument(model, per_update, None, args.planner_timeout)
                try:
                    cell.update(run_session_benchmark(
                        model, args.partner, samples=samples, seed=seed, jobs=args.jobs,
                        tasks=args.tasks, task_choice=args.task_choice))
                finally:
                    undo()
                cell['per_update'] = per_update[:args.tasks]
            if not args.no_fast:
                cell.update(fast_evaluation(model, args.partner, samples, seed, args.jobs,
                                            args.planner_timeout))
            cells.append(cell)
            print(f'[scale] paired N={samples} seed {seed}: update median '
                  f'{cell.get("update_median_s")} s, fast {cell.get("fast_s")} s, '
                  f'load {cell["load_before"]:.2f}', file=sys.stderr, flush=True)
    low, high = min(args.samples), max(args.samples)
    keys = ('update_median_s', 'first_update_s', 'session_cold_s', 'session_warm_s', 'fast_s')
    for cell in cells:
        if cell.get('per_update'):
            cell['first_update_s'] = cell['per_update'][0]['update_s']
    print('| seed | ' + ' | '.join(f'{key} N={high} / N={low}' for key in keys) + ' |')
    print('|---|' + '---|' * len(keys))
    for seed in args.seeds:
        pair = {c['samples']: c for c in cells if c['seed'] == seed}
        ratios = [pair[high].get(key) / pair[low][key] if pair[low].get(key) else None
                  for key in keys]
        print(f'| {seed} | ' + ' | '.join('-' if r is None else f'{r:.2f}' for r in ratios)
              + ' |')
    return cells


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--domain', default='tidyup')
    parser.add_argument('--household', help='household file (default: the default one)')
    parser.add_argument('--capabilities-file', help='capability catalogue')
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--samples', type=int, nargs='+', default=[500, 5000])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument('--tasks', type=int, default=5,
                        help='session tasks (0: no session benchmark) (default: 5)')
    parser.add_argument('--task-choice', choices=('informative', 'given'),
                        default='informative',
                        help="the session's task choice (given: no plans for the choice, "
                             'so the updates make them) (default: %(default)s)')
    parser.add_argument('--no-fast', action='store_true',
                        help='skip the evaluation of N prior samples with shared plans')
    parser.add_argument('--naive-up-to', type=int, default=0, metavar='M',
                        help="also run cecm bench's naive evaluation when N <= M (default: "
                             'never; it plans once per sample)')
    parser.add_argument('--planner-timeout', type=float, metavar='S',
                        help="seconds per search (default: the planner's, 60)")
    parser.add_argument('--profile', type=Path, metavar='DIR',
                        help="cProfile the cold session's updates into DIR")
    parser.add_argument('--json-out', type=Path, help='also write the cells here')
    parser.add_argument('--paired', action='store_true',
                        help='run every N of each seed in this one process (alternating '
                             'their order) and print the ratios between the largest and '
                             'the smallest N')
    parser.add_argument('--cell', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        print(json.dumps(run_cell(args)), flush=True)
        return 0
    if args.paired:
        cells = run_paired(args)
        if args.json_out:
            args.json_out.parent.mkdir(parents=True, exist_ok=True)
            args.json_out.write_text(json.dumps(cells) + '\n')
        print(json.dumps(cells))
        return 0
    cells = []
    for samples in args.samples:
        for seed in args.seeds:
            cell = spawn_cell(args, samples, seed)
            cells.append(cell)
            print(f'[scale] N={samples} seed {seed}: '
                  + (cell.get('error') or f'update median {cell["update_median_s"]} s, '
                     f'max {max(u["update_s"] for u in cell["per_update"])} s, '
                     f'{cell["cell_wall_s"]} s in all, load {cell["load_before"]:.2f}'),
                  file=sys.stderr, flush=True)
    print_table(cells)
    text = json.dumps(cells)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(text + '\n')
    print(text)
    return 0 if all('error' not in c for c in cells) else 1


if __name__ == '__main__':
    sys.exit(main())
