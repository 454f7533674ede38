"""lifecycle_manager: brings the managed nodes up, keeps them up, and takes them down.

Like Nav2's lifecycle manager. Parameter ``node_names`` lists the managed nodes in
start order; with ``autostart`` they are configured, then activated, through each
node's ``<node>/change_state`` service. Service ``lifecycle_manager/manage_nodes``
(ManageNodes) starts up, pauses, resumes, resets or shuts them down on request.

A heartbeat asks every node for its state (``<node>/get_state``) every
``heartbeat_period_s``. A node that does not answer ``heartbeat_misses`` times in a row
is reported lost (it died or hangs). A node that answers again, or a respawned process
(``ros2 launch`` respawn, or the demo's process runner), is brought back to active:
configured if it came back unconfigured, then activated; a failed attempt is retried
with a growing delay, up to ``bring_up_attempts`` failures in a row: then the manager
gives up on that node with an ERROR naming it and why it failed (the node's own error
line from ``/rosout`` when there is one), and with ``exit_when_done`` it takes the other
nodes down and exits with code 1, so that a graph that can never come up ends.
``lifecycle_manager/graph_status`` (GraphStatus, latched) says who is active, who is
lost and how often each came back, so that the task manager can tell an interrupted
task from a failed one. Nothing here exits because a node is missing or slow. On SIGINT
or SIGTERM the nodes are deactivated and cleaned up in reverse order.
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
import time

import rclpy
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import (
    Log,
    ParameterType,
)
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from cecm_ros.msg import GraphStatus, NodeStatus
from cecm_ros.nodes.common import QOS_LATCHED, leave, ros_name
from cecm_ros.nodes.diagnostics import ERROR, OK, STALE, WARN, NodeDiagnostics, diagnostic_status
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.parameters import DeclaredParameters
from cecm_ros.session.managed_nodes import LABELS, ErrorLines, ManagedNode, graph_mode
from cecm_ros.srv import ManageNodes

DEFAULT_NODES = ['world_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
                 'executor', 'task_manager']

# transition id -> (label, state before, state after)
STEPS = {
    Transition.TRANSITION_CONFIGURE: ('configure', State.PRIMARY_STATE_UNCONFIGURED,
                                      State.PRIMARY_STATE_INACTIVE),
    Transition.TRANSITION_ACTIVATE: ('activate', State.PRIMARY_STATE_INACTIVE,
                                     State.PRIMARY_STATE_ACTIVE),
    Transition.TRANSITION_DEACTIVATE: ('deactivate', State.PRIMARY_STATE_ACTIVE,
                                       State.PRIMARY_STATE_INACTIVE),
    Transition.TRANSITION_CLEANUP: ('cleanup', State.PRIMARY_STATE_INACTIVE,
                                    State.PRIMARY_STATE_UNCONFIGURED),
    Transition.TRANSITION_UNCONFIGURED_SHUTDOWN: ('shutdown',
                                                  State.PRIMARY_STATE_UNCONFIGURED,
                                                  State.PRIMARY_STATE_FINALIZED),
}
COMMANDS = {ManageNodes.Request.STARTUP: 'startup', ManageNodes.Request.PAUSE: 'pause',
            ManageNodes.Request.RESUME: 'resume', ManageNodes.Request.RESET: 'reset',
            ManageNodes.Request.SHUTDOWN: 'shutdown'}
# A get_state request unanswered this long is sent again (its answer may be lost).
STATE_ATTEMPT_S = 1.0
# How long a refused transition waits for the node's own error line on /rosout (the node
# logs it before it answers, but on another topic, which may be delivered a bit later).
ERROR_WAIT_S = 1.0
LEVELS = {'ok': OK, 'warn': WARN, 'error': ERROR, 'stale': STALE}


class LifecycleManager(BoundedLogging, NodeDiagnostics, DeclaredParameters, Node):
    PARAMETER_REFUSED = 'the nodes are not started until this is fixed'

    def __init__(self, stop: threading.Event, **kwargs):
        super().__init__('lifecycle_manager', **kwargs)
        self.stop = stop
        self._lock = threading.Lock()
        self._pending: set[threading.Event] = set()
        self.start_parameter_checks()
        self.declare('node_names', list(DEFAULT_NODES),
                     'Managed lifecycle nodes, in start-up order (shut down in reverse); '
                     'read at start only', ParameterType.PARAMETER_STRING_ARRAY,
                     read_only=True)
        self.declare('autostart', True, 'Configure and activate all nodes at start-up')
        self.declare('service_wait_s', 60.0,
                     "How long start-up waits for a node's lifecycle services before it "
                     'leaves that node to the heartbeat', low=0.0, high=3600.0)
        self.declare('transition_timeout_s', 120.0,
                     'How long one transition (e.g. configure) may take',
                     low=0.1, high=3600.0)
        self.declare('shutdown_timeout_s', 3.0,
                     "Time budget of the whole reverse shutdown (under ros2 launch's "
                     '5 s SIGINT-to-SIGTERM escalation)', low=0.1, high=600.0)
        self.declare('heartbeat_period_s', 1.0, 'How often every node is asked its state',
                     low=0.1, high=60.0)
        self.declare('heartbeat_timeout_s', 2.0, 'How long a node has to answer',
                     low=0.05, high=60.0)
        self.declare('heartbeat_misses', 3,
                     'Unanswered heartbeats in a row after which a node is reported lost',
                     low=1, high=1000)
        self.declare('recover', True,
                     'Bring a node that came back (respawned, or answering again) back to '
                     'active')
        self.declare('bring_up_attempts', 5,
                     'Failed attempts in a row to bring a node up (configure, activate) '
                     'after which the manager gives up on it; 0 = never', low=0, high=1000)
        self.declare('exit_when_done', False,
                     'When it gives up on a node: take the others down and exit with code '
                     '1 (else it keeps serving them)')
        self.names = list(self.get_parameter('node_names').value)
        if len(set(self.names)) != len(self.names) or not self.names or \
                any(ros_name()(f'{name}/change_state') for name in self.names):
            raise ValueError(f'node_names must be distinct valid node names, got {self.names}')
        group = ReentrantCallbackGroup()
        self.change = {n: self.create_client(ChangeState, f'{n}/change_state',
                                             callback_group=group) for n in self.names}
        self.get = {n: self.create_client(GetState, f'{n}/get_state', callback_group=group)
                    for n in self.names}
        self.nodes = {name: ManagedNode() for name in self.names}
        self.exit_code = 0
        # Each managed node's latest ERROR line on /rosout (when heard, text): its own
        # words for why a transition failed. Logger names are the nodes' full names.
        self._loggers = {self._full_name(n).lstrip('/').replace('/', '.'): n
                         for n in self.names}
        self.errors = ErrorLines()
        self.create_subscription(Log, '/rosout', self._on_rosout,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
                                 callback_group=group)
        self.mode = 'starting'
        self.commands: queue.SimpleQueue = queue.SimpleQueue()
        self.start_diagnostics()
        self.status_pub = self.create_publisher(GraphStatus, '~/graph_status', QOS_LATCHED)
        self.create_service(ManageNodes, '~/manage_nodes', self._on_manage,
                            callback_group=group)
        self._published = None
        self._last_publish = 0.0
        self.started = self.get_clock().now().to_msg()

    def value(self, name: str):
        return self.get_parameter(name).value

    def _full_name(self, name: str) -> str:
        """A managed node's full name (a relative one is in this node's namespace)."""
        if name.startswith('/'):
            return name
        return f'{self.get_namespace().rstrip("/")}/{name}'

    def _on_rosout(self, msg: Log) -> None:
        """Keep a managed node's error lines: the reason its configure or activate failed."""
        name = self._loggers.get(msg.name)
        if name is not None and msg.level >= Log.ERROR:
            self.errors.heard(name, msg.msg)

    # ------------------------------------------------------------------- calls
    def _call(self, client, request, timeout_s: float, interruptible: bool = True):
        """Call a service; None on timeout (or on a stop request when interruptible)."""
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if interruptible:
            with self._lock:
                self._pending.add(done)
        try:
            done.wait(timeout_s)
        finally:
            with self._lock:
                self._pending.discard(done)
        if not future.done():
            client.remove_pending_request(future)
            return None
        return future.result()

    def interrupt(self) -> None:
        """A stop request: wake the supervisor wherever it waits."""
        self.stop.set()
        with self._lock:
            for event in self._pending:
                event.set()

    def state_of(self, name: str, timeout_s: float, interruptible: bool = True) -> int | None:
        """The node's state, asked again every STATE_ATTEMPT_S within ``timeout_s``: the
        first answer of a node that has not yet discovered this node's reply reader is
        lost (DDS), and one lost answer must not cost the whole timeout."""
        deadline = time.monotonic() + timeout_s
        while self.get[name].service_is_ready():
            left = deadline - time.monotonic()
            response = self._call(self.get[name], GetState.Request(),
                                  min(STATE_ATTEMPT_S, max(left, 0.0)), interruptible)
            if response is not None:
                return response.current_state.id
            if deadline - time.monotonic() <= 0 or (interruptible and self.stop.is_set()):
                return None
        return None

    def transition(self, name: str, transition: int, timeout_s: float,
                   interruptible: bool = True, may_be_gone: bool = False) -> bool:
        """``may_be_gone``: at process shutdown every node got the same SIGINT, so one
        that answered a moment ago may have ended since, which is no error."""
        label, before, after = STEPS[transition]
        node = self.nodes[name]
        state = self.state_of(name, min(timeout_s, 10.0), interruptible)
        if state is None:
            node.reason = f'no answer from {name}/get_state'
            if may_be_gone:
                self.get_logger().info(f'{name}: no answer (gone or stopping)')
            else:
                self.get_logger().error(f'{name}: cannot {label}: {node.reason}')
            return False
        if state == after:
            return True   # already there (e.g. started by hand)
        if state != before:
            node.reason = f'cannot {label} from state {LABELS.get(state, state)}'
            self.get_logger().error(f'{name}: {node.reason}')
            return False
        self.get_logger().info(f'{name}: {label} ...')
        started = time.monotonic()
        request = ChangeState.Request(transition=Transition(id=transition))
        response = self._call(self.change[name], request, timeout_s, interruptible)
        if response is None:
            node.reason = f'{label} gave no answer within {timeout_s:g} s'
            if may_be_gone:
                self.get_logger().info(f'{name}: no answer to {label} (gone or stopping)')
            else:
                self.get_logger().error(f'{name}: {node.reason}')
            return False
        if not response.success:
            said = self.errors.since(name, started, ERROR_WAIT_S)
            node.reason = f'{label} failed; its log: {said}' if said else \
                f'{label} failed (its log says why)'
            self.get_logger().error(f'{name}: {node.reason}')
            return False
        with self._lock:
            self.nodes[name].state = after
        self.get_logger().info(f'{name}: {label} done ({time.monotonic() - started:.1f} s)')
        return True

    def bring_up(self, name: str, timeout_s: float) -> bool:
        """Configure (if needed) and activate one node."""
        state = self.state_of(name, min(timeout_s, 10.0))
        if state == State.PRIMARY_STATE_UNCONFIGURED and \
                not self.transition(name, Transition.TRANSITION_CONFIGURE, timeout_s):
            return False
        return self.transition(name, Transition.TRANSITION_ACTIVATE, timeout_s)

    # ------------------------------------------------------------------ commands
    def startup(self) -> bool:
        if self.parameter_errors:
            self.mode = 'stopped'
            self.get_logger().error('startup refused: ' + '; '.join(self.parameter_errors))
            return False
        wait_s = self.value('service_wait_s')
        timeout_s = self.value('transition_timeout_s')
        self.mode = 'starting'
        self.get_logger().info(f'starting {len(self.names)} nodes: {", ".join(self.names)}')
        deadline = time.monotonic() + wait_s
        missing = list(self.names)
        while missing and time.monotonic() < deadline and not self.stop.is_set():
            missing = [n for n in missing if not (self.change[n].service_is_ready()
                                                  and self.get[n].service_is_ready())]
            if missing:
                self.stop.wait(0.2)
        if missing and not self.stop.is_set():
            self.get_logger().error(f'lifecycle services of {", ".join(missing)} not found '
                                    f'within {wait_s:g} s; they are brought up when they '
                                    'appear')
        ok = not missing
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            for name in self.names:
                if name in missing or self.stop.is_set():
                    continue
                state = self.state_of(name, min(timeout_s, 10.0))
                if state in (State.PRIMARY_STATE_ACTIVE, STEPS[transition][2]):
                    continue   # already there (a restarted manager finds its nodes up)
                if not self.transition(name, transition, timeout_s):
                    ok = False
                    missing.append(name)   # the heartbeat retries it
                    self._failed(name)
        self.mode = 'active'
        for name in self.names:
            if name not in missing:
                with self._lock:
                    self.nodes[name].was_active = True
        if ok:
            self.get_logger().info(f'all {len(self.names)} nodes are active')
        return ok

    def take_down(self, transitions: list[int], budget_s: float,
                  interruptible: bool = False) -> bool:
        """The given transitions for every node, in reverse order, within the budget."""
        deadline = time.monotonic() + budget_s
        ok = True
        for name in reversed(self.names):
            left = deadline - time.monotonic()
            if left <= 0.05:
                self.get_logger().warning(f'time budget used up before {name}')
                return False
            state = self.state_of(name, min(left, 0.5), interruptible)
            if state is None:
                self.get_logger().info(f'{name}: no answer (gone or stopping)')
                continue
            for transition in transitions:
                label, before, after = STEPS[transition]
                left = deadline - time.monotonic()
                if state != before or left <= 0.05:
                    continue
                if not self.transition(name, transition, left, interruptible):
                    ok = False
                    break
                state = after
        return ok

    def shutdown(self) -> None:
        """Deactivate and clean up in reverse order within ``shutdown_timeout_s`` in all.

        Under ``ros2 launch`` every node gets the same SIGINT and ends by itself: the
        states are asked of all nodes at once, briefly, and only those that answer are
        taken down, so that the whole stays within launch's 5 s before SIGTERM.
        """
        self.mode = 'stopped'
        budget = self.value('shutdown_timeout_s')
        deadline = time.monotonic() + budget
        self.get_logger().info('shutting down the managed nodes in reverse order')
        alive = self.states(min(0.5, budget / 3))
        for name in reversed(self.names):
            state = alive.get(name)
            if state is None:
                self.get_logger().info(f'{name}: no answer (gone or stopping)')
                continue
            for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP):
                _, before, after = STEPS[transition]
                left = deadline - time.monotonic()
                if state != before:
                    continue
                if left <= 0.05:
                    self.get_logger().warning(f'shutdown budget used up before {name}')
                    return
                if not self.transition(name, transition, left, interruptible=False,
                                       may_be_gone=True):
                    break
                state = after
        self.get_logger().info('shutdown of the managed nodes done')

    def execute(self, command: int) -> tuple[bool, str]:
        """Run a ManageNodes command (in the supervisor thread)."""
        timeout = self.value('transition_timeout_s')
        name = COMMANDS[command]
        if command == ManageNodes.Request.STARTUP and self.parameter_errors:
            self.startup()
            return False, 'startup refused: ' + '; '.join(self.parameter_errors)
        if command == ManageNodes.Request.STARTUP:
            for node in self.nodes.values():   # a node given up on is tried afresh
                node.afresh()
            ok = self.startup()
        elif command == ManageNodes.Request.PAUSE:
            self.mode = 'paused'
            ok = self.take_down([Transition.TRANSITION_DEACTIVATE], timeout * len(self.names),
                                interruptible=True)
        elif command == ManageNodes.Request.RESUME:
            self.mode = 'active'
            ok = all(self.transition(n, Transition.TRANSITION_ACTIVATE, timeout)
                     for n in self.names)
        elif command == ManageNodes.Request.RESET:
            self.mode = 'stopped'
            ok = self.take_down([Transition.TRANSITION_DEACTIVATE,
                                 Transition.TRANSITION_CLEANUP], timeout * len(self.names),
                                interruptible=True)
        else:
            self.mode = 'stopped'
            ok = self.take_down([Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP,
                                 Transition.TRANSITION_UNCONFIGURED_SHUTDOWN],
                                timeout * len(self.names), interruptible=True)
        message = f'{name}: ' + ('done' if ok else 'not every node followed (see the log)')
        self.get_logger().info(message)
        return ok, message

    def _on_manage(self, request: ManageNodes.Request, response: ManageNodes.Response):
        if request.command not in COMMANDS:
            response.success = False
            response.message = (f'unknown command {request.command}; commands: ' +
                                ', '.join(f'{k} {v}' for k, v in COMMANDS.items()))
            return response
        answer: Future = Future()
        self.commands.put((request.command, answer))
        done = threading.Event()
        answer.add_done_callback(lambda _: done.set())
        timeout = self.value('transition_timeout_s') * (2 * len(self.names) + 1)
        if not done.wait(timeout):
            response.success, response.message = False, 'no answer in time (still working)'
            return response
        response.success, response.message = answer.result()
        return response

    # ----------------------------------------------------------------- heartbeat
    def states(self, timeout_s: float) -> dict[str, int]:
        """Ask every node its state at once; the answers that came within the timeout.
        A stop request ends the wait early."""
        waiting = {}
        for name in self.names:
            if self.get[name].service_is_ready():
                event = threading.Event()
                future = self.get[name].call_async(GetState.Request())
                future.add_done_callback(lambda _, e=event: e.set())
                waiting[name] = (future, event)
        with self._lock:
            self._pending.update(event for _, event in waiting.values())
        deadline = time.monotonic() + timeout_s
        answers = {}
        try:
            for name, (future, event) in waiting.items():
                event.wait(max(0.0, deadline - time.monotonic()))
                if future.done() and future.result() is not None:
                    answers[name] = future.result().current_state.id
                else:
                    self.get[name].remove_pending_request(future)
        finally:
            with self._lock:
                self._pending.difference_update(event for _, event in waiting.values())
        return answers

    def heartbeat(self) -> None:
        """Ask every node its state; note who answers; bring back who came back."""
        answers = self.states(self.value('heartbeat_timeout_s'))
        if self.stop.is_set():
            return   # stopping: silence now is no news
        now = time.monotonic()
        for name in self.names:
            if self.stop.is_set():
                return   # it gave up with exit_when_done
            self._note(name, answers.get(name), now)

    def _note(self, name: str, state: int | None, now: float) -> None:
        node = self.nodes[name]
        if state is None:
            if node.missed(self.value('heartbeat_misses')):
                self.get_logger().warning(
                    f'{name}: no answer to {node.misses} heartbeats (died or hangs); it is '
                    'brought back when it answers again')
            elif self.get[name].service_is_ready() and node.never_answered():
                self.get_logger().warning(node.never_answered_warning(name))
            return
        if node.answered(state, now):
            self.get_logger().info(f'{name}: answers again ({LABELS.get(state, state)})')
        if state == State.PRIMARY_STATE_ACTIVE or self.mode != 'active' or \
                not self.value('recover'):
            return
        if state not in (State.PRIMARY_STATE_UNCONFIGURED, State.PRIMARY_STATE_INACTIVE):
            if state == State.PRIMARY_STATE_FINALIZED and node.failures == 0:
                node.failures = 1
                self.get_logger().error(f'{name} is finalized; only a new process of it can '
                                        'be brought back')
            return
        if not node.due(now):
            return
        self.get_logger().warning(f'{name} is {LABELS[state]}: bringing it back to active')
        if self.bring_up(name, self.value('transition_timeout_s')):
            node.became_active()
            self.get_logger().info(f'{name}: back to active (recovery {node.recoveries})')
        else:
            self._failed(name)

    def _failed(self, name: str) -> None:
        """One more failed attempt to bring ``name`` up: the next one after a growing
        delay, or none after ``bring_up_attempts`` in a row (a node that can never
        configure must not keep the graph waiting for ever)."""
        if self.stop.is_set():
            return   # cut short by a stop request: no failure of the node's
        node = self.nodes[name]
        limit = self.value('bring_up_attempts')
        delay = node.failed(limit, time.monotonic())
        if delay is None:
            self._give_up(name)
            return
        self.get_logger().warning(f'{name}: bringing it up failed ({node.failures} of '
                                  f'{limit or "unlimited"} attempts in a row); next attempt '
                                  f'in {delay:g} s')

    def _give_up(self, name: str) -> None:
        node = self.nodes[name]
        reason = (f'giving up on {name}: {node.failures} attempts in a row to bring it up '
                  f'failed (bring_up_attempts), the last: {node.reason}')
        if self.value('exit_when_done'):
            self.exit_code = 1
            self.get_logger().error(f'{reason}; exit_when_done: taking the other nodes down '
                                    'and exiting with code 1')
            self.stop.set()
        else:
            self.get_logger().error(f'{reason}; it is left as it is (manage_nodes STARTUP '
                                    'tries again)')

    def publish_status(self, force: bool = False) -> None:
        now = time.monotonic()
        entries = []
        for name in self.names:
            node = self.nodes[name]
            state, label = node.reported()
            silent = node.silent_s(now)
            entries.append(NodeStatus(
                name=name, state=state, state_label=label, responsive=node.responsive,
                recoveries=node.recoveries, silent_s=silent if silent is not None else -1.0))
        mode, all_active = graph_mode(self.mode, [self.nodes[name] for name in self.names])
        key = (mode, all_active, tuple((e.state, e.responsive, e.recoveries) for e in entries))
        if not force and key == self._published and now - self._last_publish < 5.0:
            return
        msg = GraphStatus(manager_started=self.started, all_active=all_active, mode=mode,
                          nodes=entries)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)
        self._published, self._last_publish = key, now

    def diagnostic_values(self) -> dict:
        return {'mode': self.mode, 'managed_nodes': ', '.join(self.names)}

    def diagnostic_statuses(self) -> list:
        """Its own status, and one per managed node as its heartbeat hears it: STALE
        while the node does not answer (killed, hung, not started yet), as an aggregator
        marks a status that stopped coming."""
        statuses = super().diagnostic_statuses()
        now = time.monotonic()
        misses = self.value('heartbeat_misses')
        for name in self.names:
            level, message, values = self.nodes[name].health(misses, now)
            statuses.append(diagnostic_status(f'{self.get_name()}: {name}', LEVELS[level],
                                              message, values, hardware_id=name))
        return statuses

    # ---------------------------------------------------------------- supervisor
    def supervise(self) -> None:
        if self.value('autostart'):
            self.startup()
        else:
            self.mode = 'stopped'
            self.get_logger().info('autostart is off: waiting for a manage_nodes command')
        self.publish_status(force=True)
        period = self.value('heartbeat_period_s')
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                command, answer = self.commands.get_nowait()
            except queue.Empty:
                pass
            else:
                answer.set_result(self.execute(command))
            self.heartbeat()
            self.publish_status()
            self.stop.wait(max(0.0, period - (time.monotonic() - started)))


def main(args=None) -> int:
    # The reverse shutdown needs a live ROS context, so SIGINT/SIGTERM do not go to
    # rclpy: a Python handler turns them into a stop request. The main thread spins
    # (in short waits, so that the handler runs promptly); the supervisor thread starts
    # the nodes, keeps them up and takes them down.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = LifecycleManager(threading.Event())
    except Exception as error:  # noqa: BLE001 - a bad parameter is a clear message
        print(f'lifecycle_manager cannot start: {error}', file=sys.stderr)
        rclpy.try_shutdown()
        return leave(1)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: node.interrupt())
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    done = Future()

    def supervise() -> None:
        try:
            node.supervise()
        finally:
            node.shutdown()
            done.set_result(node.exit_code)

    supervisor = threading.Thread(target=supervise)
    supervisor.start()
    try:
        while not done.done():
            executor.spin_once(timeout_sec=0.25)
        supervisor.join()
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return leave(done.result())


if __name__ == '__main__':
    sys.exit(main())
