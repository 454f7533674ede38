"""The evaluation metrics (core/metrics.py) on hand-made vectors and joint plans of the
stub domain; TidyUP's partner types are measured in test/domains/tidyup/test_tidyup_metrics.py.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from stub_domain import Errands

from cecm_ros.core.domain import NOOP, JointPlan, JointStep
from cecm_ros.core.metrics import (
    HeldoutPool,
    allocation,
    correction_ratio,
    hamming,
    infeasible_assigned,
    open_loop_feasible,
    plan_overlap_iou,
)

# Each errand at a place of its own, and an attic no errand needs: go-attic is inert.
PLACES = {'post-office': ('letter',), 'depot': ('parcel',), 'garden': ('plant',),
          'hall': ('keys',), 'attic': ()}


def joint_plan(*steps):
    """A JointPlan from (robot, human) pairs; costs and trajectory are not used here."""
    return JointPlan('hand-made', tuple(JointStep(r, h) for r, h in steps), cost=0.0,
                     robot_cost=0.0, human_cost=0.0, trajectory=(frozenset(),),
                     human_capabilities_used=frozenset())


# ---------------------------------------------------------------------- hamming
def test_hamming_is_normalised_by_length():
    truth = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    estimate = np.array([1, 0, 1, 1, 0, 1, 0, 0], dtype=bool)
    assert hamming(estimate, truth) == pytest.approx(2 / 8)
    assert hamming(truth, truth) == 0.0
    assert hamming(~truth, truth) == 1.0
    assert hamming([1, 0], [0, 0]) == 0.5   # plain lists and ints are accepted


def test_hamming_mask_selects_the_compared_capabilities():
    truth = np.array([1, 1, 0, 0], dtype=bool)
    estimate = np.array([0, 1, 1, 0], dtype=bool)
    mask = np.array([True, True, False, False])
    assert hamming(estimate, truth, mask) == pytest.approx(1 / 2)
    assert hamming(estimate, truth, ~mask) == pytest.approx(1 / 2)
    assert hamming(estimate, truth, np.array([False, True, False, True])) == 0.0
    assert hamming(estimate, truth, np.zeros(4, dtype=bool)) == 0.0   # nothing compared


def test_hamming_of_a_partner_type_over_the_live_capabilities():
    domain = Errands(places=PLACES)
    catalog = domain.catalog
    optimistic, low = catalog.all_capable(), catalog.partner_vector('low_capability')
    assert len(catalog) == 9 and domain.inert_capabilities == ['go-attic']
    # low_capability lacks three of the nine (running the parcel, the plant, the keys) ...
    assert hamming(optimistic, low) == pytest.approx(3 / 9)
    # ... and all three are live: over the eight live ones the share is larger.
    assert hamming(optimistic, low, ~domain.inert_mask) == pytest.approx(3 / 8)
    # A difference in the inert capability alone is no difference over the live ones.
    attic = catalog.vector_without(['go-attic'])
    assert hamming(attic, optimistic) == pytest.approx(1 / 9)
    assert hamming(attic, optimistic, ~domain.inert_mask) == 0.0


def test_hamming_rejects_different_shapes():
    with pytest.raises(ValueError, match='differ in shape'):
        hamming(np.ones(3, dtype=bool), np.ones(4, dtype=bool))


# ------------------------------------------------------------- correction ratio
def test_correction_ratio():
    assert correction_ratio(1, 4) == 0.25
    assert correction_ratio(3, 3) == 1.0
    assert correction_ratio(0, 5) == 0.0
    assert correction_ratio(0, 0) == 0.0
    assert correction_ratio(2, 0) == 0.0   # no decisions: nothing to correct


# ------------------------------------------------------------------ plan overlap
A = '(run robot letter)'
B = '(run human parcel)'
C = '(run human plant)'
D = '(run robot keys)'


def test_allocation_is_a_multiset_without_noops():
    plan = joint_plan((A, B), (NOOP, C), (D, NOOP), (NOOP, B))
    assert allocation(plan) == Counter({A: 1, B: 2, C: 1, D: 1})
    assert allocation(joint_plan((NOOP, NOOP))) == Counter()


def test_identical_plans_overlap_fully():
    plan = joint_plan((A, B), (D, C))
    assert plan_overlap_iou(plan, plan) == 1.0
    # The same allocation in another schedule is still the same allocation.
    assert plan_overlap_iou(plan, joint_plan((A, NOOP), (D, B), (NOOP, C))) == 1.0


def test_disjoint_allocations_do_not_overlap():
    assert plan_overlap_iou(joint_plan((A, B)), joint_plan((D, C))) == 0.0
    # The same errand run by the other agent is another allocation.
    robot_runs = joint_plan(('(run robot parcel)', NOOP))
    partner_runs = joint_plan((NOOP, '(run human parcel)'))
    assert plan_overlap_iou(robot_runs, partner_runs) == 0.0


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
def test_infeasible_assigned_counts_the_partner_actions_it_cannot_do():
    domain = Errands(places=PLACES)
    catalog = domain.catalog
    plan = joint_plan(('(run robot keys)', '(run human letter)'),
                      (NOOP, '(run human parcel)'),       # low_capability lacks run-parcel
                      ('(run robot letter)', '(run human plant)'),
                      (NOOP, '(run human keys)'))
    low = catalog.partner_vector('low_capability')
    assert infeasible_assigned(domain, plan, low) == 3
    # A partner who may run every errand but cannot go to the depot: one.
    no_depot = catalog.vector_without(['go-depot'])
    assert infeasible_assigned(domain, plan, no_depot) == 1
    assert infeasible_assigned(domain, plan, catalog.all_capable()) == 0
    # Robot actions never count, whatever the partner lacks.
    nothing = catalog.parse_vector('0' * len(catalog))
    robot_only = joint_plan(('(run robot parcel)', NOOP), ('(run robot plant)', NOOP))
    assert infeasible_assigned(domain, robot_only, nothing) == 0
    assert infeasible_assigned(domain, plan, nothing) == 4


def test_open_loop_feasibility_is_the_share_of_partner_actions_it_can_do(errands):
    domain, planner = errands
    tasks = domain.task_generator(6).tasks(4)
    truth = domain.catalog.resolve('low_capability')
    optimistic = domain.catalog.all_capable()
    assigned = [a for task in tasks for a in planner.plan(task, optimistic).actions_of('human')]
    feasible = sum(domain.partner_capable(a, truth) for a in assigned)
    assert 0 < feasible < len(assigned)
    assert open_loop_feasible(domain, planner, tasks, optimistic, truth) == \
        pytest.approx(feasible / len(assigned))
    assert open_loop_feasible(domain, planner, tasks, truth, truth) == 1.0
    # Nothing handed to the partner: nothing it could fail at.
    nothing = np.zeros(len(domain.catalog), dtype=bool)
    assert open_loop_feasible(domain, planner, tasks, nothing, truth) == 1.0


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


def test_a_pool_used_from_two_threads_plans_each_vector_once():
    domain = Errands(places=PLACES)
    evaluator = CountingEvaluator()
    pool = HeldoutPool(domain, evaluator, seed=3, size=5)
    assert len(pool.tasks) == 5
    truth = domain.catalog.resolve('low_capability')
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
    # Every live capability changes this stand-in's trajectory, the inert one none.
    assert np.array_equal(results[0], ~domain.inert_mask) and not results[0].all()
    assert evaluator.asked and set(evaluator.asked.values()) == {1}
    live = int((~domain.inert_mask).sum())
    assert len(evaluator.asked) == len(pool.tasks) * (1 + live)
    assert np.array_equal(pool.identifiable(truth, plan=False), results[0])
    # The truth agrees with itself on every pool task; a vector that differs does not.
    assert pool.agreement(truth[None, :], truth) == pytest.approx([1.0])
    assert pool.agreement(~truth[None, :], truth) == pytest.approx([0.0])
    with pytest.raises(ValueError, match='at least one task'):
        HeldoutPool(domain, evaluator, seed=3, size=0)
