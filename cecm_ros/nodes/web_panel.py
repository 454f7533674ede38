"""web_panel: correct the robot from a browser, and watch it learn.

Serves one page (``cecm_ros/web/``: index.html, app.js, style.css) and one WebSocket
(``/ws``) and bridges them to the graph's topics and services. The WebSocket speaks a
documented subset of the rosbridge v2 JSON protocol (``subscribe``, ``unsubscribe``,
``advertise``, ``publish``, ``call_service``, answered with ``publish``,
``service_response`` and ``status``), so a roslibjs client can use it too; docs/nodes.md
lists the subset. As rosbridge does, it answers every client with the names as that
client spelled them (``capability_belief`` or ``/capability_belief``): roslibjs routes a
``publish`` by the topic name its own ``subscribe`` gave.

What the panel adds to the topics it relays is derived state a browser cannot compute:
``/web_panel/session`` (the open correction window, the robot actions that apply in its
state, the countdown, who answered) from the intents, team states, step results and
correction verdicts it sees, and ``/web_panel/render``, the domain panel view's ``render`` of
each team state (a numeric state such as Overcooked's is drawn from it, not from
facts). It computes nothing the core or the graph does not already publish. Only
``robot/correction`` is publishable; every correction's verdict comes back from the
executor (``robot/correction_status``) to the client that sent it.

With ``play`` a person plays the partner on the page: the session also offers the
partner's own actions that apply now (each on a key) and what happened at each step, and
``human/choice`` becomes publishable too: a person's choice is checked against the open
step here and published as a PartnerChoice for ``simulated_human`` (``partner_behaviour:
person``), which sends it to the world.

This module is the node only: parameters, subscriptions, the correction publisher and
the service clients, each message turned into a call on the ROS-free layers of
:mod:`cecm_ros.web`: :mod:`~cecm_ros.web.codec` (messages <-> rosbridge JSON),
:mod:`~cecm_ros.web.session_state` (the derived session) and
:mod:`~cecm_ros.web.server` (aiohttp in a thread with its own loop, the cache, the
checks), so that what faces the network and what the panel concludes can be read and
tested without a graph.
"""

from __future__ import annotations

import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

import cecm_ros
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import panel_view_for
from cecm_ros.msg import (
    CapabilityBelief,
    Correction,
    CorrectionStatus,
    JointPlan,
    PartnerChoice,
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
from cecm_ros.web.codec import BridgeError, dumps, message_to_json, plain, service_class, type_name
from cecm_ros.web.server import VERDICT_TIMEOUT_S, PanelServer, Relay, ServerSettings
from cecm_ros.web.session_state import SessionState


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
    TopicSpec('choice', 'human/choice', PartnerChoice, QOS_EVENTS, 100,
              "A person's choices of the partner's actions (with play: clients publish "
              'them here)'),
)


def relay_checks(model) -> dict[str, Callable]:
    """What a relayed message must pass, by topic key: the checks of the nodes that take
    it (conversions; the team states are kept by conversions.TeamStates). A belief is
    also refused when it is older than the last one taken, as the planner refuses it."""
    held: list[CapabilityBelief] = []

    def belief(msg: CapabilityBelief) -> None:
        conv.estimate_from_belief_msg(model.catalog, msg)
        if held and conv.stamped_before(msg, held[-1]):
            raise conv.MessageError(f'belief after {msg.tasks_seen} tasks: it is older than '
                                    'the one shown (out of order)')
        held[:] = [msg]

    return {'task': partial(conv.task_from_msg, model),
            'intent': partial(conv.intent_from_msg, model),
            'step_result': partial(conv.step_result_action, model),
            'belief': belief,
            'robot_plan': partial(conv.plan_from_msg, model),
            'partner_plan': partial(conv.plan_from_msg, model)}


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
        self.declare('sender', 'web_panel',
                     'The sender named in the corrections (and partner choices) it publishes')
        self.declare('play', False,
                     "Play mode: a person plays the partner; the page offers the partner's "
                     'own actions and publishes the choice on human/choice (run '
                     'simulated_human with partner_behaviour person)')
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
        self.declare('verdict_timeout_s', VERDICT_TIMEOUT_S,
                     "How long a client's correction awaits the executor's verdict before "
                     'the client is told none came', low=0.1, high=3600.0)
        self.declare('web_dir', '',
                     "Folder with index.html, app.js and style.css; '' = the installed "
                     'cecm_ros/web')
        self.server: PanelServer | None = None
        self.relay: Relay | None = None
        self.bound_port: int | None = None
        self._window_future = None
        self._stamp_lock = threading.Lock()
        self._last_stamp = 0
        # Made once per process, so that a reconfigure or a recovery keeps the URL.
        self._random_token = secrets.token_urlsafe(16)

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        model = self.model = self.load_model()
        token = self.param('access_token')
        if not token and not self.param('allow_without_token'):
            token = self._random_token   # as notebook servers do: never open
        max_clients = self.param('max_clients')
        max_bytes = self.param('max_message_bytes')
        rate = self.param('messages_per_second')
        origins = frozenset(o.strip().rstrip('/') for o in
                            self.param('allowed_origins').split(',') if o.strip())
        if max_clients < 1 or max_bytes < 256 or rate <= 0:
            raise ValueError('max_clients must be at least 1, max_message_bytes at least 256 '
                             'and messages_per_second positive')
        folder = Path(self.param('web_dir') or Path(cecm_ros.__file__).parent / 'web')
        assets = {name: folder / name for name in ('app.js', 'style.css')}
        missing = [str(p) for p in (folder / 'index.html', *assets.values())
                   if not p.is_file()]
        if missing:
            raise FileNotFoundError(f'web assets missing: {", ".join(missing)}')
        page = (folder / 'index.html').read_text()
        window = self.param('correction_window_s')
        self.view = panel_view_for(model)
        view_layout = self.view.layout()
        play = self.param('play')
        session = SessionState(model=model, sender=self.param('sender'),
                               state_of=partial(conv.state_from_team_state, model),
                               team_states=conv.TeamStates(model),
                               checks=relay_checks(model),
                               window_s=window if window > 0 else None, play=play,
                               task_of=partial(conv.task_from_msg, model),
                               key_order=tuple(view_layout.get('key_order', ())))
        self.window_from_executor = window <= 0
        self.correction_pub = self.create_lifecycle_publisher(
            Correction, self.param('correction_topic'), QOS_EVENTS)
        entities = [self.correction_pub]
        self.choice_pub = None
        self._last_choice = None   # the last choice published: sent again on request
        if play:
            self.choice_pub = self.create_lifecycle_publisher(
                PartnerChoice, self.param('choice_topic'), QOS_EVENTS)
            entities.append(self.choice_pub)
        relays = MutuallyExclusiveCallbackGroup()   # one message at a time, in order
        names: dict[str, str] = {}
        types: dict[str, type] = {}
        limits = {}
        for spec in TOPICS:
            subscription = self.create_subscription(
                spec.msg_type, self.param(f'{spec.key}_topic'),
                self.guarded(self._relay(spec.key), spec.key), spec.qos,
                callback_group=relays)
            entities.append(subscription)
            names[spec.key] = subscription.topic_name
            types[subscription.topic_name] = spec.msg_type
            limits[subscription.topic_name] = spec.replay
        relay = self.relay = Relay(session, names, types, limits,
                                   self.resolve_topic_name('~/session'),
                                   self.resolve_topic_name('~/render'))
        self.bridged = {}
        for entry in self.param('services'):
            name, _, kind = entry.partition(':')
            srv_type = service_class(kind.strip(), entry)
            ros_client = self.create_client(srv_type, name.strip(), callback_group=self.group)
            entities.append(ros_client)
            self.bridged[self.resolve_service_name(name.strip())] = \
                (ros_client, srv_type, kind.strip())
        self.window_client = self.create_client(
            GetParameters, f'{self.param("executor_node")}/get_parameters',
            callback_group=self.group)
        entities.append(self.window_client)
        self._entities = entities
        self.settings = ServerSettings(
            token=token, page=page, assets=assets, layout=self._layout(view_layout),
            origins=origins,
            max_clients=max_clients, max_bytes=max_bytes, rate=rate,
            service_timeout=self.param('service_timeout_s'),
            verdict_timeout=self.param('verdict_timeout_s'))
        self.get_logger().info(f'relaying {len(relay.topic_types)} topics; clients may '
                               f'publish on {" and ".join(relay.publishable)} and call '
                               f'{", ".join(self.bridged) or "no services"}'
                               + ('; play mode: a person plays the partner' if play else ''))

    def activate(self) -> None:
        host = self.param('host')
        port = self.bound_port if self.param('port') == 0 and self.bound_port else \
            self.param('port')
        self.server = PanelServer(self.relay, self.settings, self, host, port)
        self.relay.server = self.server
        self.bound_port = self.server.start()
        if not self.settings.token:
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
        if self.relay is not None:
            self.relay.server = None
        if server is not None:
            server.stop()

    def url(self) -> str:
        host = self.param('host')
        shown = '127.0.0.1' if host in ('0.0.0.0', '::', '') else host
        if ':' in shown:
            shown = f'[{shown}]'
        token = self.settings.token
        query = f'?token={quote(token, safe="")}' if token else ''
        return f'http://{shown}:{self.bound_port}/{query}'

    def _layout(self, view_layout: dict) -> dict:
        """The domain's drawing data (its panel view's) and what the page needs to know
        of the panel."""
        model, relay = self.model, self.relay
        return {
            **view_layout, 'domain': model.name, 'agents': ['robot', 'human'],
            'capabilities': [{'name': c.name, 'action': c.action, 'room': c.room,
                              'description': c.description}
                             for c in model.catalog.capabilities],
            'inert': list(model.inert_capabilities),
            'topics': {**relay.topic_names, 'session': relay.session_topic,
                       'render': relay.render_topic},
            'types': {name: kind if isinstance(kind, str) else type_name(kind)
                      for name, kind in relay.topic_types.items()},
            'publishable': relay.publishable, 'play': relay.session.play,
            'services': {name: kind for name, (_, _, kind) in self.bridged.items()},
            'sender': relay.session.sender,
        }

    # -------------------------------------------------------------- ROS -> clients
    def _relay(self, key: str) -> Callable:
        def on_message(msg) -> None:
            body = dumps(message_to_json(msg))
            render = self._render_body(msg) if key == 'team_state' else None
            relay = self.relay
            problem = relay.received(key, msg, body, render)
            if problem:
                self.get_logger().warning(f'ignoring {self.param(f"{key}_topic")}: {problem}')
                return
            if key == 'intent' and relay.session.window_s is None:
                self._ask_window()
            if key == 'intent' and msg.repeated:
                self._resend_choice(msg)
        return on_message

    def _resend_choice(self, intent) -> None:
        """The intent of a step announced again means the world still waits for that
        step: a choice published for it may have gone before the partner node's
        subscription was matched (a volatile message is then lost), so it goes again
        (the partner node takes the first copy and ignores the others)."""
        kept = self._last_choice
        if kept is None or self.choice_pub is None or \
                (kept.task_id, kept.attempt, kept.step) != \
                (intent.task_id, intent.attempt, intent.step):
            return
        self.choice_pub.publish(kept)

    def _render_body(self, msg: TeamState) -> str:
        """A team state's drawing data, as the domain's panel view gives it, or why
        there is none: the page must not guess a numeric domain's state from facts."""
        data: dict[str, Any] = {'task_id': msg.task_id, 'step': msg.step}
        try:
            data['data'] = plain(self.view.render(conv.state_from_team_state(self.model, msg)))
        except CecmError as error:
            data['error'] = str(error)
        return dumps(data)

    # -------------------------------------------------------------- clients -> ROS
    # (the server's RosSide: called on its loop's thread)
    def check_correction(self, msg: Correction) -> None:
        """The executor's own check of what an answer says (conversions)."""
        try:
            conv.correction_from_msg(self.model, msg)
        except conv.MessageError as error:
            raise BridgeError(str(error)) from None

    def publish_correction(self, msg: Correction) -> None:
        """Publish a client's correction as this panel's, with a unique stamp.

        The executor copies the stamp into its verdict; that is how the verdict finds
        its way back to the client that sent the correction.
        """
        now = self.get_clock().now().nanoseconds
        with self._stamp_lock:
            now = max(now, self._last_stamp + 1)
            self._last_stamp = now
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        msg.sender = self.relay.session.sender
        self.correction_pub.publish(msg)

    def publish_choice(self, msg: PartnerChoice) -> None:
        """Publish a person's choice (already checked) as this panel's."""
        if self.choice_pub is None:
            raise BridgeError('play mode is off (parameter play)')
        msg.header.stamp = self.stamp()
        msg.sender = self.relay.session.sender
        self.choice_pub.publish(msg)
        self._last_choice = msg

    def choice_listeners(self) -> int:
        """Subscriptions matched with the choices' publisher besides this panel's own
        relay (the partner node). Matched, not merely in the graph: a subscription
        the graph lists before DDS matched it would lose the choice."""
        if self.choice_pub is None:
            return 0
        return max(0, self.choice_pub.get_subscription_count() - 1)

    def service_type(self, name: str) -> type:
        entry = self.bridged.get(name)
        if entry is None:
            raise BridgeError(f'service {name} may not be called through this panel; '
                              f'services: {", ".join(sorted(self.bridged)) or "none"}')
        if not entry[0].service_is_ready():
            raise BridgeError(f'service {name} is not available right now')
        return entry[1]

    def call_service(self, name: str, request):
        return self.bridged[name][0].call_async(request)

    def forget_call(self, name: str, future) -> None:
        self.bridged[name][0].remove_pending_request(future)

    # ------------------------------------------------------ the executor's window
    def _ask_window(self) -> None:
        """Read the executor's correction window (once it answers) for the countdown."""
        if not self.window_from_executor or self.relay.session.window_s is not None:
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
        self.relay.set_window(response.values[0].double_value)
        self.get_logger().info(f"the executor's correction window is "
                               f'{self.relay.session.window_s:g} s')


def main(args=None) -> int:
    return run_node(WebPanel, args)


if __name__ == '__main__':
    sys.exit(main())
