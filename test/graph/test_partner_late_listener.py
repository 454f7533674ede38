"""simulated_human holds an answer until someone subscribes to robot/correction.

robot/correction is volatile: an answer published before DDS matched the executor's
subscription is lost, and the robot takes the silence for consent. The partner (the
installed executable, its own process) must wait, for a bounded time, until its
correction publisher has a subscriber, and when nobody ever comes warn once and go on
acting its plan. This process plays the world (the human skill servers) and the robot's
intents; the robot's correction subscription comes from a participant started late.
"""

from __future__ import annotations

import threading

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from core_fixtures import make_task  # noqa: E402
from graph_fixtures import (  # noqa: E402
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
)
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState  # noqa: E402
from rclpy.action import ActionServer  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402

from cecm_ros.action import ExecuteSkill  # noqa: E402
from cecm_ros.core.domain import NOOP  # noqa: E402
from cecm_ros.msg import Correction, RobotIntent, TaskRequest  # noqa: E402
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED  # noqa: E402
from cecm_ros.nodes.world_sim import DEFAULT_SKILLS  # noqa: E402

NAMESPACE = 'late_listener_world'
PARTNER = 'simulated_human'
WAITING = 'nobody subscribes to robot/correction yet'
NEVER = 'nobody subscribed to robot/correction within'
# Not in the partner's optimal plan (the plate goes to the study): it is corrected.
DETOUR = '(move robot kitchen bathroom)'


class World:
    """Human skill servers that take every goal, and the robot's intents; no subscriber
    on robot/correction."""

    def __init__(self):
        self.goals: list[int] = []   # the step of each goal
        self.lock = threading.Condition()
        self.client = RosClient('late_listener_world', setup=self._serve)
        self.intents = self.client.node.create_publisher(RobotIntent, 'robot/intent',
                                                         QOS_EVENTS)
        self.tasks = self.client.node.create_publisher(TaskRequest, 'task/request',
                                                       QOS_LATCHED)

    def _serve(self, node) -> None:
        group = ReentrantCallbackGroup()
        self.servers = [ActionServer(node, ExecuteSkill, f'{NAMESPACE}/{kind}', self._execute,
                                     callback_group=group)
                        for kind in DEFAULT_SKILLS]

    def _execute(self, goal_handle):
        with self.lock:
            self.goals.append(goal_handle.request.step)
            self.lock.notify_all()
        goal_handle.succeed()
        return ExecuteSkill.Result(success=True, state_changed=False, message='taken')

    def wait_goals(self, count: int, timeout_s: float) -> list[int]:
        """The steps of the goals so far, once there are ``count`` (``timeout_s`` scaled)."""
        with self.lock:
            self.lock.wait_for(lambda: len(self.goals) >= count, scaled(timeout_s))
            return list(self.goals)

    def announce(self, task_id: str, step: int, action: str) -> None:
        self.intents.publish(RobotIntent(task_id=task_id, step=step, action=action))

    def change_state(self, transition: int) -> bool:
        return self.client.call(ChangeState, f'{PARTNER}/change_state',
                                ChangeState.Request(transition=Transition(id=transition)),
                                60.0).success

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def world(tmp_path):
    """The partner process, active and answering intents, and the world."""
    executables, params = installed_or_skip(PARTNER)
    domain = RosDomain()
    processes = NodeProcesses(executables, params, domain.env, tmp_path)
    fake = World()
    try:
        processes.start(PARTNER, {'partner': 'full_capability', 'answer_intents': True,
                                  'human_skill_namespace': NAMESPACE})
        assert fake.change_state(Transition.TRANSITION_CONFIGURE), processes.log(PARTNER)
        assert fake.change_state(Transition.TRANSITION_ACTIVATE), processes.log(PARTNER)
        yield fake, processes
    finally:
        processes.close()
        fake.close()
        domain.release()


def _begin(fake: World, processes: NodeProcesses, task_id: str) -> None:
    task = make_task(task_id, ['(item-at plate study)'])
    fake.tasks.publish(conv.task_msg(task))
    assert processes.wait_for_log(PARTNER, f'task {task_id}: planned', 60.0), \
        processes.log(PARTNER)


def test_a_correction_decided_before_the_robot_subscribes_still_reaches_it(world):
    fake, processes = world
    _begin(fake, processes, 'late')
    fake.announce('late', 0, DETOUR)
    # The partner has decided its answer and holds it: nobody listens yet.
    assert processes.wait_for_log(PARTNER, WAITING, 30.0), processes.log(PARTNER)
    received: list[Correction] = []
    robot = RosClient('late_listener_robot')
    try:
        # The executor's subscription, made after the answer was decided, gets it.
        robot.collect(Correction, 'robot/correction', QOS_EVENTS, received)
        assert robot.wait_for(lambda: received, 30.0), processes.log(PARTNER)
        answer = received[0]
        assert (answer.task_id, answer.step, answer.intended_action) == ('late', 0, DETOUR)
        assert answer.corrected_action != DETOUR, answer   # a real correction
        assert fake.wait_goals(1, 30.0) == [0], processes.log(PARTNER)
        log = processes.log(PARTNER)
        assert log.count(WAITING) == 1 and NEVER not in log, log
    finally:
        robot.close()


def test_a_partner_nobody_listens_to_warns_once_and_goes_on_acting(world):
    fake, processes = world
    _begin(fake, processes, 'alone')
    fake.announce('alone', 0, DETOUR)
    # After its bounded wait it answers into the void and acts (its goal for step 0).
    assert fake.wait_goals(1, 120.0) == [0], processes.log(PARTNER)
    fake.announce('alone', 1, NOOP)
    assert fake.wait_goals(2, 60.0) == [0, 1], processes.log(PARTNER)
    log = processes.log(PARTNER)
    warnings = [line for line in log.splitlines() if NEVER in line]
    assert len(warnings) == 1 and warnings[0].startswith('[WARN]'), log
    assert log.count(WAITING) == 1, log   # the second answer did not wait again
    assert processes.alive(PARTNER)
