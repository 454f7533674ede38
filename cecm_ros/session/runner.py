"""A session of tasks, run over a :class:`~cecm_ros.session.port.GraphPort`.

:class:`SessionRunner` is the task manager's session without ROS: which session to
run (or resume), which task comes next (the given one, or the most informative
candidate the port ranks), running each task again after an interruption, the journal
that lets a restarted process resume, and the summary. What is measured beside the
session (the held-out metrics) is left to observers, so the loop never waits for it.

Sessions survive faults. Each has an id (by default derived from the partner and the
seed), and every outcome sent to the estimator carries it with the task's position, so
that the estimator never counts a task twice. A task that fails for a reason that is
not its own (a node lost, a peer that did not answer in time, an internal error) is
run again from its start state once the graph is whole (at most ``max_interruptions``
times); one that fails for a reason of its own is reported as failed and the session
goes on. The journal (in ``journal_dir``, else in memory) records what the session
did; without one a restarted runner asks the estimator what it has applied.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from cecm_ros.core.domain import Domain, Task
from cecm_ros.core.errors import CecmError, InterruptedWorkError
from cecm_ros.core.tasks import TaskSequence
from cecm_ros.experiments.experiment import TaskResult
from cecm_ros.session.estimator_parameters import NODE_PARAMETERS, settings_from_parameters
from cecm_ros.session.port import (
    GraphPort,
    NodeLostError,
    SessionError,
    SessionStoppedError,
    TaskFailedError,
)
from cecm_ros.session.records import (
    SessionJournal,
    estimate_distance,
    session_summary,
    session_task_result,
)

# How long a lost node's news waits for the session's own stop before it is reported
# (every process of a launch gets Ctrl-C at once; the others' exits come first).
LOSS_GRACE_S = 3.0


class Log(Protocol):
    """Where the session says what it does (rclpy's and Python's loggers both fit)."""

    def debug(self, message: str) -> object: ...
    def info(self, message: str) -> object: ...
    def warning(self, message: str) -> object: ...
    def error(self, message: str) -> object: ...


@dataclass(frozen=True)
class SessionSettings:
    """What a session is: read when it starts (the task manager's parameters)."""

    partner: str                 # the partner's TRUE type or vector: for metrics only
    partner_id: str
    seed: int = 0
    num_tasks: int = 5           # ignored with file_tasks
    tasks_file: str = ''         # where file_tasks came from (names the session)
    file_tasks: tuple[Task, ...] | None = None
    task_choice: str = 'given'   # or 'informative'
    candidates: int = 5          # per informative choice
    session_id: str = ''         # '' = <partner_id>-seed<seed>[-<tasks file stem>]
    journal_dir: str = ''        # '' = journals kept in memory
    max_interruptions: int = 10
    heldout_tasks: int = 0       # for the summary (the observer measures)
    summary_path: str = ''


class SessionObserver:
    """What the session tells whoever measures beside it; the defaults do nothing."""

    def session_started(self, settings: SessionSettings) -> None:
        """Before the first task (also of a resumed session)."""

    def task_finished(self, journal: SessionJournal, index: int, label: str,
                      result: TaskResult, measured: Callable[[], None]) -> None:
        """A task finished (now, or before a resume); call ``measured`` once ``result``
        holds what was measured, so that its report is sent again."""

    def session_ending(self) -> None:
        """The summary is next: finish what it needs."""

    def summary_entries(self) -> dict:
        """Entries for the summary."""
        return {}

    def close(self) -> None:
        """Stop; must return promptly, whatever is at work."""


class RunNumbers:
    """Attempt numbers: every run of a task gets its own, also across restarts of the
    process (a partner must never take a new run for the old one)."""

    def __init__(self) -> None:
        self.last = int.from_bytes(os.urandom(3), 'big') << 8

    def next(self) -> int:
        self.last = (self.last + 1) % 2**32 or 1   # 0 names no run (Correction)
        return self.last


@dataclass
class SessionEnd:
    """How a session's loop ended; :meth:`SessionRunner.conclude` summarises it."""

    results: list[TaskResult] = field(default_factory=list)
    estimator: dict | None = None
    error: str = ''   # '' when every task was run


def _bits(vector) -> str:
    return ''.join('1' if bit else '0' for bit in vector)


class SessionRunner:
    """Runs sessions of tasks of ``model`` with the partner whose TRUE capabilities are
    ``truth`` (used only for metrics), over ``port``.

    ``journals`` keeps in-memory journals (no ``journal_dir``) and ``runs`` numbers the
    attempts; both belong to the process, not to one runner, so that a runner made
    anew (a node configured again) resumes and numbers as the one before.
    """

    def __init__(self, model: Domain, truth: np.ndarray, port: GraphPort, log: Log,
                 observers: Sequence[SessionObserver] = (),
                 journals: dict[str, SessionJournal] | None = None,
                 runs: RunNumbers | None = None):
        self.model = model
        self.truth = np.asarray(truth, dtype=bool)
        self.port = port
        self.log = log
        self.observers = list(observers)
        self.journals = journals if journals is not None else {}
        self.runs = runs or RunNumbers()
        self.settings = SessionSettings(partner='', partner_id='')
        self.session_id = ''
        self.session_started = time.time()
        self.failed: list[dict] = []
        self.interruptions: list[dict] = []
        self.reported: set[int] = set()   # positions whose report this session sent
        self.prior_estimate: np.ndarray | None = None
        self.prior_hamming: tuple[float, float] | None = None

    # ------------------------------------------------------------------ a session
    def run(self, settings: SessionSettings, num_tasks: int = 0) -> SessionEnd | None:
        """Run (or resume) a session of ``num_tasks`` (0: the settings' number) until
        it ends or stops; None when the process is ending (nothing more is written)."""
        self.settings = settings
        self.session_started = time.time()
        end = SessionEnd()
        self.failed, self.interruptions, self.reported = [], [], set()
        self.session_id = ''
        try:
            count = num_tasks or settings.num_tasks
            self.session_id, ordinal, journal, applied = self._open_session(count)
            tasks = self._session_tasks(count, ordinal)
            resumed = sum(journal.result(i) is not None for i in range(len(tasks)))
            if resumed or applied:
                self.log.info(
                    f'resuming session {self.session_id!r}: {resumed} tasks finished before, '
                    f'{len(applied)} applied to the belief')
            else:
                self.log.info(f'session {self.session_id!r}: {len(tasks)} tasks')
            end.estimator = self.port.estimator_settings()
            for observer in self.observers:
                observer.session_started(settings)
            self._report_prior(journal, len(tasks))
            for index in range(len(tasks)):
                self._position(journal, tasks, index, applied, end.results)
            journal.append('finished')
        except SessionStoppedError as stopped:
            if self.port.closing():
                return None
            end.error = str(stopped)
            self.log.warning(f'session stopped: {end.error}')
        except (SessionError, CecmError, RuntimeError) as failure:
            end.error = str(failure)
            self.log.error(f'session stopped: {end.error}')
        except Exception as failure:  # noqa: BLE001 - report, summarise, exit as asked
            end.error = f'internal error: {failure!r}'
            self.log.error(f'session stopped: {end.error}')
        return end

    def _position(self, journal: SessionJournal, tasks: TaskSequence, index: int,
                  applied: dict[int, str], results: list[TaskResult]) -> None:
        """Position ``index`` of the session: taken from the journal when it finished or
        failed before, else run (again)."""
        label = f'[task {index + 1}/{len(tasks)}]'
        done = journal.result(index)
        if done is not None and index not in applied:
            # The journal has it, the belief does not (an estimator that kept its store
            # in memory was restarted): run it again for the belief.
            self.log.warning(f'{label} {done.task_id}: done before, but the belief does not '
                             'hold it; it runs again')
            done = None
        known = journal.chosen(index) or applied.get(index)
        task, offered, information = self._next_task(tasks, label, known)
        if done is not None:
            results.append(done)
            self._finished(journal, index, len(tasks), done, reported=False)
            return
        failure = journal.failure(index)
        if failure is not None and index not in applied:
            # It failed before the restart: it stays failed, and is not run twice.
            self.failed.append({'task_index': index, 'task_id': task.task_id,
                                'interruptions': failure.get('interruptions', 0),
                                'reason': failure.get('reason', '')})
            return
        if journal.started_unfinished(index):
            self._interrupted(journal, index, task, 1, 'the task manager stopped during it')
        journal.append('started', index=index, task_id=task.task_id, candidates=offered,
                       information=information)
        result = self._run_with_retries(journal, index, len(tasks), task)
        if result is not None:
            result.candidates, result.information = offered, round(information, 4)
            journal.append('done', index=index, result=asdict(result))
            results.append(result)
            self._finished(journal, index, len(tasks), result, reported=True)

    def _finished(self, journal: SessionJournal, index: int, count: int, result: TaskResult,
                  reported: bool) -> None:
        def measured() -> None:
            if reported:
                self.port.report_heldout(index, result)

        label = f'[task {index + 1}/{count}] {result.task_id}'
        for observer in self.observers:
            observer.task_finished(journal, index, label, result, measured)

    def _open_session(self, num_tasks: int) -> tuple[str, int, SessionJournal,
                                                     dict[int, str]]:
        """The session to run: the first of <id>, <id>-2, ... that has not finished,
        its journal and the task ids the estimator has applied of it, by position."""
        settings = self.settings
        base = settings.session_id or (
            f'{settings.partner_id}-seed{settings.seed}'
            + (f'-{Path(settings.tasks_file).stem}' if settings.tasks_file else ''))
        planned = len(settings.file_tasks) if settings.file_tasks else num_tasks
        for ordinal in range(1, 10_000):
            session_id = base if ordinal == 1 else f'{base}-{ordinal}'
            journal = self._journal(session_id)
            applied = self.port.applied_tasks(session_id)
            if not journal.finished and (journal.events or len(applied) < planned):
                return session_id, ordinal, journal, applied
        raise SessionError(f'every session {base}-N is finished; give another session_id')

    def _journal(self, session_id: str) -> SessionJournal:
        directory = self.settings.journal_dir
        if not directory:
            return self.journals.setdefault(session_id, SessionJournal())
        safe = ''.join(ch if ch.isalnum() or ch in '-_.' else '_' for ch in session_id)
        return SessionJournal(Path(directory).expanduser() / f'{safe}.jsonl')

    def _session_tasks(self, num_tasks: int, ordinal: int) -> TaskSequence:
        settings = self.settings
        candidates = settings.candidates if settings.task_choice == 'informative' else 1
        if settings.file_tasks is None:
            # A later session continues with new tasks (new ids) of the same seed.
            return TaskSequence(self.model, settings.seed + (ordinal - 1) * 1_000_003,
                                count=num_tasks, candidates=candidates)
        tasks = list(settings.file_tasks)
        if ordinal > 1:
            # Task ids must not repeat: the partner and executor key their state on them.
            tasks = [Task(f'{t.task_id}-r{ordinal}', t.initial, t.goal) for t in tasks]
        return TaskSequence(self.model, settings.seed, tasks=tasks, candidates=candidates)

    def _next_task(self, tasks: TaskSequence, label: str,
                   known: str | None) -> tuple[Task, int, float]:
        """The next task: the one the session chose before (``known``), the given one,
        or the most informative candidate."""
        candidates = tasks.offer()
        if known is not None:
            ids = [t.task_id for t in candidates]
            if known not in ids:
                raise SessionError(f'{label}: this session ran {known!r} here, which is not '
                                   f'among the candidates {ids}; it cannot be resumed with '
                                   'these parameters (give another session_id)')
            return tasks.take(ids.index(known)), len(candidates), 0.0
        if len(candidates) == 1:
            return tasks.take(0), 1, 0.0
        for _ in range(self.settings.max_interruptions + 1):
            try:
                # A ranking lost with an estimator that died is asked again once it is back.
                ranking = self.port.rank_tasks(label, candidates)
                break
            except NodeLostError:
                self.log.warning(f'{label}: the estimator was lost while it ranked the '
                                 'candidates; asking again once it is back')
                self.port.wait_graph_active(label)
        else:
            raise SessionError(f'{label}: the candidates could not be ranked (the estimator '
                               'was lost every time)')
        task = tasks.take(ranking.best)
        # Rounding can leave an uninformative choice a hair below zero ("-0.00 bits").
        information = max(0.0, float(ranking.information))
        self.log.info(f'{label}: chose {task.task_id} of {len(candidates)} candidates '
                      f'({information:.2f} bits expected)')
        return task, len(candidates), information

    def _report_prior(self, journal: SessionJournal, count: int) -> None:
        """The session's prior: the belief when it started, also after a restart (then
        from the journal, with the session's start time)."""
        recorded = journal.records('session')
        if recorded:
            first = recorded[0]
            self.prior_estimate = np.array([ch == '1' for ch in first['prior_estimate']])
            hamming, active = first['prior_hamming']
            self.prior_hamming = (hamming, active)
            self.session_started = float(first['time'])
            self.log.info(f'[task 0/{count}] prior belief (when the session started): '
                          f'hamming={hamming:.2f} (active {active:.2f})')
            return
        prior = self.port.initial_belief()
        estimate = prior.estimate
        self.prior_estimate = estimate
        hamming, active = self.prior_hamming = estimate_distance(self.model, estimate,
                                                                 self.truth)
        journal.append('session', prior_estimate=_bits(estimate),
                       prior_hamming=[hamming, active], tasks_seen=prior.tasks_seen)
        self.log.info(
            f'[task 0/{count}] prior belief ({prior.method}, {prior.tasks_seen} tasks seen): '
            f'hamming={hamming:.2f} (active {active:.2f}) '
            f'estimate lacks {self.model.catalog.describe_missing(estimate)}')

    # ------------------------------------------------------------- interruptions
    def _interrupted(self, journal: SessionJournal, index: int, task: Task, attempt: int,
                     reason: str) -> None:
        record = {'task_index': index, 'task_id': task.task_id, 'attempt': attempt,
                  'reason': reason}
        self.interruptions.append(record)
        journal.append('interrupted', index=index, task_id=task.task_id, attempt=attempt,
                       reason=reason)
        self.log.warning(f'[task {index + 1}] {task.task_id} interrupted ({reason}); '
                         'it runs again from its start once the graph is active')

    def all_interruptions(self) -> list[dict]:
        """The session's interruptions, also those before a restart."""
        journal = self.journals.get(self.session_id)
        if self.settings.journal_dir and self.session_id:
            journal = self._journal(self.session_id)
        if journal is None:
            return list(self.interruptions)
        return [{'task_index': e['index'], 'task_id': e['task_id'], 'attempt': e['attempt'],
                 'reason': e['reason']} for e in journal.records('interrupted')]

    def _run_with_retries(self, journal: SessionJournal, index: int, count: int,
                          task: Task) -> TaskResult | None:
        """Run a task; again from its start after each interruption; None if it failed.

        Only a failure of the task's own (TaskFailedError) counts as failed, and not even
        that when a node was lost meanwhile. Anything else (a node lost, a peer that did
        not answer in time on a busy machine, an internal error here or in a peer)
        interrupts the task, which runs again."""
        label = f'[task {index + 1}/{count}] {task.task_id}'
        interruptions = 0
        while True:
            # A run starts on a whole graph: at the session's start the manager may not
            # have said "all active" yet, and the run's mark must not take that for a
            # node lost.
            self.port.wait_graph_active(label)
            mark = self.port.graph_mark()
            attempt = self.runs.next()
            failure: Exception
            try:
                return self._run_task(index, count, task, attempt, mark)
            except SessionStoppedError:
                raise
            except NodeLostError:
                failure, disturbed = RuntimeError('a node was lost while the task ran'), True
            except TaskFailedError as error:
                failure, disturbed = error, self.port.disturbed(mark)
            except (SessionError, CecmError, RuntimeError) as error:
                failure, disturbed = error, True
            except Exception as error:  # noqa: BLE001 - an internal error
                self.log.debug(traceback.format_exc())
                failure, disturbed = RuntimeError(f'internal error: {error!r}'), True
            if disturbed:
                self.port.settle(LOSS_GRACE_S)
            if disturbed and interruptions < self.settings.max_interruptions:
                interruptions += 1
                self._interrupted(journal, index, task, interruptions, str(failure))
                continue   # the next run waits for the graph to be whole again
            if disturbed:
                failure = RuntimeError(f'interrupted {interruptions} times; last: {failure}')
            self.log.error(f'{label} failed: {failure}')
            self.failed.append({'task_index': index, 'task_id': task.task_id,
                                'interruptions': interruptions, 'reason': str(failure)})
            journal.append('failed', index=index, task_id=task.task_id,
                           interruptions=interruptions, reason=str(failure))
            return None

    # ----------------------------------------------------------------- one task
    def _run_task(self, index: int, count: int, task: Task, attempt: int,
                  mark: object) -> TaskResult:
        label = f'[task {index + 1}/{count}] {task.task_id}'
        started = time.perf_counter()
        held = self.port.current_belief()
        seen = held.tasks_seen if held is not None else 0
        self.port.reset_world(label, task, attempt)
        run = self.port.run_task(label, task, attempt, mark)
        update = self.port.update_belief(label, task, index, self.session_id, run, mark, seen)
        belief = update.belief
        robot_plan, human_plan = self.port.first_plans(label, task)
        try:
            result = session_task_result(
                self.model, index, task, belief.estimate, self.truth, robot_plan, human_plan,
                run.corrections, run.robot_decisions, run.goal_reached, update.accepted,
                update.message, theta=list(belief.theta), statuses=belief.report)
        except InterruptedWorkError:
            raise SessionStoppedError('task_manager is stopping') from None
        decided = f' decided={result.decided}' if belief.status else ''
        self.log.info(
            f'{label}: hamming={result.hamming:.2f} (active {result.hamming_active:.2f})'
            f' corrections={result.corrections}/{result.robot_decisions} '
            f'iou={result.iou:.2f} infeasible={result.infeasible_assigned} '
            f'accepted={result.accepted_samples}{decided} steps={run.steps} '
            f'({time.perf_counter() - started:.1f} s); estimate lacks '
            f'{self.model.catalog.describe_missing(belief.estimate)}')
        self.port.report_task(index, count, result, belief)
        self.reported.add(index)
        return result

    # ------------------------------------------------------------------ summary
    def conclude(self, end: SessionEnd) -> None:
        """Log how the session went, let the observers finish, write the summary."""
        wall = time.time() - self.session_started   # since it began, restarts included
        results = end.results
        if results and self.prior_hamming is not None:
            first, last = results[0], results[-1]
            self.log.info(
                f'session done: {len(results)} tasks in {wall:.1f} s; hamming '
                f'{self.prior_hamming[0]:.2f} (prior) -> {last.hamming:.2f}, correction '
                f'ratio {first.correction_ratio:.2f} (task 1) -> {last.correction_ratio:.2f}'
                + (f'; {len(self.interruptions)} interruptions' if self.interruptions else '')
                + (f'; {len(self.failed)} failed tasks' if self.failed else ''))
            belief = self.port.current_belief()
            for line in belief.lines if belief is not None else ():
                self.log.info(f'[belief] {line}')
        for observer in self.observers:
            observer.session_ending()
        self._write_summary(end, wall)

    def _write_summary(self, end: SessionEnd, wall: float) -> None:
        settings = self.settings
        path = settings.summary_path
        if not path:
            return
        extra: dict = {
            'source': 'cecm_ros node graph (task_manager)',
            'partner_id': settings.partner_id,
            'session_id': self.session_id,
            'interruptions': self.all_interruptions(),
            'failed_tasks': list(self.failed),
            'estimator_parameters': end.estimator,
            'prior': {'hamming': self.prior_hamming[0], 'hamming_active': self.prior_hamming[1],
                      'estimate': _bits(self.prior_estimate)}
            if self.prior_hamming is not None and self.prior_estimate is not None else None,
            'tasks': [{'task_id': r.task_id, 'estimate': r.estimate, 'truth': r.truth,
                       'status': r.status, 'corrections': r.corrections,
                       'robot_decisions': r.robot_decisions, 'goal_reached': r.goal_reached,
                       'candidates': r.candidates, 'information': r.information,
                       'update_message': r.update_message}
                      for r in end.results],
        }
        belief = self.port.current_belief()
        if belief is not None and belief.status:
            names = self.model.catalog.names
            extra['report'] = {
                'lines': list(belief.lines),
                'status': dict(zip(names, belief.status)),
                'confounded_with': {name: others for name, others in
                                    zip(names, belief.confounded_with) if others}}
        for observer in self.observers:
            extra.update(observer.summary_entries())
        if end.error:
            extra['error'] = end.error
        try:
            if end.results:
                estimator = end.estimator if end.estimator is not None else {}
                estimator_settings = settings_from_parameters(
                    {key: estimator[key] for key in NODE_PARAMETERS},
                    self.model.default_epsilon)
                informative = settings.task_choice == 'informative'
                behaviour = str(estimator.get('partner_behaviour') or '').strip()
                if behaviour == 'person':   # play mode: no simulated behaviour to name
                    extra['partner_played_by'] = 'a person (play mode)'
                    behaviour = ''
                summary = session_summary(
                    self.model, settings.partner, estimator['method'], settings.seed,
                    estimator_settings, end.results, wall, extra,
                    forgo_probability=float(estimator['forgo_probability']),
                    partner_behaviour=behaviour or None,
                    task_choice=settings.task_choice,
                    candidates=settings.candidates if informative else 1,
                    heldout=settings.heldout_tasks)
            else:
                summary = {'format': 'cecm_ros/experiment_summary/1', 'per_task': [], **extra}
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(summary, indent=1))
        except (OSError, CecmError, ValueError, KeyError, TypeError) as failure:
            self.log.error(f'cannot write the summary to {path}: {failure}')
            return
        self.log.info(f'summary written to {path}')
