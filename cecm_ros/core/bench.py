"""Benchmark CE-CM updates: one planner call per sample vs shared plans."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable

import numpy as np

from .domain import TidyUpModel
from .estimator import CapabilityBelief, CecmEstimator, EstimatorSettings
from .hypotheses import NaiveEvaluator, SharedPlanEvaluator
from .planner import JointPlanner
from .tasks import TaskGenerator


def run_update_benchmark(model: TidyUpModel, partner: str, samples: int = 500, seed: int = 0,
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
    settings = EstimatorSettings(samples=samples)
    per_task = []
    for index, task in enumerate(TaskGenerator(model, seed).tasks(tasks)):
        with JointPlanner(model) as planner:
            observed = planner.plan(task, truth).trajectory
        vectors = CecmEstimator(model, None, settings, seed + index).draw_samples()

        def timed(label, evaluator, planner, task=task, vectors=vectors, observed=observed):
            started = time.perf_counter()
            callback = (lambda done, total: progress(label, done, total)) if progress else None
            with planner:
                distances = evaluator(planner).distances(task, vectors, observed, callback)
            return distances, time.perf_counter() - started, planner.calls

        naive, naive_s, naive_calls = timed(
            'naive', NaiveEvaluator,
            JointPlanner(model, workers=1, cache_size=0, reuse_translation=False))
        fast, fast_s, fast_calls = timed('fast', SharedPlanEvaluator,
                                         JointPlanner(model, workers=jobs))
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
            'same_estimate': bool(np.array_equal(*estimates)),
        })
    usage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
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
        'peak_rss_mb': round(usage / 1024, 1),
    }
    if tasks > 1:
        result['per_task'] = per_task
    return result


def _estimate(model, settings, accepted: np.ndarray) -> np.ndarray:
    belief = CapabilityBelief('cecm', list(model.catalog.names), settings,
                              accepted=accepted,
                              accepted_task=np.zeros(len(accepted), dtype=np.int64),
                              tasks_seen=1)
    return belief.estimate
