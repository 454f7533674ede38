"""The panel's access token is kept where only the user can read it (issue 49): the
demo's parameters file, the node logs that show the panel's URL, the folder ROS writes
its own logs to, and never a command line (which every user of the machine can read)."""

from __future__ import annotations

import stat
import sys
import time

from paths import REPO

from cecm_ros.cli.main import build_parser
from cecm_ros.tools.demo_graph import launch_command, private_ros_logs, write_params
from cecm_ros.tools.process_graph import ProcessGraph

TOKEN = 'a-secret-token'


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _args(out):
    return build_parser().parse_args(['demo', '--web', f'--web-token={TOKEN}',
                                      f'--out={out}'])


def test_the_parameters_file_is_the_users_alone(tmp_path):
    args = _args(tmp_path)
    args.partner = 'low_capability'
    before = tmp_path / 'params.yaml'
    before.write_text('from an earlier run\n')
    before.chmod(0o644)
    path = write_params(REPO / 'config' / 'tidyup_sim.yaml', args, tmp_path)
    assert path == before and TOKEN in path.read_text()
    assert _mode(path) == 0o600
    assert not any(TOKEN in part for part in launch_command(args, path, tmp_path))


def test_node_logs_and_ros_logs_are_the_users_alone(tmp_path):
    graph = ProcessGraph({}, tmp_path / 'logs')
    try:
        graph.start('panel', [sys.executable, '-c', f'print("web panel: ?token={TOKEN}")'])
        deadline = time.monotonic() + 30
        while TOKEN not in graph.log('panel') and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        graph.stop()
    assert TOKEN in graph.log('panel')
    assert _mode(tmp_path / 'logs' / 'panel.log') == 0o600
    env = private_ros_logs({'ROS_DOMAIN_ID': '7'}, tmp_path)
    assert env['ROS_LOG_DIR'] == str(tmp_path / 'logs' / 'ros')
    assert _mode(tmp_path / 'logs' / 'ros') == 0o700
    assert private_ros_logs({'ROS_LOG_DIR': '/elsewhere'}, tmp_path)['ROS_LOG_DIR'] == \
        '/elsewhere'   # the caller's own choice stays
