"""The executor's perception as events, on real messages without a graph: what a report
must carry to be taken, and which change of a step is the robot's.

A report with no stamp, or one stamped ahead of the node's clock, would make every later
report of its run look late; it is refused with the reason and changes nothing. The robot's
action labels the change it explains, not merely the first one seen.
"""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import pytest

pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from builtin_interfaces.msg import Time  # noqa: E402

from cecm_ros.msg import ObservedState  # noqa: E402
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.event_perception import EventPerception  # noqa: E402

NOW_S = 1_000


class FakeExecutor:
    """What EventPerception asks of the executor node: its model, lock, clock, log."""

    def __init__(self, model):
        self.model = model
        self.logger = logging.getLogger('fake_executor')

    @contextlib.contextmanager
    def locked(self):
        yield

    def stamp(self):
        return Time(sec=NOW_S)

    def get_logger(self):
        return self.logger

    def wait_until(self, done, timeout_s):
        return done()

    def _cancel_requested(self):
        return False


class Published(list):
    def publish(self, msg):
        self.append(msg)


@pytest.fixture
def perception(model):
    return EventPerception(FakeExecutor(model), Published(), 0.0, confirm=False)


def report(model, task, state, sec: int, nanosec: int = 0) -> ObservedState:
    msg = ObservedState(domain=model.name, task_id=task.task_id,
                        true_propositions=model.state_facts(state),
                        state_features=model.state_features(state))
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    return msg


def after(model, state, agent, action):
    return model.transition(state, agent, action, np.ones(len(model.catalog), bool))[0]


def test_a_report_without_a_stamp_or_from_the_future_is_refused_and_changes_nothing(
        model, perception):
    task = model.task_generator(2).tasks(3)[2]
    start = model.initial_state(task)
    perception.start(task)
    moved = after(model, start, 'human', '(pick human plate bathroom)')
    with pytest.raises(conv.MessageError, match='stamp is not set'):
        perception.on_observed(report(model, task, moved, 0))
    with pytest.raises(conv.MessageError, match='ahead of this node'):
        perception.on_observed(report(model, task, moved, NOW_S + 60))
    assert perception.after_step(0, 'noop', False) == []
    # A stamp a moment ahead (clocks a little apart) is fine.
    perception.on_observed(report(model, task, moved, NOW_S + 1))
    assert [seen.state for seen in perception.after_step(0, 'noop', False)] == [moved]


def test_the_robots_action_labels_the_change_it_explains(model, perception):
    task = model.task_generator(2).tasks(3)[2]
    start = model.initial_state(task)
    first = perception.start(task)
    assert first.state == start
    robot_move = model.applicable_actions(start, 'robot')[0]
    by_partner = after(model, start, 'human', '(pick human plate bathroom)')
    then_robot = after(model, by_partner, 'robot', robot_move)
    # Seen after the run began: the partner's change first, the robot's at the end of
    # its skill; the reports arrive the other way round.
    perception.on_observed(report(model, task, then_robot, NOW_S, 600_000_000))
    perception.on_observed(report(model, task, by_partner, NOW_S, 300_000_000))
    steps = perception.after_step(0, robot_move, True)
    assert [seen.state for seen in steps] == [by_partner, then_robot]
    assert [seen.record.robot_action for seen in steps] == ['', robot_move]
    assert [seen.record.step for seen in steps] == [1, 2]
