"""The held-out metrics of a session, measured beside it by an observer.

Each finished task's held-out agreement (and identifiable Hamming distance) takes some
hundred plans on a pool of tasks of their own seed, with a planner of their own: they
are worked off in the background at a low priority, so the next task does not wait for
them, only the summary does. The part that does not depend on the belief (the pool
under the true vector and each of its single flips) is planned from the session's
start, while the first task mostly waits for answers.

Closing never waits for a planner at work: the work stops at the pool's next check,
and the planner is closed in the background once nothing plans with it any more.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from cecm_ros.core.domain import Domain, Planner
from cecm_ros.core.errors import InterruptedWorkError
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.metrics import HeldoutPool
from cecm_ros.core.tasks import heldout_seed
from cecm_ros.experiments.experiment import TaskResult, add_heldout_metrics
from cecm_ros.session.records import SessionJournal
from cecm_ros.session.runner import Log, SessionObserver, SessionSettings

# How long close() waits for the planner to close before leaving it to a thread.
CLOSE_WAIT_S = 1.0
# While the summary waits for the held-out metrics, say so this often (seconds).
WAIT_REPORT_S = 15.0


def _nothing() -> None:
    pass


class HeldoutMetrics(SessionObserver):
    """Held-out metrics of the tasks of ``model`` with a partner whose TRUE capabilities
    are ``truth``; the pool and its planner (``make_planner()``) are made on first use.

    ``wanted()`` says whether the work is still wanted (False stops it at the pool's
    next check, quietly); ``ending()`` that the process ends (the summary is not
    waited for); ``background`` runs first in every thread of this work (a lower CPU
    priority, so that the session's own planning goes first).
    """

    def __init__(self, model: Domain, truth: np.ndarray, make_planner: Callable[[], Planner],
                 log: Log, wanted: Callable[[], bool] = lambda: True,
                 ending: Callable[[], bool] = lambda: False,
                 background: Callable[[], None] = _nothing):
        self.model = model
        self.truth = np.asarray(truth, dtype=bool)
        self.make_planner = make_planner
        self.log = log
        self.wanted = wanted
        self.ending = ending
        self.background = background
        self.size = 0
        self.seed = 0
        self.pool: HeldoutPool | None = None
        self.planner: Planner | None = None
        self.warming: threading.Thread | None = None
        self.worker: ThreadPoolExecutor | None = None
        self.pending: list[Future] = []
        self.closed = False
        self.closer: threading.Thread | None = None
        self._lock = threading.Lock()

    def session_started(self, settings: SessionSettings) -> None:
        self.size, self.seed = settings.heldout_tasks, settings.seed
        self._warm()

    def _pool(self) -> HeldoutPool | None:
        """The pool (built on first use, as it plans); None when off or closed."""
        if self.size <= 0:
            return None
        with self._lock:
            if self.pool is None and not self.closed:
                self.planner = self.make_planner()
                # Plans shared between vectors only where the planner is cost-optimal (not
                # Overcooked's MCTS), as in `cecm experiment`.
                pool = HeldoutPool(self.model, evaluator_for('cecm', self.planner),
                                   heldout_seed(self.seed), self.size)
                # Stops when no longer wanted, and for good once closed.
                pool.interrupt = lambda: not self.wanted() or self.pool is not pool
                self.pool = pool
            return self.pool

    def _warm(self) -> None:
        """Plan the pool under the true vector and each of its single flips (some 700
        plans) while the first task runs, instead of after it."""
        pool = self._pool()
        warming = self.warming
        if pool is None or (warming is not None and warming.is_alive()) or \
                pool.identifiable(self.truth, plan=False) is not None:
            return

        def warm() -> None:
            # This thread, and the planner threads and processes it starts, inherit it.
            self.background()
            started = time.perf_counter()
            try:
                identifiable = pool.identifiable(self.truth)
            except InterruptedWorkError:
                return
            except Exception as error:  # noqa: BLE001 - the first task's metrics try again
                if self.wanted():
                    self.log.warning(f'planning the held-out pool ahead failed ({error}); '
                                     'the metrics plan it when needed')
                return
            if self.wanted() and identifiable is not None:
                self.log.info(
                    f'held-out pool: {len(pool.tasks)} tasks (seed {pool.seed}) planned under '
                    f'the true capabilities and their single flips in '
                    f'{time.perf_counter() - started:.1f} s; {int(identifiable.sum())} '
                    'capabilities identifiable')

        self.log.info(f'held-out pool: planning {len(pool.tasks)} tasks under the true '
                      'capabilities, beside the first task')
        self.warming = threading.Thread(target=warm, name='heldout_pool', daemon=True)
        self.warming.start()

    def task_finished(self, journal: SessionJournal, index: int, label: str,
                      result: TaskResult, measured: Callable[[], None]) -> None:
        pool = self._pool()
        if pool is None or not math.isnan(result.heldout_agreement):
            return
        with self._lock:
            if self.closed:
                return
            if self.worker is None:
                self.worker = ThreadPoolExecutor(1, thread_name_prefix='heldout_metrics',
                                                 initializer=self.background)
            worker = self.worker
        self.pending.append(worker.submit(self._measure, pool, journal, index, label, result,
                                          measured))

    def _measure(self, pool: HeldoutPool, journal: SessionJournal, index: int, label: str,
                 result: TaskResult, measured: Callable[[], None]) -> None:
        try:
            add_heldout_metrics(self.model, pool, [result])
        except InterruptedWorkError:
            return
        except Exception as error:  # noqa: BLE001 - metrics only; the session goes on
            self.log.warning(f'{label}: the held-out metrics failed: {error!r}')
            return
        journal.append('metrics', index=index, heldout_agreement=result.heldout_agreement,
                       hamming_identifiable=result.hamming_identifiable)
        self.log.info(f'{label}: heldout={result.heldout_agreement:.2f} '
                      f'(identifiable hamming {result.hamming_identifiable:.2f})')
        measured()

    def session_ending(self) -> None:
        """The summary needs every task's held-out metrics: wait for those queued."""
        pending, self.pending = self.pending, []
        if not pending or self.ending():
            return
        started = time.perf_counter()
        waiting = set(pending)   # a job's failure is logged by the job itself
        while waiting:
            _, waiting = wait(waiting, timeout=WAIT_REPORT_S)
            if waiting:
                # Said, not silent: the pool's plans can take minutes on a busy machine,
                # and a silent graph looks hung.
                self.log.info(f'waiting for the held-out metrics of the session: '
                              f'{len(pending) - len(waiting)} of {len(pending)} tasks '
                              f'measured, {time.perf_counter() - started:.0f} s')
        waited = time.perf_counter() - started
        if waited > 0.5:
            self.log.info(f'held-out metrics of the session done {waited:.1f} s after its '
                          'last task')

    def summary_entries(self) -> dict:
        # Only what is planned: a session that ended before the pool was (a stop, an
        # error in task 1) neither waits for it nor plans it now.
        pool = self.pool
        identifiable = pool.identifiable(self.truth, plan=False) if pool is not None else None
        if pool is None or identifiable is None:
            return {}
        return {'identifiable_capabilities': [self.model.catalog.names[i]
                                              for i in np.flatnonzero(identifiable)],
                'heldout_seed': pool.seed}

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Stop the work and close the planner without waiting for a plan under way
        (at most ``wait_s``); ``closer`` is the thread that closes it."""
        with self._lock:
            self.closed = True
            self.pool = None   # the work stops at the pool's next check
            worker, self.worker = self.worker, None
            planner, self.planner = self.planner, None
            warming = self.warming
        if worker is not None:
            worker.shutdown(wait=False, cancel_futures=True)
        if planner is None:
            return
        calls, hits = getattr(planner, 'calls', 0), getattr(planner, 'store_hits', 0)
        if calls or hits:
            self.log.info(f'planner: {calls} plans made, {hits} read from the plan store'
                          + ('' if getattr(planner, 'store', None) is not None
                             else ' (no plan store)'))

        def close_when_idle() -> None:
            # Closed only once nothing plans with it: a planning call after close()
            # would start new workers that nobody closes.
            if warming is not None:
                warming.join()
            if worker is not None:
                worker.shutdown(wait=True)
            planner.close()

        closer = threading.Thread(target=close_when_idle, name='heldout_planner_close',
                                  daemon=True)
        self.closer = closer
        closer.start()
        closer.join(wait_s)
