"""What a capability hypothesis predicts for a task: the plans (trajectories) it permits.

This is the one question inference asks of a domain. :class:`HypothesisEvaluator`
states it; the posterior, the evidence report and the task choice (``inference``,
``task_choice``) use nothing else, so another domain with another planner plugs in by
answering it. Three answers, for any domain:

* :class:`NaiveEvaluator` plans once per sample, as Algorithm 1 is written.
* :class:`SharedPlanEvaluator` reaches the same plans with far fewer planner calls.
  It rests on one fact: if a plan is cost-optimal under a vector ``c'`` and every
  partner action it uses is permitted by a vector ``c`` with ``c <= c'``, the plan is
  also cost-optimal under ``c`` (``c`` allows no cheaper plan than ``c'`` does).
  For a sample ``c`` it therefore plans under ``c' = all ones`` and, while the plan uses
  a capability that ``c`` lacks, removes those capabilities from ``c'`` and plans again.
  Samples that agree on the capabilities the plans actually use share every call, and
  the planner solves the remaining distinct vectors in parallel.
  "Cost" here is the planner's objective (for TidyUP, household cost with its
  tie-breaks, see ``cecm_ros.domains.tidyup.model``), whose optimum is nearly always
  unique: answers can differ from the naive ones only where two plans tie on it too.
  Only a planner whose guarantees say ``cost_optimal`` may be used this way.
* :class:`BatchEvaluator` plans every sample too, in batches a planner may solve side by
  side: the answer for planners that are not cost-optimal.
* :class:`DiversePlanEvaluator` (CE-CM-Div) answers with a set of plans per hypothesis.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Protocol

import numpy as np

from .domain import JointPlan, Planner, Task

ProgressCallback = Callable[[int, int], None]  # (samples evaluated, samples total)
Trajectory = tuple  # of the domain's states


class HypothesisEvaluator(Protocol):
    """The trajectories a capability vector permits for a task (a domain's answer).

    ``trajectory_sets`` gives, per sample, the set of joint trajectories the team
    could produce if the partner had that vector: one (the optimal plan's) for CE-CM,
    several for CE-CM-Div; the first is always the one a planning robot would predict.
    Answers must depend only on the task and the vector, never on what was asked
    before (caches may make them cheaper, not different).
    """

    def trajectory_sets(self, task, samples: np.ndarray,
                        progress: ProgressCallback | None = None) -> list[list[Trajectory]]:
        ...

    def distances(self, task, samples: np.ndarray, observed: Sequence,
                  progress: ProgressCallback | None = None) -> np.ndarray:
        ...

    def predicted_trajectories(self, task, samples: np.ndarray) -> list[Trajectory]:
        """Per sample, the trajectory a planning robot would predict (the first of its set)."""
        ...

    def distance(self, first: Sequence, second: Sequence) -> float:
        """The domain's trajectory distance (what epsilon is compared with)."""
        ...


class _PlanEvaluator:
    """Trajectory sets and distances from ``plan_sets`` (one or more plans per sample)."""

    planner: Planner

    def distance(self, first: Sequence, second: Sequence) -> float:
        return self.planner.domain.distance(first, second)

    def plan_sets(self, task: Task, samples: np.ndarray,
                  progress: ProgressCallback | None = None) -> list[list[JointPlan]]:
        raise NotImplementedError

    def trajectory_sets(self, task, samples, progress=None) -> list[list[Trajectory]]:
        return [[plan.trajectory for plan in plans]
                for plans in self.plan_sets(task, samples, progress)]

    def predicted_trajectories(self, task, samples) -> list[Trajectory]:
        return [trajectories[0] for trajectories in self.trajectory_sets(task, samples)]

    def distances(self, task: Task, samples: np.ndarray, observed: Sequence,
                  progress: ProgressCallback | None = None) -> np.ndarray:
        sets = self.trajectory_sets(task, samples, progress)
        return np.array([min(self.distance(t, observed) for t in trajectories)
                         for trajectories in sets], dtype=float)


class NaiveEvaluator(_PlanEvaluator):
    """One planner call per sample (no sharing): the reference for correctness."""

    def __init__(self, planner: Planner):
        self.planner = planner

    def plans(self, task: Task, samples: np.ndarray,
              progress: ProgressCallback | None = None) -> list[JointPlan]:
        plans = []
        for index, sample in enumerate(samples):
            plans.append(self.planner.plan(task, sample))
            if progress:
                progress(index + 1, len(samples))
        return plans

    def plan_sets(self, task, samples, progress=None) -> list[list[JointPlan]]:
        return [[plan] for plan in self.plans(task, samples, progress)]

    def distances(self, task, samples, observed, progress=None) -> np.ndarray:
        plans = self.plans(task, samples, progress)
        return np.array([self.distance(p.trajectory, observed) for p in plans])


class BatchEvaluator(NaiveEvaluator):
    """Every hypothesis planned, as the naive evaluator does, but in batches that the
    planner may solve side by side (in parallel, from its memory or store): what a
    planner that is not cost-optimal (Overcooked's MCTS) answers with."""

    batch = 64

    def plans(self, task: Task, samples: np.ndarray,
              progress: ProgressCallback | None = None) -> list[JointPlan]:
        plans: list[JointPlan] = []
        for start in range(0, len(samples), self.batch):
            plans.extend(self.planner.plan_many(task, samples[start:start + self.batch]))
            if progress:
                progress(len(plans), len(samples))
        return plans


class _KnownPlans:
    """The plans a planner knows for one task, as arrays for the sharing rules."""

    def __init__(self, known: list[tuple[np.ndarray, JointPlan]], size: int):
        # Sorted by vector so that the first of several equally good plans is a fixed one.
        known = sorted(known, key=lambda pair: pair[0].tobytes())
        self.count = len(known)
        self.plans = [plan for _, plan in known]
        self.vectors = np.array([v for v, _ in known], dtype=bool).reshape(len(known), size)
        self.used = np.zeros((len(known), size), dtype=bool)
        for row, plan in enumerate(self.plans):
            self.used[row, list(plan.human_capabilities_used)] = True
        self.cost = np.array([p.planner_cost for p in self.plans], dtype=np.int64)
        self.by_vector = {v.tobytes(): row for row, v in enumerate(self.vectors)}


class SharedPlanEvaluator(_PlanEvaluator):
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
    Both rules are evaluated for a whole batch at once (matrix products over the known
    plans), because the posterior re-checks many vectors against every task seen.
    """

    def __init__(self, planner: Planner):
        if not planner.guarantees.cost_optimal:
            raise ValueError(
                f'{type(planner).__name__} does not promise cost-optimal plans, which '
                'sharing plans between hypotheses needs; use NaiveEvaluator')
        self.planner = planner
        self._known: dict[tuple, _KnownPlans] = {}
        self._lock = threading.Lock()

    def _known_plans(self, task: Task) -> _KnownPlans:
        count = self.planner.known_plan_count(task)
        with self._lock:
            known = self._known.get(task.key)
        if known is None or known.count != count:
            known = _KnownPlans(self.planner.cached_plans(task), len(self.planner.domain.catalog))
            with self._lock:
                self._known[task.key] = known
                while len(self._known) > 512:
                    self._known.pop(next(iter(self._known)))
        return known

    def plans(self, task: Task, samples: np.ndarray,
              progress: ProgressCallback | None = None) -> list[JointPlan]:
        domain = self.planner.domain
        samples = np.asarray(samples, dtype=bool).reshape(-1, len(domain.catalog)) \
            | domain.task_inert_mask(task)
        total = len(samples)
        relaxed = np.ones_like(samples)
        result: list[JointPlan | None] = [None] * total
        pending = np.arange(total)
        done = 0
        while len(pending):
            known = self._known_plans(task)
            settled = _bounded_plans(samples[pending], known)
            waiting = []
            to_plan: dict[bytes, np.ndarray] = {}
            for i, row in zip(pending, settled):
                if row >= 0:
                    result[i] = known.plans[row]
                    done += 1
                    continue
                own = known.by_vector.get(relaxed[i].tobytes())
                if own is not None:
                    # Rule 1 did not settle the sample, so the plan of its current relaxed
                    # vector uses something it lacks: remove the first such capability.
                    violated = np.flatnonzero(known.used[own] & ~samples[i])
                    relaxed[i, violated[0]] = False
                to_plan.setdefault(relaxed[i].tobytes(), relaxed[i].copy())
                waiting.append(i)
            if to_plan:
                self.planner.plan_many(task, list(to_plan.values()))
            pending = np.array(waiting, dtype=int)
            if progress:
                progress(done, total)
        return result  # type: ignore[return-value]

    def plan_sets(self, task, samples, progress=None) -> list[list[JointPlan]]:
        return [[plan] for plan in self.plans(task, samples, progress)]

    def distances(self, task, samples, observed, progress=None) -> np.ndarray:
        plans = self.plans(task, samples, progress)
        return np.array([self.distance(p.trajectory, observed) for p in plans])


def _bounded_plans(samples: np.ndarray, known: _KnownPlans) -> np.ndarray:
    """Per sample, the row of a known plan that rule 1 or 2 proves optimal, else -1."""
    rows = np.full(len(samples), -1, dtype=np.int64)
    if known.count == 0 or len(samples) == 0:
        return rows
    as_int = samples.astype(np.int32)
    # superset[s, k]: the known vector k has every capability sample s has.
    superset = as_int @ (~known.vectors).astype(np.int32).T == 0
    # permitted[s, k]: plan k uses only capabilities sample s has.
    permitted = (~samples).astype(np.int32) @ known.used.astype(np.int32).T == 0
    costs = np.where(superset, known.cost[None, :], -1)
    lower_bound = costs.max(axis=1)
    # A permitted plan costs at least the optimum, which is at least the lower bound:
    # one that meets the bound is optimal (rule 1 is the case k in the supersets).
    candidate = permitted & (known.cost[None, :] == lower_bound[:, None]) \
        & (lower_bound[:, None] >= 0)
    # Remaining ties: the plan found under the most similar vector, then the first one.
    distance = (samples[:, None, :] != known.vectors[None, :, :]).sum(axis=2)
    distance = np.where(candidate, distance, np.iinfo(np.int64).max)
    best = distance.argmin(axis=1)
    found = candidate[np.arange(len(samples)), best]
    rows[found] = best[found]
    return rows


# CE-CM-Div's plan sets as the experiments, the nodes and the demo build them (the
# paper's k and delta; no cost bound, no second declined capability).
PLAN_SET_DEFAULTS = MappingProxyType(
    {'max_plans': 50, 'diversity': 0.35, 'cost_slack': None, 'depth': 1})


class DiversePlanEvaluator(_PlanEvaluator):
    """CE-CM-Div: compare the observation with a set of diverse plans per hypothesis.

    The set of a hypothesis ``c`` holds its optimal plan and the optimal plans of the
    partners who decline capabilities that plan uses (``c`` minus one used capability,
    repeated ``depth`` times): what a partner with an unmodelled preference does, the
    commonest way a real partner departs from the optimal plan. As in the paper, cost
    bounds none of them by default: declining one capability often doubles the team's
    cost (the robot walks to do it instead), and a bound of 1.25 times the optimum
    left 18 of 24 such tasks of an HC partner unexplained by its own capabilities
    (docs/experiments.md). With ``cost_slack`` set, plans costing more than
    ``1 + cost_slack`` times the optimum are left out. The set is thinned in a
    fixed order (cheapest first), keeping a plan only when at least a fraction
    ``diversity`` of its states differs from every plan kept before it (the paper's
    trajectory set difference), and at most ``max_plans`` are kept. Every plan in the
    set follows from the task and ``c`` alone, whatever else was planned before.

    A planner that makes sets itself (``Planner.plan_sets``: DiverseMCTS in Overcooked,
    top-k plans for a PDDL domain with the optional ``plansets`` extra) is asked for
    them instead, with the same k and delta; the sets above are the fallback.
    """

    makes_sets = True   # (the likelihoods that read sets ask)

    def __init__(self, planner: Planner,
                 max_plans: int = PLAN_SET_DEFAULTS['max_plans'],  # type: ignore[assignment]
                 diversity: float = PLAN_SET_DEFAULTS['diversity'],  # type: ignore[assignment]
                 cost_slack: float | None = PLAN_SET_DEFAULTS['cost_slack'],
                 depth: int = PLAN_SET_DEFAULTS['depth']):  # type: ignore[assignment]
        if depth < 0:
            raise ValueError(f'depth must be at least 0, got {depth}')
        self.planner = planner
        self.shared: SharedPlanEvaluator | NaiveEvaluator = \
            SharedPlanEvaluator(planner) if planner.guarantees.cost_optimal \
            else NaiveEvaluator(planner)
        self.max_plans = max_plans
        self.diversity = diversity
        self.cost_slack = cost_slack
        self.depth = depth

    def plan_sets(self, task: Task, samples: np.ndarray,
                  progress: ProgressCallback | None = None) -> list[list[JointPlan]]:
        samples = np.asarray(samples, dtype=bool) | self.planner.domain.task_inert_mask(task)
        native = self.planner.plan_sets(task, samples, self.max_plans, self.diversity)
        if native is not None:
            # The planner's own sets (a top-k or diverse planner), thinned by delta and k
            # already, in the planner's order (DiverseMCTS: longest tree paths first);
            # only the cost bound is left to apply, which keeps every plan's diversity
            # against those before it.
            return [self._bounded(plans) for plans in native]
        optimal = self.shared.plans(task, samples, progress)
        seen = [{sample.tobytes()} for sample in samples]
        alternatives: list[list[JointPlan]] = [[] for _ in samples]
        level = [[(sample, plan)] for sample, plan in zip(samples, optimal)]
        for _ in range(self.depth):
            # Every sample's next level: its vectors minus one capability their plan uses.
            wanted: dict[bytes, np.ndarray] = {}
            owners: list[list[bytes]] = []
            for index, pairs in enumerate(level):
                keys = []
                for vector, plan in pairs:
                    for gate in sorted(plan.human_capabilities_used):
                        relaxed = vector.copy()
                        relaxed[gate] = False
                        key = relaxed.tobytes()
                        if key not in seen[index]:
                            seen[index].add(key)
                            wanted.setdefault(key, relaxed)
                            keys.append(key)
                owners.append(keys)
            if not wanted:
                break
            solved = dict(zip(wanted, self.shared.plans(task, np.array(list(wanted.values())))))
            level = [[(wanted[key], solved[key]) for key in keys] for keys in owners]
            for index, pairs in enumerate(level):
                alternatives[index].extend(plan for _, plan in pairs)
        sets = []
        for best, others in zip(optimal, alternatives):
            distinct = {_identity(plan): plan for plan in others}
            sets.append(self._thin(best, sorted(distinct.values(),
                                                key=lambda p: (p.planner_cost,
                                                               _identity(p)))))
        return sets

    def predicted_trajectories(self, task, samples) -> list[Trajectory]:
        # The optimal plans alone: the rest of the sets is not needed for a prediction.
        samples = np.asarray(samples, dtype=bool) | self.planner.domain.task_inert_mask(task)
        return [plan.trajectory for plan in self.shared.plans(task, samples)]

    def _bounded(self, plans: list[JointPlan]) -> list[JointPlan]:
        if self.cost_slack is None:
            return plans[:self.max_plans]
        limit = plans[0].cost * (1.0 + self.cost_slack) + 1e-9
        return [plans[0]] + [p for p in plans[1:self.max_plans] if p.cost <= limit]

    def _thin(self, best: JointPlan, others: list[JointPlan]) -> list[JointPlan]:
        limit = math.inf if self.cost_slack is None else \
            best.cost * (1.0 + self.cost_slack) + 1e-9
        chosen = [best]
        for plan in others:
            if len(chosen) >= self.max_plans or plan.cost > limit:
                break
            if _identity(plan) == _identity(best):
                continue
            if min(self.planner.domain.novelty(plan.trajectory, other.trajectory)
                   for other in chosen) >= self.diversity:
                chosen.append(plan)
        return chosen


def _identity(plan: JointPlan) -> tuple:
    """What tells two plans apart: the planner's sequential plan where it keeps one,
    else the joint steps (a planner need not fill ``sequential``)."""
    return plan.sequential or tuple((s.robot, s.human) for s in plan.steps)


def evaluator_for(method: str, planner: Planner,
                  set_diversity: float | None = None) -> _PlanEvaluator:
    """The evaluator a method uses with this planner: CE-CM-Div compares with diverse
    sets (``set_diversity``: delta, None for the paper's), CE-CM with one plan; plans
    are shared between hypotheses only when the planner promises cost-optimal plans,
    else every hypothesis is planned."""
    if method == 'cecm_div':
        if set_diversity is None:
            return DiversePlanEvaluator(planner)
        return DiversePlanEvaluator(planner, diversity=set_diversity)
    if planner.guarantees.cost_optimal:
        return SharedPlanEvaluator(planner)
    return BatchEvaluator(planner)
