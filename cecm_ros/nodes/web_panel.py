"""web_panel: correct the robot from a browser, and watch it learn.

Serves one page (``cecm_ros/web/``: index.html, app.js, style.css) and one WebSocket
(``/ws``) with aiohttp, in a thread of its own with its own asyncio loop, and bridges
them to the graph's topics and services. The WebSocket speaks a documented subset of
the rosbridge v2 JSON protocol (``subscribe``, ``unsubscribe``, ``advertise``,
``publish``, ``call_service``, answered with ``publish``, ``service_response`` and
``status``), so a roslibjs client can use it too; docs/nodes.md lists the subset. As
rosbridge does, it answers every client with the names as that client spelled them
(``capability_belief`` or ``/capability_belief``): roslibjs routes a ``publish`` by the
topic name its own ``subscribe`` gave.

What the panel adds to the topics it relays is derived state a browser cannot compute:
``/web_panel/session`` (the open correction window, the robot actions that apply in its
state, the countdown, who answered) from the intents, team states, step results and
correction verdicts it sees, and ``/web_panel/render``, the domain panel view's ``render`` of
each team state (a numeric state such as Overcooked's is drawn from it, not from
facts). It computes nothing the core or the graph does not already publish. Only
``robot/correction`` is publishable; every correction's verdict comes back from the
executor (``robot/correction_status``) to the client that sent it.

Threads: rclpy callbacks (executor threads) convert each message to JSON once, record it
in a cache under one lock and hand it to the loop with ``call_soon_threadsafe``; the
loop frames it as a ``publish`` for each spelling its subscribers used and sends it. A
client that subscribes gets the cached messages first, so a new tab or a reconnect
resumes where the others are.
"""

from __future__ import annotations

import array
import asyncio
import hmac
import html
import importlib
import ipaddress
import json
import math
import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from aiohttp import WSMsgType, web
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

import cecm_ros
from cecm_ros.core.domain import NOOP, ROBOT
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import panel_view_for
from cecm_ros.msg import (
    CapabilityBelief,
    Correction,
    CorrectionStatus,
    JointPlan,
    RobotIntent,
    StepResult,
    TaskReport,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_EVENTS,
    QOS_HISTORY,
    QOS_LATCHED,
    QOS_TEAM_STATE,
    CecmNode,
    run_node,
)

SESSION_TYPE = 'cecm_ros_web/Session'    # the panel's own topic; not a ROS message
RENDER_TYPE = 'cecm_ros_web/Render'      # the other one: a team state's drawing data
MAX_STRING = 512                         # longest string accepted in a client message
VERDICT_TIMEOUT_S = 5.0                  # wait for the executor's CorrectionStatus
CLIENT_QUEUE = 2000                      # messages queued for a slow client, then it is dropped
WS_HARD_LIMIT = 1 << 20                  # frames above this close the connection (aiohttp)


@dataclass(frozen=True)
class TopicSpec:
    """A relayed topic: its parameter, default name, type, QoS and what a new client gets."""

    key: str
    default: str
    msg_type: type
    qos: Any
    replay: int          # cached messages replayed to a new subscriber
    description: str


TOPICS = (
    TopicSpec('belief', 'capability_belief', CapabilityBelief, QOS_LATCHED, 2,
              'CapabilityBelief topic (the previous and the latest belief are replayed)'),
    TopicSpec('team_state', 'team_state', TeamState, QOS_TEAM_STATE, 200,
              'TeamState topic (the current task\'s states are replayed)'),
    TopicSpec('task', 'task/request', TaskRequest, QOS_LATCHED, 1, 'TaskRequest topic'),
    TopicSpec('robot_plan', 'robot/joint_plan', JointPlan, QOS_LATCHED, 1,
              "The robot's adopted joint plans"),
    TopicSpec('partner_plan', 'human/joint_plan', JointPlan, QOS_LATCHED, 1,
              "The (simulated) partner's own joint plan"),
    TopicSpec('intent', 'robot/intent', RobotIntent, QOS_EVENTS, 1, 'RobotIntent topic'),
    TopicSpec('step_result', 'robot/step_result', StepResult, QOS_EVENTS, 200,
              "StepResult topic (the current task's are replayed)"),
    TopicSpec('correction', 'robot/correction', Correction, QOS_EVENTS, 100,
              'Correction topic: relayed, and the one topic clients may publish on'),
    TopicSpec('correction_status', 'robot/correction_status', CorrectionStatus, QOS_EVENTS,
              100, "The executor's verdict on every correction"),
    TopicSpec('report', 'task_manager/task_report', TaskReport, QOS_HISTORY, 100,
              "The task manager's per-task reports (the session's history)"),
)
# Cleared when a new task starts, so that a replay holds the current task only.
PER_TASK = ('step_result', 'correction', 'correction_status')


class BridgeError(ValueError):
    """A client message that cannot be served; the text says what was wrong."""


# --------------------------------------------------------------------- JSON <-> msg
def type_name(cls: type) -> str:
    """``cecm_ros/msg/Correction`` for a generated message (or service part) class."""
    package, kind = cls.__module__.split('.')[:2]
    return f'{package}/{kind}/{cls.__name__}'


def message_to_json(msg) -> dict:
    """A message as rosbridge writes it: field names as in the .msg, nested messages as
    objects (``header.stamp`` = ``{sec, nanosec}``), arrays as lists, NaN/inf as null."""
    return {name: _to_json(getattr(msg, name)) for name in msg.get_fields_and_field_types()}


def _to_json(value):
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


def _plain(value):
    """A domain's render data as JSON can carry it: tuples and numpy values become lists
    and numbers, NaN and infinity null (as in relayed messages)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    if hasattr(value, 'tolist'):
        return _plain(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


_INTEGERS = {'int8': (-2**7, 2**7 - 1), 'uint8': (0, 2**8 - 1), 'int16': (-2**15, 2**15 - 1),
             'uint16': (0, 2**16 - 1), 'int32': (-2**31, 2**31 - 1), 'uint32': (0, 2**32 - 1),
             'int64': (-2**63, 2**63 - 1), 'uint64': (0, 2**64 - 1), 'octet': (0, 255),
             'char': (0, 255), 'byte': (0, 255)}


def message_from_json(cls: type, data, what: str):
    """A message of ``cls`` from a client's JSON object, every field checked.

    Raises BridgeError naming the first field that is unknown or of the wrong type;
    fields left out keep their defaults (as rosbridge does).
    """
    if not isinstance(data, dict):
        raise BridgeError(f'{what} must be a JSON object, got {_json_kind(data)}')
    fields = cls.get_fields_and_field_types()
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise BridgeError(f'{what}: unknown field(s) {", ".join(unknown)}; a '
                          f'{type_name(cls)} has {", ".join(fields)}')
    msg = cls()
    for name, value in data.items():
        setattr(msg, name, _from_json(fields[name], value, f'{what}.{name}'))
    return msg


def _from_json(kind: str, value, where: str):
    if kind.startswith('sequence<') or kind.endswith(']'):
        element, bound = _element_type(kind)
        if not isinstance(value, list):
            raise BridgeError(f'{where} must be a list, got {_json_kind(value)}')
        if bound is not None and len(value) > bound:
            raise BridgeError(f'{where} holds {len(value)} items, at most {bound} allowed')
        return [_from_json(element, item, f'{where}[{index}]')
                for index, item in enumerate(value)]
    if kind.startswith(('string', 'wstring')):
        if not isinstance(value, str):
            raise BridgeError(f'{where} must be a string, got {_json_kind(value)}')
        limit = int(kind.split('<=')[1]) if '<=' in kind else MAX_STRING
        if len(value) > min(limit, MAX_STRING):
            raise BridgeError(f'{where} is {len(value)} characters long, at most '
                              f'{min(limit, MAX_STRING)} allowed')
        return value
    if kind == 'boolean':
        if not isinstance(value, bool):
            raise BridgeError(f'{where} must be true or false, got {_json_kind(value)}')
        return value
    if kind in _INTEGERS:
        low, high = _INTEGERS[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            raise BridgeError(f'{where} must be an integer, got {_json_kind(value)}')
        if not low <= value <= high:
            raise BridgeError(f'{where} = {value} is out of range for {kind} '
                              f'({low}..{high})')
        return bytes([value]) if kind in ('octet', 'byte') else value
    if kind in ('float', 'double', 'float32', 'float64'):
        if value is None:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BridgeError(f'{where} must be a number, got {_json_kind(value)}')
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


def _message_class(kind: str) -> type:
    """The class of a nested field type such as ``std_msgs/Header``."""
    package, _, name = kind.rpartition('/')
    module = importlib.import_module(f'{package.split("/")[0]}.msg')
    return getattr(module, name)


def _json_kind(value) -> str:
    for kind, name in ((bool, 'a boolean'), (int, 'an integer'), (float, 'a number'),
                       (str, 'a string'), (list, 'a list'), (dict, 'an object')):
        if isinstance(value, kind):
            return name
    return 'null' if value is None else type(value).__name__


def publish_frame(topic: str, body: str) -> str:
    """The ``publish`` op of a message already in JSON (``body``), naming the topic as
    ``topic`` spells it: the subscriber's own spelling, which roslibjs routes by."""
    return f'{{"op":"publish","topic":{json.dumps(topic)},"msg":{body}}}'


def same_type(given: str, cls: type) -> bool:
    """rosbridge clients name types ``pkg/msg/Name`` or the ROS 1 way ``pkg/Name``."""
    full = type_name(cls)
    package, kind, name = full.split('/')
    return given in (full, f'{package}/{name}')


# ----------------------------------------------------------------------- security
def request_token(request: web.Request) -> str | None:
    """The token a request carries: ``?token=`` or ``Authorization: Bearer``."""
    query = request.query.get('token')
    if query is not None:
        return query
    header = request.headers.get('Authorization', '')
    scheme, _, value = header.partition(' ')
    return value.strip() if scheme.lower() == 'bearer' else None


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison; no token configured means everyone may in."""
    if not expected:
        return True
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def local_host_header(host: str) -> bool:
    """Whether a Host header names this machine or an IP address (not a domain name).

    Without a token a page from a rebound domain name (DNS rebinding) could otherwise
    read and correct through a browser on this machine.
    """
    name = urlsplit(f'//{host}').hostname or ''
    if name == 'localhost' or name.endswith('.localhost'):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------- cache + state
class MessageCache:
    """The last messages of every relayed topic (their JSON), each with a sequence number.

    A client that subscribes gets the cached ones and remembers the sequence number at
    that moment; a message with a number at or below it, delivered later by the loop,
    was in the replay already and is not sent twice.
    """

    def __init__(self, limits: dict[str, int]):
        self.seq = 0
        self.entries = {topic: deque(maxlen=limit) for topic, limit in limits.items()}

    def add(self, topic: str, text: str) -> int:
        self.seq += 1
        self.entries[topic].append((self.seq, text))
        return self.seq

    def bump(self) -> int:
        self.seq += 1
        return self.seq

    def clear(self, topic: str) -> None:
        self.entries[topic].clear()

    def snapshot(self, topic: str) -> tuple[list[tuple[int, str]], int]:
        return list(self.entries.get(topic, ())), self.seq


@dataclass
class OpenStep:
    """The step whose correction window is open (the latest intent without a result)."""

    task_id: str
    attempt: int                         # the run of the task (RobotIntent.attempt)
    step: int
    intended: str
    received: float                      # time.monotonic() when the intent arrived
    answer: dict | None = None           # the executor's accepted answer, once there
    window_closed: bool = False          # a repeat of its intent was heard


@dataclass
class SessionState:
    """What the panel derives from the graph's messages for ``/web_panel/session``."""

    model: Any
    sender: str
    window_s: float | None = None
    task: TaskRequest | None = None
    states: dict[str, dict[int, TeamState]] = field(default_factory=dict)
    open: OpenStep | None = None
    closed: set = field(default_factory=set)
    plan_offsets: dict[str, int] = field(default_factory=dict)
    partner_plans: dict[str, JointPlan] = field(default_factory=dict)
    # The latest intent of each run not (yet) requested, with the time it arrived: the
    # executor may announce a new run's first step before its TaskRequest reaches us.
    held: dict[tuple[str, int], tuple[Any, float]] = field(default_factory=dict)
    _choices: dict = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return self.task.task_id if self.task is not None else ''

    def observe(self, key: str, msg) -> bool:
        """Update from one message; whether the derived session changed."""
        if key == 'task':
            # A task run again (after an interruption) comes with a new attempt: its
            # steps are new questions.
            changed = self.task is None or (msg.task_id, msg.attempt) != \
                (self.task.task_id, self.task.attempt)
            self.task = msg
            if changed:
                self.closed.clear()
                self.open = None
                # Other runs of this task are over; its own early intent is its question.
                early = self.held.pop((msg.task_id, msg.attempt), None)
                self.held = {key: value for key, value in self.held.items()
                             if key[0] != msg.task_id}
                if early is not None:
                    self._observe_intent(*early)
            return True
        if key == 'team_state':
            if msg.step == 0:
                self.states.pop(msg.task_id, None)
            self.states.setdefault(msg.task_id, {})[msg.step] = msg
            while len(self.states) > 3:
                self.states.pop(next(iter(self.states)))
            return True
        if key == 'intent':
            return self._observe_intent(msg, time.monotonic())
        if key == 'step_result':
            self.closed.add((msg.task_id, msg.step))
            while len(self.closed) > 500:
                self.closed.pop()
            return True
        if key == 'robot_plan':
            done = [s for (t, s) in self.closed if t == msg.task_id]
            latest = max(self.states.get(msg.task_id, {0: None}))
            self.plan_offsets[msg.task_id] = max([latest, *(s + 1 for s in done)])
            return True
        if key == 'partner_plan':
            self.partner_plans[msg.task_id] = msg
            while len(self.partner_plans) > 3:
                self.partner_plans.pop(next(iter(self.partner_plans)))
            return True
        if key == 'correction_status':
            current = self.open
            if msg.accepted and current is not None and \
                    (msg.task_id, msg.attempt, msg.step) == \
                    (current.task_id, current.attempt, current.step):
                current.answer = {'sender': msg.sender,
                                  'corrected_action': msg.corrected_action,
                                  'agreed': msg.corrected_action == current.intended}
                return True
        return False

    def _observe_intent(self, msg, received: float) -> bool:
        # The executor announces an intent again while the world waits for the
        # partner, after the step's window closed: a repeat closes the step's window
        # here too (any answer stands), and a step that is over stays over. A panel
        # that hears only the repeat (it started late) shows the step closed.
        if self.task is not None and \
                (msg.task_id, msg.attempt) != (self.task.task_id, self.task.attempt):
            # Of another run. An earlier run of this task is a robot that went on for a
            # moment with a run it was stopped in: not a question any more. Any other
            # may be a run whose request is still on its way: kept for that request.
            if msg.task_id != self.task.task_id or msg.attempt > self.task.attempt:
                self.held.pop((msg.task_id, msg.attempt), None)
                self.held[(msg.task_id, msg.attempt)] = (msg, received)
                while len(self.held) > 8:
                    self.held.pop(next(iter(self.held)))
            return False
        current = self.open
        known = current is not None and \
            (current.task_id, current.attempt, current.step, current.intended) == \
            (msg.task_id, msg.attempt, msg.step, msg.action)
        if (msg.task_id, msg.step) in self.closed:
            return False
        if known:
            if not msg.repeated or current.window_closed:
                return False
            current.window_closed = True
            return True
        self.open = OpenStep(msg.task_id, msg.attempt, msg.step, msg.action, received,
                             window_closed=msg.repeated)
        return True

    def current_open(self) -> OpenStep | None:
        current = self.open
        if current is None or (current.task_id, current.step) in self.closed:
            return None
        if self.task is not None and current.task_id != self.task.task_id:
            return None
        return current

    def choices(self, current: OpenStep) -> tuple[list[str], str]:
        """``noop`` and the robot's actions that apply in the open step's state."""
        states = self.states.get(current.task_id, {})
        state = states.get(current.step) or (states[max(states)] if states else None)
        if state is None:
            return [NOOP], 'no team_state of this task yet'
        cache_key = (current.task_id, state.step)
        if cache_key not in self._choices:
            try:
                here = conv.state_from_team_state(self.model, state)
                self._choices = {cache_key: ([NOOP, *self.model.applicable_actions(here, ROBOT)],
                                             '')}
            except CecmError as error:
                return [NOOP], f'team_state step {state.step}: {error}'
        return self._choices[cache_key]

    def to_json(self) -> dict:
        current = self.current_open()
        window = self.window_s
        open_step = None
        if current is not None:
            actions, problem = self.choices(current)
            remaining = 0.0 if current.window_closed else None if window is None else \
                max(0.0, window - (time.monotonic() - current.received))
            plan = self.partner_plans.get(current.task_id)
            # What the (simulated) partner's own plan has the robot do here; None past
            # its end. A partner that re-plans publishes the whole task's plan again
            # (the steps taken in front), so the task's step indexes it.
            expects = None
            if plan is not None and current.step < len(plan.steps):
                expects = plan.steps[current.step].robot_action
            open_step = {'task_id': current.task_id, 'attempt': current.attempt,
                         'step': current.step,
                         'intended_action': current.intended, 'actions': actions,
                         'actions_problem': problem, 'remaining_s': remaining,
                         'answer': current.answer, 'partner_plan_expects': expects,
                         'window_closed': current.window_closed}
        states = self.states.get(self.task_id, {})
        return {'task_id': self.task_id, 'step': max(states) if states else None,
                'open': open_step, 'plan_offset': self.plan_offsets.get(self.task_id, 0),
                'correction_window_s': window, 'sender': self.sender}


# -------------------------------------------------------------------------- clients
class Client:
    """One WebSocket connection: its subscriptions, send queue and message budget."""

    count = 0

    def __init__(self, ws: web.WebSocketResponse, peer: str, rate: float):
        Client.count += 1
        self.name = f'client {Client.count} ({peer})'
        self.ws = ws
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=CLIENT_QUEUE)
        # topic -> {the topic as this client spelled it in subscribe -> subscription ids}
        self.topics: dict[str, dict[str, set]] = {}
        self.marks: dict[str, int] = {}       # spelling -> last sequence number replayed
        self.rate = rate
        self.tokens = rate * 2
        self.last = time.monotonic()
        self.writer: asyncio.Task | None = None
        self.dropped = False

    def allow(self) -> bool:
        """A token bucket: ``rate`` messages a second, bursts of twice that."""
        now = time.monotonic()
        self.tokens = min(self.rate * 2, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def send(self, text: str) -> bool:
        if self.dropped:
            return False
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            self.dropped = True
            return False
        return True

    async def write(self) -> None:
        while True:
            text = await self.queue.get()
            await self.ws.send_str(text)


@dataclass
class Pending:
    """A correction a client published, until the executor's verdict comes back."""

    client: Client
    op_id: str | None
    timer: asyncio.TimerHandle


# --------------------------------------------------------------------------- server
class PanelServer:
    """The aiohttp application in its own thread and asyncio loop."""

    def __init__(self, panel: WebPanel, host: str, port: int):
        self.panel = panel
        self.host = host
        self.port = port
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.runner: web.AppRunner | None = None
        self.clients: set[Client] = set()
        self.pending: dict[tuple, Pending] = {}
        self._started = threading.Event()
        self._error: BaseException | None = None

    # ------------------------------------------------------------- start and stop
    def start(self, timeout_s: float = 10.0) -> int:
        """Serve; returns the bound port. Raises RuntimeError when it cannot listen."""
        self.thread = threading.Thread(target=self._run, name='web_panel-http', daemon=True)
        self.thread.start()
        if not self._started.wait(timeout_s):
            raise RuntimeError(f'the web server did not start within {timeout_s:g} s')
        if self._error is not None:
            self.thread.join(2.0)
            raise RuntimeError(f'cannot serve on {self.host}:{self.port}: {self._error}')
        return self.port

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._listen())
        except BaseException as error:  # noqa: BLE001 - reported by start()
            self._error = error
            self._started.set()
            self.loop.close()
            return
        self._started.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self._close())
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self.loop.close()

    async def _listen(self) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.router.add_get('/', self._index)
        app.router.add_get('/api/layout', self._layout)
        app.router.add_get('/ws', self._websocket)
        app.router.add_get('/static/{name}', self._static)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                    shutdown_timeout=1.0)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.host, self.port, reuse_address=True)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def _close(self) -> None:
        for pending in self.pending.values():
            pending.timer.cancel()
        self.pending.clear()
        for client in list(self.clients):
            await client.ws.close(code=1001, message=b'the web panel is stopping')
        if self.runner is not None:
            await self.runner.cleanup()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close every connection and free the port (blocks until done)."""
        if self.loop is not None and self.thread is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout_s)
        self.thread = None

    # ------------------------------------------------- from the ROS side (any thread)
    def deliver(self, topic: str, seq: int, body: str | None) -> None:
        """Send a relayed message's JSON (or the session, body None) to its subscribers."""
        loop = self.loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._deliver, topic, seq, body)

    def verdict(self, status: CorrectionStatus) -> None:
        loop = self.loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._verdict, status)

    def _deliver(self, topic: str, seq: int, body: str | None) -> None:
        if body is None:
            body = self.panel.session_body()
        frames: dict[str, str] = {}   # one publish per spelling, as each client named it
        for client in list(self.clients):
            for spelled in list(client.topics.get(topic, ())):
                if seq > client.marks.get(spelled, 0):
                    frame = frames.get(spelled)
                    if frame is None:
                        frame = frames[spelled] = publish_frame(spelled, body)
                    self._send(client, frame)

    def _verdict(self, status: CorrectionStatus) -> None:
        key = (status.task_id, status.step, status.header.stamp.sec,
               status.header.stamp.nanosec)
        pending = self.pending.pop(key, None)
        if pending is None:
            return
        pending.timer.cancel()
        if status.accepted:
            what = 'agreed' if status.corrected_action == status.intended_action else \
                f'corrected to {status.corrected_action}'
            self._status(pending.client, 'info', f'accepted for step {status.step}: {what}',
                         pending.op_id)
        else:
            self._status(pending.client, 'error',
                         f'refused by the executor: {status.reason}', pending.op_id)

    # ------------------------------------------------------------------- sending
    def _send(self, client: Client, text: str) -> None:
        if not client.send(text) and client.dropped and client in self.clients:
            self.panel.get_logger().warning(f'{client.name} reads too slowly; disconnecting')
            self.clients.discard(client)
            asyncio.ensure_future(client.ws.close(code=1008, message=b'too slow'))

    def _send_json(self, client: Client, data: dict) -> None:
        self._send(client, json.dumps(data, separators=(',', ':'), allow_nan=False))

    def _status(self, client: Client, level: str, text: str, op_id=None) -> None:
        data = {'op': 'status', 'level': level, 'msg': text}
        if op_id is not None:
            data['id'] = op_id
        self._send_json(client, data)

    # ---------------------------------------------------------------------- HTTP
    @web.middleware
    async def _guard(self, request: web.Request, handler):
        """Every request: a Host this machine answers to and the token, else nothing."""
        panel = self.panel
        if not panel.token and not local_host_header(request.host):
            return web.Response(status=403, text='403: this panel answers only to '
                                'localhost or an IP address (set access_token to allow '
                                'host names)\n')
        given = request_token(request)
        if not token_matches(given, panel.token):
            if given is None:
                return web.Response(
                    status=401, text='401: an access token is required: open the URL that '
                    'the web_panel node logged (?token=...) or send Authorization: Bearer\n',
                    headers={'WWW-Authenticate': 'Bearer realm="cecm_ros web_panel"'})
            return web.Response(status=403, text='403: wrong access token\n')
        response = await handler(request)
        if response.prepared:   # a WebSocket, over by now
            return response
        response.headers.setdefault('Cache-Control', 'no-store')
        response.headers.setdefault('X-Content-Type-Options', 'nosniff')
        response.headers.setdefault('Referrer-Policy', 'no-referrer')
        response.headers.setdefault(
            'Content-Security-Policy',
            "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
        return response

    async def _index(self, request: web.Request) -> web.Response:
        query = f'?token={quote(self.panel.token, safe="")}' if self.panel.token else ''
        text = self.panel.page.replace('__TOKEN_QUERY__', html.escape(query, quote=True))
        return web.Response(text=text, content_type='text/html', charset='utf-8')

    async def _static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info['name']
        path = self.panel.assets.get(name)
        if path is None:
            raise web.HTTPNotFound(text=f'404: no asset {name!r}\n')
        return web.FileResponse(path)

    async def _layout(self, request: web.Request) -> web.Response:
        return web.json_response(self.panel.layout)

    # ------------------------------------------------------------------ WebSocket
    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        panel = self.panel
        origin = request.headers.get('Origin')
        if origin is not None and not panel.origin_allowed(origin, request.host):
            return web.Response(status=403, text=f'403: WebSocket from origin {origin} '
                                'refused (allowed_origins)\n')
        if len(self.clients) >= panel.max_clients:
            return web.Response(status=503, text=f'503: already {panel.max_clients} clients '
                                '(max_clients)\n')
        ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=WS_HARD_LIMIT, timeout=2.0)
        await ws.prepare(request)
        client = Client(ws, request.remote or 'unknown', panel.rate)
        self.clients.add(client)
        client.writer = asyncio.ensure_future(client.write())
        panel.get_logger().info(f'{client.name} connected ({len(self.clients)} in all)')
        try:
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    self._receive(client, frame.data)
                elif frame.type == WSMsgType.BINARY:
                    self._status(client, 'error', 'binary frames are not supported: send '
                                 'rosbridge JSON as text')
                elif frame.type == WSMsgType.ERROR:
                    break
        finally:
            self.clients.discard(client)
            client.writer.cancel()
            for key in [k for k, p in self.pending.items() if p.client is client]:
                self.pending.pop(key).timer.cancel()
            panel.get_logger().info(f'{client.name} disconnected ({len(self.clients)} left)')
        return ws

    def _receive(self, client: Client, text: str) -> None:
        """One client message: checked, answered; nothing a client sends ends the node."""
        op_id = None
        try:
            if not client.allow():
                raise BridgeError(f'too many messages (at most {self.panel.rate:g} a second); '
                                  'this one was dropped')
            size = len(text.encode())
            if size > self.panel.max_bytes:
                raise BridgeError(f'message of {size} bytes exceeds the limit of '
                                  f'{self.panel.max_bytes} bytes (max_message_bytes)')
            try:
                data = json.loads(text)
            except ValueError as error:
                raise BridgeError(f'not JSON: {error}') from None
            if not isinstance(data, dict):
                raise BridgeError(f'a message must be a JSON object, got {_json_kind(data)}')
            op_id = data.get('id')
            if op_id is not None and not isinstance(op_id, str | int):
                op_id = None
                raise BridgeError('"id" must be a string or a number')
            op = data.get('op')
            handler = {'subscribe': self._subscribe, 'unsubscribe': self._unsubscribe,
                       'advertise': self._advertise, 'unadvertise': self._unadvertise,
                       'publish': self._publish, 'call_service': self._call_service,
                       'set_level': lambda client, data: None}.get(op)
            if handler is None:
                raise BridgeError(f'unknown op {op!r}; this panel serves subscribe, '
                                  'unsubscribe, advertise, unadvertise, publish and '
                                  'call_service')
            handler(client, data)
        except BridgeError as error:
            self._status(client, 'error', str(error), op_id)
        except Exception as error:  # noqa: BLE001 - one bad message must not end anything
            self.panel.get_logger().error(f'{client.name}: {error!r}')
            self._status(client, 'error', f'internal error: {error}', op_id)

    def _topic(self, data: dict) -> tuple[str, str]:
        """(the topic as the client spelled it, the topic it names)."""
        spelled = data.get('topic')
        if not isinstance(spelled, str) or not spelled:
            raise BridgeError('"topic" must be a non-empty string')
        return spelled, spelled if spelled.startswith('/') else '/' + spelled

    def _subscribe(self, client: Client, data: dict) -> None:
        """A subscription per spelling, as in rosbridge: its messages are published to the
        client under that spelling (once per message, however many ids share it), and
        the first of a spelling gets the cached messages."""
        spelled, topic = self._topic(data)
        spec_type = self.panel.topic_types.get(topic)
        if spec_type is None:
            raise BridgeError(f'topic {topic} is not relayed by this panel; topics: '
                              f'{", ".join(sorted(self.panel.topic_types))}')
        given = data.get('type')
        if given is not None and not self.panel.type_matches(topic, given):
            raise BridgeError(f'topic {topic} has type {self.panel.type_label(topic)}, '
                              f'not {given}')
        spellings = client.topics.setdefault(topic, {})
        first = spelled not in spellings
        spellings.setdefault(spelled, set()).add(data.get('id'))
        if first:
            entries, seq = self.panel.snapshot(topic)
            client.marks[spelled] = seq
            for _, body in entries:
                self._send(client, publish_frame(spelled, body))

    def _unsubscribe(self, client: Client, data: dict) -> None:
        """Ends the id's subscription of that spelling (without an id: all of the spelling)."""
        spelled, topic = self._topic(data)
        spellings = client.topics.get(topic, {})
        ids = spellings.get(spelled)
        if ids is None:
            return
        ids.discard(data.get('id'))
        if not ids or data.get('id') is None:
            del spellings[spelled]
            client.marks.pop(spelled, None)
            if not spellings:
                del client.topics[topic]

    def _advertise(self, client: Client, data: dict) -> None:
        """roslibjs advertises before it publishes: allowed for the one publishable topic."""
        _, topic = self._topic(data)
        self._check_publishable(topic)
        given = data.get('type')
        if given is not None and not same_type(given, Correction):
            raise BridgeError(f'topic {topic} has type {type_name(Correction)}, not {given}')

    def _unadvertise(self, client: Client, data: dict) -> None:
        self._topic(data)

    def _check_publishable(self, topic: str) -> None:
        if topic != self.panel.correction_topic:
            raise BridgeError(f'topic {topic} is not publishable through this panel; only '
                              f'{self.panel.correction_topic} is')

    def _publish(self, client: Client, data: dict) -> None:
        _, topic = self._topic(data)
        self._check_publishable(topic)
        if 'msg' not in data:
            raise BridgeError('"msg" is missing')
        msg = message_from_json(Correction, data['msg'], 'msg')
        if not msg.task_id:
            raise BridgeError('msg.task_id must name the task')
        if not msg.corrected_action.strip():
            raise BridgeError('msg.corrected_action must name an action (noop = wait)')
        self.panel.publish_correction(msg)
        key = (msg.task_id, msg.step, msg.header.stamp.sec, msg.header.stamp.nanosec)
        timer = self.loop.call_later(VERDICT_TIMEOUT_S, self._no_verdict, key)
        self.pending[key] = Pending(client, data.get('id'), timer)

    def _no_verdict(self, key: tuple) -> None:
        pending = self.pending.pop(key, None)
        if pending is not None:
            self._status(pending.client, 'warning', 'the executor gave no verdict on this '
                         f'correction within {VERDICT_TIMEOUT_S:g} s (is it running? it '
                         'answers on robot/correction_status)', pending.op_id)

    def _call_service(self, client: Client, data: dict) -> None:
        spelled = data.get('service')
        if not isinstance(spelled, str) or not spelled:
            raise BridgeError('"service" must be a non-empty string')
        name = spelled if spelled.startswith('/') else '/' + spelled
        op_id = data.get('id')
        try:
            ros_client, srv_type = self.panel.service(name)
            request = message_from_json(srv_type.Request, data.get('args') or {}, 'args')
        except BridgeError as error:
            # roslibjs waits for a service_response; the status says the same in words.
            # The answer names the service as the client did (so does rosbridge).
            answer = {'op': 'service_response', 'service': spelled, 'result': False,
                      'values': str(error)}
            self._send_json(client, answer if op_id is None else {**answer, 'id': op_id})
            raise
        future = ros_client.call_async(request)
        answered = []   # the answer or the deadline, whichever comes first

        def finish(result_future) -> None:
            if not answered:
                answered.append(True)
                deadline.cancel()
                if result_future is None:
                    ros_client.remove_pending_request(future)
                self._service_done(client, spelled, name, op_id, result_future)

        deadline = self.loop.call_later(self.panel.service_timeout, finish, None)

        def done(result_future) -> None:
            loop = self.loop
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(finish, result_future)
        future.add_done_callback(done)

    def _service_done(self, client: Client, spelled: str, name: str, op_id,
                      future) -> None:
        answer = {'op': 'service_response', 'service': spelled, 'result': False}
        if op_id is not None:
            answer['id'] = op_id
        if future is None:
            answer['values'] = f'no answer from {name} within {self.panel.service_timeout:g} s'
        elif future.exception() is not None:
            answer['values'] = f'{name} failed: {future.exception()}'
        elif future.result() is None:
            answer['values'] = f'{name} returned no response'
        else:
            answer.update(result=True, values=message_to_json(future.result()))
        if client in self.clients:
            self._send_json(client, answer)


# ----------------------------------------------------------------------------- node
class WebPanel(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('web_panel', **kwargs)
        self.declare_model_parameters()
        self.declare('host', '127.0.0.1',
                     'Address to listen on; 127.0.0.1 keeps the panel on this machine '
                     '(0.0.0.0: every interface, then set access_token)')
        self.declare('port', 8090, 'TCP port; 0 = any free port (logged at activation)',
                     low=0, high=65535)
        self.declare('access_token', '',
                     "Token every request and the WebSocket must carry (?token= or "
                     "Authorization: Bearer); '' = a random one per start of the node, "
                     'shown in the logged URL')
        self.declare('allow_without_token', False,
                     'Development only: with access_token empty, serve without any token '
                     '(then any local process or user can correct the robot; warned about)')
        self.declare('sender', 'web_panel', 'The sender named in the corrections it publishes')
        self.declare('correction_window_s', 0.0,
                     "The executor's correction window, for the page's countdown; 0 = read "
                     'the parameter correction_window_s of executor_node', low=0.0,
                     high=86400.0)
        self.declare('executor_node', 'executor', 'Node whose correction_window_s is read')
        for spec in TOPICS:
            self.declare(f'{spec.key}_topic', spec.default, spec.description)
        self.declare('services', ['task_manager/start:cecm_ros/srv/StartTasks'],
                     'Services clients may call (call_service), each NAME:TYPE',
                     ParameterType.PARAMETER_STRING_ARRAY)
        self.declare('allowed_origins', '',
                     'Comma-separated origins besides the panel itself whose pages may open '
                     'the WebSocket (e.g. http://localhost:8000 for a roslibjs page)')
        self.declare('max_clients', 16, 'Simultaneous WebSocket clients', low=1, high=10000)
        self.declare('max_message_bytes', 16384, 'Largest client message answered',
                     low=256, high=1024 * 1024)
        self.declare('messages_per_second', 20.0, 'Messages a client may send per second',
                     low=0.01, high=1e6)
        self.declare('service_timeout_s', 10.0, 'How long call_service waits for an answer',
                     low=0.1, high=3600.0)
        self.declare('web_dir', '',
                     "Folder with index.html, app.js and style.css; '' = the installed "
                     'cecm_ros/web')
        self.lock = threading.Lock()
        self.server: PanelServer | None = None
        self.bound_port: int | None = None
        self.session: SessionState | None = None
        self.cache: MessageCache | None = None
        self._window_future = None
        self._last_stamp = 0
        # Made once per process, so that a reconfigure or a recovery keeps the URL.
        self._random_token = secrets.token_urlsafe(16)

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        model = self.load_model()
        self.token = self.param('access_token')
        if not self.token and not self.param('allow_without_token'):
            self.token = self._random_token   # as notebook servers do: never open
        self.max_clients = self.param('max_clients')
        self.max_bytes = self.param('max_message_bytes')
        self.rate = self.param('messages_per_second')
        self.service_timeout = self.param('service_timeout_s')
        self.origins = {o.strip().rstrip('/') for o in self.param('allowed_origins').split(',')
                        if o.strip()}
        if self.max_clients < 1 or self.max_bytes < 256 or self.rate <= 0:
            raise ValueError('max_clients must be at least 1, max_message_bytes at least 256 '
                             'and messages_per_second positive')
        folder = Path(self.param('web_dir') or Path(cecm_ros.__file__).parent / 'web')
        self.assets = {name: folder / name for name in ('app.js', 'style.css')}
        missing = [str(p) for p in (folder / 'index.html', *self.assets.values())
                   if not p.is_file()]
        if missing:
            raise FileNotFoundError(f'web assets missing: {", ".join(missing)}')
        self.page = (folder / 'index.html').read_text()
        window = self.param('correction_window_s')
        self.session = SessionState(model=model, sender=self.param('sender'),
                                    window_s=window if window > 0 else None)
        self.window_from_executor = window <= 0
        self.correction_pub = self.create_lifecycle_publisher(
            Correction, self.param('correction_topic'), QOS_EVENTS)
        entities = [self.correction_pub]
        relays = MutuallyExclusiveCallbackGroup()   # one message at a time, in order
        self.topic_names: dict[str, str] = {}
        self.topic_types: dict[str, type | str] = {}
        limits = {}
        for spec in TOPICS:
            subscription = self.create_subscription(
                spec.msg_type, self.param(f'{spec.key}_topic'),
                self.guarded(self._relay(spec.key), spec.key), spec.qos,
                callback_group=relays)
            entities.append(subscription)
            self.topic_names[spec.key] = subscription.topic_name
            self.topic_types[subscription.topic_name] = spec.msg_type
            limits[subscription.topic_name] = spec.replay
        self.correction_topic = self.topic_names['correction']
        self.session_topic = self.resolve_topic_name('~/session')
        self.topic_types[self.session_topic] = SESSION_TYPE
        limits[self.session_topic] = 1
        self.render_topic = self.resolve_topic_name('~/render')
        self.topic_types[self.render_topic] = RENDER_TYPE
        limits[self.render_topic] = 1
        self.cache = MessageCache(limits)
        self.bridged = {}
        for entry in self.param('services'):
            name, _, kind = entry.partition(':')
            srv_type = _service_class(kind.strip(), entry)
            ros_client = self.create_client(srv_type, name.strip(), callback_group=self.group)
            entities.append(ros_client)
            self.bridged[self.resolve_service_name(name.strip())] = \
                (ros_client, srv_type, kind.strip())
        self.window_client = self.create_client(
            GetParameters, f'{self.param("executor_node")}/get_parameters',
            callback_group=self.group)
        entities.append(self.window_client)
        self._entities = entities
        self.layout = self._layout(model)
        self.get_logger().info(f'relaying {len(self.topic_types)} topics; clients may '
                               f'publish on {self.correction_topic} and call '
                               f'{", ".join(self.bridged) or "no services"}')

    def activate(self) -> None:
        host = self.param('host')
        port = self.bound_port if self.param('port') == 0 and self.bound_port else \
            self.param('port')
        self.server = PanelServer(self, host, port)
        self.bound_port = self.server.start()
        if not self.token:
            reach = 'this machine' if host in ('127.0.0.1', 'localhost', '::1') else \
                'this port'
            self.get_logger().warning(
                f'serving on {host} without an access token (allow_without_token): any '
                f'process or user that reaches {reach} can correct the robot; for '
                'development only')
        self.get_logger().info(f'web panel: {self.url()}')
        self._ask_window()

    def deactivate(self) -> None:
        self._stop_server()

    def teardown(self) -> None:
        self._stop_server()
        super().teardown()

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    def url(self) -> str:
        host = self.param('host')
        shown = '127.0.0.1' if host in ('0.0.0.0', '::', '') else host
        if ':' in shown:
            shown = f'[{shown}]'
        query = f'?token={quote(self.token, safe="")}' if self.token else ''
        return f'http://{shown}:{self.bound_port}/{query}'

    def _layout(self, model) -> dict:
        """The domain's drawing data (its renderer's) and what the page needs to know of
        the panel."""
        return {
            **panel_view_for(model).layout(), 'domain': model.name, 'agents': ['robot', 'human'],
            'capabilities': [{'name': c.name, 'action': c.action, 'room': c.room,
                              'description': c.description}
                             for c in model.catalog.capabilities],
            'inert': list(model.inert_capabilities),
            'topics': {**self.topic_names, 'session': self.session_topic,
                       'render': self.render_topic},
            'types': {name: kind if isinstance(kind, str) else type_name(kind)
                      for name, kind in self.topic_types.items()},
            'publishable': [self.correction_topic],
            'services': {name: kind for name, (_, _, kind) in self.bridged.items()},
            'sender': self.session.sender,
        }

    # -------------------------------------------------------------- ROS -> clients
    def _relay(self, key: str) -> Callable:
        def on_message(msg) -> None:
            topic = self.topic_names[key]
            body = json.dumps(message_to_json(msg), separators=(',', ':'), allow_nan=False)
            render = self._render_body(msg) if key == 'team_state' else None
            server = self.server
            with self.lock:   # handed to the loop in sequence order
                if key == 'task' and msg.task_id != self.session.task_id:
                    for per_task in PER_TASK:
                        self.cache.clear(self.topic_names[per_task])
                if key == 'team_state' and msg.step == 0:
                    self.cache.clear(topic)
                seq = self.cache.add(topic, body)
                drawn = None if render is None else self.cache.add(self.render_topic, render)
                changed = self.session.observe(key, msg)
                if server is not None:
                    server.deliver(topic, seq, body)
                    if drawn is not None:
                        server.deliver(self.render_topic, drawn, render)
                    if changed:
                        server.deliver(self.session_topic, self.cache.bump(), None)
                    if key == 'correction_status' and msg.sender == self.session.sender:
                        server.verdict(msg)
            if key == 'intent' and self.session.window_s is None:
                self._ask_window()
        return on_message

    def _render_body(self, msg: TeamState) -> str:
        """A team state's drawing data, as the domain's panel view gives it, or why
        there is none: the page must not guess a numeric domain's state from facts."""
        data: dict[str, Any] = {'task_id': msg.task_id, 'step': msg.step}
        model = self.session.model
        try:
            view = panel_view_for(model)
            data['data'] = _plain(view.render(conv.state_from_team_state(model, msg)))
        except CecmError as error:
            data['error'] = str(error)
        return json.dumps(data, separators=(',', ':'), allow_nan=False)

    def session_body(self) -> str:
        """The derived session as JSON (the ``msg`` of its ``publish``)."""
        with self.lock:
            return self._session_body()

    def _session_body(self) -> str:
        return json.dumps(self.session.to_json(), separators=(',', ':'), allow_nan=False)

    def snapshot(self, topic: str) -> tuple[list[tuple[int, str]], int]:
        """The cached messages' JSON of a topic (the session: built now) and the
        sequence."""
        with self.lock:
            if topic == self.session_topic:
                return [(self.cache.seq, self._session_body())], self.cache.seq
            return self.cache.snapshot(topic)

    def type_matches(self, topic: str, given: str) -> bool:
        kind = self.topic_types[topic]
        return given == kind if isinstance(kind, str) else same_type(given, kind)

    def type_label(self, topic: str) -> str:
        kind = self.topic_types[topic]
        return kind if isinstance(kind, str) else type_name(kind)

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Pages of the panel itself, or of an origin listed in allowed_origins."""
        parts = urlsplit(origin)
        return parts.netloc == host or origin in self.origins

    # -------------------------------------------------------------- clients -> ROS
    def publish_correction(self, msg: Correction) -> None:
        """Publish a client's correction as this panel's, with a unique stamp.

        The executor copies the stamp into its verdict; that is how the verdict finds
        its way back to the client that sent the correction.
        """
        now = self.get_clock().now().nanoseconds
        with self.lock:
            now = max(now, self._last_stamp + 1)
            self._last_stamp = now
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        msg.sender = self.session.sender
        self.correction_pub.publish(msg)

    def service(self, name: str):
        entry = self.bridged.get(name)
        if entry is None:
            raise BridgeError(f'service {name} may not be called through this panel; '
                              f'services: {", ".join(sorted(self.bridged)) or "none"}')
        if not entry[0].service_is_ready():
            raise BridgeError(f'service {name} is not available right now')
        return entry[0], entry[1]

    def _ask_window(self) -> None:
        """Read the executor's correction window (once it answers) for the countdown."""
        if not self.window_from_executor or self.session.window_s is not None:
            return
        if self._window_future is not None and not self._window_future.done():
            return
        if not self.window_client.service_is_ready():
            return
        future = self.window_client.call_async(
            GetParameters.Request(names=['correction_window_s']))
        self._window_future = future
        future.add_done_callback(self._on_window)

    def _on_window(self, future) -> None:
        response = future.result() if future.exception() is None else None
        if response is None or len(response.values) != 1 or \
                response.values[0].type != ParameterType.PARAMETER_DOUBLE:
            return
        server = self.server
        with self.lock:
            self.session.window_s = response.values[0].double_value
            if server is not None:
                server.deliver(self.session_topic, self.cache.bump(), None)
        self.get_logger().info(f"the executor's correction window is "
                               f'{self.session.window_s:g} s')


def _service_class(kind: str, entry: str) -> type:
    """``cecm_ros/srv/StartTasks`` -> the generated class; ValueError naming the entry."""
    parts = kind.split('/')
    if len(parts) != 3 or parts[1] != 'srv':
        raise ValueError(f'services entry {entry!r} must be NAME:PACKAGE/srv/TYPE')
    try:
        return getattr(importlib.import_module(f'{parts[0]}.srv'), parts[2])
    except (ImportError, AttributeError) as error:
        raise ValueError(f'services entry {entry!r}: unknown service type ({error})') from None


def main(args=None) -> int:
    return run_node(WebPanel, args)


if __name__ == '__main__':
    sys.exit(main())
