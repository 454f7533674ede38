"""The grounded TidyUP model: propositions, ground actions, inert capabilities, tasks
(the domain interface's own parts are tested on the stub domain in
test/core/test_domain_interface.py)."""

import dataclasses

import numpy as np
import pytest
from core_fixtures import make_task

from cecm_ros.core.domain import HUMAN, ROBOT, Task
from cecm_ros.core.errors import ConfigError, UnknownNameError
from cecm_ros.domains.tidyup.model import (
    ACTION_UNIT,
    COST_SCALE,
    MAX_EXACT_PLAN_LENGTH,
    TIE_WEIGHTS,
    TidyUpModel,
    atom,
    split_atom,
)
from cecm_ros.domains.tidyup.tasks import TaskGenerator

WASH_OUTSIDE_KITCHEN = ['wash_living_room', 'wash_bedroom', 'wash_study', 'wash_bathroom']



@pytest.fixture(scope='module')
def bathroom_sink_model(model):
    house = dataclasses.replace(model.household, sinks=('bathroom',))
    return TidyUpModel(house, model.catalog)


def test_inert_capabilities_of_the_default_household(model):
    assert model.inert_capabilities == WASH_OUTSIDE_KITCHEN
    assert model.inert_mask.sum() == 4
    assert model.inert_mask.dtype == bool and model.inert_mask.shape == (20,)


def test_moving_the_sink_changes_the_inert_capabilities(bathroom_sink_model):
    assert bathroom_sink_model.inert_capabilities == [
        'wash_kitchen', 'wash_living_room', 'wash_bedroom', 'wash_study']
    assert not bathroom_sink_model.action('(wash human plate kitchen)').statically_possible
    assert bathroom_sink_model.action('(wash human plate bathroom)').statically_possible


def test_two_sinks_leave_three_inert(model):
    house = dataclasses.replace(model.household, sinks=('kitchen', 'study'))
    assert TidyUpModel(house, model.catalog).inert_capabilities == [
        'wash_living_room', 'wash_bedroom', 'wash_bathroom']


def test_ground_action_counts_and_gates(model):
    # move: 2 agents x 5 x 4 ordered room pairs; pick/place/wash: 2 x 4 items x 5 rooms.
    schemas = [a.schema for a in model.actions]
    assert schemas.count('move') == 40
    assert schemas.count('pick') == schemas.count('place') == schemas.count('wash') == 40
    for action in model.actions:
        if action.agent == ROBOT:
            assert action.gate is None  # the robot is always capable
        else:
            room = action.args[-1]
            assert model.catalog.names[action.gate] == f'{action.schema}_{room}'
    assert all(a.statically_possible == (a.schema != 'wash' or a.args[-1] == 'kitchen')
               for a in model.actions)


def test_ground_action_semantics(model):
    pick = model.action('(pick human plate kitchen)')
    assert (pick.schema, pick.agent, pick.args) == ('pick', HUMAN,
                                                   ('human', 'plate', 'kitchen'))
    assert set(model.atoms_of(pick.pre)) == {'(agent-at human kitchen)',
                                             '(item-at plate kitchen)', '(hand-free human)'}
    assert model.atoms_of(pick.add) == ['(holding human plate)']
    assert set(model.atoms_of(pick.delete)) == {'(item-at plate kitchen)', '(hand-free human)'}
    assert pick.cost == 1
    wash = model.action('(wash robot bowl kitchen)')
    assert set(model.atoms_of(wash.pre)) == {'(agent-at robot kitchen)',
                                             '(holding robot bowl)', '(dirty bowl)'}
    assert model.atoms_of(wash.add) == ['(clean bowl)']
    assert model.atoms_of(wash.delete) == ['(dirty bowl)']
    assert wash.cost == 4


def test_planner_cost_orders_cost_then_length_then_tie_weight(model):
    move = model.action('(move human kitchen study)')
    wash = model.action('(wash robot bowl kitchen)')
    for action in (move, wash):
        weight = action.planner_cost - action.cost * COST_SCALE - ACTION_UNIT
        assert 0 <= weight < TIE_WEIGHTS
    # The longest plan counted exactly still loses to one household cost unit more...
    assert MAX_EXACT_PLAN_LENGTH * (ACTION_UNIT + TIE_WEIGHTS - 1) < COST_SCALE
    # ...and every weight sum to one action more.
    assert MAX_EXACT_PLAN_LENGTH * (TIE_WEIGHTS - 1) < ACTION_UNIT
    text = model.problem_text(TaskGenerator(model, seed=1).next_task())
    assert f'(= (move-cost human kitchen study) {move.planner_cost})' in text
    assert f'(= (handling-cost robot bowl kitchen) {wash.planner_cost})' in text
    weights = {value % ACTION_UNIT for value in model.planner_costs.values()}
    assert len(weights) > 30  # the weights really spread (they are not all alike)


def test_action_lookup_accepts_several_spellings(model):
    canonical = model.action('(move robot kitchen study)')
    assert model.action('move(robot, kitchen, study)') is canonical
    assert model.action('  move robot kitchen study ') is canonical
    assert canonical.name == '(move robot kitchen study)'


@pytest.mark.parametrize('text, token', [
    ('(fly robot kitchen study)', "'fly'"),
    ('(move robot kitchen garage)', "'garage'"),
    ('(pick human spoon kitchen)', "'spoon'"),
    ('(pick dog plate kitchen)', "'dog'"),
])
def test_unknown_names_in_actions_are_named(model, text, token):
    with pytest.raises(UnknownNameError) as error:
        model.action(text)
    assert token in str(error.value)
    assert not str(error.value).startswith('"')  # no KeyError quoting


def test_action_with_wrong_arguments_does_not_exist(model):
    for text in ('(pick robot kitchen)', '(move robot kitchen kitchen)',
                 '(pick robot plate kitchen bathroom)'):
        with pytest.raises(UnknownNameError, match='does not exist'):
            model.action(text)
    with pytest.raises(UnknownNameError, match='empty'):
        model.action('()')


def test_proposition_index_is_stable(model):
    other = TidyUpModel()
    assert other.propositions == model.propositions
    assert len(model.propositions) == 48 == len(set(model.propositions))
    for index, proposition in enumerate(model.propositions):
        assert model.proposition_index(proposition) == index
        assert other.proposition_index(proposition) == index
    # Alternative spellings resolve to the same index.
    index = model.proposition_index('(item-at plate study)')
    assert model.proposition_index('item-at(plate, study)') == index
    assert model.proposition_index('item-at plate study') == index
    # Static facts and capability facts are not propositions of the joint state.
    for text in ('(has-sink kitchen)', '(can-pick human kitchen)', '(item-at plate garage)'):
        with pytest.raises(UnknownNameError, match='unknown proposition'):
            model.proposition_index(text)


def test_state_round_trips(model):
    task = make_task('t', {atom('item-at', 'plate', 'study')}, robot='bedroom',
                     items={'plate': 'bathroom'}, dirty={'bowl'})
    state = model.state_from_atoms(task.initial)
    assert set(model.atoms_of(state)) == set(task.initial)
    vector = model.state_vector(state)
    assert vector.dtype == bool and vector.shape == (48,)
    assert {model.propositions[i] for i in np.flatnonzero(vector)} == set(task.initial)


def test_validate_task_accepts_a_consistent_state(model):
    task = make_task('ok', {atom('item-at', 'plate', 'study')})
    model.validate_task(task)
    held = Task('held', (task.initial - {'(item-at plate kitchen)', '(hand-free human)'})
                | {'(holding human plate)'}, task.goal)
    model.validate_task(held)


def _edit(task, remove=(), add=()):
    return Task('bad', (task.initial - set(remove)) | set(add), task.goal)


@pytest.mark.parametrize('remove, add, message', [
    ((), {'(agent-at robot study)'}, 'robot must be in exactly one room'),
    ({'(agent-at human kitchen)'}, (), 'human must be in exactly one room'),
    ({'(item-at bowl kitchen)'}, (), 'item bowl must be in exactly one place'),
    ((), {'(item-at bowl study)'}, 'item bowl must be in exactly one place'),
    ((), {'(holding robot bowl)'}, 'hold one item or have a free hand'),
    ((), {'(dirty blanket)'}, 'item blanket must be dirty or clean'),
    ({'(clean plate)'}, (), 'item plate must be dirty or clean'),
])
def test_validate_task_rejects_inconsistent_states(model, remove, add, message):
    task = make_task('base', {atom('item-at', 'plate', 'study')})
    with pytest.raises(ConfigError, match=message):
        model.validate_task(_edit(task, remove, add))


def test_validate_task_rejects_empty_and_unknown_goals(model):
    task = make_task('empty', ())
    with pytest.raises(ConfigError, match='empty goal'):
        model.validate_task(task)
    with pytest.raises(UnknownNameError, match='garage'):
        model.validate_task(make_task('g', {'(item-at plate garage)'}))


def test_applicable_actions_of_an_agent_in_a_state(model):
    task = make_task('a', (), robot='kitchen', human='study',
                     items={'plate': 'kitchen', 'bowl': 'study', 'toothbrush': 'kitchen',
                            'blanket': 'bedroom'}, dirty={'plate'})
    state = model.state_from_atoms(task.initial)
    robot = model.applicable_actions(state, ROBOT)
    assert set(robot) == {
        '(move robot kitchen living_room)', '(move robot kitchen bedroom)',
        '(move robot kitchen study)', '(move robot kitchen bathroom)',
        '(pick robot plate kitchen)', '(pick robot toothbrush kitchen)'}
    assert len(robot) == len(set(robot))
    assert '(pick human bowl study)' in model.applicable_actions(state, HUMAN)
    # Holding the dirty plate in the kitchen (the sink): place and wash, no pick.
    holding = model.action('(pick robot plate kitchen)').apply(state)
    after = set(model.applicable_actions(holding, ROBOT))
    assert {'(place robot plate kitchen)', '(wash robot plate kitchen)'} <= after
    assert not any(name.startswith('(pick robot') for name in after)
    with pytest.raises(UnknownNameError, match='unknown agent'):
        model.applicable_actions(state, 'cat')


def test_human_capable(model):
    vector = model.catalog.vector_without(['pick_kitchen'])
    assert not model.human_capable(model.action('(pick human plate kitchen)'), vector)
    assert model.human_capable(model.action('(pick human plate study)'), vector)
    assert model.human_capable(model.action('(pick robot plate kitchen)'), vector)


def test_split_atom():
    assert split_atom('(pick robot plate kitchen)') == ('pick', 'robot', 'plate', 'kitchen')
    assert split_atom('pick(robot, plate, kitchen)') == ('pick', 'robot', 'plate', 'kitchen')
    assert atom('clean', 'plate') == '(clean plate)'


def test_missing_domain_file_is_a_config_error(model, tmp_path):
    with pytest.raises(ConfigError, match='cannot read PDDL domain'):
        TidyUpModel(model.household, model.catalog, tmp_path / 'none.pddl')
