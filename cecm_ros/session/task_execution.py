"""One task run for the robot, step by step, over a :class:`RobotPort`.

:class:`TaskExecution` is the executor's loop without ROS: plan under the belief, per
joint step announce the robot's intended action and take the partner's answer (silence
is consent), run the corrected or intended action, read the state perception reports,
and re-plan by :class:`~cecm_ros.core.partners.ReplanRule` (after a correction, after the
robot's own failed skill, after an unanswered step that left the world off the plan, and
for the robot alone once the partner has left its part undone for ``idle_limit`` steps).
What the loop needs of the world (states, plans, answers, skills) is the port's: the
executor node answers over ROS, a test or a simulator in process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from cecm_ros.core.domain import NOOP, Domain, JointPlan, State, Task
from cecm_ros.core.partners import ReplanRule
from cecm_ros.core.world_conditions import state_to_act_on
from cecm_ros.session.runner import Log


class TaskAbortedError(Exception):
    """The task cannot go on; the message says why. ``retry``: the cause is not the task's
    own (a peer that did not answer, a world out of step), so running it again from its
    start may succeed; a goal that no plan reaches, or a malformed request, is the
    task's own."""

    def __init__(self, message: str, retry: bool = True):
        super().__init__(message)
        self.retry = retry


class TaskCanceledError(Exception):
    """Whoever asked for the task canceled it; the loop stops where it is."""


@dataclass(frozen=True)
class Seen:
    """A team state as perception reported it: ``record`` is kept for the evidence as it
    came (the port's own form, a TeamState message in the node), ``state`` is the
    domain's reading of it, which may be one no world is in (a glitch)."""

    record: object
    state: State


@dataclass(frozen=True)
class Answer:
    """The partner's answer to an intent: the action the robot is to run instead (the
    intended one again for a confirmation), and who said so."""

    action: str
    sender: str = ''


class SkillReport(Protocol):
    """How the robot's skill went (ExecuteSkill's result fits)."""

    success: bool
    state_changed: bool
    message: str


class RobotPort(Protocol):
    """What a task run asks of the world around the robot. Every wait raises
    :class:`TaskAbortedError` when it gives up and :class:`TaskCanceledError` when the
    run is canceled; an exception of the port's own (its process stopping) ends the run
    and is the port's to handle."""

    def team_state(self, step: int) -> Seen:
        """The state perception reported after ``step`` joint steps (0: the start)."""
        ...

    def observe(self, step: int, action: str, skill: SkillReport) -> list[Seen]:
        """What perception reported after joint step ``step`` (the robot ran ``action``):
        one state per joint step from a lockstep world (``team_state(step + 1)``); from
        perception as events the changes seen since the step before, in the order seen:
        several when the partner did several things, none when nothing was seen to
        change (the robot then goes on from the last state it saw)."""
        ...

    def plan(self, task: Task, state: State, alone: bool) -> JointPlan:
        """A joint plan from ``state`` under the belief, or (``alone``) for a partner who
        does nothing; published for whoever shows it."""
        ...

    def wait_listeners(self) -> None:
        """Before the first intent: give the partner a moment to listen."""
        ...

    def announce(self, step: int, intended: str) -> Answer | None:
        """Announce the intent and wait for an answer (None: nobody answered)."""
        ...

    def run_skill(self, step: int, action: str) -> SkillReport:
        """Run the robot's action; returns once the world applied the joint step."""
        ...

    def step_done(self, step: int, action: str, corrected: bool, skill: SkillReport,
                  corrections: int) -> None:
        """Say how step ``step`` went."""
        ...

    def check_cancel(self) -> None:
        """Raise :class:`TaskCanceledError` when the run is canceled."""
        ...


@dataclass
class TaskExecutionResult:
    """How a run ended, with what the outcome message needs."""

    success: bool
    message: str
    trajectory: list = field(default_factory=list)   # Seen.record of steps 0..H
    decisions: int = 0       # steps in which the robot meant to act or was told to
    corrections: int = 0
    # Trajectory steps (transitions into trajectory[k + 1]) after the robot's own skill
    # failed; from a lockstep world these are the joint steps it failed at.
    failed_steps: list[int] = field(default_factory=list)
    skill_failures: int = 0   # robot skills that failed


class TaskExecution:
    """The executor's loop for one run of a task (a new one per run)."""

    def __init__(self, model: Domain, port: RobotPort, log: Log, max_steps: int,
                 idle_limit: int):
        self.model = model
        self.port = port
        self.log = log
        self.max_steps = max_steps
        self.rule = ReplanRule(follow_world=True, idle_limit=idle_limit)

    def run(self, task: Task) -> TaskExecutionResult:
        model, port, log, rule = self.model, self.port, self.log, self.rule
        first = port.team_state(0)
        state, unusable = state_to_act_on(model, task, first.state, model.initial_state(task))
        if unusable:
            log.warning(f'task {task.task_id}: the first team_state seen is not a state the '
                        f"robot can act on ({unusable}); starting from the task's start")
        plan = port.plan(task, state, alone=False)
        port.wait_listeners()
        result = TaskExecutionResult(False, '', [first.record])
        index = step = 0
        while not model.goal_reached(task, state):
            if step >= self.max_steps:
                result.message = f'goal not reached after {self.max_steps} steps'
                log.error(f'task {task.task_id}: {result.message}')
                return result
            port.check_cancel()
            intended = plan.steps[index].robot if index < len(plan.steps) else NOOP
            answer = port.announce(step, intended)
            corrected = answer is not None and answer.action != intended
            executed = answer.action if answer is not None and corrected else intended
            result.decisions += intended != NOOP or executed != NOOP
            result.corrections += corrected
            if answer is not None and corrected:
                log.info(f'step {step}: corrected by {answer.sender or "someone"}: '
                         f'{intended} -> {executed}')
            skill = port.run_skill(step, executed)
            failed = not skill.success
            if failed:
                result.skill_failures += 1
                log.warning(f"task {task.task_id} step {step}: the robot's skill failed on "
                            f'{executed} ({skill.message or "no reason given"}); re-planning '
                            'from the observed state')
            seen = port.observe(step, executed, skill)
            if failed and seen:
                # The first observed step after the failure: the evidence drops it where
                # nothing seen changed (the robot's event, not the partner's); from
                # perception as events every step is a change, so it stays, and a change
                # there is the partner's.
                result.failed_steps.append(len(result.trajectory) - 1)
            # The robot acts on what perception reports, unless no world is in it (a
            # glitch): then on the last state it could act on (the evidence keeps both).
            before = state
            for after in seen:
                result.trajectory.append(after.record)
                state, unusable = state_to_act_on(model, task, after.state, state)
                if unusable:
                    log.warning(f'task {task.task_id} step {step}: the team_state seen is not '
                                f'a state the robot can act on ({unusable}); going on from '
                                'the last one it could')
            port.step_done(step, executed, corrected, skill, result.corrections)
            step += 1
            index += 1
            replan = rule.after_step(plan, index, before, state, corrected,
                                     answered=answer is not None, failed=failed)
            if replan is None or model.goal_reached(task, state):
                continue
            if replan == 'alone':
                if not rule.alone:
                    log.warning(f'task {task.task_id}: nobody answered and the partner left its '
                                f'part of the plan undone for {rule.idle_limit} steps; the '
                                'robot plans the rest alone')
                try:
                    plan, index = port.plan(task, state, alone=True), 0
                    rule.alone = True
                    continue
                except TaskAbortedError as error:   # e.g. the partner holds an item
                    log.warning(f'task {task.task_id}: {error}; planning under the belief '
                                'instead')
            elif not corrected and not failed:
                log.info(f'step {step - 1}: nobody answered and the world is not where the '
                         'plan predicted; re-planning from the observed state')
            plan, index = port.plan(task, state, alone=False), 0
        result.success = True
        result.message = (f'goal reached in {step} steps, {result.corrections} corrections in '
                          f'{result.decisions} robot decisions')
        log.info(f'task {task.task_id}: {result.message}')
        return result
