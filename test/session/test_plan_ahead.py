"""PlanAhead, the estimator node's thread that plans ahead while the team works: it plans
for the latest wish, stops at its next few plans when an update takes the planner, never
plans while the update does, and outlives a failure (cecm_ros/session/plan_ahead.py)."""

from __future__ import annotations

import threading
import time

from cecm_ros.session.plan_ahead import PlanAhead

WAIT_S = 10.0


def _until(predicate, timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


class Chunked:
    """An estimator whose plan_ahead plans ``chunks`` pieces, asking ``stop`` between
    them, and notes whether anyone else held the planner meanwhile."""

    def __init__(self, chunks: int = 50, chunk_s: float = 0.01, fail: bool = False):
        self.chunks, self.chunk_s, self.fail = chunks, chunk_s, fail
        self.calls: list[tuple] = []
        self.pieces = 0
        self.inside = threading.Event()
        self.overlap = False
        self.others = 0        # callers that hold the planner now

    def plan_ahead(self, task, states, stop=None) -> bool:
        self.calls.append((task, states))
        self.inside.set()
        try:
            if self.fail:
                raise RuntimeError('the planner crashed')
            for _ in range(self.chunks):
                if stop is not None and stop():
                    return False
                self.overlap |= self.others > 0
                time.sleep(self.chunk_s)
                self.pieces += 1
            return True
        finally:
            self.inside.clear()


def test_it_plans_the_latest_wish_and_an_update_stops_it_and_plans_alone():
    warnings: list[str] = []
    ahead = PlanAhead(warnings.append)
    estimator = Chunked()
    try:
        ahead.want(estimator, 'task-1', ['s0'])
        assert _until(estimator.inside.is_set)
        with ahead.exclusive():
            # Stopped at its next piece (not finished: 50 pieces take 0.5 s), and nothing
            # planned while the update holds the planner.
            assert not estimator.inside.is_set() and estimator.pieces < 50
            estimator.others += 1
            pieces = estimator.pieces
            time.sleep(0.1)
            assert estimator.pieces == pieces
            estimator.others -= 1
        assert not estimator.overlap
        assert ahead.calls == 1 and ahead.finished == 0
        # Wishes that came while the update ran were dropped; a new one is planned in full.
        ahead.want(estimator, 'task-2', ['s0'])
        ahead.want(estimator, 'task-2', ['s0', 's1'])
        assert _until(lambda: ahead.finished == 1)
        assert estimator.calls[-1] == ('task-2', ('s0', 's1'))
        assert warnings == []
    finally:
        ahead.close()
    assert not ahead._thread.is_alive()


def test_a_wish_made_while_an_update_runs_waits_for_it_and_forget_drops_a_wish():
    ahead = PlanAhead(lambda _: None)
    estimator = Chunked(chunks=1)
    try:
        with ahead.exclusive():
            ahead.want(estimator, 'task-1', ['s0'])
            time.sleep(0.1)
            assert estimator.calls == []    # not while the update holds the planner
        # (made after the update began: planned once it is done)
        assert _until(lambda: ahead.finished == 1)
        with ahead.exclusive():
            ahead.want(estimator, 'task-2', ['s0'])
            ahead.forget()
        time.sleep(0.1)
        assert [call[0] for call in estimator.calls] == ['task-1']
    finally:
        ahead.close()


def test_a_task_whose_update_began_is_not_planned_again_and_its_plans_are_counted():
    """A state late on the wire after its task's update began plans nothing (the belief
    moved on); the plans made ahead for a task are counted before the update that stops
    them gets the planner."""
    made = [0]
    ahead = PlanAhead(lambda _: None, lambda: made[0])

    class Counting(Chunked):
        def plan_ahead(self, task, states, stop=None):
            made[0] += 3
            return super().plan_ahead(task, states, stop)

    estimator = Counting(chunks=100_000, chunk_s=0.001)
    try:
        ahead.want(estimator, 'task-1', ['s0'])
        assert _until(estimator.inside.is_set)
        with ahead.exclusive(updating='task-1'):
            assert ahead.planned_for('task-1') == 3
        ahead.want(estimator, 'task-1', ['s0', 's1'])
        time.sleep(0.1)
        assert len(estimator.calls) == 1
        # The same task asked again (another run) is planned ahead again.
        estimator.chunks = 1
        ahead.want(estimator, 'task-1', ['s0'], run=('task-1', 0, 2))
        assert _until(lambda: ahead.finished == 1)
        assert ahead.planned_for('task-1') == 6
        ahead.want(estimator, 'task-2', ['s0'])
        assert _until(lambda: ahead.finished == 2)
        assert ahead.planned_for('task-2') == 3 and ahead.planned_for('task-3') == 0
        assert ahead.plans == 9
    finally:
        ahead.close()


def test_a_failure_is_one_warning_and_the_thread_goes_on():
    warnings: list[str] = []
    ahead = PlanAhead(warnings.append)
    try:
        failing = Chunked(fail=True)
        ahead.want(failing, 'task-1', ['s0'])
        assert _until(lambda: ahead.failures == 1)
        assert len(warnings) == 1 and 'task-1' in warnings[0] and 'crashed' in warnings[0]
        # Its later states are not tried again (the search would fail again).
        ahead.want(failing, 'task-1', ['s0', 's1'])
        time.sleep(0.1)
        assert len(failing.calls) == 1 and len(warnings) == 1
        good = Chunked(chunks=2)
        ahead.want(good, 'task-2', ['s0'])
        assert _until(lambda: ahead.finished == 1)
    finally:
        ahead.close()


def test_a_node_no_longer_active_stops_planning_ahead_at_its_next_piece():
    active = [True]
    ahead = PlanAhead(lambda _: None, wanted=lambda: active[0])
    estimator = Chunked(chunks=100_000, chunk_s=0.001)
    try:
        ahead.want(estimator, 'task-1', ['s0'])
        assert _until(estimator.inside.is_set)
        active[0] = False
        assert _until(lambda: not estimator.inside.is_set())
        assert ahead.finished == 0 and estimator.pieces < 100_000
    finally:
        ahead.close()


def test_close_stops_a_long_plan_at_its_next_piece():
    ahead = PlanAhead(lambda _: None)
    estimator = Chunked(chunks=100_000, chunk_s=0.001)
    ahead.want(estimator, 'task-1', ['s0'])
    assert _until(estimator.inside.is_set)
    began = time.monotonic()
    ahead.close()
    assert not ahead._thread.is_alive() and time.monotonic() - began < WAIT_S
    assert estimator.pieces < 100_000
    ahead.want(estimator, 'task-2', ['s0'])      # after close: ignored
    assert len(estimator.calls) == 1
