"""A person's answers to the robot's intents, whatever they answer with: the terminal
(correction_console) or a gamepad (joy_corrections). One set of rules, so that every
device refuses the same things:

* a task request, an intent of an unknown action or of a step no task has is refused
  with the conversions' checks (the caller warns and asks nothing);
* an intent of another run of the requested task asks nothing;
* an intent announced again (its window closed, the world waits) asks nothing, and
  closes the step if it is the one open;
* an answer needs an open intent, must name a robot action (conversions.answer_action)
  and is sent only while its step is still open.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from cecm_ros.core.domain import NOOP, Domain
from cecm_ros.msg import Correction, RobotIntent, StepResult, TaskRequest
from cecm_ros.nodes import conversions as conv

# Settled intents remembered, so that their repeats print nothing.
SETTLED_KEPT = 32


class NotAnsweredError(Exception):
    """An answer that was not sent: no intent is open, or its step is over (the text
    says which)."""


@dataclass(frozen=True)
class IntentNews:
    """What an intent changed. ``kind``: ``opened`` (a new question), ``closed`` (a
    repeat: its window closed), ``other_run`` (of another run of the requested task:
    ``run`` is the requested one), ``nothing`` (a duplicate, or a repeat shown before)."""

    kind: str
    unanswered: RobotIntent | None = None   # the open intent this one ended, unanswered
    shown_before: bool = False              # (closed) it was the open one, shown then
    run: tuple[str, int] | None = None


def intent_key(intent: RobotIntent) -> tuple:
    return intent.task_id, intent.attempt, intent.step, intent.action


class IntentAnswers:
    """The open intent, the settled ones and the requested run; answers as Corrections
    from ``sender``. Thread-safe: topic callbacks and the device's thread both call it."""

    def __init__(self, model: Domain, sender: str):
        self.model = model
        self.sender = sender
        self._lock = threading.Lock()
        self.open_intent: RobotIntent | None = None
        # Intents answered, or closed by a repeat (the latest few): the executor
        # announces an intent again while the world waits for the partner, after its
        # window closed; such a repeat is shown once and asks nothing.
        self.settled: OrderedDict[tuple, None] = OrderedDict()
        self.run: tuple[str, int] | None = None   # (task_id, attempt) last requested

    def task(self, msg: TaskRequest) -> bool:
        """Take a task request: whether it asks for a new run (False: the latched request
        again). MessageError for one that does not fit the domain."""
        conv.task_from_msg(self.model, msg)
        with self._lock:
            if self.run == (msg.task_id, msg.attempt):
                return False
            self.run = (msg.task_id, msg.attempt)
        return True

    def intent(self, msg: RobotIntent) -> IntentNews:
        """Take an intent: a fresh announcement opens its step (again after an
        interrupted task runs again), a repeat closes it. MessageError for one the
        partner refuses (an unknown action, a step no task has)."""
        conv.intent_from_msg(self.model, msg)
        with self._lock:
            run = self.run
            if run is not None and run[0] == msg.task_id and run[1] != msg.attempt:
                return IntentNews('other_run', run=run)
            unanswered = self.open_intent
            same = unanswered is not None and intent_key(unanswered) == intent_key(msg)
            if msg.repeated:
                if intent_key(msg) in self.settled:
                    return IntentNews('nothing')   # answered, or its first repeat was shown
                self._settle(msg)
                self.open_intent = None   # whatever was open is over
                return IntentNews('closed', unanswered, same)
            if same:
                return IntentNews('nothing')   # the open intent again: it is shown already
            self.settled.pop(intent_key(msg), None)
            self.open_intent = msg
            return IntentNews('opened', unanswered)

    def step_done(self, msg: StepResult) -> None:
        """The robot acted at a step: its intent, if open, is no longer."""
        with self._lock:
            current = self.open_intent
            if current is not None and (current.task_id, current.step) == \
                    (msg.task_id, msg.step):
                self.open_intent = None

    def current(self) -> RobotIntent | None:
        with self._lock:
            return self.open_intent

    def answer(self, corrected_of: Callable[[RobotIntent], str]) -> tuple[Correction, str]:
        """Answer the open intent with ``corrected_of(intent)`` (a robot action, checked
        with conversions.answer_action): the Correction to publish and what happened, in
        words. MessageError for an answer that is no robot action; NotAnsweredError when
        no intent is open or its step ended meanwhile."""
        intent = self.current()
        if intent is None:
            raise NotAnsweredError('nothing to answer: no intent is open')
        corrected = corrected_of(intent)
        if corrected not in (NOOP, intent.action):   # (the intent's action was checked)
            corrected = conv.answer_action(self.model, corrected, 'the answer')
        with self._lock:
            if self.open_intent is not intent:
                raise NotAnsweredError(f'not sent: step {intent.step} is over already')
            self.open_intent = None
            self._settle(intent)
        verdict = 'agreed' if corrected == intent.action else f'corrected to {corrected}'
        return Correction(
            header=intent.header, task_id=intent.task_id, attempt=intent.attempt,
            step=intent.step, intended_action=intent.action, corrected_action=corrected,
            sender=self.sender), f'step {intent.step}: {verdict}'

    def _settle(self, intent: RobotIntent) -> None:
        self.settled[intent_key(intent)] = None
        while len(self.settled) > SETTLED_KEPT:
            self.settled.popitem(last=False)
