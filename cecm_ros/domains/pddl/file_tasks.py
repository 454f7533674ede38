"""How a domain file's tasks are made: its PDDL problem files in a seeded order, or
initial-state and goal templates drawn with a seed (docs/domains.md, step 5).

Every fact a template can draw is checked when the domain is loaded, not when a
generator first draws it: a mistake in an option drawn rarely would otherwise end an
experiment in its middle.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cecm_ros.core.domain import Task
from cecm_ros.core.errors import ConfigError, UnknownNameError

from .model import atom, split_atom

if TYPE_CHECKING:
    from .file_domain import FileDomain

TEMPLATE_KEYS = ('fact', 'one_of', 'some_of', 'count', 'for_each')
# How often a generator draws again before it gives up on goals that already hold.
DRAWS = 1000


class ProblemCycle:
    """The domain's problem files in a seeded order, reshuffled after each round."""

    def __init__(self, tasks: Sequence[Task], seed: int):
        self.tasks_pool = list(tasks)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._order: list[int] = []
        self._count = 0

    def next_task(self) -> Task:
        if not self._order:
            self._order = list(self.rng.permutation(len(self.tasks_pool)))
        self._count += 1
        task = self.tasks_pool[self._order.pop(0)]
        return Task(f'{task.task_id}-{self.seed}-{self._count}', task.initial, task.goal)

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]


class TemplateGenerator:
    """Tasks drawn from initial-state and goal templates with ``numpy``'s PCG64.

    An entry of ``initial`` or ``goal`` is a fact, ``{one_of: [facts]}`` (one of them),
    or ``{some_of: [facts], count: [low, high]}`` (that many distinct ones); with
    ``for_each: {name: type}`` the entry is repeated for every object of the type,
    ``{name}`` in its facts replaced by the object. Goals that already hold are drawn
    again.
    """

    def __init__(self, domain: FileDomain, spec: dict, seed: int):
        self.domain = domain
        self.initial = self._entries(spec.get('initial'), 'initial')
        self.goal = self._entries(spec.get('goal'), 'goal')
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self._count = 0

    def _path(self, part: str, number: int | None = None) -> tuple:
        return ('tasks', 'generate', part) + (() if number is None else (number - 1,))

    def _label(self, part: str, number: int) -> str:
        return f'tasks: generate: {part}[{number}]'

    def _fail(self, part: str, number: int, message: str) -> ConfigError:
        return self.domain.entry_error(self._path(part, number),
                                       f'{self._label(part, number)}: {message}')

    def _entries(self, value: Any, part: str) -> list:
        if not isinstance(value, list) or not value:
            raise self.domain.entry_error(self._path(part),
                                          f'tasks: generate: {part}: expected a non-empty '
                                          'list')
        return value

    # ------------------------------------------------------------ checked at load
    def check(self) -> None:
        """Every fact every entry can draw, in every binding of its ``for_each``, is a
        fact of the domain (the refusal names the entry, the arity and the types); and
        every goal fact can be reached from some start the initial entries can draw."""
        starts: set[str] = set()
        for number, entry in enumerate(self.initial, 1):
            starts |= set(self._drawable(entry, 'initial', number))
        reachable = self.domain.reachable(self.domain.state_from_atoms(starts))
        for number, entry in enumerate(self.goal, 1):
            for fact in self._drawable(entry, 'goal', number):
                if not reachable >> self.domain.proposition_index(fact) & 1:
                    raise self._fail('goal', number, f'{fact} can never be reached: no '
                                     'actions of the two agents, with every capability, '
                                     'make it true from any start the initial entries '
                                     'draw')

    def _drawable(self, entry: Any, part: str, number: int) -> Iterator[str]:
        """Every fact the entry can draw."""
        if isinstance(entry, str):
            yield self._fact(entry, part, number)
            return
        entry = self._checked_entry(entry, part, number)
        options = self._options(entry, part, number)
        for bound in self._bindings(entry, part, number):
            for text in options:
                yield self._filled(text, bound, part, number)

    def _checked_entry(self, entry: Any, part: str, number: int) -> dict:
        path = self._path(part, number)
        label = self._label(part, number)
        entry = self.domain.mapping(entry, path, label)
        self.domain.known_keys(entry, TEMPLATE_KEYS, path, label)
        kinds = [k for k in ('fact', 'one_of', 'some_of') if k in entry]
        if len(kinds) != 1:
            raise self._fail(part, number, 'an entry is a fact, one_of, some_of or fact '
                             '(with for_each)' + (f'; it has {" and ".join(kinds)}'
                                                  if kinds else ''))
        if 'count' in entry and 'some_of' not in entry:
            raise self._fail(part, number, 'count goes with some_of')
        if 'some_of' in entry:
            size = len(self._options(entry, part, number))
            count = entry.get('count', [1, size])
            if (not isinstance(count, list) or len(count) != 2
                    or not all(isinstance(c, int) and not isinstance(c, bool) for c in count)
                    or not 0 <= count[0] <= count[1] <= size):
                raise self._fail(part, number, f'count must be [low, high] within 0-{size}, '
                                 f'got {count!r}')
        return entry

    def _options(self, entry: dict, part: str, number: int) -> list[str]:
        if 'fact' in entry:
            if not isinstance(entry['fact'], str):
                raise self._fail(part, number, 'fact: expected a fact, got '
                                 f'{entry["fact"]!r}')
            return [entry['fact']]
        key = 'one_of' if 'one_of' in entry else 'some_of'
        options = self.domain.strings(entry[key], (*self._path(part, number), key),
                                      f'{self._label(part, number)}: {key}')
        if not options:
            raise self._fail(part, number, f'{key}: expected at least one fact')
        return options

    def _bindings(self, entry: dict, part: str, number: int) -> list[dict[str, str]]:
        path = (*self._path(part, number), 'for_each')
        label = f'{self._label(part, number)}: for_each'
        loops = self.domain.mapping(entry.get('for_each', {}), path, label)
        choices = []
        for name, kind in loops.items():
            objects = self.domain.objects_of_kind(str(kind), (*path, name), label)
            choices.append([(str(name), value) for value in objects])
        return [dict(values) for values in itertools.product(*choices)]

    def _filled(self, text: str, bound: dict[str, str], part: str, number: int) -> str:
        try:
            filled = text.format(**bound)
        except (KeyError, IndexError) as error:
            raise self._fail(part, number, f'{text!r} names {error} that for_each does not '
                             'bind') from None
        except ValueError as error:
            raise self._fail(part, number, f'{text!r}: {error}') from None
        return self._fact(filled, part, number)

    def _fact(self, text: str, part: str, number: int) -> str:
        try:
            parts = split_atom(text)
        except UnknownNameError as error:
            raise self._fail(part, number, str(error)) from None
        fact = atom(*parts)
        if fact not in self.domain.proposition_set:
            raise self._fail(part, number, self.domain.fact_problem(parts, part))
        return fact

    # ------------------------------------------------------------------ drawing
    def _expand(self, entries: list, part: str) -> set[str]:
        facts: set[str] = set()
        for number, entry in enumerate(entries, 1):
            if isinstance(entry, str):
                facts.add(self._fact(entry, part, number))
                continue
            options = self._options(entry, part, number)
            for bound in self._bindings(entry, part, number):
                facts |= {self._filled(text, bound, part, number)
                          for text in self._choose(entry, options)}
        return facts

    def _choose(self, entry: dict, options: list[str]) -> list[str]:
        if 'one_of' in entry:
            return [options[int(self.rng.integers(len(options)))]]
        if 'some_of' in entry:
            low, high = entry.get('count', [1, len(options)])
            size = int(self.rng.integers(low, high + 1))
            picked = self.rng.choice(len(options), size=size, replace=False)
            return [options[int(i)] for i in sorted(picked)]
        return options

    def next_task(self) -> Task:
        self._count += 1
        for _ in range(DRAWS):
            initial = self._expand(self.initial, 'initial')
            goal = self._expand(self.goal, 'goal')
            if goal and not goal <= initial:
                task = Task(f'task-{self.seed}-{self._count}', frozenset(initial),
                            frozenset(goal))
                self.domain.validate_task(task)
                return task
        raise self.domain.entry_error(('tasks', 'generate'), f'tasks: generate: {DRAWS} '
                                      'draws gave only goals that already hold')

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]
