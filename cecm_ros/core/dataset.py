"""A study's dataset: episodes of a partner sharing tasks with the robot, as JSON lines.

One row is one episode (a task from its start to its end) with every joint step in it;
docs/study.md, "Dataset", gives the format. Rows are read and written here without ROS
and without a domain; given a :class:`~cecm_ros.core.domain.Domain`, the loader also
decodes every task, state and action through it, so that a dataset of another domain or
household is refused before anything is estimated from it. A malformed row stops the
load with a :class:`ConfigError` naming the file, the line and what is wrong: a dataset
is used whole or not at all.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .domain import HUMAN, NOOP, ROBOT, Domain, Task
from .errors import CecmError, ConfigError
from .storage import write_atomically

DATASET_FORMAT = 'cecm_ros/study_episode/1'
SUFFIX = '.jsonl'
# What a step's stamps may name (seconds since the epoch, when the message was sent).
STAMP_EVENTS = ('intent', 'answer', 'choice', 'state')

_EPISODE_KEYS = {'format', 'participant', 'set', 'episode', 'protocol', 'domain',
                 'domain_options', 'type', 'capabilities', 'task', 'start', 'steps',
                 'goal_reached', 'started', 'finished', 'source', 'notes'}
_OPTIONAL_KEYS = {'protocol', 'domain_options', 'goal_reached', 'started', 'finished',
                  'source', 'notes'}
_STEP_KEYS = {'step', 'intent', 'answered', 'correction', 'robot', 'partner',
              'robot_changed', 'partner_changed', 'state', 'stamps'}
_STATE_KEYS = {'facts', 'features', 'text'}
_SAFE_NAME = re.compile(r'[^A-Za-z0-9_.-]+')


@dataclass(frozen=True)
class WireState:
    """A joint state as the domain describes it: its facts and/or features (what a
    ``TeamState`` carries), or the domain's state text (``StateCodec.state_to_text``)."""

    facts: tuple[str, ...] = ()
    features: tuple[float, ...] = ()
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.text is not None:
            return {'text': self.text}
        data: dict[str, Any] = {'facts': list(self.facts)}
        if self.features:
            data['features'] = list(self.features)
        return data

    @classmethod
    def of(cls, domain: Domain, state) -> WireState:
        """A domain state in the domain's wire form (facts, and features if it has any)."""
        return cls(tuple(domain.state_facts(state)),
                   tuple(float(x) for x in domain.state_features(state)))

    def decode(self, domain: Domain):
        """The domain's state (ConfigError when it is not one of its states)."""
        try:
            state = domain.state_from_text(self.text) if self.text is not None else \
                domain.state_from_wire(list(self.facts), list(self.features))
            domain.check_state(state)
        except ConfigError:
            raise
        except (CecmError, ValueError, TypeError) as error:
            raise ConfigError(str(error)) from None
        return state


@dataclass(frozen=True)
class Step:
    """Joint step ``index`` (from 0): the world went from the state before it to
    ``state``. ``intent`` is the robot action shown to the partner (None: none shown);
    ``answered`` whether the partner answered it (a confirmation or a correction; silence
    is consent); ``correction`` the robot action the partner asked for instead ('noop':
    wait; None: not corrected). ``robot`` and ``partner`` are the actions executed."""

    index: int
    robot: str
    partner: str
    state: WireState
    intent: str | None = None
    answered: bool = False
    correction: str | None = None
    robot_changed: bool = False
    partner_changed: bool = False
    stamps: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {'step': self.index, 'intent': self.intent, 'answered': self.answered,
                'correction': self.correction, 'robot': self.robot, 'partner': self.partner,
                'robot_changed': self.robot_changed, 'partner_changed': self.partner_changed,
                'state': self.state.to_dict(), 'stamps': dict(self.stamps)}


@dataclass(frozen=True)
class Episode:
    """One task shared with one participant, who had the capabilities ``capabilities``
    (over ``capability_names``; the type ``type_name``) in set ``set_index`` of their
    study, as its ``episode_index``-th task (both from 1)."""

    participant: str
    set_index: int
    episode_index: int
    domain: str
    type_name: str
    capability_names: tuple[str, ...]
    capabilities: tuple[bool, ...]
    task_id: str
    initial: tuple[str, ...]
    goal: tuple[str, ...]
    start: WireState
    steps: tuple[Step, ...]
    protocol: str = ''
    domain_options: Mapping[str, str] = field(default_factory=dict)
    goal_reached: bool = True
    started: float | None = None
    finished: float | None = None
    source: str = ''
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.participant, self.set_index, self.episode_index)

    @property
    def bits(self) -> str:
        return ''.join('1' if b else '0' for b in self.capabilities)

    def task(self) -> Task:
        return Task(self.task_id, frozenset(self.initial), frozenset(self.goal))

    def to_dict(self) -> dict[str, Any]:
        return {'format': DATASET_FORMAT, 'participant': self.participant,
                'set': self.set_index, 'episode': self.episode_index,
                'protocol': self.protocol, 'domain': self.domain,
                'domain_options': dict(self.domain_options), 'type': self.type_name,
                'capabilities': {'names': list(self.capability_names), 'bits': self.bits},
                'task': {'id': self.task_id, 'initial': list(self.initial),
                         'goal': list(self.goal)},
                'start': self.start.to_dict(), 'steps': [s.to_dict() for s in self.steps],
                'goal_reached': self.goal_reached, 'started': self.started,
                'finished': self.finished, 'source': self.source, 'notes': list(self.notes)}

    def to_json(self) -> str:
        """One line of a dataset file (checked: what the loader would refuse is never
        written)."""
        data = self.to_dict()
        episode_from_dict(data, f'episode {self.key}')
        return json.dumps(data, separators=(',', ':'), ensure_ascii=False, allow_nan=False)


# ------------------------------------------------------------------------ reading rows
class _Row:
    """Reads one row's values, naming the row and the field in every error."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, what: str) -> ConfigError:
        return ConfigError(f'{self.where}: {what}')

    def text(self, data: Mapping, key: str, name: str, empty: bool = False) -> str:
        value = data.get(key)
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(f'{name} must be {"a" if empty else "a non-empty"} string, got '
                            f'{value!r}')
        return value

    def index(self, data: Mapping, key: str, name: str, low: int) -> int:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(f'{name} must be a whole number of at least {low}, got {value!r}')
        return value

    def flag(self, data: Mapping, key: str, name: str) -> bool:
        value = data.get(key)
        if not isinstance(value, bool):
            raise self.fail(f'{name} must be true or false, got {value!r}')
        return value

    def texts(self, value: Any, name: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(f'{name} must be a list of strings, got {_short(value)}')
        return tuple(value)

    def number(self, value: Any, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise self.fail(f'{name} must be a finite number, got {value!r}')
        return float(value)

    def stamp(self, value: Any, name: str) -> float | None:
        return None if value is None else self.number(value, f'{name} (or null)')

    def keys(self, data: Any, allowed: set[str], required: set[str], name: str) -> None:
        if not isinstance(data, dict):
            raise self.fail(f'{name} must be a JSON object, got {_short(data)}')
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise self.fail(f'{name}: unknown field {", ".join(map(repr, unknown))} (fields: '
                            f'{", ".join(sorted(allowed))})')
        missing = sorted(required - set(data))
        if missing:
            raise self.fail(f'{name}: missing field {", ".join(map(repr, missing))}')

    def state(self, data: Any, name: str) -> WireState:
        self.keys(data, _STATE_KEYS, set(), name)
        if not data:
            raise self.fail(f'{name} needs "facts" (and "features", as the domain uses '
                            'them) or "text"')
        text = data.get('text')
        if text is not None and not isinstance(text, str):
            raise self.fail(f'{name}: "text" must be a string, got {_short(text)}')
        if text is not None and ('facts' in data or 'features' in data):
            raise self.fail(f'{name}: give "text" or "facts"/"features", not both')
        facts = self.texts(data.get('facts', []), f'{name} facts')
        features = data.get('features', [])
        if not isinstance(features, list):
            raise self.fail(f'{name} features must be a list of numbers, got '
                            f'{_short(features)}')
        numbers = tuple(self.number(x, f'{name} feature {i}') for i, x in enumerate(features))
        return WireState(facts, numbers, text)

    def action(self, value: Any, name: str, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f'{name} must be an action text or "noop"'
                            f'{" (or null)" if optional else ""}, got {value!r}')
        return value


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def episode_from_dict(data: Any, where: str) -> Episode:
    """An episode from its row (JSON already parsed); ConfigError naming ``where``."""
    row = _Row(where)
    if isinstance(data, dict) and data.get('format') != DATASET_FORMAT:
        raise row.fail(f'format {data.get("format")!r}, expected {DATASET_FORMAT!r} (a '
                       'row of another version of the dataset format, or not a dataset row)')
    row.keys(data, _EPISODE_KEYS, _EPISODE_KEYS - _OPTIONAL_KEYS, 'the episode')
    participant = row.text(data, 'participant', 'participant')
    set_index = row.index(data, 'set', 'set', 1)
    episode_index = row.index(data, 'episode', 'episode', 1)
    protocol = row.text(data, 'protocol', 'protocol', empty=True) if 'protocol' in data \
        else ''
    domain = row.text(data, 'domain', 'domain')
    options = data.get('domain_options', {})
    if not isinstance(options, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in options.items()):
        raise row.fail(f'domain_options must map option names to strings, got '
                       f'{_short(options)}')
    type_name = row.text(data, 'type', 'type')
    capabilities = data['capabilities']
    row.keys(capabilities, {'names', 'bits'}, {'names', 'bits'}, 'capabilities')
    names = row.texts(capabilities['names'], 'capabilities names')
    if len(set(names)) != len(names) or not all(n.strip() for n in names):
        raise row.fail('capabilities names must be distinct non-empty names')
    bits = capabilities['bits']
    if not isinstance(bits, str) or len(bits) != len(names) or set(bits) - {'0', '1'}:
        raise row.fail(f'capabilities bits must be {len(names)} digits 0/1 (one per name), '
                       f'got {bits!r}')
    task = data['task']
    row.keys(task, {'id', 'initial', 'goal'}, {'id', 'initial', 'goal'}, 'task')
    task_id = row.text(task, 'id', 'task id')
    initial = row.texts(task['initial'], 'task initial')
    goal = row.texts(task['goal'], 'task goal')
    start = row.state(data['start'], 'start')
    raw_steps = data['steps']
    if not isinstance(raw_steps, list):
        raise row.fail(f'steps must be a list, got {_short(raw_steps)}')
    steps = tuple(_step(row, raw, position) for position, raw in enumerate(raw_steps))
    goal_reached = row.flag(data, 'goal_reached', 'goal_reached') \
        if 'goal_reached' in data else True
    started = row.stamp(data.get('started'), 'started')
    finished = row.stamp(data.get('finished'), 'finished')
    if started is not None and finished is not None and finished < started:
        raise row.fail(f'finished ({finished}) is before started ({started})')
    source = row.text(data, 'source', 'source', empty=True) if 'source' in data else ''
    notes = row.texts(data.get('notes', []), 'notes')
    return Episode(participant, set_index, episode_index, domain, type_name, names,
                   tuple(b == '1' for b in bits), task_id, initial, goal, start, steps,
                   protocol, dict(options), goal_reached, started, finished, source, notes)


def _step(row: _Row, raw: Any, position: int) -> Step:
    name = f'step {position}'
    row.keys(raw, _STEP_KEYS, _STEP_KEYS - {'intent', 'correction', 'stamps'}, name)
    index = row.index(raw, 'step', f'{name}: step', 0)
    if index != position:
        raise row.fail(f'steps must be numbered 0, 1, 2, ... in order; the step at position '
                       f'{position} is numbered {index}')
    intent = row.action(raw.get('intent'), f'{name}: intent', optional=True)
    answered = row.flag(raw, 'answered', f'{name}: answered')
    correction = row.action(raw.get('correction'), f'{name}: correction', optional=True)
    if correction is not None and not answered:
        raise row.fail(f'{name}: a correction is an answer; answered must be true')
    stamps = raw.get('stamps', {})
    if not isinstance(stamps, dict):
        raise row.fail(f'{name}: stamps must be a JSON object, got {_short(stamps)}')
    unknown = sorted(set(stamps) - set(STAMP_EVENTS))
    if unknown:
        raise row.fail(f'{name}: unknown stamp {", ".join(map(repr, unknown))} (stamps: '
                       f'{", ".join(STAMP_EVENTS)})')
    times = {event: row.number(value, f'{name}: stamp {event}') for event, value in
             stamps.items()}
    return Step(index, row.action(raw['robot'], f'{name}: robot') or NOOP,
                row.action(raw['partner'], f'{name}: partner') or NOOP,
                row.state(raw['state'], f'{name}: state'), intent, answered, correction,
                row.flag(raw, 'robot_changed', f'{name}: robot_changed'),
                row.flag(raw, 'partner_changed', f'{name}: partner_changed'),
                times)


# ------------------------------------------------------------------- decoded episodes
@dataclass(frozen=True)
class DecodedEpisode:
    """An episode in its domain's terms: what an estimator is given."""

    task: Task                  # as the estimator sees it: from the observed start
    observed: tuple             # the domain's states s_0 .. s_H
    truth: np.ndarray           # the assigned vector, in the catalogue's order
    start_differs: bool = False   # the observed start is not the task's initial state


def decode_episode(domain: Domain, episode: Episode, where: str) -> DecodedEpisode:
    """Check an episode against ``domain`` and decode it (ConfigError naming ``where``
    and the task, step or name that does not belong to the domain)."""
    row = _Row(where)
    if episode.domain != domain.name:
        raise row.fail(f'an episode of domain {episode.domain!r}, but the domain given is '
                       f'{domain.name!r}')
    catalog = domain.catalog
    if set(episode.capability_names) != set(catalog.names):
        other = sorted(set(episode.capability_names) ^ set(catalog.names))
        raise row.fail(f'its capabilities are not those of {domain.name!r} (differing: '
                       f'{", ".join(other[:6])}{", ..." if len(other) > 6 else ""})')
    truth = np.zeros(len(catalog), dtype=bool)
    for name, bit in zip(episode.capability_names, episode.capabilities):
        truth[catalog.index(name)] = bit
    if episode.type_name in catalog.partner_types:
        typed = catalog.partner_vector(episode.type_name)
        if not np.array_equal(typed, truth):
            raise row.fail(f'type {episode.type_name!r} lacks '
                           f'{catalog.describe_missing(typed)}, but its capabilities lack '
                           f'{catalog.describe_missing(truth)}')
    try:
        task = domain.task_from_dict({'id': episode.task_id, 'initial': list(episode.initial),
                                      'goal': list(episode.goal)}, episode.task_id)
    except CecmError as error:
        raise row.fail(f'task {episode.task_id}: {error}') from None
    states = []
    for position, wire in enumerate([episode.start, *(s.state for s in episode.steps)]):
        try:
            states.append(wire.decode(domain))
        except ConfigError as error:
            label = 'start' if position == 0 else f'step {position - 1}: state'
            raise row.fail(f'{label}: {error}') from None
    for step in episode.steps:
        for agent, action, name in ((ROBOT, step.intent, 'intent'),
                                    (ROBOT, step.correction, 'correction'),
                                    (ROBOT, step.robot, 'robot'),
                                    (HUMAN, step.partner, 'partner')):
            if action is None or action == NOOP:
                continue
            try:
                owner = domain.action_agent(domain.canonical_action(action))
            except CecmError as error:
                raise row.fail(f'step {step.index}: {name} {action!r}: {error}') from None
            if owner != agent:
                raise row.fail(f'step {step.index}: {name} {action!r} is an action of the '
                               f'{owner}, not of the {agent}')
    if episode.goal_reached and not domain.goal_reached(task, states[-1]):
        raise row.fail('goal_reached is true, but the goal does not hold in its last state')
    differs = states[0] != domain.initial_state(task)
    seen = replace(domain.task_from_state(task, states[0]), origin=None) if differs else task
    return DecodedEpisode(seen, tuple(states), truth, differs)


# ---------------------------------------------------------------------------- datasets
@dataclass(frozen=True)
class EpisodeSet:
    """The tasks one participant did with one assigned vector, in their order."""

    participant: str
    set_index: int
    type_name: str
    bits: str
    positions: tuple[int, ...]   # indices into Dataset.episodes, by episode index


@dataclass
class Dataset:
    """Every episode of a dataset, where each came from, and (when loaded with a domain)
    each decoded."""

    episodes: list[Episode]
    origins: list[str]                    # 'FILE line N' per episode
    files: list[Path]
    decoded: list[DecodedEpisode] | None = None

    def sets(self) -> list[EpisodeSet]:
        """The sets, by participant (in order of first appearance) and set index."""
        groups: dict[tuple[str, int], list[int]] = {}
        for position, episode in enumerate(self.episodes):
            groups.setdefault((episode.participant, episode.set_index), []).append(position)
        order = list(dict.fromkeys(e.participant for e in self.episodes))
        found = []
        for (participant, set_index), positions in sorted(
                groups.items(), key=lambda item: (order.index(item[0][0]), item[0][1])):
            positions.sort(key=lambda p: self.episodes[p].episode_index)
            first = self.episodes[positions[0]]
            found.append(EpisodeSet(participant, set_index, first.type_name, first.bits,
                                    tuple(positions)))
        return found

    @property
    def participants(self) -> list[str]:
        return list(dict.fromkeys(e.participant for e in self.episodes))


def dataset_files(path: str | Path) -> list[Path]:
    """The files of a dataset: one ``.jsonl`` file, or every ``*.jsonl`` in a folder."""
    path = Path(path).expanduser()
    if path.is_dir():
        files = sorted(path.glob(f'*{SUFFIX}'))
        if not files:
            raise ConfigError(f'{path} holds no dataset file (*{SUFFIX})')
        return files
    if not path.exists():
        raise ConfigError(f'{path}: no such file or folder')
    return [path]


def read_rows(path: Path) -> Iterable[tuple[int, Episode]]:
    """(line number, episode) of every non-blank line of one file."""
    try:
        with open(path, encoding='utf-8') as stream:
            lines = list(stream)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f'cannot read {path}: {error}') from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f'{path} line {number}'
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigError(f'{where}: not JSON ({error.msg} at column {error.colno})') \
                from None
        yield number, episode_from_dict(data, where)


def load_dataset(path: str | Path, domain: Domain | None = None) -> Dataset:
    """Read a dataset (a file or a folder of them) whole; with ``domain``, also decode
    it. Refuses, naming the file and line, a malformed row, an episode given twice, a
    set whose episodes disagree on the participant's capabilities, and a dataset that
    mixes domains or capability catalogues."""
    files = dataset_files(path)
    episodes: list[Episode] = []
    origins: list[str] = []
    seen: dict[tuple[str, int, int], str] = {}
    sets: dict[tuple[str, int], int] = {}
    for file in files:
        for number, episode in read_rows(file):
            where = f'{file} line {number}'
            if episode.key in seen:
                raise ConfigError(f'{where}: participant {episode.participant!r} set '
                                  f'{episode.set_index} episode {episode.episode_index} is '
                                  f'also at {seen[episode.key]}')
            if episodes:
                first, origin = episodes[0], origins[0]
                if episode.domain != first.domain:
                    raise ConfigError(f'{where}: domain {episode.domain!r}, but {origin} is '
                                      f'of {first.domain!r} (one dataset, one domain)')
                if episode.capability_names != first.capability_names:
                    raise ConfigError(f'{where}: its capability names differ from those of '
                                      f'{origin} (one dataset, one catalogue, one order)')
            group = (episode.participant, episode.set_index)
            if group in sets:
                other = episodes[sets[group]]
                if (other.type_name, other.bits) != (episode.type_name, episode.bits):
                    raise ConfigError(
                        f'{where}: set {episode.set_index} of {episode.participant!r} has '
                        f'type {other.type_name!r} ({other.bits}) at {origins[sets[group]]}, '
                        f'but {episode.type_name!r} ({episode.bits}) here: a set is one '
                        'assigned vector')
            else:
                sets[group] = len(episodes)
            seen[episode.key] = where
            episodes.append(episode)
            origins.append(where)
    if not episodes:
        raise ConfigError(f'{path}: the dataset holds no episode')
    dataset = Dataset(episodes, origins, files)
    if domain is not None:
        dataset.decoded = [decode_episode(domain, e, where)
                           for e, where in zip(episodes, origins)]
    return dataset


def participant_file(directory: Path, participant: str) -> Path:
    """``DIR/<participant>.jsonl``, the participant id made safe for a file name."""
    name = _SAFE_NAME.sub('_', participant).strip('._') or 'participant'
    return Path(directory) / f'{name}{SUFFIX}'


def write_dataset(directory: str | Path, episodes: Sequence[Episode],
                  overwrite: bool = False) -> list[Path]:
    """One file per participant (``DIR/<participant>.jsonl``), rows by set and episode,
    each file written whole or not at all. Refuses an episode given twice, and a file
    that exists unless ``overwrite``."""
    directory = Path(directory).expanduser()
    by_file: dict[Path, list[Episode]] = {}
    owners: dict[Path, str] = {}
    keys: set[tuple[str, int, int]] = set()
    for episode in episodes:
        if episode.key in keys:
            raise ConfigError(f'participant {episode.participant!r} set {episode.set_index} '
                              f'episode {episode.episode_index} is given twice')
        keys.add(episode.key)
        path = participant_file(directory, episode.participant)
        if owners.setdefault(path, episode.participant) != episode.participant:
            raise ConfigError(f'participants {owners[path]!r} and {episode.participant!r} '
                              f'would share the file {path.name}; rename one')
        by_file.setdefault(path, []).append(episode)
    if not overwrite:
        existing = [str(p) for p in by_file if p.exists()]
        if existing:
            raise ConfigError(f'{", ".join(existing)} exist already; write to another folder '
                              '(or overwrite)')
    texts = {path: ''.join(e.to_json() + '\n' for e in sorted(rows, key=lambda e: e.key))
             for path, rows in by_file.items()}
    try:
        for path, text in texts.items():
            write_atomically(path, text)
    except OSError as error:
        raise ConfigError(f'cannot write the dataset to {directory}: {error}') from None
    return sorted(texts)
