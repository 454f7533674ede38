"""simulated_human: a partner that knows its TRUE capabilities and enforces its plan.

Wraps the core :class:`~cecm_ros.core.partners.SimulatedHuman`. On a TaskRequest it
plans the joint plan under its true capabilities (parameter ``partner``) and
publishes it on ``human/joint_plan``. For every RobotIntent of the current task it
answers on ``robot/correction``: a confirmation (corrected_action == intended_action)
when the intent matches its plan, otherwise the action the robot must take ("noop" =
wait); with ``answer_intents: false`` it stays silent and a person answers instead
(``correction_console``). Then it sends its own action for that step to
``human/skills/<kind>``. When a person answers for it and the ``team_state`` of a step
shows the world elsewhere than its plan predicted (an action nobody corrected on its
behalf), it re-plans from there under the same capabilities, as a person would carry
on, and publishes the task's plan again (the steps taken, then the new plan).
Parameter ``partner_behaviour`` makes it less than optimal (docs/partners.md): after a
step off its plan it re-plans and publishes the task's plan again as well. A partner of
another decision rule (``greedy``, a plug-in) follows no plan: each step it reads the
world's ``team_state`` of that step, decides, and answers the robot only when it corrects
it (silence lets the robot follow the world); it publishes the optimal plan of its true
capabilities as its reference. Its searches take seeds of its own (``partner_search``
``own``); ``shared`` makes it search with the robot's seed, an oracle.

``partner_behaviour: person`` is play mode: a person is the partner. The node then takes
the partner's action for each step from ``human/choice`` (PartnerChoice, sent by the web
panel when the person picks one) instead of choosing it, and answers no intents (the
person does, on the panel). It still plans the optimal partner's plan under the assigned
capabilities, as the reference a person's play is compared with; the world enforces
those capabilities (an action they lack is a self-loop).
"""

from __future__ import annotations

import sys

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

from cecm_ros.action import ExecuteSkill
from cecm_ros.core.domain import NOOP, ROBOT, Planner
from cecm_ros.core.errors import CecmError
from cecm_ros.core.partner_policies import PolicyPartner
from cecm_ros.core.partners import (
    BEHAVIOUR_FORMS,
    PartnerBehaviour,
    SimulatedHuman,
    SimulatedPartner,
    resolve_partner_behaviour,
)
from cecm_ros.domains import planner_for
from cecm_ros.msg import (
    Correction,
    JointPlan,
    PartnerChoice,
    RobotIntent,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_EVENTS,
    QOS_LATCHED,
    QOS_TEAM_STATE,
    CecmNode,
    SafeActionClient,
    ros_name,
    run_node,
)
from cecm_ros.nodes.partner_parameters import (
    behaviour_check,
    declare_partner_parameters,
    simulated_partner,
)
from cecm_ros.nodes.skill_kinds import served_kinds
from cecm_ros.session.partner_runs import (
    HeldIntents,
    PersonChoices,
    RunOrder,
    SentAction,
    WorldSteps,
)

DISCOVERY_GRACE_S = 1.0   # how long a step waits for its skill server to be discovered
# How long an intent waits for the team_state of its step, which the world published
# before the robot announced the step; without it the partner goes on with its plan.
STATE_WAIT_S = 1.0
# How long an answer waits for robot/correction to have a subscriber: DDS may match the
# executor's subscription a moment after its intent arrived, and an answer published
# before that is lost (volatile), which the robot takes for consent.
LISTENER_WAIT_S = 10.0
PERSON = 'person'   # partner_behaviour of play mode: a person chooses the partner's actions


class SimulatedHumanNode(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('simulated_human', **kwargs)
        self.declare_model_parameters()
        declare_partner_parameters(self, 'Skill kinds the human can be asked to execute; '
                                   '[all] = every kind of the domain and "wait"')
        self.declare('forgo_probability', 0.0,
                     'Chance per task that the partner declines one capability its optimal '
                     'plan would use (a not quite optimal partner)', low=0.0, high=1.0)
        self.declare('partner_behaviour', '',
                     'How the partner departs from the optimal one: '
                     f'{", ".join(BEHAVIOUR_FORMS)} (docs/partners.md), or {PERSON} (a '
                     "person chooses on human/choice); '' = forgo:P when "
                     "forgo_probability P > 0, else the domain's default",
                     check=lambda text: behaviour_check(text, (PERSON,)))
        self.declare('choice_timeout_s', 600.0,
                     'With partner_behaviour person: how long a step waits for the '
                     "person's choice before the partner waits that step (0 = no limit)",
                     low=0.0, high=86_400.0)
        self.declare('state_topic', 'team_state',
                     'Where the partner sees the world: team_state (what the robot\'s '
                     "perception reports) or world_state (world_sim's world as it is, what "
                     'a person in the room sees; the two differ under perception noise)',
                     check=ros_name())
        self.declare('answer_intents', True,
                     "Answer the robot's intents on robot/correction; false leaves that to "
                     'a person (correction_console) and the partner only acts its plan')
        self.planner: Planner | None = None
        self.partner: SimulatedPartner | None = None
        self.human: SimulatedHuman | PolicyPartner | None = None
        self.task = None
        self.attempt = 0
        # The runs the task manager asked for, seen at once (not queued behind an intent
        # that waits for a person's choice), each with the order it was first asked for
        # in: a later one ends the wait of an earlier one.
        self.runs = RunOrder()
        self.early = HeldIntents()
        # The partner's own action at each step of the current run of the task.
        self.acted: dict[int, SentAction] = {}
        # The world's state at each step, and when the current run began.
        self.world = WorldSteps()

    def configure(self) -> None:
        self.model = self.load_model()
        spec = self.param('partner')
        self.truth = self.model.catalog.resolve(spec)
        self.planner = planner_for(self.model, timeout_s=self.param('planner_timeout_s'),
                                          workers=self.param('planner_workers'),
                                          **self.planner_options())
        self.forgo = self.param('forgo_probability')
        self.person = self.param('partner_behaviour').strip() == PERSON
        # A person's play is compared with the optimal partner's plan.
        self.behaviour = PartnerBehaviour() if self.person else resolve_partner_behaviour(
            self.param('partner_behaviour'), self.forgo,
            default=self.model.default_partner_behaviour)
        self.choices = PersonChoices()
        self.behaviour.check()
        if self.partner is not None:
            self.partner.close()
        # One partner across the session's tasks: its own searches per task, its traits.
        self.partner = simulated_partner(self, self.planner, self.truth, self.behaviour)
        self.answers = self.param('answer_intents') and not self.person
        if self.person and self.param('answer_intents'):
            self.get_logger().info('play mode: the person answers the intents (on the panel); '
                                   'answer_intents is not used')
        self.unheard = False   # an answer waited in vain for a subscriber: no more waits
        self.human = None
        self.task = None
        self.runs = RunOrder()
        # Tasks and intents are handled one at a time, in arrival order.
        serial = MutuallyExclusiveCallbackGroup()
        namespace = self.param('human_skill_namespace').rstrip('/')
        self.skill_clients = {
            kind: SafeActionClient(self, ExecuteSkill, f'{namespace}/{kind}',
                               callback_group=self.group)
            for kind in served_kinds(self.model, self.param('skills'))}
        self.plan_pub = self.create_lifecycle_publisher(JointPlan, 'human/joint_plan',
                                                        QOS_LATCHED)
        self.correction_pub = self.create_lifecycle_publisher(Correction, 'robot/correction',
                                                              QOS_EVENTS)
        self._entities = [
            self.plan_pub, self.correction_pub, *self.skill_clients.values(),
            self.create_subscription(TaskRequest, 'task/request',
                                     self.guarded(self._on_task, 'task/request'),
                                     QOS_LATCHED, callback_group=serial),
            # The same requests outside the serial group: an intent that waits for a
            # person's choice must learn that its run is over, or the next run's
            # request would queue behind it for ever.
            self.create_subscription(TaskRequest, 'task/request',
                                     self.guarded(self._on_task_announced, 'task/request'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_subscription(RobotIntent, 'robot/intent',
                                     self.guarded(self._on_intent, 'robot/intent'),
                                     QOS_EVENTS, callback_group=serial),
            # Another group than the intents': an intent waits for its step's choice.
            self.create_subscription(PartnerChoice, 'human/choice',
                                     self.guarded(self._on_choice, 'human/choice'),
                                     QOS_EVENTS, callback_group=self.group),
            # Another group than the intents': an intent waits for its step's state.
            self.create_subscription(TeamState, self.param('state_topic'),
                                     self.guarded(self._on_team_state,
                                                  self.param('state_topic')),
                                     QOS_TEAM_STATE, callback_group=self.group),
        ]
        self.get_logger().info(f'partner {spec!r}: lacks '
                               f'{self.model.catalog.describe_missing(self.truth)}'
                               + ('; a person plays it (human/choice)' if self.person else ''))

    def activate(self) -> None:
        """Its skill servers must be there before it takes part in tasks."""
        self.wait_for_peers([(f'{self.param("human_skill_namespace").rstrip("/")}/{kind}',
                              client.server_is_ready)
                             for kind, client in self.skill_clients.items()], 30.0)

    # ------------------------------------------------------------------- tasks
    def _on_task(self, msg: TaskRequest) -> None:
        if not self.active:
            return
        if self.task is not None and (msg.task_id, msg.attempt) == (self.task.task_id,
                                                                    self.attempt):
            return  # the latched request again
        # Intents held for another run of this task are stale once this run is asked for.
        self.early.drop_other_runs(msg.task_id, msg.attempt)
        try:
            task = conv.task_from_msg(self.model, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring task request: {error}')
            return
        self.task, self.attempt = task, msg.attempt
        with self.locked():
            self.acted = {}
            self.world.begin_run()
        # As in `cecm experiment`: seeded by seed and task id, searching on its own.
        assert self.partner is not None
        self.human = self.partner.for_task(task.task_id)
        try:
            plan = self.human.begin_task(task)
        except CecmError as error:
            self.human.plan = None
            self.get_logger().error(f'task {task.task_id}: cannot plan ({error}); the '
                                    'partner will only wait and confirm')
        else:
            self.plan_pub.publish(conv.plan_msg(plan, self.model.catalog, self.truth,
                                                'truth', self.stamp()))
            forgone = f'; forgoes {self.human.forgone}' if self.human.forgone else ''
            how = '' if self.human.enforces_plan else \
                (f'; a {self.behaviour} partner decides each step from the world, this is '
                 'its reference')
            self.get_logger().info(
                f'task {task.task_id}: planned {len(plan.steps)} joint steps '
                f'(cost {plan.cost:g}, {len(plan.actions_of("human"))} human actions'
                f'{forgone}{how})')
        for intent in self.early.take(task.task_id, msg.attempt):
            self._on_intent(intent)

    def _on_task_announced(self, msg: TaskRequest) -> None:
        if not self.active:
            return
        try:
            conv.task_from_msg(self.model, msg)
        except conv.MessageError:
            return   # no run at all (_on_task says why): it ends no wait
        with self.locked():
            self.runs.asked(msg.task_id, msg.attempt)
        self.notify()

    # ------------------------------------------------------------------ intents
    def _on_intent(self, msg: RobotIntent) -> None:
        if not self.active:
            return
        if self.task is None or (msg.task_id, msg.attempt) != (self.task.task_id,
                                                               self.attempt):
            # The intent may have overtaken its task request: hold it briefly. One of an
            # earlier run of the task (a robot that went on with a run it was stopped in)
            # is never answered: the world's step numbers belong to the current run.
            self.early.hold(msg.task_id, msg.attempt, msg.step, msg)
            current = (f'{self.task.task_id!r} attempt {self.attempt}' if self.task
                       else 'none')
            self.get_logger().info(
                f'intent for task {msg.task_id!r} attempt {msg.attempt} step {msg.step} is '
                f'not for the run the partner is in (current: {current}); held in case '
                'that run is requested next')
            return
        step = self.human.step
        if msg.step == step - 1 and self._resend(msg.task_id, msg.step):
            return
        if msg.step != step:
            self.get_logger().warning(
                f'ignoring intent for step {msg.step} of task {msg.task_id}: the partner '
                f'is at step {step}')
            return
        try:
            intended = conv.canonical_action(self.model, msg.action, ROBOT, 'intended action')
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring intent for step {step} of task '
                                      f'{msg.task_id}: {error}')
            return
        self._follow_world(msg.task_id, step)
        if self.human.plan is not None:
            # Its plan's step, or (a behaviour) another; a policy decides from the world.
            world = self._world_state(msg.task_id, step) if self.human.needs_world_state \
                else None
            try:
                self.human.choose_step(world, intended)
            except CecmError as error:   # a plug-in's refused answer: it waits this step
                self.get_logger().error(f'step {step}: {error}; the partner waits')
        if self.answers and not msg.repeated:   # a repeat's window is closed
            self._answer(msg.task_id, msg.attempt, step, intended)
        own = self._person_choice(msg.task_id, msg.attempt, step) if self.person \
            else self.human.current_step.human
        if own is None:
            self.get_logger().info(
                f'step {step}: run {msg.attempt} of task {msg.task_id} ended while the '
                "partner waited for the person's choice; the next run is taken up")
            return
        self._advance(step)
        self._act(msg.task_id, step, own)

    def _on_choice(self, msg: PartnerChoice) -> None:
        """A person's own action for a step (play mode); checked now, taken when the
        step's intent comes (or at once, when it is waiting for it)."""
        if not self.person:
            self.get_logger().warning(f'ignoring a choice from {msg.sender!r}: this partner '
                                      'is not played by a person (partner_behaviour)')
            return
        try:
            action = conv.canonical_action(self.model, msg.action, 'human', 'chosen action')
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring choice from {msg.sender!r} for step '
                                      f'{msg.step} of task {msg.task_id}: {error}')
            return
        attempt = msg.attempt or (self.attempt if self.task is not None
                                  and self.task.task_id == msg.task_id else 0)
        with self.locked():
            before = self.choices.choose(msg.task_id, attempt, msg.step, action)
        if before is not None:
            if before != action:   # (the same again: a panel's resend)
                self.get_logger().info(f'step {msg.step}: the person already chose '
                                       f'{before}; {action} ignored')
            return
        self.get_logger().info(f'step {msg.step}: the person chose {action} '
                               f'({msg.sender or "unnamed"})')
        self.notify()

    def _person_choice(self, task_id: str, attempt: int, step: int) -> str | None:
        """The person's action for this step: waited for (choice_timeout_s, 0 = no
        limit); a step nobody chose in time is waited out (noop). None when another run
        is asked for meanwhile (an interrupted task begun again): this one is over."""
        limit = self.param('choice_timeout_s') or None

        def chosen() -> bool:
            return self.choices.of(task_id, attempt, step) is not None

        def superseded() -> bool:
            # Asked for after this run (whichever of the two subscriptions heard first).
            return self.runs.superseded(task_id, attempt)

        with self.locked():
            ready = chosen()
        if not ready:
            self.get_logger().info(f'step {step}: waiting for the person\'s choice')
        if not self.wait_until(lambda: chosen() or superseded(), limit):
            self.get_logger().warning(f'step {step}: no choice from the person within '
                                      f'{limit:g} s; the partner waits this step')
            return NOOP
        with self.locked():
            return None if superseded() else self.choices.of(task_id, attempt, step)

    def _on_team_state(self, msg: TeamState) -> None:
        try:
            state = conv.state_from_team_state(self.model, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring team_state: {error}')
            return
        with self.locked():
            self.world.heard(msg.task_id, msg.step, state, msg.robot_failed)
        self.notify()

    def _robot_failed(self, task_id: str, step: int) -> bool:
        """Whether the world said the robot's skill failed in the step before ``step``."""
        with self.locked():
            return self.world.robot_failed(task_id, step)

    def _state_at(self, task_id: str, step: int):
        """The world's state at ``step`` of the current run, once it is known."""
        with self.locked():
            return self.world.state_at(task_id, step)

    def _world_state(self, task_id: str, step: int):
        """The world's state at ``step`` (waited for briefly; the task's start at step 0),
        or None (the partner then decides from where it last saw the world)."""
        if step == 0 and self.task is not None:
            return self.model.initial_state(self.task)
        self.wait_until(lambda: self._state_at(task_id, step) is not None, STATE_WAIT_S)
        state = self._state_at(task_id, step)
        if state is None:
            self.get_logger().warning(f'step {step}: no team_state of this step yet; the '
                                      'partner decides from the last state it saw')
        return state

    def _follow_world(self, task_id: str, step: int) -> None:
        """Re-plan from the world's state when it is not what the plan predicted. Step 0
        is the task's start, which the plan starts from; a partner that answers the
        intents enforces its plan, so the world cannot leave it."""
        if step == 0 or self.human.plan is None:
            return
        # A partner that answers the intents enforces its plan: only a robot skill that
        # failed (the world says so) takes the world off it.
        if self.answers and not self._robot_failed(task_id, step):
            return
        self.wait_until(lambda: self._state_at(task_id, step) is not None, STATE_WAIT_S)
        state = self._state_at(task_id, step)
        if state is None:
            self.get_logger().warning(f'step {step}: no team_state of this step yet; going '
                                      'on with the plan')
            return
        if self.human.expects(state):
            return
        try:
            plan = self.human.replan(state)
        except CecmError as error:
            self.get_logger().error(f'step {step}: the world left the plan and no new one '
                                    f'was found ({error}); the partner goes on with its old '
                                    'plan')
            return
        # Step t of the task stays step t of the published plan (the panel's hints).
        self.plan_pub.publish(conv.plan_msg(self.human.task_plan(), self.model.catalog,
                                            self.human.willing, 'truth', self.stamp()))
        self.get_logger().info(f'step {step}: the world is not where the plan predicted; '
                               f're-planned {len(plan.steps)} joint steps from there')

    def _advance(self, step: int) -> None:
        """Past this step; after a step off its plan, publish the plan it made then (a
        partner that follows no plan keeps its reference plan)."""
        deviating = self.human.deviating and self.human.enforces_plan
        try:
            self.human.advance()
        except CecmError as error:
            self.get_logger().error(f'step {step}: no plan after leaving the plan ({error})')
            self.human.plan = None
            return
        if deviating:
            self.plan_pub.publish(conv.plan_msg(self.human.task_plan(), self.model.catalog,
                                                self.human.willing, 'truth', self.stamp()))
            self.get_logger().info(f'step {step}: left its plan ({self.human.behaviour}); '
                                   f're-planned {len(self.human.plan.steps)} joint steps')

    def _answer(self, task_id: str, attempt: int, step: int, intended: str) -> None:
        if self.human.plan is None:   # no plan of its own: agree and wait
            correction = None
        else:
            correction = self.human.review_intent(intended)
            if correction is None and not self.human.enforces_plan:
                return   # a policy that does not correct leaves the intent unanswered
        corrected = correction.corrected if correction else intended
        self._wait_for_listener(step)
        self.correction_pub.publish(Correction(
            header=self._header(), task_id=task_id, attempt=attempt, step=step,
            intended_action=intended,
            corrected_action=corrected, sender=self.get_name()))
        if correction:
            self.get_logger().info(f'step {step}: corrected the robot: {intended} -> '
                                   f'{corrected}')

    def _wait_for_listener(self, step: int) -> None:
        """Hold an answer until robot/correction has a subscriber (up to LISTENER_WAIT_S,
        unless the node stops), so that the first one is not published before DDS
        matched the executor's subscription. After one wait in vain, answers go out at
        once until a subscriber is there again: a robot that is gone must not slow the
        partner's every step."""
        def heard() -> bool:
            return self.correction_pub.get_subscription_count() > 0

        if heard():
            if self.unheard:
                self.unheard = False
                self.get_logger().info(f'step {step}: robot/correction has a subscriber '
                                       'again')
            return
        if self.unheard:
            return
        self.get_logger().info(f'step {step}: nobody subscribes to robot/correction yet; '
                               f'waiting up to {LISTENER_WAIT_S:g} s before answering')
        if self._wait_ready(heard, LISTENER_WAIT_S):
            return
        self.unheard = True
        self.get_logger().warning(
            f'step {step}: nobody subscribed to robot/correction within '
            f'{LISTENER_WAIT_S:g} s (is the executor running?); answering anyway, and '
            'the next answers at once until someone subscribes')

    def _resend(self, task_id: str, step: int) -> bool:
        """The intent of the step it already acted on, announced again: the world still
        waits for the partner. When the world never took that action (the goal was lost
        with a restarted world, or refused or aborted), send it again; whether the intent
        was handled."""
        with self.locked():
            sent = self.acted.get(step)
            if sent is None:
                return False
            lost, action, state = sent.lost(), sent.action, sent.state
        if not lost:   # the world has the action, or may still answer
            self.get_logger().info(f'ignoring intent for step {step} of task {task_id}: the '
                                   f'partner sent {action} for it already ({state})')
            return True
        self.get_logger().info(f'step {step}: the world still waits for the partner and '
                               f'has not taken {action}; sending it again')
        self._act(task_id, step, action)
        return True

    def _settle(self, sent: SentAction, state: str) -> None:
        """The world's answer to one goal (a goal sent again, or a run of the task begun
        since, holds a SentAction of its own: this one is then no longer looked at)."""
        with self.locked():
            sent.state = state

    def _act(self, task_id: str, step: int, action: str) -> None:
        sent = SentAction(action)
        with self.locked():
            self.acted[step] = sent
        kind = conv.skill_kind(self.model, action)
        client = self.skill_clients.get(kind)
        if client is None:
            self.get_logger().error(f'step {step}: no human skill server for {kind!r} '
                                    f'(action {action})')
            return
        # Discovery can lag a moment behind a busy graph (or one that is stopping): give
        # the server up to DISCOVERY_GRACE_S before saying it was not there.
        if not client.server_is_ready() and \
                not client.wait_for_server(timeout_sec=DISCOVERY_GRACE_S):
            self.get_logger().warning(f'step {step}: human skill {kind!r} not discovered '
                                      'yet; sending anyway')
        future = client.send_goal_async(ExecuteSkill.Goal(
            task_id=task_id, attempt=self.attempt, step=step, action=action))
        future.add_done_callback(lambda f: self._on_goal_response(f, sent, step))

    def _on_goal_response(self, future, sent: SentAction, step: int) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            self._settle(sent, 'failed')
            self.get_logger().error(f'step {step}: the world rejected {sent.action}')
            return
        self._settle(sent, 'taken')
        handle.get_result_async().add_done_callback(
            lambda f: self._on_result(f, sent, step))

    def _on_result(self, future, sent: SentAction, step: int) -> None:
        response = future.result()
        if response is None:
            self._settle(sent, 'failed')
            return
        result, action = response.result, sent.action
        self._settle(sent, 'taken' if result.success else 'failed')
        if not result.success:
            self.get_logger().warning(f'step {step}: {action} failed: {result.message}')
        elif action != NOOP and not result.state_changed:
            self.get_logger().info(f'step {step}: {action} self-looped: {result.message}')

    def _header(self):
        header = Correction().header
        header.stamp = self.stamp()
        return header


def main(args=None) -> int:
    return run_node(SimulatedHumanNode, args)


if __name__ == '__main__':
    sys.exit(main())
