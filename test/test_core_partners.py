"""The shared-task loop: a simulated human enforcing its plan on a robot teammate."""

import numpy as np
import pytest
from core_fixtures import close_planner

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, TidyUpModel
from cecm_ros.core.metrics import correction_ratio
from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, run_shared_task
from cecm_ros.core.planner import JointPlanner
from cecm_ros.core.tasks import TaskGenerator


@pytest.fixture(scope='module')
def model():
    return TidyUpModel()


@pytest.fixture(scope='module')
def planners(model):
    """Separate planners (separate caches and processes) for the robot and the human, so
    agreeing plans are computed twice rather than shared."""
    robot_planner, human_planner = JointPlanner(model), JointPlanner(model)
    yield robot_planner, human_planner
    close_planner(robot_planner)
    close_planner(human_planner)


@pytest.fixture(scope='module')
def task(model):
    # Seed 0: the optimistic plan gives the human handling in the living room and the
    # bedroom, which a low-capability human cannot do.
    return TaskGenerator(model, seed=0).next_task()


def run(model, planners, task, estimate, truth):
    robot_planner, human_planner = planners
    robot = RobotTeammate(robot_planner, estimate)
    human = SimulatedHuman(human_planner, truth)
    return run_shared_task(model, task, robot, human), robot, human


def check_execution(model, record):
    """What every run must satisfy, whatever the estimate."""
    goal = model.state_from_atoms(record.task.goal)
    assert record.goal_reached
    assert record.trajectory[-1] & goal == goal
    assert list(record.trajectory) == list(record.human_plan.trajectory)
    assert len(record.steps) == len(record.human_plan.steps)
    pairs = zip(record.steps, record.human_plan.steps, strict=True)
    for index, (step, planned) in enumerate(pairs):
        assert step.step == index
        # The robot only ever executes robot actions, the human only human actions.
        assert step.robot.agent == ROBOT and step.human.agent == HUMAN
        if step.robot.action != NOOP:
            assert model.action(step.robot.action).agent == ROBOT
        if step.intended != NOOP:
            assert model.action(step.intended).agent == ROBOT
        # The world follows the human's plan, without self-loops.
        assert (step.robot.action, step.human.action) == (planned.robot, planned.human)
        assert not step.robot.self_loop and not step.human.self_loop
        assert step.corrected == (step.intended != planned.robot)
    assert record.corrections == sum(step.corrected for step in record.steps)
    assert record.robot_decisions == sum(
        step.intended != NOOP or step.robot.action != NOOP for step in record.steps)


def test_correct_estimate_needs_no_corrections(model, planners, task):
    truth = model.catalog.partner_vector('low_capability')
    record, robot, _ = run(model, planners, task, truth.copy(), truth)
    assert record.corrections == 0 and record.replans == 0 and robot.replans == 0
    assert record.robot_plan.steps == record.human_plan.steps
    assert record.robot_plan.sequential == record.human_plan.sequential
    assert [s.intended for s in record.steps] == [s.robot for s in record.human_plan.steps]
    check_execution(model, record)
    assert correction_ratio(record.corrections, record.robot_decisions) == 0.0


def test_optimistic_estimate_is_corrected_into_the_human_plan(model, planners, task):
    truth = model.catalog.partner_vector('low_capability')
    record, robot, _ = run(model, planners, task, model.catalog.all_capable(), truth)
    assert record.robot_plan.steps != record.human_plan.steps  # the seeded case differs
    assert record.corrections > 0
    assert record.replans == robot.replans == record.corrections
    check_execution(model, record)
    first = next(step for step in record.steps if step.corrected)
    assert first.intended == record.robot_plan.steps[first.step].robot
    assert 0 < correction_ratio(record.corrections, record.robot_decisions) <= 1


def test_no_human_action_outside_its_true_capabilities(model, planners, task):
    truth = model.catalog.partner_vector('low_capability')
    record, _, human = run(model, planners, task, model.catalog.all_capable(), truth)
    assert human.finished and human.current_step.robot == NOOP
    for step in record.steps:
        if step.human.action != NOOP:
            assert model.human_capable(model.action(step.human.action), truth)


def test_simulated_human_reviews_intents_against_its_plan(model, planners, task):
    _, human_planner = planners
    human = SimulatedHuman(human_planner, model.catalog.partner_vector('low_capability'))
    plan = human.begin_task(task)
    expected = plan.steps[0].robot
    assert human.review_intent(expected) is None
    correction = human.review_intent('(move robot kitchen attic)')
    assert (correction.step, correction.intended, correction.corrected) == (
        0, '(move robot kitchen attic)', expected)


def test_robot_relaxes_an_estimate_that_contradicts_the_partner_in_hand():
    """A pessimistic robot re-planning while the partner holds an item it 'cannot' place."""
    model = TidyUpModel()
    with JointPlanner(model) as planner:
        task = TaskGenerator(model, 0).next_task()
        truth = model.catalog.resolve('high_capability')
        robot = RobotTeammate(planner, np.zeros(len(model.catalog), dtype=bool))
        record = run_shared_task(model, task, robot, SimulatedHuman(planner, truth))
        assert record.goal_reached
        assert record.corrections > 0 and robot.relaxed_plans > 0
