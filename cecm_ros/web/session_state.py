"""What the web panel knows of the session: the task, the open correction window, its
countdown and who answered, derived from the messages the graph publishes.

A browser cannot work this out from the relayed topics alone (two topics are not
ordered, a repeat intent closes a window, an earlier run's intent is no question, which
robot actions apply needs the domain), so the panel does, and publishes the result as
``/web_panel/session``. It lives here, without rclpy, message modules or sockets, so
that the rules can be tested by feeding messages to :meth:`SessionState.observe` and
reading :meth:`SessionState.to_json`, and so that the node stays a translation.
Messages are read by their fields only; a team state becomes a domain state through
``state_of``, which the node gives (the graph's own conversion).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from cecm_ros.core.domain import NOOP, ROBOT
from cecm_ros.core.errors import CecmError


@dataclass
class OpenStep:
    """The step whose correction window is open (the latest intent without a result)."""

    task_id: str
    attempt: int                         # the run of the task (RobotIntent.attempt)
    step: int
    intended: str
    received: float                      # time.monotonic() when the intent arrived
    answer: dict | None = None           # the executor's accepted answer, once there
    window_closed: bool = False          # a repeat of its intent was heard


@dataclass
class SessionState:
    """What the panel derives from the graph's messages for ``/web_panel/session``."""

    model: Any                           # the domain (its applicable_actions)
    sender: str                          # the panel's own corrections are this sender's
    state_of: Callable[[Any], Hashable]  # a TeamState -> the domain's state (or CecmError)
    window_s: float | None = None
    task: Any = None                     # the latest TaskRequest
    states: dict[str, dict[int, Any]] = field(default_factory=dict)   # TeamStates
    open: OpenStep | None = None
    closed: set = field(default_factory=set)
    plan_offsets: dict[str, int] = field(default_factory=dict)
    partner_plans: dict[str, Any] = field(default_factory=dict)       # JointPlans
    # The latest intent of each run not (yet) requested, with the time it arrived: the
    # executor may announce a new run's first step before its TaskRequest reaches us.
    held: dict[tuple[str, int], tuple[Any, float]] = field(default_factory=dict)
    _choices: dict = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return self.task.task_id if self.task is not None else ''

    def observe(self, key: str, msg: Any) -> bool:
        """Update from one message of the relayed topic ``key`` (the node's parameter
        prefix: ``task``, ``intent``, ...); whether the derived session changed."""
        if key == 'task':
            # A task run again (after an interruption) comes with a new attempt: its
            # steps are new questions.
            changed = self.task is None or (msg.task_id, msg.attempt) != \
                (self.task.task_id, self.task.attempt)
            self.task = msg
            if changed:
                self.closed.clear()
                self.open = None
                # Other runs of this task are over; its own early intent is its question.
                early = self.held.pop((msg.task_id, msg.attempt), None)
                self.held = {run: value for run, value in self.held.items()
                             if run[0] != msg.task_id}
                if early is not None:
                    self._observe_intent(*early)
            return True
        if key == 'team_state':
            if msg.step == 0:
                self.states.pop(msg.task_id, None)
            self.states.setdefault(msg.task_id, {})[msg.step] = msg
            while len(self.states) > 3:
                self.states.pop(next(iter(self.states)))
            return True
        if key == 'intent':
            return self._observe_intent(msg, time.monotonic())
        if key == 'step_result':
            self.closed.add((msg.task_id, msg.step))
            while len(self.closed) > 500:
                self.closed.pop()
            return True
        if key == 'robot_plan':
            done = [s for (t, s) in self.closed if t == msg.task_id]
            latest = max(self.states.get(msg.task_id, {0: None}))
            self.plan_offsets[msg.task_id] = max([latest, *(s + 1 for s in done)])
            return True
        if key == 'partner_plan':
            self.partner_plans[msg.task_id] = msg
            while len(self.partner_plans) > 3:
                self.partner_plans.pop(next(iter(self.partner_plans)))
            return True
        if key == 'correction_status':
            current = self.open
            if msg.accepted and current is not None and \
                    (msg.task_id, msg.attempt, msg.step) == \
                    (current.task_id, current.attempt, current.step):
                current.answer = {'sender': msg.sender,
                                  'corrected_action': msg.corrected_action,
                                  'agreed': msg.corrected_action == current.intended}
                return True
        return False

    def _observe_intent(self, msg: Any, received: float) -> bool:
        # The executor announces an intent again while the world waits for the
        # partner, after the step's window closed: a repeat closes the step's window
        # here too (any answer stands), and a step that is over stays over. A panel
        # that hears only the repeat (it started late) shows the step closed.
        if self.task is not None and \
                (msg.task_id, msg.attempt) != (self.task.task_id, self.task.attempt):
            # Of another run. An earlier run of this task is a robot that went on for a
            # moment with a run it was stopped in: not a question any more. Any other
            # may be a run whose request is still on its way: kept for that request.
            if msg.task_id != self.task.task_id or msg.attempt > self.task.attempt:
                self.held.pop((msg.task_id, msg.attempt), None)
                self.held[(msg.task_id, msg.attempt)] = (msg, received)
                while len(self.held) > 8:
                    self.held.pop(next(iter(self.held)))
            return False
        current = self.open
        known = current is not None and \
            (current.task_id, current.attempt, current.step, current.intended) == \
            (msg.task_id, msg.attempt, msg.step, msg.action)
        if (msg.task_id, msg.step) in self.closed:
            return False
        if known and current is not None:
            if not msg.repeated or current.window_closed:
                return False
            current.window_closed = True
            return True
        self.open = OpenStep(msg.task_id, msg.attempt, msg.step, msg.action, received,
                             window_closed=msg.repeated)
        return True

    def current_open(self) -> OpenStep | None:
        current = self.open
        if current is None or (current.task_id, current.step) in self.closed:
            return None
        if self.task is not None and current.task_id != self.task.task_id:
            return None
        return current

    def choices(self, current: OpenStep) -> tuple[list[str], str]:
        """``noop`` and the robot's actions that apply in the open step's state."""
        states = self.states.get(current.task_id, {})
        state = states.get(current.step) or (states[max(states)] if states else None)
        if state is None:
            return [NOOP], 'no team_state of this task yet'
        cache_key = (current.task_id, state.step)
        if cache_key not in self._choices:
            try:
                here = self.state_of(state)
                self._choices = {cache_key: ([NOOP, *self.model.applicable_actions(here, ROBOT)],
                                             '')}
            except CecmError as error:
                return [NOOP], f'team_state step {state.step}: {error}'
        return self._choices[cache_key]

    def to_json(self) -> dict:
        """The session as ``/web_panel/session`` carries it (docs/nodes.md lists the
        fields)."""
        current = self.current_open()
        window = self.window_s
        open_step = None
        if current is not None:
            actions, problem = self.choices(current)
            remaining = 0.0 if current.window_closed else None if window is None else \
                max(0.0, window - (time.monotonic() - current.received))
            plan = self.partner_plans.get(current.task_id)
            # What the (simulated) partner's own plan has the robot do here; None past
            # its end. A partner that re-plans publishes the whole task's plan again
            # (the steps taken in front), so the task's step indexes it.
            expects = None
            if plan is not None and current.step < len(plan.steps):
                expects = plan.steps[current.step].robot_action
            open_step = {'task_id': current.task_id, 'attempt': current.attempt,
                         'step': current.step,
                         'intended_action': current.intended, 'actions': actions,
                         'actions_problem': problem, 'remaining_s': remaining,
                         'answer': current.answer, 'partner_plan_expects': expects,
                         'window_closed': current.window_closed}
        states = self.states.get(self.task_id, {})
        return {'task_id': self.task_id, 'step': max(states) if states else None,
                'open': open_step, 'plan_offset': self.plan_offsets.get(self.task_id, 0),
                'correction_window_s': window, 'sender': self.sender}
