"""What the web panel knows of the session: the task, the open correction window, its
countdown and who answered, derived from the messages the graph publishes.

A browser cannot work this out from the relayed topics alone (two topics are not
ordered, a repeat intent closes a window, an earlier run's intent is no question, which
robot actions apply needs the domain), so the panel does, and publishes the result as
``/web_panel/session``. It lives here, without rclpy, message modules or sockets, so
that the rules can be tested by feeding messages to :meth:`SessionState.observe` and
reading :meth:`SessionState.to_json`, and so that the node stays a translation.
Messages are read by their fields only; a team state becomes a domain state through
``state_of``, which the node gives (the graph's own conversion). What the graph's nodes
refuse, the panel refuses too, with their checks, which the node also gives: the team
states are kept by the executor's rules (``team_states``), the other relayed messages
pass ``checks``; a message that does not fit is neither shown nor relayed
(:meth:`SessionState.admit` says why).

In play mode (``play``) a person plays the partner: the session also says which of the
partner's own actions apply at the world's current step (each on a key), whether the
person chose one, and what happened at each step, the partner's self-loops included
(a team state says what the partner tried, not whether it took: the domain's
transitions tell, :func:`explain_step`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, ActionOutcome, Domain
from cecm_ros.core.errors import CecmError

# Play mode's keys for the partner's actions, in order: 1-9, then letters but A and W
# (the robot's Agree and Wait); 0 is the partner's own "wait".
PLAY_KEYS = '123456789bcdefghijklmnopqrstuvxyz'
WAIT_KEY = '0'
WAIT_WORDS = ('', NOOP, 'wait')      # what a choice may say for "I wait this step"
CHOICES_KEPT = 200                   # the person's choices remembered, by run and step


class ChoiceRefusedError(ValueError):
    """A partner choice that is not taken; the text says why (sent back to the client)."""


class RefusedMessageError(ValueError):
    """A relayed message that does not fit (the text says why, as the graph's nodes say
    it): the panel ignores it."""


def action_schema(action: str) -> str:
    """``move`` of ``(move human kitchen study)``: what a domain's fixed keys are named by."""
    parts = action.strip().strip('()').split()
    return parts[0] if parts else ''


def play_keys(actions: Sequence[str], key_order: Sequence[str] = ()) -> list[dict]:
    """Each action with its key: ``noop`` on 0; an action whose schema is in
    ``key_order`` (a domain's fixed keys, e.g. Overcooked's macro actions) on the key of
    that place, so a player learns them; the others on the free keys in order. Past the
    last key an action has none (the page still offers it)."""
    fixed: dict[str, str] = {}
    for action in actions:
        if action == NOOP:
            fixed[action] = WAIT_KEY
        elif action_schema(action) in key_order:
            place = list(key_order).index(action_schema(action))
            if place < len(PLAY_KEYS):
                fixed[action] = PLAY_KEYS[place]
    free = iter(k for k in PLAY_KEYS if k not in fixed.values())
    return [{'action': action, 'key': fixed.get(action) or next(free, None)}
            for action in actions]


def explain_step(model: Domain, before: Hashable, human: str, robot: str, after: Hashable
                 ) -> tuple[ActionOutcome, ActionOutcome] | None:
    """(the partner's outcome, the robot's) of a joint step the world applied (the partner
    first, then the robot), as ``before`` and ``after`` show it; None when neither reading
    explains ``after``.

    The panel does not know the partner's capabilities: the partner's action took
    effect when a capable partner's action, then the robot's, lead to ``after``; it was
    a self-loop when the robot's action alone does, and a partner without any capability
    says why."""
    capable = model.catalog.all_capable()
    middle, partner = model.transition(before, HUMAN, human or NOOP, capable)
    if partner.changed:
        end, robot_did = model.transition(middle, ROBOT, robot or NOOP, capable)
        if end == after:
            return partner, robot_did
        _, lacking = model.transition(before, HUMAN, human, np.zeros(len(model.catalog),
                                                                     dtype=bool))
        partner = ActionOutcome(HUMAN, partner.action, False, lacking.reason or
                                'the world did not take it (a capability it needs is '
                                'missing)')
    end, robot_did = model.transition(before, ROBOT, robot or NOOP, capable)
    return (partner, robot_did) if end == after else None


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
    # The team states by task and step, by the rules the executor keeps them by (the
    # node's conversions.TeamStates: add, steps, latest, restart, current).
    team_states: Any
    # Per relayed topic (the node's key), the check a message must pass (raises a
    # ValueError saying why): the graph's own conversions.
    checks: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    window_s: float | None = None
    task: Any = None                     # the latest TaskRequest
    open: OpenStep | None = None
    closed: set = field(default_factory=set)
    plan_offsets: dict[str, int] = field(default_factory=dict)
    partner_plans: dict[str, Any] = field(default_factory=dict)       # JointPlans
    # The latest intent of each run not (yet) requested, with the time it arrived: the
    # executor may announce a new run's first step before its TaskRequest reaches us.
    held: dict[tuple[str, int], tuple[Any, float]] = field(default_factory=dict)
    # An intent of the requested run for a step beyond the world's next (its state not
    # here yet), with the time it arrived.
    ahead: tuple[Any, float] | None = None
    _choices: dict = field(default_factory=dict)
    # Play mode: a person plays the partner (the page offers the partner's own actions).
    play: bool = False
    task_of: Callable[[Any], Any] | None = None   # a TaskRequest -> the domain's task
    key_order: Sequence[str] = ()                  # schemas on fixed keys (the view's)
    # (task id, attempt, step) -> {'action', 'sender'}: the first choice of each step.
    partner_choices: OrderedDict = field(default_factory=OrderedDict)
    _play_open: dict = field(default_factory=dict)
    _explained: dict = field(default_factory=dict)
    _tasks: dict = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return self.task.task_id if self.task is not None else ''

    def states_of(self, task_id: str) -> dict[int, Any]:
        """The team states held of a task, by step."""
        return self.team_states.steps(task_id)

    def observe(self, key: str, msg: Any) -> bool:
        """Update from one message of the relayed topic ``key`` (the node's parameter
        prefix: ``task``, ``intent``, ...); whether the derived session changed.
        RefusedMessageError for a message that does not fit (:meth:`admit`)."""
        return self.admit(key, msg) and self.update(key, msg)

    def admit(self, key: str, msg: Any) -> bool:
        """Check a relayed message as the graph's nodes do: False for a team state held
        already (nothing new), RefusedMessageError saying why for one that does not
        fit; a team state taken is recorded. (An intent ahead of the team states heard
        is no mistake: their topic may be slower; :meth:`update` keeps it until they
        come.)"""
        try:
            if key == 'team_state':
                return bool(self.team_states.add(msg))
            check = self.checks.get(key)
            if check is not None:
                check(msg)
        except ValueError as error:   # the conversions' MessageError
            raise RefusedMessageError(str(error)) from None
        return True

    def update(self, key: str, msg: Any) -> bool:
        """Update from a message :meth:`admit` took; whether the derived session
        changed."""
        if key == 'task':
            # A task run again (after an interruption) comes with a new attempt: its
            # steps are new questions.
            run = (msg.task_id, msg.attempt)
            changed = self.task is None or run != (self.task.task_id, self.task.attempt)
            again = changed and self.task is not None and msg.task_id == self.task.task_id
            if again:
                # Run again from its start: its later steps come anew.
                self.team_states.restart(msg.task_id)
                self._explained = {k: v for k, v in self._explained.items()
                                   if k[0] != msg.task_id}
            self.task = msg
            self.team_states.current = msg.task_id
            if changed:
                # What was heard of this very run before its request (the first task's
                # intent, which nothing held back, may beat the request) stays.
                self.closed = {k for k in self.closed if k[0] == msg.task_id and not again}
                if self.open is None or (self.open.task_id, self.open.attempt) != run:
                    self.open = None
                if self.ahead is None or \
                        (self.ahead[0].task_id, self.ahead[0].attempt) != run:
                    self.ahead = None
                # Other runs of this task are over; its own early intent is its question.
                early = self.held.pop((msg.task_id, msg.attempt), None)
                self.held = {run: value for run, value in self.held.items()
                             if run[0] != msg.task_id}
                if early is not None:
                    self._observe_intent(*early)
            return True
        if key == 'team_state':
            if msg.step == 0:
                # A task begun: its steps are explained anew (and forgotten tasks go).
                self._explained = {k: v for k, v in self._explained.items()
                                   if k[0] != msg.task_id and k[0] in self.team_states.tasks}
            ahead = self.ahead
            if ahead is not None and ahead[0].task_id == msg.task_id and \
                    ahead[0].step <= msg.step + 1:
                self.ahead = None
                self._observe_intent(*ahead)
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
            latest = self.team_states.latest(msg.task_id) or 0
            self.plan_offsets[msg.task_id] = max([latest, *(s + 1 for s in done)])
            return True
        if key == 'partner_plan':
            self.partner_plans[msg.task_id] = msg
            while len(self.partner_plans) > 3:
                self.partner_plans.pop(next(iter(self.partner_plans)))
            return True
        if key == 'choice':
            return self._record_choice(msg.task_id, msg.attempt, msg.step, msg.action,
                                       msg.sender)
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
        latest = self.team_states.latest(msg.task_id)
        if msg.step > (-1 if latest is None else latest) + 1:
            # The executor announces step t+1 once it has the world's state t; that
            # state (and the task's start), on another topic, may still be on its way
            # here. Asked once it comes; an intent that the next one opened overtakes
            # was no question.
            self.ahead = (msg, received)
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
        self.ahead = None
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
        states = self.states_of(current.task_id)
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
        return {'task_id': self.task_id, 'step': self.team_states.latest(self.task_id),
                'open': open_step, 'plan_offset': self.plan_offsets.get(self.task_id, 0),
                'correction_window_s': window, 'sender': self.sender,
                'play': self.play_json() if self.play else None}

    # ------------------------------------------------------------------- play mode
    def play_step(self) -> tuple[int | None, list[dict], str]:
        """(the step the partner acts at now, its actions with their keys, why there is
        none): the world's latest step of the requested task, until its goal holds."""
        task = self.task
        if task is None:
            return None, [], 'no task yet'
        states = self.states_of(task.task_id)
        if not states:
            return None, [], 'no team_state of this task yet'
        latest = max(states)
        key = (task.task_id, task.attempt, latest)
        if key not in self._play_open:
            self._play_open = {key: self._actions_at(task, states[latest])}
        step, actions, problem = self._play_open[key]
        return step, actions, problem

    def _actions_at(self, task: Any, team_state: Any) -> tuple[int | None, list[dict], str]:
        try:
            here = self.state_of(team_state)
            if self._goal_reached(task, here):
                return None, [], "the task's goal is reached"
            actions = [NOOP, *self.model.applicable_actions(here, HUMAN)]
        except CecmError as error:
            return team_state.step, play_keys([NOOP]), f'team_state step {team_state.step}: {error}'
        return team_state.step, play_keys(actions, self.key_order), ''

    def _goal_reached(self, request: Any, state: Hashable) -> bool:
        if self.task_of is None:
            return False
        key = (request.task_id, request.attempt)
        if key not in self._tasks:
            self._tasks = {key: self.task_of(request)}
        return bool(self.model.goal_reached(self._tasks[key], state))

    def play_json(self) -> dict:
        """Play mode's part of ``/web_panel/session`` (docs/nodes.md lists the fields)."""
        task = self.task
        step, actions, problem = self.play_step()
        chosen = None
        if task is not None and step is not None:
            chosen = self.partner_choices.get((task.task_id, task.attempt, step))
        return {'task_id': self.task_id, 'attempt': task.attempt if task is not None else 0,
                'step': step, 'actions': actions, 'problem': problem, 'chosen': chosen,
                'history': self.history(self.task_id)}

    def history(self, task_id: str) -> list[dict]:
        """What happened at each step of the task so far, both actions and their
        outcomes (``done``, ``waited``, ``failed`` with the reason, or ``unknown``)."""
        states = self.states_of(task_id)
        rows = []
        for step in sorted(states):
            after = states.get(step + 1)
            if after is None:
                continue
            key = (task_id, step)
            if key not in self._explained:
                self._explained[key] = self._what_happened(states[step], after)
            rows.append(self._explained[key])
        return rows

    def _what_happened(self, before: Any, after: Any) -> dict:
        human, robot = after.human_action or NOOP, after.robot_action or NOOP
        row = {'step': before.step, 'human_action': human, 'robot_action': robot,
               'human': 'unknown', 'human_reason': '', 'robot': 'unknown',
               'robot_reason': ''}
        try:
            explained = explain_step(self.model, self.state_of(before), human, robot,
                                     self.state_of(after))
        except CecmError as error:
            row['human_reason'] = row['robot_reason'] = str(error)
            return row
        if explained is None:
            row['human_reason'] = row['robot_reason'] = \
                'neither action explains the state after this step'
            return row
        for agent, outcome in zip(('human', 'robot'), explained, strict=True):
            row[agent] = 'waited' if outcome.action == NOOP else \
                'done' if outcome.changed else 'failed'
            row[f'{agent}_reason'] = outcome.reason if row[agent] == 'failed' else ''
        return row

    def take_choice(self, task_id: str, attempt: int, step: int, action: str,
                    sender: str) -> tuple[str, int]:
        """A person's choice of the partner's action, checked against the open step:
        (its canonical action, its run), recorded; ChoiceRefusedError says why not."""
        if not self.play:
            raise ChoiceRefusedError('play mode is off (web_panel parameter play)')
        task = self.task
        if task is None:
            raise ChoiceRefusedError('no task is running')
        if task_id != task.task_id:
            raise ChoiceRefusedError(f'the choice is for task {task_id!r}, but the task is '
                                f'{task.task_id!r}')
        run = attempt or task.attempt
        if run != task.attempt:
            raise ChoiceRefusedError(f'the choice is for run {run} of task {task_id}, but run '
                                f'{task.attempt} is open')
        open_step, actions, problem = self.play_step()
        if open_step is None:
            raise ChoiceRefusedError(f'no step is open for your action: {problem}')
        if step != open_step:
            raise ChoiceRefusedError(f'step {step} is not open: the world is at step {open_step}'
                                f' of task {task_id}')
        earlier = self.partner_choices.get((task_id, run, step))
        if earlier is not None:
            raise ChoiceRefusedError(f'step {step} has a choice already: {earlier["action"]} '
                                f'(from {earlier["sender"] or "someone"})')
        canonical = self._canonical(action)
        offered = [entry['action'] for entry in actions]
        if canonical not in offered:
            raise ChoiceRefusedError(f'{canonical} does not apply at step {step}; the partner\'s '
                                f'actions now: {", ".join(offered)}')
        self._record_choice(task_id, run, step, canonical, sender)
        return canonical, run

    def _canonical(self, action: str) -> str:
        if action.strip() in WAIT_WORDS:
            return NOOP
        try:
            canonical = self.model.canonical_action(action)
            owner = self.model.action_agent(canonical)
        except CecmError as error:
            raise ChoiceRefusedError(f'unknown action {action!r}: {error}') from None
        if owner != HUMAN:
            raise ChoiceRefusedError(f'{canonical} is an action of the {owner}, not the partner\'s')
        return canonical

    def _record_choice(self, task_id: str, attempt: int, step: int, action: str,
                       sender: str) -> bool:
        """The first choice of a step stands (the partner node takes only that one)."""
        if self.task is not None and task_id == self.task.task_id and not attempt:
            attempt = self.task.attempt
        key = (task_id, attempt, step)
        if key in self.partner_choices:
            return False
        try:
            action = self._canonical(action)
        except ChoiceRefusedError:
            pass   # another sender's text, shown as it came (the partner node refuses it)
        self.partner_choices[key] = {'action': action, 'sender': sender}
        while len(self.partner_choices) > CHOICES_KEPT:
            self.partner_choices.popitem(last=False)
        return self.play
