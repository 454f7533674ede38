"""The evaluation metrics, on hand-made vectors and joint plans."""

import threading
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from cecm_ros.core.domain import NOOP, JointPlan, JointStep
from cecm_ros.core.metrics import (
    HeldoutPool,
    allocation,
    correction_ratio,
    hamming,
    infeasible_assigned,
    plan_overlap_iou,
)


def joint_plan(*steps):
    """A JointPlan from (robot, human) pairs; costs and trajectory are not used here."""
    return JointPlan('hand-made', tuple(JointStep(r, h) for r, h in steps), cost=0.0,
                     robot_cost=0.0, human_cost=0.0, trajectory=(0,),
                     human_capabilities_used=frozenset())


# ---------------------------------------------------------------------- hamming
def test_hamming_is_normalised_by_length():
    truth = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    estimate = np.array([1, 0, 1, 1, 0, 1, 0, 0], dtype=bool)
    assert hamming(estimate, truth) == pytest.approx(2 / 8)
    assert hamming(truth, truth) == 0.0
    assert hamming(~truth, truth) == 1.0
    assert hamming([1, 0], [0, 0]) == 0.5  # plain lists and ints are accepted


def test_hamming_mask_selects_the_compared_capabilities():
    truth = np.array([1, 1, 0, 0], dtype=bool)
    estimate = np.array([0, 1, 1, 0], dtype=bool)
    mask = np.array([True, True, False, False])
    assert hamming(estimate, truth, mask) == pytest.approx(1 / 2)
    assert hamming(estimate, truth, ~mask) == pytest.approx(1 / 2)
    assert hamming(estimate, truth, np.array([False, True, False, True])) == 0.0
    assert hamming(estimate, truth, np.zeros(4, dtype=bool)) == 0.0  # nothing compared


def test_hamming_of_partner_types_over_live_capabilities(model):
    catalog = model.catalog
    optimistic, low = catalog.all_capable(), catalog.partner_vector('low_capability')
    assert hamming(optimistic, low) == pytest.approx(9 / 20)
    # Three of low_capability's nine gaps (wash outside the kitchen) are inert.
    assert hamming(optimistic, low, ~model.inert_mask) == pytest.approx(6 / 16)


def test_hamming_rejects_different_shapes():
    with pytest.raises(ValueError, match='differ in shape'):
        hamming(np.ones(3, dtype=bool), np.ones(4, dtype=bool))


# ------------------------------------------------------------- correction ratio
def test_correction_ratio():
    assert correction_ratio(1, 4) == 0.25
    assert correction_ratio(3, 3) == 1.0
    assert correction_ratio(0, 5) == 0.0
    assert correction_ratio(0, 0) == 0.0
    assert correction_ratio(2, 0) == 0.0  # no decisions: nothing to correct


# ------------------------------------------------------------------ plan overlap
A = '(pick robot plate kitchen)'
B = '(move human kitchen study)'
C = '(pick human bowl kitchen)'
D = '(move robot kitchen study)'


def test_allocation_is_a_multiset_without_noops():
    plan = joint_plan((A, B), (NOOP, C), (D, NOOP), (NOOP, B))
    assert allocation(plan) == Counter({A: 1, B: 2, C: 1, D: 1})


def test_identical_plans_overlap_fully():
    plan = joint_plan((A, B), (D, C))
    assert plan_overlap_iou(plan, plan) == 1.0
    # Same allocation in a different schedule is still the same allocation.
    assert plan_overlap_iou(plan, joint_plan((A, NOOP), (D, B), (NOOP, C))) == 1.0


def test_disjoint_allocations_do_not_overlap():
    assert plan_overlap_iou(joint_plan((A, B)), joint_plan((D, C))) == 0.0
    # The same work done by the other agent is a different allocation.
    robot_picks = joint_plan(('(pick robot plate kitchen)', NOOP))
    human_picks = joint_plan((NOOP, '(pick human plate kitchen)'))
    assert plan_overlap_iou(robot_picks, human_picks) == 0.0


def test_partial_overlap_counts_multiplicities():
    first = joint_plan((A, B), (NOOP, B))      # {A, B, B}
    second = joint_plan((A, B), (D, NOOP))     # {A, B, D}
    # intersection {A, B} = 2, union {A, B, B, D} = 4
    assert plan_overlap_iou(first, second) == pytest.approx(0.5)
    assert plan_overlap_iou(second, first) == pytest.approx(0.5)


def test_empty_plans_overlap_fully():
    assert plan_overlap_iou(joint_plan(), joint_plan()) == 1.0
    assert plan_overlap_iou(joint_plan(), joint_plan((A, NOOP))) == 0.0


# --------------------------------------------------------- infeasible assignments
def test_infeasible_assigned_counts_forbidden_human_actions(model):
    plan = joint_plan(
        ('(pick robot blanket kitchen)', '(move human kitchen bedroom)'),
        (NOOP, '(pick human toothbrush bedroom)'),       # pick_bedroom: low lacks it
        ('(move robot kitchen living_room)', '(move human bedroom living_room)'),
        ('(place robot blanket living_room)', '(place human toothbrush living_room)'),
        (NOOP, '(move human living_room kitchen)'),
        (NOOP, '(wash human toothbrush kitchen)'))       # wash_kitchen: low has it
    low = model.catalog.partner_vector('low_capability')
    high = model.catalog.partner_vector('high_capability')
    assert infeasible_assigned(model, plan, low) == 2
    assert infeasible_assigned(model, plan, high) == 1  # place_living_room
    assert infeasible_assigned(model, plan, model.catalog.all_capable()) == 0
    # Robot actions never count, whatever the human lacks.
    nothing = model.catalog.parse_vector('0' * 20)
    robot_only = joint_plan(('(pick robot plate bedroom)', NOOP),
                            ('(move robot bedroom study)', NOOP))
    assert infeasible_assigned(model, robot_only, nothing) == 0
    assert infeasible_assigned(model, plan, nothing) == 6


# ------------------------------------------------------------------- held-out pool
class CountingEvaluator:
    """A stand-in for the plan evaluator: a vector's "trajectory" on a task is its bits
    (a flip of any bit changes it); every (task, vector) it is asked for is counted."""

    def __init__(self):
        self.asked = Counter()
        self.lock = threading.Lock()

    def plans(self, task, vectors):
        time.sleep(0.002)   # long enough for a second thread to come in
        with self.lock:
            self.asked.update((task.task_id, v.tobytes()) for v in vectors)
        # A plan uses every capability its vector has (as a real plan's field says).
        return [SimpleNamespace(trajectory=tuple(int(b) for b in v),
                                human_capabilities_used=frozenset(np.flatnonzero(v).tolist()))
                for v in vectors]


def test_a_pool_used_from_two_threads_plans_each_vector_once(model):
    evaluator = CountingEvaluator()
    pool = HeldoutPool(model, evaluator, seed=3, size=5)
    truth = model.catalog.resolve('low_capability')
    assert pool.identifiable(truth, plan=False) is None   # nothing planned: no waiting
    assert not evaluator.asked
    results = []
    threads = [threading.Thread(target=lambda: results.append(pool.identifiable(truth)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30.0)
    assert len(results) == 2 and np.array_equal(results[0], results[1])
    # Every live capability changes this stand-in's trajectory, the inert ones none.
    assert np.array_equal(results[0], ~model.inert_mask)
    assert evaluator.asked and set(evaluator.asked.values()) == {1}
    live = int((~model.inert_mask).sum())
    assert len(evaluator.asked) == len(pool.tasks) * (1 + live)
    assert np.array_equal(pool.identifiable(truth, plan=False), results[0])
