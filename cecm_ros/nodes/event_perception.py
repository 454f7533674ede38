"""The executor's perception as events (parameter ``perception: events``).

A robot's perception publishes ``observed_state`` (ObservedState: what it saw, stamped
when it saw it) as the world changes, knowing nothing of joint steps. This helper keeps
those reports per task (:class:`~cecm_ros.session.observed_states.ObservedStates`),
and after each robot step gives the executor the changes seen since the step before,
in the order they were seen, each republished as the task's next ``team_state`` (step
k = the k-th observed change), which the task manager, the panel and the estimator
read as they do a world's. A report that comes late still lands in order; one seen
before a change already taken is left out; a step that brought no report leaves the
robot where it last saw the world. It says so in the log either way. With
``observation_confirm`` a state reported once that is not the newest is a passing frame
(a glitch, most often) and is left out (:mod:`~cecm_ros.session.observed_states`).
"""

from __future__ import annotations

import time
from collections import OrderedDict

import numpy as np

from cecm_ros.core.domain import NOOP, ROBOT
from cecm_ros.core.errors import CecmError
from cecm_ros.msg import ObservedState
from cecm_ros.nodes import conversions as conv
from cecm_ros.session.observed_states import Observation, ObservedStates
from cecm_ros.session.task_execution import Seen

TASKS_KEPT = 4   # tasks whose reports are held (the current one and those before)
PERCEPTION_MODES = ('team_state', 'events')
# A report stamped further ahead of this node's clock than this is refused: taken, it
# would make every later report of its run look late.
FUTURE_TOLERANCE_NS = 2_000_000_000
WARN_EVERY_S = 5.0   # the same kind of warning about reports, at most this often


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class EventPerception:
    """One executor's reports and what it published of them (module docstring)."""

    def __init__(self, node, publisher, settle_s: float, confirm: bool = False):
        self.node = node
        self.confirm = confirm   # a state reported once and not the newest: passing
        self.model = node.model
        self.publisher = publisher   # team_state, for every node that follows the world
        self.settle_s = settle_s
        self.streams: OrderedDict[str, ObservedStates] = OrderedDict()
        self.task_id = ''
        self.step = 0   # team_state steps published of the current run
        self._warned: dict[str, float] = {}   # kind of warning -> when last given

    def _stream(self, task_id: str) -> ObservedStates:
        stream = self.streams.get(task_id)
        if stream is None:
            stream = self.streams[task_id] = ObservedStates(confirm=self.confirm)
            while len(self.streams) > TASKS_KEPT:
                oldest = next(t for t in self.streams if t != self.task_id)
                del self.streams[oldest]
        return stream

    def on_observed(self, msg: ObservedState) -> None:
        """A report: checked, and held in its task's order (under the node's lock)."""
        what = f'ObservedState of task {conv.shown(msg.task_id)}'
        if not msg.task_id:
            raise conv.MessageError(f'{what}: task_id is empty')
        conv.check_domain(self.model, msg.domain, what)
        seen_ns = stamp_ns(msg.header.stamp)
        if seen_ns <= 0:
            raise conv.MessageError(f'{what}: header.stamp is not set (when the state was '
                                    'seen orders the reports)')
        ahead = seen_ns - stamp_ns(self.node.stamp())
        if ahead > FUTURE_TOLERANCE_NS:
            raise conv.MessageError(f'{what}: header.stamp is {ahead / 1e9:.1f} s ahead of '
                                    "this node's clock (a report from the future would make "
                                    'every later one look late; are the clocks in step?)')
        state = conv.state_from_wire(self.model, msg.true_propositions,
                                     msg.state_features, what)
        observation = Observation(seen_ns, self._key(state), state, msg)
        with self.node.locked():
            verdict = self._stream(msg.task_id).add(observation)
            running = msg.task_id == self.task_id
        if verdict == 'late':
            self._warn('late', f'{what} seen at {seen_ns / 1e9:.3f} s arrived after a '
                       'report seen later was taken: left out of the steps (late or out of '
                       'order; the count is in the run\'s summary)')
        elif not running:
            self._warn(f'task {msg.task_id}', f'{what}: no run of that task is under way '
                       f'(the robot runs {conv.shown(self.task_id) or "none"}); held in '
                       'case it starts')

    def _warn(self, kind: str, text: str) -> None:
        """A warning about reports, at most every WARN_EVERY_S per kind."""
        now = time.monotonic()
        if now - self._warned.get(kind, -WARN_EVERY_S) >= WARN_EVERY_S:
            self._warned[kind] = now
            while len(self._warned) > 64:
                del self._warned[next(iter(self._warned))]
            self.node.get_logger().warning(text)

    def start(self, task) -> Seen:
        """Step 0 of a run: the task's start as it was set up (perception's reports of
        the reset and before belong to the world before this run)."""
        start = self.model.initial_state(task)
        stamp = self.node.stamp()
        msg = conv.team_state_msg(self.model, task.task_id, 0, start, stamp=stamp)
        with self.node.locked():
            self.task_id, self.step = task.task_id, 0
            self._stream(task.task_id).begin_run(
                Observation(stamp_ns(stamp), self._key(start), start, msg))
        self.publisher.publish(msg)
        return Seen(msg, start)

    def after_step(self, step: int, action: str, changed: bool) -> list[Seen]:
        """The changes seen since the step before, each published as the next step;
        waits ``settle_s`` first for reports still on their way."""
        self.node.wait_until(lambda: self.node._cancel_requested(), self.settle_s)
        with self.node.locked():
            stream = self._stream(self.task_id)
            before = stream.last.state if stream.last is not None else None
            changes = stream.take()
        seen = []
        robots = self._robot_change(before, changes, action)
        for index, observation in enumerate(changes):
            self.step += 1
            msg = conv.team_state_msg(
                self.model, self.task_id, self.step, observation.state,
                robot_action=action if index == robots else '',
                stamp=observation.record.header.stamp)
            self.publisher.publish(msg)
            seen.append(Seen(msg, observation.state))
        log = self.node.get_logger()
        if not changes and changed:
            log.warning(f'step {step}: perception reported no change within '
                        f'{self.settle_s:g} s of {action}, which changed the world; the robot '
                        'goes on from the last state it saw (a report still on its way '
                        'is taken at the next step)')
        elif len(changes) > 1:
            log.info(f'step {step}: {len(changes)} changes seen since the step before (the '
                     'partner at its own pace); each is a step of the evidence')
        return seen

    def _robot_change(self, before, changes: list, action: str) -> int:
        """Which of a step's changes is the robot's action (for the steps' labels): the
        first that the action alone explains from the state before it, else the last
        (the robot's skill ends its step; the partner's changes came meanwhile)."""
        if not changes or action == NOOP:
            return -1
        every = np.ones(len(self.model.catalog), dtype=bool)
        for index, observation in enumerate(changes):
            try:
                after = self.model.transition(before, ROBOT, action, every)[0]
            except CecmError:
                break
            if after == observation.state:
                return index
            before = observation.state
        return len(changes) - 1

    def _key(self, state) -> tuple:
        """What tells two reports apart: the state as the domain reads it (a fact the
        domain does not know, or the order of the facts, is no change)."""
        return (self.model.state_to_text(state),)

    def summary(self, task_id: str) -> str:
        """What the run's reports came to, for the outcome's log line."""
        with self.node.locked():
            counts = self._stream(task_id).counts
        return (f'{counts.taken} changes seen, {counts.unchanged} reports of no change, '
                f'{counts.late} left out as late, {counts.passing} passing frames left out'
                + (f', {counts.repeats} sent again' if counts.repeats else '')
                + (f', {counts.overflow} let go unread (too many waiting)'
                   if counts.overflow else ''))
