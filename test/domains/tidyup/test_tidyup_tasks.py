"""TidyUP's seeded task generator (what the core makes of a task stream is tested on the
stub domain in test/core/test_tasks.py)."""

import dataclasses

import pytest

from cecm_ros.domains.tidyup.household import TaskSettings
from cecm_ros.domains.tidyup.model import TidyUpModel, atom
from cecm_ros.domains.tidyup.tasks import TaskGenerator

SEEDS = range(10)
TASKS_PER_SEED = 5



@pytest.fixture(scope='module')
def generated(model):
    return [task for seed in SEEDS for task in TaskGenerator(model, seed).tasks(TASKS_PER_SEED)]


def test_same_seed_gives_the_same_tasks(model):
    first = TaskGenerator(model, seed=42).tasks(6)
    second = TaskGenerator(model, seed=42).tasks(6)
    assert first == second
    assert [t.task_id for t in first] == [f'task-42-{i}' for i in range(1, 7)]


def test_one_at_a_time_equals_a_batch(model):
    generator = TaskGenerator(model, seed=3)
    singles = [generator.next_task() for _ in range(3)]
    assert singles == TaskGenerator(model, seed=3).tasks(3)


def test_different_seeds_give_different_tasks(model):
    keys = {seed: [t.key for t in TaskGenerator(model, seed).tasks(3)] for seed in SEEDS}
    assert len({tuple(k) for k in keys.values()}) == len(SEEDS)
    assert keys[1] != keys[2]


def test_tasks_within_one_sequence_vary(generated):
    assert len({task.key for task in generated}) == len(generated)


def test_every_task_validates(model, generated):
    for task in generated:
        model.validate_task(task)


def test_goal_is_not_already_satisfied(model, generated):
    for task in generated:
        start = model.state_from_atoms(task.initial)
        goal = model.state_from_atoms(task.goal)
        assert start & goal != goal, task.task_id
        assert not task.goal <= task.initial


def test_dirty_items_in_a_goal_must_also_be_cleaned(model, generated):
    dirty_goal_items = 0
    for task in generated:
        for item in model.household.item_names:
            mentioned = any(g.startswith(f'(item-at {item} ') for g in task.goal)
            dirty = atom('dirty', item) in task.initial
            cleaned = atom('clean', item) in task.goal
            assert cleaned == (mentioned and dirty), (task.task_id, item)
            dirty_goal_items += mentioned and dirty
    assert dirty_goal_items > 0  # the sample exercises the rule


def test_goals_respect_the_household(model, generated):
    house = model.household
    low, high = house.task_settings.items_per_task
    for task in generated:
        placed = [g for g in task.goal if g.startswith('(item-at ')]
        assert low <= len(placed) <= high
        for goal in placed:
            _, item, room = goal[1:-1].split()
            assert room in house.item(item).goal_rooms
        assert all(g.startswith(('(item-at ', '(clean ')) for g in task.goal)
        assert atom('dirty', 'blanket') not in task.initial  # not washable
        assert atom('hand-free', 'robot') in task.initial
        assert atom('hand-free', 'human') in task.initial


def test_items_per_task_setting_is_honoured(model):
    house = dataclasses.replace(
        model.household, task_settings=TaskSettings(dirty_probability=1.0,
                                                    items_per_task=(4, 4)))
    custom = TidyUpModel(house, model.catalog)
    for task in TaskGenerator(custom, seed=5).tasks(5):
        assert sum(g.startswith('(item-at ') for g in task.goal) == 4
        assert {atom('dirty', i) for i in ('plate', 'bowl', 'toothbrush')} <= task.initial
        assert {atom('clean', i) for i in ('plate', 'bowl', 'toothbrush')} <= task.goal
