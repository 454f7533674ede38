"""joy_corrections as a person with a gamepad uses it: the installed node as its own
process with the package's mapping (config/joy_corrections.yaml); this process plays the
robot over DDS (task request, team states, intents) and the pad (sensor_msgs/Joy), and
reads what comes on robot/correction and human/choice.
"""

from __future__ import annotations

import subprocess
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import NodeProcesses, RosClient, RosDomain, installed_or_skip, scaled  # noqa: E402
from paths import line_of  # noqa: E402
from sensor_msgs.msg import Joy  # noqa: E402

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT  # noqa: E402
from cecm_ros.domains.tidyup.model import TidyUpModel  # noqa: E402
from cecm_ros.msg import (  # noqa: E402
    Correction,
    PartnerChoice,
    RobotIntent,
    StepResult,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED, QOS_TEAM_STATE  # noqa: E402

NODE = 'joy_corrections'
RUN = 3
# The package's mapping: 0 agree, 1 wait, 2 robot 1, 6 partner wait, 7 partner 1.
AGREE, WAIT, ROBOT_1, PARTNER_WAIT, PARTNER_1 = 0, 1, 2, 6, 7


@pytest.fixture(scope='module')
def pad(tmp_path_factory):
    executables, params = installed_or_skip(NODE)
    ros_domain = RosDomain()
    processes = NodeProcesses(executables, params, ros_domain.env,
                              tmp_path_factory.mktemp('joy'))
    client = RosClient('joy_test')
    corrections: list[Correction] = []
    choices: list[PartnerChoice] = []
    client.collect(Correction, 'robot/correction', QOS_EVENTS, corrections)
    client.collect(PartnerChoice, 'human/choice', QOS_EVENTS, choices)
    node = client.node
    publishers = {'joy': node.create_publisher(Joy, 'joy', 10),
                  'play_joy': node.create_publisher(Joy, 'play/joy', 10),
                  'task': node.create_publisher(TaskRequest, 'task/request', QOS_LATCHED),
                  'state': node.create_publisher(TeamState, 'team_state', QOS_TEAM_STATE),
                  'intent': node.create_publisher(RobotIntent, 'robot/intent', QOS_EVENTS),
                  'step': node.create_publisher(StepResult, 'robot/step_result', QOS_EVENTS)}
    processes.start(NODE, {'sender': 'pad'})
    # A second pad of a person who plays the partner, on its own joy topic.
    command = [str(executables / NODE), '--ros-args', '--params-file', str(params),
               '-r', f'__node:={NODE}_play', '-r', 'joy:=play/joy', '-p', 'play:=true',
               '-p', 'sender:=player']
    processes.graph.start(f'{NODE}_play', command)
    try:
        deadline = time.monotonic() + scaled(30.0)
        while time.monotonic() < deadline and not (
                publishers['joy'].get_subscription_count() and
                publishers['play_joy'].get_subscription_count() and
                publishers['intent'].get_subscription_count() == 2 and
                node.count_publishers('robot/correction') == 2):
            time.sleep(0.1)
        model = TidyUpModel()
        task = model.task_generator(0).next_task()
        publishers['task'].publish(conv.task_msg(task, attempt=RUN))
        start = model.initial_state(task)
        publishers['state'].publish(conv.team_state_msg(model, task.task_id, 0, start))
        yield {'client': client, 'processes': processes, 'publish': publishers,
               'corrections': corrections, 'choices': choices, 'model': model, 'task': task,
               'start': start}
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _press(pad, button: int, topic: str = 'joy') -> None:
    """Button down, then up: one press, as the joy driver publishes it."""
    buttons = [0] * 11
    buttons[button] = 1
    pad['publish'][topic].publish(Joy(buttons=buttons))
    time.sleep(0.05)
    pad['publish'][topic].publish(Joy(buttons=[0] * 11))


def _intend(pad, step: int, action: str) -> None:
    pad['publish']['intent'].publish(RobotIntent(task_id=pad['task'].task_id, attempt=RUN,
                                                 step=step, action=action))
    time.sleep(0.3)   # the intent reaches both pads before a button does


def _answer(pad, step: int, sender: str = 'pad') -> Correction:
    found = lambda: [c for c in pad['corrections'] if c.step == step and c.sender == sender]  # noqa: E731
    assert pad['client'].wait_for(lambda: found(), 20.0), \
        f'no correction for step {step}\n{pad["processes"].log(NODE)}'
    assert len(found()) == 1
    return found()[0]


def test_buttons_answer_the_robot_by_the_mapping(pad):
    model, start = pad['model'], pad['start']
    moves = [a for a in model.applicable_actions(start, ROBOT) if a.startswith('(move')]
    _intend(pad, 0, moves[0])
    _press(pad, AGREE)
    answer = _answer(pad, 0)
    assert (answer.task_id, answer.attempt) == (pad['task'].task_id, RUN)
    assert answer.corrected_action == answer.intended_action == moves[0]

    _intend(pad, 1, moves[0])
    _press(pad, WAIT)
    assert _answer(pad, 1).corrected_action == NOOP

    # robot 1: the robot's first action that applies now other than the intended one,
    # as the web panel's key 1 offers it.
    _intend(pad, 2, moves[0])
    _press(pad, ROBOT_1)
    others = [a for a in model.applicable_actions(start, ROBOT) if a not in (NOOP, moves[0])]
    assert _answer(pad, 2).corrected_action == others[0]


def test_a_held_button_answers_once_and_nothing_open_answers_nothing(pad):
    model, start = pad['model'], pad['start']
    action = model.applicable_actions(start, ROBOT)[0]
    _intend(pad, 3, action)
    held = [0] * 11
    held[AGREE] = 1
    for _ in range(5):   # the driver repeats a held button's state (autorepeat)
        pad['publish']['joy'].publish(Joy(buttons=held))
        time.sleep(0.05)
    pad['publish']['joy'].publish(Joy(buttons=[0] * 11))
    _answer(pad, 3)
    time.sleep(1.0)
    assert len([c for c in pad['corrections'] if c.step == 3]) == 1
    # The robot acted: nothing is open, a press is refused with the reason.
    pad['publish']['step'].publish(StepResult(task_id=pad['task'].task_id, step=3,
                                              action=action))
    time.sleep(0.3)
    before = len(pad['corrections'])
    _press(pad, WAIT)
    assert pad['processes'].wait_for_log(NODE, 'not sent: nothing to answer: no intent is open',
                                         15.0)
    # A partner button without play mode is refused too.
    _intend(pad, 4, action)
    _press(pad, PARTNER_1)
    assert pad['processes'].wait_for_log(NODE, 'play mode is off', 15.0)
    time.sleep(0.5)
    assert len(pad['corrections']) == before and not [c for c in pad['choices']
                                                       if c.sender == 'pad']
    assert pad['processes'].alive(NODE)


def test_in_play_mode_a_button_chooses_the_partners_action(pad):
    model, start, task = pad['model'], pad['start'], pad['task']
    action = model.applicable_actions(start, ROBOT)[0]
    # The task runs again (its next run): the world is at its step 0.
    pad['publish']['task'].publish(conv.task_msg(task, attempt=RUN + 1))
    time.sleep(0.5)
    pad['publish']['intent'].publish(RobotIntent(task_id=task.task_id, attempt=RUN + 1,
                                                 step=0, action=action))
    time.sleep(0.3)
    # Key 1 of the panel at the world's step (0): the partner's first action there.
    _press(pad, PARTNER_1, 'play_joy')
    first = model.applicable_actions(start, HUMAN)[0]
    assert pad['client'].wait_for(lambda: [c for c in pad['choices'] if c.sender == 'player'],
                                  20.0), pad['processes'].log(f'{NODE}_play')
    choice = next(c for c in pad['choices'] if c.sender == 'player')
    assert (choice.task_id, choice.attempt, choice.step, choice.action) == \
        (task.task_id, RUN + 1, 0, first)
    # It agrees to the robot's open intent too: one press per step.
    answer = _answer(pad, 0, 'player')
    assert (answer.attempt, answer.corrected_action) == (RUN + 1, action)
    # The step has its choice: another press for it is refused.
    _press(pad, PARTNER_WAIT, 'play_joy')
    assert pad['processes'].wait_for_log(f'{NODE}_play', 'step 0 has a choice already', 15.0)
    assert len([c for c in pad['choices'] if c.sender == 'player']) == 1


def test_a_mapping_with_a_mistake_is_refused_at_its_line(pad, tmp_path):
    executables, _ = installed_or_skip(NODE)
    mapping = tmp_path / 'pad.yaml'
    mapping.write_text('buttons:\n  0: agree\n  1: fly away\n')
    done = subprocess.run([str(executables / NODE), '--ros-args', '-p',
                           f'mapping_file:={mapping}'], capture_output=True, text=True,
                          timeout=scaled(60.0), env=pad['processes'].graph.env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{mapping}:{line_of(mapping, '1: fly')}:3: button 1: 'fly away' is none of" in \
        done.stdout + done.stderr
