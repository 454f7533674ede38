"""Evaluate capability hypotheses against an observed trajectory.

This is CE-CM's expensive inner loop: every sampled capability vector needs the joint
plan it induces. Two interchangeable evaluators:

* :class:`NaiveEvaluator` plans once per sample, as Algorithm 1 is written.
* :class:`SharedPlanEvaluator` reaches the same decisions with far fewer planner calls.
  It rests on one fact: if a plan is cost-optimal under a vector ``c'`` and every
  partner action it uses is permitted by a vector ``c`` with ``c <= c'``, the plan is
  also cost-optimal under ``c`` (``c`` allows no cheaper plan than ``c'`` does).
  For a sample ``c`` it therefore plans under ``c' = all ones`` and, while the plan uses
  a capability that ``c`` lacks, removes those capabilities from ``c'`` and plans again.
  Samples that agree on the capabilities the plans actually use share every call, and
  the planner solves the remaining distinct vectors in parallel worker processes.
  Answers can differ from the naive ones only where equally cheap plans tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .domain import Task
from .planner import JointPlan, JointPlanner
from .trajectory import jaccard_distance

ProgressCallback = Callable[[int, int], None]  # (samples evaluated, samples total)


class NaiveEvaluator:
    """One planner call per sample (no sharing): the reference for correctness."""

    def __init__(self, planner: JointPlanner):
        self.planner = planner

    def plans(self, task: Task, samples: np.ndarray,
              progress: ProgressCallback | None = None) -> list[JointPlan]:
        plans = []
        for index, sample in enumerate(samples):
            plans.append(self.planner.plan(task, sample))
            if progress:
                progress(index + 1, len(samples))
        return plans

    def distances(self, task: Task, samples: np.ndarray, observed: Sequence[int],
                  progress: ProgressCallback | None = None) -> np.ndarray:
        plans = self.plans(task, samples, progress)
        return np.array([jaccard_distance(p.trajectory, observed) for p in plans])


class SharedPlanEvaluator:
    """Plans shared between hypotheses that provably induce an optimal plan in common.

    Two rules decide that a known plan ``P`` (optimal under its vector ``v``) is optimal
    for a sample ``c`` too; in both, ``P`` must use only capabilities that ``c`` has:

    1. descent: ``c <= v``, so ``c`` cannot allow anything cheaper than ``v`` does;
    2. bound: the cost of ``P`` equals the highest optimal cost known for any vector
       ``v' >= c``, a lower bound on the optimal cost under ``c``.

    Samples not settled by known plans are relaxed (the first capability a plan used but
    the sample lacks is removed from ``v``; one at a time, so that samples share the
    intermediate vectors) and the distinct relaxed vectors of a wave are planned in
    parallel. With few samples this can take more calls than planning each sample once
    (the intermediate vectors are shared by nobody); it pays off from about a hundred.
    """

    def __init__(self, planner: JointPlanner, one_at_a_time: bool = True,
                 shallow_first: bool = False):
        self.planner = planner
        self.one_at_a_time = one_at_a_time
        self.shallow_first = shallow_first

    def plans(self, task: Task, samples: np.ndarray,
              progress: ProgressCallback | None = None) -> list[JointPlan]:
        model = self.planner.model
        samples = np.asarray(samples, dtype=bool) | model.inert_mask
        total = len(samples)
        relaxed = np.ones_like(samples)
        result: list[JointPlan | None] = [None] * total
        pending = list(range(total))
        done = 0
        while pending:
            known = self.planner.cached_plans(task)
            by_vector = {v.tobytes(): p for v, p in known}
            used = [(v, p, _used_mask(p, samples.shape[1])) for v, p in known]
            to_plan: dict[bytes, np.ndarray] = {}
            waiting = []
            for i in pending:
                plan = by_vector.get(relaxed[i].tobytes())
                if plan is not None:
                    violated = _used_mask(plan, samples.shape[1]) & ~samples[i]
                    if not violated.any():
                        result[i] = plan
                        done += 1
                        continue
                    if self.one_at_a_time:
                        violated[np.flatnonzero(violated)[1:]] = False
                    relaxed[i] &= ~violated
                bounded = _bounded_plan(samples[i], used)
                if bounded is not None:
                    result[i] = bounded
                    done += 1
                    continue
                waiting.append(i)
            for i in waiting:
                to_plan.setdefault(relaxed[i].tobytes(), relaxed[i].copy())
            if to_plan and self.shallow_first:
                depth = {key: int((~v).sum()) for key, v in to_plan.items()}
                shallowest = min(depth.values())
                to_plan = {k: v for k, v in to_plan.items() if depth[k] == shallowest}
            if to_plan:
                self.planner.plan_many(task, list(to_plan.values()))
            pending = waiting
            if progress:
                progress(done, total)
        return result  # type: ignore[return-value]

    def distances(self, task: Task, samples: np.ndarray, observed: Sequence[int],
                  progress: ProgressCallback | None = None) -> np.ndarray:
        plans = self.plans(task, samples, progress)
        return np.array([jaccard_distance(p.trajectory, observed) for p in plans])


def _used_mask(plan: JointPlan, size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[list(plan.human_capabilities_used)] = True
    return mask


def _bounded_plan(sample: np.ndarray, known) -> JointPlan | None:
    """A known plan that rule 1 or 2 of :class:`SharedPlanEvaluator` proves optimal."""
    lower_bound = None
    for vector, plan, _ in known:
        if not (sample & ~vector).any():  # vector >= sample
            lower_bound = plan.cost if lower_bound is None else max(lower_bound, plan.cost)
    if lower_bound is None:
        return None
    best, best_key = None, None
    for vector, plan, used in known:
        if (used & ~sample).any() or plan.cost > lower_bound + 1e-9:
            continue
        # Among equally cheap plans prefer the one found under the most similar vector.
        key = (int(np.count_nonzero(vector != sample)), vector.tobytes())
        if best_key is None or key < best_key:
            best, best_key = plan, key
    return best
