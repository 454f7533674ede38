"""Simulated teammates and the shared-task loop with the paper's alignment protocol.

Both agents plan jointly, each under its own model of the human: the simulated human
under its true capabilities, the robot under its estimate. Each executes only its own
actions. Before every step the robot announces what it intends to do; when that
conflicts with the human's joint plan, the human corrects it (do this instead, or
wait) and the robot re-plans from the state the step leaves. The observed trajectory
therefore always follows the human's plan.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from .domain import NOOP, Task, TidyUpModel
from .planner import JointPlan, JointPlanner, JointStep
from .simulator import ActionOutcome, WorldSimulator


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

    def __init__(self, planner: JointPlanner, capabilities: np.ndarray,
                 forgo_probability: float = 0.0, seed: int = 0):
        if not 0.0 <= forgo_probability <= 1.0:
            raise ValueError(f'forgo_probability must lie in [0, 1], got {forgo_probability}')
        self.planner = planner
        self.capabilities = planner.model.catalog.check_vector(capabilities)
        self.forgo_probability = forgo_probability
        self.rng = np.random.default_rng(seed)
        self.plan: JointPlan | None = None
        self.forgone: str | None = None
        self.step_index = 0

    def begin_task(self, task: Task) -> JointPlan:
        self.plan = self.planner.plan(task, self.capabilities)
        self.forgone = None
        used = sorted(self.plan.human_capabilities_used)
        if used and self.rng.random() < self.forgo_probability:
            declined = int(self.rng.choice(used))
            willing = self.capabilities.copy()
            willing[declined] = False
            self.plan = self.planner.plan(task, willing)
            self.forgone = self.planner.model.catalog.names[declined]
        self.step_index = 0
        return self.plan

    @property
    def finished(self) -> bool:
        return self.plan is None or self.step_index >= len(self.plan.steps)

    @property
    def current_step(self) -> JointStep:
        return self.plan.steps[self.step_index] if not self.finished else JointStep()

    def review_intent(self, intended: str) -> Correction | None:
        """A correction when the robot's announced action is not the one the plan needs."""
        expected = self.current_step.robot
        if intended == expected:
            return None
        return Correction(self.step_index, intended, expected)

    def advance(self) -> None:
        self.step_index += 1


class RobotTeammate:
    """The robot: plans jointly under its estimate, acts only for itself."""

    def __init__(self, planner: JointPlanner, estimate: np.ndarray):
        self.planner = planner
        self.estimate = planner.model.catalog.check_vector(estimate)
        self.task: Task | None = None
        self.plan: JointPlan | None = None
        self.step_index = 0
        self.replans = 0
        self.relaxed_plans = 0   # plans made as if the partner were fully capable

    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.plan, relaxed = self.planner.plan_under_estimate(task, self.estimate)
        self.relaxed_plans = int(relaxed)
        self.step_index = 0
        self.replans = 0
        return self.plan

    def intent(self) -> str:
        if self.plan is None or self.step_index >= len(self.plan.steps):
            return NOOP
        return self.plan.steps[self.step_index].robot

    def after_step(self, corrected: bool, state: int) -> None:
        """Advance along the plan, or re-plan from ``state`` after a correction."""
        if not corrected:
            self.step_index += 1
            return
        here = self.planner.model.task_from_state(self.task, state)
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
    trajectory: list[int]        # observed joint states s_0..s_H
    corrections: int = 0
    robot_decisions: int = 0     # steps where the robot intended or was asked to act
    replans: int = 0
    goal_reached: bool = False
    steps: list[StepRecord] = field(default_factory=list)


def run_shared_task(model: TidyUpModel, task: Task, robot: RobotTeammate,
                    human: SimulatedHuman) -> TaskRecord:
    """Execute one task with both teammates; the world follows the self-loop rule."""
    start = model.state_from_atoms(task.initial)
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
    record.goal_reached = world.satisfies(model.state_from_atoms(task.goal))
    return record
