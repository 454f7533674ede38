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
  the planner solves the remaining distinct vectors in parallel.
  "Cost" here is the planner's objective, household cost with its tie-breaks (see
  ``cecm_ros.core.domain``), whose optimum is nearly always unique: answers can differ
  from the naive ones only where two plans tie on it too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .domain import Task
from .planner import JointPlan, JointPlanner
from .trajectory import jaccard_distance, min_jaccard_distance

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
    2. bound: the planner cost of ``P`` equals the highest optimum known for any vector
       ``v' >= c``, a lower bound on the optimum under ``c``.

    Samples not settled by known plans are relaxed (the first capability a plan used but
    the sample lacks is removed from ``v``; one at a time, so that samples share the
    intermediate vectors) and the distinct relaxed vectors of a wave are planned in
    parallel. With few samples this can take more calls than planning each sample once
    (the intermediate vectors are shared by nobody); it pays off from about a hundred.
    """

    def __init__(self, planner: JointPlanner):
        self.planner = planner

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
                    violated[np.flatnonzero(violated)[1:]] = False  # one at a time
                    relaxed[i] &= ~violated
                bounded = _bounded_plan(samples[i], used)
                if bounded is not None:
                    result[i] = bounded
                    done += 1
                    continue
                to_plan.setdefault(relaxed[i].tobytes(), relaxed[i].copy())
                waiting.append(i)
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
            lower_bound = max(lower_bound or 0, plan.planner_cost)
    if lower_bound is None:
        return None
    best, best_key = None, None
    for vector, plan, used in known:
        # The planner's own objective, tie-breaks included: a plan that is merely as
        # cheap in household cost need not be the one a search under ``sample`` finds.
        if (used & ~sample).any() or plan.planner_cost > lower_bound:
            continue
        # Remaining ties: prefer the plan found under the most similar vector.
        key = (int(np.count_nonzero(vector != sample)), vector.tobytes())
        if best_key is None or key < best_key:
            best, best_key = plan, key
    return best


class DiversePlanEvaluator:
    """CE-CM-Div: compare the observation with a set of diverse plans per hypothesis.

    For a hypothesis ``c`` the set holds its optimal plan and every other plan known
    for the task that ``c`` permits (it uses only capabilities ``c`` has) and that costs
    at most ``1 + cost_slack`` times the optimum: plans of partners who forgo some of
    their capabilities, the commonest way a real partner departs from the optimal plan.
    The known plans are those the shared evaluator has already computed for the task
    (optimal under the relaxed vectors), so the set costs no further planner calls.
    The set is thinned greedily, cheapest first, keeping a plan only when at least a
    fraction ``diversity`` of its states differs from every plan kept before it (the
    paper's trajectory set difference), and holds at most ``max_plans`` plans. The
    hypothesis is at the distance of the closest plan in its set.
    """

    def __init__(self, planner: JointPlanner, max_plans: int = 50, diversity: float = 0.35,
                 cost_slack: float = 0.25):
        self.planner = planner
        self.shared = SharedPlanEvaluator(planner)
        self.max_plans = max_plans
        self.diversity = diversity
        self.cost_slack = cost_slack

    def plan_sets(self, task: Task, samples: np.ndarray,
                  progress: ProgressCallback | None = None) -> list[list[JointPlan]]:
        samples = np.asarray(samples, dtype=bool) | self.planner.model.inert_mask
        optimal = self.shared.plans(task, samples, progress)
        size = samples.shape[1]
        known = sorted({p.sequential: p for _, p in self.planner.cached_plans(task)}.values(),
                       key=lambda p: (p.cost, p.sequential))
        used = [_used_mask(p, size) for p in known]
        sets = []
        for sample, best in zip(samples, optimal):
            limit = best.cost * (1.0 + self.cost_slack) + 1e-9
            chosen = [best]
            for plan, mask in zip(known, used):
                if len(chosen) >= self.max_plans or plan.cost > limit:
                    break
                if (mask & ~sample).any() or plan.sequential == best.sequential:
                    continue
                if min(_set_difference(plan, other) for other in chosen) >= self.diversity:
                    chosen.append(plan)
            sets.append(chosen)
        return sets

    def distances(self, task: Task, samples: np.ndarray, observed: Sequence[int],
                  progress: ProgressCallback | None = None) -> np.ndarray:
        sets = self.plan_sets(task, samples, progress)
        return np.array([min_jaccard_distance([p.trajectory for p in plans], observed)
                         for plans in sets])


def _set_difference(plan: JointPlan, other: JointPlan) -> float:
    """|S_a minus S_b| / |S_a| over visited states: how much of ``plan`` is new."""
    states = set(plan.trajectory)
    return len(states - set(other.trajectory)) / len(states)
