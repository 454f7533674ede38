"""CE-CM with the paper's approximate Bayesian computation, the baselines, the belief as
a value and the hypothesis evaluators, on the stub domain (core/estimator.py,
core/hypotheses.py).

The stub sends the partner to a place for each errand (two capabilities per errand, and
an inert place), and its cost-optimal planner lets plans be shared between hypotheses.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from stub_domain import Errands, OptimalErrandsPlanner

from cecm_ros.core.errors import ConfigError, UnsolvableTaskError
from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import (
    BatchEvaluator,
    DiversePlanEvaluator,
    NaiveEvaluator,
    SharedPlanEvaluator,
    evaluator_for,
)
from cecm_ros.core.trajectory import jaccard_distance

PLACES = {'post-office': ('letter',), 'depot': ('parcel',), 'garden': ('plant',),
          'hall': ('keys',), 'attic': ()}
SIZE = 9   # four errands, five places (the attic is inert)


@pytest.fixture(scope='module')
def domain():
    return Errands(places=PLACES)


@pytest.fixture(scope='module')
def planner(domain):
    with OptimalErrandsPlanner(domain) as shared:
        yield shared


@pytest.fixture(scope='module')
def task(domain):
    return domain.task_generator(5).next_task()


@pytest.fixture(scope='module')
def truth(domain):
    return domain.catalog.vector_without(['go-depot', 'run-plant'])


@pytest.fixture(scope='module')
def observed(planner, task, truth):
    return planner.plan(task, truth).trajectory


def cecm(domain, planner, samples=40, seed=3, **settings):
    """CE-CM with the paper's approximate Bayesian computation (abc inference)."""
    return make_estimator('cecm', domain, SharedPlanEvaluator(planner),
                          EstimatorSettings.preset('paper', samples=samples, **settings),
                          seed=seed)


def test_the_stub_is_as_this_file_expects(domain, task):
    assert len(domain.catalog) == SIZE and domain.inert_capabilities == ['go-attic']
    # The partner runs the letter and the keys; the plant is beyond it.
    assert task.goal == frozenset({'(done letter)', '(done keys)', '(done plant)'})


def test_an_unknown_method_is_named(domain):
    with pytest.raises(ConfigError, match='psychic'):
        make_estimator('psychic', domain)
    with pytest.raises(ConfigError, match='needs a hypothesis evaluator'):
        make_estimator('cecm', domain)


def test_the_prior_belief_estimates_everyone_capable(domain, planner):
    estimator = cecm(domain, planner)
    assert estimator.belief.theta == pytest.approx(np.full(SIZE, 0.8))
    assert estimator.estimate.all()


def test_accepted_samples_are_exactly_those_within_epsilon(domain, planner, task, observed):
    estimator = cecm(domain, planner, seed=2)
    samples = estimator.draw_samples()
    plans = SharedPlanEvaluator(planner).plans(task, samples)
    expected = sum(jaccard_distance(p.trajectory, observed) < 0.24 for p in plans)
    assert 0 < expected < len(samples)   # the update has something to pool and to reject
    report = estimator.update(task, observed)
    assert report.samples_evaluated == 40 and report.updated
    assert report.samples_accepted == expected == len(estimator.belief.accepted)
    assert estimator.belief.tasks_seen == 1
    accepted = estimator.belief.accepted
    assert estimator.belief.theta == pytest.approx(accepted.mean(axis=0))


def test_the_same_seed_gives_the_same_belief_and_another_seed_other_samples(
        domain, planner, task, observed):
    first, second = cecm(domain, planner, seed=9), cecm(domain, planner, seed=9)
    first.update(task, observed)
    second.update(task, observed)
    assert len(first.belief.accepted) > 0
    assert np.array_equal(first.belief.accepted, second.belief.accepted)
    assert not np.array_equal(cecm(domain, planner, seed=9).draw_samples(),
                              cecm(domain, planner, seed=10).draw_samples())


def test_no_accepted_sample_leaves_the_belief_as_it_was(domain, planner, task):
    estimator = cecm(domain, planner, samples=10)
    start = domain.initial_state(task)
    report = estimator.update(task, [start])   # a team that never moved: nothing explains it
    assert report.samples_accepted == 0 and not report.updated
    assert 'belief unchanged' in report.message
    assert len(estimator.belief.accepted) == 0 and estimator.belief.tasks_seen == 1
    assert estimator.belief.theta == pytest.approx(np.full(SIZE, 0.8))


def test_a_failed_update_does_not_touch_the_belief(domain, planner, task, observed):
    estimator = cecm(domain, planner, samples=10)
    estimator.update(task, observed)
    before = estimator.belief.to_dict()
    with pytest.raises(ConfigError, match='empty'):
        estimator.update(task, [])
    # A goal no team can reach: planning the samples fails half-way through the update.
    bogus = task.__class__(task.task_id, task.initial, task.goal | {'(done laundry)'})
    with pytest.raises(UnsolvableTaskError):
        estimator.update(bogus, observed)
    assert estimator.belief.to_dict() == before


def test_the_belief_round_trips_through_a_file(domain, planner, task, observed, tmp_path):
    estimator = cecm(domain, planner, window=3)
    estimator.update(task, observed)
    path = tmp_path / 'belief.json'
    estimator.belief.save(path)
    loaded = CapabilityBelief.load(path)
    assert loaded.to_dict() == estimator.belief.to_dict()
    assert loaded.settings.window == 3
    assert np.array_equal(loaded.estimate, estimator.estimate)
    resumed = make_estimator('cecm', domain, SharedPlanEvaluator(planner), belief=loaded)
    assert resumed.belief.tasks_seen == 1
    assert resumed.settings == estimator.settings


def test_bad_belief_files_are_rejected_with_the_reason(domain, tmp_path):
    path = tmp_path / 'belief.json'
    path.write_text('{not json')
    with pytest.raises(ConfigError, match='cannot load belief'):
        CapabilityBelief.load(path)
    path.write_text(json.dumps({'format': 'something/else'}))
    with pytest.raises(ConfigError, match='not a capability belief'):
        CapabilityBelief.load(path)
    other = CapabilityBelief('cecm', ['fly', 'swim'])
    with pytest.raises(ConfigError, match='other capabilities'):
        make_estimator('optimistic', domain, belief=other)
    mine = CapabilityBelief('pessimistic', list(domain.catalog.names))
    with pytest.raises(ConfigError, match="belongs to method 'pessimistic'"):
        make_estimator('optimistic', domain, belief=mine)


def test_a_format_1_belief_is_migrated_to_abc(domain, planner, task, observed, tmp_path):
    estimator = cecm(domain, planner, samples=60, seed=2)
    estimator.update(task, observed)
    old = estimator.belief.to_dict()
    old['format'] = 'cecm_ros/capability_belief/1'
    del old['settings']['inference'], old['settings']['undecided'], old['settings']['sweeps']
    del old['settings']['coupling'], old['last_accepted']
    path = tmp_path / 'old.json'
    path.write_text(json.dumps(old))
    loaded = CapabilityBelief.load(path)
    assert loaded.settings.inference == 'abc'
    assert len(loaded.accepted) > 0
    assert np.array_equal(loaded.theta, estimator.belief.theta)


def test_window_and_decay_forget_old_tasks():
    names = ['a', 'b']
    accepted = np.array([[1, 1], [1, 1], [0, 0]], dtype=bool)
    tasks = np.array([0, 0, 1])
    abc = EstimatorSettings.preset('paper')
    window = CapabilityBelief('cecm', names, replace(abc, window=1), accepted, tasks,
                              tasks_seen=2)
    assert window.theta == pytest.approx([0.0, 0.0])
    decay = CapabilityBelief('cecm', names, replace(abc, decay=0.5), accepted, tasks,
                             tasks_seen=2)
    assert decay.theta == pytest.approx([1.0 / 2.0, 1.0 / 2.0])   # weights .5, .5, 1
    plain = CapabilityBelief('cecm', names, abc, accepted, tasks, tasks_seen=2)
    assert plain.theta == pytest.approx([2 / 3, 2 / 3])
    empty = CapabilityBelief('cecm', names, abc)
    assert empty.theta == pytest.approx([abc.prior, abc.prior])


def test_the_belief_proposal_draws_from_the_clipped_belief(domain, planner, task, observed):
    estimator = cecm(domain, planner, proposal='belief', proposal_floor=0.1)
    assert estimator.proposal_probabilities() == pytest.approx(np.full(SIZE, 0.8))
    estimator.update(task, observed)
    theta = estimator.belief.theta
    assert theta.min() < 0.1 or theta.max() > 0.9      # the clip has work to do
    probabilities = estimator.proposal_probabilities()
    assert probabilities.min() >= 0.1 and probabilities.max() <= 0.9
    assert probabilities == pytest.approx(np.clip(theta, 0.1, 0.9))
    prior_drawn = cecm(domain, planner)
    prior_drawn.update(task, observed)
    assert prior_drawn.proposal_probabilities() == pytest.approx(np.full(SIZE, 0.8))


def test_the_optimistic_baseline_never_learns(domain, task, observed):
    estimator = make_estimator('optimistic', domain)
    report = estimator.update(task, observed)
    assert estimator.estimate.all() and not report.updated
    assert estimator.belief.tasks_seen == 1


def test_the_pessimistic_baseline_adds_exactly_what_the_partner_used(domain, planner, truth):
    estimator = make_estimator('pessimistic', domain)
    assert not estimator.estimate.any()
    seen = np.zeros(SIZE, dtype=bool)
    for task in domain.task_generator(21).tasks(3):
        plan = planner.plan(task, truth)
        used = np.zeros(SIZE, dtype=bool)
        used[list(plan.human_capabilities_used)] = True
        assert np.array_equal(domain.exercised_capabilities(plan.trajectory), used)
        estimator.update(task, plan.trajectory)
        seen |= used
        assert np.array_equal(estimator.estimate, seen)   # cumulative OR
    assert seen.sum() >= 4 and not (estimator.estimate & ~truth).any()


def test_the_shared_evaluator_gives_the_plans_of_the_naive_one(domain, task):
    samples = np.random.default_rng(4).random((30, SIZE)) < 0.8
    with OptimalErrandsPlanner(domain, cache_size=0) as naive_planner:
        naive = NaiveEvaluator(naive_planner).plans(task, samples)
    with OptimalErrandsPlanner(domain) as shared_planner:
        shared = SharedPlanEvaluator(shared_planner).plans(task, samples)
        assert shared_planner.calls < naive_planner.calls == 30
    assert len({a.sequential for a in naive}) > 1
    for sample, a, b in zip(samples, naive, shared):
        # The planner's ranking makes the shared plan the one a fresh search finds.
        assert (a.cost, a.planner_cost, a.steps) == (b.cost, b.planner_cost, b.steps)
        assert a.trajectory == b.trajectory
        assert all(sample[g] for g in b.human_capabilities_used)


def test_only_a_cost_optimal_planner_shares_plans(errands):
    domain, planner = errands     # the plain stub's planner does not rank equal plans
    with pytest.raises(ValueError, match='cost-optimal'):
        SharedPlanEvaluator(planner)
    assert type(evaluator_for('cecm', planner)) is BatchEvaluator
    assert type(DiversePlanEvaluator(planner).shared) is NaiveEvaluator


def test_diverse_sets_hold_only_permitted_cheap_diverse_plans(domain, planner, task, observed):
    samples = np.random.default_rng(6).random((40, SIZE)) < 0.8
    evaluator = DiversePlanEvaluator(planner, max_plans=5, diversity=0.35, cost_slack=0.5)
    sets = evaluator.plan_sets(task, samples)
    optimal = SharedPlanEvaluator(planner).plans(task, samples)
    assert any(len(plans) > 1 for plans in sets)
    for sample, plans, best in zip(samples | domain.inert_mask, sets, optimal):
        assert plans[0].sequential == best.sequential and 1 <= len(plans) <= 5
        for plan in plans:
            assert all(sample[g] for g in plan.human_capabilities_used)
            assert plan.cost <= best.cost * 1.5 + 1e-9
        for index, plan in enumerate(plans[1:], 1):
            for earlier in plans[:index]:
                states = set(plan.trajectory)
                assert len(states - set(earlier.trajectory)) / len(states) >= 0.35
    div = evaluator.distances(task, samples, observed)
    single = SharedPlanEvaluator(planner).distances(task, samples, observed)
    assert (div <= single + 1e-12).all()   # a set never explains worse than its best plan
    assert (div < single).any()


def test_a_partner_who_declines_a_capability_is_explained_by_its_own_set(domain, planner,
                                                                         task):
    """CE-CM-Div's purpose: the default set of the partner's true capabilities holds what
    it does when it declines one its optimal plan uses, however much dearer that is; a
    cost bound below that would lose it."""
    truth = domain.catalog.all_capable()
    optimal = planner.plan(task, truth)
    assert len(optimal.human_capabilities_used) == 6
    evaluator = DiversePlanEvaluator(planner)
    dearest = 1.0
    declined_plans = []
    for gate in sorted(optimal.human_capabilities_used):
        willing = truth.copy()
        willing[gate] = False
        declined = planner.plan(task, willing)
        declined_plans.append(declined)
        dearest = max(dearest, declined.cost / optimal.cost)
        assert evaluator.distances(task, truth[None, :], declined.trajectory)[0] == 0.0, \
            domain.catalog.names[gate]
    assert dearest > 1.0
    bounded = DiversePlanEvaluator(planner, cost_slack=(dearest - 1.0) / 2)
    assert any(bounded.distances(task, truth[None, :], plan.trajectory)[0] > 0.0
               for plan in declined_plans)


def test_a_task_without_evidence_does_not_age_a_windowed_belief(domain, planner, task,
                                                                 observed):
    estimator = cecm(domain, planner, samples=60, seed=2, window=1)
    estimator.update(task, observed)
    theta = estimator.belief.theta.copy()
    assert len(estimator.belief.accepted) > 0
    start = domain.initial_state(task)
    report = estimator.update(task, [start])
    assert report.samples_accepted == 0
    assert estimator.belief.theta == pytest.approx(theta)
