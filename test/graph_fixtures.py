"""Helpers for the node-graph tests: start the installed executables, talk to them over DDS.

Plain functions and classes only (no fixtures), like core_fixtures.py.

Waiting on a busy machine. A test that waits for a graph to get somewhere waits while
the graph is still making progress (its node logs grow, steps are taken) and fails on a
stall (``wait_progressing``), not after a fixed time that a loaded machine exceeds. The
limits that remain (a stall's length, an answer's, a safety cap on a whole session) are
multiplied by ``CECM_TEST_TIME_SCALE`` (default 1; ``bench/load_harness.py`` sets it to
1 + its load, and ``.ci/run`` to what it measures of the machine).
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

NODES = ('world_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
         'executor', 'task_manager')
MANAGER = 'lifecycle_manager'
# What the lifecycle manager logs of a node whose services it sees but that never answers.
NEVER_ANSWERED = 'never answered: its lifecycle services are seen'
# What a node logs when a peer it waits for is in the ROS graph but its own DDS
# participant never matched it (cecm_ros.nodes.peers): discovery on this machine failed.
NEVER_MATCHED = "yet not matched by this node's DDS participant"


class NodeNeverAnsweredError(AssertionError):
    """A graph test failed because a node never answered the lifecycle manager, or a
    node's DDS participant never matched a peer the ROS graph lists (the machine's DDS
    discovery failed: cecm_ros.tools.ros_domain_ids), or a node process never wrote a
    line: each is a process or middleware failing at start, not the package."""


# A graph at work logs every joint step, plan and update; this long without a new line
# (or another sign of progress) is a stall, times CECM_TEST_TIME_SCALE.
STALL_S = 90.0


def time_scale() -> float:
    """CECM_TEST_TIME_SCALE: how many times slower than an idle machine this one may be."""
    text = os.environ.get('CECM_TEST_TIME_SCALE', '').strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = float('nan')
    if not value >= 1.0:
        raise ValueError(f'CECM_TEST_TIME_SCALE={text!r}: give a number of at least 1')
    return value


TIME_SCALE = time_scale()


def scaled(seconds: float) -> float:
    """A time limit of an idle machine, stretched for this one."""
    return seconds * TIME_SCALE


def wait_progressing(done, progress, what: str, stall_s: float = STALL_S,
                     limit_s: float = 1800.0, detail=lambda: '') -> None:
    """Wait until ``done()`` holds, for as long as ``progress()`` (any value that changes
    while the graph works, e.g. the size of its logs) keeps changing.

    Raises AssertionError naming ``what`` when nothing progressed for ``stall_s``, or,
    as a safety net against a graph that works without end, after ``limit_s`` (both
    scaled); ``detail()`` is added to the message.
    """
    started = changed = time.monotonic()
    seen = progress()
    while not done():
        now = time.monotonic()
        current = progress()
        if current != seen:
            seen, changed = current, now
        if now - changed > scaled(stall_s):
            raise AssertionError(f'{what} did not happen: nothing progressed for '
                                 f'{scaled(stall_s):.0f} s\n{detail()}')
        if now - started > scaled(limit_s):
            raise AssertionError(f'{what} did not happen within {scaled(limit_s):.0f} s, '
                                 f'though the graph kept working\n{detail()}')
        time.sleep(0.2)


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

        from cecm_ros.tools.ros_domain_ids import reserve_domain_id

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
    """The graph's node processes (cecm_ros.tools.process_graph.ProcessGraph), each started
    from the installed executable with parameter overrides, logging into its own file.
    With ``respawn`` a node that dies comes back, as under the demo and launch."""

    def __init__(self, executables: Path, params: Path, env: dict[str, str], log_dir: Path,
                 respawn: bool = False):
        from cecm_ros.tools.process_graph import ProcessGraph

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
        """Wait until ``text`` occurs ``count`` times in the node's log (``timeout_s``
        scaled)."""
        deadline = time.monotonic() + scaled(timeout_s)
        while time.monotonic() < deadline:
            if self.log(name).count(text) >= count:
                return True
            time.sleep(0.2)
        if self.log(name).count(text) >= count:
            return True
        self.dump_stacks()
        self.raise_if_a_node_never_answered()
        return False

    def raise_if_a_node_never_answered(self) -> None:
        """A failed wait whose cause is a node that never answered the lifecycle manager
        (its process hung at start, or Fast DDS left its participant deaf: see
        cecm_ros.tools.ros_domain_ids) fails as NodeNeverAnsweredError, which the suite runs
        once more (Makefile: PYTEST_ARGS); any other failure stands."""
        lines = [line for line in self.log(MANAGER).splitlines() if NEVER_ANSWERED in line]
        silent = {line.split(']: ', 1)[-1].split(' ', 1)[0] for line in lines}
        for name in self.processes:
            log = self.log(name)
            unmatched = [line for line in log.splitlines() if NEVER_MATCHED in line]
            if unmatched:
                lines.append(f'{name}: {unmatched[-1]}')
                silent.add(name)
            elif not log.strip():
                # Not one line, not even the stacks SIGUSR1 asks for: the process hung
                # or died before the package's first import (seen in CI), not in it.
                lines.append(f'{name}: its log is empty ({self.status(name)})')
                silent.add(name)
        if lines:
            raise NodeNeverAnsweredError(
                '\n'.join(lines) + '\n' + '\n'.join(
                    f'--- {name} ({self.status(name)}; its stacks, if it lives)\n'
                    f'{self.log(name)[-4000:]}' for name in sorted(silent)))

    def status(self, name: str) -> str:
        """'running', 'exited with code N' or 'not started': a silent log means little
        without it."""
        process = self.processes.get(name)
        if process is None:
            return 'not started'
        code = process.poll()
        return 'running' if code is None else f'exited with code {code}'

    def dump_stacks(self) -> None:
        """Every live process prints its threads' stacks into its log (SIGUSR1, which
        cecm_ros.nodes registers): a failed wait then shows where a silent node was. Only
        the installed nodes: SIGUSR1 would end another process."""
        for name, process in self.processes.items():
            command = self.graph.commands[name][0]
            if Path(command[0]).parent == self.executables and process.poll() is None:
                try:
                    process.send_signal(signal.SIGUSR1)
                except OSError:
                    continue
        time.sleep(1.0)

    def activity(self) -> int:
        """How much every process has logged so far: grows while the graph works."""
        total = 0
        for path in self.graph.log_dir.rglob('*.log'):
            try:
                total += path.stat().st_size
            except OSError:
                continue
        return total

    def wait_for_exit(self, name: str, what: str, stall_s: float = STALL_S,
                      limit_s: float = 1800.0) -> int | None:
        """The exit code of ``name`` once it ends, waiting while the graph progresses
        (wait_progressing); None, with the reason printed, when it stalls first."""
        process = self.processes[name]
        try:
            wait_progressing(lambda: process.poll() is not None, self.activity, what,
                             stall_s, limit_s)
        except AssertionError as error:
            print(f'{name}: {error}')
            self.dump_stacks()
            self.raise_if_a_node_never_answered()
            return None
        return process.returncode

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
        """Wait until ``predicate()`` holds after a message came (``timeout_s`` scaled)."""
        with self.condition:
            return self.condition.wait_for(predicate, scaled(timeout_s))

    def wait_for_nodes(self, names, timeout_s: float) -> bool:
        """Wait until this node has discovered every named node (their participants)."""
        deadline = time.monotonic() + scaled(timeout_s)
        while time.monotonic() < deadline:
            if set(names) <= set(self.node.get_node_names()):
                return True
            time.sleep(0.1)
        return set(names) <= set(self.node.get_node_names())

    def result(self, future, timeout_s: float):
        """The future's result (``timeout_s`` scaled)."""
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(scaled(timeout_s)):
            raise TimeoutError(f'no answer within {scaled(timeout_s):g} s')
        return future.result()

    def call(self, srv_type, name: str, request, timeout_s: float = 30.0):
        client = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=scaled(timeout_s)):
                raise TimeoutError(f'service {name} not available')
            return self.result(client.call_async(request), timeout_s)
        finally:
            self.node.destroy_client(client)

    def send_goal(self, action_type, name: str, goal, timeout_s: float = 60.0):
        # rclpy's ActionClient, created while the executor spins, can kill its thread.
        from cecm_ros.nodes.common import SafeActionClient

        client = SafeActionClient(self.node, action_type, name)
        try:
            if not client.wait_for_server(timeout_sec=scaled(timeout_s)):
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


def play_session(tmp_path: Path, parameters: dict[str, dict], client_name: str,
                 nodes: Sequence[str] = NODES, others: dict[str, list[str]] | None = None
                 ) -> tuple[int | None, NodeProcesses, str]:
    """Every node of the graph (``nodes``) started with its ``parameters`` (over the
    installed file), the lifecycle manager bringing them up, and the session played until
    the task manager exits: its exit code, the processes (their logs stay readable) and
    the tail of every node's log (for an assertion's message). The task manager must be
    given ``exit_when_done``. ``others``: processes that are not cecm_ros nodes (a robot
    stack), by name and command line, started first."""
    executables, params = installed_or_skip(MANAGER)
    domain = RosDomain()
    client = RosClient(client_name)
    processes = NodeProcesses(executables, params, domain.env, tmp_path)
    try:
        for name, command in (others or {}).items():
            processes.graph.start(name, command)
        for node in nodes:
            processes.start(node, parameters.get(node))
        assert client.wait_for_nodes(nodes, 30.0)
        manager: dict = {'shutdown_timeout_s': 20.0}
        if tuple(nodes) != NODES:
            manager['node_names'] = list(nodes)
        processes.start(MANAGER, manager)
        code = processes.wait_for_exit('task_manager', 'the end of the session')
        logs = '\n'.join(f'--- {name}\n{processes.log(name)[-3000:]}'
                         for name in (*nodes, *(others or {})))
        return code, processes, logs
    finally:
        processes.close()
        client.close()
        domain.release()


def core_session(partner: str, tasks: int, samples: int, seed: int = 0) -> list:
    """The ROS-free core's session of ``tasks`` TidyUP tasks with the graph's installed
    settings and ``seed``: per task its TaskResult (estimate, theta, corrections). A
    graph session of the same seed ends with the same belief (`cecm experiment` and the
    graph compute the same numbers)."""
    from cecm_ros.core.estimator import EstimatorSettings
    from cecm_ros.domains.pddl.planner import FastDownwardPlanner
    from cecm_ros.domains.tidyup.model import TidyUpModel
    from cecm_ros.experiments.experiment import ExperimentSettings, run_once

    model = TidyUpModel()
    settings = ExperimentSettings(partner=partner, runs=1, tasks=tasks, seed=0, jobs=1,
                                  estimator=EstimatorSettings(samples=samples), heldout=0)
    with FastDownwardPlanner(model, workers=2) as planner:
        return run_once(model, planner, settings, run=seed)


# The Overcooked task the graph and browser tests run.
OVERCOOKED_TASK = 'A-lettuce_onion'


def write_overcooked_task_file(path, task_id: str = OVERCOOKED_TASK):
    """A tasks file with one Overcooked task, written from the domain's own task."""
    import yaml

    from cecm_ros.domains import load_domain

    domain = load_domain('overcooked')
    task = next(t for t in domain.tasks if t.task_id == task_id)
    path.write_text(yaml.safe_dump({'tasks': [domain.task_to_dict(task)]}))
    return path
