"""The world a robot meets (core/world_conditions.py) and the estimator's side of it
(the likelihood's misperception term): seeded noise, failing skills that never count as
evidence about the partner, and a glitch that costs the true vector weight instead of
ruling it out. On the errands stub (every vector enumerable) and on TidyUP and Overcooked
for their own kinds of glitch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cecm_ros.core.domain import Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.inference import KNOWN_PRESENT
from cecm_ros.core.likelihood import Likelihood
from cecm_ros.core.likelihood_usage import UsageLikelihoodModel
from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, partner_seed, run_shared_task
from cecm_ros.core.world_conditions import (
    Perception,
    WorldConditions,
    evidence_trajectory,
)

TASK = Task('errands-glitch', frozenset(), frozenset({'(done letter)', '(done parcel)'}))


def test_world_conditions_name_what_is_wrong():
    with pytest.raises(ConfigError, match='skill_failure must be a probability'):
        WorldConditions(skill_failure=1.5)
    with pytest.raises(ConfigError, match=r"my sweep: unknown keys \['missed'\]"):
        WorldConditions.from_dict({'missed': 0.1}, 'my sweep')
    assert WorldConditions().perfect
    assert 'skill_failure 0.1' in str(WorldConditions(skill_failure=0.1))


def test_perception_is_seeded_by_run_and_task_and_off_sees_the_truth(model):
    task = model.task_generator(0).tasks(1)[0]
    state = model.initial_state(task)
    noisy = WorldConditions(perception_missed=0.2, perception_spurious=0.5)

    def seen(seed, task_id, conditions=noisy):
        perception = Perception(model, conditions, seed, task_id)
        return [perception.see(state) for _ in range(6)]

    assert seen(1, task.task_id) == seen(1, task.task_id)
    assert seen(1, task.task_id) != seen(2, task.task_id)
    assert seen(1, task.task_id) != seen(1, 'another task')
    assert seen(1, task.task_id, WorldConditions()) == [state] * 6
    facts = set(model.state_facts(state))
    for observed in seen(1, task.task_id):
        # What is seen is facts of the domain: true ones kept or missed, false ones added.
        assert set(model.state_facts(observed)) <= set(model.perceivable_facts())
    assert any(set(model.state_facts(s)) - facts for s in seen(1, task.task_id))
    assert any(facts - set(model.state_facts(s)) for s in seen(1, task.task_id))


@pytest.fixture(scope='module')
def overcooked_model():
    from cecm_ros.domains.overcooked.model import make_overcooked

    return make_overcooked()


def test_an_overcooked_glitch_is_a_state_the_kitchen_could_be_in(overcooked_model):
    task = overcooked_model.tasks[0]
    state = overcooked_model.initial_state(task)
    perception = Perception(overcooked_model, WorldConditions(perception_missed=0.5), 3,
                            task.task_id)
    seen = [perception.see(state) for _ in range(20)]
    assert perception.misperceived > 0 and any(s != state for s in seen)
    for observed in seen:
        overcooked_model.check_state(observed)
        assert observed[:2] == state[:2]   # the kitchen and recipe are never misread


def test_the_evidence_leaves_out_a_failed_step_that_changed_nothing():
    a, b, c = 'a', 'b', 'c'
    assert evidence_trajectory([a, a, b, b, c], [True, False, False, False]) == [a, b, b, c]
    # A failed robot step at which something changed is the partner's change: kept.
    assert evidence_trajectory([a, b, c], [True, True]) == [a, b, c]
    with pytest.raises(ConfigError, match='2 step flags for a trajectory of 2 states'):
        evidence_trajectory([a, b], [True, False])


def _errands_team(errands, skill_failure: float, seed: int):
    domain, planner = errands
    truth = domain.catalog.resolve('low_capability')
    estimate = np.ones(len(domain.catalog), dtype=bool)
    records = []
    for task in domain.task_generator(seed).tasks(4):
        robot = RobotTeammate(planner, estimate)
        human = SimulatedHuman(planner, truth, seed=partner_seed(seed, task.task_id))
        records.append(run_shared_task(domain, task, robot, human,
                                       WorldConditions(skill_failure=skill_failure), seed))
    return domain, planner, truth, records


def test_failing_skills_are_seeded_and_the_team_still_finishes(errands):
    *_, records = _errands_team(errands, 0.4, seed=5)
    *_, again = _errands_team(errands, 0.4, seed=5)
    assert [r.trajectory for r in records] == [r.trajectory for r in again]
    assert sum(r.robot_failures for r in records) > 0
    for record in records:
        assert record.goal_reached
        failed = [step for step in record.steps if step.robot_failed]
        assert all(not step.robot.changed and step.robot.reason == 'the skill failed'
                   for step in failed)


def test_a_robot_skill_failure_never_changes_the_belief_about_the_partner(errands):
    """The same task seen with and without a failed robot step in the middle (the robot
    re-tried and nothing else happened then): the same belief, under every likelihood,
    the trajectory-distance one included, which a stutter would otherwise move."""
    domain, planner = errands
    truth = domain.catalog.resolve('low_capability')
    task = domain.task_generator(11).tasks(1)[0]
    plan = planner.plan(task, truth)
    states = list(plan.trajectory)
    with_failure = states[:2] + [states[1]] + states[2:]
    flags = [False] * (len(with_failure) - 1)
    flags[1] = True
    for likelihood in ('kernel', 'stepwise', 'usage'):
        beliefs = []
        for observed in (states, evidence_trajectory(with_failure, flags)):
            estimator = make_estimator('cecm', domain, evaluator_for('cecm', planner),
                                       EstimatorSettings(samples=64, likelihood=likelihood,
                                                         epsilon=0.2), seed=3)
            estimator.update(task, observed)
            beliefs.append(estimator.belief.theta)
        assert np.array_equal(beliefs[0], beliefs[1]), likelihood
    # Kept as a stutter, the failure would have been weighed (why it is left out).
    kept = make_estimator('cecm', domain, evaluator_for('cecm', planner),
                          EstimatorSettings(samples=64, likelihood='kernel', epsilon=0.2),
                          seed=3)
    kept.update(task, with_failure)
    assert not np.array_equal(kept.belief.theta, beliefs[0])


def _glitch_trajectory():
    """The partner runs the letter, the robot the parcel; perception once sees the
    partner run the parcel (an atom that is not there), then sees right again."""
    start = frozenset()
    letter = start | {'(done letter)', '(ran-by-partner letter)'}
    glitch = letter | {'(ran-by-partner parcel)'}
    both = letter | {'(done parcel)'}
    return [start, letter, glitch, both]


def test_a_glitch_that_rules_out_the_true_vector_only_costs_it_weight(errands):
    domain, planner = errands
    truth = domain.catalog.resolve('low_capability')
    parcel = domain.catalog.names.index('run-parcel')
    observed = _glitch_trajectory()
    strict = make_estimator('cecm', domain, evaluator_for('cecm', planner),
                            EstimatorSettings(samples=200, likelihood='usage'), seed=1)
    strict.update(TASK, observed)
    # Taken as true, the glitch proves a capability the partner lacks.
    assert strict.belief.posterior.report[parcel].status == KNOWN_PRESENT
    assert np.isneginf(strict.likelihood_model.log_likelihood(TASK, truth[None],
                                                              observed)).all()
    assert not truth[parcel]
    for rate in (0.05, 0.1):
        tolerant = make_estimator('cecm', domain, evaluator_for('cecm', planner),
                                  EstimatorSettings(samples=200, likelihood='usage',
                                                    misperception=rate), seed=1)
        tolerant.update(TASK, observed)
        posterior = tolerant.belief.posterior
        assert np.isfinite(tolerant.likelihood_model.log_likelihood(TASK, truth[None],
                                                                    observed)).all()
        assert posterior.report[parcel].probability < 1.0
    # One sighting against a glitch rate of 1 in 10 and the prior's 0.8 is not enough
    # to call the capability known.
    assert posterior.report[parcel].status != KNOWN_PRESENT


def _usage_model(planner, domain, rate: float) -> UsageLikelihoodModel:
    return UsageLikelihoodModel(Likelihood.named('usage', 0.24, 0.05, 0.0, misperception=rate),
                                [evaluator_for('cecm', planner)],
                                domain.exercised_capabilities)


@pytest.mark.parametrize('rate', [0.02, 0.1])
def test_the_misperception_term_matches_the_exact_posterior(errands, rate):
    """Every vector of the errands enumerated: a vector's log-likelihood is its usage
    terms plus log(rate / (1 - rate)) per step only a glitch explains for it, and the
    estimator's marginals are those of the exact posterior."""
    domain, planner = errands
    observed = _glitch_trajectory()
    vectors = np.array(list(itertools.product([False, True], repeat=len(domain.catalog))))
    parcel = domain.catalog.names.index('run-parcel')
    letter = domain.catalog.names.index('run-letter')
    glitches = (~vectors[:, [parcel, letter]]).sum(axis=1)
    logs = _usage_model(planner, domain, rate).log_likelihood(TASK, vectors, observed)
    assert np.isfinite(logs).all()
    # Taken as true, the sightings rule out every vector without both; with a rate the
    # others keep the same usage terms and pay the glitches' odds.
    certain = _usage_model(planner, domain, 0.0).log_likelihood(TASK, vectors, observed)
    assert np.array_equal(np.isfinite(certain), glitches == 0)
    assert np.allclose(logs[glitches == 0], certain[glitches == 0])
    other = 0.3 if rate != 0.3 else 0.2
    odds = np.log(rate) - np.log1p(-rate)
    other_logs = _usage_model(planner, domain, other).log_likelihood(TASK, vectors, observed)
    assert np.allclose(logs - glitches * odds,
                       other_logs - glitches * (np.log(other) - np.log1p(-other)))
    prior = np.where(vectors, np.log(0.8), np.log(0.2)).sum(axis=1)
    posterior = np.exp(prior + logs - (prior + logs).max())
    posterior /= posterior.sum()
    estimator = make_estimator('cecm', domain, evaluator_for('cecm', planner),
                               EstimatorSettings(samples=2000, likelihood='usage',
                                                 misperception=rate), seed=2)
    estimator.update(TASK, observed)
    assert np.allclose(estimator.belief.theta, posterior @ vectors, atol=0.03)


def test_a_likelihood_without_a_feasibility_term_refuses_a_misperception_rate():
    with pytest.raises(ConfigError, match='indicator likelihood cannot weigh a glitch'):
        EstimatorSettings(likelihood='indicator', misperception=0.05)
    with pytest.raises(ConfigError, match=r'misperception must lie in \[0, 0.5\)'):
        EstimatorSettings(misperception=0.7)


def test_a_glitch_no_world_can_be_in_is_repaired_from_its_neighbours_and_a_real_visit_stays(
        model):
    """TidyUP's rules of a state (one room per person, a hand free or full): a fact missed
    for one frame comes back, a false one goes; a state the world can be in is kept as
    seen, so a person who passes through a room for one step still did."""
    from cecm_ros.core.world_conditions import repaired

    task = model.task_generator(0).tasks(1)[0]
    everything = model.catalog.resolve('all')
    start = model.initial_state(task)
    human_room = next(f for f in model.state_facts(start) if f.startswith('(agent-at human'))
    rooms = [r for r in model.household.rooms if f'(agent-at human {r})' != human_room]
    here = human_room[1:-1].split()[2]
    through = model.transition(start, 'human', f'(move human {here} {rooms[0]})',
                               everything)[0]
    beyond = model.transition(through, 'human', f'(move human {rooms[0]} {rooms[1]})',
                              everything)[0]
    missed = model.state_from_wire([f for f in model.state_facts(through)
                                    if not f.startswith('(agent-at human')], [])
    states, fixed = repaired(model, task, [start, missed, beyond])
    assert fixed == 0 and states[1] == missed   # the neighbours disagree: nothing to go by
    states, fixed = repaired(model, task, [start, missed, start])
    assert fixed == 1 and states == [start, start, start]
    spurious = model.state_from_wire(model.state_facts(start) + [f'(agent-at human {rooms[1]})'],
                                     [])
    assert repaired(model, task, [start, spurious, through]) == ([start, start, through], 1)
    # A real one-step visit of a room is a state the world can be in: kept.
    assert repaired(model, task, [start, through, beyond]) == ([start, through, beyond], 0)


def _paced_team(errands, low, high, seed, behaviour=None):
    from cecm_ros.core.partners import PartnerBehaviour, SimulatedPartner

    domain, planner = errands
    truth = domain.catalog.resolve('all')
    partner = SimulatedPartner(planner, truth,
                               PartnerBehaviour.parse(behaviour) if behaviour else None,
                               seed=seed)
    records = []
    for task in domain.task_generator(seed).tasks(3):
        robot = RobotTeammate(planner, np.ones(len(domain.catalog), dtype=bool))
        records.append(run_shared_task(
            domain, task, robot, partner.for_task(task.task_id),
            WorldConditions(partner_pace_low=low, partner_pace_high=high), seed))
    partner.close()
    return records


@pytest.mark.parametrize('behaviour', [None, 'greedy'])
def test_a_partner_at_its_own_pace_does_several_things_between_two_robot_steps(errands,
                                                                              behaviour):
    """A fast partner (a third to a half of a robot action per action) finishes several
    of its actions within one robot step; perception reports each change, so the
    evidence has steps only the partner took; the team reaches every goal; the same
    seed draws the same durations."""
    records = _paced_team(errands, 0.3, 0.5, seed=4, behaviour=behaviour)
    again = _paced_team(errands, 0.3, 0.5, seed=4, behaviour=behaviour)
    assert [r.observed for r in records] == [r.observed for r in again]
    assert all(record.goal_reached for record in records)
    assert sum(r.partner_actions for r in records) > sum(len(r.steps) for r in records)
    for record in records:
        observed = record.observed
        assert len(record.change_failed) == len(observed) - 1
        # Perception reports the world when it changes: every observed step is a change.
        assert all(a != b for a, b in zip(observed, observed[1:]))


def test_pace_settings_are_checked():
    with pytest.raises(ConfigError, match='partner_pace_low <= partner_pace_high'):
        WorldConditions(partner_pace_low=2.0, partner_pace_high=0.5)
    assert WorldConditions(partner_pace_low=0.5, partner_pace_high=2.0).paced
