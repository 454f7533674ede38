"""What the lifecycle manager knows of the nodes it manages, without ROS.

A :class:`ManagedNode` takes each heartbeat's answer (a lifecycle state) or silence:
whether the node answers, how many heartbeats in a row it missed, whether it was lost
since it last was active and how often it came back (the ``recoveries`` of the
manager's GraphStatus, which :mod:`cecm_ros.session.graph` reads), and its failed
attempts to be brought up, each next one after a growing delay, until the manager gives
up on it. :meth:`ManagedNode.health` is what the manager says of it on /diagnostics.
:class:`ErrorLines` keeps each node's latest error line: its own words for why a
transition failed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

# lifecycle_msgs/State's primary states: the ids every ROS 2 lifecycle node reports.
UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED = 1, 2, 3, 4
LABELS = {UNCONFIGURED: 'unconfigured', INACTIVE: 'inactive', ACTIVE: 'active',
          FINALIZED: 'finalized'}
MAX_RETRY_DELAY_S = 30.0
# Heartbeats in a row that a node whose services are seen may leave unanswered, having
# never answered, before the manager says so (one a period, each waiting its timeout:
# half a minute or more, longer than any start-up on a loaded machine).
NEVER_ANSWERED_MISSES = 15


@dataclass
class ManagedNode:
    """What the manager knows of one node."""

    state: int = 0
    responsive: bool = False
    misses: int = 0
    last_answer: float = 0.0
    recoveries: int = 0
    was_active: bool = False       # reached active once: later returns are recoveries
    lost: bool = False             # reported lost since it last was active
    failures: int = 0              # failed bring-up attempts in a row
    next_attempt: float = 0.0
    reason: str = ''               # why the last transition failed
    gave_up: bool = False          # bring_up_attempts used up: left as it is
    silence_told: bool = False     # never answered, and the manager said so

    def never_answered(self, limit: int = NEVER_ANSWERED_MISSES) -> bool:
        """True once: the node has not answered one heartbeat since the manager
        started and has now missed ``limit`` in a row while its services were seen. The
        manager retries only a node that answers, so without this word a process that
        hangs at start, or that DDS left unable to hear the manager, would keep the
        graph waiting in silence."""
        if (self.responsive or self.last_answer or self.state or self.silence_told
                or self.misses < limit):
            return False
        self.silence_told = True
        return True

    def never_answered_warning(self, name: str) -> str:
        """The manager's words for a node that never answered."""
        return (f'{name} never answered: its lifecycle services are seen, yet it has not '
                f'answered {self.misses} heartbeats in a row since the manager started (a '
                'process that hangs, or DDS that left it deaf to the manager; `kill -USR1` '
                'on its process prints where its threads are); restart it, and it is '
                'brought up when it answers')

    def missed(self, limit: int) -> bool:
        """One more heartbeat unanswered; whether the node is lost from now on (it
        answered before, and missed ``limit`` in a row)."""
        self.misses += 1
        if self.responsive and self.misses >= limit:
            self.responsive, self.lost = False, True
            return True
        return False

    def answered(self, state: int, now: float) -> bool:
        """A heartbeat's answer; whether the node answers again after it was lost."""
        again = not self.responsive and self.lost
        self.responsive, self.misses, self.last_answer, self.state = True, 0, now, state
        if state == ACTIVE:
            self.became_active()
        elif self.was_active:
            self.lost = True    # it left active (a respawned process starts unconfigured)
        return again

    def became_active(self) -> None:
        """Active (again): back after it was lost, a recovery."""
        if self.lost and self.was_active:
            self.recoveries += 1
        self.state = ACTIVE
        self.lost, self.failures, self.was_active, self.gave_up = False, 0, True, False

    def due(self, now: float) -> bool:
        """Whether an attempt to bring it up may be made now."""
        return now >= self.next_attempt and not self.gave_up

    def afresh(self) -> None:
        """Failed bring-ups forgotten: the next attempt at once, also after giving up."""
        self.failures, self.gave_up, self.next_attempt = 0, False, 0.0

    def failed(self, limit: int, now: float) -> float | None:
        """One more failed attempt to bring it up: the delay before the next one, or
        None after ``limit`` (> 0) in a row, when the manager gives up on it (a node that
        can never configure must not keep the graph waiting for ever)."""
        self.failures += 1
        if 0 < limit <= self.failures:
            self.gave_up = True
            return None
        delay = min(MAX_RETRY_DELAY_S, 2.0 ** self.failures)
        self.next_attempt = now + delay
        return delay

    def reported(self) -> tuple[int, str]:
        """(state, label) as the graph status reports them: 0, unknown while it does
        not answer."""
        if not self.responsive:
            return 0, 'unknown'
        return self.state, LABELS.get(self.state, 'unknown')

    def silent_s(self, now: float) -> float | None:
        """Seconds since its last answer; None when it never answered."""
        return now - self.last_answer if self.last_answer else None

    def health(self, misses: int, now: float) -> tuple[str, str, dict]:
        """(level: ok, warn, error or stale; message; values) of its status on
        /diagnostics: stale while it does not answer (killed, hung, not started yet),
        as an aggregator marks a status that stopped coming."""
        label = LABELS.get(self.state, 'unknown')
        silent = self.silent_s(now)
        if self.gave_up:
            level, message = 'error', f'given up after {self.failures} failed bring-ups: ' \
                f'{self.reason or "see its log"}'
        elif not self.responsive or self.misses >= misses:
            level = 'stale'
            message = 'not heard yet' if silent is None else \
                f'no answer to the heartbeat for {silent:.1f} s (died or hangs)'
        elif self.state != ACTIVE:
            level, message = 'warn', f'{label}: not serving'
        else:
            level, message = 'ok', 'active'
        return level, message, {
            'lifecycle_state': label if self.responsive else 'unknown',
            'responsive': self.responsive,
            'silent_s': silent if silent is not None else 'never answered',
            'missed_heartbeats': self.misses, 'recoveries': self.recoveries}


def graph_mode(mode: str, nodes: list[ManagedNode]) -> tuple[str, bool]:
    """(mode, all active) of the graph status: the manager's mode, 'recovering' while
    it is active and a node is not (or does not answer)."""
    all_active = mode == 'active' and all(
        node.responsive and node.state == ACTIVE for node in nodes)
    return ('recovering' if mode == 'active' and not all_active else mode), all_active


class ErrorLines:
    """Each node's latest error line (when heard, text). A node logs it before it
    answers a transition, but on another topic, which may be delivered a bit later: a
    reader waits for it briefly."""

    def __init__(self) -> None:
        self._lines: dict[str, tuple[float, str]] = {}
        self._heard = threading.Condition()

    def heard(self, name: str, text: str) -> None:
        with self._heard:
            self._lines[name] = (time.monotonic(), text)
            self._heard.notify_all()

    def since(self, name: str, since: float, wait_s: float) -> str:
        """The node's latest error line heard after ``since`` (a time.monotonic(),
        waiting up to ``wait_s`` for it); '' when it said nothing."""
        def heard() -> bool:
            return name in self._lines and self._lines[name][0] >= since

        with self._heard:
            if self._heard.wait_for(heard, wait_s):
                return self._lines[name][1]
        return ''
