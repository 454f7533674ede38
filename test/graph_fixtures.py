"""Helpers for the node-graph tests: start the installed executables, talk to them over DDS.

Plain functions and classes only (no fixtures), like core_fixtures.py.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

NODES = ('household_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
         'executor', 'task_manager')
MANAGER = 'lifecycle_manager'


def installed_paths() -> tuple[Path, Path]:
    """(lib/cecm_ros with the executables, the installed config/tidyup_sim.yaml)."""
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    prefix = Path(get_package_prefix('cecm_ros'))
    share = Path(get_package_share_directory('cecm_ros'))
    return prefix / 'lib' / 'cecm_ros', share / 'config' / 'tidyup_sim.yaml'


def installed_or_skip(executable: str) -> tuple[Path, Path]:
    """installed_paths(), or skip the calling test when the build is missing."""
    import pytest

    try:
        executables, params = installed_paths()
    except Exception as error:  # noqa: BLE001
        pytest.skip(f'cecm_ros is not installed (make build): {error}')
    if not (executables / executable).is_file():
        pytest.skip(f'{executables / executable} missing (make build)')
    return executables, params


class RosDomain:
    """A ROS domain of the test's own: reserved, with ``env`` for the graph's processes,
    and this process's ROS_DOMAIN_ID and discovery range set to it until ``release()``."""

    def __init__(self):
        import pytest

        from cecm_ros.domain_ids import reserve_domain_id

        self.reservation = reserve_domain_id()
        self.domain_id = self.reservation.domain_id
        self.home = tempfile.TemporaryDirectory(prefix='cecm_test_home_',
                                                ignore_cleanup_errors=True)
        self.env = graph_environment(self.domain_id, self.home.name)
        self._patch = pytest.MonkeyPatch()
        for key in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE'):
            self._patch.setenv(key, self.env[key])

    def release(self) -> None:
        self._patch.undo()
        self.reservation.release()
        self.home.cleanup()


def graph_environment(domain_id: int, home: str) -> dict[str, str]:
    """The environment of a test's node processes: DDS on this machine in the given
    domain, and ``home`` (the caller's to remove), so that the installed parameters'
    partner store and session journals (~/.ros/cecm_ros) are fresh for every test graph
    and the user's own are never touched. Their temporary files go there too: a process
    killed in a fault test cannot remove its own."""
    env = dict(os.environ)
    env.update({'HOME': home, 'TMPDIR': home,
                'ROS_DOMAIN_ID': str(domain_id), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
                'RMW_IMPLEMENTATION': env.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
                'RCUTILS_CONSOLE_OUTPUT_FORMAT': '[{severity}] [{name}]: {message}',
                'PYTHONUNBUFFERED': '1'})
    return env


class NodeProcesses:
    """The graph's node processes (cecm_ros.process_graph.ProcessGraph), each started
    from the installed executable with parameter overrides, logging into its own file.
    With ``respawn`` a node that dies comes back, as under the demo and launch."""

    def __init__(self, executables: Path, params: Path, env: dict[str, str], log_dir: Path,
                 respawn: bool = False):
        from cecm_ros.process_graph import ProcessGraph

        self.executables = executables
        self.params = params
        self.graph = ProcessGraph(env, log_dir, respawn=respawn)
        self.processes = self.graph.processes

    def start(self, name: str, overrides: dict[str, object] | None = None) -> None:
        command = [str(self.executables / name), '--ros-args', '--params-file',
                   str(self.params)]
        for key, value in (overrides or {}).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            command += ['-p', f'{key}:={text}']
        self.graph.start(name, command)

    def log(self, name: str) -> str:
        return self.graph.log(name)

    def alive(self, name: str) -> bool:
        return self.graph.alive(name)

    def wait_for_log(self, name: str, text: str, timeout_s: float, count: int = 1) -> bool:
        """Wait until ``text`` occurs ``count`` times in the node's log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.log(name).count(text) >= count:
                return True
            time.sleep(0.2)
        return self.log(name).count(text) >= count

    def interrupt(self, names, timeout_s: float = 20.0) -> dict[str, int | None]:
        """SIGINT to each; their exit codes (None: had to be killed)."""
        forced = self.graph.interrupt(list(names), grace_s=timeout_s)
        return {name: None if name in forced else self.processes[name].returncode
                for name in names}

    def close(self) -> None:
        self.graph.stop()


class RosClient:
    """An rclpy node in its own context, spun on a background thread."""

    def __init__(self, name: str, setup=None):
        """``setup(node)`` runs before the spin starts: action servers and clients made
        while the executor spins can kill its thread."""
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        if setup is not None:
            setup(self.node)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.condition = threading.Condition()

    def collect(self, msg_type, topic: str, qos, into: list, callback=None):
        def store(msg):
            with self.condition:
                into.append(msg)
                self.condition.notify_all()
            if callback is not None:
                callback(msg)
        return self.node.create_subscription(msg_type, topic, store, qos)

    def wait_for(self, predicate, timeout_s: float) -> bool:
        with self.condition:
            return self.condition.wait_for(predicate, timeout_s)

    def wait_for_nodes(self, names, timeout_s: float) -> bool:
        """Wait until this node has discovered every named node (their participants)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if set(names) <= set(self.node.get_node_names()):
                return True
            time.sleep(0.1)
        return set(names) <= set(self.node.get_node_names())

    def result(self, future, timeout_s: float):
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            raise TimeoutError(f'no answer within {timeout_s} s')
        return future.result()

    def call(self, srv_type, name: str, request, timeout_s: float = 30.0):
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout_s):
                raise TimeoutError(f'service {name} not available')
            return self.result(client.call_async(request), timeout_s)
        finally:
            self.node.destroy_client(client)

    def send_goal(self, action_type, name: str, goal, timeout_s: float = 60.0):
        # rclpy's ActionClient, created while the executor spins, can kill its thread.
        from cecm_ros.nodes.common import SafeActionClient

        client = SafeActionClient(self.node, action_type, name)
        try:
            if not client.wait_for_server(timeout_sec=timeout_s):
                raise TimeoutError(f'action server {name} not available')
            handle = self.result(client.send_goal_async(goal), timeout_s)
            if not handle.accepted:
                return None
            return self.result(handle.get_result_async(), timeout_s)
        finally:
            client.destroy()

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5)
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
