"""The checks every node and the web panel make of what arrives (issue 49), on the
conversions and the log without a graph: an answer that says nothing, a team state with
an action no domain has or of a step no task has, the rules by which team states are
kept, log lines of a bounded size."""

from __future__ import annotations

import re

import pytest

pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from core_fixtures import make_task  # noqa: E402

from cecm_ros.domains.tidyup.model import TidyUpModel  # noqa: E402
from cecm_ros.msg import Correction, RobotIntent, TeamState  # noqa: E402
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.logs import MAX_LOG_CHARS, bounded_line  # noqa: E402

MOVE = '(move robot kitchen study)'


@pytest.fixture(scope='module')
def model():
    return TidyUpModel()


@pytest.mark.parametrize('answer, problem', [
    ('', "corrected_action '' must name an action (noop = wait)"),
    ('  ', "corrected_action '  ' must name an action (noop = wait)"),
    (MOVE + '\x00junk', 'holds a NUL character, which a ROS string cannot carry'),
    ('(fly robot plate kitchen)', "unknown action 'fly'"),
    ('(move human kitchen study)', 'is an action of the human, not of the robot'),
])
def test_an_answer_must_name_a_robot_action(model, answer, problem):
    """The executor and the panel both refuse these (conversions.correction_from_msg);
    a plan's or a team state's empty action still means a wait."""
    with pytest.raises(conv.MessageError, match=re.escape(problem)):
        conv.correction_from_msg(model, Correction(task_id='t', step=0,
                                                   corrected_action=answer))
    assert conv.canonical_action(model, '') == 'noop'
    assert conv.correction_from_msg(model, Correction(corrected_action='wait')) == ('noop', '')
    assert conv.correction_from_msg(model, Correction(corrected_action=MOVE,
                                                      intended_action='noop')) == (MOVE, 'noop')


def test_a_megabyte_is_named_not_quoted(model):
    with pytest.raises(conv.MessageError) as refused:
        conv.answer_action(model, 'x' * (1 << 20))
    assert len(str(refused.value)) < 1000 and '(1048576 characters)' in str(refused.value)


def _state(model, task_id='t', step=0, robot='', human='', start=None) -> TeamState:
    task = make_task(task_id, ['(item-at plate study)'])
    return conv.team_state_msg(model, task_id, step, start or model.initial_state(task),
                               robot_action=robot, human_action=human)


@pytest.mark.parametrize('robot, human, problem', [
    ('(fly robot)', '', "robot_action '(fly robot)': unknown action 'fly'"),
    ('', 'garbage', "human_action 'garbage': unknown action 'garbage'"),
    ('(move human kitchen study)', '', "robot_action '(move human kitchen study)' is an "
                                       'action of the human'),
    ('', MOVE, f"human_action '{MOVE}' is an action of the robot"),
])
def test_a_team_state_with_an_action_of_no_one_is_refused(model, robot, human, problem):
    msg = _state(model, robot=robot, human=human)
    with pytest.raises(conv.MessageError, match=re.escape(problem)):
        conv.state_from_team_state(model, msg)


def test_steps_beyond_any_task_are_refused(model):
    with pytest.raises(conv.MessageError, match='step 4294967295 is beyond the last a task '
                                                r'can have \(10000\)'):
        conv.state_from_team_state(model, _state(model, step=2**32 - 1))
    with pytest.raises(conv.MessageError, match='step 99999 is beyond'):
        conv.intent_from_msg(model, RobotIntent(task_id='t', step=99_999, action='noop'))
    with pytest.raises(conv.MessageError, match="unknown action 'fly'"):
        conv.intent_from_msg(model, RobotIntent(task_id='t', step=1,
                                                action='(fly robot plate kitchen)'))
    assert conv.intent_from_msg(model, RobotIntent(task_id='t', step=1, action=MOVE)) == MOVE


def test_team_states_are_kept_by_one_set_of_rules(model):
    states = conv.TeamStates(model)
    start = _state(model)
    assert states.add(start)
    again = _state(model)
    again.header.stamp.sec = 99   # the start sent again with a new stamp: nothing new
    assert not states.add(again) and states.steps('t')[0] is start
    step1 = _state(model, step=1, robot=MOVE)
    step1.true_propositions = [p.replace('(agent-at robot kitchen)', '(agent-at robot study)')
                               for p in step1.true_propositions]
    assert states.add(step1)
    for far in (64, 65):   # not after their step before
        with pytest.raises(conv.MessageError, match=f'step {far - 1} of that task was not '
                                                    'received'):
            states.add(_state(model, step=far))
    with pytest.raises(conv.MessageError, match='differs from the one received before'):
        states.add(_state(model, step=1))
    with pytest.raises(conv.MessageError, match='differs from the one received before'):
        states.add(_state(model, step=0, robot='noop', human='noop'))
    assert sorted(states.steps('t')) == [0, 1] and states.latest('t') == 1
    # A task run again keeps its start; its later steps come anew.
    states.restart('t')
    assert sorted(states.steps('t')) == [0]
    # A task's first state is its start (a forged step of a task not heard yet is none).
    with pytest.raises(conv.MessageError, match=re.escape(
            'step 7: the start of that task (step 0) was not received')):
        states.add(_state(model, 'other', step=7))
    # Other tasks' states never push out the current task's.
    states.current = 't'
    for index in range(5):
        states.add(_state(model, f'other-{index}'))
    assert 't' in states.tasks and len(states.tasks) == conv.TASKS_KEPT


def test_a_log_line_is_bounded_and_writable():
    line = bounded_line('x' * (1 << 20))
    assert len(line) < MAX_LOG_CHARS + 100 and line.endswith('characters not logged)')
    assert bounded_line('a\x00b\ud800c') == 'a\\x00b\\ud800c'
    assert bounded_line('short') == 'short'


def test_an_outcome_leaves_out_the_robots_failed_steps_and_keeps_the_start_it_was_given(model):
    """A failed robot step at which nothing seen changed is not evidence; the start the
    task was set up with stands for a state 0 that perception misread; a failed step
    beyond the trajectory is refused naming it."""
    task = make_task('t', ['(item-at plate study)'])
    start = model.initial_state(task)
    glitch = model.state_from_atoms(set(task.initial) - {'(agent-at robot kitchen)'})
    moved = model.transition(start, 'robot', MOVE, model.catalog.resolve('all'))[0]
    states = [glitch, start, moved]
    msgs = [conv.team_state_msg(model, 't', step, state) for step, state in enumerate(states)]
    outcome = conv.outcome_msg(task, 'p', msgs, 1, 0, False, model.name,
                               robot_failed_steps=[0])
    observed_task, trajectory = conv.outcome_from_msg(model, outcome)
    # State 0 is the start the task was given; step 0 failed and changed nothing then.
    assert trajectory == [start, moved]
    assert observed_task.initial == task.initial
    outcome.robot_failed_steps = [2]
    with pytest.raises(conv.MessageError, match='robot_failed_steps names step 2, but the '
                                                'trajectory has 2 steps'):
        conv.outcome_from_msg(model, outcome)
