"""The executor's loop without ROS: TaskExecution over a port on the real core.

The port plans with the stub domain's real planner under a given belief, applies each
joint step in a WorldSimulator, and answers intents as the core's SimulatedHuman does;
so with a partner who answers every intent a run must go as the core's own loop
(``run_shared_task``) goes. Faults are the port's: a robot skill that fails, a partner
who never answers, a task canceled, too few steps allowed.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT
from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, partner_seed, run_shared_task
from cecm_ros.core.simulator import SKILL_FAILED, WorldSimulator
from cecm_ros.session.task_execution import (
    Answer,
    Seen,
    TaskAbortedError,
    TaskCanceledError,
    TaskExecution,
)

LOG = logging.getLogger('test_task_execution')
TRUTH = 'low_capability'   # the stub's partner runs the first errand only


class Skill:
    def __init__(self, success: bool, state_changed: bool, message: str = ''):
        self.success, self.state_changed, self.message = success, state_changed, message


class CorePort:
    """A RobotPort on the core: the real planner, a simulated world and partner."""

    def __init__(self, domain, planner, task, truth, belief, partner=None,
                 failing_steps=(), cancel_at: int | None = None):
        self.domain, self.planner, self.task = domain, planner, task
        self.belief = belief
        self.world = WorldSimulator(domain, truth, domain.initial_state(task))
        self.partner = partner
        self.failing_steps = set(failing_steps)
        self.cancel_at = cancel_at
        self.plans: list[tuple[bool, int]] = []   # (alone, steps) per plan asked for
        self.done: list[tuple[int, str, bool, bool]] = []
        self.robot_outcomes: list = []
        if partner is not None:
            partner.begin_task(task)

    def team_state(self, step: int) -> Seen:
        assert step == len(self.world.trajectory) - 1, 'a state asked out of turn'
        return Seen(('record', step), self.world.trajectory[step])

    def observe(self, step: int, action: str, skill) -> list[Seen]:
        return [self.team_state(step + 1)]

    def plan(self, task, state, alone: bool):
        here = self.domain.task_from_state(task, state)
        if alone:
            plan = self.planner.plan(here, np.zeros(len(self.domain.catalog.names)))
        else:
            plan, _ = self.planner.plan_under_estimate(here, self.belief)
        self.plans.append((alone, len(plan.steps)))
        return plan

    def wait_listeners(self) -> None:
        pass

    def announce(self, step: int, intended: str) -> Answer | None:
        if self.partner is None:
            return None
        self.partner.choose_step(self.world.state, intended)
        correction = self.partner.review_intent(intended)
        return Answer(correction.corrected if correction else intended, 'partner')

    def run_skill(self, step: int, action: str) -> Skill:
        failed = step in self.failing_steps
        human = self.partner.current_step.human if self.partner is not None else NOOP
        before = self.world.state
        robot, _ = self.world.step(action, human, robot_failed=failed)
        self.robot_outcomes.append(robot)
        if self.partner is not None:
            self.partner.advance(self.world.state)
            if failed and not self.partner.expects(self.world.state):
                self.partner.replan(self.world.state)
        return Skill(not failed, self.world.state != before,
                     'the grasp slipped' if failed else '')

    def step_done(self, step, action, corrected, skill, corrections) -> None:
        self.done.append((step, action, corrected, skill.success))

    def check_cancel(self) -> None:
        if self.cancel_at is not None and len(self.done) >= self.cancel_at:
            raise TaskCanceledError()


@pytest.fixture(scope='module')
def truth(errands):
    domain, _ = errands
    return domain.catalog.resolve(TRUTH)


def _tasks(domain, count=4):
    return list(domain.task_generator(3).tasks(count))


def _run(domain, port, max_steps=100, idle_limit=3):
    return TaskExecution(domain, port, LOG, max_steps, idle_limit).run(port.task)


def test_a_partner_who_answers_every_intent_gives_the_core_loop_s_run(errands, truth):
    """Under a belief that the partner can do everything, the robot's plans leave it
    errands it cannot run; it corrects them, as in run_shared_task."""
    domain, planner = errands
    belief = np.ones(len(domain.catalog.names))
    corrected = 0
    for task in _tasks(domain):
        seed = partner_seed(7, task.task_id)
        port = CorePort(domain, planner, task, truth, belief,
                        SimulatedHuman(planner, truth, seed=seed))
        run = _run(domain, port)
        record = run_shared_task(domain, task, RobotTeammate(planner, belief),
                                 SimulatedHuman(planner, truth, seed=seed))
        assert run.success and record.goal_reached
        assert port.world.trajectory == record.trajectory
        assert run.trajectory == [('record', t) for t in range(len(record.trajectory))]
        assert run.corrections == record.corrections
        assert run.decisions == record.robot_decisions
        assert run.failed_steps == []
        assert [d[2] for d in port.done].count(True) == run.corrections
        corrected += run.corrections
    assert corrected > 0, 'no task needed a correction: the comparison shows nothing'


def test_a_failed_skill_is_the_robot_s_own_and_the_robot_plans_again(errands, truth):
    domain, planner = errands
    task = _tasks(domain, 1)[0]
    port = CorePort(domain, planner, task, truth, truth,
                    SimulatedHuman(planner, truth, seed=partner_seed(1, task.task_id)),
                    failing_steps={0})
    run = _run(domain, port)
    assert run.success
    assert run.failed_steps == [0]
    step, action, _, succeeded = port.done[0]
    assert action != NOOP and not succeeded
    assert port.robot_outcomes[0].reason == SKILL_FAILED   # the world left it undone
    assert len(port.plans) >= 2, port.plans   # the first plan, and one after the failure
    assert domain.goal_reached(task, port.world.state)


def test_a_partner_who_never_answers_or_acts_leaves_the_robot_to_plan_alone(errands, truth):
    """A belief that the partner runs every errand, and a partner who does nothing:
    after idle_limit unanswered steps the robot plans the rest for itself."""
    domain, planner = errands
    belief = np.ones(len(domain.catalog.names))
    task = next(t for t in _tasks(domain, 8)
                if any(s.human != NOOP for s in planner.plan_under_estimate(t, belief)[0].steps))
    port = CorePort(domain, planner, task, truth, belief, partner=None)
    run = _run(domain, port, idle_limit=2)
    assert run.success
    assert any(alone for alone, _ in port.plans), port.plans
    assert run.corrections == 0
    assert all(action == NOOP or domain.action_agent(action) == ROBOT
               for _, action, _, _ in port.done)
    assert HUMAN not in {domain.action_agent(a) for _, a, _, _ in port.done if a != NOOP}


def test_too_few_steps_end_the_run_unfinished_with_the_reason(errands, truth):
    domain, planner = errands
    task = _tasks(domain, 1)[0]
    port = CorePort(domain, planner, task, truth, truth,
                    SimulatedHuman(planner, truth, seed=partner_seed(2, task.task_id)))
    run = _run(domain, port, max_steps=1)
    assert not run.success
    assert run.message == 'goal not reached after 1 steps'
    assert len(run.trajectory) == 2 and len(port.done) == 1


def test_a_canceled_run_stops_where_it_is(errands, truth):
    domain, planner = errands
    task = next(t for t in _tasks(domain, 8) if len(planner.plan(t, truth).steps) > 1)
    port = CorePort(domain, planner, task, truth, truth,
                    SimulatedHuman(planner, truth, seed=partner_seed(2, task.task_id)),
                    cancel_at=1)
    with pytest.raises(TaskCanceledError):
        _run(domain, port)
    assert len(port.done) == 1


def test_no_plan_for_the_robot_alone_falls_back_to_the_belief(errands, truth):
    """When planning alone fails, the robot says so and plans under the belief."""
    domain, planner = errands
    belief = np.ones(len(domain.catalog.names))
    task = next(t for t in _tasks(domain, 8)
                if any(s.human != NOOP for s in planner.plan_under_estimate(t, belief)[0].steps))

    class NoAlonePlan(CorePort):
        def plan(self, task, state, alone):
            if alone:
                self.plans.append((True, -1))
                raise TaskAbortedError('no plan for the robot alone', retry=False)
            return super().plan(task, state, alone)

    port = NoAlonePlan(domain, planner, task, truth, belief, partner=None)
    run = _run(domain, port, max_steps=12, idle_limit=1)
    assert (True, -1) in port.plans
    assert not run.success   # the partner never acts, so the belief's plan cannot finish
