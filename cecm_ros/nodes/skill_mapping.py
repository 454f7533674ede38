"""How a robot's planned actions become goals of the action servers a real robot has.

A skill mapping file (YAML) says, per skill kind, which action server runs it, of which
type, and how its goal is filled from the ground action's arguments; tables hold what
the plan does not (a pose per room, a surface per place). docs/robot.md gives the
format with a Nav2 example. The file's structure, types, fields and references are
checked when it is read, so a typo shows at configuration, naming the entry, not in
the middle of a task; what an action's arguments look up is checked per action.

No rclpy here: action types are loaded by name with importlib, and goals are filled by
attribute, so the mapping is tested without a graph.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.errors import ConfigError

# ${?to}, ${rooms[?to]}, ${rooms[?to].x}, ${feedback.distance_remaining}
REFERENCE = re.compile(r'\$\{([^}]*)\}')
LOOKUP = re.compile(r'^(?:\?(?P<var>[\w-]+)|(?P<table>[A-Za-z_]\w*)\[\?(?P<key>[\w-]+)\]'
                    r'|(?P<source>feedback))(?P<path>(?:\.\w+)*)$')
TYPE_NAME = re.compile(r'^(?P<package>\w+)/action/(?P<name>\w+)$')
FILE_KEYS = {'tables', 'skills'}
SKILL_KEYS = {'match', 'action', 'server', 'goal', 'succeed_if', 'timeout_s', 'feedback'}


@dataclass(frozen=True)
class SkillMapping:
    """One skill kind: the pattern of its actions and the goal of its action server."""

    kind: str
    pattern: tuple[str, ...]          # ('move', 'robot', '?from', '?to')
    action_type: Any                  # the action class, e.g. NavigateToPose
    type_name: str
    server: str
    goal: dict[str, Any]              # dotted field -> value or template
    succeed_if: dict[str, Any] = field(default_factory=dict)   # result field -> value
    timeout_s: float | None = None
    feedback: str = ''                # template of ExecuteSkill's status


@dataclass(frozen=True)
class SkillMap:
    """A mapping file: its skill kinds and its tables."""

    skills: dict[str, SkillMapping]
    tables: dict[str, dict]


def load_action_type(name: str, where: str = 'action') -> Any:
    """``pkg/action/Name`` as a class (the package's Python interfaces must be built)."""
    match = TYPE_NAME.match(str(name))
    if match is None:
        raise ConfigError(f'{where}: {name!r} is no action type; write it as '
                          'package/action/Name (e.g. nav2_msgs/action/NavigateToPose)')
    try:
        module = importlib.import_module(f'{match["package"]}.action')
    except ImportError as error:
        raise ConfigError(f'{where}: action type {name}: package {match["package"]!r} '
                          f'cannot be imported ({error}); is it built and sourced?') from None
    action = getattr(module, match['name'], None)
    if action is None or not hasattr(action, 'Goal'):
        raise ConfigError(f'{where}: package {match["package"]!r} has no action '
                          f'{match["name"]!r}')
    return action


def parse_action(text: str) -> tuple[str, ...]:
    """``(move robot kitchen study)`` -> ('move', 'robot', 'kitchen', 'study')."""
    parts = tuple(text.strip().strip('()').split())
    if not parts:
        raise ConfigError(f'{text!r} is no action')
    return parts


def load_mapping(path: str | Path) -> SkillMap:
    """Every skill kind of the file, checked; ConfigError naming the entry otherwise."""
    path = Path(path).expanduser()
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ConfigError(f'skill mapping {path}: cannot read it: {error.strerror}') from None
    except yaml.YAMLError as error:
        raise ConfigError(f'skill mapping {path}: not YAML: {error}') from None
    if not isinstance(data, dict) or not isinstance(data.get('skills'), dict) \
            or not data['skills']:
        raise ConfigError(f'skill mapping {path}: needs a mapping "skills:" with an entry '
                          'per skill kind')
    _known(data, FILE_KEYS, f'skill mapping {path}')
    tables = data.get('tables') or {}
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise ConfigError(f'skill mapping {path}: tables: each table maps keys to values')
    mappings = {}
    for kind, entry in data['skills'].items():
        where = f'skill mapping {path}: skills.{kind}'
        if not isinstance(entry, dict):
            raise ConfigError(f'{where}: an entry with match, action, server and goal')
        _known(entry, SKILL_KEYS, where)
        missing = [k for k in ('match', 'action', 'server') if not entry.get(k)]
        if missing:
            raise ConfigError(f'{where}: {", ".join(missing)} missing')
        pattern = parse_action(str(entry['match']))
        if pattern[0] != kind:
            raise ConfigError(f'{where}: match {entry["match"]!r} is not a {kind!r} action')
        variables = {p[1:] for p in pattern if p.startswith('?')}
        action_type = load_action_type(entry['action'], f'{where}: action')
        goal = entry.get('goal') or {}
        if not isinstance(goal, dict):
            raise ConfigError(f'{where}: goal maps goal fields (a.b.c) to values')
        for name, value in goal.items():
            _check_value(value, variables, tables, f'{where}: goal.{name}')
            _check_field(action_type.Goal(), str(name), f'{where}: goal')
        succeed_if = entry.get('succeed_if') or {}
        if not isinstance(succeed_if, dict):
            raise ConfigError(f'{where}: succeed_if maps result fields to the values that '
                              'mean success')
        for name in succeed_if:
            _check_field(action_type.Result(), str(name), f'{where}: succeed_if')
        timeout = entry.get('timeout_s')
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ConfigError(f'{where}: timeout_s must be a positive number of seconds')
        template = str(entry.get('feedback') or '')
        _check_value(template, variables, tables, f'{where}: feedback', feedback=True)
        mappings[str(kind)] = SkillMapping(
            str(kind), pattern, action_type, str(entry['action']), str(entry['server']),
            {str(k): v for k, v in goal.items()}, {str(k): v for k, v in succeed_if.items()},
            float(timeout) if timeout is not None else None, template)
    return SkillMap(mappings, tables)


def bind(mapping: SkillMapping, action: str) -> dict[str, str]:
    """The pattern's variables bound to ``action``'s arguments, or ConfigError."""
    parts = parse_action(action)
    if len(parts) != len(mapping.pattern) or any(
            not p.startswith('?') and p != a for p, a in zip(mapping.pattern, parts)):
        raise ConfigError(f'{action} does not match {"(" + " ".join(mapping.pattern) + ")"}')
    return {p[1:]: a for p, a in zip(mapping.pattern, parts) if p.startswith('?')}


def resolve(value: Any, variables: dict[str, str], tables: dict[str, dict],
            sources: dict[str, Any] | None = None) -> Any:
    """A goal value with its references filled in: a string that is one reference keeps
    the referenced value's type (a float stays a float); references inside text are
    written into it."""
    if not isinstance(value, str):
        return value
    whole = REFERENCE.fullmatch(value.strip())
    if whole:
        return _lookup(whole[1], variables, tables, sources or {})
    return REFERENCE.sub(lambda m: str(_lookup(m[1], variables, tables, sources or {})),
                         value)


def build_goal(mapping: SkillMapping, action: str, tables: dict[str, dict]) -> Any:
    """The action server's goal for ``action``; ConfigError naming what does not fit."""
    variables = bind(mapping, action)
    goal = mapping.action_type.Goal()
    for name, value in mapping.goal.items():
        _assign(goal, name, resolve(value, variables, tables), f'{action}: goal.{name}')
    return goal


def succeeded(mapping: SkillMapping, result: Any) -> str:
    """'' when the result means success (succeed_if), else what differs."""
    for name, wanted in mapping.succeed_if.items():
        value = _read(result, name)
        if value != wanted:
            return f'result {name} is {value!r}, not {wanted!r}'
    return ''


def summary(message: Any, limit: int = 6) -> str:
    """``a=1 b=2.5`` of a message's simple top-level fields (a feedback's default)."""
    parts = []
    for name in getattr(message, 'get_fields_and_field_types', dict)():
        value = getattr(message, name)
        if isinstance(value, (bool, int, float, str)):
            parts.append(f'{name}={value:.3g}' if isinstance(value, float) else
                         f'{name}={value}')
    return ' '.join(parts[:limit])


# ---------------------------------------------------------------------------- helpers
def _known(entry: dict, keys: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in entry if k not in keys)
    if unknown:
        raise ConfigError(f'{where}: unknown key {", ".join(unknown)} (known: '
                          f'{", ".join(sorted(keys))})')


def _check_value(value: Any, variables: set[str], tables: dict, where: str,
                 feedback: bool = False) -> None:
    if not isinstance(value, str):
        return
    for reference in REFERENCE.findall(value):
        match = LOOKUP.match(reference.strip())
        if match is None:
            raise ConfigError(f'{where}: ${{{reference}}} is no reference (write ${{?var}}, '
                              '${table[?var]}, ${table[?var].field} or ${feedback.field})')
        if match['var'] and match['var'] not in variables:
            raise ConfigError(f'{where}: ?{match["var"]} is not in the match pattern')
        if match['table']:
            if match['table'] not in tables:
                raise ConfigError(f'{where}: no table {match["table"]!r} (tables: '
                                  f'{", ".join(sorted(tables)) or "none"})')
            if match['key'] not in variables:
                raise ConfigError(f'{where}: ?{match["key"]} is not in the match pattern')
        if match['source'] and not feedback:
            raise ConfigError(f'{where}: ${{{reference}}}: {match["source"]} is not known '
                              'here')


def _lookup(reference: str, variables: dict[str, str], tables: dict[str, dict],
            sources: dict[str, Any]) -> Any:
    match = LOOKUP.match(reference.strip())
    if match is None:
        raise ConfigError(f'${{{reference}}} is no reference')
    if match['var']:
        value: Any = variables[match['var']]
    elif match['table']:
        table, key = tables[match['table']], variables[match['key']]
        if key not in table:
            raise ConfigError(f'table {match["table"]!r} has no entry {key!r}')
        value = table[key]
    else:
        value = sources[match['source']]
    for name in filter(None, match['path'].split('.')):
        if isinstance(value, dict):
            if name not in value:
                raise ConfigError(f'${{{reference}}}: no field {name!r}')
            value = value[name]
        elif hasattr(value, name):
            value = getattr(value, name)
        else:
            raise ConfigError(f'${{{reference}}}: no field {name!r}')
    return value


def _walk(message: Any, dotted: str) -> tuple[Any, str]:
    *parents, last = dotted.split('.')
    for name in parents:
        if not hasattr(message, name):
            raise ConfigError(f'{type(message).__name__} has no field {name!r}')
        message = getattr(message, name)
    if last not in getattr(message, 'get_fields_and_field_types', dict)():
        raise ConfigError(f'{type(message).__name__} has no field {last!r}')
    return message, last


def _check_field(message: Any, dotted: str, where: str) -> None:
    try:
        _walk(message, dotted)
    except ConfigError as error:
        raise ConfigError(f'{where}.{dotted}: {error}') from None


def _read(message: Any, dotted: str) -> Any:
    parent, last = _walk(message, dotted)
    return getattr(parent, last)


def _assign(message: Any, dotted: str, value: Any, where: str) -> None:
    parent, last = _walk(message, dotted)
    current = getattr(parent, last)
    # Checked here: generated messages check their fields only when asked to
    # (ROS_PYTHON_CHECK_FIELDS), and a wrong type would otherwise fail at serialisation.
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(current, bool):
        fits = isinstance(value, bool)
    elif isinstance(current, float):
        fits, value = number, float(value) if number else value
    elif isinstance(current, int):
        fits = number and float(value).is_integer()
        value = int(value) if fits else value
    elif isinstance(current, str):
        # (YAML's no/null would otherwise become 'False'/'None' without a word)
        fits = isinstance(value, (str, int, float)) and not isinstance(value, bool)
        value = str(value) if fits else value
    else:
        fits = type(value) is type(current)
    if not fits:
        raise ConfigError(f'{where}: {value!r} does not fit a field of type '
                          f'{type(current).__name__}')
    try:
        setattr(parent, last, value)
    except (TypeError, ValueError, AssertionError) as error:
        raise ConfigError(f'{where}: {value!r} does not fit ({error})') from None
