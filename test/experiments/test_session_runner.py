"""The task manager's session without ROS: SessionRunner over a port on the real core.

The port runs each task as ``cecm experiment`` does (the TidyUP model, its own planner,
the simulated partner, a CE-CM estimator), so a session through the runner must give
the numbers of ``run_once``. Faults are the port's answers: a node lost, a peer that
did not answer, a task that fails on its own, a stop; the estimator part applies each
(session, position) once, as the estimator node's partner store does.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest
from paths import REPO

from cecm_ros.core.domain import Task
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, partner_seed, run_shared_task
from cecm_ros.core.task_choice import choose_task
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import ExperimentSettings, run_once
from cecm_ros.session.estimator_parameters import NODE_PARAMETERS
from cecm_ros.session.heldout import CLOSE_WAIT_S, HeldoutMetrics
from cecm_ros.session.port import (
    Belief,
    BeliefUpdate,
    NodeLostError,
    Ranking,
    SessionError,
    SessionStoppedError,
    TaskFailedError,
    TaskRun,
)
from cecm_ros.session.records import SessionJournal
from cecm_ros.session.runner import SessionRunner, SessionSettings

PARTNER = 'low_capability'
SAMPLES = 30
SESSION = 'partner-seed0'
LOG = logging.getLogger('test_session_runner')


@pytest.fixture(scope='module')
def model():
    return TidyUpModel()


@pytest.fixture(scope='module')
def planner(model):
    with planner_for(model, workers=2) as planner:
        yield planner


@pytest.fixture(scope='module')
def truth(model):
    return model.catalog.resolve(PARTNER)


@pytest.fixture(autouse=True)
def info_logs(caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)


class CoreEstimator:
    """The estimator node's part: one CE-CM estimator that outlives task managers and
    applies each (session, position) once."""

    def __init__(self, model, planner):
        self.evaluator = evaluator_for('cecm', planner)
        self.estimator = make_estimator('cecm', model, self.evaluator,
                                        EstimatorSettings(samples=SAMPLES), seed=0)
        self.applied: dict[tuple[str, int], str] = {}
        self.updates = 0   # updates made; an outcome sent again makes none

    def belief(self, model) -> Belief:
        belief = self.estimator.belief
        return Belief(estimate=belief.estimate, theta=tuple(belief.theta),
                      tasks_seen=belief.tasks_seen, method='cecm',
                      status=tuple(r.status for r in belief.report),
                      report=tuple(belief.report), lines=('known: what the test says',))

    def update(self, session_id: str, index: int, task: Task, trajectory) -> tuple[int, str]:
        applied = self.applied.get((session_id, index))
        if applied is not None:
            if applied != task.task_id:
                raise TaskFailedError(f'task {index} was {applied!r}, not {task.task_id!r}')
            return 0, 'already applied; not counted again'
        report = self.estimator.update(task, trajectory)
        self.applied[(session_id, index)] = task.task_id
        self.updates += 1
        return report.samples_accepted, report.message


class CorePort:
    """A GraphPort in process: the world, robot and partner simulated by the core.

    ``inject(call, task_id, error, lost)`` makes the next such call for that task raise
    ``error``; ``lost`` also reports a node lost (the graph changes)."""

    def __init__(self, model, planner, estimator: CoreEstimator, truth):
        self.model, self.planner, self.estimator, self.truth = model, planner, estimator, truth
        self.faults: dict[tuple[str, str], list[tuple[Exception, bool]]] = {}
        self.calls: list[tuple[str, str]] = []
        self.attempts: list[int] = []
        self.reports: list[int] = []
        self.heldout_reports: list[int] = []
        self.losses = 0
        self.ending = False
        self.record = None

    def inject(self, call: str, task_id: str, error: Exception, lost: bool = False) -> None:
        self.faults.setdefault((call, task_id), []).append((error, lost))

    def _call(self, call: str, task_id: str = '') -> None:
        self.calls.append((call, task_id))
        faults = self.faults.get((call, task_id))
        if faults:
            error, lost = faults.pop(0)
            self.losses += lost
            raise error

    def closing(self) -> bool:
        return self.ending

    def applied_tasks(self, session_id: str) -> dict[int, str]:
        return {i: t for (s, i), t in self.estimator.applied.items() if s == session_id}

    def estimator_settings(self) -> dict:
        return {'method': 'cecm', 'seed': 0, **NODE_PARAMETERS, 'samples': SAMPLES,
                'forgo_probability': 0.0, 'source': 'the test'}

    def current_belief(self) -> Belief:
        return self.estimator.belief(self.model)

    def initial_belief(self) -> Belief:
        return self.current_belief()

    def rank_tasks(self, label: str, candidates: Sequence[Task]) -> Ranking:
        self._call('rank_tasks', candidates[0].task_id)
        estimator = self.estimator.estimator
        choice = choose_task(candidates, *estimator.hypotheses(), self.estimator.evaluator,
                             estimator.belief.settings.epsilon)
        return Ranking(choice.index, choice.information[choice.index])

    def graph_mark(self) -> int:
        return self.losses

    def disturbed(self, mark) -> bool:
        return self.losses != mark

    def wait_graph_active(self, label: str) -> None:
        self.calls.append(('wait_graph_active', label))

    def settle(self, seconds: float) -> None:
        self.calls.append(('settle', seconds))

    def reset_world(self, label: str, task: Task, attempt: int) -> None:
        self.attempts.append(attempt)
        self._call('reset_world', task.task_id)

    def run_task(self, label: str, task: Task, attempt: int, mark) -> TaskRun:
        self._call('run_task', task.task_id)
        human = SimulatedHuman(self.planner, self.truth, seed=partner_seed(0, task.task_id))
        robot = RobotTeammate(self.planner, self.estimator.estimator.estimate)
        self.record = run_shared_task(self.model, task, robot, human)
        return TaskRun(self.record.corrections, self.record.robot_decisions,
                       self.record.goal_reached, len(self.record.trajectory) - 1,
                       evidence=self.record.trajectory)

    def update_belief(self, label: str, task: Task, index: int, session_id: str,
                      run: TaskRun, mark, seen: int) -> BeliefUpdate:
        self._call('update_belief', task.task_id)
        accepted, message = self.estimator.update(session_id, index, task, run.evidence)
        belief = self.current_belief()
        assert belief.tasks_seen >= seen
        return BeliefUpdate(belief, accepted, message)

    def first_plans(self, label: str, task: Task):
        self._call('first_plans', task.task_id)
        return self.record.robot_plan, self.record.human_plan

    def report_task(self, index: int, count: int, result, belief: Belief) -> None:
        self.reports.append(index)

    def report_heldout(self, index: int, result) -> None:
        self.heldout_reports.append(index)


def settings(tmp_path, **changes) -> SessionSettings:
    values = dict(partner=PARTNER, partner_id='partner', seed=0, num_tasks=3,
                  journal_dir=str(tmp_path / 'journal'),
                  summary_path=str(tmp_path / 'summary.json'))
    values.update(changes)
    return SessionSettings(**values)


def journal_events(tmp_path, session_id: str = SESSION) -> list[dict]:
    return SessionJournal(tmp_path / 'journal' / f'{session_id}.jsonl').events


def undisturbed(model, planner, tasks: int, **changes):
    return run_once(model, planner, ExperimentSettings(
        partner=PARTNER, runs=1, tasks=tasks, seed=0, jobs=1,
        estimator=EstimatorSettings(samples=SAMPLES), heldout=0, **changes), run=0)


def numbers(results) -> list[tuple]:
    return [(r.task_id, r.estimate, r.theta, r.corrections, r.robot_decisions, r.iou)
            for r in results]


def test_a_session_gives_the_numbers_of_cecm_experiment(model, planner, truth, tmp_path,
                                                         caplog):
    port = CorePort(model, planner, CoreEstimator(model, planner), truth)
    runner = SessionRunner(model, truth, port, LOG)
    end = runner.run(settings(tmp_path))
    assert end is not None and end.error == ''
    runner.conclude(end)
    assert numbers(end.results) == numbers(undisturbed(model, planner, 3))
    assert port.reports == [0, 1, 2]
    assert sorted(port.estimator.applied) == [(SESSION, i) for i in range(3)]
    assert [e['event'] for e in journal_events(tmp_path)] == \
        ['session', 'started', 'done', 'started', 'done', 'started', 'done', 'finished']
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['session_id'] == SESSION and len(summary['per_task']) == 3
    assert summary['interruptions'] == [] and summary['failed_tasks'] == []
    assert summary['report']['lines'] == ['known: what the test says']
    assert 'error' not in summary
    assert f"session {SESSION!r}: 3 tasks" in caplog.text
    assert 'session done: 3 tasks' in caplog.text
    # Finished: the next session is <id>-2, with new tasks.
    again = SessionRunner(model, truth, port, LOG).run(settings(tmp_path, num_tasks=1))
    assert again is not None and again.error == ''
    assert again.results[0].task_id not in [r.task_id for r in end.results]
    assert (f'{SESSION}-2', 0) in port.estimator.applied


def test_informative_choice_asks_the_ranking_again_after_a_lost_estimator(
        model, planner, truth, tmp_path, caplog):
    port = CorePort(model, planner, CoreEstimator(model, planner), truth)
    port.inject('rank_tasks', 'task-0-1', NodeLostError('rank_tasks: interrupted'), lost=True)
    runner = SessionRunner(model, truth, port, LOG)
    end = runner.run(settings(tmp_path, num_tasks=2, task_choice='informative', candidates=3))
    assert end is not None and end.error == ''
    expected = undisturbed(model, planner, 2, task_choice='informative', candidates=3)
    assert numbers(end.results) == numbers(expected)
    assert [(r.candidates, r.information) for r in end.results] == \
        [(r.candidates, r.information) for r in expected]
    assert 'the estimator was lost while it ranked the candidates' in caplog.text
    assert ('wait_graph_active', '[task 1/2]') in port.calls
    assert [c for c in port.calls if c[0] == 'rank_tasks'].__len__() == 3
    assert [e['candidates'] for e in journal_events(tmp_path) if e['event'] == 'started'] \
        == [3, 3]


def test_interrupted_tasks_run_again_and_a_task_s_own_failure_counts_failed(
        model, planner, truth, tmp_path, caplog):
    port = CorePort(model, planner, CoreEstimator(model, planner), truth)
    # Task 2: a node lost while it runs, then a peer that gave no answer in its update.
    port.inject('run_task', 'task-0-2', NodeLostError('run_task: interrupted'), lost=True)
    port.inject('update_belief', 'task-0-2', SessionError('estimate: no answer within 2 s'))
    # Task 3: its own failure while a node was lost (interrupted), then its own failure.
    port.inject('reset_world', 'task-0-3', TaskFailedError('reset_world failed: busy'),
                lost=True)
    port.inject('reset_world', 'task-0-3', TaskFailedError('reset_world failed: no such room'))
    # Task 4: interrupted more often than allowed.
    for _ in range(3):
        port.inject('run_task', 'task-0-4', RuntimeError('executor: disappeared'))
    runner = SessionRunner(model, truth, port, LOG)
    end = runner.run(settings(tmp_path, num_tasks=5, max_interruptions=2))
    assert end is not None and end.error == ''
    runner.conclude(end)
    assert [r.task_id for r in end.results] == ['task-0-1', 'task-0-2', 'task-0-5']
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert [(i['task_id'], i['attempt'], i['reason']) for i in summary['interruptions']] == [
        ('task-0-2', 1, 'a node was lost while the task ran'),
        ('task-0-2', 2, 'estimate: no answer within 2 s'),
        ('task-0-3', 1, 'reset_world failed: busy'),
        ('task-0-4', 1, 'executor: disappeared'),
        ('task-0-4', 2, 'executor: disappeared')]
    assert [(f['task_id'], f['interruptions'], f['reason']) for f in summary['failed_tasks']] \
        == [('task-0-3', 1, 'reset_world failed: no such room'),
            ('task-0-4', 2, 'interrupted 2 times; last: executor: disappeared')]
    # Every run had its own attempt number; each task was applied once, where it ran.
    assert len(set(port.attempts)) == len(port.attempts) == 1 + 3 + 2 + 3 + 1
    assert sorted(port.estimator.applied) == [(SESSION, 0), (SESSION, 1), (SESSION, 4)]
    assert port.estimator.updates == 3
    assert [r.task_index for r in end.results] == [0, 1, 4]
    assert port.reports == [0, 1, 4]
    assert '[task 3/5] task-0-3 failed: reset_world failed: no such room' in caplog.text


def test_a_stopped_session_resumes_from_its_journal_and_counts_no_task_twice(
        model, planner, truth, tmp_path, caplog):
    estimator = CoreEstimator(model, planner)   # the estimator node lives on
    first = CorePort(model, planner, estimator, truth)
    first.inject('run_task', 'task-0-2', SessionStoppedError('task_manager was deactivated'))
    runner = SessionRunner(model, truth, first, LOG)
    end = runner.run(settings(tmp_path))
    assert end is not None and end.error == 'task_manager was deactivated'
    runner.conclude(end)
    stopped = json.loads((tmp_path / 'summary.json').read_text())
    assert stopped['error'] == 'task_manager was deactivated'
    assert [t['task_id'] for t in stopped['tasks']] == ['task-0-1']
    # A task manager started anew (no journals in memory: they are on disk).
    second = CorePort(model, planner, estimator, truth)
    runner = SessionRunner(model, truth, second, LOG)
    end = runner.run(settings(tmp_path))
    assert end is not None and end.error == ''
    runner.conclude(end)
    assert f"resuming session {SESSION!r}: 1 tasks finished before, 1 applied" in caplog.text
    assert numbers(end.results) == numbers(undisturbed(model, planner, 3))
    assert ('reset_world', 'task-0-1') not in second.calls
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert [(i['task_id'], i['reason']) for i in summary['interruptions']] == \
        [('task-0-2', 'the task manager stopped during it')]
    assert sorted(estimator.applied) == [(SESSION, i) for i in range(3)]
    assert estimator.updates == 3
    started = [e['task_id'] for e in journal_events(tmp_path) if e['event'] == 'started']
    assert started == ['task-0-1', 'task-0-2', 'task-0-2', 'task-0-3']
    # The prior is the session's first, and its wall time counts from then.
    assert summary['prior'] == stopped['prior']


def test_an_outcome_applied_before_a_stop_is_sent_again_and_not_counted_again(
        model, planner, truth, tmp_path):
    estimator = CoreEstimator(model, planner)
    first = CorePort(model, planner, estimator, truth)
    # Stopped after the estimator applied task 2, before the journal says it is done.
    first.inject('first_plans', 'task-0-2', SessionStoppedError('task_manager was deactivated'))
    end = SessionRunner(model, truth, first, LOG).run(settings(tmp_path))
    assert end is not None and end.error
    assert sorted(estimator.applied) == [(SESSION, 0), (SESSION, 1)]
    second = CorePort(model, planner, estimator, truth)
    end = SessionRunner(model, truth, second, LOG).run(settings(tmp_path))
    assert end is not None and end.error == ''
    assert ('update_belief', 'task-0-2') in second.calls   # sent again ...
    assert estimator.updates == 3                          # ... and not counted again
    assert estimator.estimator.belief.tasks_seen == 3
    # The run again is planned under the updated belief (other corrections), but the
    # belief after each task is that of an undisturbed session.
    assert [(r.task_id, r.estimate, r.theta) for r in end.results] == \
        [(r.task_id, r.estimate, r.theta) for r in undisturbed(model, planner, 3)]


def test_tasks_the_belief_lost_run_again_and_a_journaled_failure_is_not_run_again(
        model, planner, truth, tmp_path, caplog):
    first = CorePort(model, planner, CoreEstimator(model, planner), truth)
    first.inject('reset_world', 'task-0-2', TaskFailedError('reset_world failed: no room'))
    first.inject('run_task', 'task-0-3', SessionStoppedError('task_manager was deactivated'))
    end = SessionRunner(model, truth, first, LOG).run(settings(tmp_path))
    assert end is not None and end.error
    # The estimator restarted with its store in memory: it holds nothing of the session.
    estimator = CoreEstimator(model, planner)
    second = CorePort(model, planner, estimator, truth)
    end = SessionRunner(model, truth, second, LOG).run(settings(tmp_path))
    assert end is not None and end.error == ''
    assert 'task-0-1: done before, but the belief does not hold it; it runs again' \
        in caplog.text
    assert [r.task_id for r in end.results] == ['task-0-1', 'task-0-3']
    assert ('reset_world', 'task-0-2') not in second.calls   # it failed: not run twice
    assert sorted(estimator.applied) == [(SESSION, 0), (SESSION, 2)]


def test_a_session_stopped_because_the_process_ends_writes_nothing(model, planner, truth,
                                                                  tmp_path):
    port = CorePort(model, planner, CoreEstimator(model, planner), truth)
    port.inject('reset_world', 'task-0-1', SessionStoppedError('the node is shutting down'))
    port.ending = True
    assert SessionRunner(model, truth, port, LOG).run(settings(tmp_path)) is None
    assert not (tmp_path / 'summary.json').exists()


def test_held_out_metrics_are_measured_beside_the_session(model, planner, truth, tmp_path,
                                                          caplog):
    port = CorePort(model, planner, CoreEstimator(model, planner), truth)
    heldout = HeldoutMetrics(model, truth, lambda: planner_for(model, workers=2), LOG)
    runner = SessionRunner(model, truth, port, LOG, [heldout])
    try:
        end = runner.run(settings(tmp_path, num_tasks=2, heldout_tasks=3))
        assert end is not None and end.error == ''
        runner.conclude(end)
    finally:
        heldout.close()
    assert [0.0 <= r.heldout_agreement <= 1.0 for r in end.results] == [True, True]
    assert sorted(port.heldout_reports) == [0, 1]
    metrics = [e for e in journal_events(tmp_path) if e['event'] == 'metrics']
    assert sorted(e['index'] for e in metrics) == [0, 1]
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['heldout_seed'] == 2**31 - 1
    assert isinstance(summary['identifiable_capabilities'], list)
    assert [0.0 <= t['heldout_agreement']['mean'] <= 1.0 for t in summary['per_task']] \
        == [True, True]
    assert 'held-out pool: planning 3 tasks' in caplog.text
    assert '[task 2/2] task-0-2: heldout=' in caplog.text


def test_closing_the_held_out_metrics_mid_plan_returns_promptly(caplog):
    """A cleanup of the task manager closes the metrics: it must not wait for the
    planner at work (a get_state then waited as long). Ten rooms: longer searches."""
    households = REPO / 'config' / 'households'
    model = load_domain('tidyup', household=households / 'tidyup_10_rooms.yaml',
                        capabilities=households / 'capabilities_10_rooms.yaml')
    truth = model.catalog.resolve(PARTNER)
    heldout = HeldoutMetrics(model, truth,
                             lambda: planner_for(model, workers=2, plan_cache=False), LOG)
    heldout.session_started(SessionSettings(partner=PARTNER, partner_id='p', seed=5,
                                            heldout_tasks=40))
    planner, warming = heldout.planner, heldout.warming
    assert planner is not None and warming is not None
    deadline = time.monotonic() + 120.0
    while planner.calls == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert planner.calls > 0 and warming.is_alive(), 'the pool was not being planned'
    started = time.perf_counter()
    heldout.close()
    took = time.perf_counter() - started
    closer = heldout.closer
    assert closer is not None
    closer.join(300.0)
    closed = time.perf_counter() - started
    print(f'close() returned after {took:.2f} s; the planner closed in the background '
          f'{closed:.2f} s after it')
    assert took < CLOSE_WAIT_S + 5.0, took
    assert not closer.is_alive() and not warming.is_alive()
    assert 'planned under the true capabilities' not in caplog.text
    assert 'failed' not in caplog.text
    assert not [t for t in threading.enumerate() if t.name.startswith('heldout')]
    # Closed for good: a later task measures nothing, and nothing plans again.
    heldout.task_finished(SessionJournal(), 0, '[task 1/1] t', _row(model), lambda: None)
    assert heldout.pending == [] and heldout.planner is None


def _row(model):
    from cecm_ros.experiments.experiment import TaskResult

    bits = '1' * len(model.catalog)
    return TaskResult(run=0, task_index=0, task_id='t', hamming=0.0, hamming_active=0.0,
                      correction_ratio=0.0, iou=1.0, infeasible_assigned=0,
                      accepted_samples=1, corrections=0, robot_decisions=1,
                      goal_reached=True, estimate=bits, truth=bits,
                      theta=' '.join(['1.0'] * len(model.catalog)), update_message='',
                      heldout_agreement=float(np.nan))
