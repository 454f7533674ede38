"""How long the graph takes to come up, and where the time goes.

    .venv/bin/python bench/bringup.py --repeat 3             # node processes, no launch
    .venv/bin/python bench/bringup.py --launch --repeat 3    # through launch (needs it)

Starts the simulated household's nodes and the lifecycle manager (as `cecm demo` does,
or through tidyup_sim.launch.py with launch's LaunchService, what `ros2 launch` runs),
and prints per start, from the moment the processes are started: when the manager
logged that it starts the nodes (its process is up), when it began to configure the
first node (every node's lifecycle services found and answering), and when all were
active. The session itself is not run (autostart_tasks: false). Only the shares carry
over to another machine; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cecm_ros.tools.demo_graph import MANAGER, NODES, demo_environment, package_paths
from cecm_ros.tools.process_graph import ProcessGraph

MARKS = (('manager up', 'starting '), ('first configure', ': configure ...'),
         ('all active', 'nodes are active'))
LAUNCH = """\
import sys, launch
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from ament_index_python.packages import get_package_share_directory
path = get_package_share_directory('cecm_ros') + '/launch/tidyup_sim.launch.py'
service = launch.LaunchService()
service.include_launch_description(IncludeLaunchDescription(
    PythonLaunchDescriptionSource(path), launch_arguments=[('journal_dir', 'none')]))
sys.exit(service.run())
"""


def _stamps(text: str, started: float) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        match = re.search(r'(\d{10}\.\d+) \[\w+\] \[lifecycle_manager\]: (.*)', line)
        if not match:
            continue
        for name, marker in MARKS:
            if name not in found and marker in match[2]:
                found[name] = float(match[1]) - started
    return found


def once(use_launch: bool, timeout_s: float) -> dict[str, float]:
    env = demo_environment()
    env['RCUTILS_CONSOLE_OUTPUT_FORMAT'] = '{time} [{severity}] [{name}]: {message}'
    folder = Path(tempfile.mkdtemp(prefix='cecm-bringup-'))
    executables, params = package_paths()
    graph = ProcessGraph(env, folder)
    started = time.time()
    if use_launch:
        graph.start('launch', [sys.executable, '-c', LAUNCH])
        name = 'launch'
    else:
        for node in NODES:
            extra = ['-p', 'autostart_tasks:=false'] if node == 'task_manager' else []
            graph.start(node, [str(executables / node), '--ros-args', '--params-file',
                               str(params), *extra])
        graph.start(MANAGER, [str(executables / MANAGER), '--ros-args', '--params-file',
                              str(params)])
        name = MANAGER
    deadline = time.monotonic() + timeout_s
    stamps: dict[str, float] = {}
    while time.monotonic() < deadline and len(stamps) < len(MARKS):
        time.sleep(0.2)
        stamps = _stamps(graph.log(name), started)
    graph.stop(first=(MANAGER,) if not use_launch else ())
    return stamps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--launch', action='store_true',
                        help='through tidyup_sim.launch.py (launch and launch_ros needed)')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--timeout', type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.launch:
        try:
            import launch_ros  # noqa: F401
        except ImportError:
            print('launch_ros is not importable here (not on PyPI); run without --launch',
                  file=sys.stderr)
            return 2
    load = os.getloadavg()[0]
    results = [once(args.launch, args.timeout) for _ in range(args.repeat)]
    for index, stamps in enumerate(results):
        print(f'start {index + 1}: ' + ', '.join(f'{name} {stamps[name]:.2f} s'
                                                 for name, _ in MARKS if name in stamps))
    complete = [r for r in results if len(r) == len(MARKS)]
    if complete:
        print('median: ' + ', '.join(
            f'{name} {statistics.median(r[name] for r in complete):.2f} s'
            for name, _ in MARKS) + f' (load average {load:.1f} at the start)')
    return 0 if complete else 1


if __name__ == '__main__':
    sys.exit(main())
