"""The shared-task loop: a simulated human enforcing its plan on a robot teammate."""

import numpy as np
import pytest
from core_fixtures import close_planner

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT
from cecm_ros.core.metrics import correction_ratio
from cecm_ros.core.partners import (
    ReplanRule,
    RobotTeammate,
    SimulatedHuman,
    off_plan,
    run_shared_task,
    steps_off_plan,
)
from cecm_ros.core.simulator import WorldSimulator, predicted_trajectory
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.domains.tidyup.tasks import TaskGenerator


@pytest.fixture(scope='module')
def planners(model):
    """Separate planners (separate caches and processes) for the robot and the human, so
    agreeing plans are computed twice rather than shared."""
    robot_planner, human_planner = FastDownwardPlanner(model), FastDownwardPlanner(model)
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
    with FastDownwardPlanner(model) as planner:
        task = TaskGenerator(model, 0).next_task()
        truth = model.catalog.resolve('high_capability')
        robot = RobotTeammate(planner, np.zeros(len(model.catalog), dtype=bool))
        record = run_shared_task(model, task, robot, SimulatedHuman(planner, truth))
        assert record.goal_reached
        assert record.corrections > 0 and robot.relaxed_plans > 0


# --------------------------------------------- a world nobody enforced the plan in
def test_a_plan_is_off_where_the_world_is_not_in_the_state_it_predicted(model, planners, task):
    truth = model.catalog.resolve('low_capability')
    plan = planners[1].plan(task, truth)
    for done, state in enumerate(plan.trajectory):
        assert not off_plan(plan, done, state)
    # Past its last step a plan still predicts its goal state: one that ran out anywhere
    # else is off.
    assert not off_plan(plan, len(plan.steps) + 3, plan.trajectory[-1])
    assert off_plan(plan, len(plan.steps) + 3, plan.trajectory[0])
    assert off_plan(plan, 1, plan.trajectory[0])


def test_the_trajectory_a_plan_predicts_is_rebuilt_from_its_steps(model, planners, task):
    """What the executor does with a plan that came over a message (no states)."""
    for spec in ('low_capability', 'high_capability', 'full_capability'):
        vector = model.catalog.resolve(spec)
        plan = planners[1].plan(task, vector)
        start = model.state_from_atoms(task.initial)
        assert predicted_trajectory(model, start, plan.steps, vector) == plan.trajectory


def test_a_partner_carries_on_from_where_an_uncorrected_robot_left_the_world(model, planners):
    """Nobody corrects the robot: the world follows neither plan, and the partner
    re-plans from what it sees, keeping its step count and the capability it declined."""
    truth = model.catalog.resolve('low_capability')
    robot = RobotTeammate(planners[0], model.catalog.all_capable(),
                          ReplanRule(follow_world=True))
    replans = alone = 0
    for seed in range(6):
        task = TaskGenerator(model, seed=seed).next_task()
        human = SimulatedHuman(planners[1], truth, forgo_probability=1.0, seed=seed)
        human.begin_task(task)
        robot.begin_task(task)
        declined = model.catalog.index(human.forgone) if human.forgone else None
        world = WorldSimulator(model, truth, model.state_from_atoms(task.initial))
        replanned_at = []
        for step in range(60):
            if world.goal_reached(task):
                break
            assert human.step == step
            if not human.expects(world.state):
                plan = human.replan(world.state)
                replanned_at.append(step)
                assert plan.trajectory[0] == world.state and human.step == step
                if declined is not None:
                    assert declined not in plan.human_capabilities_used
            world.step(robot.intent(), human.current_step.human)
            human.advance()
            robot.after_step(False, world.state, answered=False)   # nobody answers
        assert world.goal_reached(task), f'seed {seed}: goal not reached in 60 steps'
        assert human.replans == len(replanned_at)
        whole = human.task_plan().steps
        assert len(whole) == human.first_step + len(human.plan.steps)
        assert whole[human.first_step:] == human.plan.steps
        replans += human.replans
        alone += robot.rule.alone
    assert replans > 0   # an optimistic robot left uncorrected does leave the plans
    assert alone > 0     # and in some task the two wait for each other



def test_answered_steps_keep_the_papers_protocol_whatever_the_rule(model, planners):
    """A partner that answers every intent enforces its plan: following the world then
    changes nothing, so the graph's executor (which follows it) runs `cecm experiment`."""
    for spec, seed in (('low_capability', 0), ('high_capability', 1), ('mobility_limited', 2)):
        truth = model.catalog.resolve(spec)
        for task in TaskGenerator(model, seed=seed).tasks(3):
            records = []
            for rule in (None, ReplanRule(follow_world=True, idle_limit=1)):
                robot = RobotTeammate(planners[0], model.catalog.all_capable(), rule)
                human = SimulatedHuman(planners[1], truth)
                record = run_shared_task(model, task, robot, human)
                records.append((record.corrections, record.robot_decisions, record.replans,
                                [step.intended for step in record.steps]))
            assert records[0] == records[1], (spec, task.task_id)


def test_the_robot_plans_alone_once_the_partner_leaves_its_part_undone(model, planners):
    truth = model.catalog.all_capable()
    task = TaskGenerator(model, seed=3).next_task()
    plan = planners[1].plan(task, truth)
    due = next(i for i, step in enumerate(plan.steps) if step.human != NOOP) + 1
    start = plan.trajectory[due - 1]
    rule = ReplanRule(follow_world=True, idle_limit=2)
    # Nothing happened where the plan gave the partner an action, twice: alone.
    assert rule.after_step(plan, due, start, start, corrected=False, answered=False) == \
        'belief'
    assert rule.after_step(plan, due, start, start, corrected=False, answered=False) == \
        'alone'
    rule.alone = True
    assert rule.after_step(plan, due, start, start, False, answered=False) == 'alone'
    assert rule.after_step(plan, due, start, start, corrected=True) == 'alone'
    # Answered steps, or a world where the plan said, never count.
    for answered_rule in (ReplanRule(follow_world=True, idle_limit=1),
                          ReplanRule(follow_world=False, idle_limit=1)):
        assert answered_rule.after_step(plan, due, start, start, False) is None
        assert answered_rule.after_step(plan, due, start, plan.trajectory[due], False,
                                        answered=False) is None
    assert ReplanRule(follow_world=False).after_step(plan, due, start, start, False,
                                                     answered=False) is None
    # 0 waits for the partner for ever.
    patient = ReplanRule(follow_world=True, idle_limit=0)
    assert all(patient.after_step(plan, due, start, start, False, answered=False) == 'belief'
               for _ in range(10))
    # A step at which the plan gave the partner nothing to do is not the partner's fault.
    waits = [i + 1 for i, step in enumerate(plan.steps) if step.human == NOOP]
    if waits:
        blameless = ReplanRule(follow_world=True, idle_limit=1)
        here = plan.trajectory[waits[0] - 1]
        assert blameless.after_step(plan, waits[0], here, here, False, answered=False) == \
            'belief'
    with pytest.raises(ValueError, match='idle_limit'):
        ReplanRule(idle_limit=-1)


def test_steps_off_the_partners_plan_are_counted(model, planners, task):
    truth = model.catalog.resolve('low_capability')
    record, _robot, _human = run(model, planners, task, model.catalog.all_capable(), truth)
    executed = [(step.robot.action, step.human.action) for step in record.steps]
    # The paper's protocol: the partner's plan, step for step, whatever the robot believed.
    assert steps_off_plan(record.human_plan, executed) == 0
    swapped = [(NOOP, human) for _robot_action, human in executed[:1]] + executed[1:]
    assert steps_off_plan(record.human_plan, swapped) == int(executed[0][0] != NOOP)
    assert steps_off_plan(record.human_plan, executed + [(NOOP, NOOP)]) == 0
    assert steps_off_plan(record.human_plan, executed[:-1]) == 1
