"""A household: rooms, sinks, items and what handling each item costs each agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cecm_ros.core.domain import AGENTS, HUMAN, ROBOT
from cecm_ros.core.errors import CecmError, ConfigError, UnknownNameError
from cecm_ros.core.resources import config_path

DEFAULT_HOUSEHOLD = 'tidyup_household.yaml'
__all__ = ['AGENTS', 'HUMAN', 'ROBOT', 'Household', 'Item', 'TaskSettings', 'DEFAULT_HOUSEHOLD',
           'PLAN_HEURISTICS', 'PLAN_ROOMS']
# What the planner's problem for a task covers: every room, or only those the task
# involves (TidyUpModel.task_rooms).
PLAN_ROOMS = ('all', 'task')
# The admissible heuristic of the planner's optimal search (TidyUpModel.optimal_search).
PLAN_HEURISTICS = ('cegar', 'pdb')
# Costs are whole numbers (Fast Downward's are integers) and small enough that the
# planner's tie-breaking encoding of them (cecm_ros.domains.tidyup.model) cannot overflow.
MAX_ACTION_COST = 20


def _check_cost(cost: float, what: str) -> None:
    if not (float(cost).is_integer() and 1 <= cost <= MAX_ACTION_COST):
        raise ConfigError(f'{what} must be a whole number from 1 to {MAX_ACTION_COST}, '
                          f'got {cost:g}')


@dataclass(frozen=True)
class Item:
    name: str
    cost: dict[str, float]
    washable: bool
    goal_rooms: tuple[str, ...]


@dataclass(frozen=True)
class TaskSettings:
    dirty_probability: float = 0.5
    items_per_task: tuple[int, int] = (2, 4)


@dataclass(frozen=True)
class Household:
    name: str
    rooms: tuple[str, ...]
    sinks: tuple[str, ...]
    move_cost: dict[str, float]
    items: tuple[Item, ...]
    task_settings: TaskSettings = field(default_factory=TaskSettings)
    # Pairs of rooms joined by a door (both ways); None: every room opens onto every other.
    doors: tuple[tuple[str, str], ...] | None = None
    # 'task': plan each task over the rooms it involves (see TidyUpModel.task_rooms).
    plan_rooms: str = 'all'
    # 'pdb': canonical pattern databases instead of CEGAR (TidyUpModel.optimal_search).
    plan_heuristic: str = 'cegar'
    # The capability catalogue written for this household (its file's ``capabilities``,
    # relative to it): used when no catalogue is given, so that the household alone
    # names a whole domain.
    capabilities_file: Path | None = None

    def __post_init__(self):
        if len(self.rooms) < 2:
            raise ConfigError(f'household {self.name!r} needs at least two rooms')
        if len(set(self.rooms)) != len(self.rooms):
            raise ConfigError(f'household {self.name!r} lists a room twice: {self.rooms}')
        for sink in self.sinks:
            self.check_room(sink)
        if not self.items:
            raise ConfigError(f'household {self.name!r} has no items')
        for agent in AGENTS:
            if agent not in self.move_cost:
                raise ConfigError(f'household {self.name!r}: no move_cost for agent {agent!r}')
            _check_cost(self.move_cost[agent], f'household {self.name!r}: move_cost of {agent!r}')
        for item in self.items:
            for agent in AGENTS:
                cost = item.cost.get(agent)
                if cost is None:
                    raise ConfigError(f'item {item.name!r}: no handling cost for {agent!r}')
                _check_cost(cost, f'item {item.name!r}: handling cost for {agent!r}')
            if not item.goal_rooms:
                raise ConfigError(f'item {item.name!r} has no goal_rooms')
            for room in item.goal_rooms:
                self.check_room(room)
        if self.doors is not None:
            self._check_doors()
        if self.plan_rooms not in PLAN_ROOMS:
            raise ConfigError(f'household {self.name!r}: plan_rooms must be one of '
                              f'{", ".join(PLAN_ROOMS)}, got {self.plan_rooms!r}')
        if self.plan_heuristic not in PLAN_HEURISTICS:
            raise ConfigError(f'household {self.name!r}: plan_heuristic must be one of '
                              f'{", ".join(PLAN_HEURISTICS)}, got {self.plan_heuristic!r}')
        if self.plan_rooms == 'task' and self.doors is not None:
            raise ConfigError(f'household {self.name!r}: plan_rooms: task needs every room '
                              'to open onto every other (a route through doors can lead '
                              'through rooms a task does not involve); remove doors or '
                              'use plan_rooms: all')
        low, high = self.task_settings.items_per_task
        if not 1 <= low <= high <= len(self.items):
            raise ConfigError(
                f'items_per_task {self.task_settings.items_per_task} must lie within '
                f'1..{len(self.items)}')

    def _check_doors(self) -> None:
        for door in self.doors or ():
            if len(door) != 2 or door[0] == door[1]:
                raise ConfigError(f'household {self.name!r}: a door joins two different '
                                  f'rooms, got {list(door)}')
            for room in door:
                self.check_room(room)
        reached, frontier = {self.rooms[0]}, [self.rooms[0]]
        while frontier:
            here = frontier.pop()
            for room in self.rooms:
                if room not in reached and self.connected(here, room):
                    reached.add(room)
                    frontier.append(room)
        if len(reached) < len(self.rooms):
            cut_off = [room for room in self.rooms if room not in reached]
            raise ConfigError(f'household {self.name!r}: no door leads to '
                              f'{", ".join(cut_off)} from {self.rooms[0]}')

    def connected(self, here: str, there: str) -> bool:
        """Whether one move goes from ``here`` into ``there``."""
        if here == there:
            return False
        if self.doors is None:
            return True
        return (here, there) in self.doors or (there, here) in self.doors

    @property
    def item_names(self) -> tuple[str, ...]:
        return tuple(item.name for item in self.items)

    def item(self, name: str) -> Item:
        for item in self.items:
            if item.name == name:
                return item
        raise UnknownNameError(
            f'unknown item {name!r}; items in {self.name!r}: {", ".join(self.item_names)}')

    def check_room(self, room: str) -> str:
        if room not in self.rooms:
            raise UnknownNameError(
                f'unknown room {room!r}; rooms in {self.name!r}: {", ".join(self.rooms)}')
        return room

    def check_agent(self, agent: str) -> str:
        if agent not in AGENTS:
            raise UnknownNameError(f'unknown agent {agent!r}; agents: {", ".join(AGENTS)}')
        return agent

    @classmethod
    def from_yaml(cls, path: str | Path | None = None) -> Household:
        path = Path(path) if path else config_path(DEFAULT_HOUSEHOLD)
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f'cannot read household file {path}: {error}') from error
        try:
            spec = data['household']
            items = tuple(
                Item(name=str(name), cost={k: float(v) for k, v in entry['cost'].items()},
                     washable=bool(entry.get('washable', False)),
                     goal_rooms=tuple(entry['goal_rooms']))
                for name, entry in spec['items'].items())
            tasks = data.get('tasks') or {}
            settings = TaskSettings(
                dirty_probability=float(tasks.get('dirty_probability', 0.5)),
                items_per_task=tuple(tasks.get('items_per_task',
                                               (min(2, len(items)), len(items)))))
            doors = spec.get('doors')
            if doors is not None:
                doors = tuple(tuple(str(room) for room in door) for door in doors)
            return cls(
                name=str(spec.get('name', path.stem)), rooms=tuple(spec['rooms']),
                doors=doors,
                sinks=tuple(spec.get('sinks', ())),
                move_cost={a: float(spec['agents'][a]['move_cost']) for a in AGENTS},
                items=items, task_settings=settings,
                plan_rooms=str(spec.get('plan_rooms', 'all')),
                plan_heuristic=str(spec.get('plan_heuristic', 'cegar')),
                capabilities_file=_beside(path, spec.get('capabilities')))
        except CecmError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ConfigError(f'{path}: malformed household ({error!r})') from error


def _beside(household_file: Path, name) -> Path | None:
    """The household's own capability catalogue, a path relative to its file."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f'{household_file}: capabilities must name a capability catalogue '
                          f'file, got {name!r}')
    path = Path(name).expanduser()
    return path if path.is_absolute() else household_file.parent / path
