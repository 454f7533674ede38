"""The session layer runs without ROS: its loops (the task manager's session, the
executor's task run, the lifecycle manager's bookkeeping, the partner's runs) are what
the nodes wrap. Importing every session module in a fresh interpreter loads no rclpy,
no message package and no node."""

import subprocess
import sys

FORBIDDEN = ('rclpy', 'rosidl', 'cecm_ros.nodes', 'cecm_ros.msg', 'cecm_ros.srv',
             'cecm_ros.action')


def test_importing_the_session_layer_loads_no_ros():
    code = ('import importlib, pkgutil, sys\n'
            'import cecm_ros.session as session\n'
            'names = [m.name for m in pkgutil.iter_modules(session.__path__)]\n'
            'for name in names:\n'
            '    importlib.import_module("cecm_ros.session." + name)\n'
            f'bad = sorted(k for k in sys.modules if k.startswith({FORBIDDEN!r}))\n'
            'print(len(names), bad)\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    count, bad = done.stdout.strip().split(' ', 1)
    assert int(count) >= 9, done.stdout   # runner, task_execution, managed_nodes, ...
    assert bad == '[]', bad
