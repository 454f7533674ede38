"""Perception as events, without ROS: the states a robot's perception reports as they
change, turned into a task's observed steps.

A perception stack does not know the team's joint steps: it reports what it sees when
it sees a change, with the time it saw it, and a message may come late, twice, or after
a later one. :class:`ObservedStates` keeps one task's reports ordered by the time they
were seen; :meth:`~ObservedStates.take` hands the executor, after each robot step, the
changes seen since the last step in that order (several of them when the partner did
several things meanwhile, none when nothing changed). A report seen before one already
taken comes too late to be a step of its own: it is left out and counted, so that a
late message never reorders the steps already published. With ``confirm`` (for a
perception that reports what it sees every so often, noise and all), a state that
perception reported only once and that is not the newest is a passing frame, most often
a glitch: it is left out, and the change it may have shown reaches the evidence with the
next state (one observed step may then hold several actions, which the evidence
explains as a sequence). Not thread-safe: the executor node holds its lock.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Reports held, per task, before the executor takes them; the oldest go first.
HELD_MOST = 500


@dataclass(frozen=True, order=True)
class Observation:
    """One report: when it was seen (nanoseconds), what it says (``key``: the facts or
    numbers, compared to tell a change), the domain's reading and the message."""

    stamp_ns: int
    key: tuple = field(compare=False)
    state: Any = field(compare=False, default=None)
    record: Any = field(compare=False, default=None)


@dataclass
class StreamCounts:
    """What the stream did with the reports of one run (the executor says so)."""

    taken: int = 0      # changes that became observed steps
    unchanged: int = 0  # reports of the state already taken (perception repeating itself)
    late: int = 0       # seen before a report already taken: left out
    passing: int = 0    # (confirm) reported once and not the newest: left out
    repeats: int = 0    # the same report sent again: one
    overflow: int = 0   # the oldest held, let go when more than ``most`` waited


class ObservedStates:
    """The reports of one task's runs (module docstring)."""

    def __init__(self, most: int = HELD_MOST, confirm: bool = False):
        self.most = most
        self.confirm = confirm
        self.held: list[Observation] = []   # not yet taken, by stamp
        self.last: Observation | None = None   # the state taken last (the one acted on)
        self.through_ns: int | None = None   # the newest stamp taken out of ``held``
        self.handled: set[tuple[int, tuple]] = set()   # (stamp, key) taken out this run
        self.counts = StreamCounts()

    def begin_run(self, start: Observation) -> None:
        """A run of the task starts from ``start`` (the task's start as it was set up,
        stamped when the run began): the reports seen before it are of the world before
        this run (an earlier run, the reset) and go."""
        self.counts = StreamCounts()
        self.held = [o for o in self.held if o.stamp_ns > start.stamp_ns]
        self.last = start
        self.through_ns = start.stamp_ns
        self.handled = {(start.stamp_ns, start.key)}

    def add(self, observation: Observation) -> str:
        """Hold a report: 'held', 'late' (seen before the last one taken: left out) or
        'repeat' (the same stamp and content as one held)."""
        if self.through_ns is not None and observation.stamp_ns <= self.through_ns:
            if (observation.stamp_ns, observation.key) in self.handled:
                self.counts.repeats += 1
                return 'repeat'
            self.counts.late += 1
            return 'late'
        start = bisect.bisect_left(self.held, observation)
        end = bisect.bisect_right(self.held, observation)
        if any(other.key == observation.key for other in self.held[start:end]):
            self.counts.repeats += 1
            return 'repeat'
        # Reports seen at the same instant keep the order they came in.
        self.held.insert(end, observation)
        if len(self.held) > self.most:
            del self.held[0]
            self.counts.overflow += 1
        return 'held'

    def newest_stamp(self) -> int | None:
        """When the newest report held or taken was seen (None: none yet)."""
        if self.held:
            return self.held[-1].stamp_ns
        return self.through_ns

    def take(self) -> list[Observation]:
        """The changes seen since the last report taken, in the order they were seen;
        a report that shows the state already taken is no change and is dropped, and
        (``confirm``) so is a passing frame."""
        changes = []
        reported = Counter(o.key for o in self.held)
        for index, observation in enumerate(self.held):
            newest = index == len(self.held) - 1
            if self.last is not None and observation.key == self.last.key:
                self.counts.unchanged += 1
                self.last = observation
            elif self.confirm and not newest and reported[observation.key] < 2:
                self.counts.passing += 1
            else:
                changes.append(observation)
                self.last = observation
            self.through_ns = observation.stamp_ns
            if len(self.handled) < 4 * self.most:
                self.handled.add((observation.stamp_ns, observation.key))
        self.held.clear()
        self.counts.taken += len(changes)
        return changes
