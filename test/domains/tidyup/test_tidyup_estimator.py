"""CE-CM's evaluators and baselines where what they rest on is TidyUP's: Fast Downward's
determinism and tie-breaking, what a TidyUP trajectory proves, and how much dearer a
declined capability makes a TidyUP plan. The estimator's rules themselves are tested on
the stub domain in test/core/test_estimator.py."""

import numpy as np
import pytest

from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import DiversePlanEvaluator, NaiveEvaluator, SharedPlanEvaluator
from cecm_ros.core.trajectory import jaccard_distance
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.tasks import TaskGenerator


@pytest.fixture(scope='module')
def planner(model):
    with FastDownwardPlanner(model, workers=2) as shared:
        yield shared


@pytest.fixture(scope='module')
def task(model):
    return TaskGenerator(model, 5).next_task()


@pytest.fixture(scope='module')
def truth(model):
    return model.catalog.resolve('low_capability')


@pytest.fixture(scope='module')
def observed(planner, task, truth):
    return planner.plan(task, truth).trajectory


def test_the_true_vector_explains_its_own_observation(model, planner, task, truth, observed):
    assert jaccard_distance(planner.plan(task, truth).trajectory, observed) == 0.0


def test_an_atom_tidyup_does_not_know_fails_the_update_and_leaves_the_belief(model, planner,
                                                                           task, observed):
    estimator = make_estimator('cecm', model, SharedPlanEvaluator(planner),
                               EstimatorSettings.preset('paper', samples=10), seed=3)
    estimator.update(task, observed)
    before = estimator.belief.to_dict()
    bogus = task.__class__(task.task_id, task.initial | {'(item-at sofa kitchen)'}, task.goal)
    with pytest.raises(KeyError, match='sofa'):
        estimator.update(bogus, observed)
    assert estimator.belief.to_dict() == before


def test_pessimistic_adds_exactly_the_capabilities_the_partner_used(model, planner, truth):
    estimator = make_estimator('pessimistic', model)
    assert not estimator.estimate.any()
    seen = np.zeros(20, dtype=bool)
    for task in TaskGenerator(model, 21).tasks(3):
        plan = planner.plan(task, truth)
        used = np.zeros(20, dtype=bool)
        used[list(plan.human_capabilities_used)] = True
        assert np.array_equal(model.exercised_capabilities(plan.trajectory), used)
        estimator.update(task, plan.trajectory)
        seen |= used
        assert np.array_equal(estimator.estimate, seen)  # cumulative OR
    assert not (estimator.estimate & ~truth).any()


def test_several_actions_seen_at_once_prove_what_every_sequence_that_makes_them_uses(model):
    """A partner at its own pace may do several things between two reports (or a report
    comes late): the change is explained by the sequences of actions that make it (a
    bounded number, at most two of them the robot's), and a capability is proven only
    when every one of them uses it."""
    task = TaskGenerator(model, 2).tasks(3)[2]
    every = np.ones(len(model.catalog), dtype=bool)
    names = list(model.catalog.names)

    def after(state, *steps):
        for agent, action in steps:
            state = model.transition(state, agent, action, every)[0]
        return state

    start = model.initial_state(task)
    partner = after(start, ('human', '(pick human plate bathroom)'),
                    ('human', '(move human bathroom kitchen)'),
                    ('human', '(wash human plate kitchen)'))
    proven = model.exercised_capabilities([start, partner])
    assert sorted(names[i] for i in np.flatnonzero(proven)) == [
        'move_kitchen', 'pick_bathroom', 'wash_kitchen']
    # The robot's own steps seen at once prove nothing about the partner.
    robot_first = model.applicable_actions(start, 'robot')[0]
    robot = after(start, ('robot', robot_first))
    robot = after(robot, ('robot', model.applicable_actions(robot, 'robot')[0]))
    assert robot != start and not model.exercised_capabilities([start, robot]).any()
    # Interleaved with the robot's, the partner's share is still the partner's.
    both = after(start, ('human', '(pick human plate bathroom)'), ('robot', robot_first),
                 ('human', '(move human bathroom kitchen)'))
    assert sorted(names[i] for i in np.flatnonzero(
        model.exercised_capabilities([start, both]))) == ['move_kitchen', 'pick_bathroom']


def test_shared_evaluator_gives_optimal_plans_like_the_naive_one(model, task, observed):
    samples = np.random.default_rng(4).random((30, 20)) < 0.8
    with FastDownwardPlanner(model, cache_size=0) as naive_planner:
        naive = NaiveEvaluator(naive_planner).plans(task, samples)
    with FastDownwardPlanner(model, workers=2) as shared_planner:
        shared = SharedPlanEvaluator(shared_planner).plans(task, samples)
        assert shared_planner.calls < naive_planner.calls == 30
    for sample, a, b in zip(samples, naive, shared):
        # The planner's tie-breaking makes the shared plan the one a fresh search finds.
        assert (a.cost, a.planner_cost, a.steps) == (b.cost, b.planner_cost, b.steps)
        assert a.trajectory == b.trajectory
        assert all(sample[g] for g in b.human_capabilities_used)


def test_a_partner_who_declines_a_capability_is_explained_by_its_own_set(model, planner):
    """CE-CM-Div's purpose: the default set of the partner's true capabilities holds what
    it does when it declines one its optimal plan uses, however much dearer that is."""
    generator = TaskGenerator(model, 11)
    generator.next_task()
    task = generator.next_task()
    truth = model.catalog.resolve('high_capability')
    optimal = planner.plan(task, truth)
    evaluator = DiversePlanEvaluator(planner)
    dearest = 1.0
    for gate in sorted(optimal.human_capabilities_used):
        willing = truth.copy()
        willing[gate] = False
        declined = planner.plan(task, willing)
        dearest = max(dearest, declined.cost / optimal.cost)
        assert evaluator.distances(task, truth[None, :], declined.trajectory)[0] == 0.0, \
            model.catalog.names[gate]
    assert dearest >= 1.5   # the case a cost bound near the optimum would lose


