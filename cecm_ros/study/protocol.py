"""A study protocol (YAML): who plays which capability types in which order, on which
tasks, with which assistant, and what they read and answer.

The protocol is the study's design, fixed before the first participant; its hash goes
into every recorded episode so that data from two versions of a design never mix
unnoticed. ``plan_for(participant)`` is the participant's whole schedule: the sets in
their counterbalanced order, each with its seeded tasks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.domain import Domain, Task
from cecm_ros.core.errors import ConfigError, UnsolvableTaskError

KEYS = ('study', 'domain', 'participants', 'types', 'tasks_per_set', 'task_seed', 'order',
        'task_ids', 'assistant', 'instructions', 'consent', 'questionnaire', 'web')
ORDERS = ('latin_square', 'williams', 'fixed')
ASSISTANT_METHODS = ('optimistic', 'pessimistic', 'cecm', 'cecm_div', 'qlearning')
# The assistant's estimator settings a protocol may fix (as `cecm demo` takes them).
ASSISTANT_KEYS = ('samples', 'inference', 'likelihood', 'prior', 'seed')
# The browser side: the panel's port, the study pages' port, the robot's answer window.
WEB_KEYS = ('port', 'study_port', 'correction_window_s')
_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')


@dataclass(frozen=True)
class LikertItem:
    item_id: str
    text: str
    points: int = 7          # a 1..points scale
    low: str = 'disagree'    # what 1 means
    high: str = 'agree'      # what `points` means


@dataclass(frozen=True)
class StudySet:
    """One set of a participant: a capability type played on its tasks, in one session."""

    index: int               # position in the participant's order (0-based)
    partner_type: str
    tasks: tuple[Task, ...]

    @property
    def label(self) -> str:
        return f'set-{self.index + 1}-{self.partner_type}'


@dataclass(frozen=True)
class Protocol:
    name: str
    domain: str
    participants: tuple[str, ...]
    types: tuple[str, ...]
    tasks_per_set: int
    task_seed: int
    order: str
    assistant: dict[str, Any]
    instructions: str
    consent: str
    questionnaire: tuple[LikertItem, ...]
    web: dict[str, Any] = field(default_factory=dict)
    digest: str = ''         # of the file's text: goes into every recorded episode
    path: Path | None = None
    # The tasks a set may draw (a domain with few tasks, by id); () = any the domain has.
    task_ids: tuple[str, ...] = ()

    def participant_index(self, participant: str) -> int:
        try:
            return self.participants.index(participant)
        except ValueError:
            raise ConfigError(f'{self.path or self.name}: no participant {participant!r}; '
                              f'participants: {", ".join(self.participants)}') from None

    def type_order(self, participant: str) -> list[str]:
        """The capability types in the order this participant plays them."""
        row = order_row(self.order, len(self.types), self.participant_index(participant))
        return [self.types[i] for i in row]

    def plan_for(self, participant: str, domain: Domain) -> list[StudySet]:
        """The participant's sets, in their order. The tasks of a set depend on the
        task seed and the set's position, not on the participant: every participant
        meets the same tasks in the same positions, and only the types rotate."""
        sets = []
        for index, partner_type in enumerate(self.type_order(participant)):
            if partner_type not in domain.catalog.partner_types:
                raise ConfigError(f'{self.path or self.name}: type {partner_type!r} is not a '
                                  f'partner type of domain {domain.name!r} '
                                  f'({", ".join(domain.catalog.partner_types)})')
            sets.append(StudySet(index, partner_type, self._set_tasks(domain, index)))
        return sets

    def _set_tasks(self, domain: Domain, index: int) -> tuple[Task, ...]:
        """The tasks of the set at position ``index``: drawn from the domain's seeded
        stream, keeping only ``task_ids`` when the protocol lists them."""
        source = domain.task_generator(self.task_seed + 1000 * index)
        if not self.task_ids:
            return tuple(source.tasks(self.tasks_per_set))
        universe = {task.task_id for task in domain.task_universe() or ()}
        unknown = sorted(set(self.task_ids) - universe)
        if unknown:
            raise ConfigError(f'{self.path or self.name}: task_ids: {", ".join(unknown)} '
                              f'{"is" if len(unknown) == 1 else "are"} no task of domain '
                              f'{domain.name!r}' + (f' (tasks: {", ".join(sorted(universe))})'
                                                    if universe else ' (it lists none)'))
        kept: list[Task] = []
        for _ in range(100 * self.tasks_per_set):
            task = source.next_task()
            if task.task_id in self.task_ids:
                kept.append(task)
                if len(kept) == self.tasks_per_set:
                    break
        return tuple(kept)

    def check_served(self, domain: Domain, planner) -> None:
        """Refuse a protocol that gives a type a task no plan of that type's capabilities
        finishes (it would run to the executor's step limit and be left out of the
        dataset), naming the type and the tasks. Every (position, type) a participant
        can meet is planned once."""
        unserved: dict[str, list[str]] = {}
        for index in range(len(self.types)):
            for task in self._set_tasks(domain, index):
                for partner_type in self.types:
                    truth = domain.catalog.resolve(partner_type)
                    try:
                        plan = planner.plan(task, truth)
                        served = domain.goal_reached(task, plan.trajectory[-1])
                    except UnsolvableTaskError:
                        served = False
                    if not served and task.task_id not in unserved.setdefault(partner_type,
                                                                              []):
                        unserved[partner_type].append(task.task_id)
        unserved = {t: ids for t, ids in unserved.items() if ids}
        if unserved:
            listed = '; '.join(f'{t}: {", ".join(ids)}' for t, ids in unserved.items())
            raise ConfigError(f'{self.path or self.name}: no plan serves these tasks for '
                              f'these types ({listed}); leave them out with task_ids, or '
                              'choose other types')


def order_row(order: str, count: int, participant: int) -> list[int]:
    """Participant ``participant``'s order of ``count`` conditions.

    ``latin_square``: cyclic rows, so every condition takes every position equally often
    over ``count`` participants. ``williams``: a Williams design, which also balances
    which condition follows which (first-order carry-over) over ``count`` participants
    when ``count`` is even and over ``2 * count`` when it is odd. ``fixed``: the listed
    order for everyone.
    """
    if order == 'fixed' or count <= 1:
        return list(range(count))
    if order == 'latin_square':
        return [(participant + i) % count for i in range(count)]
    if order != 'williams':
        raise ConfigError(f'order {order!r}: one of {", ".join(ORDERS)}')
    # The first row alternates from both ends: 0, 1, n-1, 2, n-2, ...; the others add a
    # constant; an odd count also needs every row mirrored.
    first, low, high = [0], 1, count - 1
    while len(first) < count:
        first.append(low)
        low += 1
        if len(first) < count:
            first.append(high)
            high -= 1
    rows = [[(c + shift) % count for c in first] for shift in range(count)]
    if count % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows[participant % len(rows)]


def _text(value: Any, where: str) -> str:
    if value is None:
        return ''
    if not isinstance(value, str):
        raise ConfigError(f'{where}: must be text')
    return value.strip()


def _likert(entries: Any, where: str) -> tuple[LikertItem, ...]:
    if entries in (None, []):
        return ()
    if not isinstance(entries, list):
        raise ConfigError(f'{where}: a list of items ({{id, text, points}})')
    items, seen = [], set()
    for number, entry in enumerate(entries, 1):
        here = f'{where} item {number}'
        if not isinstance(entry, dict) or 'id' not in entry or 'text' not in entry:
            raise ConfigError(f'{here}: needs "id" and "text"')
        unknown = sorted(set(entry) - {'id', 'text', 'points', 'low', 'high'})
        if unknown:
            raise ConfigError(f'{here}: unknown key {", ".join(unknown)}')
        item_id = str(entry['id'])
        if not _ID.match(item_id) or item_id in seen:
            raise ConfigError(f'{here}: id {item_id!r} must be a unique name '
                              '(letters, digits, _ . -)')
        seen.add(item_id)
        points = entry.get('points', 7)
        if not isinstance(points, int) or isinstance(points, bool) or not 2 <= points <= 11:
            raise ConfigError(f'{here}: points must be a whole number from 2 to 11')
        items.append(LikertItem(item_id, _text(entry['text'], here), points,
                                _text(entry.get('low', 'disagree'), here),
                                _text(entry.get('high', 'agree'), here)))
    return tuple(items)


def _participants(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= 10_000:
            raise ConfigError(f'{where}: a count from 1 to 10000, or a list of ids')
        width = len(str(value))
        return tuple(f'P{i:0{max(2, width)}d}' for i in range(1, value + 1))
    if not isinstance(value, list) or not value:
        raise ConfigError(f'{where}: a list of anonymous ids, or a count')
    ids = tuple(str(v) for v in value)
    bad = [i for i in ids if not _ID.match(i)]
    if bad:
        raise ConfigError(f'{where}: {bad[0]!r} is not an id (letters, digits, _ . -; an '
                          'anonymous code, never a name)')
    if len(set(ids)) != len(ids):
        raise ConfigError(f'{where}: an id is listed twice')
    return ids


def load_protocol(path: str | Path) -> Protocol:
    """A protocol file, checked; errors name the file and the entry."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f'cannot read study protocol {path}: {error}') from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f'{path}: not YAML: {error}') from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: a mapping of {", ".join(KEYS)}')
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f'{path}: unknown key {", ".join(unknown)}; known: {", ".join(KEYS)}')
    for key in ('study', 'domain', 'participants', 'types'):
        if key not in data:
            raise ConfigError(f'{path}: "{key}" is missing')
    name = str(data['study'])
    if not _ID.match(name):
        raise ConfigError(f'{path}: study {name!r} must be a name (letters, digits, _ . -)')
    types = data['types']
    if not isinstance(types, list) or not types or len(set(map(str, types))) != len(types):
        raise ConfigError(f'{path}: types must list distinct partner types')
    tasks_per_set = data.get('tasks_per_set', 5)
    if not isinstance(tasks_per_set, int) or isinstance(tasks_per_set, bool) or \
            not 1 <= tasks_per_set <= 100:
        raise ConfigError(f'{path}: tasks_per_set must be a whole number from 1 to 100')
    task_seed = data.get('task_seed', 0)
    if not isinstance(task_seed, int) or isinstance(task_seed, bool) or task_seed < 0:
        raise ConfigError(f'{path}: task_seed must be a whole number >= 0')
    order = str(data.get('order', 'latin_square'))
    if order not in ORDERS:
        raise ConfigError(f'{path}: order {order!r}; one of {", ".join(ORDERS)}')
    assistant = data.get('assistant', {'method': 'optimistic'})
    if not isinstance(assistant, dict) or assistant.get('method') not in ASSISTANT_METHODS:
        raise ConfigError(f'{path}: assistant needs a method: one of '
                          f'{", ".join(ASSISTANT_METHODS)} (the paper\'s study used a fixed '
                          'policy: optimistic)')
    unknown = sorted(set(assistant) - {'method', *ASSISTANT_KEYS})
    if unknown:
        raise ConfigError(f'{path}: assistant: unknown key {", ".join(unknown)}; known: '
                          f'method, {", ".join(ASSISTANT_KEYS)}')
    for key in ('samples', 'seed'):
        if key in assistant and (not isinstance(assistant[key], int) or
                                 isinstance(assistant[key], bool) or assistant[key] < 0):
            raise ConfigError(f'{path}: assistant: {key} must be a whole number >= 0')
    web = data.get('web') or {}
    if not isinstance(web, dict):
        raise ConfigError(f'{path}: web must be a mapping ({", ".join(WEB_KEYS)})')
    unknown = sorted(set(web) - set(WEB_KEYS))
    if unknown:
        raise ConfigError(f'{path}: web: unknown key {", ".join(unknown)}; known: '
                          f'{", ".join(WEB_KEYS)}')
    for key in ('port', 'study_port'):
        if key in web and (not isinstance(web[key], int) or isinstance(web[key], bool) or
                           not 0 <= web[key] <= 65535):
            raise ConfigError(f'{path}: web: {key} must be a port number (0 = any free one)')
    if 'correction_window_s' in web and (
            not isinstance(web['correction_window_s'], (int, float)) or
            isinstance(web['correction_window_s'], bool) or web['correction_window_s'] <= 0):
        raise ConfigError(f'{path}: web: correction_window_s must be a number of seconds > 0')
    task_ids = data.get('task_ids') or []
    if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids) \
            or len(set(task_ids)) != len(task_ids):
        raise ConfigError(f'{path}: task_ids must list distinct task ids')
    if task_ids and len(task_ids) < tasks_per_set:
        raise ConfigError(f'{path}: task_ids lists {len(task_ids)} tasks, fewer than '
                          f'tasks_per_set {tasks_per_set}')
    domain = str(data['domain'])
    if domain.endswith(('.yaml', '.yml')) and not Path(domain).is_absolute():
        domain = str((path.parent / domain).resolve())   # relative to the protocol
    return Protocol(
        name=name, domain=domain,
        participants=_participants(data['participants'], f'{path}: participants'),
        types=tuple(str(t) for t in types), tasks_per_set=tasks_per_set,
        task_seed=task_seed, order=order, assistant=dict(assistant),
        instructions=_text(data.get('instructions'), f'{path}: instructions'),
        consent=_text(data.get('consent'), f'{path}: consent'),
        questionnaire=_likert(data.get('questionnaire'), f'{path}: questionnaire'),
        web=dict(web), digest=hashlib.sha256(text.encode()).hexdigest()[:16], path=path,
        task_ids=tuple(task_ids))
