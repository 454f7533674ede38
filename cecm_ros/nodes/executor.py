"""executor: runs one task for the robot, step by step, with the partner's corrections.

RunTask action server ``executor/run_task``. For a task it asks the joint planner
(``plan_task``, under the current belief) for a joint plan and publishes it on
``robot/joint_plan``. Then, per joint step t, it announces its intended action on
``robot/intent``, waits up to ``correction_window_s`` for a Correction of step t on
``robot/correction`` (a confirmation ends the wait at once; silence is consent),
executes the corrected or intended action through the robot's ExecuteSkill server of
that kind, waits for the resulting ``team_state`` and publishes a StepResult. It
re-plans from the observed state after a correction and after its own skill failed (a
result with ``skill_failed``: the team goes on, the failed step is named in the outcome's
``robot_failed_steps``), and, after a step nobody answered,
when the world is not where the plan predicted (nobody enforced the partner's plan, or
the plan ran out before the goal). After ``partner_idle_steps`` such steps in a row in
which the partner left its part of the plan undone and nothing changed, it plans the
rest of the task for itself alone. It stops when the goal holds in the team state (success) or
after ``max_steps`` (abort).

With ``perception: events`` it takes ``observed_state`` reports (ObservedState, stamped
when seen, whenever perception sends them) instead of a ``team_state`` per step, turns
the changes seen after each robot step into the task's observed steps and publishes
them as ``team_state`` (:mod:`~cecm_ros.nodes.event_perception`).

The loop itself is the ROS-free :class:`~cecm_ros.session.task_execution.TaskExecution`;
this node is its :class:`~cecm_ros.session.task_execution.RobotPort`: parameters,
clients, topics and the action server.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle

from cecm_ros.action import ExecuteSkill, RunTask
from cecm_ros.core.domain import NOOP
from cecm_ros.core.domain import JointPlan as CorePlan
from cecm_ros.msg import (
    Correction,
    CorrectionStatus,
    JointPlan,
    ObservedState,
    RobotIntent,
    StepResult,
    TeamState,
)
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_EVENTS,
    QOS_LATCHED,
    QOS_TEAM_STATE,
    CecmNode,
    PeerUnavailableError,
    SafeActionClient,
    StopRequestedError,
    WaitInterruptedError,
    finish_goal,
    ros_name,
    run_node,
)
from cecm_ros.nodes.event_perception import PERCEPTION_MODES, EventPerception
from cecm_ros.nodes.skill_kinds import served_kinds
from cecm_ros.nodes.world_sim import DEFAULT_SKILLS
from cecm_ros.session.task_execution import (
    Answer,
    Seen,
    TaskAbortedError,
    TaskCanceledError,
    TaskExecution,
)
from cecm_ros.srv import PlanTask

# How long a lost robot/intent listener may take to return (or this node to be told to
# stop) before the loss is reported, and how often the count is looked at meanwhile.
LISTENER_GRACE_S = 3.0
LISTENER_POLL_S = 0.1


class Executor(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('executor', **kwargs)
        self.declare_model_parameters()
        self.declare('correction_window_s', 2.0,
                     'How long to wait for a Correction after announcing an intent; a '
                     'confirmation ends the wait early, silence means consent',
                     low=0.0, high=3600.0)
        self.declare('intent_subscribers', 1,
                     "Before a task's first intent, wait (up to correction_window_s) until "
                     'this many subscribers listen on robot/intent: 2 with a web_panel beside '
                     'the partner, which must not miss the intent', low=1, high=100)
        self.declare('intent_repeat_s', 5.0,
                     'While the world still waits for the partner at a step this long after '
                     'the intent, announce it again (a partner restarted in between missed '
                     'it); 0 = never', low=0.0, high=3600.0)
        self.declare('max_steps', 100, 'Joint steps after which a task is aborted',
                     low=1, high=conv.MAX_STEPS)
        self.declare('partner_idle_steps', 3,
                     'After this many unanswered steps in a row in which the partner left its '
                     'part of the plan undone and nothing changed, plan the rest of the task '
                     'for the robot alone; 0 = always wait for the partner', low=0,
                     high=conv.MAX_STEPS)
        for kind in DEFAULT_SKILLS:
            self.declare(f'skills.{kind}', f'robot/skills/{kind}',
                         f'ExecuteSkill action server that executes robot {kind!r} actions '
                         '(other kinds of a domain: robot/skills/<kind>)',
                         check=ros_name())
        self.declare('plan_service', 'plan_task', 'PlanTask service of the joint planner',
                     check=ros_name())
        self.declare('server_wait_s', 15.0,
                     'How long to wait for the planner service and skill servers (at '
                     'activation, and for one that went away)', low=0.0, high=3600.0)
        self.declare('plan_timeout_s', 120.0, 'How long to wait for a plan', low=0.1,
                     high=36_000.0)
        self.declare('skill_timeout_s', 120.0, 'How long to wait for one skill to finish',
                     low=0.1, high=36_000.0)
        self.declare('state_timeout_s', 10.0,
                     'How long to wait for the team_state of a step (and of step 0)',
                     low=0.1, high=3600.0)
        self.declare('perception', 'team_state',
                     "Where the robot sees the world: team_state (a world's state per joint "
                     'step) or events (ObservedState reports on observed_state_topic as the '
                     'world changes, republished as team_state; docs/robot.md)',
                     choices=PERCEPTION_MODES)
        self.declare('observed_state_topic', 'observed_state',
                     'With perception events: the ObservedState topic', check=ros_name())
        self.declare('observation_confirm', True,
                     'With perception events: a state perception reported only once that is '
                     'not the newest is a passing frame (a glitch, most often) and no step of '
                     'its own; for a perception that reports every so often, as a '
                     'perception stack does (false: every change is a step)')
        self.declare('observation_settle_s', 0.3,
                     'With perception events: how long after each robot skill to wait for '
                     'the reports of what it changed', low=0.0, high=60.0)
        self.goal_handle: ServerGoalHandle | None = None
        self.running = False   # a RunTask goal is accepted and not finished (under the lock)
        self.listeners_short = False   # fewer than intent_subscribers listen on robot/intent
        self.task_id = ''
        self.attempt = 0   # TaskRequest.attempt of the running task
        self.awaiting_step: int | None = None   # step whose correction window is open
        self.correction: Correction | None = None
        self.intent = NOOP
        self.partner_id = ''
        self.announced = RobotIntent()   # the running step's intent as announced
        self.task = None
        self.events: EventPerception | None = None   # perception: events

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        self.team_states = conv.TeamStates(self.model)
        self.window = self.param('correction_window_s')
        self.max_steps = self.param('max_steps')
        self.idle_limit = self.param('partner_idle_steps')
        self.alone_spec = ','.join(f'{name}=0' for name in self.model.catalog.names)
        self.server_wait = self.param('server_wait_s')
        self.skill_names = {
            kind: self.param(f'skills.{kind}') if kind in DEFAULT_SKILLS else
            f'robot/skills/{kind}' for kind in served_kinds(self.model, [])}
        self.skill_clients = {kind: SafeActionClient(self, ExecuteSkill, name,
                                                 callback_group=self.group)
                              for kind, name in self.skill_names.items()}
        self.plan_client = self.create_client(PlanTask, self.param('plan_service'),
                                              callback_group=self.group)
        self.intent_pub = self.create_lifecycle_publisher(RobotIntent, 'robot/intent',
                                                          QOS_EVENTS)
        self.step_pub = self.create_lifecycle_publisher(StepResult, 'robot/step_result',
                                                        QOS_EVENTS)
        self.plan_pub = self.create_lifecycle_publisher(JointPlan, 'robot/joint_plan',
                                                        QOS_LATCHED)
        # Every correction's verdict, for senders that show it (web_panel).
        self.status_pub = self.create_lifecycle_publisher(
            CorrectionStatus, 'robot/correction_status', QOS_EVENTS)
        self._entities = [
            self.plan_client, *self.skill_clients.values(), self.intent_pub, self.step_pub,
            self.plan_pub, self.status_pub,
            *self._perception_entities(),
            self.create_subscription(Correction, 'robot/correction',
                                     self.guarded(self._on_correction, 'robot/correction'),
                                     QOS_EVENTS, callback_group=self.group),
            ActionServer(self, RunTask, '~/run_task', execute_callback=self._execute,
                         goal_callback=self._on_goal, cancel_callback=self._on_cancel,
                         callback_group=self.group),
        ]
        self.get_logger().info(f'correction window {self.window:g} s, at most '
                               f'{self.max_steps} steps per task')

    def _perception_entities(self) -> list:
        """team_state from the world, or (perception: events) observed_state from the
        robot's perception and team_state published from it."""
        self.events = None
        if self.param('perception') == 'team_state':
            return [self.create_subscription(TeamState, 'team_state',
                                             self.guarded(self._on_team_state, 'team_state'),
                                             QOS_TEAM_STATE, callback_group=self.group)]
        publisher = self.create_lifecycle_publisher(TeamState, 'team_state', QOS_TEAM_STATE)
        self.events = EventPerception(self, publisher, self.param('observation_settle_s'),
                                      self.param('observation_confirm'))
        topic = self.param('observed_state_topic')
        return [publisher, self.create_subscription(
            ObservedState, topic, self.guarded(self._on_observed, topic), QOS_TEAM_STATE,
            callback_group=self.group)]

    def _on_observed(self, msg: ObservedState) -> None:
        try:
            self.events.on_observed(msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring observed_state: {error}')

    def activate(self) -> None:
        """The planner and every skill server must be there before tasks are taken."""
        peers = [(self.param('plan_service'), self.plan_client.service_is_ready)]
        peers += [(name, client.server_is_ready) for name, client in
                  ((self.skill_names[k], c) for k, c in self.skill_clients.items())]
        self.wait_for_peers(peers, self.server_wait)

    # ------------------------------------------------------------------- topics
    def _on_team_state(self, msg: TeamState) -> None:
        """Keep each step's state, by the rules every node keeps them
        (:class:`~cecm_ros.nodes.conversions.TeamStates`): the first state of a step
        is the one the robot acts on."""
        try:
            with self.locked():
                if not self.team_states.add(msg):
                    return
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring team_state: {error}')
            return
        self.notify()

    def _on_correction(self, msg: Correction) -> None:
        """Accept a correction (from anyone) for the step whose window is open. What it
        says is checked first (as the web panel checks it), so that an answer that says
        nothing is refused for that, whenever it comes."""
        answer = None
        corrected = intended = problem = ''
        try:
            corrected, intended = conv.correction_from_msg(self.model, msg)
        except conv.MessageError as error:
            problem = str(error)
        with self.locked():
            problem = problem or self._misplaced(msg, intended)
            if not problem:
                self.correction = answer = Correction(
                    header=msg.header, task_id=msg.task_id, attempt=self.attempt,
                    step=msg.step, intended_action=self.intent, corrected_action=corrected,
                    sender=msg.sender)
        shown = answer or msg
        self.status_pub.publish(CorrectionStatus(
            header=msg.header, task_id=msg.task_id, attempt=shown.attempt, step=msg.step,
            sender=msg.sender,
            intended_action=shown.intended_action, corrected_action=shown.corrected_action,
            accepted=answer is not None, reason=problem))
        if problem:
            self.get_logger().warning(
                f'ignoring correction from {conv.clipped(msg.sender) or "an unnamed sender"} '
                f'({conv.shown(msg.intended_action)} -> {conv.shown(msg.corrected_action)}): '
                f'{problem}')
        else:
            self.notify()

    def _misplaced(self, msg: Correction, intended: str) -> str:
        """Why a correction is no answer to the open step ('' when it is). Holds the
        lock."""
        task_id, attempt, step = self.task_id, self.attempt, self.awaiting_step
        if not task_id:
            return 'no task is running'
        if msg.task_id != task_id:
            return f'it is for task {msg.task_id!r}, the robot runs {task_id!r}'
        if msg.attempt and msg.attempt != attempt:
            # An answer to an intent of an earlier run of this task (or one typed for a
            # run not begun): its step numbers belong to that run.
            return (f'it is for attempt {msg.attempt} of task {task_id!r}, the robot runs '
                    f'attempt {attempt}')
        if step is None:
            return f'it is for step {msg.step}, but no correction window is open'
        if msg.step != step:
            return (f'it is for step {msg.step}, but the open correction window is for '
                    f'step {step}')
        if intended and intended != self.intent:
            return f'it corrects {intended}, but the robot announced {self.intent}'
        if self.correction is not None:
            return (f'step {step} already has an answer from '
                    f'{self.correction.sender or "someone"}')
        return ''

    # ------------------------------------------------------------------ actions
    def _on_goal(self, goal) -> GoalResponse:
        """One task at a time: the goal is reserved here, under the lock, so that two
        goals arriving together cannot both be accepted."""
        if not self.active:
            self.get_logger().warning('RunTask goal rejected: executor is not active')
            return GoalResponse.REJECT
        with self.locked():
            if self.running:
                self.get_logger().warning(f'RunTask goal for {goal.task.task_id!r} rejected: '
                                          f'task {self.task_id or "(starting)"} is running')
                return GoalResponse.REJECT
            self.running = True
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        # The goal becomes "canceling" only after this returns: wake the waits (which
        # check goal_handle.is_cancel_requested) just after that.
        threading.Timer(0.05, self.notify).start()
        return CancelResponse.ACCEPT

    def _execute(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        request = goal_handle.request.task
        with self.locked():
            self.goal_handle = goal_handle
            self.task_id, self.attempt = request.task_id, request.attempt
            # A task run again starts where it started; its steps come anew.
            self.team_states.restart(request.task_id)
            self.team_states.current = request.task_id
        result = RunTask.Result()
        try:
            task = conv.task_from_msg(self.model, request)
            self.get_logger().info(f'task {task.task_id}: started')
            result = self._run(task, request.partner_id)
            finish_goal(goal_handle.succeed if result.success else goal_handle.abort)
        except conv.MessageError as error:
            result.message = str(error)
            self.get_logger().warning(f'task {request.task_id!r} refused: {error}')
            finish_goal(goal_handle.abort)
        except TaskAbortedError as error:
            result.message, result.retry = str(error), error.retry
            self.get_logger().error(f'task {request.task_id!r} aborted: {error}'
                                    + ('; it may be run again' if error.retry else ''))
            finish_goal(goal_handle.abort)
        except (TaskCanceledError, WaitInterruptedError):
            result.message, result.retry = 'canceled', True
            self.get_logger().info(f'task {request.task_id}: canceled')
            finish_goal(goal_handle.canceled)
        except StopRequestedError as stopped:
            result.message, result.retry = f'task stopped: {stopped}', True
            # The process ending (Ctrl-C) is an orderly stop; a deactivation mid-task is
            # worth a warning.
            log = self.get_logger().info if self.stopping.is_set() else \
                self.get_logger().warning
            log(f'task {request.task_id!r}: {result.message}')
            finish_goal(goal_handle.abort)
        except Exception as error:  # noqa: BLE001 - abort with the reason, keep running
            # Nothing about the task says it cannot be done: whoever sent it runs it again.
            result.message, result.retry = f'internal error: {error!r}', True
            self.get_logger().error(f'task {request.task_id!r}: {result.message}; it may '
                                    'be run again')
            self.get_logger().debug(traceback.format_exc())
            finish_goal(goal_handle.abort)
        finally:
            with self.locked():
                self.goal_handle = None
                self.task_id, self.attempt = '', 0
                self.awaiting_step = None
                self.correction = None
                self.partner_id, self.announced = '', RobotIntent()
                self.running = False
        return result

    def _cancel_requested(self) -> bool:
        handle = self.goal_handle
        return handle is not None and handle.is_cancel_requested

    # ------------------------------------------- the task (TaskExecution's RobotPort)
    def _run(self, task, partner_id: str) -> RunTask.Result:
        self.partner_id, self.task = partner_id, task
        run = TaskExecution(self.model, self, self.get_logger(), self.max_steps,
                            self.idle_limit).run(task)
        if self.events is not None:
            self.get_logger().info(f'task {task.task_id}: perception as events: '
                                   f'{self.events.summary(task.task_id)}; '
                                   f'{run.skill_failures} robot skills failed')
        outcome = conv.outcome_msg(task, partner_id, run.trajectory, run.decisions,
                                   run.corrections, run.success, self.model.name,
                                   run.failed_steps)
        return RunTask.Result(outcome=outcome, success=run.success, message=run.message)

    def team_state(self, step: int) -> Seen:
        if self.events is not None:
            return self.events.start(self.task)
        msg = self._wait_state(self.task_id, step)
        return Seen(msg, conv.state_from_team_state(self.model, msg))

    def observe(self, step: int, action: str, skill) -> list[Seen]:
        if self.events is not None:
            return self.events.after_step(step, action, skill.state_changed)
        return [self.team_state(step + 1)]

    def plan(self, task, state, alone: bool) -> CorePlan:
        return self._plan(task, state, self.partner_id, alone)

    def wait_listeners(self) -> None:
        """An intent nobody hears is consent: give a partner's subscription a moment to
        match first (a robot working without a partner just goes ahead). Polled
        (_wait_ready): a subscription that DDS matches notifies nobody here, and a
        notified wait held the first intent for the whole window when the last listener
        matched a moment after the task started."""
        listeners = max(1, self.param('intent_subscribers'))
        self._wait_ready(lambda: self.intent_pub.get_subscription_count() >= listeners,
                         self.window)
        self._count_listeners(f'task {self.task_id}')

    def announce(self, step: int, intended: str) -> Answer | None:
        correction, self.announced = self._announce(self.task_id, self.attempt, step,
                                                    intended)
        return None if correction is None else Answer(correction.corrected_action,
                                                      correction.sender)

    def run_skill(self, step: int, action: str):
        return self._execute_skill(self.task_id, self.attempt, step, action, self.announced)

    def step_done(self, step: int, action: str, corrected: bool, skill, corrections: int
                  ) -> None:
        self.step_pub.publish(StepResult(
            header=_header(self.stamp()), task_id=self.task_id, step=step, action=action,
            corrected=corrected, state_changed=skill.state_changed, message=skill.message))
        if self.goal_handle is not None:
            self.goal_handle.publish_feedback(RunTask.Feedback(step=step + 1,
                                                               corrections=corrections))

    def check_cancel(self) -> None:
        if self._cancel_requested():
            raise TaskCanceledError()

    def _plan(self, task, state, partner_id: str, alone: bool = False) -> CorePlan:
        """A plan from ``state`` under the belief, or (``alone``) for a partner who does
        nothing."""
        request = PlanTask.Request(
            task=conv.task_msg(conv.task_from_state(task, self.model, state), partner_id,
                              domain=self.model.name),
            use_belief=True, capabilities=self.alone_spec if alone else '')
        try:
            response = self.call_service(self.plan_client, request,
                                         f'task {task.task_id}: planning', self.server_wait,
                                         self.param('plan_timeout_s'),
                                         interrupt=self._cancel_requested)
        except PeerUnavailableError as error:
            raise TaskAbortedError(str(error)) from None
        except WaitInterruptedError:
            raise TaskCanceledError() from None
        if not response.success:
            raise TaskAbortedError(f'the joint planner found no plan: {response.message}',
                                   retry=response.retry)
        try:
            plan = conv.plan_from_msg(self.model, response.plan, start=state)
        except conv.MessageError as error:
            raise TaskAbortedError(f'the joint planner sent a bad plan: {error}') from None
        self.plan_pub.publish(response.plan)
        self.get_logger().info(
            f'task {task.task_id}: plan of {len(plan.steps)} joint steps '
            f'{"for the robot alone" if alone else "under the belief"} '
            f'(robot {len(plan.actions_of("robot"))} actions, human '
            f'{len(plan.actions_of("human"))})')
        return plan

    def _announce(self, task_id: str, attempt: int, step: int, intended: str
                  ) -> tuple[Correction | None, RobotIntent]:
        """Publish the intent and wait for the partner's answer within the window; the
        answer (None for silence) and the intent as announced."""
        with self.locked():
            self.awaiting_step = step
            self.intent = intended
            self.correction = None
        intent = RobotIntent(header=_header(self.stamp()), task_id=task_id, attempt=attempt,
                             step=step, action=intended)
        self._count_listeners(f'step {step}')
        self.intent_pub.publish(intent)
        try:
            self.wait_until(lambda: self.correction is not None or self._cancel_requested(),
                            self.window)
        finally:
            with self.locked():
                correction, self.correction = self.correction, None
                self.awaiting_step = None
        self.check_cancel()
        return correction, intent

    def _count_listeners(self, where: str) -> None:
        """Say when fewer than intent_subscribers listen on robot/intent, at a task's start
        or in mid-task (a panel that is the only answerer restarting, say), once per loss,
        and when they are all back: until then an intent it would have answered passes
        as consent."""
        expected = max(1, self.param('intent_subscribers'))
        heard = self.intent_pub.get_subscription_count()
        short = heard < expected
        if short and not self.listeners_short:
            # A listener that left this instant may be one more process of a launch that
            # is stopping (every process gets the signal at once, and this node's own
            # stop reaches its callbacks a moment later): give it that moment, and say
            # nothing if this node stops meanwhile (StopRequestedError) or it comes back.
            deadline = time.monotonic() + LISTENER_GRACE_S
            while short and time.monotonic() < deadline:
                self.wait_until(lambda: False, LISTENER_POLL_S)
                heard = self.intent_pub.get_subscription_count()
                short = heard < expected
        if short and not self.listeners_short:
            self.get_logger().warning(
                f'{where}: {heard} of the {expected} expected subscribers listen on '
                'robot/intent; an intent they do not answer passes as consent')
        elif self.listeners_short and not short:
            self.get_logger().info(f'{where}: all {expected} expected subscribers listen on '
                                   'robot/intent again')
        self.listeners_short = short

    def _execute_skill(self, task_id: str, attempt: int, step: int, action: str,
                       announced: RobotIntent):
        """Run the robot's action; the world completes the step once the partner acts too.
        An intent is published once (volatile for the partner), so one that a partner
        restarted at that moment never heard is announced again while the step waits,
        marked as a repeat and with the first announcement's stamp: its window is over."""
        kind = conv.skill_kind(self.model, action)
        every = self.param('intent_repeat_s')
        last = [time.monotonic()]

        def interrupt() -> bool:
            if every > 0 and time.monotonic() - last[0] >= every:
                last[0] = time.monotonic()
                self.get_logger().info(f'step {step}: the world still waits for the partner; '
                                       'announcing the intent again')
                self.intent_pub.publish(RobotIntent(
                    header=announced.header, task_id=task_id, attempt=attempt, step=step,
                    action=announced.action, repeated=True))
            return self._cancel_requested()

        name = self.skill_names.get(kind)
        if name is None:
            raise TaskAbortedError(f'step {step}: no robot skill server for {kind!r} ({action})',
                                   retry=False)
        goal = ExecuteSkill.Goal(task_id=task_id, attempt=attempt, step=step, action=action)
        try:
            status, result = self.send_action_goal(
                self.skill_clients[kind], name, goal, f'step {step}: {action}',
                self.server_wait, self.param('skill_timeout_s'), interrupt=interrupt)
        except WaitInterruptedError:
            raise TaskCanceledError() from None
        except RuntimeError as error:
            raise TaskAbortedError(str(error)) from None
        if not result.success and not result.skill_failed:
            raise TaskAbortedError(f'step {step}: skill {name} failed on {action}: '
                              f'{result.message or f"status {status}"}')
        return result

    def _wait_state(self, task_id: str, step: int) -> TeamState:
        def arrived() -> bool:
            return step in self.team_states.steps(task_id) or self._cancel_requested()

        if not self.wait_until(arrived, self.param('state_timeout_s')):
            where = ('is the world reset for this task?' if step == 0
                     else 'the world applied no joint step')
            raise TaskAbortedError(f'no team_state for task {task_id} step {step} within '
                              f'{self.param("state_timeout_s"):g} s ({where})')
        self.check_cancel()
        with self.locked():
            return self.team_states.steps(task_id)[step]

    def diagnostic_values(self) -> dict:
        """/diagnostics: the task it runs, the step whose answer it awaits, the intent."""
        return {'task': self.task_id or 'none', 'attempt': self.attempt,
                'running': self.running,
                'awaiting_answer_for_step': 'none' if self.awaiting_step is None
                else self.awaiting_step,
                'intent': self.intent,
                'intent_listeners_short': self.listeners_short}


def _header(stamp):
    header = RobotIntent().header
    header.stamp = stamp
    return header


def main(args=None) -> int:
    return run_node(Executor, args)


if __name__ == '__main__':
    sys.exit(main())
