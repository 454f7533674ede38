"""world_sim: the simulated world of any domain, advanced in lockstep joint steps.

The world is the core :class:`~cecm_ros.core.simulator.WorldSimulator` with the
self-loop rule, run with the human's TRUE capabilities (parameter ``partner``).
Both agents act through ExecuteSkill action servers, one per agent and skill kind
(``robot/skills/pick``, ``human/skills/wait``, ...). A goal names the joint step it
is for (task, run of the task and step); the world waits until it holds one action
from each agent for the current step, applies the joint step (human first, then
robot), publishes ``team_state`` and then completes both goals.
``<node>/reset_world`` starts a task (step 0). The node is ``world_sim`` in every graph;
the executable ``household_sim`` is its deprecated first name.

The world a robot meets (each off by default; core/world_conditions.py): with
``perception_missed`` / ``perception_spurious`` the ``team_state`` it publishes is what a
noisy perception reports, while ``world_state`` always carries the world as it is (what a
simulated partner, who sees the room, acts on); with ``skill_failure`` a robot action's
skill fails now and then: the world applies only the partner's action, the robot's goal
ends aborted with ``skill_failed`` and the team_state says ``robot_failed``. The noise
draws from ``world_seed`` and the task, never from an estimator's stream.

``lockstep: false`` is a world in which each agent acts at its own pace: a skill goal is
applied on its own (the other agent does nothing meanwhile) once its time has passed, a
robot skill ``robot_skill_s`` and a partner's action ``partner_pace_low`` to
``partner_pace_high`` times that (seeded); the goal's step is not checked. There are no
joint steps, so no ``team_state``: perception reports ``observed_state`` (ObservedState)
each time the world changes, through the noise above, each report up to
``perception_delay_s`` late (so reports overtake each other) and sent twice with
probability ``perception_repeat``. The executor takes them with ``perception: events``
and a partner acts on its own with ``paced_partner``.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time

from rcl_interfaces.msg import ParameterType
from rclpy.action import ActionServer, CancelResponse, GoalResponse

from cecm_ros.action import ExecuteSkill
from cecm_ros.core.domain import HUMAN, ROBOT
from cecm_ros.core.simulator import SKILL_FAILED, WorldSimulator
from cecm_ros.core.world_conditions import (
    LOCKSTEP_WORLD_SETTINGS,
    WORLD_SETTING_HELP,
    WORLD_SETTINGS,
    PartnerPace,
    Perception,
    ReportTiming,
    SkillFailures,
    WorldConditions,
)
from cecm_ros.msg import ObservedState, TeamState
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    ALL_SKILLS,
    EXECUTOR_THREADS,
    QOS_TEAM_STATE,
    CecmNode,
    StopRequestedError,
    ros_name,
    run_node,
)
from cecm_ros.nodes.skill_kinds import served_kinds
from cecm_ros.srv import ResetWorld

# TidyUP's skill kinds, whose robot servers the executor names by parameter.
DEFAULT_SKILLS = ['move', 'pick', 'place', 'wash', conv.WAIT]
LATE_REPORT_TICK_S = 0.02   # how often a paced world sends the reports whose delay is over
MIN_PERIOD_S = 0.05         # the shortest perception_period_s (0 is off)
# The settings of a world at its own pace, and their defaults: set with lockstep true,
# they are said to apply to nothing.
PACED_DEFAULTS = {'partner_pace_low': 0.0, 'partner_pace_high': 0.0, 'robot_skill_s': 1.0,
                  'perception_delay_s': 0.0, 'perception_repeat': 0.0}
PACED_ONLY = tuple(PACED_DEFAULTS)


class WorldSim(CecmNode):
    def __init__(self, node_name: str = 'world_sim', **kwargs):
        super().__init__(node_name, **kwargs)
        self.declare_model_parameters()
        self.declare('partner', 'low_capability',
                     "The simulated human's TRUE capabilities: a partner type name or a "
                     'vector spec name=0,name=1,... (over all ones)',
                     check=self.partner_check())
        self.declare('robot_skill_namespace', 'robot/skills',
                     'Namespace of the robot skill action servers (<namespace>/<kind>)',
                     check=ros_name(suffix='/move'))
        self.declare('human_skill_namespace', 'human/skills',
                     'Namespace of the human skill action servers (<namespace>/<kind>)',
                     check=ros_name(suffix='/move'))
        self.declare('skills', [ALL_SKILLS],
                     'Skill kinds served for each agent: kinds of the domain (its action '
                     'schemas) and "wait" for noop; [all] = all of them',
                     ParameterType.PARAMETER_STRING_ARRAY, check=self.skills_check())
        self.declare('step_timeout_s', 60.0,
                     "How long a skill goal waits for the other agent's action of the same "
                     'step before it is aborted (0 = wait forever)', low=0.0, high=3600.0)
        self.declare('max_parked_goals', 4,
                     'Skill goals that may wait for their step at once (a step needs two); '
                     "more are rejected, so waiting goals never take all of the node's "
                     f'{EXECUTOR_THREADS} executor threads', low=2, high=EXECUTOR_THREADS - 2)
        for name in LOCKSTEP_WORLD_SETTINGS:
            self.declare(name, 0.0, WORLD_SETTING_HELP[name][0].upper() +
                         WORLD_SETTING_HELP[name][1:] + ' (0 = off)', low=0.0, high=0.99)
        self.declare('lockstep', True,
                     'Joint steps in lockstep (true), or each agent at its own pace: a skill '
                     'applied alone once its time passed, perception on observed_state')
        for name in WORLD_SETTINGS:
            if name not in LOCKSTEP_WORLD_SETTINGS:
                self.declare(name, 0.0, 'With lockstep false: ' + WORLD_SETTING_HELP[name],
                             low=0.0, high=100.0)
        self.declare('robot_skill_s', 1.0, 'With lockstep false: how long a robot skill '
                     'takes (a partner action: partner_pace_low..high times it)', low=0.01,
                     high=600.0)
        self.declare('perception_delay_s', 0.0, 'With lockstep false: the longest an '
                     'observed_state report reaches the robot after it was seen (uniform; '
                     '0 = at once)', low=0.0, high=60.0)
        self.declare('perception_repeat', 0.0, 'With lockstep false: chance that a report '
                     'is sent twice', low=0.0, high=0.99)
        self.declare('perception_period_s', 1.0, 'With lockstep false: perception also '
                     'reports the world this often when nothing changed, as a perception '
                     'stack that keeps looking does (each report seen afresh, through the '
                     'noise); 0 = only on a change', low=0.0, high=600.0,
                     check=_period_check)
        self.declare('world_seed', 0, 'Seed of the perception noise and the skill failures '
                     '(with the task and its attempt)', low=0, high=2**31 - 1)
        self.world: WorldSimulator | None = None
        self.perception: Perception | None = None
        self.failures: SkillFailures | None = None
        self.task = None
        self.attempt = 0             # TaskRequest.attempt of the task's current run
        self.generation = 0          # incremented by every reset; stale goals abort
        self.pending: dict[str, str] = {}
        self.outcomes: dict[int, tuple] = {}
        self._cancel_requested: set[bytes] = set()
        self.parked = 0   # skill goals accepted and not finished
        self.late_reports = []
        self._report_order = itertools.count()   # ties of the late reports' heap

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        spec = self.param('partner')
        self.truth = self.model.catalog.resolve(spec)
        self.step_timeout = self.param('step_timeout_s') or None
        self.lockstep = self.param('lockstep')
        self.conditions = WorldConditions(**{
            name: self.param(name) for name in
            (LOCKSTEP_WORLD_SETTINGS if self.lockstep else WORLD_SETTINGS)})
        skills = served_kinds(self.model, self.param('skills'))
        # A lockstep world's perception reports each joint step (team_state), a paced
        # world's the changes as they happen (observed_state).
        self.perception_pub = self.create_lifecycle_publisher(
            TeamState if self.lockstep else ObservedState,
            'team_state' if self.lockstep else 'observed_state', QOS_TEAM_STATE)
        self.world_state_pub = self.create_lifecycle_publisher(
            TeamState, 'world_state', QOS_TEAM_STATE)
        self.pace: PartnerPace | None = None
        self.timing: ReportTiming | None = None
        self.late_reports: list[tuple[float, int, int, ObservedState]] = []   # a heap
        self._entities = []
        if not self.lockstep:
            # One timer sends the reports whose delay is over (those of a world reset
            # since are dropped), another reports the world again now and then.
            self._entities.append(self.create_timer(
                LATE_REPORT_TICK_S, self.guarded(self._send_due, 'late reports'),
                callback_group=self.group))
            if self.param('perception_period_s') > 0:
                self._entities.append(self.create_timer(
                    self.param('perception_period_s'),
                    self.guarded(self._report_again, 'perception_period_s'),
                    callback_group=self.group))
        else:
            unused = [name for name in PACED_ONLY if self.param(name) != PACED_DEFAULTS[name]]
            if unused:
                self.get_logger().warning(f'{", ".join(unused)} set, but lockstep is true: '
                                          'they apply only with lockstep false')
        self._entities[:0] = [self.perception_pub, self.world_state_pub, self.create_service(
            ResetWorld, '~/reset_world', self.guarded_service(self._on_reset, 'reset_world'),
            callback_group=self.group)]
        for agent, namespace in ((ROBOT, self.param('robot_skill_namespace')),
                                 (HUMAN, self.param('human_skill_namespace'))):
            for kind in skills:
                name = f'{namespace.rstrip("/")}/{kind}'
                self._entities.append(ActionServer(
                    self, ExecuteSkill, name,
                    execute_callback=self._executor_for(agent, kind),
                    goal_callback=self._on_goal, cancel_callback=self._on_cancel,
                    callback_group=self.group))
        self.get_logger().info(
            f'domain {self.model.describe()}, human capabilities '
            f'{spec!r} (lacks {self.model.catalog.describe_missing(self.truth)}); skills '
            f'{", ".join(skills)} for robot and human; world: {self.conditions}'
            + ('' if self.lockstep else f'; each agent at its own pace (robot skill '
               f'{self.param("robot_skill_s"):g} s), perception on observed_state'))

    def deactivate(self) -> None:
        with self.locked():
            self.generation += 1   # abort goals waiting for a partner action
            self.pending.clear()
            self.late_reports.clear()
        self.notify()

    def teardown(self) -> None:
        self.deactivate()
        super().teardown()
        self.world = None

    # -------------------------------------------------------------------- reset
    def _on_reset(self, request: ResetWorld.Request, response: ResetWorld.Response):
        if not self.active:
            response.success, response.message = False, f'{self.get_name()} is not active'
            return response
        try:
            task = conv.task_from_msg(self.model, request.task)
        except conv.MessageError as error:
            self.get_logger().warning(f'reset_world rejected: {error}')
            response.success, response.message = False, str(error)
            return response
        start = self.model.initial_state(task)
        with self.locked():
            self.generation += 1
            self.task, self.attempt = task, request.task.attempt
            self.world = WorldSimulator(self.model, self.truth, start)
            # Each run of a task draws afresh (an attempt is another run of the world).
            stream = f'{task.task_id}#{self.attempt}'
            self.perception = Perception(self.model, self.conditions,
                                         self.param('world_seed'), stream)
            self.failures = SkillFailures(self.conditions.skill_failure,
                                          self.param('world_seed'), stream)
            if not self.lockstep:
                self.pace = PartnerPace(self.conditions, self.param('world_seed'), stream) \
                    if self.conditions.paced else None
                self.timing = ReportTiming(self.param('perception_delay_s'),
                                           self.param('perception_repeat'),
                                           self.param('world_seed'), stream)
            self.pending.clear()
            self.outcomes.clear()
            self._publish_state(task.task_id, 0, start)
        self.notify()
        self.get_logger().info(f'world reset for task {task.task_id} '
                               f'({len(task.goal)} goal propositions)')
        response.success = True
        response.message = f'world reset for task {task.task_id}'
        return response

    # ------------------------------------------------------------------- skills
    def _on_goal(self, goal) -> GoalResponse:
        # Validation happens in execute, so that a refusal reaches the client as an
        # aborted goal with a message (a rejection carries none). Only the number of
        # goals held at once is decided here, under the lock.
        if not self.active:
            return GoalResponse.REJECT
        with self.locked():
            if self.parked >= self.param('max_parked_goals'):
                self.get_logger().warning(
                    f'skill goal {goal.action!r} for step {goal.step} rejected: '
                    f'{self.parked} goals are waiting already (max_parked_goals)')
                return GoalResponse.REJECT
            self.parked += 1
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        with self.locked():
            self._cancel_requested.add(bytes(goal_handle.goal_id.uuid))
        self.notify()
        return CancelResponse.ACCEPT

    def _executor_for(self, agent: str, kind: str):
        def execute(goal_handle):
            try:
                return self._execute(agent, kind, goal_handle)
            except StopRequestedError as stopped:
                return _finish(goal_handle, 'abort', str(stopped))
            except Exception as error:  # noqa: BLE001 - never crash the executor
                self.get_logger().error(f'{agent}/{kind}: {error}')
                return _finish(goal_handle, 'abort', f'internal error: {error}')
            finally:
                with self.locked():
                    self.parked = max(0, self.parked - 1)
        return execute

    def _check_goal(self, agent: str, kind: str, goal) -> tuple[str, str]:
        """(canonical action, '') or ('', reason the goal cannot run). Holds the lock."""
        if self.world is None or self.task is None:
            return '', f'no task: call {self.get_name()}/reset_world first'
        if goal.task_id != self.task.task_id:
            return '', (f'goal is for task {goal.task_id!r} but the world runs task '
                        f'{self.task.task_id!r}')
        if goal.attempt != self.attempt:
            # Sent during an earlier (or later) run of this task: its step numbers
            # belong to that run.
            return '', (f'goal is for attempt {goal.attempt} of task {goal.task_id} but '
                        f'the world runs attempt {self.attempt}')
        step = len(self.world.trajectory) - 1
        if self.lockstep and goal.step != step:
            return '', (f'goal is for step {goal.step} but the world is at step {step} of '
                        f'task {self.task.task_id}')
        try:
            action = conv.canonical_action(self.model, goal.action, agent, f'{agent} action')
        except conv.MessageError as error:
            return '', str(error)
        wanted = conv.skill_kind(self.model, action)
        if wanted != kind:
            return '', f'{action} is a {wanted!r} skill, sent to the {kind!r} server'
        if agent in self.pending:
            return '', (f'the {agent} already sent {self.pending[agent]} for step {step}')
        return action, ''

    def _execute(self, agent: str, kind: str, goal_handle):
        if not self.lockstep:
            return self._execute_alone(agent, kind, goal_handle)
        goal = goal_handle.request
        with self.locked():
            action, problem = self._check_goal(agent, kind, goal)
            if problem:
                self.get_logger().warning(f'{agent} skill {kind!r} refused: {problem}')
                return _finish(goal_handle, 'abort', problem)
            generation, step = self.generation, goal.step
            self.pending[agent] = action
            if len(self.pending) == 2:
                self._apply_step()
        self.notify()
        uuid = bytes(goal_handle.goal_id.uuid)

        def settled() -> bool:
            return (self.generation != generation or step in self.outcomes
                    or uuid in self._cancel_requested)

        done = self.wait_until(settled, self.step_timeout)
        with self.locked():
            self._cancel_requested.discard(uuid)
            if self.generation == generation and step in self.outcomes:
                robot, human = self.outcomes[step]
                outcome = robot if agent == ROBOT else human
                message = outcome.reason or 'applied'
                if outcome.reason == SKILL_FAILED:
                    return _finish(goal_handle, 'abort', f'{message} (simulated: '
                                   'skill_failure)', skill_failed=True)
                return _finish(goal_handle, 'succeed', message, outcome.changed)
            if self.generation == generation and self.pending.get(agent) == action:
                del self.pending[agent]   # withdrawn: the step has not happened
            other = HUMAN if agent == ROBOT else ROBOT
            if self.generation != generation:
                reason = 'the world was reset or deactivated before the step happened'
            elif done:
                return _finish(goal_handle, 'canceled', f'{action} canceled before step {step}')
            else:
                reason = (f'no {other} action for step {step} within '
                          f'{self.step_timeout:g} s')
        self.get_logger().warning(f'{agent} {action} aborted: {reason}')
        return _finish(goal_handle, 'abort', reason)

    def _apply_step(self) -> None:
        """Both actions are in: apply the joint step and publish the new state."""
        step = len(self.world.trajectory) - 1
        robot_action, human_action = self.pending[ROBOT], self.pending[HUMAN]
        failed = self.failures is not None and self.failures.fails(robot_action)
        robot, human = self.world.step(robot_action, human_action, failed)
        self.pending.clear()
        self.outcomes[step] = (robot, human)
        self._publish_state(self.task.task_id, step + 1, self.world.state, robot_action,
                            human_action, failed)
        loops = [f'{o.agent} {o.action} self-loops ({o.reason})'
                 for o in (human, robot) if o.self_loop and o.reason != SKILL_FAILED]
        if failed:
            loops.append("the robot's skill failed (simulated: skill_failure)")
        self.get_logger().info(
            f'task {self.task.task_id} step {step}: human {human_action}, robot '
            f'{robot_action}' + ('; ' + '; '.join(loops) if loops else ''))


    def _execute_alone(self, agent: str, kind: str, goal_handle):
        """A world at its own pace: the action is applied alone once its time passed."""
        goal = goal_handle.request
        with self.locked():
            action, problem = self._check_goal(agent, kind, goal)
            if problem:
                self.get_logger().warning(f'{agent} skill {kind!r} refused: {problem}')
                return _finish(goal_handle, 'abort', problem)
            generation = self.generation
            self.pending[agent] = action
            duration = self.param('robot_skill_s')
            if agent == HUMAN and self.pace is not None:
                duration *= self.pace.duration()
        uuid = bytes(goal_handle.goal_id.uuid)
        interrupted = self.wait_until(lambda: self.generation != generation or
                                      uuid in self._cancel_requested, duration)
        with self.locked():
            self._cancel_requested.discard(uuid)
            if self.generation != generation:
                reason = 'the world was reset or deactivated before the action was done'
                self.get_logger().warning(f'{agent} {action} aborted: {reason}')
                return _finish(goal_handle, 'abort', reason)
            self.pending.pop(agent, None)
            if interrupted:
                return _finish(goal_handle, 'canceled', f'{action} canceled')
            failed = agent == ROBOT and self.failures.fails(action)
            before = self.world.state
            robot, human = self.world.step(action if agent == ROBOT else None,
                                           action if agent == HUMAN else None, failed)
            outcome = robot if agent == ROBOT else human
            step = len(self.world.trajectory) - 1
            self._publish_state(self.task.task_id, step, self.world.state,
                                action if agent == ROBOT else '',
                                action if agent == HUMAN else '', failed,
                                changed=self.world.state != before)
        self.notify()
        self.get_logger().info(f'task {self.task.task_id}: {agent} {action} after '
                               f'{duration:.2f} s' + (f' ({outcome.reason})' if
                                                      outcome.reason else ''))
        if failed:
            return _finish(goal_handle, 'abort', f'{SKILL_FAILED} (simulated: skill_failure)',
                           skill_failed=True)
        return _finish(goal_handle, 'succeed', outcome.reason or 'applied', outcome.changed)

    def _publish_state(self, task_id: str, step: int, state, robot_action: str = '',
                       human_action: str = '', failed: bool = False,
                       changed: bool = True) -> None:
        """The world as it is on ``world_state``, as perception reports it on
        ``team_state`` (the same without perception noise), or in a world at its own
        pace on ``observed_state`` when it changed."""
        stamp = self.stamp()
        if not self.lockstep:
            self.world_state_pub.publish(conv.team_state_msg(
                self.model, task_id, step, state, robot_action=robot_action,
                human_action=human_action, stamp=stamp, robot_failed=failed))
            if changed:
                self._report(task_id, self.perception.see(state), stamp)
            return
        for publisher, shown in ((self.world_state_pub, state),
                                 (self.perception_pub, self.perception.see(state)
                                  if self.perception is not None else state)):
            publisher.publish(conv.team_state_msg(
                self.model, task_id, step, shown, robot_action=robot_action,
                human_action=human_action, stamp=stamp, robot_failed=failed))


    def _report(self, task_id: str, seen, stamp) -> None:
        """An observed_state report, stamped when seen, sent after its delays."""
        report = ObservedState(domain=self.model.name, task_id=task_id,
                               true_propositions=self.model.state_facts(seen),
                               state_features=self.model.state_features(seen))
        report.header.stamp = stamp
        for delay in self.timing.delays():
            if delay <= 0.0:
                self.perception_pub.publish(report)
                continue
            heapq.heappush(self.late_reports, (time.monotonic() + delay,
                                               next(self._report_order), self.generation,
                                               report))

    def _report_again(self) -> None:
        """The periodic report of a world at its own pace: the world as seen now."""
        if not self.active:
            return
        with self.locked():
            if self.world is None or self.task is None:
                return
            self._report(self.task.task_id, self.perception.see(self.world.state),
                         self.stamp())

    def _send_due(self) -> None:
        """Send the late reports whose delay is over; those of a world reset (or
        deactivated) since they were seen are dropped."""
        if not self.active:
            return
        now, due = time.monotonic(), []
        with self.locked():
            while self.late_reports and self.late_reports[0][0] <= now:
                _, _, generation, report = heapq.heappop(self.late_reports)
                if generation == self.generation:
                    due.append(report)
        for report in due:
            self.perception_pub.publish(report)


def _period_check(value: float) -> str:
    if 0.0 < value < MIN_PERIOD_S:
        return (f'perception_period_s {value:g}: give 0 (report only on a change) or at '
                f'least {MIN_PERIOD_S:g} s')
    return ''


def _finish(goal_handle, how: str, message: str, changed: bool = False,
            skill_failed: bool = False):
    result = ExecuteSkill.Result(success=how == 'succeed', state_changed=changed,
                                 message=message, skill_failed=skill_failed)
    try:
        if how == 'succeed':
            goal_handle.succeed()
        elif how == 'canceled':
            goal_handle.canceled()
        else:
            goal_handle.abort()
    except Exception:  # noqa: BLE001 - the goal may be gone (shutdown, client left)
        pass
    return result


def main(args=None) -> int:
    return run_node(WorldSim, args)


if __name__ == '__main__':
    sys.exit(main())
