"""skill_bridge against action servers of a robot stack, in real processes over DDS.

The robot stack (test/robot_stack.py) serves Nav2's NavigateToPose and a grasp action,
types that are not cecm_ros's (test/interfaces/cecm_test_robot_msgs, written from their
public definitions; `make test` builds them). The test plays the executor: it sends
ExecuteSkill goals to the bridge and checks what reached the robot, and what came back.
The mapping file's reading is tested without a graph at the end.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.action', reason='needs the generated interfaces (make build)')
pytest.importorskip('cecm_test_robot_msgs.action',
                    reason='needs the test-only robot action types (make test builds them)')

from action_msgs.msg import GoalStatus  # noqa: E402
from graph_fixtures import (  # noqa: E402
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
)
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState  # noqa: E402
from paths import REPO, TEST_DIR  # noqa: E402

from cecm_ros.action import ExecuteSkill  # noqa: E402
from cecm_ros.core.errors import ConfigError  # noqa: E402
from cecm_ros.nodes.common import SafeActionClient  # noqa: E402
from cecm_ros.nodes.skill_mapping import build_goal, load_mapping  # noqa: E402

ROBOT_STACK = TEST_DIR / 'robot_stack.py'
MAPPING = """\
# The household's robot on a Nav2 robot: a pose per room, a surface per room.
tables:
  rooms:
    kitchen: {x: 4.0, y: 1.5, qz: 0.0, qw: 1.0}
    study: {x: 12.5, y: -3.0, qz: 0.7071, qw: 0.7071}
    lava_pit: {x: -1.0, y: 0.0, qz: 0.0, qw: 1.0}
    far_away: {x: 500.0, y: 0.0, qz: 0.0, qw: 1.0}
  surfaces:
    kitchen: counter
    study: desk
skills:
  move:
    match: (move robot ?from ?to)
    action: cecm_test_robot_msgs/action/NavigateToPose
    server: navigate_to_pose
    goal:
      pose.header.frame_id: map
      pose.pose.position.x: ${rooms[?to].x}
      pose.pose.position.y: ${rooms[?to].y}
      pose.pose.orientation.z: ${rooms[?to].qz}
      pose.pose.orientation.w: ${rooms[?to].qw}
    succeed_if: {error_code: 0}
    timeout_s: 4
    feedback: ${feedback.distance_remaining} m to ${?to}
  pick:
    match: (pick robot ?item ?room)
    action: cecm_test_robot_msgs/action/GraspObject
    server: grasp
    goal:
      object_id: ${?item}
      support_surface: ${surfaces[?room]}
      max_effort: 20
    succeed_if: {success: true}
"""


class Bridge:
    """The bridge and the robot stack, and this test as their executor."""

    def __init__(self, tmp_path: Path):
        executables, params = installed_or_skip('skill_bridge')
        self.domain = RosDomain()
        self.log = tmp_path / 'robot.jsonl'
        self.log.write_text('')
        mapping = tmp_path / 'skills.yaml'
        mapping.write_text(MAPPING)
        self.processes = NodeProcesses(executables, params, self.domain.env, tmp_path)
        self.processes.graph.start('robot_stack', [sys.executable, str(ROBOT_STACK),
                                                   str(self.log)])
        self.processes.start('skill_bridge', {'mapping_file': str(mapping)})
        self.client = RosClient('skill_bridge_test')
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            answer = self.client.call(ChangeState, 'skill_bridge/change_state',
                                      ChangeState.Request(transition=Transition(
                                          id=transition)), timeout_s=60.0)
            assert answer.success, self.processes.log('skill_bridge')[-3000:]
        self.skills = {kind: SafeActionClient(self.client.node, ExecuteSkill,
                                              f'robot/skills/{kind}')
                       for kind in ('move', 'pick', 'wait')}

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def send(self, kind: str, action: str, cancel_after: str = ''):
        """(status, result, feedback statuses); with ``cancel_after``, the skill is
        canceled once the robot logged that event for this goal."""
        client = self.skills[kind]
        before = len(self.events())
        assert client.wait_for_server(timeout_sec=scaled(30.0))
        feedback: list[str] = []
        goal = ExecuteSkill.Goal(task_id='task-1', step=0, action=action)
        handle = self.client.result(client.send_goal_async(
            goal, feedback_callback=lambda m: feedback.append(m.feedback.status)), 30.0)
        assert handle.accepted
        if cancel_after:
            deadline = time.monotonic() + scaled(30.0)
            while not any(e['event'] == cancel_after for e in self.events()[before:]):
                assert time.monotonic() < deadline, self.events()
                time.sleep(0.05)
            self.client.result(handle.cancel_goal_async(), 30.0)
        response = self.client.result(handle.get_result_async(), 60.0)
        return response.status, response.result, feedback

    def close(self) -> None:
        self.client.close()
        self.processes.close()
        self.domain.release()


@pytest.fixture(scope='module')
def bridge(tmp_path_factory):
    bridge = Bridge(tmp_path_factory.mktemp('bridge'))
    try:
        yield bridge
    finally:
        bridge.close()


def test_a_move_drives_to_the_rooms_pose_and_reports_progress(bridge):
    status, result, feedback = bridge.send('move', '(move robot kitchen study)')
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, result.message
    assert result.state_changed and 'navigate_to_pose succeeded' in result.message
    drive = [e for e in bridge.events() if e['event'] == 'navigate'][-1]
    assert drive == {'event': 'navigate', 'frame': 'map', 'x': 12.5, 'y': -3.0,
                     'qz': pytest.approx(0.7071), 'qw': pytest.approx(0.7071)}
    assert feedback and feedback[0] == '3.0 m to study', feedback


def test_a_pick_grasps_the_item_from_the_rooms_surface(bridge):
    status, result, _ = bridge.send('pick', '(pick robot plate kitchen)')
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, result.message
    grasp = [e for e in bridge.events() if e['event'] == 'grasp'][-1]
    assert grasp == {'event': 'grasp', 'object_id': 'plate', 'surface': 'counter',
                     'effort': 20.0}


def test_a_server_that_fails_or_says_it_failed_fails_the_skill(bridge):
    status, result, _ = bridge.send('move', '(move robot kitchen lava_pit)')
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert 'navigate_to_pose ended aborted' in result.message
    assert 'error_code=9000' in result.message
    # The robot's skill ran and failed: the executor re-plans and the team goes on.
    assert result.skill_failed
    # Succeeded by its status, failed by its result field (succeed_if).
    status, result, _ = bridge.send('pick', '(pick robot slippery study)')
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert "succeeded but result success is False, not True" in result.message
    assert result.skill_failed


def test_a_skill_that_overruns_is_canceled_on_the_robot_and_fails(bridge):
    before = len(bridge.events())
    status, result, _ = bridge.send('move', '(move robot kitchen far_away)')
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert 'navigate_to_pose timed out after 4 s' in result.message
    deadline = time.monotonic() + scaled(10.0)
    while not any(e['event'] == 'navigate canceled' for e in bridge.events()[before:]):
        assert time.monotonic() < deadline, bridge.events()[before:]
        time.sleep(0.05)


def test_canceling_the_skill_cancels_the_robots_goal(bridge):
    before = len(bridge.events())
    status, result, _ = bridge.send('move', '(move robot kitchen far_away)',
                                    cancel_after='navigate')
    assert status == GoalStatus.STATUS_CANCELED and not result.success
    events = [e['event'] for e in bridge.events()[before:]]
    assert 'cancel' in events
    deadline = time.monotonic() + scaled(10.0)
    while 'navigate canceled' not in [e['event'] for e in bridge.events()[before:]]:
        assert time.monotonic() < deadline, bridge.events()[before:]
        time.sleep(0.05)


def test_an_action_the_mapping_cannot_fill_is_refused_naming_why(bridge):
    before = len(bridge.events())
    status, result, _ = bridge.send('move', '(move robot kitchen garage)')
    assert status == GoalStatus.STATUS_ABORTED
    assert "table 'rooms' has no entry 'garage'" in result.message
    assert not result.skill_failed   # a goal that could not run: the task cannot go on
    status, result, _ = bridge.send('pick', '(pick robot plate)')
    assert status == GoalStatus.STATUS_ABORTED
    assert 'does not match (pick robot ?item ?room)' in result.message
    assert bridge.events()[before:] == []            # nothing reached the robot
    status, result, _ = bridge.send('wait', 'noop')
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success
    assert not result.state_changed
    assert 'Traceback' not in bridge.processes.log('skill_bridge')


# ------------------------------------------------------------- the mapping file alone
def _mapping(tmp_path: Path, text: str):
    path = tmp_path / 'skills.yaml'
    path.write_text(text)
    return load_mapping(path)


@pytest.mark.parametrize('change, message', [
    (('succeed_if', 'succed_if'), 'unknown key succed_if'),
    (('cecm_test_robot_msgs/action/NavigateToPose', 'nav2_msgs/action/NavigateToPose'),
     "package 'nav2_msgs' cannot be imported"),
    (('GraspObject', 'Grasp'), "has no action 'Grasp'"),
    (('pose.pose.position.y', 'pose.pose.position.why'), "has no field 'why'"),
    (('${rooms[?to].y}', '${room[?to].y}'), "no table 'room'"),
    (('${rooms[?to].qz}', '${rooms[?there].qz}'), '?there is not in the match pattern'),
    (('match: (pick robot', 'match: (grab robot'), "is not a 'pick' action"),
    (('timeout_s: 4', 'timeout_s: -4'), 'timeout_s must be a positive number'),
])
def test_a_bad_mapping_file_is_refused_naming_the_entry(tmp_path, change, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        _mapping(tmp_path, MAPPING.replace(*change))
    assert 'skills.' in str(caught.value) and 'skills.yaml' in str(caught.value)


def test_a_goal_field_keeps_the_type_of_the_message(tmp_path):
    mapping = _mapping(tmp_path, MAPPING)
    goal = build_goal(mapping.skills['move'], '(move robot study kitchen)', mapping.tables)
    assert goal.pose.pose.position.x == 4.0 and goal.pose.header.frame_id == 'map'
    with pytest.raises(ConfigError, match="'fast' does not fit"):
        broken = _mapping(tmp_path, MAPPING.replace('max_effort: 20', 'max_effort: fast'))
        build_goal(broken.skills['pick'], '(pick robot plate kitchen)', broken.tables)


def test_the_example_in_the_docs_reads(tmp_path):
    """docs/robot.md's mapping, with the test stack's type names for Nav2's."""
    text = REPO.joinpath('config', 'skills',
                                                        'nav2_example.yaml').read_text()
    mapping = _mapping(tmp_path, text.replace('nav2_msgs/action/', 'cecm_test_robot_msgs/'
                                              'action/'))
    assert set(mapping.skills) >= {'move'}
    goal = build_goal(mapping.skills['move'], '(move robot hallway kitchen)', mapping.tables)
    assert goal.pose.header.frame_id == 'map'
