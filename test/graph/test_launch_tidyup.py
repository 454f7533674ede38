"""launch_testing: the installed tidyup_sim.launch.py runs a short session.

Runs with launch_testing on a full ROS 2 install (``launch_test
test/graph/test_launch_tidyup.py`` or pytest with the launch_testing plugin). launch and
launch_testing are not on PyPI, so in the .venv of this repository the module is
skipped; test_graph_dds.py checks the same graph there without launch.
"""

import atexit
import os
import shutil
import tempfile
import threading
import unittest

import pytest

pytest.importorskip(
    'launch_testing',
    reason='launch_testing is not installed (not on PyPI; needs a full ROS 2 install); '
           'test_graph_dds.py covers the same graph without launch')
pytest.importorskip('launch_ros', reason='launch_ros is not installed')

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import launch_testing.markers  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
import rclpy.executors  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from graph_fixtures import scaled  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from cecm_ros.domains.tidyup.model import default_catalog  # noqa: E402
from cecm_ros.msg import CapabilityBelief  # noqa: E402
from cecm_ros.tools.ros_domain_ids import reserve_domain_id  # noqa: E402

PARTNER = 'low_capability'
TASKS = 2
SAMPLES = 60
SEED = 0          # see test_graph_dds.py: with it the belief moves within two tasks
SESSION_TIMEOUT_S = scaled(240.0)
# Held for the life of this test process (see cecm_ros/tools/ros_domain_ids.py).
DOMAIN = reserve_domain_id()
DOMAIN_ID = str(DOMAIN.domain_id)
# A home of this test's own: the installed parameters keep a partner store and session
# journals in ~/.ros/cecm_ros, which must be fresh here and never the user's.
HOME = tempfile.mkdtemp(prefix='cecm_launch_test_')
atexit.register(shutil.rmtree, HOME, True)
STORE = os.path.join(HOME, 'partners.sqlite')


@pytest.mark.launch_test
@launch_testing.markers.keep_alive
def generate_test_description():
    os.environ['ROS_DOMAIN_ID'] = DOMAIN_ID           # for this test's own rclpy context
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    launch_file = os.path.join(get_package_share_directory('cecm_ros'), 'launch',
                               'tidyup_sim.launch.py')
    return launch.LaunchDescription([
        launch.actions.SetEnvironmentVariable('ROS_DOMAIN_ID', DOMAIN_ID),
        launch.actions.SetEnvironmentVariable('HOME', HOME),
        launch.actions.SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST'),
        launch.actions.IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file),
            launch_arguments={'partner': PARTNER, 'num_tasks': str(TASKS),
                              'samples': str(SAMPLES), 'seed': str(SEED),
                              'store_path': STORE, 'exit_when_done': 'false'}.items()),
        launch_testing.actions.ReadyToTest(),
    ])


def _hamming(estimate) -> float:
    # The catalogue only (no planner): this test may run in a ROS environment without
    # unified-planning, since the nodes run in their own processes.
    truth = default_catalog().resolve(PARTNER)
    return float(np.mean(np.asarray(list(estimate), dtype=bool) != truth))


class TestSession(unittest.TestCase):
    def test_belief_moves_toward_the_true_capabilities(self, proc_output):
        context = rclpy.Context()
        rclpy.init(context=context)
        node = rclpy.create_node('cecm_launch_test', context=context)
        beliefs = []
        arrived = threading.Condition()

        def store(msg):
            with arrived:
                beliefs.append(msg)
                arrived.notify_all()

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(CapabilityBelief, 'capability_belief', store, qos)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        try:
            with arrived:
                done = arrived.wait_for(lambda: any(b.tasks_seen >= TASKS for b in beliefs),
                                        SESSION_TIMEOUT_S)
            self.assertTrue(done, f'beliefs seen: {[b.tasks_seen for b in beliefs]}')
        finally:
            executor.shutdown(timeout_sec=5)
            spinner.join(5)
            node.destroy_node()
            rclpy.try_shutdown(context=context)
        final = next(b for b in beliefs if b.tasks_seen >= TASKS)
        prior = next((b for b in beliefs if b.tasks_seen == 0), None)
        # The prior (0.8, nothing decided) plans every capability as present.
        everything = [True] * len(default_catalog())
        prior_hamming = _hamming(prior.estimate) if prior else _hamming(everything)
        self.assertLess(_hamming(final.estimate), prior_hamming)
        proc_output.assertWaitFor(f'[task {TASKS}/{TASKS}]', timeout=scaled(30.0),
                                  stream='stderr')


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
