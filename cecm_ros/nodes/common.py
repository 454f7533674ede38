"""Plumbing shared by the nodes: QoS profiles, parameters, lifecycle base, waiting, main().

Waiting inside callbacks: every node runs on a MultiThreadedExecutor and creates its
interfaces in a reentrant callback group, so a callback may block on a service or
action future while other callbacks (the answer, topic messages) keep running. All
blocking waits go through :meth:`CecmNode.wait_until`, one condition variable per
node that every state change notifies; shutdown wakes every waiter at once.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import wraps
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
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

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import TidyUpModel
from cecm_ros.core.household import Household

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
QOS_EVENTS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=20,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
# A session's per-task reports: a late subscriber (a browser panel) gets its history.
QOS_HISTORY = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE

_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
          float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


class SafeActionClient(ActionClient):
    """rclpy's ActionClient, safe to create while an executor spins the node.

    rclpy's ActionClient registers itself with the node before it creates its lock and
    logger, so an executor thread that polls it in that window (as a
    MultiThreadedExecutor does while on_configure runs) dies with AttributeError.
    Creating them first closes the window; the base class then replaces them.
    """

    def __init__(self, node, action_type, action_name, **kwargs):
        self._lock = threading.Lock()
        self._logger = node.get_logger().get_child('action_client')
        super().__init__(node, action_type, action_name, **kwargs)


class StopRequestedError(Exception):
    """The node is shutting down or was deactivated; whoever waited should give up."""

    def __init__(self, reason: str = 'the node is shutting down'):
        super().__init__(reason)


class CecmNode(LifecycleNode):
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

    # ---------------------------------------------------------------- parameters
    def declare(self, name: str, default: Any, description: str,
                param_type: int | None = None, read_only: bool = False) -> None:
        if param_type is None:
            param_type = _TYPES[type(default)]
        self.declare_parameter(name, default, ParameterDescriptor(
            name=name, type=param_type, description=description, read_only=read_only))

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def load_model(self) -> TidyUpModel:
        """The household model from ``household_file``/``capabilities_file`` ('' = default)."""
        return model_from_files(self.param('household_file'), self.param('capabilities_file'))

    def declare_model_parameters(self) -> None:
        self.declare('household_file', '',
                     "Household YAML file; '' = the package's config/tidyup_household.yaml")
        self.declare('capabilities_file', '',
                     "Capability catalogue YAML file; '' = the package's "
                     'config/capabilities.yaml')

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
        return super().on_shutdown(state)

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

    def wait_future(self, future: Future, timeout_s: float | None) -> bool:
        future.add_done_callback(lambda _: self.notify())
        return self.wait_until(future.done, timeout_s)

    def call_service(self, client, request, what: str, wait_s: float, timeout_s: float | None):
        """Call a service and return its response; raises RuntimeError with a reason."""
        if not self._wait_ready(client.service_is_ready, wait_s):
            raise RuntimeError(f'{what}: service {client.srv_name} is not available '
                               f'(waited {wait_s:g} s)')
        future = client.call_async(request)
        if not self.wait_future(future, timeout_s):
            client.remove_pending_request(future)
            raise RuntimeError(f'{what}: no answer from {client.srv_name} within '
                               f'{timeout_s:g} s')
        response = future.result()
        if response is None:
            raise RuntimeError(f'{what}: {client.srv_name} returned no response')
        return response

    def send_action_goal(self, client, name: str, goal, what: str, wait_s: float,
                         timeout_s: float | None, feedback=None):
        """Send an action goal to the server ``name`` and wait for its result.

        Returns (status, result); raises RuntimeError with a reason when the server is
        missing, rejects the goal or gives no result in time (the goal is then canceled).
        """
        if not self._wait_ready(client.server_is_ready, wait_s):
            raise RuntimeError(f'{what}: action server {name} is not available '
                               f'(waited {wait_s:g} s)')
        goal_future = client.send_goal_async(goal, feedback_callback=feedback)
        if not self.wait_future(goal_future, wait_s):
            raise RuntimeError(f'{what}: {name} did not answer the goal '
                               f'within {wait_s:g} s')
        handle = goal_future.result()
        if not handle.accepted:
            raise RuntimeError(f'{what}: {name} rejected the goal')
        result_future = handle.get_result_async()
        try:
            done = self.wait_future(result_future, timeout_s)
        except StopRequestedError:
            handle.cancel_goal_async()
            raise
        if not done:
            handle.cancel_goal_async()
            raise RuntimeError(f'{what}: {name} gave no result within '
                               f'{timeout_s:g} s (goal canceled)')
        response = result_future.result()
        return response.status, response.result

    def _wait_ready(self, ready: Callable[[], bool], wait_s: float) -> bool:
        """Discovery has no event to wait on in rclpy: re-check a few times a second."""
        deadline = time.monotonic() + wait_s
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.wait_until(lambda: False, min(0.1, left))
        return True

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
            return response
        return run

    def stamp(self):
        return self.get_clock().now().to_msg()


def model_from_files(household_file: str, capabilities_file: str) -> TidyUpModel:
    """The household model; an empty path means the package's default file."""
    household = Household.from_yaml(household_file) if household_file else None
    catalog = CapabilityCatalog.from_yaml(capabilities_file) if capabilities_file else None
    return TidyUpModel(household, catalog)


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


def run_node(node_factory: Callable[[], CecmNode], args=None, threads: int = 8) -> int:
    """Spin a node until SIGINT, shutdown or the node finishes; exit without tracebacks.

    Any node with CecmNode's ``finished``, ``exit_code``, ``request_stop()`` and
    ``close()`` will do (correction_console is a plain Node).
    """
    try:
        rclpy.init(args=args)
    except Exception as error:  # noqa: BLE001
        print(f'cannot initialise ROS: {error}')
        return 1
    node = None
    executor = None
    code = 0
    try:
        node = node_factory()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(node)
        executor.spin_until_future_complete(node.finished)
        code = node.exit_code
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as error:  # noqa: BLE001 - a node that cannot start says why
        if node is not None:
            node.get_logger().fatal(f'{error}')
        else:
            print(f'cannot start node: {error}')
        code = 1
    finally:
        if node is not None:
            node.request_stop()
        if executor is not None:
            executor.shutdown(timeout_sec=5.0)
        if node is not None:
            node.close()
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001 - the context may be gone already
                pass
        rclpy.try_shutdown()
    return leave(code)


def leave(code: int) -> int:
    """End the process now that everything is released.

    Interpreter finalisation (module teardown and the DDS middleware's static
    destructors) takes about 2 s per node process, more under load, long enough for
    ``ros2 launch`` to escalate SIGINT to SIGTERM after its 5 s. Every ROS entity,
    context and planner worker is closed by now, so skip it.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
    return code  # not reached


def finish_goal(transition) -> None:
    """Complete an action goal (succeed/abort/canceled); the goal may be gone at shutdown."""
    try:
        transition()
    except Exception:  # noqa: BLE001 - the goal may be gone (shutdown)
        pass
