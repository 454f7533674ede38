"""CE-CM, the baselines, the belief value and the hypothesis evaluators."""

import json
from dataclasses import replace

import numpy as np
import pytest

from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import (
    CapabilityBelief,
    EstimatorSettings,
    make_estimator,
)
from cecm_ros.core.hypotheses import DiversePlanEvaluator, NaiveEvaluator, SharedPlanEvaluator
from cecm_ros.core.partners import SimulatedHuman
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


def cecm(model, planner, samples=40, seed=3, **settings):
    """CE-CM with the paper's approximate Bayesian computation (abc inference)."""
    return make_estimator('cecm', model, SharedPlanEvaluator(planner),
                          EstimatorSettings.preset('paper', samples=samples, **settings),
                          seed=seed)


@pytest.mark.parametrize('bad', [dict(samples=0), dict(prior=1.5), dict(epsilon=0.0),
                                 dict(psi=1.0), dict(window=0), dict(decay=0.0),
                                 dict(window=2, decay=0.5, inference='abc'),
                                 dict(proposal='posterior'), dict(proposal_floor=0.5),
                                 dict(prior=1.0), dict(prior=0.0), dict(inference='magic'),
                                 dict(undecided='maybe'), dict(sweeps=-1),
                                 dict(coupling=1.0), dict(decay=0.5), dict(alike_rooms=-1.0),
                                 dict(alike_rooms=1.0, coupling=0.5)])
def test_settings_reject_out_of_range_values(bad):
    with pytest.raises(ConfigError):
        EstimatorSettings(**bad)


def test_presets_name_the_papers_reading_and_the_sequential_one():
    paper = EstimatorSettings.preset('paper')
    assert (paper.inference, paper.prior, paper.proposal, paper.window) == \
        ('abc', 0.8, 'prior', None) and paper.variant == 'paper'
    sequential = EstimatorSettings.preset('sequential', samples=50)
    assert (sequential.proposal, sequential.window, sequential.samples) == ('belief', 1, 50)
    assert sequential.variant == 'sequential'
    assert EstimatorSettings.preset('paper', window=3).variant == 'abc (custom)'
    assert EstimatorSettings().variant == 'posterior'
    with pytest.raises(ConfigError, match='unknown inference'):
        EstimatorSettings.preset('guess')


def test_unknown_method_is_named(model):
    with pytest.raises(ConfigError, match='psychic'):
        make_estimator('psychic', model)


def test_prior_belief_estimates_everyone_capable(model, planner):
    estimator = cecm(model, planner)
    assert estimator.belief.theta == pytest.approx(np.full(20, 0.8))
    assert estimator.estimate.all()


def test_accepted_samples_are_exactly_those_within_epsilon(model, planner, task, observed):
    estimator = cecm(model, planner, seed=2)
    samples = estimator.draw_samples()
    plans = SharedPlanEvaluator(planner).plans(task, samples)
    expected = sum(jaccard_distance(p.trajectory, observed) < 0.24 for p in plans)
    assert expected > 0  # the seed is chosen so that the update has something to pool
    report = estimator.update(task, observed)
    assert report.samples_evaluated == 40
    assert report.samples_accepted == expected == len(estimator.belief.accepted)
    assert estimator.belief.tasks_seen == 1
    accepted = estimator.belief.accepted
    assert estimator.belief.theta == pytest.approx(accepted.mean(axis=0))


def test_the_true_vector_explains_its_own_observation(model, planner, task, truth, observed):
    assert jaccard_distance(planner.plan(task, truth).trajectory, observed) == 0.0


def test_same_seed_same_belief_and_different_seed_other_samples(model, planner, task, observed):
    first, second = cecm(model, planner, seed=9), cecm(model, planner, seed=9)
    first.update(task, observed)
    second.update(task, observed)
    assert np.array_equal(first.belief.accepted, second.belief.accepted)
    assert not np.array_equal(cecm(model, planner, seed=9).draw_samples(),
                              cecm(model, planner, seed=10).draw_samples())


def test_no_accepted_sample_leaves_the_belief_as_it_was(model, planner, task):
    estimator = cecm(model, planner, samples=10)
    start = model.state_from_atoms(task.initial)
    report = estimator.update(task, [start])  # a team that never moved: nothing explains it
    assert report.samples_accepted == 0 and not report.updated
    assert 'belief unchanged' in report.message
    assert len(estimator.belief.accepted) == 0
    assert estimator.belief.theta == pytest.approx(np.full(20, 0.8))


def test_a_failed_update_does_not_touch_the_belief(model, planner, task, observed):
    estimator = cecm(model, planner, samples=10)
    estimator.update(task, observed)
    before = estimator.belief.to_dict()
    with pytest.raises(ConfigError, match='empty'):
        estimator.update(task, [])
    bogus = task.__class__(task.task_id, task.initial | {'(item-at sofa kitchen)'}, task.goal)
    with pytest.raises(KeyError, match='sofa'):
        estimator.update(bogus, observed)
    assert estimator.belief.to_dict() == before


def test_belief_round_trips_through_a_file(model, planner, task, observed, tmp_path):
    estimator = cecm(model, planner, window=3)
    estimator.update(task, observed)
    path = tmp_path / 'belief.json'
    estimator.belief.save(path)
    loaded = CapabilityBelief.load(path)
    assert loaded.to_dict() == estimator.belief.to_dict()
    assert np.array_equal(loaded.estimate, estimator.estimate)
    resumed = make_estimator('cecm', model, SharedPlanEvaluator(planner), belief=loaded)
    assert resumed.belief.tasks_seen == 1


def test_bad_belief_files_are_rejected_with_the_reason(model, tmp_path):
    path = tmp_path / 'belief.json'
    path.write_text('{not json')
    with pytest.raises(ConfigError, match='cannot load belief'):
        CapabilityBelief.load(path)
    path.write_text(json.dumps({'format': 'something/else'}))
    with pytest.raises(ConfigError, match='not a capability belief'):
        CapabilityBelief.load(path)
    other = CapabilityBelief('cecm', ['fly', 'swim'])
    with pytest.raises(ConfigError, match='other capabilities'):
        make_estimator('optimistic', model, belief=other)


def test_a_format_1_belief_is_migrated_to_abc(model, planner, task, observed, tmp_path):
    estimator = cecm(model, planner, samples=60, seed=2)
    estimator.update(task, observed)
    old = estimator.belief.to_dict()
    old['format'] = 'cecm_ros/capability_belief/1'
    del old['settings']['inference'], old['settings']['undecided'], old['settings']['sweeps']
    del old['settings']['coupling'], old['last_accepted']
    path = tmp_path / 'old.json'
    path.write_text(json.dumps(old))
    loaded = CapabilityBelief.load(path)
    assert loaded.settings.inference == 'abc'
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
    assert decay.theta == pytest.approx([1.0 / 2.0, 1.0 / 2.0])  # weights .5, .5, 1
    plain = CapabilityBelief('cecm', names, abc, accepted, tasks, tasks_seen=2)
    assert plain.theta == pytest.approx([2 / 3, 2 / 3])


def test_belief_proposal_draws_from_the_clipped_belief(model, planner, task, observed):
    estimator = cecm(model, planner, proposal='belief', proposal_floor=0.1)
    assert estimator.proposal_probabilities() == pytest.approx(np.full(20, 0.8))
    estimator.update(task, observed)
    probabilities = estimator.proposal_probabilities()
    assert probabilities.min() >= 0.1 and probabilities.max() <= 0.9
    assert probabilities == pytest.approx(np.clip(estimator.belief.theta, 0.1, 0.9))


def test_optimistic_never_learns(model, task, observed):
    estimator = make_estimator('optimistic', model)
    estimator.update(task, observed)
    assert estimator.estimate.all()


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


def test_diverse_sets_contain_only_permitted_cheap_diverse_plans(model, planner, task,
                                                                 observed):
    samples = np.random.default_rng(6).random((40, 20)) < 0.8
    evaluator = DiversePlanEvaluator(planner, max_plans=5, diversity=0.35, cost_slack=0.5)
    sets = evaluator.plan_sets(task, samples)
    optimal = SharedPlanEvaluator(planner).plans(task, samples)
    for sample, plans, best in zip(samples | model.inert_mask, sets, optimal):
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
    assert (div <= single + 1e-12).all()  # a set never explains worse than its best plan


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


def test_a_partner_that_forgoes_a_capability_is_seeded(model, planner, task, truth):
    always = SimulatedHuman(planner, truth, forgo_probability=1.0, seed=4)
    plan = always.begin_task(task)
    optimal = planner.plan(task, truth)
    if optimal.human_capabilities_used:
        assert always.forgone in {model.catalog.names[g]
                                  for g in optimal.human_capabilities_used}
        assert model.catalog.index(always.forgone) not in plan.human_capabilities_used
        assert plan.cost >= optimal.cost
        again = SimulatedHuman(planner, truth, forgo_probability=1.0, seed=4)
        assert again.begin_task(task).sequential == plan.sequential
    never = SimulatedHuman(planner, truth)
    assert never.begin_task(task).sequential == optimal.sequential and never.forgone is None
    with pytest.raises(ValueError, match='forgo_probability'):
        SimulatedHuman(planner, truth, forgo_probability=2.0)


def test_a_task_without_evidence_does_not_age_a_windowed_belief(model, planner, task,
                                                                 observed):
    estimator = cecm(model, planner, samples=60, seed=2, window=1)
    estimator.update(task, observed)
    theta = estimator.belief.theta.copy()
    assert len(estimator.belief.accepted) > 0
    start = model.state_from_atoms(task.initial)
    report = estimator.update(task, [start])
    assert report.samples_accepted == 0
    assert estimator.belief.theta == pytest.approx(theta)
