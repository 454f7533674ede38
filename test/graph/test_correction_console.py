"""correction_console as a person would use it: the installed executable, lines on stdin.

The console runs as its own process; this process plays the robot over DDS (publishes
intents and step results, collects the corrections) and types into the console's
standard input through a pipe.
"""

from __future__ import annotations

import subprocess
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from core_fixtures import make_task  # noqa: E402
from graph_fixtures import RosClient, RosDomain, installed_or_skip, scaled  # noqa: E402

from cecm_ros.msg import (  # noqa: E402
    Correction,
    JointPlan,
    JointStep,
    RobotIntent,
    StepResult,
    TaskRequest,
)
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED  # noqa: E402

TASK = 'console-task'
RUN = 41   # TaskRequest.attempt of the run the intents belong to


@pytest.fixture(scope='module')
def console(tmp_path_factory):
    executables, _ = installed_or_skip('correction_console')
    ros_domain = RosDomain()
    env = ros_domain.env
    log_path = tmp_path_factory.mktemp('console') / 'console.log'
    log = open(log_path, 'w')
    command = [str(executables / 'correction_console'), '--ros-args', '-p', 'sender:=keyboard']
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=log,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    client = RosClient('console_test')
    corrections: list[Correction] = []
    subscription = client.collect(Correction, 'robot/correction', QOS_EVENTS, corrections)
    intents = client.node.create_publisher(RobotIntent, 'robot/intent', QOS_EVENTS)
    steps = client.node.create_publisher(StepResult, 'robot/step_result', QOS_EVENTS)
    state = {'process': process, 'log': log_path, 'client': client, 'intents': intents,
             'steps': steps, 'corrections': corrections}
    try:
        deadline = time.monotonic() + scaled(30.0)
        while time.monotonic() < deadline and not (
                intents.get_subscription_count() and _publishers(client, subscription)):
            time.sleep(0.1)
        yield state
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        client.close()
        ros_domain.release()


def _publishers(client, subscription) -> int:
    # Subscription.get_publisher_count is recent rclpy; the graph count serves elsewhere.
    if hasattr(subscription, 'get_publisher_count'):
        return subscription.get_publisher_count()
    return client.node.count_publishers('robot/correction')


def _output(console) -> str:
    return console['log'].read_text(errors='replace')


def _wait_output(console, text: str, timeout_s: float = 15.0, since: int = 0) -> bool:
    """Whether ``text`` appears in the output (after its first ``since`` characters)."""
    deadline = time.monotonic() + scaled(timeout_s)
    while time.monotonic() < deadline:
        if text in _output(console)[since:]:
            return True
        time.sleep(0.1)
    return text in _output(console)[since:]


def _type(console, line: str) -> None:
    console['process'].stdin.write(line + '\n')
    console['process'].stdin.flush()


def _announce(console, step: int, action: str) -> None:
    console['intents'].publish(RobotIntent(task_id=TASK, attempt=RUN, step=step,
                                           action=action))
    assert _wait_output(console, f'[{TASK} step {step}] the robot intends {action}'), \
        _output(console)


def _answer_for(console, step: int) -> Correction:
    corrections = console['corrections']
    assert console['client'].wait_for(lambda: any(c.step == step for c in corrections),
                                      15.0), _output(console)
    return next(c for c in corrections if c.step == step)


def test_an_empty_line_agrees(console):
    _announce(console, 0, '(move robot kitchen study)')
    _type(console, '')
    answer = _answer_for(console, 0)
    assert (answer.task_id, answer.attempt, answer.sender) == (TASK, RUN, 'keyboard')
    assert answer.corrected_action == answer.intended_action == '(move robot kitchen study)'


def test_an_unknown_action_is_refused_and_the_intent_stays_open(console):
    _announce(console, 1, '(move robot study kitchen)')
    _type(console, 'fly robot plate kitchen')
    assert _wait_output(console, "not sent: the answer 'fly robot plate kitchen'"), \
        _output(console)
    _type(console, 'move human study kitchen')   # the partner's action, not the robot's
    assert _wait_output(console, 'is an action of the human'), _output(console)
    _type(console, 'w')
    answer = _answer_for(console, 1)
    assert answer.corrected_action == 'noop'
    assert answer.intended_action == '(move robot study kitchen)'
    assert len([c for c in console['corrections'] if c.step == 1]) == 1


def test_an_action_corrects_the_robot(console):
    _announce(console, 2, '(move robot kitchen study)')
    _type(console, 'move robot kitchen bathroom')
    answer = _answer_for(console, 2)
    assert answer.corrected_action == '(move robot kitchen bathroom)'


def test_a_finished_step_cannot_be_answered(console):
    _announce(console, 3, 'noop')
    console['steps'].publish(StepResult(task_id=TASK, step=3, action='noop'))
    assert _wait_output(console, 'step 3: the robot did noop (as announced)'), _output(console)
    _type(console, '')
    assert _wait_output(console, 'nothing to answer: no intent is open'), _output(console)
    assert not any(c.step == 3 for c in console['corrections'])
    assert console['process'].poll() is None


def test_a_repeated_intent_is_shown_once_and_another_steps_result_leaves_it_open(console):
    _announce(console, 4, '(move robot kitchen study)')
    console['intents'].publish(RobotIntent(task_id=TASK, attempt=RUN, step=4,
                                           action='(move robot kitchen study)'))
    console['steps'].publish(StepResult(task_id=TASK, step=99, action='noop'))
    assert _wait_output(console, 'step 99: the robot did noop'), _output(console)
    _type(console, '')
    answer = _answer_for(console, 4)
    assert answer.corrected_action == '(move robot kitchen study)'
    assert _output(console).count(f'[{TASK} step 4] the robot intends') == 1
    assert 'step 4 went unanswered' not in _output(console)


def test_an_intent_announced_again_after_its_answer_is_not_asked_again(console):
    _announce(console, 5, '(move robot kitchen study)')
    _type(console, '')
    _answer_for(console, 5)
    assert _wait_output(console, 'step 5: agreed'), _output(console)
    console['intents'].publish(RobotIntent(task_id=TASK, attempt=RUN, step=5,
                                           repeated=True, action='(move robot kitchen study)'))
    _announce(console, 6, 'noop')   # after the repeat on the same topic: it was handled
    assert _output(console).count(f'[{TASK} step 5] the robot intends') == 1
    assert 'step 5 went unanswered' not in _output(console)
    assert len([c for c in console['corrections'] if c.step == 5]) == 1


def test_an_intent_heard_only_as_a_repeat_is_shown_closed_and_not_asked(console):
    """A console started after the window of a step closed hears only the repeats."""
    console['steps'].publish(StepResult(task_id=TASK, step=6, action='noop'))
    assert _wait_output(console, 'step 6: the robot did noop'), _output(console)
    repeat = RobotIntent(task_id=TASK, attempt=RUN, step=7,
                         action='(move robot kitchen study)', repeated=True)
    console['intents'].publish(repeat)
    assert _wait_output(console, f'[{TASK} step 7] the robot announced (move robot kitchen '
                                 'study); its correction window has closed'), _output(console)
    console['intents'].publish(repeat)
    _announce(console, 8, 'noop')   # after the second repeat on the same topic
    _type(console, '')               # answers step 8, the one open
    assert _answer_for(console, 8).corrected_action == 'noop'
    assert _output(console).count(f'[{TASK} step 7]') == 1
    assert not any(c.step == 7 for c in console['corrections'])


def test_a_repeat_closes_the_open_step_and_a_task_run_again_asks_again(console):
    intent = RobotIntent(task_id=TASK, attempt=RUN, step=9,
                         action='(move robot kitchen study)')
    _announce(console, 9, intent.action)
    console['intents'].publish(RobotIntent(task_id=TASK, attempt=RUN, step=9,
                                           action=intent.action, repeated=True))
    assert _wait_output(console, 'step 9 went unanswered: its correction window closed'), \
        _output(console)
    before = len(_output(console))
    _type(console, '')
    assert _wait_output(console, 'nothing to answer: no intent is open', since=before), \
        _output(console)
    assert not any(c.step == 9 for c in console['corrections'])
    # An interrupted task runs again from its start (a new attempt): the same step is a
    # new question, and its answer names the new run.
    before = len(_output(console))
    intent.attempt = RUN + 1
    console['intents'].publish(intent)
    assert _wait_output(console, f'[{TASK} step 9] the robot intends {intent.action}',
                        since=before), _output(console)
    assert _output(console).count(f'[{TASK} step 9] the robot intends') == 2
    _type(console, '')
    answer = _answer_for(console, 9)
    assert (answer.attempt, answer.corrected_action) == (RUN + 1, intent.action)


def test_a_partner_plan_with_an_unknown_action_is_ignored(console):
    plans = console['client'].node.create_publisher(JointPlan, 'human/joint_plan',
                                                    QOS_LATCHED)
    try:
        plans.publish(JointPlan(task_id=TASK, steps=[JointStep(
            robot_action='(fly robot plate kitchen)', human_action='noop')]))
        assert _wait_output(console, "ignoring the partner's plan: JointPlan of task "
                                     f"{TASK!r} step 0 robot_action"), _output(console)
        assert "unknown action 'fly'" in _output(console)
    finally:
        console['client'].node.destroy_publisher(plans)
    assert console['process'].poll() is None


def test_an_intent_of_an_earlier_run_of_the_requested_task_is_not_asked(console):
    """A robot stopped in mid-task may go on for a moment with the run before the one
    requested: its steps are not this run's questions."""
    task = 'console-rerun'
    requests = console['client'].node.create_publisher(TaskRequest, 'task/request',
                                                       QOS_LATCHED)
    try:
        start = make_task(task, ['(item-at plate study)'])
        requests.publish(TaskRequest(task_id=task, attempt=RUN + 1,
                                     initial_propositions=sorted(start.initial),
                                     goal_propositions=sorted(start.goal)))
        assert _wait_output(console, f'[{task}] task requested (run {RUN + 1})'), \
            _output(console)
        console['intents'].publish(RobotIntent(task_id=task, attempt=RUN, step=3,
                                               action='(move robot kitchen study)'))
        console['intents'].publish(RobotIntent(task_id=task, attempt=RUN + 1, step=0,
                                               action='noop'))
        assert _wait_output(console, f'[{task} step 0] the robot intends noop'), \
            _output(console)
        assert f'[{task} step 3]' not in _output(console)
        _type(console, '')
        corrections = console['corrections']
        assert console['client'].wait_for(
            lambda: any(c.task_id == task for c in corrections), 15.0), _output(console)
        answers = [(c.attempt, c.step) for c in corrections if c.task_id == task]
        assert answers == [(RUN + 1, 0)], answers
    finally:
        console['client'].node.destroy_publisher(requests)


def test_an_intent_or_request_the_partner_would_refuse_is_not_asked(console):
    """A forged intent (an unknown action, a step no task has) or a malformed task request
    is warned about and asks the person nothing (issue 49)."""
    requests = console['client'].node.create_publisher(TaskRequest, 'task/request',
                                                       QOS_LATCHED)
    try:
        requests.publish(TaskRequest(task_id='console-bad', attempt=RUN,
                                     goal_propositions=['(clean plate)']))
        assert _wait_output(console, "ignoring task request: TaskRequest 'console-bad': "
                                     'task console-bad: robot must be in exactly one room'), \
            _output(console)
    finally:
        console['client'].node.destroy_publisher(requests)
    for step, action, reason in [
            (77, '(fly robot plate kitchen)', "action '(fly robot plate kitchen)': unknown "
                                              "action 'fly'"),
            (99_999, 'noop', 'step 99999 is beyond the last a task can have (10000)')]:
        before = len(_output(console))
        console['intents'].publish(RobotIntent(task_id=TASK, attempt=RUN, step=step,
                                               action=action))
        assert _wait_output(console, reason, since=before), _output(console)
        assert f'[{TASK} step {step}] the robot intends' not in _output(console)[before:]
    assert '[console-bad] task requested' not in _output(console)
    assert console['process'].poll() is None


def test_an_unreadable_household_file_stops_the_console_with_the_reason(console):
    executables, _ = installed_or_skip('correction_console')
    done = subprocess.run([str(executables / 'correction_console'), '--ros-args', '-p',
                           'tidyup.household:=/no/such/household.yaml'],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot start node: parameter 'tidyup.household' = '/no/such/household.yaml': " \
        'cannot read household file /no/such/household.yaml' in done.stdout + done.stderr


def test_quit_ends_the_console_cleanly(console):
    _type(console, 'q')
    assert console['process'].wait(20) == 0, _output(console)
