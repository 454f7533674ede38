"""paced_partner: a simulated partner who acts at their own pace, not the robot's.

A person does not wait for the robot: while it drives across the house they may pick,
carry and place, or stand still for a minute. This partner, in a ``world_sim`` with
``lockstep: false`` (each agent's action applied once its time passed), works down its
own part of its plan under its TRUE capabilities (``partner``, with the behaviour and
family of ``partner_behaviour``, docs/partners.md): once the robot announces its first
step of a run (``robot/intent``) it sends its actions one after another to
``human/skills/<kind>``, each as soon as the one before is done, re-planning from the
world (``state_topic``, ``world_sim``'s ``world_state``: what a person in the room sees)
when its next action no longer applies or its plan ran out
(:func:`~cecm_ros.core.partners.paced_partner_action`, as ``cecm experiment
--partner-pace-low/--partner-pace-high`` runs it). It answers no intent: the robot,
told nothing, follows the world. It publishes its first plan on ``human/joint_plan``
for the task manager's record. Its searches take seeds of its own (``partner_search``).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

from cecm_ros.action import ExecuteSkill
from cecm_ros.core.domain import NOOP, Planner
from cecm_ros.core.errors import CecmError
from cecm_ros.core.partners import (
    BEHAVIOUR_FORMS,
    PACED_STEP_EXTRA,
    PACED_STEP_FACTOR,
    SimulatedPartner,
    paced_partner_action,
    resolve_partner_behaviour,
)
from cecm_ros.domains import planner_for
from cecm_ros.msg import JointPlan, RobotIntent, TaskRequest, TeamState
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
    ros_name,
    run_node,
)
from cecm_ros.nodes.partner_parameters import (
    behaviour_check,
    declare_partner_parameters,
    simulated_partner,
)
from cecm_ros.nodes.skill_kinds import served_kinds

STATE_WAIT_S = 2.0   # how long after a change of its own it waits to see the world's report


class PacedPartner(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('paced_partner', **kwargs)
        self.declare_model_parameters()
        declare_partner_parameters(self, 'Skill kinds the partner acts through; [all] = '
                                   'every kind of the domain and "wait"')
        self.declare('partner_behaviour', '',
                     f'How it chooses its actions: {", ".join(BEHAVIOUR_FORMS)} '
                     "(docs/partners.md); '' = the domain's default",
                     check=behaviour_check)
        self.declare('state_topic', 'world_state',
                     'Where the partner sees the world (TeamState): world_sim\'s world as '
                     'it is, as a person in the room sees it', check=ros_name())
        self.declare('action_timeout_s', 120.0, 'How long one of its actions may take',
                     low=0.1, high=3600.0)
        self.declare('stand_by_s', 1.0, 'When its plan has it wait: how long it stands by '
                     'and watches before it decides again, unless the world changes first',
                     low=0.05, high=60.0)
        self.planner: Planner | None = None
        self.partner: SimulatedPartner | None = None
        self.run = (None, 0)      # (task, attempt) of the run it is in
        # Runs whose robot has begun, oldest first (an ordered set).
        self.started: OrderedDict[tuple[str, int], None] = OrderedDict()
        self.world: dict[str, tuple[int, object]] = {}   # task id -> (step, state) seen

    def configure(self) -> None:
        self.model = self.load_model()
        self.truth = self.model.catalog.resolve(self.param('partner'))
        self.planner = planner_for(self.model, timeout_s=self.param('planner_timeout_s'),
                                   workers=self.param('planner_workers'),
                                   **self.planner_options())
        behaviour = resolve_partner_behaviour(self.param('partner_behaviour'), 0.0,
                                              default=self.model.default_partner_behaviour)
        behaviour.check()
        if self.partner is not None:
            self.partner.close()
        self.partner = simulated_partner(self, self.planner, self.truth, behaviour)
        namespace = self.param('human_skill_namespace').rstrip('/')
        self.skill_names = {kind: f'{namespace}/{kind}'
                            for kind in served_kinds(self.model, self.param('skills'))}
        self.skill_clients = {kind: SafeActionClient(self, ExecuteSkill, name,
                                                     callback_group=self.group)
                              for kind, name in self.skill_names.items()}
        self.plan_pub = self.create_lifecycle_publisher(JointPlan, 'human/joint_plan',
                                                        QOS_LATCHED)
        topic = self.param('state_topic')
        self._entities = [
            self.plan_pub, *self.skill_clients.values(),
            self.create_subscription(TaskRequest, 'task/request',
                                     self.guarded(self._on_task, 'task/request'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_subscription(RobotIntent, 'robot/intent',
                                     self.guarded(self._on_intent, 'robot/intent'),
                                     QOS_EVENTS, callback_group=self.group),
            self.create_subscription(TeamState, topic, self.guarded(self._on_world, topic),
                                     QOS_TEAM_STATE, callback_group=self.group),
        ]
        self.get_logger().info(f'partner {self.param("partner")!r} ({behaviour}) at its own '
                               'pace: lacks '
                               f'{self.model.catalog.describe_missing(self.truth)}')

    def activate(self) -> None:
        self.wait_for_peers([(name, self.skill_clients[kind].server_is_ready)
                             for kind, name in self.skill_names.items()], 30.0)

    def deactivate(self) -> None:
        """The run it was in is over (its worker stops); the next request starts one."""
        with self.locked():
            self.run = (None, 0)
        self.notify()

    def teardown(self) -> None:
        super().teardown()
        if self.partner is not None:
            self.partner.close()
            self.partner = None

    # ------------------------------------------------------------------- topics
    def _on_task(self, msg: TaskRequest) -> None:
        if not self.active:
            return
        try:
            task = conv.task_from_msg(self.model, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring task request: {error}')
            return
        with self.locked():   # one worker per run, however often the request comes
            if (msg.task_id, msg.attempt) == self._run_key():
                return
            self.run = (task, msg.attempt)
            self.world.pop(task.task_id, None)
        self.notify()
        human = self.partner.for_task(task.task_id)
        try:
            plan = human.begin_task(task)
        except CecmError as error:
            self.get_logger().error(f'task {task.task_id}: cannot plan ({error}); the '
                                    'partner stands by')
            return
        self.plan_pub.publish(conv.plan_msg(plan, self.model.catalog, self.truth, 'truth',
                                            self.stamp()))
        threading.Thread(target=self._work, args=(task, msg.attempt, human, len(plan.steps)),
                         name=f'paced {task.task_id}', daemon=True).start()

    def _on_intent(self, msg: RobotIntent) -> None:
        with self.locked():
            self.started[(msg.task_id, msg.attempt)] = None
            while len(self.started) > 50:   # the oldest runs go
                self.started.popitem(last=False)
        self.notify()

    def _on_world(self, msg: TeamState) -> None:
        try:
            state = conv.state_from_team_state(self.model, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring {self.param("state_topic")}: {error}')
            return
        with self.locked():
            held = self.world.get(msg.task_id)
            if held is None or msg.step >= held[0]:
                self.world[msg.task_id] = (msg.step, state)
        self.notify()

    def _run_key(self) -> tuple[str, int]:
        task, attempt = self.run
        return (task.task_id if task is not None else '', attempt)

    # --------------------------------------------------------------------- work
    def _work(self, task, attempt: int, human, planned: int) -> None:
        """One run: act until the goal holds, the run is over or the node stops."""
        key = (task.task_id, attempt)

        def over() -> bool:
            return self._run_key() != key

        try:
            self.wait_until(lambda: key in self.started or over(), None)
            # Its actions count towards the limit, not its standing by: a partner with
            # nothing to do stands by until the run is over, however slow the robot is.
            limit = PACED_STEP_FACTOR * max(1, planned) + PACED_STEP_EXTRA
            count = acted = 0
            while acted < limit:
                state = self._seen(task)
                if over() or self.model.goal_reached(task, state):
                    return
                action = paced_partner_action(self.model, human, state)
                seen = self._seen_step(task)
                if action == NOOP:
                    # Standing by is no skill: it watches the world for a while.
                    self.wait_until(lambda seen=seen: self._seen_step(task) > seen or
                                    over(), self.param('stand_by_s'))
                    human.advance(self._seen(task))
                    continue
                changed = self._act(task, attempt, count, action, over)
                if changed is None:
                    return
                count += 1
                acted += 1
                if changed:   # the world's report of its change is on its way
                    self.wait_until(lambda seen=seen: self._seen_step(task) > seen or
                                    over(), STATE_WAIT_S)
                human.advance(self._seen(task))
            self.get_logger().warning(f'task {task.task_id}: the partner stops after {limit} '
                                      'actions without the goal')
        except (StopRequestedError, WaitInterruptedError):
            return
        except Exception as error:  # noqa: BLE001 - a run's error must not end the node
            self.get_logger().error(f'task {task.task_id}: the partner stops: {error!r}')

    def _seen(self, task):
        """The world as last seen in this task (its start before any report)."""
        with self.locked():
            held = self.world.get(task.task_id)
        return held[1] if held is not None else self.model.initial_state(task)

    def _seen_step(self, task) -> int:
        with self.locked():
            held = self.world.get(task.task_id)
        return held[0] if held is not None else -1

    def _act(self, task, attempt: int, count: int, action: str, over) -> bool | None:
        """Send one action and wait until it is done: whether it changed the world, or
        None when the run cannot go on (the run is over, the world refused it)."""
        kind = conv.skill_kind(self.model, action)
        client = self.skill_clients.get(kind)
        if client is None:
            self.get_logger().error(f'task {task.task_id}: no human skill server for '
                                    f'{kind!r} ({action}); the partner stops')
            return None
        goal = ExecuteSkill.Goal(task_id=task.task_id, attempt=attempt, step=count,
                                 action=action)
        try:
            _, result = self.send_action_goal(client, self.skill_names[kind], goal,
                                              f'{task.task_id}: {action}', 10.0,
                                              self.param('action_timeout_s'),
                                              interrupt=over)
        except PeerUnavailableError as error:
            self.get_logger().warning(f'{error}; the partner stops this run')
            return None
        if not result.success:
            if not over():
                self.get_logger().warning(f'task {task.task_id}: {action} not done: '
                                          f'{result.message}; the partner stops this run')
            return None
        if action != NOOP and not result.state_changed:
            self.get_logger().info(f'task {task.task_id}: {action} self-looped: '
                                   f'{result.message}')
        return bool(result.state_changed)


def main(args=None) -> int:
    return run_node(PacedPartner, args)


if __name__ == '__main__':
    sys.exit(main())
