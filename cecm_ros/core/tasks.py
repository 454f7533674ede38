"""A seeded generator of TidyUP start states and goals."""

from __future__ import annotations

import numpy as np

from .domain import AGENTS, Task, TidyUpModel, atom

# Informative task choice draws its extra candidates from a second generator whose seed
# is the run's plus this, so that the given sequence stays the same with either choice.
CANDIDATE_SEED_OFFSET = 50_000_017


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


def heldout_seed(seed: int) -> int:
    """The seed of the held-out pool of an experiment or session with seed ``seed``:
    far from every run's own task seed."""
    return 2**31 - 1 - seed


def candidate_generator(model: TidyUpModel, seed: int) -> TaskGenerator:
    """The generator of the extra candidates of a run with seed ``seed``."""
    return TaskGenerator(model, seed + CANDIDATE_SEED_OFFSET)


class TaskSequence:
    """The tasks of a session or run, given in order or offered as candidates.

    ``offer()`` returns the next candidates; the first is always the task the given
    order runs next, so choosing among them never changes what the given order runs.
    With a generator the other ``candidates - 1`` come from :func:`candidate_generator`;
    with a list the candidates are the next remaining tasks of the list, and every task
    of the list is run once. ``take(i)`` then consumes candidate ``i``.
    """

    def __init__(self, model: TidyUpModel, seed: int, count: int | None = None,
                 tasks: list[Task] | None = None, candidates: int = 1):
        if candidates < 1:
            raise ValueError(f'candidates must be at least 1, got {candidates}')
        if (count is None) == (tasks is None):
            raise ValueError('give either a count of generated tasks or a list of tasks')
        self.remaining = list(tasks) if tasks is not None else None
        self.count = len(tasks) if tasks is not None else int(count)
        self.generator = TaskGenerator(model, seed)
        self.spare = candidate_generator(model, seed)
        self.candidates = candidates
        self._offered: list[Task] | None = None

    def __len__(self) -> int:
        return self.count

    def offer(self) -> list[Task]:
        if self._offered is None:
            if self.remaining is not None:
                self._offered = self.remaining[:self.candidates]
            else:
                self._offered = [self.generator.next_task()] + \
                    self.spare.tasks(self.candidates - 1)
        return list(self._offered)

    def take(self, index: int) -> Task:
        offered = self.offer()
        task = offered[index]
        if self.remaining is not None:
            self.remaining.remove(task)
        self._offered = None
        return task
