"""What the simulated partner keeps of the runs of a session's tasks, without ROS.

A run is one attempt at a task, ``(task id, attempt)``; its steps are numbered from 0.
Messages may come in another order than they were sent, on other topics: the intents
that overtook their run's request are held (:class:`HeldIntents`), the world's state
at each step is kept until the step is decided (:class:`WorldSteps`), a person's choice
until its step's intent comes (:class:`PersonChoices`), and the order in which the runs
were asked for tells a wait that its run is over (:class:`RunOrder`). Each remembers a
bounded number, dropping the oldest. :class:`SentAction` is the partner's own action at
a step and whether the world took it. None is thread-safe: the node calls each from
callbacks of one serial group or under its lock.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

EARLY_INTENTS_KEPT = 20
STATES_KEPT = 200   # team states remembered, by (task id, step)
ANNOUNCED_KEPT = 16   # runs asked for, remembered in order (a wait ends at a later one)
CHOICES_KEPT = 50   # a person's choices remembered, by (task id, attempt, step)
# A goal the world has not answered this long after it was sent counts as lost.
GOAL_LOST_AFTER_S = 2.0


def _keep_newest(kept: OrderedDict, most: int) -> None:
    while len(kept) > most:
        kept.popitem(last=False)


@dataclass
class SentAction:
    """The partner's action at one step, and whether the world has taken it."""

    action: str
    state: str = 'sent'          # 'sent' (no answer yet), 'taken' or 'failed'
    sent_at: float = field(default_factory=time.monotonic)

    def lost(self) -> bool:
        return self.state == 'failed' or \
            self.state == 'sent' and time.monotonic() - self.sent_at >= GOAL_LOST_AFTER_S


class HeldIntents:
    """Intents of a run the partner is not in yet, by (task id, attempt, step): the
    intent may have overtaken its task request."""

    def __init__(self, most: int = EARLY_INTENTS_KEPT) -> None:
        self.most = most
        self._held: OrderedDict[tuple[str, int, int], Any] = OrderedDict()

    def hold(self, task_id: str, attempt: int, step: int, intent: Any) -> None:
        self._held[(task_id, attempt, step)] = intent
        _keep_newest(self._held, self.most)

    def drop_other_runs(self, task_id: str, attempt: int) -> None:
        """Those of another run of this task: stale once this run is asked for."""
        for key in [k for k in self._held if k[0] == task_id and k[1] != attempt]:
            del self._held[key]

    def take(self, task_id: str, attempt: int) -> list:
        """Those of this run, in the order they came; no longer held."""
        return [self._held.pop(key) for key in [k for k in self._held
                                                if k[:2] == (task_id, attempt)]]


class WorldSteps:
    """The world's state at each step as its team_state reported it, by (task id,
    step), with when it came and whether the robot's skill failed in the step before;
    only what came since the current run began counts."""

    def __init__(self, most: int = STATES_KEPT) -> None:
        self.most = most
        self._seen: OrderedDict[tuple[str, int], tuple[Any, float, bool]] = OrderedDict()
        self.run_began = 0.0

    def begin_run(self) -> None:
        self.run_began = time.monotonic()

    def heard(self, task_id: str, step: int, state: Any, robot_failed: bool) -> None:
        self._seen[(task_id, step)] = (state, time.monotonic(), robot_failed)
        self._seen.move_to_end((task_id, step))
        _keep_newest(self._seen, self.most)

    def _current(self, task_id: str, step: int) -> tuple[Any, float, bool] | None:
        seen = self._seen.get((task_id, step))
        return seen if seen is not None and seen[1] >= self.run_began else None

    def state_at(self, task_id: str, step: int) -> Any:
        """The world's state at ``step`` of the current run, once it is known (None)."""
        seen = self._current(task_id, step)
        return seen[0] if seen is not None else None

    def robot_failed(self, task_id: str, step: int) -> bool:
        """Whether the world said the robot's skill failed in the step before ``step``."""
        seen = self._current(task_id, step)
        return seen is not None and seen[2]


class RunOrder:
    """The runs asked for, each with the order it was first asked for in: a later one
    ends a wait of an earlier one (an interrupted task begun again)."""

    def __init__(self, most: int = ANNOUNCED_KEPT) -> None:
        self.most = most
        self._order: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._count = 0

    def asked(self, task_id: str, attempt: int) -> None:
        if (task_id, attempt) not in self._order:
            self._count += 1
            self._order[(task_id, attempt)] = self._count
            _keep_newest(self._order, self.most)

    def superseded(self, task_id: str, attempt: int) -> bool:
        """Whether another run was asked for after this one."""
        order = self._order.get((task_id, attempt))
        return order is not None and self._count > order


class PersonChoices:
    """A person's action for each step, by (task id, attempt, step); the first one
    counts."""

    def __init__(self, most: int = CHOICES_KEPT) -> None:
        self.most = most
        self._chosen: OrderedDict[tuple[str, int, int], str] = OrderedDict()

    def choose(self, task_id: str, attempt: int, step: int, action: str) -> str | None:
        """Take the action for the step; the one chosen before, if any (then kept)."""
        key = (task_id, attempt, step)
        if key in self._chosen:
            return self._chosen[key]
        self._chosen[key] = action
        _keep_newest(self._chosen, self.most)
        return None

    def of(self, task_id: str, attempt: int, step: int) -> str | None:
        return self._chosen.get((task_id, attempt, step))
