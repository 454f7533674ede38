"""Shared helpers for the tests of the ROS-free core (imported by test/test_core_*.py).

Only plain functions live here; each test module declares its own (module-scoped)
fixtures from them, so nothing here becomes an autouse fixture of other test files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import yaml

from cecm_ros.core.domain import NOOP, ActionOutcome, Task
from cecm_ros.core.simulator import WorldSimulator
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.domains.tidyup.model import TidyUpModel, atom

DEFAULT_ITEMS = ('plate', 'bowl', 'toothbrush', 'blanket')


def make_task(task_id: str, goal: Iterable[str], robot: str = 'kitchen',
              human: str = 'kitchen', items: Mapping[str, str] | None = None,
              dirty: Iterable[str] = (), item_names: Iterable[str] = DEFAULT_ITEMS) -> Task:
    """A consistent start state: both hands free, every item in a room (``items``
    overrides the default kitchen), the ``dirty`` items dirty and the others clean."""
    items = dict(items or {})
    dirty = set(dirty)
    initial = {atom('agent-at', 'robot', robot), atom('agent-at', 'human', human),
               atom('hand-free', 'robot'), atom('hand-free', 'human')}
    for name in item_names:
        initial.add(atom('item-at', name, items.get(name, 'kitchen')))
        initial.add(atom('dirty' if name in dirty else 'clean', name))
    return Task(task_id, frozenset(initial), frozenset(goal))


def household_yaml(rooms: list[str], sinks: list[str], items: Mapping[str, dict],
                   name: str = 'custom', items_per_task: tuple[int, int] | None = None,
                   move_cost: float = 1) -> dict:
    """The YAML document of a household, in the layout of config/tidyup_household.yaml."""
    data = {'household': {
        'name': name, 'rooms': list(rooms), 'sinks': list(sinks),
        'agents': {'robot': {'move_cost': move_cost}, 'human': {'move_cost': move_cost}},
        'items': {key: dict(value) for key, value in items.items()}}}
    if items_per_task is not None:
        data['tasks'] = {'dirty_probability': 0.5, 'items_per_task': list(items_per_task)}
    return data


def write_household(directory: Path, document: dict, filename: str = 'household.yaml') -> Path:
    path = Path(directory) / filename
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def load_model(directory: Path, document: dict) -> TidyUpModel:
    return TidyUpModel(Household.from_yaml(write_household(directory, document)))


def replay(model: TidyUpModel, task: Task, steps, capabilities: np.ndarray
           ) -> tuple[WorldSimulator, list[tuple[ActionOutcome, ActionOutcome]]]:
    """Execute joint steps in the world simulator from the task's start state."""
    world = WorldSimulator(model, capabilities, model.state_from_atoms(task.initial))
    outcomes = [world.step(step.robot, step.human) for step in steps]
    return world, outcomes


def human_actions(steps) -> list[str]:
    return [step.human for step in steps if step.human != NOOP]


def robot_actions(steps) -> list[str]:
    return [step.robot for step in steps if step.robot != NOOP]


def close_planner(planner) -> None:
    """Stop a JointPlanner's worker processes (if this version of the planner has any)."""
    close = getattr(planner, 'close', None)
    if close is not None:
        close()


# A three-room household small enough to enumerate (10 live capabilities: 1024 vectors),
# for the tests that check particles against the exact posterior.
THREE_ROOM_ITEMS = {
    'plate': {'cost': {'robot': 4, 'human': 1}, 'washable': True,
              'goal_rooms': ['kitchen', 'bedroom']},
    'toothbrush': {'cost': {'robot': 2, 'human': 1}, 'washable': True,
                   'goal_rooms': ['bathroom', 'bedroom']},
    'blanket': {'cost': {'robot': 1, 'human': 1}, 'washable': False,
                'goal_rooms': ['bedroom', 'kitchen']},
}


def three_room_model(directory: Path) -> TidyUpModel:
    document = household_yaml(['kitchen', 'bedroom', 'bathroom'], ['kitchen'],
                              THREE_ROOM_ITEMS, name='three_rooms', items_per_task=(3, 3))
    return load_model(directory, document)
