"""Households from YAML: the default TidyUP home, a custom one, and bad files."""

import numpy as np
import pytest
from core_fixtures import close_planner, household_yaml, replay, write_household

from cecm_ros.core.domain import Task
from cecm_ros.core.errors import CecmError, ConfigError, UnknownNameError
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.domains.tidyup.model import TidyUpModel, atom
from cecm_ros.domains.tidyup.tasks import TaskGenerator

CUSTOM_ITEMS = {
    'mug': {'cost': {'robot': 3, 'human': 1}, 'washable': True, 'goal_rooms': ['kitchen']},
    'towel': {'cost': {'robot': 1, 'human': 2}, 'washable': False,
              'goal_rooms': ['bathroom', 'garage']},
}


def custom_document(**changes):
    document = household_yaml(['kitchen', 'bathroom', 'garage'], ['bathroom'], CUSTOM_ITEMS,
                              name='flat', items_per_task=(1, 2))
    document['household'].update(changes)
    return document


def test_default_household():
    house = Household.from_yaml()
    assert house.name == 'tidyup'
    assert house.rooms == ('kitchen', 'living_room', 'bedroom', 'study', 'bathroom')
    assert house.sinks == ('kitchen',)
    assert house.item_names == ('plate', 'bowl', 'toothbrush', 'blanket')
    assert house.move_cost == {'robot': 1.0, 'human': 1.0}
    costs = {item.name: (item.cost['robot'], item.cost['human']) for item in house.items}
    assert costs == {'plate': (4, 1), 'bowl': (4, 1), 'toothbrush': (2, 1), 'blanket': (1, 1)}
    assert [item.name for item in house.items if item.washable] == ['plate', 'bowl',
                                                                   'toothbrush']
    assert house.item('blanket').goal_rooms == ('bedroom', 'living_room', 'study')
    assert house.task_settings.items_per_task == (4, 4)
    assert house.task_settings.dirty_probability == 0.5


def test_household_lookups_name_the_unknown_token():
    house = Household.from_yaml()
    with pytest.raises(UnknownNameError, match="'spoon'"):
        house.item('spoon')
    with pytest.raises(UnknownNameError, match="'garage'"):
        house.check_room('garage')
    with pytest.raises(UnknownNameError, match="'dog'"):
        house.check_agent('dog')


def test_custom_household_loads(tmp_path):
    house = Household.from_yaml(write_household(tmp_path, custom_document()))
    assert house.name == 'flat'
    assert house.rooms == ('kitchen', 'bathroom', 'garage')
    assert house.sinks == ('bathroom',)
    assert house.item_names == ('mug', 'towel')
    assert house.item('towel').cost == {'robot': 1.0, 'human': 2.0}
    assert not house.item('towel').washable
    assert house.task_settings.items_per_task == (1, 2)


def test_custom_household_plans(tmp_path):
    model = TidyUpModel(Household.from_yaml(write_household(tmp_path, custom_document())))
    assert len(model.propositions) == len(set(model.propositions))
    # Washing is only live at the sink in the bathroom; the garage has no capabilities.
    live = set(model.catalog.names) - set(model.inert_capabilities)
    assert live == {f'{skill}_{room}' for skill in ('move', 'pick', 'place')
                    for room in ('kitchen', 'bathroom')} | {'wash_bathroom'}
    tasks = TaskGenerator(model, seed=3).tasks(2)
    vector = model.catalog.all_capable()
    planner = FastDownwardPlanner(model)
    try:
        for task in tasks:
            plan = planner.plan(task, vector)
            assert plan.steps
            world, outcomes = replay(model, task, plan.steps, vector)
            assert world.goal_reached(task)
            assert not any(o.self_loop for pair in outcomes for o in pair)
        # A mug that needs washing is washed in the bathroom, the only sink.
        dirty_mug = TaskGenerator(model, seed=0)
        task = next(t for t in dirty_mug.tasks(20) if atom('clean', 'mug') in t.goal)
        plan = planner.plan(task, vector)
        washes = [a for a in plan.sequential if a.startswith('(wash')]
        assert washes and all(a.endswith(' bathroom)') for a in washes)
    finally:
        close_planner(planner)


def test_unknown_sink_room_is_named(tmp_path):
    path = write_household(tmp_path, custom_document(sinks=['scullery']))
    with pytest.raises((ConfigError, UnknownNameError), match='scullery'):
        Household.from_yaml(path)


def test_goal_room_unknown_is_named(tmp_path):
    items = {**CUSTOM_ITEMS, 'towel': {**CUSTOM_ITEMS['towel'], 'goal_rooms': ['attic']}}
    path = write_household(tmp_path, custom_document(items=items))
    with pytest.raises((ConfigError, UnknownNameError), match='attic'):
        Household.from_yaml(path)


@pytest.mark.parametrize('cost', [0, -1, 2.5, 21])
def test_cost_outside_whole_numbers_1_to_20_is_rejected(tmp_path, cost):
    items = {**CUSTOM_ITEMS, 'mug': {**CUSTOM_ITEMS['mug'], 'cost': {'robot': cost,
                                                                     'human': 1}}}
    path = write_household(tmp_path, custom_document(items=items))
    with pytest.raises(ConfigError,
                       match=rf"item 'mug'.*'robot' must be a whole number from 1 to 20, "
                             rf"got {cost:g}"):
        Household.from_yaml(path)


def test_move_cost_outside_whole_numbers_is_rejected(tmp_path):
    document = custom_document()
    document['household']['agents']['human']['move_cost'] = 0.5
    path = write_household(tmp_path, document)
    with pytest.raises(ConfigError, match=r"move_cost of 'human' must be a whole number"):
        Household.from_yaml(path)


def test_missing_cost_for_an_agent_is_rejected(tmp_path):
    items = {**CUSTOM_ITEMS, 'mug': {**CUSTOM_ITEMS['mug'], 'cost': {'robot': 2}}}
    path = write_household(tmp_path, custom_document(items=items))
    with pytest.raises(ConfigError, match=r"item 'mug'.*'human'"):
        Household.from_yaml(path)


def test_negative_move_cost_is_rejected(tmp_path):
    document = custom_document()
    document['household']['agents']['robot']['move_cost'] = -1
    with pytest.raises(ConfigError, match='move_cost'):
        Household.from_yaml(write_household(tmp_path, document))


def test_one_item_household_without_task_settings_loads(tmp_path):
    document = household_yaml(['kitchen', 'bathroom'], [], {'mug': CUSTOM_ITEMS['mug']})
    assert 'tasks' not in document
    house = Household.from_yaml(write_household(tmp_path, document))
    assert house.item_names == ('mug',)


def test_missing_file_is_a_config_error(tmp_path):
    missing = tmp_path / 'nowhere.yaml'
    with pytest.raises(ConfigError, match='nowhere.yaml'):
        Household.from_yaml(missing)


def test_malformed_structure_is_a_config_error(tmp_path):
    document = custom_document()
    del document['household']['rooms']
    with pytest.raises(ConfigError, match='malformed household'):
        Household.from_yaml(write_household(tmp_path, document))
    not_yaml = tmp_path / 'broken.yaml'
    not_yaml.write_text('household: [unclosed\n')
    with pytest.raises(ConfigError, match='broken.yaml'):
        Household.from_yaml(not_yaml)


@pytest.mark.parametrize('changes, message', [
    ({'rooms': ['kitchen']}, 'at least two rooms'),
    ({'rooms': ['kitchen', 'bathroom', 'kitchen']}, 'lists a room twice'),
    ({'items': {}}, 'has no items'),
])
def test_structural_problems_are_config_errors(tmp_path, changes, message):
    document = custom_document(**changes)
    document['household']['sinks'] = []
    document.pop('tasks')
    with pytest.raises(CecmError, match=message):
        Household.from_yaml(write_household(tmp_path, document))


def test_items_per_task_must_fit_the_items(tmp_path):
    document = custom_document()
    document['tasks']['items_per_task'] = [1, 3]
    with pytest.raises(ConfigError, match=r'items_per_task .* 1\.\.2'):
        Household.from_yaml(write_household(tmp_path, document))


def test_default_household_costs_reach_the_ground_actions():
    model = TidyUpModel()
    costs = {name: model.action(name).cost for name in (
        '(pick robot plate kitchen)', '(pick human plate kitchen)',
        '(wash robot toothbrush kitchen)', '(wash human toothbrush kitchen)',
        '(place robot blanket bedroom)', '(place human blanket bedroom)',
        '(move robot kitchen study)', '(move human study kitchen)')}
    assert list(costs.values()) == [4, 1, 2, 1, 1, 1, 1, 1]
    assert np.isclose(sum(costs.values()), 12)


# ------------------------------------------------------------------------ doors
@pytest.mark.parametrize('doors, message', [
    ([['kitchen', 'attic']], "unknown room 'attic'"),
    ([['kitchen', 'kitchen']], 'two different rooms'),
    ([['kitchen', 'bathroom']], 'no door leads to garage'),
])
def test_bad_doors_are_named(tmp_path, doors, message):
    with pytest.raises(CecmError, match=message):
        Household.from_yaml(write_household(tmp_path, custom_document(doors=doors)))


def test_without_doors_every_room_opens_onto_every_other():
    house = Household.from_yaml()
    assert house.doors is None
    assert all(house.connected(a, b) for a in house.rooms for b in house.rooms if a != b)
    assert not house.connected('kitchen', 'kitchen')


def test_doors_make_the_partner_walk_through_the_rooms_between(tmp_path):
    """kitchen - bathroom - garage in a row: the human carries the mug from the garage
    through the bathroom, and a missing move capability blocks that route."""
    document = custom_document(doors=[['kitchen', 'bathroom'], ['bathroom', 'garage']])
    model = TidyUpModel(Household.from_yaml(write_household(tmp_path, document)))
    assert model.household.connected('garage', 'bathroom')
    assert not model.household.connected('garage', 'kitchen')
    task = make_task_in(model, human='garage', robot='garage', mug='garage',
                        goal={atom('item-at', 'mug', 'kitchen')})
    planner = FastDownwardPlanner(model)
    try:
        plan = planner.plan(task, model.catalog.all_capable())
        assert '(move human garage bathroom)' in plan.actions_of('human')
        assert '(move human bathroom kitchen)' in plan.actions_of('human')
        for step in plan.steps:
            for action in (step.robot, step.human):
                if action.startswith('(move'):
                    _, _, here, there = action.strip('()').split()
                    assert model.household.connected(here, there)
        world, _ = replay(model, task, plan.steps, model.catalog.all_capable())
        assert world.goal_reached(task)
        # Without move_bathroom the human cannot reach the kitchen: the robot carries it.
        blocked = model.catalog.vector_without(['move_bathroom'])
        assert not planner.plan(task, blocked).actions_of('human')
    finally:
        close_planner(planner)


def make_task_in(model, human, robot, mug, goal):
    initial = {atom('agent-at', 'human', human), atom('agent-at', 'robot', robot),
               atom('hand-free', 'human'), atom('hand-free', 'robot'),
               atom('item-at', 'mug', mug), atom('clean', 'mug'),
               atom('item-at', 'towel', 'bathroom'), atom('clean', 'towel')}
    return Task('doors', frozenset(initial), frozenset(goal))


def test_a_household_may_name_its_capability_catalogue(tmp_path):
    """The household alone is then the whole domain (make demo HOUSEHOLD=...); a
    catalogue given explicitly still wins."""
    from cecm_ros.core.resources import config_path
    from cecm_ros.domains.tidyup.model import make_tidyup

    ten = config_path('households/tidyup_10_rooms.yaml')
    assert Household.from_yaml(ten).capabilities_file == ten.parent / 'capabilities_10_rooms.yaml'
    assert len(make_tidyup(ten).catalog) == 40
    assert len(make_tidyup(ten, config_path('capabilities.yaml')).catalog) == 20
    assert Household.from_yaml().capabilities_file is None
    assert len(make_tidyup().catalog) == 20
    # Relative to the household file, not to the working directory.
    (tmp_path / 'homes').mkdir()
    (tmp_path / 'homes' / 'mine.yaml').write_text(config_path('capabilities.yaml').read_text())
    named = write_household(tmp_path / 'homes', custom_document(capabilities='mine.yaml'))
    assert Household.from_yaml(named).capabilities_file == tmp_path / 'homes' / 'mine.yaml'


@pytest.mark.parametrize('value, message', [
    ('', 'capabilities must name a capability catalogue file'),
    (['a.yaml'], 'capabilities must name a capability catalogue file'),
])
def test_a_catalogue_the_household_names_must_be_a_file_name(tmp_path, value, message):
    with pytest.raises(ConfigError, match=message):
        Household.from_yaml(write_household(tmp_path, custom_document(capabilities=value)))


def test_a_missing_catalogue_the_household_names_is_refused_only_when_used(tmp_path):
    from cecm_ros.core.resources import config_path
    from cecm_ros.domains.tidyup.model import make_tidyup

    named = write_household(tmp_path, custom_document(capabilities='absent.yaml'))
    with pytest.raises(ConfigError, match=r"names the capability catalogue .*absent.yaml, "
                                          'which is not a file'):
        make_tidyup(named)
    # Another catalogue given explicitly: the missing one is never read.
    assert len(make_tidyup(named, config_path('capabilities.yaml')).catalog) == 20
