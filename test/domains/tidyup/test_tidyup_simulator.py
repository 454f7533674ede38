"""TidyUP's transitions in the world simulator: its preconditions, its sinks and the
reasons its self-loops give (the simulator's own rules are tested on the stub domain in
test/core/test_simulator.py)."""

import pytest
from core_fixtures import make_task

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, Task
from cecm_ros.core.errors import UnknownNameError
from cecm_ros.core.simulator import WorldSimulator
from cecm_ros.domains.tidyup.model import atom


@pytest.fixture
def start(model):
    task = make_task('sim', {atom('item-at', 'plate', 'study')}, robot='kitchen',
                     human='kitchen', items={'blanket': 'study'}, dirty={'plate'})
    return model.state_from_atoms(task.initial)


def world_for(model, start, missing=()):
    return WorldSimulator(model, model.catalog.vector_without(missing), start)


def test_missing_capability_is_a_self_loop_naming_the_capability(model, start):
    world = world_for(model, start, missing=['pick_kitchen'])
    robot, human = world.step(None, '(pick human plate kitchen)')
    assert world.state == start
    assert world.trajectory == [start, start]
    assert human.self_loop and not human.changed
    assert human.action == '(pick human plate kitchen)' and human.agent == HUMAN
    assert human.reason == 'missing capability pick_kitchen'
    assert robot.action == NOOP and not robot.self_loop


def test_same_action_with_the_capability_changes_the_state(model, start):
    world = world_for(model, start, missing=['pick_study'])  # unrelated gap
    _, human = world.step(NOOP, '(pick human plate kitchen)')
    assert human.changed and not human.self_loop and human.reason == ''
    atoms = set(model.atoms_of(world.state))
    assert '(holding human plate)' in atoms
    assert '(item-at plate kitchen)' not in atoms and '(hand-free human)' not in atoms
    assert world.trajectory == [start, world.state] and world.state != start


def test_robot_actions_ignore_the_human_vector(model, start):
    world = WorldSimulator(model, model.catalog.parse_vector('0' * 20), start)
    robot, _ = world.step('(pick robot plate kitchen)', None)
    assert robot.changed
    _, human = world.step(None, '(move human kitchen study)')
    assert human.self_loop and human.reason == 'missing capability move_study'


def test_unmet_precondition_is_a_self_loop_with_a_reason(model, start):
    world = world_for(model, start)
    robot, human = world.step('(pick robot blanket kitchen)', '(place human plate kitchen)')
    assert world.state == start
    assert robot.self_loop and human.self_loop
    assert robot.reason == 'precondition not met: (item-at blanket kitchen)'
    assert human.reason == 'precondition not met: (holding human plate)'


def test_missing_capability_is_reported_before_unmet_preconditions(model, start):
    world = world_for(model, start, missing=['place_study'])
    _, human = world.step(None, '(place human plate study)')
    assert human.reason == 'missing capability place_study'


def test_washing_without_a_sink_is_a_self_loop(model, start):
    world = world_for(model, start)
    world.step('(pick robot plate kitchen)', '(move human kitchen study)')
    world.step('(move robot kitchen study)', None)
    before = world.state
    robot, _ = world.step('(wash robot plate study)', None)
    assert world.state == before and robot.self_loop
    assert 'impossible in this household' in robot.reason


def test_action_of_the_wrong_agent_raises_and_leaves_the_world_alone(model, start):
    world = world_for(model, start)
    with pytest.raises(UnknownNameError, match='human'):
        world.step('(move human kitchen study)', None)
    with pytest.raises(UnknownNameError, match='robot'):
        world.step(None, '(move robot kitchen study)')
    # A valid action next to a bad one is not applied either.
    with pytest.raises(UnknownNameError):
        world.step('(pick robot plate kitchen)', '(pick robot blanket study)')
    assert world.state == start and world.trajectory == [start]
    with pytest.raises(UnknownNameError, match='belongs to robot'):
        model.transition(start, HUMAN, '(move robot kitchen study)',
                         model.catalog.all_capable())


def test_unknown_action_raises_and_leaves_the_world_alone(model, start):
    world = world_for(model, start)
    with pytest.raises(UnknownNameError, match="'teleport'"):
        world.step('(teleport robot study)', None)
    with pytest.raises(UnknownNameError, match="'attic'"):
        world.step(None, '(move human kitchen attic)')
    assert world.state == start and world.trajectory == [start]


def test_human_acts_first_when_both_compete_for_one_item(model, start):
    world = world_for(model, start)
    robot, human = world.step('(pick robot plate kitchen)', '(pick human plate kitchen)')
    assert human.changed and robot.self_loop
    assert robot.reason == 'precondition not met: (item-at plate kitchen)'
    assert '(holding human plate)' in model.atoms_of(world.state)


def test_a_sequence_reaches_a_goal(model, start):
    goal = Task('goal', frozenset(model.atoms_of(start)),
                frozenset({'(item-at plate study)', '(clean plate)'}))
    world = world_for(model, start)
    for human_action in ('(pick human plate kitchen)', '(wash human plate kitchen)',
                         '(move human kitchen study)', '(place human plate study)'):
        assert not world.goal_reached(goal)
        _, outcome = world.step(None, human_action)
        assert outcome.changed, outcome.reason
    assert world.goal_reached(goal)
    assert len(world.trajectory) == 5
    assert model.transition(world.state, ROBOT, None, world.human_capabilities)[0] \
        == world.state
