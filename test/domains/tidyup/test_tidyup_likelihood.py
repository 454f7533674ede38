"""The likelihood TidyUP gives the estimator (a PDDL domain's default, the usage
likelihood) on the three-room household, with real Fast Downward plans. The likelihoods
and the weighted posterior are tested on the stub domain in
test/core/test_likelihood.py."""

import numpy as np
import pytest
from core_fixtures import three_room_model

from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import SharedPlanEvaluator
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.tasks import TaskGenerator

PARTNER = 'pick_bedroom=0,place_bathroom=0'


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    return three_room_model(tmp_path_factory.mktemp('house'))


@pytest.fixture(scope='module')
def planner(model):
    with FastDownwardPlanner(model, workers=2) as shared:
        yield shared


def test_the_estimator_takes_the_domains_likelihood_and_round_trips(model, planner):
    evaluator = SharedPlanEvaluator(planner)
    settings = EstimatorSettings(samples=200)
    estimator = make_estimator('cecm', model, evaluator, settings, seed=4)
    assert estimator.settings.likelihood == 'usage'   # a PDDL domain's default
    assert estimator.settings.lapse == 0.05 and estimator.settings.likelihood_seeds == 1
    truth = model.catalog.resolve(PARTNER)
    for task in TaskGenerator(model, 8).tasks(2):
        estimator.update(task, planner.plan(task, truth).trajectory)
    saved = estimator.belief.to_dict()
    again = make_estimator('cecm', model, evaluator, settings,
                           belief=CapabilityBelief.from_dict(saved))
    assert np.array_equal(again.estimate, estimator.estimate)
    assert np.allclose(again.belief.theta, estimator.belief.theta)
    task = TaskGenerator(model, 9).next_task()
    observed = planner.plan(task, truth).trajectory
    estimator.update(task, observed)
    again.update(task, observed)
    assert np.allclose(again.belief.theta, estimator.belief.theta)
    assert [r.status for r in again.belief.report] == \
        [r.status for r in estimator.belief.report]


