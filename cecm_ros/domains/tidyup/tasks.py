"""A seeded generator of TidyUP start states and goals."""

from __future__ import annotations

import numpy as np

from cecm_ros.core.domain import AGENTS, Task

from .model import TidyUpModel, atom


class TaskGenerator:
    """Draws tasks from a household: items in random rooms, some dirty, goals that
    put a few items in one of their designated rooms and clean what is dirty.

    Every draw comes from ``numpy.random.Generator(PCG64(seed))``; the same seed gives
    the same sequence of tasks.
    """

    def __init__(self, model: TidyUpModel, seed: int):
        self.model = model
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._count = 0

    def next_task(self) -> Task:
        house = self.model.household
        settings = house.task_settings
        rng = self.rng
        self._count += 1
        while True:
            initial = set()
            for agent in AGENTS:
                initial.add(atom('agent-at', agent, str(rng.choice(house.rooms))))
                initial.add(atom('hand-free', agent))
            for item in house.items:
                initial.add(atom('item-at', item.name, str(rng.choice(house.rooms))))
                dirty = item.washable and bool(house.sinks) and \
                    rng.random() < settings.dirty_probability
                initial.add(atom('dirty' if dirty else 'clean', item.name))
            low, high = settings.items_per_task
            count = int(rng.integers(low, high + 1))
            chosen = sorted(rng.choice(len(house.items), size=count, replace=False))
            goal = set()
            for index in chosen:
                item = house.items[index]
                goal.add(atom('item-at', item.name, str(rng.choice(item.goal_rooms))))
                if atom('dirty', item.name) in initial:
                    goal.add(atom('clean', item.name))
            if not goal <= initial:  # skip goals that already hold
                return Task(f'task-{self.seed}-{self._count}', frozenset(initial),
                            frozenset(goal))

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]
