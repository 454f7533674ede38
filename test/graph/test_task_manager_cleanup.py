"""The task manager node over its session runner: it is the runner's GraphPort, and a
cleanup while the held-out metrics plan returns promptly, get_state answered throughout
(once a cleanup waited for the metrics' planner, and get_state went unanswered).

In process: the node, stub peers that only need to exist for its activation, and a
client that drives its lifecycle over the services the lifecycle manager uses.
"""

from __future__ import annotations

import inspect
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from graph_fixtures import RosDomain  # noqa: E402
from lifecycle_msgs.msg import State, Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from paths import REPO  # noqa: E402
from rclpy.action import ActionServer  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from cecm_ros.action import EstimateCapabilities, RunTask  # noqa: E402
from cecm_ros.nodes.task_manager import TaskManager  # noqa: E402
from cecm_ros.session.port import GraphPort  # noqa: E402
from cecm_ros.srv import ResetWorld, SessionProgress  # noqa: E402

HOUSEHOLDS = REPO / 'config' / 'households'
# Far above the wait for the planner's close (1 s), far below the minutes seen.
PROMPT_S = 15.0


def test_the_task_manager_is_the_runner_s_graph_port():
    calls = [name for name, value in vars(GraphPort).items()
             if callable(value) and not name.startswith('_')]
    assert len(calls) > 10
    for name in calls:
        wanted = list(inspect.signature(getattr(GraphPort, name)).parameters)
        given = list(inspect.signature(getattr(TaskManager, name)).parameters)
        assert given == wanted, f'TaskManager.{name}{given} is not GraphPort.{name}{wanted}'


def _answer(request, response):
    response.success = False
    return response


class Lifecycle:
    """ChangeState and GetState of a node, as the lifecycle manager calls them."""

    def __init__(self, node, name: str):
        self.change = node.create_client(ChangeState, f'/{name}/change_state')
        self.state = node.create_client(GetState, f'/{name}/get_state')

    @staticmethod
    def _call(client, request, timeout_s: float):
        assert client.wait_for_service(timeout_sec=30.0), client.srv_name
        future = client.call_async(request)
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        return future.result() if future.done() else None

    def transition(self, transition: int, timeout_s: float = 120.0) -> bool:
        answer = self._call(self.change, ChangeState.Request(
            transition=Transition(id=transition)), timeout_s)
        return bool(answer and answer.success)

    def get_state(self, timeout_s: float) -> int | None:
        answer = self._call(self.state, GetState.Request(), timeout_s)
        return None if answer is None else answer.current_state.id


def test_a_cleanup_during_held_out_metrics_returns_promptly():
    domain = RosDomain()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain.domain_id)
    executor = MultiThreadedExecutor(num_threads=6, context=context)
    spinning = threading.Event()
    nodes = []
    try:
        peers = rclpy.create_node('task_manager_peers', context=context)
        nodes.append(peers)
        peers.create_service(ResetWorld, 'world_sim/reset_world', _answer)
        peers.create_service(SessionProgress, 'capability_estimator/session_progress', _answer)
        ActionServer(peers, RunTask, 'executor/run_task', lambda goal: RunTask.Result())
        ActionServer(peers, EstimateCapabilities, 'capability_estimator/estimate',
                     lambda goal: EstimateCapabilities.Result())
        manager = TaskManager(context=context, parameter_overrides=[
            Parameter('tidyup.household', value=str(HOUSEHOLDS / 'tidyup_10_rooms.yaml')),
            Parameter('tidyup.capabilities',
                      value=str(HOUSEHOLDS / 'capabilities_10_rooms.yaml')),
            Parameter('autostart_tasks', value=False), Parameter('heldout_tasks', value=40),
            Parameter('plan_store', value='off'), Parameter('graph_status_topic', value=''),
            Parameter('partner_node', value='')])
        nodes.append(manager)
        client = rclpy.create_node('task_manager_lifecycle_client', context=context)
        nodes.append(client)
        for node in nodes:
            executor.add_node(node)

        def spin() -> None:
            while not spinning.is_set():
                executor.spin_once(timeout_sec=0.05)

        threading.Thread(target=spin, daemon=True).start()
        lifecycle = Lifecycle(client, 'task_manager')
        assert lifecycle.transition(Transition.TRANSITION_CONFIGURE)
        assert lifecycle.transition(Transition.TRANSITION_ACTIVATE)
        # What a session does first: plan the held-out pool beside its first task.
        heldout = manager.heldout
        heldout.session_started(manager._settings())
        planner, warming = heldout.planner, heldout.warming
        deadline = time.monotonic() + 120.0
        while planner.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert planner.calls > 0 and warming.is_alive(), 'the pool was not being planned'

        latencies: list[float] = []
        asking = threading.Event()

        def ask() -> None:
            while not asking.is_set():
                started = time.perf_counter()
                lifecycle.get_state(PROMPT_S * 4)
                latencies.append(time.perf_counter() - started)
                time.sleep(0.1)

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        started = time.perf_counter()
        assert lifecycle.transition(Transition.TRANSITION_DEACTIVATE)
        deactivated = time.perf_counter() - started
        assert warming.is_alive(), 'the warm-up ended before the cleanup; plan a larger pool'
        started = time.perf_counter()
        assert lifecycle.transition(Transition.TRANSITION_CLEANUP)
        cleaned = time.perf_counter() - started
        asking.set()
        asker.join(PROMPT_S * 4)
        assert lifecycle.get_state(PROMPT_S) == State.PRIMARY_STATE_UNCONFIGURED
        closer = heldout.closer
        assert closer is not None
        closer.join(300.0)
        closed = time.perf_counter() - started
        print(f'deactivate {deactivated:.2f} s, cleanup {cleaned:.2f} s while the held-out '
              f'planner was at work (closed {closed:.2f} s after the cleanup began); '
              f'get_state answered in at most {max(latencies):.2f} s '
              f'({len(latencies)} calls)')
        assert cleaned < PROMPT_S, cleaned
        assert latencies and max(latencies) < PROMPT_S, latencies
        assert not closer.is_alive() and not warming.is_alive()
    finally:
        spinning.set()
        time.sleep(0.2)
        executor.shutdown(timeout_sec=5.0)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        domain.release()
