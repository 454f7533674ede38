"""Simulated teammates and the shared-task loop with the paper's alignment protocol.

Both agents plan jointly, each under its own model of the human: the simulated human
under its true capabilities, the robot under its estimate. Each executes only its own
actions. Before every step the robot announces what it intends to do; when that
conflicts with the human's joint plan, the human corrects it (do this instead, or
wait) and the robot re-plans from the state the step leaves. The observed trajectory
therefore always follows the human's plan.

Outside that protocol (a person who answers for the partner, or lets a wrong action
pass) the world can leave both plans behind: :func:`off_plan` tells when, and
:meth:`SimulatedHuman.replan` lets the partner carry on from where the world is.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from itertools import zip_longest

import numpy as np

from .domain import NOOP, Domain, JointPlan, JointStep, Planner, State, Task
from .errors import CecmError
from .simulator import ActionOutcome, WorldSimulator


def off_plan(plan: JointPlan, done: int, state: State) -> bool:
    """Whether ``state``, seen after ``done`` steps of ``plan``, is not the state the plan
    predicted there; past its last step the plan predicts its goal state, so a plan that
    ran out before the goal holds is off too. The rest of such a plan no longer fits."""
    return plan.trajectory[min(done, len(plan.trajectory) - 1)] != state


class ReplanRule:
    """When a robot that follows a joint plan re-plans, and for whom.

    Always after a correction (the paper's protocol). With ``follow_world``, after a
    step nobody answered (silence is consent, but nobody then enforces the partner's
    plan), also when the world is not where the plan predicted (:func:`off_plan`), and,
    after ``idle_limit`` such steps in a row in which the plan gave the partner an
    action and nothing changed, for the robot alone from then on: a partner who will
    not do what the robot expects must not hold the task up (``idle_limit`` 0 waits for
    it until the task's step limit). Answered steps never trigger these, so a partner
    who answers every intent gets exactly the paper's protocol.
    """

    def __init__(self, follow_world: bool = False, idle_limit: int = 3):
        if idle_limit < 0:
            raise ValueError(f'idle_limit must be at least 0, got {idle_limit}')
        self.follow_world = follow_world
        self.idle_limit = idle_limit
        self.idle = 0
        self.alone = False   # planning as if the partner does nothing more

    def begin_task(self) -> None:
        self.idle, self.alone = 0, False

    def after_step(self, plan: JointPlan, done: int, before: State, state: State,
                   corrected: bool, answered: bool = True) -> str | None:
        """After ``done`` steps of ``plan`` took the world from ``before`` to ``state``:
        None (go on), 'belief' (re-plan under the estimate) or 'alone' (re-plan with a
        partner who does nothing; the caller sets ``alone`` once such a plan exists)."""
        if corrected:
            self.idle = 0
            return 'alone' if self.alone else 'belief'
        if not self.follow_world or answered or not off_plan(plan, done, state):
            self.idle = 0
            return None
        partner_due = 0 < done <= len(plan.steps) and plan.steps[done - 1].human != NOOP
        self.idle = self.idle + 1 if state == before and partner_due else 0
        if self.alone or (self.idle_limit and self.idle >= self.idle_limit):
            self.idle = 0
            return 'alone'
        return 'belief'


def steps_off_plan(plan: JointPlan, executed: list[tuple[str, str]]) -> int:
    """How many of the joint steps executed, as (robot action, human action), are not the
    plan's step at that place (either longer sequence counts its extra steps). 0 for a
    task run as the paper's protocol runs it: a partner that enforces its plan."""
    planned = ((step.robot, step.human) for step in plan.steps)
    return sum(a != b for a, b in zip_longest(planned, executed, fillvalue=(NOOP, NOOP)))


@dataclass(frozen=True)
class Correction:
    step: int
    intended: str    # what the robot announced
    corrected: str   # what it must do instead ("noop" = wait)


def partner_seed(seed: int, task_id: str) -> int:
    """The seed of a simulated partner's choices in one task: from the run's seed and the
    task's id only, so that a restarted partner decides as the first would have."""
    return int(np.random.default_rng([seed, 7, zlib.crc32(task_id.encode())])
               .integers(2**32))


class SimulatedHuman:
    """A partner that knows everyone's true capabilities and enforces its own plan.

    With ``forgo_probability`` > 0 it is not always optimal: at the start of a task it
    may, with that probability, decline one capability its optimal plan would use (an
    unmodelled preference) and follow the plan that is optimal without it. ``seed``
    makes those choices reproducible.
    """

    def __init__(self, planner: Planner, capabilities: np.ndarray,
                 forgo_probability: float = 0.0, seed: int = 0):
        if not 0.0 <= forgo_probability <= 1.0:
            raise ValueError(f'forgo_probability must lie in [0, 1], got {forgo_probability}')
        self.planner = planner
        self.capabilities = planner.domain.catalog.check_vector(capabilities)
        self.forgo_probability = forgo_probability
        self.rng = np.random.default_rng(seed)
        self.plan: JointPlan | None = None
        self.forgone: str | None = None
        self.willing = self.capabilities   # what it plans with: less any it declines
        self.task: Task | None = None
        self.step_index = 0   # into the current plan
        self.first_step = 0   # the task's step at which the current plan began
        self.earlier: tuple[JointStep, ...] = ()   # steps of earlier plans, one per step
        self.replans = 0

    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.plan = self.planner.plan(task, self.capabilities)
        self.forgone = None
        self.willing = self.capabilities
        used = sorted(self.plan.human_capabilities_used)
        if used and self.rng.random() < self.forgo_probability:
            declined = int(self.rng.choice(used))
            willing = self.capabilities.copy()
            willing[declined] = False
            self.plan = self.planner.plan(task, willing)
            self.willing = willing
            self.forgone = self.planner.domain.catalog.names[declined]
        self.step_index = 0
        self.first_step = 0
        self.earlier = ()
        self.replans = 0
        return self.plan

    @property
    def step(self) -> int:
        """The task's joint step the partner is at (plans re-made mid-task start at 0)."""
        return self.first_step + self.step_index

    def expects(self, state: State) -> bool:
        """Whether the world is where its plan says it should be by now."""
        return self.plan is None or not off_plan(self.plan, self.step_index, state)

    def replan(self, state: State) -> JointPlan:
        """Carry on from ``state`` (the world left its plan: nobody enforced it), with the
        same capabilities, declined one included; the step count goes on."""
        assert self.task is not None and self.plan is not None, 'no task begun'
        here = self.planner.domain.task_from_state(self.task, state)
        plan = self.planner.plan(here, self.willing)   # may raise: then nothing changes
        done = self.plan.steps[:self.step_index]
        self.earlier += done + (JointStep(),) * (self.step_index - len(done))
        self.first_step += self.step_index
        self.step_index = 0
        self.plan = plan
        self.replans += 1
        return plan

    def task_plan(self) -> JointPlan:
        """The plan of the whole task as it now stands: the steps planned so far for the
        steps taken, then the current plan, so that step t of the task is step t here
        (costs and states are the current plan's)."""
        assert self.plan is not None, 'no task begun'
        return replace(self.plan, steps=self.earlier + self.plan.steps)

    @property
    def finished(self) -> bool:
        return self.plan is None or self.step_index >= len(self.plan.steps)

    @property
    def current_step(self) -> JointStep:
        if self.plan is None or self.finished:
            return JointStep()
        return self.plan.steps[self.step_index]

    def review_intent(self, intended: str) -> Correction | None:
        """A correction when the robot's announced action is not the one the plan needs."""
        expected = self.current_step.robot
        if intended == expected:
            return None
        return Correction(self.step, intended, expected)

    def advance(self) -> None:
        self.step_index += 1


class RobotTeammate:
    """The robot: plans jointly under its estimate, acts only for itself."""

    def __init__(self, planner: Planner, estimate: np.ndarray,
                 rule: ReplanRule | None = None):
        self.planner = planner
        self.estimate = planner.domain.catalog.check_vector(estimate)
        self.rule = rule or ReplanRule()
        self.task: Task | None = None
        self.plan: JointPlan | None = None
        self.state: State = 0
        self.step_index = 0
        self.replans = 0
        self.relaxed_plans = 0   # plans made as if the partner were fully capable

    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.state = self.planner.domain.initial_state(task)
        self.plan, relaxed = self.planner.plan_under_estimate(task, self.estimate)
        self.relaxed_plans = int(relaxed)
        self.step_index = 0
        self.replans = 0
        self.rule.begin_task()
        return self.plan

    def intent(self) -> str:
        if self.plan is None or self.step_index >= len(self.plan.steps):
            return NOOP
        return self.plan.steps[self.step_index].robot

    def after_step(self, corrected: bool, state: State, answered: bool = True) -> None:
        """Advance along the plan, or re-plan from ``state`` when the rule says so
        (``answered``: whether anyone answered the step's intent)."""
        before, self.state = self.state, state
        self.step_index += 1
        assert self.task is not None and self.plan is not None, 'no task begun'
        replan = self.rule.after_step(self.plan, self.step_index, before, state, corrected,
                                      answered)
        if replan is None:
            return
        here = self.planner.domain.task_from_state(self.task, state)
        if replan == 'alone':
            try:
                self.plan = self.planner.plan(here, np.zeros(len(self.estimate), dtype=bool))
            except CecmError:   # e.g. the partner holds an item: it has to act
                replan = 'belief'
            else:
                self.rule.alone = True
        if replan == 'belief':
            self.plan, relaxed = self.planner.plan_under_estimate(here, self.estimate)
            self.relaxed_plans += int(relaxed)
        self.step_index = 0
        self.replans += 1


@dataclass
class StepRecord:
    step: int
    intended: str
    robot: ActionOutcome
    human: ActionOutcome
    corrected: bool


@dataclass
class TaskRecord:
    """What happened in one shared task."""

    task: Task
    robot_plan: JointPlan        # the robot's plan at the start, under its estimate
    human_plan: JointPlan        # the partner's plan under its true capabilities
    trajectory: list[State]      # observed joint states s_0..s_H
    corrections: int = 0
    robot_decisions: int = 0     # steps where the robot intended or was asked to act
    replans: int = 0
    goal_reached: bool = False
    steps: list[StepRecord] = field(default_factory=list)


def run_shared_task(model: Domain, task: Task, robot: RobotTeammate,
                    human: SimulatedHuman) -> TaskRecord:
    """Execute one task with both teammates; the world follows the self-loop rule."""
    start = model.initial_state(task)
    world = WorldSimulator(model, human.capabilities, start)
    robot_plan = robot.begin_task(task)
    human_plan = human.begin_task(task)
    record = TaskRecord(task, robot_plan, human_plan, trajectory=world.trajectory)
    while not human.finished:
        intended = robot.intent()
        correction = human.review_intent(intended)
        executed = correction.corrected if correction else intended
        if intended != NOOP or executed != NOOP:
            record.robot_decisions += 1
        robot_outcome, human_outcome = world.step(executed, human.current_step.human)
        record.steps.append(StepRecord(human.step_index, intended, robot_outcome,
                                       human_outcome, correction is not None))
        record.corrections += correction is not None
        human.advance()
        robot.after_step(correction is not None, world.state)
    record.replans = robot.replans
    record.goal_reached = world.goal_reached(task)
    return record
