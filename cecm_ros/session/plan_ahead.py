"""Planning ahead on a thread of its own while the team works on a task.

The pause a person feels after a task is the update, and most of an update's planning
does not need the task's end: the hypotheses' plans from its start, the change test's
fresh partners (drawn from the update's own stream, so known beforehand), the states
observed so far (:meth:`~cecm_ros.core.estimator.Estimator.plan_ahead`). The estimator
node hands every new state of the running task to :meth:`PlanAhead.want`; a thread plans
for the latest of them, a few hypotheses at a time. Whatever else uses the planner (the
update itself, a task ranking) does so inside :meth:`PlanAhead.exclusive`, which stops
the planning ahead at its next few plans and waits for them: the two never search at
once, and what was planned ahead is found made. The belief is never touched here, so
planning ahead changes when plans are made, never what an update concludes.

Without ROS, so that it is tested by calling it (test/session/test_plan_ahead.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

RUNS_KEPT = 8    # runs (and tasks) whose bookkeeping is kept


class PlanAhead:
    """One thread that plans ahead for the latest (estimator, task, states) wanted.

    A wish names its ``run``: one request of a task (the same task asked again is
    another run). Once an update of a run's task began, later wishes of that run are
    states late on the wire (the belief moved on): ignored. A run whose planning failed
    is not tried again (a search that failed fails again; its update plans what it
    needs), and says so once."""

    def __init__(self, warn: Callable[[str], None],
                 plans_made: Callable[[], int] = lambda: 0,
                 wanted: Callable[[], bool] = lambda: True):
        self._warn = warn
        self._plans_made = plans_made
        self._still_wanted = wanted          # False: stop at the next few plans (inactive)
        self._planned: dict[str, int] = {}   # plans made ahead, by task (the latest few)
        self._latest: Hashable = None         # the run of the latest wish
        self._over: list[Hashable] = []       # runs updated or failed (the latest few)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._planner = threading.Lock()     # held while planning ahead or while exclusive
        self._wanted: tuple[Any, Any, tuple, Hashable] | None = None
        self._exclusive = 0                  # callers inside (or waiting for) exclusive()
        self._closed = False
        self.calls = self.finished = self.failures = 0   # (for /diagnostics)
        self.plans = 0                                     # plans made ahead in all
        self._thread = threading.Thread(target=self._run, name='plan_ahead', daemon=True)
        self._thread.start()

    def want(self, estimator: Any, task: Any, states: Sequence,
             run: Hashable = None) -> None:
        """Plan ahead for ``task`` with its ``states`` so far (an earlier wish that has
        not begun is replaced); ``run``: which request of the task (default: the task's
        id)."""
        run = _task_id(task) if run is None else run
        with self._lock:
            if self._closed or run in self._over:
                return
            self._latest = run
            self._wanted = (estimator, task, tuple(states), run)
            self._changed.notify_all()

    def forget(self) -> None:
        """Drop a wish not yet begun (the task is over, or the node stops)."""
        with self._lock:
            self._wanted = None

    @contextmanager
    def exclusive(self, updating: str | None = None) -> Iterator[None]:
        """The planner for the caller alone: planning ahead stops at its next few plans
        and stays stopped until the caller is done; a wish not yet begun is dropped (an
        update plans what is left of it anyway). ``updating``: the task whose update
        this is; later wishes of its run are ignored."""
        with self._lock:
            self._exclusive += 1
            self._wanted = None
            latest = self._latest
            if updating is not None and latest is not None and \
                    (latest == updating or (isinstance(latest, tuple) and latest
                                            and latest[0] == updating)):
                self._end_run(latest)
        try:
            with self._planner:
                yield
        finally:
            with self._lock:
                self._exclusive -= 1
                self._changed.notify_all()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop planning ahead (at its next few plans) and end the thread; a search
        that outlasts ``timeout_s`` ends when its planner is closed (the owner's next
        step), which the thread takes quietly."""
        with self._lock:
            self._closed = True
            self._wanted = None
            self._changed.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def planned_for(self, task_id: str) -> int:
        """How many plans were made ahead for ``task_id`` (its update's log says it)."""
        with self._lock:
            return self._planned.get(task_id, 0)

    def _end_run(self, run: Hashable) -> None:
        if run not in self._over:
            self._over = [*self._over[-(RUNS_KEPT - 1):], run]

    def _stopped(self) -> bool:
        return self._closed or self._exclusive > 0 or not self._still_wanted()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed and (self._wanted is None or self._exclusive):
                    self._changed.wait()
                if self._closed:
                    return
                assert self._wanted is not None
                estimator, task, states, run = self._wanted
                self._wanted = None
                # Nobody exclusive holds or waits for the planner (they count first):
                # this does not block.
                self._planner.acquire()
            try:
                self._plan(estimator, task, states, run)
            except Exception:  # noqa: BLE001, S110 - the thread must outlive its bookkeeping
                pass
            finally:
                self._planner.release()

    def _plan(self, estimator: Any, task: Any, states: tuple, run: Hashable) -> None:
        task_id = _task_id(task)
        before = self._plans_made()
        try:
            self.calls += 1
            if estimator.plan_ahead(task, states, stop=self._stopped):
                self.finished += 1
        except Exception as error:  # noqa: BLE001 - ahead is a head start, no more
            self.failures += 1
            with self._lock:
                self._end_run(run)
            if not self._closed:
                self._warn(f'planning ahead for task {task_id!r} failed ({error}); its '
                           'update plans what it needs')
        finally:
            # Counted before the planner is free: the update that takes it next
            # reports the count.
            made = self._plans_made() - before
            with self._lock:
                self.plans += made
                self._planned[task_id] = self._planned.pop(task_id, 0) + made
                while len(self._planned) > RUNS_KEPT:
                    self._planned.pop(next(iter(self._planned)))


def _task_id(task: Any) -> str:
    return str(getattr(task, 'task_id', task))
