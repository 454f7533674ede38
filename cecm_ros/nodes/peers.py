"""Talking to peer nodes from inside callbacks: services and action goals with
bounded waits, peers that vanish, late answers cancelled (the waits go through the
node's wait_until, so a stopping node's callbacks return)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from action_msgs.srv import CancelGoal
from rcl_interfaces.srv import GetParameters
from rclpy.parameter import parameter_value_to_python
from rclpy.task import Future

from cecm_ros.nodes.rclpy_compat import ActionClient


class SafeActionClient(ActionClient):
    """rclpy's ActionClient, safe to create while an executor spins the node.

    rclpy's ActionClient registers itself with the node before it creates its lock and
    logger, so an executor thread that polls it in that window (as a
    MultiThreadedExecutor does while on_configure runs) dies with AttributeError.
    Creating them first closes the window (the lock: rclpy_compat.ActionClient); the
    base class then replaces them.
    """

    def __init__(self, node, action_type, action_name, **kwargs):
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


class PeerCalls:
    """Mixed into CecmNode: calls to peers that give up cleanly."""

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

    def send_goal_when_accepted(self, client, name: str, goal, what: str, wait_s: float,
                                timeout_s: float, interrupt: Callable[[], bool] | None = None):
        """:meth:`send_action_goal`, for a server that runs one goal at a time. One that
        rejects ours for being busy may still run a goal that nobody waits for any more
        (a client that stopped sent it): that goal is canceled, and ours sent again, for
        up to ``wait_s``."""
        deadline = time.monotonic() + wait_s
        canceled = False
        while True:
            try:
                return self.send_action_goal(client, name, goal, what, wait_s, timeout_s,
                                             interrupt=interrupt)
            except GoalRejectedError:
                if time.monotonic() >= deadline:
                    raise
                if not canceled:
                    canceled = self.cancel_all_goals(name, what)
                self.wait_until(lambda: False, 1.0)

    def cancel_all_goals(self, name: str, what: str) -> bool:
        """Ask the action server ``name`` to cancel all its goals (a zero goal id and
        stamp); whether it answered."""
        client = self.create_client(CancelGoal, f'{name}/_action/cancel_goal',
                                    callback_group=self.group)
        try:
            response = self.call_service(client, CancelGoal.Request(), f'{what}: cancel',
                                         5.0, 10.0)
            self.get_logger().warning(f'{what}: {name} was busy with a goal nobody waits for; '
                                      f'canceled {len(response.goals_canceling)} goal(s)')
            return True
        except RuntimeError as error:
            self.get_logger().warning(f'{what}: could not cancel the goals of {name}: {error}')
            return False
        finally:
            self.destroy_client(client)

    def read_parameters(self, name: str, keys, wait_s: float, timeout_s: float,
                        instead: str) -> dict:
        """Parameters ``keys`` of the node ``name``, as Python values; empty, with a
        warning that says what is done ``instead``, when it cannot be asked or does not
        declare them all."""
        client = self.create_client(GetParameters, f'{name}/get_parameters',
                                    callback_group=self.group)
        try:
            response = self.call_service(client, GetParameters.Request(names=list(keys)),
                                         f'reading the parameters of {name}', wait_s,
                                         timeout_s)
            if len(response.values) != len(keys):
                raise RuntimeError(f'{name} does not declare all of {list(keys)}')
            return {key: parameter_value_to_python(value)
                    for key, value in zip(keys, response.values)}
        except RuntimeError as error:
            self.get_logger().warning(f'{error}; {instead}')
            return {}
        finally:
            self.destroy_client(client)

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
            listed = self._listed_in_graph(missing)
            note = (f' ({", ".join(listed)} listed in the ROS graph, yet not matched by '
                    "this node's DDS participant)" if listed else '')
            raise PeerUnavailableError(f'waited {wait_s:g} s for {", ".join(missing)}; not '
                                       f'available yet{note}')

    def _listed_in_graph(self, names: list[str]) -> list[str]:
        """Those of ``names`` whose service, or action goal service, is in the graph: a
        peer listed there that a client still does not see points at discovery on this
        machine (Fast DDS shared memory), not at a peer that is missing."""
        try:
            services = {service for service, _ in self.get_service_names_and_types()}
            full = {name: self.resolve_service_name(name) for name in names}
        except Exception:  # noqa: BLE001 - a diagnosis only
            return []
        return [name for name in names
                if full[name] in services or f'{full[name]}/_action/send_goal' in services]

    def _wait_ready(self, ready: Callable[[], bool], wait_s: float) -> bool:
        """Discovery has no event to wait on in rclpy: re-check a few times a second."""
        deadline = time.monotonic() + wait_s
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.wait_until(lambda: False, min(0.1, left))
        return True
