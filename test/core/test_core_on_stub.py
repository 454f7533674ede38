"""The core on the stub domain (test/stub_domain.py): the algorithm needs nothing of
TidyUP, Overcooked or PDDL. States here are frozensets of atoms, a kind of state no
built-in domain uses, so a core that assumed ints or tuples fails here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cecm_ros.core import metrics
from cecm_ros.core.domain import HUMAN, NOOP, ROBOT
from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.inference import KNOWN_PRESENT
from cecm_ros.core.partners import (
    PartnerBehaviour,
    RobotTeammate,
    SimulatedHuman,
    partner_seed,
    run_shared_task,
)
from cecm_ros.core.task_choice import ROUND, choose_task, information_gain

TRUTH_TYPE = 'low_capability'   # runs the letter errand only


def _team_tasks(domain, planner, estimator, truth, seed: int, count: int,
                behaviour: PartnerBehaviour | None = None):
    """Shared tasks with the robot planning under the estimator's estimate, the partner
    on its own seeded stream, the estimator updated after each."""
    records = []
    for task in domain.task_generator(seed).tasks(count):
        robot = RobotTeammate(planner, estimator.estimate)
        human = SimulatedHuman(planner, truth, seed=partner_seed(seed, task.task_id),
                               behaviour=behaviour)
        record = run_shared_task(domain, task, robot, human)
        assert record.goal_reached
        estimator.update(task, record.trajectory)
        records.append(record)
    return records


@pytest.mark.parametrize('likelihood', ['indicator', 'kernel', 'stepwise'])
def test_the_posterior_learns_the_partner_from_team_work(errands, likelihood):
    domain, planner = errands
    truth = domain.catalog.resolve(TRUTH_TYPE)
    settings = EstimatorSettings(samples=200, likelihood=likelihood)
    estimator = make_estimator('cecm', domain, evaluator_for('cecm', planner), settings,
                               seed=7)
    before = metrics.hamming(estimator.estimate, truth)
    _team_tasks(domain, planner, estimator, truth, seed=3, count=4)
    assert before > 0
    assert metrics.hamming(estimator.estimate, truth) == 0.0
    # What was never shown is not claimed as known, and what was shown is right.
    for index, entry in enumerate(estimator.belief.posterior.report):
        if entry.decided:
            assert (entry.status == KNOWN_PRESENT) == bool(truth[index])


def test_a_belief_over_set_states_saves_and_loads_the_same(errands, tmp_path):
    domain, planner = errands
    truth = domain.catalog.resolve(TRUTH_TYPE)
    settings = EstimatorSettings(samples=100, likelihood='kernel')
    estimator = make_estimator('cecm', domain, evaluator_for('cecm', planner), settings,
                               seed=2)
    _team_tasks(domain, planner, estimator, truth, seed=5, count=2)
    path = tmp_path / 'belief.json'
    estimator.belief.save(path)
    saved = json.loads(path.read_text())
    assert any(isinstance(state, dict) and 'set' in state
               for entry in saved['posterior']['tasks'] for state in entry['observed'])
    loaded = CapabilityBelief.load(path)
    np.testing.assert_allclose(loaded.theta, estimator.belief.theta)
    again = make_estimator('cecm', domain, evaluator_for('cecm', planner), settings,
                           seed=2, belief=loaded)
    task = domain.task_generator(99).next_task()
    observed = planner.plan(task, truth).trajectory
    again.update(task, observed)
    estimator.update(task, observed)
    np.testing.assert_allclose(again.belief.theta, estimator.belief.theta)


def test_cecm_div_compares_against_plan_sets(errands):
    domain, planner = errands
    truth = domain.catalog.resolve(TRUTH_TYPE)
    settings = EstimatorSettings(samples=100, likelihood='kernel')
    evaluator = evaluator_for('cecm_div', planner)
    task = domain.task_generator(1).next_task()
    sets = evaluator.trajectory_sets(task, domain.catalog.all_capable()[None, :])
    assert len(sets[0]) > 1   # the own plan and plans declining a used capability
    estimator = make_estimator('cecm_div', domain, evaluator, settings, seed=4)
    _team_tasks(domain, planner, estimator, truth, seed=3, count=4)
    assert metrics.hamming(estimator.estimate, truth) == 0.0


def test_informative_choice_prefers_a_task_that_separates_the_hypotheses(errands):
    domain, planner = errands
    evaluator = evaluator_for('cecm', planner)
    letter_only = domain.catalog.resolve(TRUTH_TYPE)
    everything = domain.catalog.all_capable()
    vectors = np.array([letter_only, everything])
    weights = np.array([0.5, 0.5])
    tasks = domain.task_generator(0).tasks(6)
    # A goal of the letter alone cannot tell the two apart; one with parcel can.
    letter = next(t for t in tasks if '(done parcel)' in t.goal)
    dull = type(letter)('letter-only', frozenset(), frozenset({'(done letter)'}))
    choice = choose_task([dull, letter], vectors, weights, evaluator, epsilon=0.24)
    assert choice.index == 1
    assert choice.information[1] > choice.information[0] == 0.0


class _CountingEvaluator:
    """An evaluator that records which hypotheses each candidate was planned for."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.asked: dict[str, list[bytes]] = {}
        self.distance = evaluator.distance

    def predicted_trajectories(self, task, vectors):
        self.asked.setdefault(task.task_id, []).extend(v.tobytes() for v in vectors)
        return self.evaluator.predicted_trajectories(task, vectors)


def _ranking_case(domain, count=20):
    rng = np.random.default_rng(3)
    vectors = np.unique(rng.random((60, len(domain.catalog.all_capable()))) < 0.7, axis=0)[:count]
    weights = rng.random(len(vectors)) + 0.01
    return vectors, weights, domain.task_generator(2).tasks(4)


def test_a_ranking_within_its_budget_is_the_whole_ranking(errands):
    domain, planner = errands
    vectors, weights, tasks = _ranking_case(domain)
    evaluator = evaluator_for('cecm', planner)
    whole = choose_task(tasks, vectors, weights, evaluator, epsilon=0.24)
    within = choose_task(tasks, vectors, weights, evaluator, epsilon=0.24, budget_s=3600.0)
    assert within.index == whole.index and not within.cut_short and not whole.cut_short
    assert within.information == pytest.approx(whole.information)
    assert within.hypotheses == whole.hypotheses == len(vectors) > ROUND
    assert within.mass == pytest.approx(1.0)


def test_a_ranking_past_its_budget_scores_every_candidate_on_the_heaviest_hypotheses(errands):
    domain, planner = errands
    vectors, weights, tasks = _ranking_case(domain)
    counting = _CountingEvaluator(evaluator_for('cecm', planner))
    ticks = iter(range(1000))   # a clock past any budget after the first round
    choice = choose_task(tasks, vectors, weights, counting, epsilon=0.24, budget_s=0.5,
                         clock=lambda: float(next(ticks)))
    heaviest = np.argsort(-weights, kind='stable')[:ROUND]
    assert choice.cut_short and choice.hypotheses == ROUND
    assert choice.mass == pytest.approx(weights[heaviest].sum() / weights.sum())
    # One round: the same heaviest hypotheses on every candidate, nothing more.
    expected = sorted(v.tobytes() for v in vectors[heaviest])
    assert {task.task_id: sorted(asked) for task, asked in
            zip(tasks, counting.asked.values())} == {t.task_id: expected for t in tasks}
    # Scored as a whole ranking of just those hypotheses would be.
    alone = information_gain(tasks, vectors[heaviest], weights[heaviest],
                             evaluator_for('cecm', planner), 0.24)
    assert choice.information == pytest.approx(alone)
    assert 'of the belief' in choice.coverage()


def test_a_ranking_budget_must_be_positive(errands):
    domain, planner = errands
    vectors, weights, tasks = _ranking_case(domain)
    with pytest.raises(ValueError, match='budget'):
        choose_task(tasks, vectors, weights, evaluator_for('cecm', planner), 0.24,
                    budget_s=0.0)


def test_a_noisy_partner_finishes_and_its_slips_are_self_loops_or_real_actions(errands):
    domain, planner = errands
    truth = domain.catalog.resolve(TRUTH_TYPE)
    for seed in range(5):
        task = domain.task_generator(seed).next_task()
        robot = RobotTeammate(planner, truth)
        human = SimulatedHuman(planner, truth, seed=partner_seed(seed, task.task_id),
                               behaviour=PartnerBehaviour.parse('noisy:0.5'))
        record = run_shared_task(domain, task, robot, human)
        assert record.goal_reached
        for step in record.steps:
            outcome = step.human
            if outcome.action != NOOP and not domain.partner_capable(outcome.action, truth):
                assert outcome.self_loop


def test_the_metrics_count_what_the_robot_assigned_the_partner_that_it_cannot_do(errands):
    domain, planner = errands
    truth = domain.catalog.resolve(TRUTH_TYPE)
    task = next(t for t in domain.task_generator(0).tasks(10) if len(t.goal) == 3)
    optimistic = planner.plan(task, domain.catalog.all_capable())
    exact = planner.plan(task, truth)
    assert metrics.infeasible_assigned(domain, optimistic, truth) == \
        sum(not domain.partner_capable(a, truth) for a in optimistic.actions_of(HUMAN))
    assert metrics.infeasible_assigned(domain, exact, truth) == 0
    assert metrics.plan_overlap_iou(exact, exact) == 1.0
    assert all(domain.action_agent(a) == ROBOT for a in exact.actions_of(ROBOT))
