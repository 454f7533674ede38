"""Packaging checks: package metadata, entry points, generated interfaces and DDS transport.

The interface and DDS tests need the colcon build (`make build`): they import the
generated cecm_ros.msg/srv/action modules and rclpy from the environment.
"""

import ast
import os
import re
import runpy
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import REPO

EXPECTED_NODES = {
    'task_manager',
    'capability_estimator',
    'joint_planner',
    'executor',
    'world_sim',
    'household_sim',
    'paced_partner',
    'simulated_human',
    'lifecycle_manager',
    'correction_console',
    'web_panel',
    'session_recorder',
    'skill_bridge',
    'scene_markers',
    'joy_corrections',
}


def cmake_node_list():
    """Return the node names listed in set(CECM_NODES ...) in CMakeLists.txt."""
    text = (REPO / 'CMakeLists.txt').read_text()
    match = re.search(r'set\(\s*CECM_NODES\s+([^)]*)\)', text)
    assert match, 'set(CECM_NODES ...) not found in CMakeLists.txt'
    body = re.sub(r'#[^\n]*', '', match.group(1))
    return body.split()


def setup_py_kwargs(monkeypatch):
    """Run setup.py with setuptools.setup replaced, and return its keyword arguments."""
    import setuptools

    captured = {}
    monkeypatch.setattr(setuptools, 'setup', lambda **kwargs: captured.update(kwargs))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / 'setup.py'), run_name='__main__')
    assert captured, 'setup.py did not call setuptools.setup()'
    return captured


def console_scripts(kwargs):
    """Map console script name -> 'module:function' from setup() keyword arguments."""
    scripts = {}
    for entry in kwargs['entry_points']['console_scripts']:
        name, target = (part.strip() for part in entry.split('=', 1))
        scripts[name] = target
    return scripts


# --------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------

def test_package_xml_is_format_3_ament_cmake():
    root = ET.parse(REPO / 'package.xml').getroot()
    assert root.tag == 'package'
    assert root.get('format') == '3'
    assert root.findtext('name') == 'cecm_ros'
    assert root.findtext('export/build_type') == 'ament_cmake'
    groups = [e.text for e in root.findall('member_of_group')]
    assert 'rosidl_interface_packages' in groups


def test_the_license_file_is_the_one_the_metadata_declares(monkeypatch):
    """package.xml, setup.py and the README say Apache-2.0; users, distributions and ROS
    tooling look for the text itself in LICENSE."""
    declared = ET.parse(REPO / 'package.xml').getroot().findtext('license')
    assert declared == setup_py_kwargs(monkeypatch)['license'] == 'Apache-2.0'
    text = (REPO / 'LICENSE').read_text()
    assert text.lstrip().startswith('Apache License')
    assert 'Version 2.0, January 2004' in text and 'END OF TERMS AND CONDITIONS' in text


def test_package_xml_passes_catkin_pkg_validation():
    # catkin_pkg is what colcon uses; it also validates e-mail addresses.
    package = pytest.importorskip('catkin_pkg.package')
    parsed = package.parse_package(str(REPO / 'package.xml'))
    parsed.validate()
    assert parsed.package_format == 3
    assert parsed.name == 'cecm_ros'


# Every runtime requirement of setup.py, and how a ROS 2 user gets it: a rosdep key in
# package.xml or a pin in requirements-ros.txt (pip only, no key).
ROSDEP_KEYS = {'numpy': 'python3-numpy', 'pyyaml': 'python3-yaml',
               'aiohttp': 'python3-aiohttp', 'matplotlib': 'python3-matplotlib',
               'unified-planning': 'python3-unified-planning-pip',
               'mcap-ros2-support': 'mcap-ros2-support', 'mcap': 'mcap-ros2-support'}


def _pins(text: str) -> dict[str, str]:
    return dict(line.split('==') for line in text.split() if '==' in line)


def test_every_runtime_dependency_is_declared_for_a_ros_install(monkeypatch):
    requirements = setup_py_kwargs(monkeypatch)['install_requires']
    exec_depends = {e.text for e in ET.parse(REPO / 'package.xml').getroot()
                    .iter('exec_depend')}
    ros_pins = _pins(re.sub(r'#[^\n]*', '', (REPO / 'requirements-ros.txt').read_text()))
    for name in requirements:
        declared = ROSDEP_KEYS.get(name) in exec_depends or name in ros_pins
        assert declared, f'{name}: neither a rosdep key in package.xml nor in ' \
            'requirements-ros.txt'
    # The pins a ROS user installs are the ones the Makefile tests with.
    makefile = (REPO / 'Makefile').read_text()
    app_deps = _pins(re.search(r'APP_DEPS := \\\n((?:.*\\\n)*.*)', makefile).group(1)
                     .replace('\\', ' '))
    for name, version in ros_pins.items():
        assert app_deps.get(name) == version, (name, version, app_deps.get(name))


def test_cmake_nodes_match_setup_py_console_scripts(monkeypatch):
    nodes = cmake_node_list()
    assert len(nodes) == len(set(nodes)), f'duplicate node in CMakeLists.txt: {nodes}'
    assert set(nodes) == EXPECTED_NODES

    scripts = console_scripts(setup_py_kwargs(monkeypatch))
    assert scripts.pop('cecm') == 'cecm_ros.cli.main:main'
    assert scripts == {node: f'cecm_ros.nodes.{node}:main' for node in nodes}


def test_the_launch_file_starts_installed_executables_with_files_the_package_has(monkeypatch):
    """Without launch (not on PyPI) the launch file is read, not run: every node it
    starts is one of the package's executables (or rviz2), every config file it names is
    there, every argument it reads is declared, and docs/nodes.md names each one."""
    path = REPO / 'launch' / 'cecm_graph.launch.py'
    tree = ast.parse(path.read_text(), str(path))
    scripts = console_scripts(setup_py_kwargs(monkeypatch))
    arguments = next([key.value for key in node.value.keys] for node in tree.body
                     if isinstance(node, ast.Assign)
                     and getattr(node.targets[0], 'id', '') == 'ARGUMENTS')
    started, configs, read = set(), set(), set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = getattr(call.func, 'id', '')
        constants = [a.value for a in call.args if isinstance(a, ast.Constant)]
        if name == 'Node':
            keywords = {k.arg: k.value for k in call.keywords}
            executable = keywords['executable']
            if isinstance(executable, ast.Constant):
                package = keywords['package']
                started.add(('rviz2' if isinstance(package, ast.Constant) else 'cecm_ros',
                             executable.value))
        elif name == '_config':
            configs.update(constants)
        elif name == 'LaunchConfiguration':
            read.update(constants)
        elif name == '_flag':
            read.update(c for c in constants if isinstance(c, str))
    assert ('cecm_ros', 'scene_markers') in started and ('cecm_ros', 'joy_corrections') in started
    for package, executable in started:
        assert executable in scripts or (package, executable) == ('rviz2', 'rviz2'), executable
    assert 'cecm.rviz' in configs
    for name in configs:
        assert (REPO / 'config' / name).is_file(), f'{path}: config/{name} is missing'
    assert read <= set(arguments), f'read but not declared: {sorted(read - set(arguments))}'
    documented = (REPO / 'docs' / 'nodes.md').read_text()
    assert not [a for a in arguments if f'`{a}`' not in documented]


def test_cmake_lists_every_interface_file():
    text = (REPO / 'CMakeLists.txt').read_text()
    listed = set(re.findall(r'"((?:msg|srv|action)/\w+\.(?:msg|srv|action))"', text))
    on_disk = {
        str(path.relative_to(REPO))
        for folder in ('msg', 'srv', 'action')
        for path in (REPO / folder).glob(f'*.{folder}')
    }
    assert listed == on_disk


# --------------------------------------------------------------------------
# Installed package (needs the colcon build)
# --------------------------------------------------------------------------

def test_installed_share_and_executables():
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    share = Path(get_package_share_directory('cecm_ros'))
    assert (share / 'package.xml').is_file()
    prefix = Path(get_package_prefix('cecm_ros'))
    for node in EXPECTED_NODES:
        exe = prefix / 'lib' / 'cecm_ros' / node
        assert exe.is_file(), exe
        assert os.access(exe, os.X_OK), exe
        assert f'from cecm_ros.nodes.{node} import main' in exe.read_text()
    cli = prefix / 'bin' / 'cecm'
    assert cli.is_file() and os.access(cli, os.X_OK)


def test_interfaces_import_and_round_trip_serialization():
    from rclpy.serialization import deserialize_message, serialize_message

    from cecm_ros.action import EstimateCapabilities, ExecuteSkill, RunTask
    from cecm_ros.msg import (
        CapabilityBelief,
        Correction,
        JointPlan,
        JointStep,
        RobotIntent,
        StepResult,
        TaskOutcome,
        TaskRequest,
        TeamState,
    )
    from cecm_ros.srv import LoadBelief, PlanTask, ResetWorld, SaveBelief, StartTasks

    for srv in (PlanTask, SaveBelief, LoadBelief, ResetWorld, StartTasks):
        assert srv.Request() is not None and srv.Response() is not None
    for action in (EstimateCapabilities, ExecuteSkill, RunTask):
        assert action.Goal() is not None
        assert action.Result() is not None
        assert action.Feedback() is not None
    for msg_type in (CapabilityBelief, Correction, RobotIntent, StepResult, TaskRequest):
        assert msg_type() is not None

    state = TeamState(
        task_id='t1',
        step=2,
        true_propositions=['at plate kitchen', 'at robot kitchen'],
        robot_action='pick robot plate kitchen',
        human_action='noop',
    )
    plan = JointPlan(
        task_id='t1',
        steps=[JointStep(robot_action='pick robot plate kitchen', human_action='noop')],
        total_cost=3.5,
        capability_names=['reach_high'],
        capability_estimate=[True],
        planned_for='belief',
    )
    outcome = TaskOutcome(task_id='t1', trajectory=[state, state], goal_reached=True)
    for message in (state, plan, outcome):
        data = serialize_message(message)
        assert isinstance(data, bytes) and data
        assert deserialize_message(data, type(message)) == message


# --------------------------------------------------------------------------
# Two processes over DDS
# --------------------------------------------------------------------------

PUBLISHER = textwrap.dedent(
    """
    import sys
    import rclpy
    from cecm_ros.msg import TeamState

    topic = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node('cecm_packaging_test_publisher')
    pub = node.create_publisher(TeamState, topic, 10)
    step = 0
    try:
        # Publish until the test terminates this process (bounded anyway).
        while rclpy.ok() and step < 600:
            pub.publish(TeamState(task_id='dds-check', step=step, true_propositions=['p']))
            step += 1
            rclpy.spin_once(node, timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    """
)


@pytest.fixture
def ros_env(monkeypatch):
    """Keep DDS on this machine, in a domain of its own."""
    from cecm_ros.tools.ros_domain_ids import reserve_domain_id

    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    with reserve_domain_id() as reservation:
        monkeypatch.setenv('ROS_DOMAIN_ID', str(reservation.domain_id))
        yield dict(os.environ)


def test_team_state_pub_sub_across_processes(ros_env, tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from cecm_ros.msg import TeamState

    topic = f'cecm_packaging_test_{uuid.uuid4().hex[:8]}'
    received = []

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('cecm_packaging_test_subscriber', context=context)
    node.create_subscription(TeamState, topic, received.append, 10)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    child = subprocess.Popen(
        [sys.executable, '-c', PUBLISHER, topic],
        cwd=tmp_path,
        env=ros_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20.0
        while not received and time.monotonic() < deadline and child.poll() is None:
            executor.spin_once(timeout_sec=0.1)
    finally:
        child.terminate()
        try:
            output, _ = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            output, _ = child.communicate()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)

    assert received, f'no TeamState received from the publisher process; its output:\n{output}'
    assert received[0].task_id == 'dds-check'
    assert list(received[0].true_propositions) == ['p']


def test_the_world_node_is_world_sim_in_the_graph_and_every_default():
    """One name for the world node (issue 47): the graph's parameters, the lifecycle
    manager's start order, the demo graph and the launch files all say world_sim."""
    import yaml

    from cecm_ros.nodes.lifecycle_manager import DEFAULT_NODES
    from cecm_ros.tools.demo_graph import NODES

    params = yaml.safe_load((REPO / 'config' / 'tidyup_sim.yaml').read_text())
    assert 'world_sim' in params
    assert params['lifecycle_manager']['ros__parameters']['node_names'][0] == 'world_sim'
    assert DEFAULT_NODES[0] == NODES[0] == 'world_sim'
    for path in (*(REPO / 'config').glob('*.yaml'), *(REPO / 'launch').glob('*.py')):
        assert 'household_sim' not in path.read_text(), path


def test_household_sim_runs_the_world_and_says_once_that_it_is_deprecated(ros_env):
    """The executable of the world's first name still starts the world, for one release,
    and names world_sim in a single warning."""
    from ament_index_python.packages import get_package_prefix

    from cecm_ros.nodes.household_sim import DEPRECATED

    executable = Path(get_package_prefix('cecm_ros')) / 'lib' / 'cecm_ros' / 'household_sim'
    child = subprocess.Popen([str(executable)], env=ros_env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(DEPRECATED in line for line in lines):
        time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    try:
        code = child.wait(timeout=20)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    reader.join(5)
    output = ''.join(lines)
    assert 'world_sim' in DEPRECATED
    assert output.count(DEPRECATED) == 1, output
    warning = next(line for line in lines if DEPRECATED in line)
    assert '[WARN]' in warning and '[household_sim]' in warning, warning
    assert code == 0, output
