"""What differs between the rclpy versions cecm_ros runs on, in one place: Jazzy's 7.x
and Kilted's 9.x (docs/nodes.md, "ROS 2 distributions").

Nodes use these and never test a version: each difference is told by what the installed
rclpy has (a keyword, a lock), not by its version number, so another distribution's
rclpy takes whichever branch fits it.
"""

from __future__ import annotations

import inspect
import threading

from rclpy.action import ActionClient as _RclpyActionClient
from rclpy.executors import MultiThreadedExecutor

# rclpy 9's MultiThreadedExecutor.shutdown stops its thread pool (and need not wait for
# it); rclpy 7's has no shutdown of its own, and its pool is never stopped.
_SHUTDOWN_STOPS_POOL = 'wait_for_threads' in inspect.signature(
    MultiThreadedExecutor.shutdown).parameters


def shutdown_executor(executor: MultiThreadedExecutor) -> None:
    """Stop ``executor`` now: no new callbacks, its worker threads end once the callbacks
    at work return, and nothing here waits for them."""
    if _SHUTDOWN_STOPS_POOL:
        executor.shutdown(timeout_sec=0, wait_for_threads=False)
        return
    executor.shutdown(timeout_sec=0)
    pool = getattr(executor, '_executor', None)   # rclpy 7's ThreadPoolExecutor
    if pool is not None:
        pool.shutdown(wait=False)


class ActionClient(_RclpyActionClient):
    """rclpy's ActionClient, with rclpy 9's ordering of requests and responses on rclpy 7.

    rclpy 9 sends a goal, cancel or result request and files its future under one lock,
    and takes responses under the same lock (ros2/rclpy pull request 1308). rclpy 7 has
    no such lock: a response that an executor thread takes between the send and the
    filing is dropped as unexpected ("Ignoring unexpected goal response"), and whoever
    sent the request waits for an answer that came. Where the base class brings no lock
    of its own, this one takes the lock around the same steps.
    """

    def __init__(self, node, action_type, action_name, **kwargs):
        # Made before the base class registers with the node, so that an executor thread
        # polling it meanwhile finds a lock (rclpy 9 then puts its own in its place).
        ours = self._lock = threading.Lock()
        super().__init__(node, action_type, action_name, **kwargs)
        self._lock_here = self._lock is ours

    def _ordered(self) -> bool:
        return getattr(self, '_lock_here', False)

    def take_data(self):
        if not self._ordered():
            return super().take_data()
        with self._lock:
            return super().take_data()

    def _cancel_goal_async(self, goal_handle):
        if not self._ordered():
            return super()._cancel_goal_async(goal_handle)
        with self._lock:
            return super()._cancel_goal_async(goal_handle)

    def _get_result_async(self, goal_handle):
        if not self._ordered():
            return super()._get_result_async(goal_handle)
        with self._lock:
            return super()._get_result_async(goal_handle)
