"""Benchmarks of CE-CM updates (figures printed, never asserted on time).

Two comparisons, each in this process on the same tasks and observations:

* ``run_update_benchmark``: one update's hypotheses evaluated naively (one full
  unified-planning call per sample, one core, no cache) and with shared plans (the fast
  path), with their agreement;
* ``run_posterior_benchmark``: the posterior update against the sequential update it
  replaces, task after task, each with a planner of its own (no cache shared between
  them), and the posterior's accept decisions re-checked by the naive evaluator.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core.domain import Domain
from cecm_ros.core.estimator import (
    CapabilityBelief,
    CecmEstimator,
    EstimatorSettings,
    make_estimator,
)
from cecm_ros.core.hypotheses import NaiveEvaluator, SharedPlanEvaluator, evaluator_for
from cecm_ros.domains import planner_for


def _peak_rss_mb() -> float:
    usage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return round(usage / 1024, 1)


def _observations(model: Domain, truth: np.ndarray, seed: int, tasks: int):
    generated = model.task_generator(seed).tasks(tasks)
    with planner_for(model) as planner:
        return [(task, planner.plan(task, truth).trajectory) for task in generated]


def run_update_benchmark(model: Domain, partner: str, samples: int = 500, seed: int = 0,
                         jobs: int = 2, tasks: int = 1,
                         progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Both evaluators on the same tasks, observations and samples, in this process.

    The reference is the straightforward update: one full unified-planning call per
    sample, on one core, no cache. The fast one shares plans between hypotheses and
    reuses one Fast Downward translation per task, on ``jobs`` cores. With several
    ``tasks`` (the seeded task sequence) times add up and agreement pools all samples.
    """
    if tasks < 1:
        raise ValueError(f'tasks must be at least 1, got {tasks}')
    truth = model.catalog.resolve(partner)
    settings = EstimatorSettings.preset('paper', samples=samples)
    per_task = []
    for index, (task, observed) in enumerate(_observations(model, truth, seed, tasks)):
        vectors = CecmEstimator(model, None, settings, seed + index).draw_samples()

        def timed(label, evaluator, planner, task=task, vectors=vectors, observed=observed):
            started = time.perf_counter()
            callback = (lambda done, total: progress(label, done, total)) if progress else None
            with planner:
                distances = evaluator(planner).distances(task, vectors, observed, callback)
            return distances, time.perf_counter() - started, planner.calls

        naive, naive_s, naive_calls = timed(
            'naive', NaiveEvaluator,
            planner_for(model, 'reference'))
        fast, fast_s, fast_calls = timed('fast', SharedPlanEvaluator,
                                         planner_for(model, workers=jobs))
        accept_naive = naive < settings.epsilon
        accept_fast = fast < settings.epsilon
        estimates = [_estimate(model, settings, vectors[accepted])
                     for accepted in (accept_naive, accept_fast)]
        per_task.append({
            'task': task.task_id, 'naive_s': round(naive_s, 3), 'fast_s': round(fast_s, 3),
            'speedup': round(naive_s / fast_s, 2) if fast_s > 0 else None,
            'naive_planner_calls': naive_calls, 'fast_planner_calls': fast_calls,
            'agreement': float(np.mean(accept_naive == accept_fast)),
            'accepted_naive': int(accept_naive.sum()), 'accepted_fast': int(accept_fast.sum()),
            'same_estimate': bool(np.array_equal(estimates[0], estimates[1])),
        })
    naive_total = sum(t['naive_s'] for t in per_task)
    fast_total = sum(t['fast_s'] for t in per_task)
    result = {
        'task': per_task[0]['task'] if tasks == 1 else f'{tasks} tasks from seed {seed}',
        'samples': samples, 'jobs': jobs, 'tasks': tasks,
        'naive_s': round(naive_total, 3), 'fast_s': round(fast_total, 3),
        'speedup': round(naive_total / fast_total, 2) if fast_total > 0 else None,
        'naive_planner_calls': sum(t['naive_planner_calls'] for t in per_task),
        'fast_planner_calls': sum(t['fast_planner_calls'] for t in per_task),
        'agreement': round(float(np.mean([t['agreement'] for t in per_task])), 4),
        'accepted_naive': sum(t['accepted_naive'] for t in per_task),
        'accepted_fast': sum(t['accepted_fast'] for t in per_task),
        'same_estimate': all(t['same_estimate'] for t in per_task),
        'peak_rss_mb': _peak_rss_mb(),
    }
    if tasks > 1:
        result['per_task'] = per_task
    return result


def run_posterior_benchmark(model: Domain, partner: str, samples: int = 500,
                            seed: int = 0, jobs: int = 2, tasks: int = 5,
                            check_pairs: int = 40) -> dict:
    """The posterior update against the sequential one on the same observed tasks.

    Each estimator has a planner of its own, so neither profits from plans the other
    computed; they alternate task by task, so that load on the machine hits both alike.
    Afterwards ``check_pairs`` of the (task, hypothesis) pairs the posterior decided are
    re-decided by the naive evaluator (one full planner call each).
    """
    if tasks < 1:
        raise ValueError(f'tasks must be at least 1, got {tasks}')
    truth = model.catalog.resolve(partner)
    observations = _observations(model, truth, seed, tasks)
    posterior_settings = EstimatorSettings(samples=samples)
    sequential_settings = EstimatorSettings.preset('sequential', samples=samples)
    per_task = []
    with planner_for(model, workers=jobs) as posterior_planner, \
            planner_for(model, workers=jobs) as sequential_planner:
        posterior = make_estimator('cecm', model, SharedPlanEvaluator(posterior_planner),
                                   posterior_settings, seed=seed)
        sequential = make_estimator('cecm', model, SharedPlanEvaluator(sequential_planner),
                                    sequential_settings, seed=seed)
        for task, observed in observations:
            figures = {'task': task.task_id}
            for label, estimator, planner in (('sequential', sequential, sequential_planner),
                                              ('posterior', posterior, posterior_planner)):
                calls = planner.calls
                started = time.perf_counter()
                estimator.update(task, observed)
                figures[f'{label}_s'] = round(time.perf_counter() - started, 3)
                figures[f'{label}_planner_calls'] = planner.calls - calls
            figures['ratio'] = round(figures['posterior_s'] / figures['sequential_s'], 2) \
                if figures['sequential_s'] > 0 else None
            figures['decided'] = sum(entry.decided for entry in posterior.belief.report)
            per_task.append(figures)
        pairs = _decided_pairs(posterior.belief, np.random.default_rng([seed, 99]),
                               check_pairs)
    agreement = _naive_agreement(model, pairs, posterior_settings.epsilon)
    posterior_total = sum(t['posterior_s'] for t in per_task)
    sequential_total = sum(t['sequential_s'] for t in per_task)
    return {
        'partner': partner, 'samples': samples, 'jobs': jobs, 'tasks': tasks, 'seed': seed,
        'sequential_s': round(sequential_total, 3), 'posterior_s': round(posterior_total, 3),
        'ratio': round(posterior_total / sequential_total, 2) if sequential_total else None,
        'max_task_ratio': max(t['ratio'] or 0.0 for t in per_task),
        'naive_checked_pairs': len(pairs), 'naive_agreement': agreement,
        'peak_rss_mb': _peak_rss_mb(), 'per_task': per_task,
    }


def _decided_pairs(belief: CapabilityBelief, rng: np.random.Generator, count: int):
    """Up to ``count`` (task, observed, vector, accepted) the posterior decided."""
    posterior = belief.posterior
    if posterior is None:
        return []
    pairs = []
    for item in posterior.evidence:
        for key, distance in posterior._distances.get(item.id, {}).items():
            vector = np.unpackbits(np.frombuffer(key, dtype=np.uint8))[:posterior.prior.size]
            pairs.append((item.task, item.observed, vector.astype(bool),
                           distance < posterior.epsilon))
    if len(pairs) > count:
        pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), count, replace=False))]
    return pairs


def _naive_agreement(model: Domain, pairs, epsilon: float) -> float | None:
    if not pairs:
        return None
    with planner_for(model, 'reference') as planner:
        naive = NaiveEvaluator(planner)
        same = [(naive.distances(task, vector[None, :], observed)[0] < epsilon) == accepted
                for task, observed, vector, accepted in pairs]
    return round(float(np.mean(same)), 4)


def _estimate(model, settings, accepted: np.ndarray) -> np.ndarray:
    belief = CapabilityBelief('cecm', list(model.catalog.names), settings,
                              accepted=accepted,
                              accepted_task=np.zeros(len(accepted), dtype=np.int64),
                              tasks_seen=1)
    return belief.estimate


def run_universe_benchmark(model: Domain, partner: str, samples: int = 500, seed: int = 0,
                           jobs: int = 2, runs: int = 20, tasks: int = 5,
                           store_path: str | None = None,
                           progress: Callable[[str], None] | None = None) -> dict:
    """A domain with few tasks and capabilities (Overcooked): the plans of every vector on
    every task, then a ``runs``-run experiment and one update of ``samples`` samples on
    those plans.

    Plans go to the plan store at ``store_path`` (a new one in a temporary folder by
    default, so the first figure is the cold cost); the experiment and the update then
    plan only what the store lacks (replans from states mid-task).
    """
    import itertools
    import tempfile

    from cecm_ros.experiments.experiment import ExperimentSettings, run_experiment

    universe = model.task_universe()
    if not universe:
        raise ValueError(f'{model.name} has no finite set of tasks to precompute')
    size = len(model.catalog)
    if size > 16:
        raise ValueError(f'{size} capabilities are too many to plan every vector')
    vectors = np.array(list(itertools.product([False, True], repeat=size)), dtype=bool)
    say = progress or (lambda line: None)
    with tempfile.TemporaryDirectory(prefix='cecm-bench-') as scratch:
        store = store_path or str(Path(scratch) / 'plans.sqlite')
        per_task = []
        with planner_for(model, workers=jobs, plan_cache=store) as planner:
            started = time.perf_counter()
            for task in universe:
                calls, begun = planner.calls, time.perf_counter()
                plans = planner.plan_many(task, vectors)
                reached = sum(model.goal_reached(task, p.trajectory[-1]) for p in plans)
                per_task.append({'task': task.task_id,
                                 'seconds': round(time.perf_counter() - begun, 2),
                                 'plans_made': planner.calls - calls,
                                 'vectors_reaching_goal': int(reached)})
                say(f'{task.task_id}: {per_task[-1]["seconds"]} s, '
                    f'{per_task[-1]["plans_made"]} plans made, {reached} of {len(vectors)} '
                    'vectors reach the goal')
            all_plans_s = time.perf_counter() - started
            estimator = EstimatorSettings(samples=samples,
                                          epsilon=model.default_epsilon or
                                          EstimatorSettings().epsilon)
            settings = ExperimentSettings(partner=partner, method='cecm', runs=runs,
                                          tasks=min(tasks, len(universe)), seed=seed,
                                          jobs=jobs, estimator=estimator, heldout=0)
            calls = planner.calls
            began = time.perf_counter()
            summary = run_experiment(settings, model, quiet=True, planner=planner)
            experiment_s = time.perf_counter() - began
            experiment_calls = planner.calls - calls
            say(f'{runs}-run experiment: {experiment_s:.1f} s, {experiment_calls} plans made')
            truth = model.catalog.resolve(partner)
            task = universe[0]
            observed = planner.plan(task, truth).trajectory
            update = make_estimator('cecm', model, evaluator_for('cecm', planner), estimator,
                                    seed)
            began = time.perf_counter()
            update.update(task, observed)
            update_s = time.perf_counter() - began
    final = summary['per_task'][-1]
    return {
        'domain': model.describe(), 'partner': partner, 'samples': samples, 'jobs': jobs,
        'vectors': len(vectors), 'tasks_in_universe': len(universe),
        'all_plans_s': round(all_plans_s, 1),
        'plans_made': sum(t['plans_made'] for t in per_task),
        'experiment_runs': runs, 'experiment_s': round(experiment_s, 1),
        'experiment_plans_made': experiment_calls,
        'experiment_final_hamming': round(final['hamming']['mean'], 4),
        'update_s': round(update_s, 3),
        'peak_rss_mb': _peak_rss_mb(), 'per_task': per_task,
    }


def run_session_benchmark(model: Domain, partner: str, samples: int = 500, seed: int = 0,
                          jobs: int = 2, tasks: int = 5, task_choice: str = 'informative',
                          candidates: int = 5, store_path: str | None = None,
                          progress: Callable[[str], None] | None = None,
                          likelihood: str | None = None, misperception: float = 0.0,
                          world: dict[str, Any] | None = None) -> dict:
    """A session as ``make demo`` runs it (the most informative of ``candidates`` tasks,
    the robot and the simulated partner, one update per task), in this process, three
    times: first on a plan store that is new (every plan made, as a first demo on a fresh
    machine does), then again on the plans the first left in it (a repeated session),
    then on a new store again, planning ahead before each update as the estimator node
    does while the team works (``update_ahead_*``: the pause left after a task whose
    steps took at least ``ahead_s``; the same belief, ``same_result_ahead``).

    ``first_task_s`` is the time from the session's start to its first update's end;
    the update times are the estimator's alone (the plans the choice made are reused).
    ``misperception`` and ``world`` (world_conditions settings) time the noise-aware
    likelihood on a noisy world.
    """
    import tempfile

    from cecm_ros.experiments.experiment import ExperimentSettings, run_once

    say = progress or (lambda line: None)
    epsilon = model.default_epsilon or EstimatorSettings().epsilon
    settings = ExperimentSettings(partner=partner, method='cecm', runs=1, tasks=tasks,
                                  seed=seed, jobs=jobs, heldout=0, task_choice=task_choice,
                                  candidates=candidates,
                                  estimator=EstimatorSettings(samples=samples,
                                                              epsilon=epsilon,
                                                              likelihood=likelihood,
                                                              misperception=misperception))
    settings = replace(settings, **(world or {}))
    sessions: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix='cecm-bench-') as scratch:
        store = store_path or str(Path(scratch) / 'plans.sqlite')
        for label in ('cold', 'warm', 'planned ahead'):
            timings: list[dict] = []
            began = time.perf_counter()
            ahead = label == 'planned ahead'
            with planner_for(model, workers=jobs, plan_cache=str(Path(scratch) / 'ahead.sqlite')
                             if ahead else store) as planner:
                results = run_once(model, planner, settings, 0, timings=timings,
                                   plan_ahead=ahead)
                plans_made = planner.calls
            wall = time.perf_counter() - began
            sessions.append({'session_s': wall, 'plans_made': plans_made,
                             'timings': timings, 'hamming': results[-1].hamming,
                             'beliefs': [(r.theta, r.status) for r in results]})
            say(f'{label} session: {wall:.1f} s, {plans_made} plans made, updates '
                + ', '.join(f'{t["update_s"]:.2f}' for t in timings) + ' s')
    cold, warm, ahead_run = sessions
    updates = np.array([t['update_s'] for t in cold['timings']])
    after_ahead = np.array([t['update_s'] for t in ahead_run['timings']])
    return {
        'first_task_s': round(cold['timings'][0]['total_s'], 3),
        'update_median_s': round(float(np.median(updates)), 3),
        'update_p95_s': round(float(np.percentile(updates, 95)), 3),
        'session_tasks': tasks, 'session_task_choice': task_choice,
        'session_cold_s': round(cold['session_s'], 2),
        'session_warm_s': round(warm['session_s'], 2),
        'warm_speedup': round(cold['session_s'] / warm['session_s'], 1)
        if warm['session_s'] > 0 else None,
        'session_plans_made': [cold['plans_made'], warm['plans_made']],
        'same_result_warm': cold['hamming'] == warm['hamming'],
        'update_ahead_median_s': round(float(np.median(after_ahead)), 3),
        'update_ahead_p95_s': round(float(np.percentile(after_ahead, 95)), 3),
        'update_ahead_s': [round(t['update_s'], 3) for t in ahead_run['timings']],
        'ahead_s': [round(t['ahead_s'], 3) for t in ahead_run['timings']],
        'ahead_plans_made': ahead_run['plans_made'],
        'same_result_ahead': cold['beliefs'] == ahead_run['beliefs'],
        'session_per_task': [{key: (round(value, 3) if isinstance(value, float) else value)
                              for key, value in entry.items()}
                             for entry in cold['timings']],
    }
