"""task_manager: issues a session of tasks and reports how the belief evolves.

Per task: ``household_sim/reset_world`` -> TaskRequest on ``task/request`` ->
RunTask goal to ``executor/run_task`` (while recording the task's ``team_state``
trajectory) -> EstimateCapabilities goal to ``capability_estimator/estimate`` with the
outcome -> waits for the updated ``capability_belief`` -> logs one line with the
estimate's Hamming distance to the partner's TRUE capabilities (parameter
``partner``, used only for these metrics), corrections per robot decision, plan
overlap (robot's first plan vs the partner's plan) and infeasible actions assigned.
At the end it writes ``summary_path`` in the format of ``cecm experiment``.

Sessions survive faults. Each has an id (``session_id``, by default derived from the
partner and the seed), and every outcome sent to the estimator carries it with the
task's position, so that the estimator never counts a task twice. When a task fails
while the lifecycle manager reports a node lost or brought back
(``lifecycle_manager/graph_status``), or for a reason that is not the task's own (a peer
that did not answer in time, an internal error here or in the executor or estimator:
their results say ``retry``), the task counts as interrupted: once every node is active
again it is run again from its start state (at most ``max_interruptions`` times). A task
that fails for a reason of its own (no plan reaches its goal) is reported as failed and
the session goes on. A journal
(``journal_dir``) records what the session did, so that a task manager that is itself
restarted resumes the session where it stopped; without a journal it asks the
estimator which of the session's tasks it has applied.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np
from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
from lifecycle_msgs.msg import State
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.parameter import parameter_value_to_python

from cecm_ros.action import EstimateCapabilities, RunTask
from cecm_ros.core.domain import NOOP, Task
from cecm_ros.core.domain import JointPlan as CorePlan
from cecm_ros.core.errors import CecmError, InterruptedWorkError
from cecm_ros.core.estimator import NODE_PARAMETERS, settings_from_parameters
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.metrics import HeldoutPool
from cecm_ros.core.partners import steps_off_plan
from cecm_ros.core.tasks import TaskSequence, heldout_seed
from cecm_ros.domains import planner_for
from cecm_ros.experiments.experiment import TASK_CHOICES, add_heldout_metrics
from cecm_ros.msg import (
    CapabilityBelief,
    GraphStatus,
    JointPlan,
    TaskOutcome,
    TaskReport,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_HISTORY,
    QOS_LATCHED,
    QOS_TEAM_STATE,
    CecmNode,
    GoalRejectedError,
    SafeActionClient,
    StopRequestedError,
    WaitInterruptedError,
    existing_file,
    lower_priority,
    not_empty,
    ros_name,
    run_node,
)
from cecm_ros.session.records import (
    SessionJournal,
    estimate_distance,
    load_tasks,
    session_summary,
    session_task_result,
)
from cecm_ros.srv import RankTasks, ResetWorld, SessionProgress, StartTasks

ESTIMATOR_PARAMETERS = ('method', 'seed', *NODE_PARAMETERS)


class SessionError(Exception):
    """The session cannot go on; the message says why."""


class TaskFailedError(SessionError):
    """The task failed for a reason of its own (no plan reaches its goal, the world or the
    estimator refused it): running it again would fail again."""


class TaskManager(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('task_manager', **kwargs)
        self.declare_model_parameters()
        self.declare('num_tasks', 5, 'Tasks in a session (ignored with tasks_file)',
                     low=1, high=100_000)
        self.declare('seed', 0, "Seed of the domain's task generator", low=0, high=2**31 - 1)
        self.declare('tasks_file', '',
                     "YAML file with the tasks to run instead of generated ones ('' = generate)",
                     check=existing_file)
        self.declare('partner', 'low_capability',
                     "The simulated partner's TRUE type or vector; used ONLY to evaluate "
                     'and report metrics', check=self.partner_check())
        self.declare('partner_id', 'partner', 'Identifier of the partner put in TaskRequests',
                     check=not_empty)
        self.declare('session_id', '',
                     "Identifier of the session ('' = derived from partner_id and seed): a "
                     'restarted task manager resumes an unfinished session of that id, a '
                     'finished one is followed by <id>-2, <id>-3, ...')
        self.declare('journal_dir', '',
                     "Folder of the session journals ('~' is expanded; '' or 'none' = none: a "
                     'restarted task manager then resumes from what the estimator has '
                     'applied)')
        self.declare('task_choice', 'given',
                     "'given': run the tasks in their order; 'informative': run the most "
                     'informative of task_candidates candidates each time (asks '
                     'rank_service)', choices=TASK_CHOICES)
        self.declare('task_candidates', 5,
                     'Candidates per choice with informative task choice (generated: the '
                     'next task and more from a second generator; tasks_file: the next '
                     'remaining tasks of the file)', low=1, high=100)
        self.declare('rank_service', 'capability_estimator/rank_tasks',
                     'RankTasks service that scores candidate tasks', check=ros_name())
        self.declare('progress_service', 'capability_estimator/session_progress',
                     "SessionProgress service: which of a session's tasks are applied",
                     check=ros_name())
        self.declare('graph_status_topic', 'lifecycle_manager/graph_status',
                     "The lifecycle manager's GraphStatus ('' = no manager: every failed task "
                     'counts as failed)', check=ros_name(optional=True))
        self.declare('observer_nodes', ['web_panel'],
                     'Managed nodes that only show or relay what the others do: when the '
                     'lifecycle manager loses or heals one of them the running task goes on '
                     '(the loss of any other node interrupts it)',
                     ParameterType.PARAMETER_STRING_ARRAY)
        self.declare_plan_store()
        self.declare('heldout_tasks', 40,
                     'Held-out tasks on which the plan under each new estimate is compared '
                     'with the plan under the TRUE capabilities (metrics only; 0 = off)',
                     low=0, high=1000)
        self.declare('autostart_tasks', True,
                     'Start a session as soon as the node is active (else call ~/start)')
        self.declare('exit_when_done', False,
                     'Shut down (exit code 0, or 1 after a failed session) when done')
        self.declare('summary_path', '',
                     "Write the session summary (cecm experiment format) here ('' = none)")
        self.declare('reset_service', 'household_sim/reset_world', 'ResetWorld service',
                     check=ros_name())
        self.declare('run_task_action', 'executor/run_task', 'RunTask action server',
                     check=ros_name())
        self.declare('estimate_action', 'capability_estimator/estimate',
                     'EstimateCapabilities action server', check=ros_name())
        self.declare('estimator_node', 'capability_estimator',
                     'Node whose parameters (method, samples, ...) go into the summary',
                     check=ros_name())
        self.declare('partner_node', 'simulated_human',
                     'Simulated partner whose forgo_probability and partner_behaviour go '
                     "into the summary ('' = none, e.g. a real person)",
                     check=ros_name(optional=True))
        self.declare('wait_for_partner_plan', True,
                     'Before running a task, wait for the partner plan on human/joint_plan '
                     '(simulated partners publish one)')
        self.declare('server_wait_s', 30.0, 'How long to wait for services and action servers',
                     low=0.0, high=3600.0)
        self.declare('task_timeout_s', 600.0, 'How long one RunTask may take', low=1.0,
                     high=86_400.0)
        self.declare('estimate_timeout_s', 1800.0, 'How long one belief update may take',
                     low=1.0, high=86_400.0)
        self.declare('message_timeout_s', 30.0,
                     'How long to wait for a belief, partner plan or team state message, and for '
                     "the estimator's and partner's parameters (for the summary)",
                     low=0.1, high=3600.0)
        self.declare('max_interruptions', 10,
                     'How often one task may be interrupted and run again: by a lost node, '
                     'or a failure that is not its own (a peer that did not answer in time, '
                     'an internal error); a task that fails for a reason of its own (no '
                     'plan reaches its goal) is not run again', low=0, high=1000)
        self.declare('recovery_timeout_s', 300.0,
                     'How long to wait for the graph to be active again after an interruption',
                     low=1.0, high=86_400.0)
        self.declare('disturbance_grace_s', 6.0,
                     'After a failed task, how long to wait for the lifecycle manager to '
                     'report a lost node before calling the failure genuine', low=0.0,
                     high=600.0)
        self.running = False
        self.sessions = 0
        self.belief: CapabilityBelief | None = None
        self.states: dict[int, TeamState] = {}
        self.state_task = ''
        self.robot_plans: dict[str, JointPlan] = {}
        self.human_plans: dict[str, JointPlan] = {}
        self.start_timer = None
        self.graph: GraphStatus | None = None
        self.journals: dict[str, SessionJournal] = {}   # in memory when no journal_dir
        self.failed: list[dict] = []
        self.interruptions: list[dict] = []
        self.session_id = ''
        self.resume_requested = False
        # Every run of a task gets its own attempt number, also across restarts of this
        # node (a partner must never take a new run for the old one).
        self.runs = int.from_bytes(os.urandom(3), 'big') << 8
        # A running session blocks one executor thread for its whole length.
        self.session_group = MutuallyExclusiveCallbackGroup()

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        self.partner = self.param('partner')
        self.truth = self.model.catalog.resolve(self.partner)
        self.partner_id = self.param('partner_id')
        tasks_file = self.param('tasks_file')
        self.file_tasks = load_tasks(self.model, tasks_file) if tasks_file else None
        self.task_choice = self.param('task_choice')
        self.candidates = self.param('task_candidates')
        self.pool = None   # the held-out pool, built on first use (it plans)
        self.pool_warming = None   # the thread that plans its belief-free part ahead
        # The held-out metrics of finished tasks, worked off beside the next tasks.
        self.metrics_worker: ThreadPoolExecutor | None = None
        self.metrics_pending: list[Future] = []
        self.rank_client = self.create_client(RankTasks, self.param('rank_service'),
                                              callback_group=self.group)
        self.progress_client = self.create_client(SessionProgress,
                                                  self.param('progress_service'),
                                                  callback_group=self.group)
        self.reset_client = self.create_client(ResetWorld, self.param('reset_service'),
                                               callback_group=self.group)
        self.run_client = SafeActionClient(self, RunTask, self.param('run_task_action'),
                                       callback_group=self.group)
        self.estimate_client = SafeActionClient(self, EstimateCapabilities,
                                            self.param('estimate_action'),
                                            callback_group=self.group)
        self.request_pub = self.create_lifecycle_publisher(TaskRequest, 'task/request',
                                                           QOS_LATCHED)
        self.report_pub = self.create_lifecycle_publisher(TaskReport, '~/task_report',
                                                          QOS_HISTORY)
        self._entities = [
            self.rank_client, self.progress_client, self.reset_client, self.run_client,
            self.estimate_client, self.request_pub, self.report_pub,
            self.create_subscription(CapabilityBelief, 'capability_belief',
                                     self.guarded(self._on_belief, 'capability_belief'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_subscription(TeamState, 'team_state',
                                     self.guarded(self._on_team_state, 'team_state'),
                                     QOS_TEAM_STATE, callback_group=self.group),
            self.create_subscription(JointPlan, 'robot/joint_plan',
                                     self.guarded(self._on_robot_plan, 'robot/joint_plan'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_subscription(JointPlan, 'human/joint_plan',
                                     self.guarded(self._on_human_plan, 'human/joint_plan'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_service(StartTasks, '~/start',
                                self.guarded_service(self._on_start, 'start'),
                                callback_group=self.group),
        ]
        if self.param('graph_status_topic'):
            self._entities.append(self.create_subscription(
                GraphStatus, self.param('graph_status_topic'),
                self.guarded(self._on_graph_status, 'graph_status'), QOS_LATCHED,
                callback_group=self.group))
        source = (f'{len(self.file_tasks)} tasks from {tasks_file}' if self.file_tasks
                  else f'{self.param("num_tasks")} generated tasks (seed {self.param("seed")})')
        self.get_logger().info(f'{source}; partner {self.partner!r} lacks '
                               f'{self.model.catalog.describe_missing(self.truth)} (for metrics '
                               'only)')

    def activate(self) -> None:
        """The peers a session needs must be there before one starts."""
        peers = [(self.param('reset_service'), self.reset_client.service_is_ready),
                 (self.param('run_task_action'), self.run_client.server_is_ready),
                 (self.param('estimate_action'), self.estimate_client.server_is_ready),
                 (self.param('progress_service'), self.progress_client.service_is_ready)]
        if self.task_choice == 'informative':
            peers.append((self.param('rank_service'), self.rank_client.service_is_ready))
        self.wait_for_peers(peers, self.param('server_wait_s'))
        if self.param('autostart_tasks'):
            if self.running:
                # Reactivated (a resume) while the session stopped by the deactivation is
                # still winding down: it is continued as soon as it has stopped.
                self.resume_requested = True
            else:
                self._schedule(0)

    def deactivate(self) -> None:
        self._cancel_timer()

    def teardown(self) -> None:
        self._cancel_timer()
        worker, self.metrics_worker = getattr(self, 'metrics_worker', None), None
        if worker is not None:
            # A job at work stops at the pool's next check (it is no longer this node's).
            worker.shutdown(wait=False, cancel_futures=True)
        self.pool = None
        super().teardown()

    # ------------------------------------------------------------------- topics
    def _on_belief(self, msg: CapabilityBelief) -> None:
        """Only a well-formed, current belief about this session's partner is taken."""
        try:
            conv.estimate_from_belief_msg(self.model.catalog, msg)
            if msg.partner_id != self.partner_id:
                raise conv.MessageError(f'it is about partner {msg.partner_id!r}, the '
                                        f'session is about {self.partner_id!r}')
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring belief: {error}')
            return
        with self.locked():
            if self.belief is not None and conv.stamped_before(msg, self.belief):
                self.get_logger().warning(f'ignoring belief after {msg.tasks_seen} tasks: '
                                          'older than the one held (out of order)')
                return
            self.belief = msg
        self.notify()

    def _on_team_state(self, msg: TeamState) -> None:
        """Record the running task's states, as the executor keeps them: a duplicate
        changes nothing, another state for a step already recorded is refused, a new
        step 0 starts the recording over."""
        with self.locked():
            if msg.task_id != self.state_task:
                return
            held = self.states.get(msg.step)
        if held == msg:
            return
        try:
            conv.state_from_team_state(self.model, msg)
            if held is not None and msg.step > 0:
                raise conv.MessageError(f'step {msg.step} differs from the one recorded '
                                        'before (kept)')
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring team_state: {error}')
            return
        with self.locked():
            if msg.task_id != self.state_task:
                return
            if msg.step == 0:
                self.states.clear()
            self.states[msg.step] = msg
        self.notify()

    def _plan_is_valid(self, msg: JointPlan, topic: str) -> bool:
        try:
            conv.plan_from_msg(self.model, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring plan on {topic}: {error}')
            return False
        return True

    def _on_robot_plan(self, msg: JointPlan) -> None:
        if not self._plan_is_valid(msg, 'robot/joint_plan'):
            return
        with self.locked():
            self.robot_plans.setdefault(msg.task_id, msg)   # the first plan of a task
        self.notify()

    def _on_human_plan(self, msg: JointPlan) -> None:
        if not self._plan_is_valid(msg, 'human/joint_plan'):
            return
        with self.locked():
            # The first, as for the robot: a partner that re-plans mid-task (nobody
            # enforced its plan) publishes its plan again, with the steps taken in front.
            self.human_plans.setdefault(msg.task_id, msg)
        self.notify()

    def _on_graph_status(self, msg: GraphStatus) -> None:
        with self.locked():
            if self.graph is not None and conv.stamped_before(msg, self.graph):
                self.get_logger().warning('ignoring graph_status: older than the one held '
                                          '(out of order)')
                return
            self.graph = msg
        self.notify()

    # ------------------------------------------------------------------ sessions
    def _on_start(self, request: StartTasks.Request, response: StartTasks.Response):
        limit = self.describe_parameter('num_tasks').integer_range[0].to_value
        with self.locked():   # two requests at once start one session
            if not self.active:
                response.success, response.message = False, 'task_manager is not active'
            elif request.num_tasks > limit:
                response.success = False
                response.message = f'num_tasks {request.num_tasks} is more than {limit}'
            elif self.running:
                response.success, response.message = False, 'a session is already running'
            else:
                self._schedule(request.num_tasks)
                response.success, response.message = True, 'session started'
        return response

    def _schedule(self, num_tasks: int) -> None:
        """Run a session as an executor callback: a one-shot timer in its own group."""
        self.running = True
        self._cancel_timer()

        def start():
            with self.locked():
                if self.start_timer is None:
                    return   # already started (or deactivated meanwhile)
                self._cancel_timer()
            self._session(num_tasks)

        self.start_timer = self.create_timer(0.1, self.guarded(start, 'session'),
                                             callback_group=self.session_group)

    def _cancel_timer(self) -> None:
        if self.start_timer is not None:
            self.start_timer.cancel()
            self.destroy_timer(self.start_timer)
            self.start_timer = None

    def _open_session(self, num_tasks: int) -> tuple[str, int, SessionJournal,
                                                     dict[int, str]]:
        """The session to run: the first of <id>, <id>-2, ... that has not finished,
        its journal and the task ids the estimator has applied of it, by position."""
        tasks_file = self.param('tasks_file')
        base = self.param('session_id') or (
            f'{self.partner_id}-seed{self.param("seed")}'
            + (f'-{Path(tasks_file).stem}' if tasks_file else ''))
        planned = len(self.file_tasks) if self.file_tasks else num_tasks
        for ordinal in range(1, 10_000):
            session_id = base if ordinal == 1 else f'{base}-{ordinal}'
            journal = self._journal(session_id)
            applied = self._applied(session_id)
            if not journal.finished and (journal.events or len(applied) < planned):
                return session_id, ordinal, journal, applied
        raise SessionError(f'every session {base}-N is finished; give another session_id')

    def _journal(self, session_id: str) -> SessionJournal:
        directory = self._journal_dir()
        if not directory:
            return self.journals.setdefault(session_id, SessionJournal())
        safe = ''.join(ch if ch.isalnum() or ch in '-_.' else '_' for ch in session_id)
        return SessionJournal(Path(directory).expanduser() / f'{safe}.jsonl')

    def _journal_dir(self) -> str:
        directory = self.param('journal_dir').strip()
        return '' if directory in ('', 'none') else directory

    def _applied(self, session_id: str) -> dict[int, str]:
        response = self.call_service(self.progress_client,
                                     SessionProgress.Request(session_id=session_id),
                                     f'session {session_id}: progress',
                                     self.param('server_wait_s'), 30.0, resend_s=5.0)
        if not response.success:
            raise SessionError(f'session {session_id}: {response.message}')
        return dict(zip((int(i) for i in response.task_indices), response.task_ids))

    def _session_tasks(self, num_tasks: int, ordinal: int) -> TaskSequence:
        candidates = self.candidates if self.task_choice == 'informative' else 1
        seed = self.param('seed')
        if self.file_tasks is None:
            # A later session continues with new tasks (new ids) of the same seed.
            return TaskSequence(self.model, seed + (ordinal - 1) * 1_000_003,
                                count=num_tasks, candidates=candidates)
        tasks = list(self.file_tasks)
        if ordinal > 1:
            # Task ids must not repeat: the partner and executor key their state on them.
            tasks = [Task(f'{t.task_id}-r{ordinal}', t.initial, t.goal) for t in tasks]
        return TaskSequence(self.model, seed, tasks=tasks, candidates=candidates)

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
        request = RankTasks.Request(candidates=[
            conv.task_msg(t, self.partner_id, domain=self.model.name) for t in candidates])
        estimator = self.param('estimator_node')
        for _ in range(self.param('max_interruptions') + 1):
            before = self._graph_mark()
            try:
                # A ranking lost with an estimator that died is asked again once it is back.
                response = self.call_service(
                    self.rank_client, request, f'{label}: rank_tasks',
                    self.param('server_wait_s'), self.param('estimate_timeout_s'),
                    interrupt=lambda mark=before: self._graph_changed(mark, estimator),
                    resend_s=60.0)
                break
            except WaitInterruptedError:
                self.get_logger().warning(f'{label}: the estimator was lost while it ranked '
                                          'the candidates; asking again once it is back')
                self._wait_graph_active(label)
        else:
            raise SessionError(f'{label}: the candidates could not be ranked (the estimator '
                               'was lost every time)')
        if not response.success or response.best >= len(candidates):
            raise SessionError(f'{label}: the candidates could not be ranked: '
                               f'{response.message}')
        task = tasks.take(response.best)
        # Rounding can leave an uninformative choice a hair below zero ("-0.00 bits").
        information = max(0.0, float(response.information[response.best]))
        self.get_logger().info(f'{label}: chose {task.task_id} of {len(candidates)} '
                               f'candidates ({information:.2f} bits expected)')
        return task, len(candidates), information

    def _session(self, num_tasks: int) -> None:
        self.session_started = time.time()
        results, error, estimator = [], '', None
        self.failed, self.interruptions = [], []
        self.session_id = ''
        self.task_reports: dict[int, TaskReport] = {}
        try:
            count = num_tasks or self.param('num_tasks')
            self.session_id, ordinal, journal, applied = self._open_session(count)
            tasks = self._session_tasks(count, ordinal)
            resumed = sum(journal.result(i) is not None for i in range(len(tasks)))
            if resumed or applied:
                self.get_logger().info(
                    f'resuming session {self.session_id!r}: {resumed} tasks finished before, '
                    f'{len(applied)} applied to the belief')
            else:
                self.get_logger().info(f'session {self.session_id!r}: {len(tasks)} tasks')
            estimator = self._estimator_settings()
            self._warm_heldout_pool()
            self._report_prior(journal, len(tasks))
            for index in range(len(tasks)):
                label = f'[task {index + 1}/{len(tasks)}]'
                done = journal.result(index)
                if done is not None and index not in applied:
                    # The journal has it, the belief does not (an estimator that kept its
                    # store in memory was restarted): run it again for the belief.
                    self.get_logger().warning(f'{label} {done.task_id}: done before, but the '
                                              'belief does not hold it; it runs again')
                    done = None
                known = journal.chosen(index) or applied.get(index)
                task, offered, information = self._next_task(tasks, label, known)
                if done is not None:
                    results.append(done)
                    self._queue_heldout_metrics(journal, index, len(tasks), done)
                    continue
                failure = journal.failure(index)
                if failure is not None and index not in applied:
                    # It failed before the restart: it stays failed, and is not run twice.
                    self.failed.append({'task_index': index, 'task_id': task.task_id,
                                        'interruptions': failure.get('interruptions', 0),
                                        'reason': failure.get('reason', '')})
                    continue
                if journal.started_unfinished(index):
                    self._interrupted(journal, index, task, 1,
                                      'the task manager stopped during it')
                journal.append('started', index=index, task_id=task.task_id,
                               candidates=offered, information=information)
                result = self._run_with_retries(journal, index, len(tasks), task)
                if result is not None:
                    result.candidates, result.information = offered, round(information, 4)
                    journal.append('done', index=index, result=asdict(result))
                    results.append(result)
                    self._queue_heldout_metrics(journal, index, len(tasks), result)
            journal.append('finished')
        except StopRequestedError as stopped:
            if self.stopping.is_set():
                return   # the process is ending
            error = str(stopped)
            self.get_logger().warning(f'session stopped: {error}')
        except (SessionError, CecmError, RuntimeError) as failure:
            error = str(failure)
            self.get_logger().error(f'session stopped: {error}')
        except Exception as failure:  # noqa: BLE001 - report, summarise, exit as asked
            error = f'internal error: {failure!r}'
            self.get_logger().error(f'session stopped: {error}')
        finally:
            self.running = False
            if self.resume_requested and self.active and not self.stopping.is_set():
                self.resume_requested = False
                self._schedule(0)   # the session continues (resumed from its journal)
        wall = time.time() - self.session_started   # since the session began, restarts included
        if results:
            first, last = results[0], results[-1]
            self.get_logger().info(
                f'session done: {len(results)} tasks in {wall:.1f} s; hamming '
                f'{self.prior_hamming[0]:.2f} (prior) -> {last.hamming:.2f}, correction '
                f'ratio {first.correction_ratio:.2f} (task 1) -> {last.correction_ratio:.2f}'
                + (f'; {len(self.interruptions)} interruptions' if self.interruptions else '')
                + (f'; {len(self.failed)} failed tasks' if self.failed else ''))
            with self.locked():
                belief = self.belief
            for line in conv.report_lines(belief) if belief is not None else []:
                self.get_logger().info(f'[belief] {line}')
        self._wait_heldout_metrics()
        self._write_summary(results, estimator, wall, error)
        if self.param('exit_when_done'):
            self.exit_code = 1 if error else 0
            self.get_logger().info('exit_when_done: shutting down')
            self.finished.set_result(self.exit_code)

    # ------------------------------------------------------------- interruptions
    def _graph_mark(self) -> tuple | None:
        """What the graph looked like: (manager start, recoveries of every node)."""
        with self.locked():
            graph = self.graph
        if graph is None:
            return None
        started = (graph.manager_started.sec, graph.manager_started.nanosec)
        return started, tuple(n.recoveries for n in graph.nodes)

    def _graph_changed(self, before: tuple | None, node: str = '') -> bool:
        """A node (``node``, or any but the ``observer_nodes``) was lost or came back since
        ``before`` (a restarted manager counts from zero, so then any return is news)."""
        graph = self.graph
        if graph is None or not self.param('graph_status_topic'):
            return False
        now = self._graph_mark()
        if not node:
            if before is None or now[0] != before[0]:
                return True
            observers = self.param('observer_nodes')
            return not self._task_nodes_active(graph) or any(
                index >= len(before[1]) or now[1][index] != before[1][index]
                for index, entry in enumerate(graph.nodes) if entry.name not in observers)
        entries = [(i, n) for i, n in enumerate(graph.nodes) if n.name == node]
        if not entries:
            return False
        index, entry = entries[0]
        if not entry.responsive or before is None or now[0] != before[0]:
            return True
        return index < len(before[1]) and now[1][index] != before[1][index]

    def _task_nodes_active(self, graph: GraphStatus) -> bool:
        """The manager is up (not starting, paused or stopped) and every managed node but
        the observers is active and answers: ``all_active`` with the observers left out
        (an inactive observer makes the manager report 'recovering')."""
        observers = self.param('observer_nodes')
        return graph.mode in ('active', 'recovering') and all(
            entry.responsive and entry.state == State.PRIMARY_STATE_ACTIVE
            for entry in graph.nodes if entry.name not in observers)

    def _disturbed(self, before: tuple | None) -> bool:
        """Whether the graph lost a node since ``before``; waits up to
        ``disturbance_grace_s`` for the lifecycle manager to notice."""
        if not self.param('graph_status_topic'):
            return False
        return self.wait_until(lambda: self._graph_changed(before),
                               self.param('disturbance_grace_s'))

    def _wait_graph_active(self, label: str) -> None:
        if not self.param('graph_status_topic'):
            return   # no lifecycle manager to say so: run the task again at once
        timeout = self.param('recovery_timeout_s')
        if not self.wait_until(lambda: self.graph is not None
                               and self._task_nodes_active(self.graph), timeout):
            raise SessionError(f'{label}: the node graph was not active again within '
                               f'{timeout:g} s')

    def _interrupted(self, journal: SessionJournal, index: int, task: Task, attempt: int,
                     reason: str) -> None:
        record = {'task_index': index, 'task_id': task.task_id, 'attempt': attempt,
                  'reason': reason}
        self.interruptions.append(record)
        journal.append('interrupted', index=index, task_id=task.task_id, attempt=attempt,
                       reason=reason)
        self.get_logger().warning(f'[task {index + 1}] {task.task_id} interrupted ({reason}); '
                                  'it runs again from its start once the graph is active')

    def _all_interruptions(self) -> list[dict]:
        """The session's interruptions, also those before this node was restarted."""
        journal = self.journals.get(self.session_id)
        if self._journal_dir() and self.session_id:
            journal = self._journal(self.session_id)
        if journal is None:
            return list(self.interruptions)
        return [{'task_index': e['index'], 'task_id': e['task_id'], 'attempt': e['attempt'],
                 'reason': e['reason']} for e in journal.records('interrupted')]

    def _run_with_retries(self, journal: SessionJournal, index: int, count: int, task: Task):
        """Run a task; again from its start after each interruption; None if it failed.

        Only a failure of the task's own (TaskFailedError) counts as failed, and not even
        that when a node was lost meanwhile. Anything else (a node lost, a peer that did
        not answer in time on a busy machine, an internal error here or in a peer)
        interrupts the task, which runs again."""
        label = f'[task {index + 1}/{count}] {task.task_id}'
        interruptions = 0
        while True:
            before = self._graph_mark()
            self.runs = (self.runs + 1) % 2**32 or 1   # 0 names no run (Correction)
            try:
                return self._run_task(index, count, task, self.runs, before)
            except StopRequestedError:
                raise
            except WaitInterruptedError:
                failure, disturbed = RuntimeError('a node was lost while the task ran'), True
            except TaskFailedError as error:
                failure, disturbed = error, self._disturbed(before)
            except (SessionError, CecmError, RuntimeError) as error:
                failure, disturbed = error, True
            except Exception as error:  # noqa: BLE001 - an internal error of this node
                self.get_logger().debug(traceback.format_exc())
                failure, disturbed = RuntimeError(f'internal error: {error!r}'), True
            if disturbed and interruptions < self.param('max_interruptions'):
                interruptions += 1
                self._interrupted(journal, index, task, interruptions, str(failure))
                self._wait_graph_active(label)
                continue
            if disturbed:
                failure = RuntimeError(f'interrupted {interruptions} times; last: {failure}')
            self.get_logger().error(f'{label} failed: {failure}')
            self.failed.append({'task_index': index, 'task_id': task.task_id,
                                'interruptions': interruptions, 'reason': str(failure)})
            journal.append('failed', index=index, task_id=task.task_id,
                           interruptions=interruptions, reason=str(failure))
            return None

    def _estimator_settings(self) -> dict:
        """The estimator's (and partner's) parameters, for the summary."""
        values = {'method': 'cecm', 'seed': 0, **NODE_PARAMETERS, 'forgo_probability': 0.0}
        name = self.param('estimator_node')
        values.update(self._remote_parameters(name, ESTIMATOR_PARAMETERS))
        values['source'] = name if 'samples' in values else 'defaults'
        partner = self.param('partner_node')
        if partner:
            values.update(self._remote_parameters(partner, ('forgo_probability',
                                                            'partner_behaviour')))
        return values

    def _remote_parameters(self, name: str, keys) -> dict:
        """Parameters of another node (empty with a warning when it cannot be asked)."""
        client = self.create_client(GetParameters, f'{name}/get_parameters',
                                    callback_group=self.group)
        try:
            response = self.call_service(client, GetParameters.Request(names=list(keys)),
                                         f'reading the parameters of {name}',
                                         self.param('server_wait_s'),
                                         self.param('message_timeout_s'))
            if len(response.values) != len(keys):
                raise RuntimeError(f'{name} does not declare all of {list(keys)}')
            return {key: parameter_value_to_python(value)
                    for key, value in zip(keys, response.values)}
        except RuntimeError as error:
            self.get_logger().warning(f'{error}; the summary records defaults instead')
            return {}
        finally:
            self.destroy_client(client)

    def _report_prior(self, journal: SessionJournal, count: int) -> None:
        """The session's prior: the belief when it started, also after a restart (then
        from the journal, with the session's start time)."""
        recorded = journal.records('session')
        if recorded:
            first = recorded[0]
            self.prior_estimate = np.array([ch == '1' for ch in first['prior_estimate']])
            self.prior_hamming = tuple(first['prior_hamming'])
            self.session_started = float(first['time'])
            self.get_logger().info(
                f'[task 0/{count}] prior belief (when the session started): '
                f'hamming={self.prior_hamming[0]:.2f} (active {self.prior_hamming[1]:.2f})')
            return
        prior = self._wait_belief(0, 'the initial belief')
        estimate = conv.estimate_from_belief_msg(self.model.catalog, prior)
        self.prior_estimate = estimate
        self.prior_hamming = estimate_distance(self.model, estimate, self.truth)
        journal.append('session', prior_estimate=conv.vector_text(estimate),
                       prior_hamming=list(self.prior_hamming), tasks_seen=prior.tasks_seen)
        self.get_logger().info(
            f'[task 0/{count}] prior belief ({prior.method}, {prior.tasks_seen} tasks seen): '
            f'hamming={self.prior_hamming[0]:.2f} (active {self.prior_hamming[1]:.2f}) '
            f'estimate lacks {self.model.catalog.describe_missing(estimate)}')

    # ----------------------------------------------------------------- one task
    def _run_task(self, index: int, count: int, task: Task, attempt: int = 0,
                  before: tuple | None = None):
        label = f'[task {index + 1}/{count}] {task.task_id}'
        started = time.perf_counter()
        wait_s = self.param('server_wait_s')
        with self.locked():
            seen = self.belief.tasks_seen if self.belief else 0
            self.state_task = task.task_id
            self.states.clear()
            self.robot_plans.pop(task.task_id, None)
            self.human_plans.pop(task.task_id, None)
        request = conv.task_msg(task, self.partner_id, attempt, self.model.name)
        response = self.call_service(self.reset_client, ResetWorld.Request(task=request),
                                     f'{label}: reset_world', wait_s, 30.0, resend_s=5.0)
        if not response.success:
            raise TaskFailedError(f'{label}: reset_world failed: {response.message}')
        self.request_pub.publish(request)
        if self.param('wait_for_partner_plan') and not self.wait_until(
                lambda: task.task_id in self.human_plans, self.param('message_timeout_s')):
            self.get_logger().warning(f'{label}: no partner plan on human/joint_plan; '
                                      'running the task anyway')
        # A node lost while the task runs ends the run at once (the task runs again).
        status, run = self._send_when_accepted(
            self.run_client, self.param('run_task_action'), RunTask.Goal(task=request),
            f'{label}: run_task', self.param('task_timeout_s'),
            interrupt=lambda: self._graph_changed(before))
        if status != GoalStatus.STATUS_SUCCEEDED or not run.success:
            failure = TaskFailedError if status == GoalStatus.STATUS_SUCCEEDED or not \
                run.retry else SessionError
            raise failure(f'{label}: the executor did not finish the task: '
                          f'{run.message or _status_name(status)}')
        outcome = run.outcome
        trajectory = self._recorded_trajectory(label, task.task_id, outcome)
        self._check_partner_plan_followed(label, task.task_id, trajectory)
        estimate_goal = EstimateCapabilities.Goal(outcome=TaskOutcome(
            domain=self.model.name, task_id=task.task_id, partner_id=self.partner_id,
            session_id=self.session_id, task_index=index,
            goal_propositions=sorted(task.goal), trajectory=trajectory,
            robot_actions=outcome.robot_actions, corrections=outcome.corrections,
            goal_reached=outcome.goal_reached))
        # Only the estimator's own loss ends this wait: an update does not depend on the
        # other nodes, and a goal of a server that died is never answered.
        status, update = self._send_when_accepted(
            self.estimate_client, self.param('estimate_action'), estimate_goal,
            f'{label}: estimate', self.param('estimate_timeout_s'),
            interrupt=lambda: self._graph_changed(before, self.param('estimator_node')))
        if status != GoalStatus.STATUS_SUCCEEDED:
            failure = SessionError if update.retry else TaskFailedError
            raise failure(f'{label}: the belief update failed: '
                          f'{update.message or _status_name(status)}')
        belief = self._wait_belief(max(seen, update.belief.tasks_seen), 'the updated belief',
                                   fallback=update.belief)
        estimate = conv.estimate_from_belief_msg(self.model.catalog, belief)
        robot_plan, human_plan = self._plans(label, task.task_id)
        try:
            result = session_task_result(
                self.model, index, task, estimate, self.truth, robot_plan, human_plan,
                outcome.corrections, outcome.robot_actions, outcome.goal_reached,
                update.samples_accepted, update.message, theta=list(belief.theta),
                statuses=conv.report_from_belief_msg(belief))
        except InterruptedWorkError:
            raise StopRequestedError('task_manager is stopping') from None
        decided = f' decided={result.decided}' if belief.status else ''
        self.get_logger().info(
            f'{label}: hamming={result.hamming:.2f} (active {result.hamming_active:.2f})'
            f' corrections={result.corrections}/{result.robot_decisions} '
            f'iou={result.iou:.2f} infeasible={result.infeasible_assigned} '
            f'accepted={result.accepted_samples}{decided} steps={len(trajectory) - 1} '
            f'({time.perf_counter() - started:.1f} s); estimate lacks '
            f'{self.model.catalog.describe_missing(estimate)}')
        report = TaskReport(
            task_id=task.task_id, index=index + 1, count=count,
            corrections=result.corrections, robot_decisions=result.robot_decisions,
            iou=float(result.iou), hamming=float(result.hamming),
            hamming_active=float(result.hamming_active),
            heldout_agreement=float(result.heldout_agreement),
            accepted_samples=int(result.accepted_samples), decided=int(result.decided),
            status=list(belief.status), goal_reached=bool(result.goal_reached))
        report.header.stamp = self.stamp()
        self.report_pub.publish(report)
        self.task_reports[index] = report
        return result

    def _queue_heldout_metrics(self, journal: SessionJournal, index: int, count: int,
                               result) -> None:
        """The held-out metrics of a finished task (some hundred plans), worked off in
        the background at a low priority: the next task does not wait for them, only the
        summary does. They are journaled, logged, and sent as an updated task report."""
        pool = self._heldout_pool()
        if pool is None or not math.isnan(result.heldout_agreement):
            return
        with self.locked():
            if self.metrics_worker is None:
                self.metrics_worker = ThreadPoolExecutor(
                    1, thread_name_prefix='heldout_metrics', initializer=lower_priority)
            worker = self.metrics_worker
        label = f'[task {index + 1}/{count}] {result.task_id}'
        self.metrics_pending.append(
            worker.submit(self._heldout_metrics, pool, journal, index, label, result))

    def _heldout_metrics(self, pool: HeldoutPool, journal: SessionJournal, index: int,
                         label: str, result) -> None:
        try:
            add_heldout_metrics(self.model, pool, [result])
        except InterruptedWorkError:
            return
        except Exception as error:  # noqa: BLE001 - metrics only; the session goes on
            self.get_logger().warning(f'{label}: the held-out metrics failed: {error!r}')
            return
        journal.append('metrics', index=index, heldout_agreement=result.heldout_agreement,
                       hamming_identifiable=result.hamming_identifiable)
        self.get_logger().info(f'{label}: heldout={result.heldout_agreement:.2f} '
                               f'(identifiable hamming {result.hamming_identifiable:.2f})')
        report = self.task_reports.get(index)
        if report is not None and report.task_id == result.task_id and self.active:
            report.heldout_agreement = float(result.heldout_agreement)
            report.header.stamp = self.stamp()
            self.report_pub.publish(report)

    def _wait_heldout_metrics(self) -> None:
        """The summary needs every task's held-out metrics: wait for those queued."""
        pending, self.metrics_pending = self.metrics_pending, []
        if not pending or self.stopping.is_set():
            return
        started = time.perf_counter()
        for future in pending:
            try:
                future.result()
            except Exception:  # noqa: BLE001, S110 - logged by the job itself
                pass
        waited = time.perf_counter() - started
        if waited > 0.5:
            self.get_logger().info(f'held-out metrics of the session done {waited:.1f} s '
                                   'after its last task')

    def _send_when_accepted(self, client, name: str, goal, what: str, timeout_s: float,
                            interrupt=None):
        """Send an action goal. A server that rejects it for being busy still runs a goal
        that nobody waits for any more (a task manager that stopped sent it): that goal
        is canceled, and ours sent again, for up to server_wait_s."""
        deadline = time.monotonic() + self.param('server_wait_s')
        canceled = False
        while True:
            try:
                return self.send_action_goal(client, name, goal, what,
                                             self.param('server_wait_s'), timeout_s,
                                             interrupt=interrupt)
            except GoalRejectedError:
                if time.monotonic() >= deadline:
                    raise
                if not canceled:
                    canceled = self._cancel_all_goals(name, what)
                self.wait_until(lambda: False, 1.0)

    def _cancel_all_goals(self, name: str, what: str) -> bool:
        """Ask an action server to cancel all its goals (a zero goal id and stamp)."""
        client = self.create_client(CancelGoal, f'{name}/_action/cancel_goal',
                                    callback_group=self.group)
        try:
            response = self.call_service(client, CancelGoal.Request(), f'{what}: cancel',
                                         5.0, 10.0)
            self.get_logger().warning(f'{what}: {name} was busy with a goal nobody waits for; '
                                      f'canceled {len(response.goals_canceling)} goal(s)')
            return True
        except RuntimeError as error:
            self.get_logger().warning(f'{what}: could not cancel the goals of {name}: {error}')
            return False
        finally:
            self.destroy_client(client)

    def _heldout_pool(self) -> HeldoutPool | None:
        """The held-out pool of the metrics (its own planner; built on first use)."""
        size = self.param('heldout_tasks')
        if size <= 0:
            return None
        if self.pool is None:
            self.planner = planner_for(self.model, workers=2, **self.planner_options())
            # Plans shared between vectors only where the planner is cost-optimal (not
            # Overcooked's MCTS), as in `cecm experiment`.
            pool = HeldoutPool(self.model, evaluator_for('cecm', self.planner),
                               heldout_seed(self.param('seed')), size)
            # Stops at a deactivation, and for good once a new configuration replaced it.
            pool.interrupt = lambda: (self.stopping.is_set() or not self.active
                                      or self.pool is not pool)
            self.pool = pool
        return self.pool

    def _warm_heldout_pool(self) -> None:
        """Plan the held-out pool under the true vector and each of its single flips (the
        part of the metrics that does not depend on the belief, some 700 plans) while the
        first task runs, which mostly waits for answers, instead of after it."""
        pool = self._heldout_pool()
        warming = self.pool_warming
        if pool is None or (warming is not None and warming.is_alive()) or \
                pool.identifiable(self.truth, plan=False) is not None:
            return

        def warm() -> None:
            # Metrics only: at a low CPU priority (this thread, and the planner threads
            # and processes it starts), so that the first task's planning goes first.
            lower_priority()
            started = time.perf_counter()
            try:
                identifiable = pool.identifiable(self.truth)
            except InterruptedWorkError:
                return
            except Exception as error:  # noqa: BLE001 - the first task's metrics try again
                if self.active and not self.stopping.is_set():
                    self.get_logger().warning(f'planning the held-out pool ahead failed '
                                              f'({error}); the metrics plan it when needed')
                return
            if self.active and not self.stopping.is_set():
                self.get_logger().info(
                    f'held-out pool: {len(pool.tasks)} tasks (seed {pool.seed}) planned under '
                    f'the true capabilities and their single flips in '
                    f'{time.perf_counter() - started:.1f} s; {int(identifiable.sum())} '
                    'capabilities identifiable')

        self.get_logger().info(f'held-out pool: planning {len(pool.tasks)} tasks under the '
                               'true capabilities, beside the first task')
        self.pool_warming = threading.Thread(target=warm, name='heldout_pool', daemon=True)
        self.pool_warming.start()

    def _check_partner_plan_followed(self, label: str, task_id: str, trajectory) -> None:
        """CE-CM assumes the team followed the partner's plan (the partner enforces it).
        A simulated partner publishes that plan: say when the task went otherwise (nobody
        answered for a partner that leaves the answers to a person), since its evidence
        may then mislead the belief. Without a partner plan (a person) nothing is known."""
        with self.locked():
            msg = self.human_plans.get(task_id)
        if msg is None:
            return
        try:
            plan = conv.plan_from_msg(self.model, msg)
            executed = [(conv.canonical_action(self.model, s.robot_action or NOOP, 'robot'),
                         conv.canonical_action(self.model, s.human_action or NOOP, 'human'))
                        for s in trajectory[1:]]
        except conv.MessageError as error:
            self.get_logger().warning(f'{label}: cannot compare the steps taken with the '
                                      f"partner's plan: {error}")
            return
        off = steps_off_plan(plan, executed)
        if off:
            self.get_logger().warning(
                f"{label}: {off} of {max(len(executed), len(plan.steps))} steps were not the "
                "partner's plan: nobody enforced it (answer for a simulated partner). "
                "CE-CM assumes they were, so this task's evidence may mislead the belief")

    def _recorded_trajectory(self, label: str, task_id: str, outcome: TaskOutcome):
        """The team states 0..H this node recorded (H from the executor's outcome)."""
        last = len(outcome.trajectory) - 1
        complete = self.wait_until(lambda: all(s in self.states for s in range(last + 1)),
                                   self.param('message_timeout_s'))
        with self.locked():
            if complete:
                return [self.states[s] for s in range(last + 1)]
            missing = [s for s in range(last + 1) if s not in self.states]
        self.get_logger().warning(f'{label}: team_state of steps {missing} not received; '
                                  "using the executor's trajectory")
        return list(outcome.trajectory)

    def _wait_belief(self, tasks_seen: int, what: str, fallback=None) -> CapabilityBelief:
        def arrived() -> bool:
            return self.belief is not None and self.belief.tasks_seen >= tasks_seen

        if self.wait_until(arrived, self.param('message_timeout_s')):
            with self.locked():
                return self.belief
        if fallback is not None and fallback.capability_names:
            self.get_logger().warning(f'{what} did not arrive on capability_belief; using '
                                      'the one in the update result')
            return fallback
        raise SessionError(f'{what} did not arrive on capability_belief within '
                           f'{self.param("message_timeout_s"):g} s')

    def _plans(self, label: str, task_id: str) -> tuple[CorePlan, CorePlan]:
        with self.locked():
            robot, human = self.robot_plans.get(task_id), self.human_plans.get(task_id)
        plans = []
        for msg, topic in ((robot, 'robot/joint_plan'), (human, 'human/joint_plan')):
            if msg is None:
                self.get_logger().warning(f'{label}: no plan on {topic}; plan metrics treat '
                                          'it as empty')
                msg = JointPlan(task_id=task_id)
            plans.append(conv.plan_from_msg(self.model, msg))
        return plans[0], plans[1]

    # ------------------------------------------------------------------ summary
    def _write_summary(self, results, estimator: dict | None, wall: float, error: str) -> None:
        path = self.param('summary_path')
        if not path:
            return
        extra = {
            'source': 'cecm_ros node graph (task_manager)',
            'partner_id': self.partner_id,
            'session_id': self.session_id,
            'interruptions': self._all_interruptions(),
            'failed_tasks': list(self.failed),
            'estimator_parameters': estimator,
            'prior': {'hamming': self.prior_hamming[0], 'hamming_active': self.prior_hamming[1],
                      'estimate': conv.vector_text(self.prior_estimate)}
            if hasattr(self, 'prior_hamming') else None,
            'tasks': [{'task_id': r.task_id, 'estimate': r.estimate, 'truth': r.truth,
                       'status': r.status, 'corrections': r.corrections,
                       'robot_decisions': r.robot_decisions, 'goal_reached': r.goal_reached,
                       'candidates': r.candidates, 'information': r.information,
                       'update_message': r.update_message}
                      for r in results],
        }
        with self.locked():
            belief = self.belief
        if belief is not None and belief.status:
            extra['report'] = {
                'lines': conv.report_lines(belief),
                'status': dict(zip(belief.capability_names, belief.status)),
                'confounded_with': {name: others for name, others in
                                    zip(belief.capability_names, belief.confounded_with)
                                    if others}}
        # Only what is planned: a session that ended before the pool was (a stop, an
        # error in task 1) neither waits for it nor plans it now.
        identifiable = self.pool.identifiable(self.truth, plan=False) \
            if self.pool is not None else None
        if identifiable is not None:
            extra['identifiable_capabilities'] = [
                self.model.catalog.names[i] for i in np.flatnonzero(identifiable)]
            extra['heldout_seed'] = self.pool.seed
        if error:
            extra['error'] = error
        try:
            if results:
                settings = settings_from_parameters(
                    {key: estimator[key] for key in NODE_PARAMETERS},
                    self.model.default_epsilon)
                summary = session_summary(
                    self.model, self.partner, estimator['method'], self.param('seed'),
                    settings, results, wall, extra,
                    forgo_probability=float(estimator['forgo_probability']),
                    partner_behaviour=estimator.get('partner_behaviour') or None,
                    task_choice=self.task_choice,
                    candidates=self.candidates if self.task_choice == 'informative' else 1,
                    heldout=self.param('heldout_tasks'))
            else:
                summary = {'format': 'cecm_ros/experiment_summary/1', 'per_task': [], **extra}
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(summary, indent=1))
        except (OSError, CecmError, ValueError, KeyError, TypeError) as failure:
            self.get_logger().error(f'cannot write the summary to {path}: {failure}')
            return
        self.get_logger().info(f'summary written to {path}')


def _status_name(status: int) -> str:
    names = {GoalStatus.STATUS_ABORTED: 'aborted', GoalStatus.STATUS_CANCELED: 'canceled',
             GoalStatus.STATUS_SUCCEEDED: 'succeeded'}
    return f'goal {names.get(status, f"status {status}")}'


def main(args=None) -> int:
    return run_node(TaskManager, args)


if __name__ == '__main__':
    sys.exit(main())
