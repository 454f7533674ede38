"""The world simulator on the stub domain: joint steps, their order and the self-loop rule
(core/simulator.py). What TidyUP's own transitions say (preconditions, sinks, the
reasons they give) is tested in test/domains/tidyup/test_tidyup_simulator.py."""

from __future__ import annotations

import numpy as np
import pytest

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, JointStep, Task
from cecm_ros.core.errors import UnknownNameError
from cecm_ros.core.simulator import SKILL_FAILED, WorldSimulator, predicted_trajectory

# The keys are fetched already; nothing else is done.
START = frozenset({'(done keys)'})


def world_for(domain, missing=(), state=START):
    return WorldSimulator(domain, domain.catalog.vector_without(missing), state)


def test_a_missing_capability_is_a_self_loop_that_spends_the_step(errands):
    domain, _ = errands
    world = world_for(domain, missing=['run-letter'])
    robot, human = world.step(None, '(run human letter)')
    assert world.state == START
    assert world.trajectory == [START, START]
    assert human.self_loop and not human.changed
    assert (human.agent, human.action) == (HUMAN, '(run human letter)')
    assert human.reason == 'the partner cannot'
    assert robot.action == NOOP and not robot.self_loop and not robot.changed


def test_the_same_action_with_the_capability_changes_the_state(errands):
    domain, _ = errands
    world = world_for(domain, missing=['run-parcel'])   # a gap that does not matter here
    _, human = world.step(NOOP, '(run human letter)')
    assert human.changed and not human.self_loop and human.reason == ''
    assert world.state == START | {'(done letter)', '(ran-by-partner letter)'}
    assert world.trajectory == [START, world.state]


def test_robot_actions_ignore_the_partners_vector(errands):
    domain, _ = errands
    world = WorldSimulator(domain, np.zeros(len(domain.catalog), dtype=bool), START)
    robot, _ = world.step('(run robot parcel)', None)
    assert robot.changed and robot.agent == ROBOT
    _, human = world.step(None, '(run human plant)')
    assert human.self_loop and human.reason == 'the partner cannot'
    assert world.trajectory == [START, START | {'(done parcel)'}, START | {'(done parcel)'}]


def test_an_action_that_cannot_apply_is_a_self_loop_with_its_reason(errands):
    domain, _ = errands
    world = world_for(domain)
    robot, human = world.step('(run robot keys)', '(run human keys)')
    assert world.state == START and robot.self_loop and human.self_loop
    assert robot.reason == human.reason == 'already done'
    # A missing capability is what a partner that lacks it is told, done or not.
    lacking = world_for(domain, missing=['run-keys'])
    _, human = lacking.step(None, '(run human keys)')
    assert human.reason == 'the partner cannot'


def test_noop_steps_change_nothing_and_are_recorded(errands):
    domain, _ = errands
    world = world_for(domain)
    for robot_action, human_action in ((None, None), (NOOP, NOOP), (NOOP, None), (None, NOOP)):
        robot, human = world.step(robot_action, human_action)
        assert (robot.action, human.action) == (NOOP, NOOP)
        assert (robot.agent, human.agent) == (ROBOT, HUMAN)
        assert not robot.changed and not robot.self_loop
        assert not human.changed and not human.self_loop
    assert world.trajectory == [START] * 5


def test_an_action_of_the_wrong_agent_raises_and_leaves_the_world_alone(errands):
    domain, _ = errands
    world = world_for(domain)
    # The simulator checks whose each action is before it applies either (its own
    # message, not the domain's transition's).
    with pytest.raises(UnknownNameError,
                       match=r'^action \(run human letter\) is not an action of the robot'):
        world.step('(run human letter)', None)
    with pytest.raises(UnknownNameError,
                       match=r'^action \(run robot letter\) is not an action of the human'):
        world.step(None, '(run robot letter)')
    # A valid action beside a bad one is not applied either.
    with pytest.raises(UnknownNameError, match=r'^action \(run robot parcel\)'):
        world.step('(run robot letter)', '(run robot parcel)')
    with pytest.raises(UnknownNameError, match=r'^action \(run human parcel\)'):
        world.step('(run human parcel)', '(run human letter)')
    assert world.state == START and world.trajectory == [START]
    with pytest.raises(UnknownNameError, match=r'^\(run robot letter\) is not an action of'):
        domain.transition(START, HUMAN, '(run robot letter)', domain.catalog.all_capable())


def test_an_unknown_action_raises_and_leaves_the_world_alone(errands):
    domain, _ = errands
    world = world_for(domain)
    with pytest.raises(UnknownNameError, match="'fly robot letter'"):
        world.step('fly robot letter', None)
    with pytest.raises(UnknownNameError, match='laundry'):
        world.step('(run robot letter)', '(run human laundry)')
    assert world.state == START and world.trajectory == [START]


def test_the_partner_acts_first_when_both_want_the_same_errand(errands):
    domain, _ = errands
    world = world_for(domain)
    robot, human = world.step('(run robot letter)', '(run human letter)')
    assert human.changed and robot.self_loop and robot.reason == 'already done'
    assert '(ran-by-partner letter)' in world.state
    # The same step from the same state resolves the same way every time.
    again = world_for(domain)
    again.step('(run robot letter)', '(run human letter)')
    assert again.trajectory == world.trajectory


def test_a_failed_robot_skill_leaves_only_the_partners_change(errands):
    domain, _ = errands
    world = world_for(domain)
    robot, human = world.step('(run robot parcel)', '(run human letter)', robot_failed=True)
    assert human.changed
    assert (robot.action, robot.changed, robot.reason) == ('(run robot parcel)', False,
                                                           SKILL_FAILED)
    assert world.state == START | {'(done letter)', '(ran-by-partner letter)'}
    robot, _ = world.step(None, None, robot_failed=True)
    assert robot.action == NOOP and robot.reason == SKILL_FAILED


def test_a_sequence_of_steps_reaches_the_goal(errands):
    domain, _ = errands
    task = Task('goal', START, frozenset({'(done letter)', '(done parcel)', '(done plant)'}))
    world = world_for(domain, missing=['run-plant'])
    for robot_action, human_action in (('(run robot plant)', '(run human letter)'),
                                       (NOOP, '(run human parcel)')):
        assert not world.goal_reached(task)
        robot, human = world.step(robot_action, human_action)
        assert human.changed and (robot.changed or robot_action == NOOP)
    assert world.goal_reached(task) and len(world.trajectory) == 3
    assert domain.transition(world.state, ROBOT, None, world.human_capabilities)[0] \
        == world.state


def test_the_trajectory_a_plan_predicts_is_rebuilt_from_its_steps(errands):
    """What an executor does with a plan that came over a message (no states)."""
    domain, planner = errands
    task = domain.task_generator(4).next_task()
    for spec in ('low_capability', 'run-parcel=0', 'all', '0000'):
        vector = domain.catalog.resolve(spec)
        plan = planner.plan(task, vector)
        start = domain.initial_state(task)
        assert predicted_trajectory(domain, start, plan.steps, vector) == plan.trajectory
    # Steps the partner cannot take predict self-loops, not the plan's states.
    steps = (JointStep(NOOP, '(run human parcel)'),)
    lacking = domain.catalog.resolve('run-parcel=0')
    assert predicted_trajectory(domain, START, steps, lacking) == (START, START)
