"""SafeActionClient against the goal-request race of rclpy 9.1.2's ActionClient.

Under load the executor aborted a healthy task with ``internal error: list.remove(x): x
not in list``: the stock client files a goal request twice (the second time outside its
lock) and a goal response delivered in between either completes a future nobody holds
or runs the clean-up of a future not yet registered, in the sender's thread. The test
makes that moment happen every time: the client's table of pending goal requests holds
the sender right after a request is filed until the executor thread has delivered the
server's (real, over DDS) answer to it. With rclpy's own ActionClient in place of
SafeActionClient this test fails, with that ValueError or with a goal never answered.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip('rclpy')

from graph_fixtures import RosClient, RosDomain, scaled  # noqa: E402

from cecm_ros.action import ExecuteSkill  # noqa: E402
from cecm_ros.nodes.common import SafeActionClient  # noqa: E402

HOLD_S = 1.0   # how long a filed request waits for its answer to be delivered


class _HoldAfterFiling(dict):
    """Pending goal requests: filing one holds the sender until its future is done (the
    executor delivered the answer) or HOLD_S passed; counts the filings."""

    def __init__(self):
        super().__init__()
        self.filings = 0

    def __setitem__(self, sequence, future):
        super().__setitem__(sequence, future)
        self.filings += 1
        deadline = time.monotonic() + HOLD_S
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.005)


def test_a_goal_answered_while_its_request_is_filed_reaches_the_sender():
    domain = RosDomain()
    parts = {}

    def setup(node):
        from rclpy.action import ActionServer

        def execute(handle):
            handle.succeed()
            return ExecuteSkill.Result(success=True, message=handle.request.action)

        parts['server'] = ActionServer(node, ExecuteSkill, 'race/skill', execute)
        parts['client'] = SafeActionClient(node, ExecuteSkill, 'race/skill')

    ros = RosClient('cecm_action_race', setup=setup)
    try:
        client = parts['client']
        assert client.wait_for_server(timeout_sec=30.0), 'the action server never matched'
        pending = client._pending_goal_requests = _HoldAfterFiling()
        for step in range(2):
            goal = ExecuteSkill.Goal(task_id='race', step=step, action=f'step {step}')
            errors = []
            handle = threading.Event()
            future = None
            try:   # in the caller's thread, as the executor node sends its skill goals
                future = client.send_goal_async(goal)
                future.add_done_callback(lambda _, answered=handle: answered.set())
            except ValueError as error:
                errors.append(error)
            assert not errors, f'sending the goal raised {errors[0]!r}'
            assert handle.wait(15.0), 'the goal was answered, but not to the sender'
            assert future.result().accepted
            result = ros.result(future.result().get_result_async(), 15.0)
            assert result.result.message == f'step {step}'
        assert pending.filings == 2, 'each goal request is filed once'
        assert not client._pending_goal_requests, 'answered requests are cleaned up'
        deadline = time.monotonic() + scaled(5.0)   # clean-ups run as executor tasks
        while client._futures and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not client._futures, 'no answered future stays registered'
    finally:
        ros.close()
        domain.release()
