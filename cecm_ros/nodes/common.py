"""What every node shares: QoS profiles, the lifecycle base ``CecmNode`` and waiting.

CecmNode mixes in the parameters (parameters.py), the domain as parameters
(domain_parameters.py), calls to peers (peers.py) and its status on /diagnostics
(diagnostics.py); process.py runs a node's process.
The names the nodes use from those are also importable from here (no others).

Waiting inside callbacks: every node runs on a MultiThreadedExecutor and creates its
interfaces in a reentrant callback group, so a callback may block on a service or
action future while other callbacks (the answer, topic messages) keep running. All
blocking waits go through :meth:`CecmNode.wait_until`, one condition variable per
node that every state change notifies; shutdown wakes every waiter at once.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable
from functools import wraps

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.lifecycle import (
    LifecycleNode,
    LifecyclePublisher,
    LifecycleState,
    TransitionCallbackReturn,
)
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.service import Service
from rclpy.subscription import Subscription
from rclpy.task import Future
from rclpy.timer import Timer
from rclpy.validate_topic_name import validate_topic_name

from cecm_ros.nodes.diagnostics import NodeDiagnostics
from cecm_ros.nodes.domain_parameters import DomainParameters
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.parameters import DeclaredParameters
from cecm_ros.nodes.peers import (  # noqa: F401 - re-exported: the nodes import them from here
    GoalRejectedError,
    PeerCalls,
    PeerUnavailableError,
    ResultTimeoutError,
    SafeActionClient,
    StopRequestedError,
    WaitInterruptedError,
    finish_goal,
)
from cecm_ros.nodes.process import (  # noqa: F401 - re-exported
    EXECUTOR_THREADS,
    leave,
    lower_priority,
    run_node,
)
from cecm_ros.nodes.skill_kinds import ALL as ALL_SKILLS  # noqa: F401 - re-exported

# Beliefs, task requests and plans: the latest value matters, also to late joiners.
QOS_LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The team state of every step is needed (a trajectory must not have holes), also by
# a subscriber whose match with the world completes after a reset (step 0).
QOS_TEAM_STATE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=50,
                            reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL)
# Intents, corrections and step results: every one matters, only while it is current.
# Deep enough that a burst from several senders at once (panels, consoles, a gamepad, the
# simulated partner) waits in the queue of a busy subscriber instead of being dropped.
QOS_EVENTS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
# A session's per-task reports: a late subscriber (a browser panel) gets its history.
QOS_HISTORY = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE

class CecmNode(BoundedLogging, DomainParameters, PeerCalls, NodeDiagnostics, DeclaredParameters,
               LifecycleNode):
    """A lifecycle node with declared parameters, one reentrant group and a waiter.

    Subclasses implement ``configure`` (read parameters, build core objects, create
    interfaces; raise to fail the transition), optionally ``activate``/``deactivate``,
    and ``teardown`` (destroy what ``configure`` created; must tolerate partial setup).
    """

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)
        self.group = ReentrantCallbackGroup()
        self.active = False
        self.stopping = threading.Event()
        self.finished: Future = Future()   # completes when the process should end
        self.exit_code = 0
        self._condition = threading.Condition()
        self._entities: list = []   # what configure() created, for teardown()
        self.planner = None         # a core JointPlanner, for nodes that plan
        self.start_parameter_checks()
        self.start_diagnostics()


    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        """Read parameters and create interfaces (override)."""

    def activate(self) -> None:
        """Called after the node became active (override)."""

    def deactivate(self) -> None:
        """Called when the node stops being active (override)."""

    def teardown(self) -> None:
        """Destroy what configure() created and stop the planner (extend, calling this).

        Tolerates a partial setup: configure() may have failed half way.
        """
        destroy_all(self, self._entities)
        self._entities = []
        planner, self.planner = self.planner, None
        self.close_planner(planner)

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.stopping.clear()
        if self.parameter_errors:
            self.get_logger().error('configure refused: ' + '; '.join(self.parameter_errors))
            return FAILURE
        try:
            self.configure()
        except Exception as error:  # noqa: BLE001 - any failure fails the transition
            self.get_logger().error(f'configure failed: {error}')
            self.get_logger().debug(traceback.format_exc())
            self._safe_teardown()
            return FAILURE
        self.get_logger().info('configured')
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)  # activates the lifecycle publishers
        if result != SUCCESS:
            return result
        self.active = True
        try:
            self.activate()
        except Exception as error:  # noqa: BLE001
            self.active = False
            self.get_logger().error(f'activate failed: {error}')
            return FAILURE
        self.get_logger().info('active')
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.notify()
        try:
            self.deactivate()
        except Exception as error:  # noqa: BLE001
            self.get_logger().warning(f'deactivate: {error}')
        self.get_logger().info('inactive')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._safe_teardown()
        self.get_logger().info('cleaned up')
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self.stopping.set()
        self.notify()
        self._safe_teardown()
        result = super().on_shutdown(state)
        # Finalized: nothing is left to do, so the process ends (exit code 0).
        if not self.finished.done():
            self.finished.set_result(0)
        return result

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self._safe_teardown()
        return SUCCESS

    def close_planner(self, planner) -> None:
        """Stop a core JointPlanner's worker processes.

        At process exit the wait is bounded: a worker that has not finished by then
        exits by itself when it reads end-of-file from the closed pipe.
        """
        if planner is None:
            return
        if getattr(planner, 'calls', 0) or getattr(planner, 'store_hits', 0):
            self.get_logger().info(
                f'planner: {planner.calls} plans made, {planner.store_hits} read from the '
                'plan store' + ('' if getattr(planner, 'store', None) is not None
                                else ' (no plan store)'))
        if not self.stopping.is_set():
            planner.close()
            return
        closer = threading.Thread(target=planner.close, daemon=True)
        closer.start()
        closer.join(1.0)

    def _safe_teardown(self) -> None:
        try:
            self.teardown()
        except Exception as error:  # noqa: BLE001
            self.get_logger().warning(f'teardown: {error}')

    def request_stop(self) -> None:
        """Process exit, first half: wake every waiter so that callbacks return."""
        self.active = False
        self.stopping.set()
        self.notify()

    def close(self) -> None:
        """Process exit, second half (after the executor stopped): release everything."""
        self.request_stop()
        self._safe_teardown()

    def destroy_node(self) -> None:
        """rclpy's LifecycleNode.destroy_node leaves the lifecycle state machine, which
        holds the node handle: the DDS participant then outlived the node, and the
        process's fast exit (process.leave) left its Fast DDS shared-memory ports in
        /dev/shm. The next participant on the machine takes such a port over, and that
        takeover can leave it deaf to some of its peers' endpoints (a world's action
        server never discovered, seen in CI). Destroying the machine too ends the
        participant, which removes its ports and tells its peers it left."""
        super().destroy_node()
        machine = getattr(self, '_state_machine', None)   # rclpy's, private
        if machine is not None:
            machine.destroy_when_not_in_use()

    # -------------------------------------------------------------------- waiting
    def notify(self) -> None:
        with self._condition:
            self._condition.notify_all()

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float | None) -> bool:
        """Block until ``predicate()`` holds; False on timeout.

        Raises StopRequestedError when the node shuts down or is deactivated meanwhile
        (a deactivated node stops its tasks, sessions and updates).
        """
        with self._condition:
            self._condition.wait_for(
                lambda: self.stopping.is_set() or not self.active or predicate(), timeout_s)
            if self.stopping.is_set():
                raise StopRequestedError()
            if not self.active:
                raise StopRequestedError(f'{self.get_name()} was deactivated')
            return predicate()

    def locked(self):
        """The condition's lock, for state that waiters read."""
        return self._condition

    # ------------------------------------------------------------------ callbacks
    def guarded(self, callback: Callable, what: str) -> Callable:
        """Wrap a callback: exceptions become one log line instead of an executor crash."""
        @wraps(callback)
        def run(*args, **kwargs):
            try:
                return callback(*args, **kwargs)
            except StopRequestedError:
                return None
            except Exception as error:  # noqa: BLE001 - log and keep the node running
                if not self.stopping.is_set():
                    self.get_logger().error(f'{what}: {error}')
                    self.get_logger().debug(traceback.format_exc())
                return None
        return run

    def guarded_service(self, callback: Callable, what: str) -> Callable:
        """Wrap a service callback whose response has success/message fields."""
        @wraps(callback)
        def run(request, response):
            try:
                return callback(request, response)
            except StopRequestedError:
                response.success, response.message = False, f'{self.get_name()} is stopping'
            except Exception as error:  # noqa: BLE001 - answer with the reason
                self.get_logger().error(f'{what}: {error}')
                self.get_logger().debug(traceback.format_exc())
                response.success, response.message = False, f'internal error: {error}'
                if hasattr(response, 'retry'):   # nothing said the request was wrong
                    response.retry = True
            return response
        return run

    def stamp(self):
        return self.get_clock().now().to_msg()


def ros_name(optional: bool = False, suffix: str = '') -> Callable[[str], str]:
    """A check that a value is a valid topic, service or action name (``suffix`` is
    appended first, for namespaces; ``optional``: '' means none)."""
    def check(value: str) -> str:
        if optional and not value:
            return ''
        try:
            validate_topic_name(value.rstrip('/') + suffix if suffix else value)
        except Exception as error:  # noqa: BLE001 - rclpy's Invalid*NameException
            return str(error).splitlines()[0]
        return ''
    return check


def not_empty(value: str) -> str:
    return '' if value.strip() else 'must not be empty'


def at_least_one(values) -> str:
    return '' if len(values) else 'must list at least one'


def existing_file(value: str) -> str:
    """A check for optional file parameters: '' or a file that exists."""
    return '' if not value or os.path.isfile(value) else 'no such file'


def destroy_all(node: CecmNode, entities) -> None:
    """Destroy what configure() created: publishers, subscriptions, services, clients,
    timers, action servers and action clients (None entries are skipped)."""
    for entity in entities:
        if entity is None:
            continue
        try:
            if isinstance(entity, LifecyclePublisher):
                node.destroy_lifecycle_publisher(entity)
            elif isinstance(entity, Publisher):
                node.destroy_publisher(entity)
            elif isinstance(entity, Subscription):
                node.destroy_subscription(entity)
            elif isinstance(entity, Service):
                node.destroy_service(entity)
            elif isinstance(entity, Client):
                node.destroy_client(entity)
            elif isinstance(entity, Timer):
                node.destroy_timer(entity)
            else:  # ActionServer, ActionClient
                entity.destroy()
        except Exception as error:  # noqa: BLE001
            node.get_logger().debug(f'destroying {entity}: {error}')

