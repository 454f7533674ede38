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
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import rclpy
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
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.task import Future
from rclpy.timer import Timer
from rclpy.validate_topic_name import validate_topic_name

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import Domain
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import (
    BUILT_IN,
    DEFAULT_DOMAIN,
    DomainSpec,
    available_domains,
    domain_spec,
    load_domain,
)
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.nodes.parameters import DeclaredParameters
from cecm_ros.nodes.skill_kinds import ALL as ALL_SKILLS
from cecm_ros.nodes.skill_kinds import WAIT as WAIT_SKILL
from cecm_ros.nodes.skill_kinds import skills_of

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

# Threads of every node's MultiThreadedExecutor (run_node).
EXECUTOR_THREADS = 8

SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE

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

    def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None):
        """Send a goal; the future completes with the goal handle when the server answers.

        rclpy 9.1.2 (Kilted's wheel) registers the goal request twice: once under the
        client's lock, then again outside it with a second future that replaces the first
        as the pending request and is given to the caller. A goal response that the
        executor delivers in between completes the first future, which nobody holds: the
        caller's never completes (a goal "not answered", sent again). One delivered after
        the second future is filed but before it is registered with the executor makes
        its done callback run in the caller's thread, and that callback unregisters a
        future not yet registered: ``ValueError: list.remove(x): x not in list``, raised
        from here into whoever sent the goal (the executor aborted a healthy task with it
        under load). Here one future is registered with the executor and given its
        clean-up before it becomes the pending request, all under the lock that the
        executor takes to read responses, so any order of events is safe.
        """
        needed = ('_client_handle', '_pending_goal_requests',
                  '_goal_sequence_number_to_goal_id', '_feedback_callbacks')
        if not all(hasattr(self, name) for name in needed):   # another rclpy's layout
            return super().send_goal_async(goal, feedback_callback=feedback_callback,
                                           goal_uuid=goal_uuid)
        if not isinstance(goal, self._action_type.Goal):
            raise TypeError(f'expected a goal of type {self._action_type.Goal.__name__}, '
                            f'got {type(goal).__name__}')
        request = self._action_type.Impl.SendGoalService.Request()
        request.goal_id = self._generate_random_uuid() if goal_uuid is None else goal_uuid
        request.goal = goal
        if feedback_callback is not None:
            self._feedback_callbacks[bytes(request.goal_id.uuid)] = feedback_callback
        future = Future()
        with self._lock:
            sequence = self._client_handle.send_goal_request(request)
            if sequence in self._pending_goal_requests:
                raise RuntimeError(f'goal request {sequence} is already pending')
            self._goal_sequence_number_to_goal_id[sequence] = request.goal_id
            self.add_future(future)
            future.add_done_callback(self._remove_pending_goal_request)
            self._pending_goal_requests[sequence] = future
        return future


# A peer whose service or action server has been gone this long while we waited for its
# answer is taken for dead (the lifecycle manager will bring it back).
PEER_LOST_S = 3.0
# A goal request is answered at once by a live server; one sent to a server that died
# (and came back, ready again) is never answered.
GOAL_ANSWER_S = 10.0
GOAL_REQUEST_ATTEMPTS = 3


class PeerUnavailableError(RuntimeError):
    """A service or action server is missing, or vanished while it should answer."""


class AnswerTimeoutError(PeerUnavailableError):
    """A peer that is there gave no answer in the time allowed."""


class ResultTimeoutError(AnswerTimeoutError):
    """An accepted action goal had no result in its time (it was canceled then)."""


class GoalRejectedError(RuntimeError):
    """An action server rejected a goal (e.g. it is busy with another)."""


class WaitInterruptedError(Exception):
    """Whoever waited was asked to stop (e.g. a goal's cancel request)."""


class StopRequestedError(Exception):
    """The node is shutting down or was deactivated; whoever waited should give up."""

    def __init__(self, reason: str = 'the node is shutting down'):
        super().__init__(reason)


class CecmNode(DeclaredParameters, LifecycleNode):
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


    def load_model(self) -> Domain:
        """The domain of ``domain`` with its options (``<domain>.<option>``): the one the
        parameter checks loaded already, so a node grounds (and a domain file is
        checked) once."""
        if not getattr(self, '_aliases_said', False):
            self._aliases_said = True
            for alias, option in OPTION_ALIASES.items():
                if self.param(alias):
                    self.get_logger().warning(
                        f'parameter {alias!r} is the older name of {option!r}; it is read '
                        f'as {option!r} when that is unset')
        return domain_of(self.param('domain'), self.domain_options())

    def domain_options(self, domain: str | None = None) -> dict[str, str]:
        """The options of ``domain`` (the node's by default) its parameters give, unset
        ones left out."""
        spec = _spec_named(self.param('domain') if domain is None else domain)
        if spec is None or not spec.options:
            return {}
        options = {}
        for option in spec.options:
            name = f'{spec.name}.{option}'
            value = self.param(name) if self.has_parameter(name) else ''
            alias = next((a for a, o in OPTION_ALIASES.items() if o == name), None)
            if not value and alias is not None:
                value = self.param(alias)
            if value:
                options[option] = str(value)
        return options

    def declare_model_parameters(self) -> None:
        """``domain`` and every registered domain's options, namespaced by the domain
        (``tidyup.household``, ``overcooked.file``); a plug-in domain's options once the
        node knows it is the one."""
        checks = {'tidyup.household': _loads(Household),
                  'tidyup.capabilities': _loads(CapabilityCatalog)}
        for spec in BUILT_IN.values():
            self._declare_options(spec, checks)
        self.declare('household_file', '', "Older name of 'tidyup.household'",
                     check=_loads(Household))
        self.declare('capabilities_file', '', "Older name of 'tidyup.capabilities'",
                     check=_loads(CapabilityCatalog))
        self.declare('domain', DEFAULT_DOMAIN,
                     'The domain: a registered name (cecm domains) or a domain file',
                     check=self._domain_check)
        spec = _spec_named(self.param('domain'))
        if spec is not None and spec.name not in BUILT_IN:
            self._declare_options(spec, {})

    def _declare_options(self, spec, checks: dict) -> None:
        for option, meaning in (spec.options or {}).items():
            name = f'{spec.name}.{option}'
            if not self.has_parameter(name):
                self.declare(name, '', f'Domain {spec.name}: {meaning or option}',
                             check=checks.get(name))

    def declare_plan_store(self) -> None:
        """The ``plan_store`` parameter of a node that plans (see :meth:`planner_options`)."""
        # Any type: YAML reads a bare `off` (a parameters file, -p plan_store:=off) as false.
        self.declare('plan_store', '',
                     "Plans kept on disk for every later process (SQLite): '' = the user's "
                     "cache ($XDG_CACHE_HOME/cecm_ros/plans.sqlite), 'off' (or false) = "
                     'none, else a file path', check=_plan_store_check, dynamic_typing=True)

    def planner_options(self) -> dict[str, Any]:
        """The keyword arguments of ``Domain.planner`` the ``plan_store`` parameter gives."""
        value = self.param('plan_store')
        if isinstance(value, bool):
            return {'plan_cache': value}
        value = str(value).strip()
        if value.lower() == 'off':
            return {'plan_cache': False}
        return {'plan_cache': str(Path(value).expanduser()) if value else True}

    def _domain_check(self, spec: str) -> str:
        """A domain that loads (a domain file is read and checked now, not at configure)."""
        problem = _known_domain(spec)
        if problem:
            return problem
        try:
            domain_of(spec, self.domain_options(spec))
        except CecmError as error:
            return str(error)
        return ''

    def _checked_domain(self) -> Domain | None:
        """The domain of the parameters, or None when it does not load (the ``domain``
        parameter reports that once; checks that depend on it then pass)."""
        try:
            return domain_of(self.param('domain'), self.domain_options())
        except CecmError:
            return None

    def skills_check(self) -> Callable[[list[str]], str]:
        """A check of a ``skills`` list against the skill kinds of the node's domain,
        ``wait`` and ``all``."""
        def check(values: list[str]) -> str:
            domain = self._checked_domain()
            if domain is None:
                return '' if values else 'must list at least one'
            allowed = [*skills_of(domain).kinds, WAIT_SKILL, ALL_SKILLS]
            wrong = [value for value in values if value not in allowed]
            if wrong:
                return (f'{wrong[0]!r} is not a skill kind of domain {domain.name!r} '
                        f'({", ".join(allowed)})')
            return '' if values else 'must list at least one'
        return check

    def partner_check(self) -> Callable[[str], str]:
        """A check of a partner spec (a type or ``name=0,...``) against the catalogue of
        the node's domain."""
        def check(spec: str) -> str:
            domain = self._checked_domain()
            if domain is None:
                return ''
            try:
                domain.catalog.resolve(spec)
            except CecmError as error:
                return str(error)
            return ''
        return check

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

    def call_service(self, client, request, what: str, wait_s: float, timeout_s: float | None,
                     interrupt: Callable[[], bool] | None = None,
                     resend_s: float | None = None):
        """Call a service and return its response; raises PeerUnavailableError with a
        reason when the server is missing, vanishes while it should answer, or is late,
        and WaitInterruptedError as soon as ``interrupt()`` holds.

        With ``resend_s`` (only for requests that may be served twice) a request without
        an answer after that long is sent again: one sent while a restarted server was
        not yet matched is lost, not late.
        """
        if not self._wait_ready(client.service_is_ready, wait_s):
            raise PeerUnavailableError(f'{what}: service {client.srv_name} is not available '
                                       f'(waited {wait_s:g} s)')
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            slice_s = left if resend_s is None else min(resend_s, left or resend_s)
            future = client.call_async(request)
            try:
                self._wait_answer(future, slice_s, client.service_is_ready,
                                  f'{what}: {client.srv_name}', interrupt)
                break
            except PeerUnavailableError:
                client.remove_pending_request(future)
                if resend_s is None or (deadline is not None and time.monotonic() >= deadline):
                    raise
                self.get_logger().info(f'{what}: no answer from {client.srv_name} within '
                                       f'{resend_s:g} s; sending the request again')
            except BaseException:
                client.remove_pending_request(future)
                raise
        response = future.result()
        if response is None:
            raise PeerUnavailableError(f'{what}: {client.srv_name} returned no response')
        return response

    def send_action_goal(self, client, name: str, goal, what: str, wait_s: float,
                         timeout_s: float | None, feedback=None,
                         interrupt: Callable[[], bool] | None = None):
        """Send an action goal to the server ``name`` and wait for its result.

        Returns (status, result); raises PeerUnavailableError with a reason when the
        server is missing, rejects the goal, vanishes or gives no result in time, and
        WaitInterruptedError when ``interrupt()`` holds (the goal is canceled then too).
        """
        def stop_asked() -> bool:
            return bool(interrupt and interrupt())

        if not self._wait_ready(lambda: client.server_is_ready() or stop_asked(), wait_s):
            raise PeerUnavailableError(f'{what}: action server {name} is not available '
                                       f'(waited {wait_s:g} s)')
        if stop_asked():
            raise WaitInterruptedError(f'{what}: interrupted before the goal was sent')
        for attempt in range(GOAL_REQUEST_ATTEMPTS):
            goal_future = client.send_goal_async(goal, feedback_callback=feedback)
            try:
                self._wait_answer(goal_future, GOAL_ANSWER_S, client.server_is_ready,
                                  f'{what}: {name} (goal request)', interrupt)
                break
            except BaseException as error:
                # Should the server accept the goal after all, it must not run unwatched.
                goal_future.add_done_callback(_cancel_if_accepted)
                if not isinstance(error, PeerUnavailableError) \
                        or attempt == GOAL_REQUEST_ATTEMPTS - 1:
                    raise
                self.get_logger().info(f'{what}: {name} did not answer the goal request; '
                                       'sending it again')
        handle = goal_future.result()
        if not handle.accepted:
            raise GoalRejectedError(f'{what}: {name} rejected the goal')
        result_future = handle.get_result_async()
        try:
            self._wait_answer(result_future, timeout_s, client.server_is_ready,
                              f'{what}: {name}', interrupt)
        except BaseException as error:
            # Cancel, and give the request a moment to leave: the process may be ending.
            sent = threading.Event()
            handle.cancel_goal_async().add_done_callback(lambda _: sent.set())
            sent.wait(CANCEL_WAIT_S)
            if isinstance(error, AnswerTimeoutError):
                raise ResultTimeoutError(str(error)) from None
            raise
        response = result_future.result()
        return response.status, response.result

    def _wait_answer(self, future: Future, timeout_s: float | None,
                     ready: Callable[[], bool], what: str,
                     interrupt: Callable[[], bool] | None = None) -> None:
        """Wait for ``future``; give up when the peer is gone for PEER_LOST_S or late, or
        when ``interrupt()`` holds (WaitInterruptedError)."""
        future.add_done_callback(lambda _: self.notify())
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        gone_since = None
        while not future.done():
            if interrupt is not None and interrupt():
                raise WaitInterruptedError(f'{what}: interrupted')
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise AnswerTimeoutError(f'{what} gave no answer within {timeout_s:g} s')
            if ready():
                gone_since = None
            elif gone_since is None:
                gone_since = now
            elif now - gone_since >= PEER_LOST_S:
                raise PeerUnavailableError(f'{what} disappeared while it should answer')
            slice_s = 0.5 if deadline is None else min(0.5, deadline - now)
            self.wait_until(lambda: future.done() or bool(interrupt and interrupt()),
                            max(0.01, slice_s))

    def wait_for_peers(self, peers: list[tuple[str, Callable[[], bool]]], wait_s: float) -> None:
        """Activation: wait until every (name, ready) peer is there, or raise naming the
        missing ones (the lifecycle manager tries the activation again later)."""
        deadline = time.monotonic() + wait_s
        missing = [name for name, ready in peers if not ready()]
        while missing and time.monotonic() < deadline:
            self.wait_until(lambda: False, 0.1)
            missing = [name for name, ready in peers if not ready()]
        if missing:
            raise PeerUnavailableError(f'waited {wait_s:g} s for {", ".join(missing)}; not '
                                       'available yet')

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


def _loads(kind) -> Callable[[str], str]:
    """A check that a model file ('' = the package's) loads as ``kind`` (its from_yaml)."""
    def check(path: str) -> str:
        if not path:
            return ''
        try:
            kind.from_yaml(path)
        except CecmError as error:
            return str(error)
        return ''
    return check


# The skill kind that executes "noop", and a `skills` entry naming every kind of the domain.


def _known_domain(spec: str) -> str:
    """A check of the ``domain`` parameter: a registered name or a file that exists."""
    if spec in available_domains() or os.path.isfile(spec):
        return ''
    return f'unknown domain; domains: {", ".join(available_domains())} or a domain file'


# Parameters of every node from before domain options were namespaced, and the option
# each now stands for (read when that one is unset; a warning says so once).
OPTION_ALIASES = {'household_file': 'tidyup.household',
                  'capabilities_file': 'tidyup.capabilities'}


def _spec_named(domain: str) -> DomainSpec | None:
    """The spec of a domain parameter's value (a name or a domain file), or None when it
    names nothing loadable (the ``domain`` parameter's check says why)."""
    try:
        spec = domain_spec(str(domain).strip())
    except CecmError:
        return None
    return spec


def plain_node_domain_options(node: DeclaredParameters, domain: str) -> dict[str, str]:
    """For a node that is not a CecmNode (the console): declare ``domain``'s options
    and their older names, and return the ones set."""
    spec = _spec_named(domain)
    options = {}
    checks = {'tidyup.household': _loads(Household),
              'tidyup.capabilities': _loads(CapabilityCatalog)}
    for option, meaning in ((spec.options or {}) if spec is not None else {}).items():
        name = f'{spec.name}.{option}'
        node.declare(name, '', f'Domain {spec.name}: {meaning or option}',
                     check=checks.get(name))
        value = node.param(name)
        alias = next((a for a, o in OPTION_ALIASES.items() if o == name), None)
        if alias is not None:
            node.declare(alias, '', f'Older name of {name!r}', check=checks.get(name))
            value = value or node.param(alias)
        if value:
            options[option] = str(value)
    return options


_DOMAINS: dict[tuple, Domain] = {}


def domain_of(domain: str, options: dict[str, str]) -> Domain:
    """A domain loaded once per process and setting (the parameter checks and the node's
    configure share it)."""
    key = (domain, tuple(sorted(options.items())))
    if key not in _DOMAINS:
        _DOMAINS[key] = load_domain(domain, **options)
    return _DOMAINS[key]


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


def run_node(node_factory: Callable[[], CecmNode], args=None,
             threads: int = EXECUTOR_THREADS) -> int:
    """Spin a node until SIGINT, shutdown or the node finishes; exit without tracebacks.

    Any node with CecmNode's ``finished``, ``exit_code``, ``request_stop()`` and
    ``close()`` will do (correction_console is a plain Node).
    """
    try:
        # Not rclpy's signal handler, which shuts the context down at once: callbacks at
        # work would then fail and log (to a /rosout that is gone) as if something broke.
        # Ctrl-C (and launch's SIGTERM) raise KeyboardInterrupt here instead, and the
        # node stops in order while its context still works.
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as error:  # noqa: BLE001
        print(f'cannot initialise ROS: {error}')
        return 1
    _interrupt_on_signals()
    _watch_shutdown(rclpy.utilities.get_default_context())
    node = None
    executor = None
    code = 0
    try:
        node = node_factory()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(node)
        context = rclpy.utilities.get_default_context()
        while not node.finished.done() and context.ok():
            # In slices: a signal's handler runs only once the wait for work returns,
            # and an idle node may have nothing to wake it.
            executor.spin_once(timeout_sec=SPIN_SLICE_S)
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
        # A signal now must not interrupt the clean-up (the exit watchdog bounds it).
        _ignore_signals()
        # Whatever ended the spin, the process ends within EXIT_GRACE_S: a clean-up step
        # that blocks (seen in CI once per few hundred process exits) must not keep it.
        _exit_if_stuck(code)
        if node is not None:
            node.request_stop()
        if executor is not None:
            # Callbacks see the stop and return; do not wait for one that does not (a
            # long computation would hold the process past launch's SIGINT-to-SIGTERM
            # escalation).
            executor.shutdown(timeout_sec=0, wait_for_threads=False)
            _wait_for_callbacks(executor, STOP_WAIT_S)
        if node is not None:
            node.close()
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001 - the context may be gone already
                pass
        rclpy.try_shutdown()
    return leave(code)


# After SIGINT (or any shutdown of the context) the process ends within this long,
# even if a thread the executor waits for never returns.
EXIT_GRACE_S = 10.0
# How long an orderly stop waits for the callbacks at work to return.
STOP_WAIT_S = 3.0
# The longest the main thread waits for work before a signal gets its turn.
SPIN_SLICE_S = 0.25


def _interrupt_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread (once: a second
    signal while stopping is ignored, and the exit watchdog bounds the stop)."""
    def interrupted(signum, frame) -> None:
        _ignore_signals()
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)


def _ignore_signals() -> None:
    """Further SIGINT/SIGTERM do nothing here. A handler, not SIG_IGN, which processes
    started from now on (a planner's search) would inherit."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _no_op)


def _no_op(signum, frame) -> None:
    pass


def _wait_for_callbacks(executor, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for the executor's worker threads to go idle, so that
    what they log still reaches /rosout before the context goes."""
    pool = getattr(executor, '_executor', None)     # MultiThreadedExecutor's pool
    threads = list(getattr(pool, '_threads', ()))
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


_watchdog_started = threading.Event()


def _watch_shutdown(context) -> None:
    """Start the exit watchdog once the context is shut down (SIGINT shuts it down from
    rclpy's signal handler), from a thread of its own: whatever the main thread is
    blocked on, the process still ends."""
    def watch() -> None:
        while context.ok():
            time.sleep(0.2)
        _exit_if_stuck()
    threading.Thread(target=watch, name='shutdown-watch', daemon=True).start()


def _exit_if_stuck(code: int = 0) -> None:
    """Start (once) a thread that ends the process with ``code`` after EXIT_GRACE_S."""
    if _watchdog_started.is_set():
        return
    _watchdog_started.set()

    def watchdog() -> None:
        time.sleep(EXIT_GRACE_S)
        print(f'[WARN] shutdown did not finish within {EXIT_GRACE_S:g} s; exiting',
              flush=True)
        os._exit(code)
    threading.Thread(target=watchdog, name='exit-watchdog', daemon=True).start()


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


# How long a cancel of an action goal waits for the server's answer.
CANCEL_WAIT_S = 2.0


def _cancel_if_accepted(future: Future) -> None:
    try:
        handle = future.result()
        if handle is not None and handle.accepted:
            handle.cancel_goal_async()
    except Exception:  # noqa: BLE001 - the client may be gone (shutdown)
        pass


def finish_goal(transition) -> None:
    """Complete an action goal (succeed/abort/canceled); the goal may be gone at shutdown."""
    try:
        transition()
    except Exception:  # noqa: BLE001 - the goal may be gone (shutdown)
        pass


def _plan_store_check(value: Any) -> str:
    """'' (the default store), 'off' or false, true, or the path of a file."""
    if isinstance(value, bool):
        return ''
    if not isinstance(value, str):
        return f"{value!r} is neither a file path nor 'off'"
    value = value.strip()
    if not value or value.lower() == 'off':
        return ''
    path = Path(value).expanduser()
    if path.is_dir():
        return f'{value!r} is a directory; give the path of a store file (or \'off\')'
    return ''


def lower_priority(niceness: int = 10) -> None:
    """Run the calling thread (and the threads and processes it starts, which inherit
    it) at a lower CPU priority: for work beside the critical path, such as metrics."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
    except (OSError, AttributeError):
        pass   # not Linux, or not allowed: the work runs at the usual priority
