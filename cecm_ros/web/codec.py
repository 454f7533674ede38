"""The web panel's wire format: ROS messages <-> rosbridge v2 JSON, and type names.

Kept apart from the server and the node because it is the one part that must agree with
rosbridge (and so with roslibjs) field for field, and it can be tested without a graph
or a socket. It imports message modules (to find nested and service types by name) but
not rclpy: converting a message needs no node.

Messages go out as rosbridge writes them (nested messages as objects, arrays as lists,
NaN and infinity as null); a client's JSON comes in checked field by field, and every
problem is a :class:`BridgeError` whose text names the field, for the client to read.
"""

from __future__ import annotations

import array
import importlib
import json
import math
from typing import Any

SESSION_TYPE = 'cecm_ros_web/Session'    # the panel's own topic; not a ROS message
RENDER_TYPE = 'cecm_ros_web/Render'      # the other one: a team state's drawing data
MAX_STRING = 512                         # longest string accepted in a client message
# Deepest nesting of a client's JSON: a correction's header.stamp is 3 levels deep.
MAX_DEPTH = 16


class BridgeError(ValueError):
    """A client message that cannot be served; the text says what was wrong."""


# ---------------------------------------------------------------------- type names
def type_name(cls: type) -> str:
    """``cecm_ros/msg/Correction`` for a generated message (or service part) class."""
    package, kind = cls.__module__.split('.')[:2]
    return f'{package}/{kind}/{cls.__name__}'


def same_type(given: str, cls: type) -> bool:
    """rosbridge clients name types ``pkg/msg/Name`` or the ROS 1 way ``pkg/Name``."""
    full = type_name(cls)
    package, kind, name = full.split('/')
    return given in (full, f'{package}/{name}')


def service_class(kind: str, entry: str) -> type:
    """``cecm_ros/srv/StartTasks`` -> the generated class; ValueError naming the
    ``services`` entry it came from."""
    parts = kind.split('/')
    if len(parts) != 3 or parts[1] != 'srv':
        raise ValueError(f'services entry {entry!r} must be NAME:PACKAGE/srv/TYPE')
    try:
        return getattr(importlib.import_module(f'{parts[0]}.srv'), parts[2])
    except (ImportError, AttributeError) as error:
        raise ValueError(f'services entry {entry!r}: unknown service type ({error})') from None


def _message_class(kind: str) -> type:
    """The class of a nested field type such as ``std_msgs/Header``."""
    package, _, name = kind.rpartition('/')
    module = importlib.import_module(f'{package.split("/")[0]}.msg')
    return getattr(module, name)


# ------------------------------------------------------------------------- outgoing
def dumps(data: Any) -> str:
    """Compact JSON text, as every frame is sent (NaN must have become null by now)."""
    return json.dumps(data, separators=(',', ':'), allow_nan=False)


def message_to_json(msg: Any) -> dict:
    """A message as rosbridge writes it: field names as in the .msg, nested messages as
    objects (``header.stamp`` = ``{sec, nanosec}``), arrays as lists, NaN/inf as null."""
    return {name: _to_json(getattr(msg, name)) for name in msg.get_fields_and_field_types()}


def _to_json(value: Any) -> Any:
    if hasattr(value, 'get_fields_and_field_types'):
        return message_to_json(value)
    if isinstance(value, bytes | bytearray):
        return list(value)
    if isinstance(value, list | tuple | array.array) or hasattr(value, 'tolist'):
        items = value.tolist() if hasattr(value, 'tolist') else value
        return [_to_json(item) for item in items] if isinstance(items, list) else \
            _to_json(items)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def plain(value: Any) -> Any:
    """A domain's render data as JSON can carry it: tuples and numpy values become lists
    and numbers, NaN and infinity null (as in relayed messages)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if hasattr(value, 'tolist'):
        return plain(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def publish_frame(topic: str, body: str) -> str:
    """The ``publish`` op of a message already in JSON (``body``), naming the topic as
    ``topic`` spells it: the subscriber's own spelling, which roslibjs routes by."""
    return f'{{"op":"publish","topic":{json.dumps(topic)},"msg":{body}}}'


# ------------------------------------------------------------------------- incoming
def client_json(text: str) -> Any:
    """A client's JSON text, parsed; BridgeError when it is no JSON or is nested deeper
    than MAX_DEPTH (JSON 8,000 levels deep stops the parser itself: RecursionError)."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise BridgeError(f'JSON nested more than {MAX_DEPTH} levels deep') from None
    except ValueError as error:
        raise BridgeError(f'not JSON: {error}') from None
    level = [(data, 1)]
    while level:   # (not recursive: depth is what is checked)
        value, depth = level.pop()
        if depth > MAX_DEPTH:
            raise BridgeError(f'JSON nested more than {MAX_DEPTH} levels deep')
        items = value.values() if isinstance(value, dict) else \
            value if isinstance(value, list) else ()
        level.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return data


def _text(value: str, where: str) -> str:
    """A client's string that a ROS string can carry as it is."""
    if '\x00' in value:
        raise BridgeError(f'{where} holds a NUL character, which a ROS string cannot carry '
                          '(it would end the text there)')
    try:
        value.encode('utf-8')
    except UnicodeEncodeError as error:
        raise BridgeError(f'{where} holds a lone surrogate ({value[error.start]!r}), which '
                          'is no text') from None
    return value


_INTEGERS = {'int8': (-2**7, 2**7 - 1), 'uint8': (0, 2**8 - 1), 'int16': (-2**15, 2**15 - 1),
             'uint16': (0, 2**16 - 1), 'int32': (-2**31, 2**31 - 1), 'uint32': (0, 2**32 - 1),
             'int64': (-2**63, 2**63 - 1), 'uint64': (0, 2**64 - 1), 'octet': (0, 255),
             'char': (0, 255), 'byte': (0, 255)}


def message_from_json(cls: Any, data: Any, what: str) -> Any:
    """A message of ``cls`` from a client's JSON object, every field checked.

    Raises BridgeError naming the first field that is unknown or of the wrong type;
    fields left out keep their defaults (as rosbridge does).
    """
    if not isinstance(data, dict):
        raise BridgeError(f'{what} must be a JSON object, got {json_kind(data)}')
    fields = cls.get_fields_and_field_types()
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise BridgeError(f'{what}: unknown field(s) {", ".join(unknown)}; a '
                          f'{type_name(cls)} has {", ".join(fields)}')
    msg = cls()
    for name, value in data.items():
        setattr(msg, name, _from_json(fields[name], value, f'{what}.{name}'))
    return msg


def _from_json(kind: str, value: Any, where: str) -> Any:
    if kind.startswith('sequence<') or kind.endswith(']'):
        element, bound = _element_type(kind)
        if not isinstance(value, list):
            raise BridgeError(f'{where} must be a list, got {json_kind(value)}')
        if bound is not None and len(value) > bound:
            raise BridgeError(f'{where} holds {len(value)} items, at most {bound} allowed')
        return [_from_json(element, item, f'{where}[{index}]')
                for index, item in enumerate(value)]
    if kind.startswith(('string', 'wstring')):
        if not isinstance(value, str):
            raise BridgeError(f'{where} must be a string, got {json_kind(value)}')
        limit = int(kind.split('<=')[1]) if '<=' in kind else MAX_STRING
        if len(value) > min(limit, MAX_STRING):
            raise BridgeError(f'{where} is {len(value)} characters long, at most '
                              f'{min(limit, MAX_STRING)} allowed')
        return _text(value, where)
    if kind == 'boolean':
        if not isinstance(value, bool):
            raise BridgeError(f'{where} must be true or false, got {json_kind(value)}')
        return value
    if kind in _INTEGERS:
        low, high = _INTEGERS[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            raise BridgeError(f'{where} must be an integer, got {json_kind(value)}')
        if not low <= value <= high:
            raise BridgeError(f'{where} = {value} is out of range for {kind} '
                              f'({low}..{high})')
        return bytes([value]) if kind in ('octet', 'byte') else value
    if kind in ('float', 'double', 'float32', 'float64'):
        if value is None:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BridgeError(f'{where} must be a number, got {json_kind(value)}')
        return float(value)
    if '/' in kind:
        return message_from_json(_message_class(kind), value, where)
    raise BridgeError(f'{where}: fields of type {kind} are not supported')


def _element_type(kind: str) -> tuple[str, int | None]:
    """'sequence<T, 5>' -> (T, 5); 'sequence<T>' -> (T, None); 'T[3]' -> (T, 3)."""
    if kind.startswith('sequence<'):
        inner = kind[len('sequence<'):-1]
        element, _, bound = inner.partition(', ')
        return element, int(bound) if bound else None
    element, _, size = kind[:-1].rpartition('[')
    return element, int(size)


def json_kind(value: Any) -> str:
    """What a JSON value is, in words, for an error message."""
    for kind, name in ((bool, 'a boolean'), (int, 'an integer'), (float, 'a number'),
                       (str, 'a string'), (list, 'a list'), (dict, 'an object')):
        if isinstance(value, kind):
            return name
    return 'null' if value is None else type(value).__name__
