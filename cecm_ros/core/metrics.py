"""The paper's evaluation metrics."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from .domain import NOOP, Domain, JointPlan
from .errors import InterruptedWorkError


def hamming(estimate: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Normalised Hamming distance in [0, 1], over the capabilities selected by ``mask``."""
    estimate, truth = np.asarray(estimate, bool), np.asarray(truth, bool)
    if estimate.shape != truth.shape:
        raise ValueError(f'vectors differ in shape: {estimate.shape} vs {truth.shape}')
    if mask is not None:
        estimate, truth = estimate[mask], truth[mask]
    return float(np.mean(estimate != truth)) if estimate.size else 0.0


def correction_ratio(corrections: int, robot_decisions: int) -> float:
    """Share of the robot's decisions that the partner had to correct."""
    return corrections / robot_decisions if robot_decisions else 0.0


def allocation(plan: JointPlan) -> Counter:
    """Who does what: the multiset of ground actions (each names its actor)."""
    return Counter(action for step in plan.steps for action in (step.robot, step.human)
                   if action != NOOP)


def plan_overlap_iou(first: JointPlan, second: JointPlan) -> float:
    """Intersection over union of the two plans' action allocations (multisets)."""
    a, b = allocation(first), allocation(second)
    union = sum((a | b).values())
    return 1.0 if union == 0 else sum((a & b).values()) / union


def infeasible_assigned(model: Domain, plan: JointPlan, truth: np.ndarray) -> int:
    """Partner actions in ``plan`` that the partner's true capabilities make self-loops."""
    return sum(1 for step in plan.steps if step.human != NOOP
               and not model.partner_capable(step.human, truth))


def open_loop_feasible(model: Domain, planner, tasks, estimate: np.ndarray,
                       truth: np.ndarray) -> float:
    """Of the partner actions in the plans ``planner`` makes under ``estimate`` for
    ``tasks`` (open loop: nobody corrects them), the share the true partner can do."""
    assigned = feasible = 0
    for task in tasks:
        plan = planner.plan(task, estimate)
        for step in plan.steps:
            if step.human != NOOP:
                assigned += 1
                feasible += bool(model.partner_capable(step.human, truth))
    return feasible / assigned if assigned else 1.0


class HeldoutPool:
    """A fixed pool of tasks (its own seed) on which plans under an estimate are compared
    with plans under the true capabilities.

    ``agreement``: the fraction of pool tasks on which the plan under the estimate
    produces the same joint trajectory as the plan under the truth; what the robot
    would get right on tasks it has not seen. ``identifiable``: the capabilities whose
    single flip in the true vector changes the plan of at least one pool task; the
    others cannot show in any plan here and no method should be blamed for them.
    Plans come from ``evaluator`` (shared between vectors, cached per vector). Calls
    from several threads take turns (a node plans the part that does not depend on the
    belief ahead, in a thread of its own), so no vector is planned twice.
    """

    def __init__(self, model: Domain, evaluator, seed: int, size: int = 40,
                 interrupt: Callable[[], bool] | None = None, twins: Sequence = ()):
        if size < 1:
            raise ValueError(f'a held-out pool needs at least one task, got {size}')
        self.model = model
        self.evaluator = evaluator
        self.seed = seed
        self.tasks = model.task_generator(seed).tasks(size)
        self.interrupt = interrupt   # asked between pool tasks; True stops the work
        # Evaluators of the same planner with other search seeds (identifiable asks them).
        self.twins = list(twins)
        self._trajectories: dict[bytes, tuple] = {}
        # Per vector, the partner capabilities its plans use on some pool task.
        self._used: dict[bytes, frozenset[int]] = {}
        self._lock = threading.Lock()

    def trajectories(self, vectors: np.ndarray) -> list[tuple]:
        """Per vector, the trajectory of its plan on every pool task."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool)) | self.model.inert_mask
        keys = [v.tobytes() for v in vectors]
        with self._lock:
            missing = {k: v for k, v in zip(keys, vectors) if k not in self._trajectories}
            if missing:
                batch = np.array(list(missing.values()))
                per_task = []
                for task in self.tasks:
                    if self.interrupt is not None and self.interrupt():
                        raise InterruptedWorkError('the held-out metrics were interrupted')
                    per_task.append(self.evaluator.plans(task, batch))
                for column, key in enumerate(missing):
                    self._trajectories[key] = tuple(row[column].trajectory for row in per_task)
                    self._used[key] = frozenset().union(
                        *(row[column].human_capabilities_used for row in per_task))
            return [self._trajectories[k] for k in keys]

    def agreement(self, estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
        """Per estimate, the fraction of pool tasks planned exactly as under ``truth``."""
        estimates = np.atleast_2d(np.asarray(estimates, dtype=bool))
        reference = self.trajectories(truth[None, :])[0]
        return np.array([np.mean([a == b for a, b in zip(mine, reference)])
                         for mine in self.trajectories(estimates)])

    def planned(self, vectors: np.ndarray) -> bool:
        """Whether every vector's plans are there already (it waits for nothing)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool)) | self.model.inert_mask
        return all(v.tobytes() in self._trajectories for v in vectors)

    def identifiable(self, truth: np.ndarray, plan: bool = True) -> np.ndarray | None:
        """Capabilities that show in a pool task's plan: of ``truth`` and ``truth`` with
        the capability flipped, the vector that has it uses it in some plan, under the
        planner's seed or one of the ``seeds`` others. For a cost-optimal planner this is
        "the flip changes a plan" (a plan that does not use it is also optimal without
        it); for a search with a seed, whose plans change with any flip because the
        vector seeds the search, it asks what the capability does, not what the seed
        does. With ``plan`` False None, unless every plan that takes is there already."""
        truth = np.asarray(truth, dtype=bool) | self.model.inert_mask
        live = np.flatnonzero(~self.model.inert_mask)
        flipped = np.repeat(truth[None, :], len(live), axis=0)
        flipped[np.arange(len(live)), live] ^= True
        if not plan and not self.planned(np.vstack([truth[None, :], flipped])):
            return None
        self.trajectories(np.vstack([truth[None, :], flipped]))
        having = np.where(truth[live][:, None], truth[None, :], flipped)   # one per live
        mask = np.zeros(len(truth), dtype=bool)
        for row, index in enumerate(live):
            mask[index] = int(index) in self._used[having[row].tobytes()]
        for evaluator in self.twins:
            for task in dict.fromkeys(self.tasks):
                plans = evaluator.plans(task, having)
                for row, index in enumerate(live):
                    mask[index] |= int(index) in plans[row].human_capabilities_used
        return mask
