"""The graded likelihoods and the weighted posterior (core/likelihood.py,
core/likelihood_stepwise.py, core/likelihood_usage.py, core/weighted_posterior.py).

An evaluator that answers from a table of distances checks the reweighting rules
exactly; the stub domain, with a place to go to for each errand (128 vectors over its
seven live capabilities), checks the particles against the exact posterior under the
same likelihood and that against a weighing by hand.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from stub_domain import Errands, OptimalErrandsPlanner

from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.estimator_settings import likelihood_section
from cecm_ros.core.hypotheses import SharedPlanEvaluator
from cecm_ros.core.inference import (
    KNOWN_ABSENT,
    KNOWN_PRESENT,
    NEVER_EXERCISED,
    CapabilityPrior,
    exact_posterior,
)
from cecm_ros.core.likelihood import (
    KernelLikelihoodModel,
    Likelihood,
    LikelihoodModel,
    seeded_planners,
)
from cecm_ros.core.likelihood_stepwise import StepwiseLikelihoodModel
from cecm_ros.core.partners import (
    PartnerBehaviour,
    RobotTeammate,
    SimulatedHuman,
    run_shared_task,
)
from cecm_ros.core.trajectory import jaccard_distance
from cecm_ros.core.weighted_posterior import WeightedPosterior


class TableEvaluator:
    """Distances by task and vector from a function: a stand-in for a planner."""

    def __init__(self, distance_of):
        self.distance_of = distance_of
        self.asked = 0

    def distances(self, task, samples, observed, progress=None):
        self.asked += len(samples)
        return np.array([self.distance_of(task, tuple(bool(b) for b in v)) for v in samples])

    def distance(self, first, second):
        return 0.0 if first == second else 1.0

    def predicted_trajectories(self, task, samples):
        return [(task,) for _ in samples]


def table_posterior(lapse, size=3, particles=400, seed=0):
    likelihood = Likelihood(epsilon=0.24, lapse=lapse)
    prior = CapabilityPrior(size, 0.5)
    posterior = WeightedPosterior(prior, np.ones(size, dtype=bool), likelihood, particles,
                                  sweeps=2, names=[f'c{i}' for i in range(size)])
    posterior.start(np.random.default_rng(seed))
    return posterior


def model_of(evaluator, lapse, proven=None):
    return LikelihoodModel(Likelihood(0.24, lapse), [evaluator],
                           (lambda observed: proven(observed)) if proven else None)


def mass_of(posterior, vector):
    vectors, mass = posterior.distinct()
    hits = np.all(vectors == np.array(vector, dtype=bool), axis=1)
    return float(mass[hits].sum())


def test_a_hypothesis_missing_one_task_of_five_keeps_weight_and_one_missing_all_loses_it():
    truth, slip, wrong = (True, True, False), (True, False, True), (False, True, True)

    # The truth explains tasks 0-3 but not 4 (the partner slipped there); `slip`
    # explains task 4 only; `wrong` explains nothing; every other vector nothing either.
    def distance(task, vector):
        if vector == truth:
            return 0.0 if task < 4 else 0.9
        if vector == slip:
            return 0.0 if task == 4 else 0.9
        return 0.9

    posterior = table_posterior(lapse=0.1)
    model = model_of(TableEvaluator(distance), 0.1)
    rng = np.random.default_rng(1)
    for task in range(5):
        posterior.update(task, ('obs', task), model, rng)
    # Exact: weights 0.1 (truth: one miss), 0.1**4 (slip), 0.1**5 (the rest); equal prior.
    total = 0.1 + 0.1 ** 4 + 6 * 0.1 ** 5
    assert mass_of(posterior, truth) == pytest.approx(0.1 / total, abs=0.03)
    assert mass_of(posterior, truth) > 0.9
    assert mass_of(posterior, wrong) < 0.01
    # The indicator would have dropped the truth at task 4: every vector fails some task.
    marginals = posterior.theta()
    assert marginals[0] > 0.9 and marginals[1] > 0.9 and marginals[2] < 0.1


def test_a_proven_capability_is_certain_and_rules_out_vectors_without_planning():
    evaluator = TableEvaluator(lambda task, vector: 0.0)
    posterior = table_posterior(lapse=0.2)
    model = model_of(evaluator, 0.2, proven=lambda observed: np.array([True, False, False]))
    posterior.update('t', ('obs',), model, np.random.default_rng(0))
    vectors, _ = posterior.distinct()
    assert vectors[:, 0].all()
    assert posterior.report[0].status == KNOWN_PRESENT
    # Capabilities no task can tell apart stay at the prior, whatever the particles do.
    assert posterior.report[1].status == NEVER_EXERCISED
    assert posterior.theta()[1] == pytest.approx(0.5)


def test_every_particle_contradicting_a_proven_capability_is_redrawn():
    posterior = table_posterior(lapse=0.1, particles=50)
    posterior.particles[:, 2] = False        # nobody has c2
    model = model_of(TableEvaluator(lambda task, vector: 0.0), 0.1,
                     proven=lambda observed: np.array([False, False, True]))
    update = posterior.update('t', ('obs',), model, np.random.default_rng(3))
    assert update.explained
    assert posterior.distinct()[0][:, 2].all()


def test_an_impossible_observation_is_set_aside_and_the_belief_is_unchanged():
    posterior = table_posterior(lapse=0.0, size=2, particles=20)
    before = posterior.particles.copy()
    # lapse 0 and no vector within epsilon: nothing can produce it.
    model = model_of(TableEvaluator(lambda task, vector: 0.9), 0.0)
    # (Another seed than the particles': a redraw would show.)
    update = posterior.update('t', ('obs',), model, np.random.default_rng(5))
    assert not update.explained
    assert np.array_equal(posterior.particles, before)
    assert posterior.evidence[-1].active is False


def test_repeated_evidence_decides_absent_only_with_enough_mass():
    # c1 present fails every task (the partner never uses it when it would pay off).
    model = model_of(TableEvaluator(lambda task, vector: 0.9 if vector[1] else 0.0), 0.1)
    posterior = table_posterior(lapse=0.1, size=2, particles=300)
    rng = np.random.default_rng(0)
    posterior.update(0, ('a',), model, rng)
    # One task at lapse 0.1: P(c1) = 0.1 / 1.1, not yet 99% sure.
    assert posterior.theta()[1] == pytest.approx(0.1 / 1.1, abs=0.02)
    assert posterior.report[1].status != KNOWN_ABSENT
    posterior.update(1, ('b',), model, rng)
    posterior.update(2, ('c',), model, rng)
    assert posterior.theta()[1] < 0.01
    assert posterior.report[1].status == KNOWN_ABSENT


def test_likelihood_forms_and_their_checks():
    kernel = Likelihood(0.2, lapse=0.1, bandwidth=0.1)
    match = kernel.match(np.array([[0.1, 0.3], [0.5, 0.5]]))
    assert match[0] == pytest.approx((1 + np.exp(-1)) / 2)
    assert match[1] == pytest.approx(np.exp(-3))
    logs = kernel.log_values(np.array([[0.0], [0.9]]), np.array([True, False]))
    assert logs[0] == pytest.approx(0.0) and logs[1] == -np.inf
    assert Likelihood.named('indicator', 0.2, 0.3, 0.4).hard
    assert not Likelihood.named('kernel', 0.2, 0.3, 0.4).hard
    with pytest.raises(ConfigError, match='lapse'):
        Likelihood(0.2, lapse=1.0)
    with pytest.raises(ConfigError, match='unknown likelihood'):
        Likelihood.named('softish', 0.2, 0.1, 0.0)
    assert likelihood_section({'lapse': 0.2, 'seeds': 3, 'form': 'kernel'}, 'd.yaml') == \
        {'lapse': 0.2, 'likelihood_seeds': 3, 'likelihood': 'kernel'}
    with pytest.raises(ConfigError, match='form must be one of'):
        likelihood_section({'form': 'magic'}, 'd.yaml')
    with pytest.raises(ConfigError, match=r"d.yaml: likelihood: unknown keys \['lapsus'\]"):
        likelihood_section({'lapsus': 0.2}, 'd.yaml')
    with pytest.raises(ConfigError, match=r'd.yaml: likelihood: seeds must be at least 1, '
                                          'got 0'):
        likelihood_section({'seeds': 0}, 'd.yaml')
    with pytest.raises(ConfigError, match='seeds must be a whole number, got 2.5'):
        likelihood_section({'seeds': 2.5}, 'd.yaml')
    with pytest.raises(ConfigError, match='likelihood must be one of'):
        EstimatorSettings(likelihood='soft')
    with pytest.raises(ConfigError, match='known_mass'):
        EstimatorSettings(known_mass=0.4)


def test_a_planner_without_a_seed_gives_one_search():
    planner = SimpleNamespace(with_seed=lambda seed: None)
    assert seeded_planners(planner, 4) == [planner]
    twins = SimpleNamespace(with_seed=lambda seed: ('twin', seed))
    assert len(seeded_planners(twins, 3)) == 3 and seeded_planners(twins, 0) == [twins]


def test_a_change_two_tasks_show_together_is_found_and_the_tasks_since_are_kept():
    """A partner who explained tasks 0-2 one way and tasks 3-4 another: each of 3 and 4
    alone is too weak a sign of a new partner (its Bayes factor below log 19), the two
    together are not (about log 37 with a lapse of 0.08, the table below), so the change
    is found at task 4, dated to task 3, tasks 0-2 are set aside and 3-4 kept."""
    first, second = (True, True), (False, False)

    def distance(task, vector):
        return 0.0 if vector == (first if task < 3 else second) else 0.9

    posterior = table_posterior(lapse=0.08, size=2, particles=400)
    model = model_of(TableEvaluator(distance), 0.08)
    rng = np.random.default_rng(2)
    for task in range(4):
        assert not posterior.update(task, ('obs', task), model, rng).changed
    assert posterior.change_factors[-1] < np.log(19)
    update = posterior.update(4, ('obs', 4), model, rng)
    assert update.changed and posterior.changes == ['3']
    assert [item.active for item in posterior.evidence] == [False, False, False, True, True]
    assert update.forgotten == ['0', '1', '2']
    assert mass_of(posterior, second) > 0.8


def test_the_usage_likelihood_weighs_how_often_searches_use_each_capability():
    from cecm_ros.core.likelihood_usage import UsageLikelihoodModel

    # Trajectories are tuples naming the capabilities they show used.
    def exercised(trajectory):
        return np.array([name in trajectory for name in ('c0', 'c1', 'c2')])

    class Searches:
        """Seed k's plan for a vector uses its capabilities in the order of a table."""

        def __init__(self, seed):
            self.seed = seed

        def predicted_trajectories(self, task, vectors):
            plans = []
            for vector in vectors:
                used = ['c0'] if vector[0] else []
                # c1: a partner who has it uses it in half of the searches (seeds 0, 2).
                if vector[1] and self.seed % 2 == 0:
                    used.append('c1')
                plans.append(tuple(used))
            return plans

    lapse = 0.1
    usage = UsageLikelihoodModel(Likelihood(0.24, lapse), [Searches(k) for k in range(4)],
                                 exercised)
    observed = ('c0',)          # c0 used, c1 and c2 not
    vectors = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 1]], dtype=bool)
    logs = usage.log_likelihood('t', vectors, observed)
    # Laplace's rule over 4 searches: c0 used in all of them (5/6); c1 in half of them
    # when present (not using it weighs 1 - 3/6), never when absent (1 - 1/6); c2 never.
    assert logs[0] == pytest.approx(np.log(5 / 6) + np.log(3 / 6) + np.log(5 / 6))
    assert logs[1] == pytest.approx(np.log(5 / 6) + np.log(5 / 6) + np.log(5 / 6))
    assert logs[2] == -np.inf   # lacks c0, which the observation proves
    with pytest.raises(ConfigError, match='needs a lapse in'):
        Likelihood.named('usage', 0.24, 0.0, 0.0)
    with pytest.raises(ConfigError, match='exercised_capabilities'):
        UsageLikelihoodModel(Likelihood(0.24, lapse), [Searches(0)])


# -------------------------------------------------------------- the stub domain
PLACES = {'town': ('letter', 'parcel'), 'garden': ('plant',), 'hall': ('keys',),
          'attic': ()}
PARTNER = 'run-parcel=0,go-garden=0'


@pytest.fixture(scope='module')
def model():
    return Errands(places=PLACES)


@pytest.fixture(scope='module')
def planner(model):
    with OptimalErrandsPlanner(model) as shared:
        yield shared


def kernel_by_hand(model, planner, evidence, p, lapse, bandwidth, epsilon=0.24):
    """P(c_i = 1 | evidence) under the kernel likelihood, every live vector weighed by
    hand: 0 if it lacks a capability an observation shows used, else its prior times,
    per task, lapse + (1 - lapse) * (1 within epsilon of its plan, else the shoulder)."""
    live = np.flatnonzero(~model.inert_mask)
    grid = (np.arange(2 ** len(live))[:, None] >> np.arange(len(live))) & 1
    vectors = np.ones((len(grid), len(model.catalog)), dtype=bool)
    vectors[:, live] = grid.astype(bool)
    weights = []
    for vector in vectors:
        weight = float(np.prod(np.where(vector[live], p, 1 - p)))
        for task, observed in evidence:
            if (model.exercised_capabilities(observed) & ~vector).any():
                weight = 0.0
                break
            distance = jaccard_distance(planner.plan(task, vector).trajectory, observed)
            near = 1.0 if distance < epsilon else np.exp(-(distance - epsilon) / bandwidth)
            weight *= lapse + (1 - lapse) * near
        weights.append(weight)
    weights = np.array(weights)
    return weights @ vectors / weights.sum()


def test_weighted_particles_match_the_exact_posterior_under_the_same_likelihood(model,
                                                                                 planner):
    evaluator = SharedPlanEvaluator(planner)
    likelihood = Likelihood(0.24, lapse=0.1, bandwidth=0.05)
    lik_model = LikelihoodModel(likelihood, [evaluator], model.exercised_capabilities)
    truth = model.catalog.resolve(PARTNER)
    tasks = model.task_generator(0).tasks(3)
    # The second task is observed off the partner's plans: a partner who left the keys to
    # the robot there, although the first task shows it can run them (a slip no
    # hypothesis predicts: every vector misses a task).
    other = truth.copy()
    other[model.catalog.index('run-keys')] = False
    evidence = [(tasks[0], planner.plan(tasks[0], truth).trajectory),
                (tasks[1], planner.plan(tasks[1], other).trajectory),
                (tasks[2], planner.plan(tasks[2], truth).trajectory)]
    assert evidence[1][1] != planner.plan(tasks[1], truth).trajectory
    live = ~model.inert_mask
    prior = CapabilityPrior(len(model.catalog), 0.8)
    exact = exact_posterior(prior, live, 0.24, evaluator, evidence, likelihood=lik_model)
    by_hand = kernel_by_hand(model, planner, evidence, 0.8, 0.1, 0.05)
    assert exact[live] == pytest.approx(by_hand[live], abs=1e-9)
    assert ((exact > 0.05) & (exact < 0.95) & live).sum() >= 3   # far from decided
    posterior = WeightedPosterior(prior, live, likelihood, 1500, sweeps=6,
                                  names=model.catalog.names)
    posterior.start(np.random.default_rng(5))
    rng = np.random.default_rng(6)
    for task, observed in evidence:
        posterior.update(task, observed, lik_model, rng)
    assert np.abs(posterior.theta() - exact)[live].max() < 0.06


def test_the_estimator_takes_the_domains_likelihood_and_round_trips(model, planner):
    evaluator = SharedPlanEvaluator(planner)
    settings = EstimatorSettings(samples=200)
    estimator = make_estimator('cecm', model, evaluator, settings, seed=4)
    # The stub declares no likelihood of its own: the estimator's fallbacks.
    assert (estimator.settings.likelihood, estimator.settings.lapse,
            estimator.settings.likelihood_seeds) == ('kernel', 0.05, 1)
    assert type(estimator.likelihood_model) is KernelLikelihoodModel
    truth = model.catalog.resolve(PARTNER)
    for task in model.task_generator(8).tasks(2):
        estimator.update(task, planner.plan(task, truth).trajectory)
    saved = estimator.belief.to_dict()
    again = make_estimator('cecm', model, evaluator, settings,
                           belief=CapabilityBelief.from_dict(saved))
    assert np.array_equal(again.estimate, estimator.estimate)
    assert np.allclose(again.belief.theta, estimator.belief.theta)
    task = model.task_generator(9).next_task()
    observed = planner.plan(task, truth).trajectory
    estimator.update(task, observed)
    again.update(task, observed)
    assert np.allclose(again.belief.theta, estimator.belief.theta)
    assert [r.status for r in again.belief.report] == \
        [r.status for r in estimator.belief.report]


def test_a_domains_likelihood_defaults_fill_in_what_the_settings_leave_open():
    class Slipping(Errands):
        likelihood_defaults = {'likelihood': 'stepwise', 'lapse': 0.1}

    domain = Slipping(places=PLACES)
    with OptimalErrandsPlanner(domain) as planner:
        evaluator = SharedPlanEvaluator(planner)
        taken = make_estimator('cecm', domain, evaluator, EstimatorSettings(samples=20))
        assert (taken.settings.likelihood, taken.settings.lapse) == ('stepwise', 0.1)
        assert type(taken.likelihood_model) is StepwiseLikelihoodModel
        # What the settings give wins; what they leave open is still the domain's.
        given = make_estimator('cecm', domain, evaluator,
                               EstimatorSettings(samples=20, likelihood='kernel'))
        assert (given.settings.likelihood, given.settings.lapse) == ('kernel', 0.1)
        assert type(given.likelihood_model) is KernelLikelihoodModel


def test_a_belief_saved_before_the_graded_likelihood_loads_as_the_indicator(model, planner):
    evaluator = SharedPlanEvaluator(planner)
    old = make_estimator('cecm', model, evaluator,
                         EstimatorSettings(samples=50, likelihood='indicator'), seed=1)
    task = model.task_generator(2).next_task()
    old.update(task, planner.plan(task, model.catalog.resolve(PARTNER)).trajectory)
    saved = old.belief.to_dict()
    for key in ('likelihood', 'lapse', 'bandwidth', 'likelihood_seeds', 'known_mass'):
        saved['settings'].pop(key)
    belief = CapabilityBelief.from_dict(saved)
    assert belief.settings.likelihood == 'indicator'
    assert np.allclose(belief.theta, old.belief.theta)
    assert type(belief.posterior) is not WeightedPosterior


def test_the_stepwise_likelihood_charges_a_slipping_partner_once_per_slip(model, planner):
    lapse = 0.1
    truth = model.catalog.resolve(PARTNER)
    lik_model = StepwiseLikelihoodModel(Likelihood(0.24, lapse), [SharedPlanEvaluator(planner)],
                                        model.exercised_capabilities, model.task_from_state)
    slipped = 0
    for index, task in enumerate(model.task_generator(11).tasks(6)):
        human = SimulatedHuman(planner, truth, seed=index,
                               behaviour=PartnerBehaviour.parse('noisy:0.3'))
        robot = RobotTeammate(planner, model.catalog.all_capable())
        record = run_shared_task(model, task, robot, human)
        assert record.goal_reached
        steps = len(record.trajectory) - 1
        slips = record.partner_deviations
        slipped += slips
        logs = lik_model.log_likelihood(task, truth[None, :], tuple(record.trajectory))
        assert logs[0] == pytest.approx((steps - slips) * np.log1p(-lapse)
                                        + slips * np.log(lapse))
    assert slipped > 0   # the partner did slip somewhere: the rule was exercised


def test_planning_ahead_leaves_the_update_less_to_plan_and_the_same_belief(model):
    """Estimator.plan_ahead with the states so far (as the team works) makes plans the
    update then finds in the planner's memory; the update's belief is the one of an
    update without it. Two planners, so that neither borrows the other's plans."""
    truth = model.catalog.resolve(PARTNER)
    settings = EstimatorSettings(samples=120)
    beliefs, update_plans, ahead_plans = [], [], []
    for ahead in (False, True):
        with OptimalErrandsPlanner(model) as own:
            estimator = make_estimator('cecm', model, SharedPlanEvaluator(own), settings,
                                       seed=2)
            for task in model.task_generator(11).tasks(2):
                with OptimalErrandsPlanner(model) as partner:
                    observed = partner.plan(task, truth).trajectory
                before = own.calls
                if ahead:
                    for count in range(1, len(observed) + 1):
                        estimator.plan_ahead(task, observed[:count])
                ahead_plans.append(own.calls - before)
                before = own.calls
                estimator.update(task, observed)
                update_plans.append(own.calls - before)
            beliefs.append(estimator.belief)
    without, with_ahead = update_plans[:2], update_plans[2:]
    assert ahead_plans[:2] == [0, 0] and min(ahead_plans[2:]) > 0
    assert sum(with_ahead) < sum(without), (update_plans, ahead_plans)
    assert np.allclose(beliefs[0].theta, beliefs[1].theta)
    assert [r.status for r in beliefs[0].report] == [r.status for r in beliefs[1].report]


def test_planning_ahead_names_the_change_tests_fresh_partners_the_update_weighs(
        model, monkeypatch):
    """The change test of the next update weighs fresh partners drawn from the update's
    own stream: planning ahead draws the very same ones (so their plans are made while
    the team works), and drawing them leaves the update's belief as it was."""
    drawn: list[np.ndarray] = []
    real = WeightedPosterior.change_test_draws

    def recorded(self, rng):
        drawn.append(real(self, rng))
        return drawn[-1]

    monkeypatch.setattr(WeightedPosterior, 'change_test_draws', recorded)
    truth = model.catalog.resolve(PARTNER)
    first, second = model.task_generator(11).tasks(2)
    with OptimalErrandsPlanner(model) as partner:
        observed = [partner.plan(task, truth).trajectory for task in (first, second)]
    beliefs = []
    for ahead in (True, False):
        with OptimalErrandsPlanner(model) as own:
            estimator = make_estimator('cecm', model, SharedPlanEvaluator(own),
                                       EstimatorSettings(samples=120), seed=2)
            if ahead:
                estimator.plan_ahead(first, observed[0][:1])
                assert drawn == []          # no change test before a second task
            estimator.update(first, observed[0])
            if ahead:
                estimator.plan_ahead(second, observed[1][:1])
            estimator.update(second, observed[1])
            beliefs.append(estimator.belief)
    # Drawn ahead, drawn by the update with planning ahead, and by the one without.
    assert len(drawn) == 3 and np.array_equal(drawn[0], drawn[1])
    assert np.array_equal(drawn[1], drawn[2]) and len(np.unique(drawn[0], axis=0)) > 1
    assert np.array_equal(beliefs[0].theta, beliefs[1].theta)
    assert [r.status for r in beliefs[0].report] == [r.status for r in beliefs[1].report]


def test_planning_ahead_stops_when_asked(model):
    """A caller whose update is due stops planning ahead between a few plans: asked to
    stop at once, nothing is planned and it says it did not finish."""
    settings = EstimatorSettings(samples=120)
    task = model.task_generator(11).tasks(1)[0]
    with OptimalErrandsPlanner(model) as own:
        estimator = make_estimator('cecm', model, SharedPlanEvaluator(own), settings, seed=2)
        start = (model.initial_state(task),)
        assert estimator.plan_ahead(task, start, stop=lambda: True) is False
        assert own.calls == 0
        asked = []
        assert estimator.plan_ahead(task, start, stop=lambda: asked.append(1) and False)
        assert own.calls > 0 and len(asked) >= 2
