"""The paper's evaluation metrics."""

from __future__ import annotations

from collections import Counter

import numpy as np

from .domain import NOOP, TidyUpModel
from .planner import JointPlan


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


def infeasible_assigned(model: TidyUpModel, plan: JointPlan, truth: np.ndarray) -> int:
    """Partner actions in ``plan`` that the partner's true capabilities make self-loops."""
    return sum(1 for step in plan.steps if step.human != NOOP
               and not model.human_capable(model.action(step.human), truth))
