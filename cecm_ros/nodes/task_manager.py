"""task_manager: issues a session of tasks and reports how the belief evolves.

Per task: ``world_sim/reset_world`` -> TaskRequest on ``task/request`` ->
RunTask goal to ``executor/run_task`` (while recording the task's ``team_state``
trajectory) -> EstimateCapabilities goal to ``capability_estimator/estimate`` with the
outcome -> waits for the updated ``capability_belief`` -> logs one line with the
estimate's Hamming distance to the partner's TRUE capabilities (parameter
``partner``, used only for these metrics), corrections per robot decision, plan
overlap (robot's first plan vs the partner's plan) and infeasible actions assigned.
At the end it writes ``summary_path`` in the format of ``cecm experiment``.

Sessions survive faults: a task interrupted by a lost node, or by a failure that is not
its own (``retry``), runs again once the graph is active (``max_interruptions``); one
that fails on its own is reported failed; a journal (``journal_dir``) lets a restarted
task manager resume, and the estimator never counts a task twice.

The session itself (the loop, task choice, retries, journal, summary) is the ROS-free
:class:`~cecm_ros.session.runner.SessionRunner`, the held-out metrics its observer
(:mod:`cecm_ros.session.heldout`); this node is their GraphPort (parameters, clients,
topics, lifecycle), with the estimator's side in :mod:`cecm_ros.nodes.estimator_client`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import wraps

from action_msgs.msg import GoalStatus
from rcl_interfaces.msg import ParameterType
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from cecm_ros.action import RunTask
from cecm_ros.core.domain import JointPlan as CorePlan
from cecm_ros.core.domain import Task
from cecm_ros.domains import planner_for
from cecm_ros.experiments.experiment import TASK_CHOICES, TaskResult
from cecm_ros.msg import (
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
    SafeActionClient,
    StopRequestedError,
    WaitInterruptedError,
    existing_file,
    lower_priority,
    not_empty,
    ros_name,
    run_node,
)
from cecm_ros.nodes.estimator_client import (
    EstimatorClient,
    goal_status_name,
)
from cecm_ros.session.graph import (
    GraphView,
    Mark,
    graph_changed,
    graph_mark,
    task_nodes_active,
)
from cecm_ros.session.heldout import HeldoutMetrics
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
from cecm_ros.session.records import (
    SessionJournal,
    load_tasks,
    partner_plan_note,
    who_follows_no_plan,
)
from cecm_ros.session.runner import RunNumbers, SessionRunner, SessionSettings
from cecm_ros.srv import ResetWorld, StartTasks


def _port(method: Callable) -> Callable:
    """A GraphPort call: this node's waits end as the session runner knows."""
    @wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StopRequestedError as error:
            raise SessionStoppedError(str(error)) from None
        except WaitInterruptedError as error:
            raise NodeLostError(str(error)) from None
    return call


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
        self.declare('graph_status_topic', 'lifecycle_manager/graph_status',
                     "The lifecycle manager's GraphStatus ('' = no manager: every failed task "
                     'counts as failed)', check=ros_name(optional=True))
        self.declare('observer_nodes', ['web_panel'],
                     'Managed nodes that only show or relay what the others do: when the '
                     'lifecycle manager loses or heals one of them the running task goes on '
                     '(the loss of any other node interrupts it)',
                     ParameterType.PARAMETER_STRING_ARRAY)
        self.declare_plan_store()
        EstimatorClient.declare_parameters(self)
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
        self.declare('reset_service', 'world_sim/reset_world', 'ResetWorld service',
                     check=ros_name())
        self.declare('run_task_action', 'executor/run_task', 'RunTask action server',
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
        self.state_task = ''
        self.robot_plans: dict[str, JointPlan] = {}
        self.human_plans: dict[str, JointPlan] = {}
        self.played_by: str | None = None   # who_follows_no_plan, asked when needed
        self.task_reports: dict[int, TaskReport] = {}
        self.start_timer = None
        self.graph: GraphStatus | None = None
        # The process's, not a configuration's: a reconfigured node resumes from memory
        # (no journal_dir), and numbers its runs on.
        self.journals: dict[str, SessionJournal] = {}
        self.runs = RunNumbers()
        self.heldout: HeldoutMetrics | None = None
        self.resume_requested = False
        # A running session blocks one executor thread for its whole length.
        self.session_group = MutuallyExclusiveCallbackGroup()

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        self.team_states = conv.TeamStates(self.model, kept=1)
        self.partner = self.param('partner')
        self.truth = self.model.catalog.resolve(self.partner)
        self.partner_id = self.param('partner_id')
        tasks_file = self.param('tasks_file')
        self.file_tasks = load_tasks(self.model, tasks_file) if tasks_file else None
        self.task_choice = self.param('task_choice')
        self.candidates = self.param('task_candidates')
        self.heldout = HeldoutMetrics(
            self.model, self.truth,
            lambda: planner_for(self.model, workers=2, **self.planner_options()),
            self.get_logger(), wanted=lambda: self.active and not self.stopping.is_set(),
            ending=self.stopping.is_set, background=lower_priority)
        self.runner = SessionRunner(self.model, self.truth, self, self.get_logger(),
                                    [self.heldout], self.journals, self.runs)
        self.estimator = EstimatorClient(self, self.model, self.partner_id)
        self.reset_client = self.create_client(ResetWorld, self.param('reset_service'),
                                               callback_group=self.group)
        self.run_client = SafeActionClient(self, RunTask, self.param('run_task_action'),
                                           callback_group=self.group)
        self.request_pub = self.create_lifecycle_publisher(TaskRequest, 'task/request',
                                                           QOS_LATCHED)
        self.report_pub = self.create_lifecycle_publisher(TaskReport, '~/task_report',
                                                          QOS_HISTORY)
        self._entities = [
            *self.estimator.entities, self.reset_client, self.run_client, self.request_pub,
            self.report_pub,
            self.create_subscription(TeamState, 'team_state',
                                     self.guarded(self._on_team_state, 'team_state'),
                                     QOS_TEAM_STATE, callback_group=self.group),
            *(self.create_subscription(JointPlan, topic, self._first_plan(plans, topic),
                                       QOS_LATCHED, callback_group=self.group)
              for topic, plans in (('robot/joint_plan', self.robot_plans),
                                   ('human/joint_plan', self.human_plans))),
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
                 *self.estimator.peers(ranking=self.task_choice == 'informative')]
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
        heldout, self.heldout = self.heldout, None
        if heldout is not None:
            # Never waits for a plan under way (a get_state would wait meanwhile).
            heldout.close()
        super().teardown()

    # ------------------------------------------------------------------- topics
    def _on_team_state(self, msg: TeamState) -> None:
        """Record the running task's states by the rules the executor keeps them by
        (:class:`~cecm_ros.nodes.conversions.TeamStates`). Its record starts at its own
        reset of the world: a step 0 sent again, even with a new stamp, starts nothing
        over."""
        try:
            with self.locked():
                if msg.task_id != self.state_task or not self.team_states.add(msg):
                    return
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring team_state: {error}')
            return
        self.notify()

    def _first_plan(self, plans: dict[str, JointPlan], topic: str) -> Callable:
        """A callback that keeps the first well-formed plan of each task on ``topic``: a
        partner that re-plans mid-task (nobody enforced its plan) publishes its plan
        again, with the steps taken in front."""
        def keep(msg: JointPlan) -> None:
            try:
                conv.plan_from_msg(self.model, msg)
            except conv.MessageError as error:
                self.get_logger().warning(f'ignoring plan on {topic}: {error}')
                return
            with self.locked():
                plans.setdefault(msg.task_id, msg)
            self.notify()
        return self.guarded(keep, topic)

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

    def _session(self, num_tasks: int) -> None:
        runner = self.runner   # a reconfiguration meanwhile makes another
        try:
            end = runner.run(self._settings(), num_tasks)
        finally:
            # A new session may start while this one's summary waits for its metrics.
            self.running = False
            if self.resume_requested and self.active and not self.stopping.is_set():
                self.resume_requested = False
                self._schedule(0)   # the session continues (resumed from its journal)
        if end is None:
            return   # the process is ending
        runner.conclude(end)
        if self.param('exit_when_done'):
            self.exit_code = 1 if end.error else 0
            self.get_logger().info('exit_when_done: shutting down')
            self.finished.set_result(self.exit_code)

    def _settings(self) -> SessionSettings:
        journal_dir = self.param('journal_dir').strip()
        return SessionSettings(
            partner=self.partner, partner_id=self.partner_id, seed=self.param('seed'),
            num_tasks=self.param('num_tasks'), tasks_file=self.param('tasks_file'),
            file_tasks=tuple(self.file_tasks) if self.file_tasks is not None else None,
            task_choice=self.task_choice, candidates=self.candidates,
            session_id=self.param('session_id'),
            journal_dir='' if journal_dir in ('', 'none') else journal_dir,
            max_interruptions=self.param('max_interruptions'),
            heldout_tasks=self.param('heldout_tasks'), summary_path=self.param('summary_path'))

    # ------------------------------------------------------------- the graph
    def _graph_view(self) -> GraphView | None:
        with self.locked():
            msg = self.graph
        return None if msg is None else conv.graph_view_from_msg(msg)

    def graph_mark(self) -> Mark | None:
        return graph_mark(self._graph_view())

    def _graph_changed(self, before: Mark | None, node: str = '') -> bool:
        if not self.param('graph_status_topic'):
            return False
        return graph_changed(self._graph_view(), before, self.param('observer_nodes'), node)

    @_port
    def disturbed(self, mark: Mark | None) -> bool:
        """Whether the graph lost a node since ``mark``; waits up to
        ``disturbance_grace_s`` for the lifecycle manager to notice."""
        if not self.param('graph_status_topic'):
            return False
        return self.wait_until(lambda: self._graph_changed(mark),
                               self.param('disturbance_grace_s'))

    @_port
    def settle(self, seconds: float) -> None:
        self.wait_until(lambda: False, seconds)

    @_port
    def wait_graph_active(self, label: str) -> None:
        topic = self.param('graph_status_topic')
        if not topic:
            return
        if self._graph_view() is None and not self.count_publishers(topic):
            return   # no lifecycle manager to say so: go on at once
        # A manager that activated this node publishes its status latched, but DDS may
        # deliver it a moment after the session starts; a run begun without it would be
        # taken as disturbed when it comes (graph_changed with no mark), and run again.
        timeout = self.param('recovery_timeout_s')
        def active() -> bool:
            graph = self._graph_view()
            return graph is not None and task_nodes_active(graph, self.param('observer_nodes'))

        if not self.wait_until(active, timeout):
            raise SessionError(f'{label}: the node graph was not active again within '
                               f'{timeout:g} s')

    # ------------------------------------------------- the session's calls (GraphPort)
    def closing(self) -> bool:
        return self.stopping.is_set()

    @_port
    def applied_tasks(self, session_id: str) -> dict[int, str]:
        return self.estimator.applied_tasks(session_id)

    @_port
    def estimator_settings(self) -> dict:
        """The estimator's (and partner's) parameters, for the summary."""
        values = {**self.estimator.read_settings(), 'forgo_probability': 0.0}
        partner = self.param('partner_node')
        if partner:
            values.update(self._remote_parameters(partner, ('forgo_probability',
                                                            'partner_behaviour',
                                                            'partner_search')))
        return values

    def _remote_parameters(self, name: str, keys) -> dict:
        return self.read_parameters(name, keys, self.param('server_wait_s'),
                                    self.param('message_timeout_s'),
                                    'the summary records defaults instead')

    def current_belief(self) -> Belief | None:
        return self.estimator.current_belief()

    @_port
    def initial_belief(self) -> Belief:
        return self.estimator.wait_belief(0, 'the initial belief')

    @_port
    def rank_tasks(self, label: str, candidates: Sequence[Task]) -> Ranking:
        before = self.graph_mark()
        estimator = self.param('estimator_node')
        return self.estimator.rank_tasks(
            label, candidates, interrupt=lambda: self._graph_changed(before, estimator))

    @_port
    def reset_world(self, label: str, task: Task, attempt: int) -> None:
        with self.locked():   # the task's team states and plans are recorded from now on
            self.state_task = self.team_states.current = task.task_id
            self.team_states.forget(task.task_id)
            self.robot_plans.pop(task.task_id, None)
            self.human_plans.pop(task.task_id, None)
        request = conv.task_msg(task, self.partner_id, attempt, self.model.name)
        response = self.call_service(self.reset_client, ResetWorld.Request(task=request),
                                     f'{label}: reset_world', self.param('server_wait_s'),
                                     30.0, resend_s=5.0)
        if not response.success:
            raise TaskFailedError(f'{label}: reset_world failed: {response.message}')

    @_port
    def run_task(self, label: str, task: Task, attempt: int, mark: Mark | None) -> TaskRun:
        request = conv.task_msg(task, self.partner_id, attempt, self.model.name)
        self.request_pub.publish(request)
        if self.param('wait_for_partner_plan') and not self.wait_until(
                lambda: task.task_id in self.human_plans, self.param('message_timeout_s')):
            self.get_logger().warning(f'{label}: no partner plan on human/joint_plan; '
                                      'running the task anyway')
        # A node lost while the task runs ends the run at once (the task runs again).
        status, run = self.send_goal_when_accepted(
            self.run_client, self.param('run_task_action'), RunTask.Goal(task=request),
            f'{label}: run_task', self.param('server_wait_s'), self.param('task_timeout_s'),
            interrupt=lambda: self._graph_changed(mark))
        if status != GoalStatus.STATUS_SUCCEEDED or not run.success:
            failure = TaskFailedError if status == GoalStatus.STATUS_SUCCEEDED or not \
                run.retry else SessionError
            raise failure(f'{label}: the executor did not finish the task: '
                          f'{run.message or goal_status_name(status)}')
        outcome = run.outcome
        trajectory = self._recorded_trajectory(label, task.task_id, outcome)
        self._check_partner_plan_followed(label, task.task_id, trajectory)
        return TaskRun(corrections=outcome.corrections, robot_decisions=outcome.robot_actions,
                       goal_reached=outcome.goal_reached, steps=len(trajectory) - 1,
                       evidence=(outcome, trajectory))

    @_port
    def update_belief(self, label: str, task: Task, index: int, session_id: str, run: TaskRun,
                      mark: Mark | None, seen: int) -> BeliefUpdate:
        outcome, trajectory = run.evidence
        # Only the estimator's own loss ends this wait: an update does not depend on the
        # other nodes, and a goal of a server that died is never answered.
        return self.estimator.update_belief(
            label, task, index, session_id, outcome, trajectory, seen,
            interrupt=lambda: self._graph_changed(mark, self.param('estimator_node')))

    def _recorded_trajectory(self, label: str, task_id: str, outcome: TaskOutcome):
        """The team states 0..H this node recorded (H from the executor's outcome)."""
        last = len(outcome.trajectory) - 1
        steps = range(last + 1)
        complete = self.wait_until(
            lambda: all(s in self.team_states.steps(task_id) for s in steps),
            self.param('message_timeout_s'))
        with self.locked():
            held = self.team_states.steps(task_id)
            if complete:
                return [held[s] for s in steps]
            missing = [s for s in steps if s not in held]
        self.get_logger().warning(f'{label}: team_state of steps {missing} not received; '
                                  "using the executor's trajectory")
        return list(outcome.trajectory)

    def _check_partner_plan_followed(self, label: str, task_id: str, trajectory) -> None:
        """Say when the task went otherwise than the simulated partner's published plan
        (:func:`~cecm_ros.session.records.partner_plan_note`); without one (a person)
        nothing is known."""
        with self.locked():
            msg = self.human_plans.get(task_id)
        if msg is None:
            return
        try:
            plan = conv.plan_from_msg(self.model, msg)
            executed = conv.executed_steps(self.model, trajectory)
        except conv.MessageError as error:
            self.get_logger().warning(f'{label}: cannot compare the steps taken with the '
                                      f"partner's plan: {error}")
            return
        if self.played_by is None:   # asked of the partner node once
            partner = self.param('partner_node')
            values = self._remote_parameters(partner, ('partner_behaviour',)) if partner \
                else {}
            self.played_by = who_follows_no_plan(str(values.get('partner_behaviour', '')))
        warn, line = partner_plan_note(label, plan, executed, self.played_by)
        if line:
            (self.get_logger().warning if warn else self.get_logger().info)(line)

    def first_plans(self, label: str, task: Task) -> tuple[CorePlan, CorePlan]:
        with self.locked():
            robot = self.robot_plans.get(task.task_id)
            human = self.human_plans.get(task.task_id)
        plans = []
        for msg, topic in ((robot, 'robot/joint_plan'), (human, 'human/joint_plan')):
            if msg is None:
                self.get_logger().warning(f'{label}: no plan on {topic}; plan metrics treat '
                                          'it as empty')
                msg = JointPlan(task_id=task.task_id)
            plans.append(conv.plan_from_msg(self.model, msg))
        return plans[0], plans[1]

    def report_task(self, index: int, count: int, result: TaskResult, belief: Belief) -> None:
        report = TaskReport(
            task_id=result.task_id, index=index + 1, count=count,
            corrections=result.corrections, robot_decisions=result.robot_decisions,
            iou=float(result.iou), hamming=float(result.hamming),
            hamming_active=float(result.hamming_active),
            heldout_agreement=float(result.heldout_agreement),
            accepted_samples=int(result.accepted_samples), decided=int(result.decided),
            status=list(belief.status), goal_reached=bool(result.goal_reached))
        report.header.stamp = self.stamp()
        self.report_pub.publish(report)
        self.task_reports[index] = report

    def report_heldout(self, index: int, result: TaskResult) -> None:
        report = self.task_reports.get(index)
        if report is not None and report.task_id == result.task_id and self.active:
            report.heldout_agreement = float(result.heldout_agreement)
            report.header.stamp = self.stamp()
            self.report_pub.publish(report)


def main(args=None) -> int:
    return run_node(TaskManager, args)


if __name__ == '__main__':
    sys.exit(main())
