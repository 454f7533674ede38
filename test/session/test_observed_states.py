"""Perception as events: reports turned into a task's observed steps (issue 45, item 2).

A report that comes late lands where it was seen; one seen before a change already taken
is left out and counted; a repeated report is one; a report of the state already taken
is no change; a run starts from its own start, not from the world before it.
"""

from __future__ import annotations

from cecm_ros.core.world_conditions import ReportTiming
from cecm_ros.session.observed_states import Observation, ObservedStates


def seen(stamp: int, what: str) -> Observation:
    return Observation(stamp, (what,), state=what)


def started(stamp: int = 0, what: str = 'start') -> ObservedStates:
    stream = ObservedStates()
    stream.begin_run(seen(stamp, what))
    return stream


def states(observations) -> list[str]:
    return [o.state for o in observations]


def test_reports_are_taken_in_the_order_they_were_seen_not_the_order_they_came():
    stream = started()
    assert stream.add(seen(30, 'c')) == 'held'
    assert stream.add(seen(10, 'a')) == 'held'
    assert stream.add(seen(20, 'b')) == 'held'
    assert states(stream.take()) == ['a', 'b', 'c']
    assert stream.take() == []   # nothing new: the robot goes on from c


def test_a_report_seen_before_a_change_already_taken_is_left_out_and_counted():
    stream = started()
    stream.add(seen(20, 'b'))
    assert states(stream.take()) == ['b']
    assert stream.add(seen(10, 'a')) == 'late'
    assert stream.add(seen(30, 'c')) == 'held'
    assert states(stream.take()) == ['c']
    assert (stream.counts.taken, stream.counts.late) == (2, 1)


def test_a_report_sent_twice_is_one_and_a_report_of_no_change_is_none():
    stream = started()
    stream.add(seen(10, 'a'))
    assert stream.add(seen(10, 'a')) == 'repeat'
    stream.add(seen(15, 'a'))     # perception saying again what it sees
    stream.add(seen(20, 'start'))  # back where it started: a change
    assert states(stream.take()) == ['a', 'start']
    assert stream.counts.unchanged == 1
    assert stream.add(seen(20, 'start')) == 'repeat'   # the one taken, sent again
    assert stream.counts.late == 0


def test_a_run_starts_from_its_own_start_and_drops_the_world_before_it():
    stream = ObservedStates()
    stream.add(seen(5, 'end of the last run'))
    stream.add(seen(12, 'after the start'))
    stream.begin_run(seen(10, 'start'))
    assert states(stream.take()) == ['after the start']
    # The run again: its counts start afresh.
    stream.begin_run(seen(40, 'start'))
    assert stream.counts.taken == 0 and stream.take() == []


def test_a_report_identical_to_the_start_is_no_change():
    stream = started(0, 'start')
    stream.add(seen(3, 'start'))
    assert stream.take() == [] and stream.counts.unchanged == 1


def test_report_timing_is_seeded_and_bounded():
    def delays(seed: int, task: str) -> list[list[float]]:
        timing = ReportTiming(0.5, 0.3, seed, task)
        return [timing.delays() for _ in range(200)]

    first = delays(3, 'task-1')
    assert first == delays(3, 'task-1')
    assert first != delays(4, 'task-1') and first != delays(3, 'task-2')
    flat = [d for sendings in first for d in sendings]
    assert all(0.0 <= d <= 0.5 for d in flat)
    repeated = sum(len(sendings) == 2 for sendings in first)
    assert 30 <= repeated <= 90   # about 0.3 of 200
    # No repeats and no delay: one sending each, at once; the draws are the same stream.
    plain = ReportTiming(0.0, 0.0, 3, 'task-1')
    assert all(plain.delays() == [0.0] for _ in range(50))


def test_with_confirmation_a_state_reported_once_is_a_passing_frame_unless_newest():
    """A perception that reports every so often says a lasting state more than once; a
    glitch it says once. The newest report is always taken (the robot acts on it)."""
    stream = ObservedStates(confirm=True)
    stream.begin_run(seen(0, 'start'))
    stream.add(seen(10, 'glitch'))
    stream.add(seen(20, 'start'))       # the world as it was: no change
    stream.add(seen(30, 'b'))
    stream.add(seen(40, 'b'))           # b again: confirmed
    stream.add(seen(50, 'c'))           # seen once, but the newest
    assert states(stream.take()) == ['b', 'c']
    assert (stream.counts.passing, stream.counts.unchanged) == (1, 2)
    # A late report of a frame left out is late, not a change.
    assert stream.add(seen(45, 'x')) == 'late'
    # Without confirmation every change is a step.
    plain = started()
    for stamp, what in ((10, 'glitch'), (20, 'start'), (30, 'b')):
        plain.add(seen(stamp, what))
    assert states(plain.take()) == ['glitch', 'start', 'b']


def test_a_report_sent_again_after_it_was_taken_is_a_repeat_not_late():
    stream = started()
    stream.add(seen(10, 'a'))
    stream.add(seen(20, 'b'))
    assert states(stream.take()) == ['a', 'b']
    assert stream.add(seen(10, 'a')) == 'repeat'   # not the last one taken, still one
    assert stream.add(seen(15, 'x')) == 'late'
    assert (stream.counts.repeats, stream.counts.late) == (1, 1)


def test_reports_seen_at_the_same_instant_keep_their_order_and_overflow_is_counted():
    stream = ObservedStates(most=3)
    stream.begin_run(seen(0, 'start'))
    for what in ('a', 'b', 'c'):
        stream.add(seen(5, what))
    stream.add(seen(6, 'd'))   # four held of at most three: the oldest goes
    assert states(stream.take()) == ['b', 'c', 'd']
    assert stream.counts.overflow == 1
