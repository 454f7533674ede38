"""Ctrl-C on a healthy graph in mid-task: every node ends with no ERROR and no WARN.

``ros2 launch`` passes a terminal's Ctrl-C to every node at once (SIGINT to the process
group), in the middle of whatever the graph is doing: here a task is being executed
and the estimator may be updating. An orderly stop is not a fault, so nothing may be
logged above INFO, and nothing may be lost on the way out (a log line that cannot
reach /rosout is one).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosDomain,
    installed_or_skip,
    scaled,
)

from cecm_ros.tools.ros_domain_ids import owned_shared_memory  # noqa: E402

# A log line above INFO (rclpy's console format, or one printed by a handler) and
# rcl's complaint when a node logs after its context is gone.
TROUBLE = re.compile(r'\[(ERROR|WARN|FATAL)\]|Failed to publish log message|Traceback')


def _stop_mid_task(tmp_path, when: str) -> tuple[dict[str, str], set[str]]:
    """Start the graph, SIGINT every process once ``when`` shows in the task
    manager's log; each process's log, and the Fast DDS shared-memory files the
    processes owned that are still there once they ended."""
    executables, params = installed_or_skip(MANAGER)
    ros_domain = RosDomain()
    processes = NodeProcesses(executables, params, ros_domain.env, tmp_path)
    names = (*NODES, MANAGER)
    try:
        for node in NODES:
            processes.start(node, {
                'capability_estimator': {'samples': 300, 'store_path':
                                         str(tmp_path / 'partners.sqlite')},
                'task_manager': {'num_tasks': 5, 'journal_dir': 'none'},
            }.get(node))
        processes.start(MANAGER, {})
        assert processes.wait_for_log('task_manager', when, 180.0), \
            processes.log('task_manager')[-3000:]
        time.sleep(0.5)
        assert all(processes.alive(name) for name in names)
        owned = owned_shared_memory([processes.graph.pid(name) for name in names])
        assert owned, 'the nodes own no Fast DDS shared memory: the check sees nothing'
        codes = processes.interrupt(list(names), timeout_s=scaled(15.0))
        assert codes == dict.fromkeys(names, 0), codes
        # A port file without its _el lock was opened again by a peer that wrote to it
        # as its owner left (Fast DDS creates a missing port on a write): it has no
        # owner to take over, and the next domain reservation removes it.
        left = {name for name in owned
                if Path('/dev/shm', name).exists()
                and (name.endswith('_el') or Path('/dev/shm', f'{name}_el').exists())}
        return {name: processes.log(name) for name in names}, left
    finally:
        processes.close()
        ros_domain.release()


@pytest.mark.parametrize('when', ['[task 2/5]', '[task 1/5]'])
def test_ctrl_c_in_mid_task_ends_every_node_without_errors_or_warnings(tmp_path, when):
    logs, left = _stop_mid_task(tmp_path, when)
    # A participant that ends cleanly removes its ports: one left behind is a zombie that
    # the next participant on the machine takes over (see cecm_ros.tools.ros_domain_ids).
    assert not left, f'Fast DDS shared memory left by nodes that ended cleanly: {sorted(left)}'
    trouble = {name: [line for line in log.splitlines() if TROUBLE.search(line)]
               for name, log in logs.items()}
    trouble = {name: lines for name, lines in trouble.items() if lines}
    assert not trouble, trouble
