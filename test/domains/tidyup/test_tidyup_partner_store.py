"""A TidyUP partner's profile rebuilt from its task log: its states are bitmasks and its
estimator weighs them with the usage likelihood (the store itself is tested on the stub
domain in test/core/test_partner_store.py)."""

import pytest

from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import SharedPlanEvaluator
from cecm_ros.core.partner_store import LogEntry, PartnerStore, rebuild_belief
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.tasks import TaskGenerator


@pytest.fixture(scope='module')
def planner(model):
    with FastDownwardPlanner(model, workers=2) as shared:
        yield shared


@pytest.fixture(scope='module')
def observations(model, planner):
    truth = model.catalog.resolve('high_capability')
    return [(task, planner.plan(task, truth).trajectory)
            for task in TaskGenerator(model, 3).tasks(3)]


def estimator_for(model, planner, belief=None, seed=4):
    return make_estimator('cecm', model, SharedPlanEvaluator(planner),
                          EstimatorSettings(samples=150), seed=seed, belief=belief)


def test_updates_are_logged_and_the_belief_rebuilds_from_the_log(model, planner,
                                                                  observations, tmp_path):
    store = PartnerStore(tmp_path / 'partners.sqlite')
    estimator = estimator_for(model, planner)
    store.save('ada', estimator.belief)
    for index, (task, observed) in enumerate(observations):
        report = estimator.update(task, observed)
        entry = LogEntry('s1', index, task, tuple(observed), {'message': report.message})
        assert store.record_update('ada', estimator.belief, entry)
    assert store.load('ada').to_dict() == estimator.belief.to_dict()
    log = store.log('ada')
    assert [e.task.task_id for e in log] == [t.task_id for t, _ in observations]
    assert log[1].observed == tuple(observations[1][1])
    assert all(isinstance(state, int) for state in log[1].observed)
    rebuilt = rebuild_belief(store.load('ada'), log,
                             lambda fresh: estimator_for(model, planner, belief=fresh))
    assert rebuilt.to_dict() == estimator.belief.to_dict()
    summary = store.partners()[0]
    assert (summary.partner_id, summary.tasks_seen, summary.log_entries) == ('ada', 3, 3)


