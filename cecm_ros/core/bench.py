"""Benchmark one CE-CM update: one planner call per sample vs shared plans."""

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
                         jobs: int = 2,
                         progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Both evaluators on the same task, observation and samples, in this process."""
    truth = model.catalog.resolve(partner)
    task = TaskGenerator(model, seed).next_task()
    settings = EstimatorSettings(samples=samples)
    with JointPlanner(model) as planner:
        observed = planner.plan(task, truth).trajectory
        vectors = CecmEstimator(model, None, settings, seed).draw_samples()

    def timed(label, evaluator, planner):
        started = time.perf_counter()
        callback = (lambda done, total: progress(label, done, total)) if progress else None
        with planner:
            distances = evaluator(planner).distances(task, vectors, observed, callback)
        return distances, time.perf_counter() - started, planner.calls

    # The reference: one full unified-planning call per sample, on one core.
    naive, naive_s, naive_calls = timed('naive', NaiveEvaluator,
                                        JointPlanner(model, workers=1, cache_size=0,
                                                     reuse_translation=False))
    fast, fast_s, fast_calls = timed('fast', SharedPlanEvaluator,
                                     JointPlanner(model, workers=jobs))
    accept_naive = naive < settings.epsilon
    accept_fast = fast < settings.epsilon
    estimates = [_estimate(model, settings, vectors[accepted])
                 for accepted in (accept_naive, accept_fast)]
    usage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {
        'task': task.task_id, 'samples': samples, 'jobs': jobs,
        'naive_s': round(naive_s, 3), 'fast_s': round(fast_s, 3),
        'speedup': round(naive_s / fast_s, 2) if fast_s > 0 else None,
        'naive_planner_calls': naive_calls, 'fast_planner_calls': fast_calls,
        'agreement': float(np.mean(accept_naive == accept_fast)),
        'accepted_naive': int(accept_naive.sum()), 'accepted_fast': int(accept_fast.sum()),
        'same_estimate': bool(np.array_equal(*estimates)),
        'peak_rss_mb': round(usage / 1024, 1),
    }


def _estimate(model, settings, accepted: np.ndarray) -> np.ndarray:
    belief = CapabilityBelief('cecm', list(model.catalog.names), settings,
                              accepted=accepted,
                              accepted_task=np.zeros(len(accepted), dtype=np.int64),
                              tasks_seen=1)
    return belief.estimate
