"""The shared-task loop on the stub domain (core/partners.py): a simulated partner that
enforces its plan on a robot teammate, the robot's re-planning rule, and what is counted.
"""

from __future__ import annotations

import numpy as np
import pytest
from stub_domain import Errands, ErrandsPlanner

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, Task
from cecm_ros.core.metrics import correction_ratio
from cecm_ros.core.partners import (
    ReplanRule,
    RobotTeammate,
    SimulatedHuman,
    off_plan,
    run_shared_task,
    steps_off_plan,
)
from cecm_ros.core.simulator import WorldSimulator

TRUTH = 'low_capability'    # runs the letter only


@pytest.fixture(scope='module')
def domain():
    return Errands()


@pytest.fixture(scope='module')
def planners(domain):
    """A planner each for the robot and the partner (separate memories), so that plans
    they agree on are made twice, not shared."""
    with ErrandsPlanner(domain) as robot_planner, ErrandsPlanner(domain) as human_planner:
        yield robot_planner, human_planner


@pytest.fixture(scope='module')
def task():
    # The partner can run the letter; the robot must run the other two.
    return Task('three', frozenset(),
                frozenset({'(done letter)', '(done parcel)', '(done plant)'}))


def run(domain, planners, task, estimate, truth):
    robot_planner, human_planner = planners
    robot = RobotTeammate(robot_planner, estimate)
    human = SimulatedHuman(human_planner, truth)
    return run_shared_task(domain, task, robot, human), robot, human


def check_execution(domain, record):
    """What every run must satisfy, whatever the robot believed."""
    assert record.goal_reached and record.task.goal <= record.trajectory[-1]
    assert list(record.trajectory) == list(record.human_plan.trajectory)
    assert len(record.steps) == len(record.human_plan.steps)
    for index, (step, planned) in enumerate(zip(record.steps, record.human_plan.steps,
                                                strict=True)):
        assert step.step == index
        # Each executes only its own actions.
        assert step.robot.agent == ROBOT and step.human.agent == HUMAN
        for action in (step.robot.action, step.intended):
            if action != NOOP:
                assert domain.action_agent(action) == ROBOT
        # The world follows the partner's plan, without self-loops.
        assert (step.robot.action, step.human.action) == (planned.robot, planned.human)
        assert not step.robot.self_loop and not step.human.self_loop
        assert step.corrected == (step.intended != planned.robot)
    assert record.corrections == sum(step.corrected for step in record.steps)
    assert record.robot_decisions == sum(
        step.intended != NOOP or step.robot.action != NOOP for step in record.steps)


def test_a_correct_estimate_needs_no_corrections(domain, planners, task):
    truth = domain.catalog.resolve(TRUTH)
    record, robot, _ = run(domain, planners, task, truth.copy(), truth)
    assert record.corrections == 0 and record.replans == 0 and robot.replans == 0
    assert record.robot_plan.steps == record.human_plan.steps
    assert [s.intended for s in record.steps] == [s.robot for s in record.human_plan.steps]
    assert record.robot_decisions > 0
    check_execution(domain, record)
    assert correction_ratio(record.corrections, record.robot_decisions) == 0.0


def test_an_optimistic_estimate_is_corrected_into_the_partners_plan(domain, planners, task):
    truth = domain.catalog.resolve(TRUTH)
    record, robot, _ = run(domain, planners, task, domain.catalog.all_capable(), truth)
    # The robot planned to leave everything to the partner, who can run the letter only.
    assert record.robot_plan.actions_of(ROBOT) == []
    assert record.robot_plan.steps != record.human_plan.steps
    assert record.corrections > 0
    assert record.replans == robot.replans == record.corrections
    check_execution(domain, record)
    first = next(step for step in record.steps if step.corrected)
    assert first.intended == record.robot_plan.steps[first.step].robot
    assert 0 < correction_ratio(record.corrections, record.robot_decisions) <= 1


def test_no_partner_action_lies_outside_its_true_capabilities(domain, planners):
    truth = domain.catalog.resolve(TRUTH)
    for task in domain.task_generator(2).tasks(6):
        record, _, human = run(domain, planners, task, domain.catalog.all_capable(), truth)
        assert human.finished and human.current_step.robot == NOOP
        done = [step.human.action for step in record.steps if step.human.action != NOOP]
        assert all(domain.partner_capable(action, truth) for action in done)
        assert ('(done letter)' in task.goal) == ('(run human letter)' in done)


def test_the_partner_reviews_intents_against_its_plan(domain, planners, task):
    human = SimulatedHuman(planners[1], domain.catalog.resolve(TRUTH))
    plan = human.begin_task(task)
    expected = plan.steps[0].robot
    assert expected != NOOP
    assert human.review_intent(expected) is None
    correction = human.review_intent('(run robot laundry)')
    assert (correction.step, correction.intended, correction.corrected) == (
        0, '(run robot laundry)', expected)
    assert human.review_intent(NOOP).corrected == expected


def test_the_robot_relaxes_an_estimate_under_which_the_goal_is_out_of_reach(domain, planners):
    """A goal only the partner can bring about (that it ran the letter itself) is out of
    reach under an estimate without the letter: the robot plans as if the partner could
    do everything, and the partner's corrections do the rest."""
    planner = planners[0]
    task = Task('by-hand', frozenset(), frozenset({'(done letter)', '(ran-by-partner letter)',
                                                   '(done parcel)'}))
    nothing = np.zeros(len(domain.catalog), dtype=bool)
    plan, relaxed = planner.plan_under_estimate(task, nothing)
    assert relaxed and plan == planner.plan(task, domain.catalog.all_capable())
    truth = domain.catalog.resolve(TRUTH)
    assert planner.plan_under_estimate(task, truth) == (planner.plan(task, truth), False)
    robot = RobotTeammate(planner, nothing)
    record = run_shared_task(domain, task, robot, SimulatedHuman(planners[1], truth))
    assert record.goal_reached
    assert record.corrections > 0 and robot.relaxed_plans > 0


# ------------------------------------------------ a world nobody enforced the plan in
def test_a_plan_is_off_where_the_world_is_not_in_the_state_it_predicted(domain, planners, task):
    plan = planners[1].plan(task, domain.catalog.resolve(TRUTH))
    assert len(set(plan.trajectory)) == len(plan.trajectory) > 2
    for done, state in enumerate(plan.trajectory):
        assert not off_plan(plan, done, state)
    # Past its last step a plan still predicts its goal state: one that ran out anywhere
    # else is off.
    assert not off_plan(plan, len(plan.steps) + 3, plan.trajectory[-1])
    assert off_plan(plan, len(plan.steps) + 3, plan.trajectory[0])
    assert off_plan(plan, 1, plan.trajectory[0])


def test_a_partner_carries_on_from_where_an_uncorrected_robot_left_the_world(domain, planners):
    """Nobody corrects the robot: the world follows neither plan, and the partner re-plans
    from what it sees, keeping its step count and the capability it declined."""
    truth = domain.catalog.resolve(TRUTH)
    robot = RobotTeammate(planners[0], domain.catalog.all_capable(),
                          ReplanRule(follow_world=True))
    replans = alone = declines = 0
    for seed in range(6):
        task = domain.task_generator(seed).next_task()
        human = SimulatedHuman(planners[1], truth, forgo_probability=1.0, seed=seed)
        human.begin_task(task)
        robot.begin_task(task)
        declined = domain.catalog.index(human.forgone) if human.forgone else None
        declines += declined is not None
        world = WorldSimulator(domain, truth, domain.initial_state(task))
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
    assert declines > 0   # some task had a capability to decline
    assert replans > 0    # an optimistic robot left uncorrected does leave the plans
    assert alone > 0      # and in some task the two wait for each other


def test_answered_steps_keep_the_papers_protocol_whatever_the_rule(domain, planners):
    """A partner that answers every intent enforces its plan: following the world then
    changes nothing."""
    corrected = 0
    for spec, seed in ((TRUTH, 0), ('run-parcel=0,run-plant=0', 1), ('0000', 2)):
        truth = domain.catalog.resolve(spec)
        for task in domain.task_generator(seed).tasks(3):
            records = []
            for rule in (None, ReplanRule(follow_world=True, idle_limit=1)):
                robot = RobotTeammate(planners[0], domain.catalog.all_capable(), rule)
                record = run_shared_task(domain, task, robot, SimulatedHuman(planners[1],
                                                                              truth))
                records.append((record.corrections, record.robot_decisions, record.replans,
                                [step.intended for step in record.steps]))
            assert records[0] == records[1], (spec, task.task_id)
            corrected += records[0][0]
    assert corrected > 0   # the rules had corrections to agree on


def test_the_robot_plans_alone_once_the_partner_leaves_its_part_undone(domain, planners, task):
    plan = planners[1].plan(task, domain.catalog.resolve(TRUTH))
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
    rule.begin_task()
    assert not rule.alone and rule.idle == 0
    # Answered steps, or a world where the plan said, never count.
    for answered_rule in (ReplanRule(follow_world=True, idle_limit=1),
                          ReplanRule(follow_world=False, idle_limit=1)):
        assert answered_rule.after_step(plan, due, start, start, False) is None
        assert answered_rule.after_step(plan, due, start, plan.trajectory[due], False,
                                        answered=False) is None
    assert ReplanRule(follow_world=False).after_step(plan, due, start, start, False,
                                                     answered=False) is None
    # A correction or a failed skill always re-plans, under the estimate.
    assert ReplanRule().after_step(plan, due, start, plan.trajectory[due], True) == 'belief'
    assert ReplanRule().after_step(plan, due, start, start, False, failed=True) == 'belief'
    # 0 waits for the partner for ever.
    patient = ReplanRule(follow_world=True, idle_limit=0)
    assert all(patient.after_step(plan, due, start, start, False, answered=False) == 'belief'
               for _ in range(10))
    # A step at which the plan gave the partner nothing to do is not the partner's fault.
    waits = [i + 1 for i, step in enumerate(plan.steps) if step.human == NOOP]
    assert waits
    blameless = ReplanRule(follow_world=True, idle_limit=1)
    here = plan.trajectory[waits[0] - 1]
    assert blameless.after_step(plan, waits[0], here, here, False, answered=False) == 'belief'
    with pytest.raises(ValueError, match='idle_limit'):
        ReplanRule(idle_limit=-1)


def test_steps_off_the_partners_plan_are_counted(domain, planners, task):
    truth = domain.catalog.resolve(TRUTH)
    record, _, _ = run(domain, planners, task, domain.catalog.all_capable(), truth)
    executed = [(step.robot.action, step.human.action) for step in record.steps]
    # The paper's protocol: the partner's plan, step for step, whatever the robot believed.
    assert steps_off_plan(record.human_plan, executed) == 0
    assert executed[0][0] != NOOP
    swapped = [(NOOP, executed[0][1])] + executed[1:]
    assert steps_off_plan(record.human_plan, swapped) == 1
    assert steps_off_plan(record.human_plan, executed + [(NOOP, NOOP)]) == 0
    assert steps_off_plan(record.human_plan, executed[:-1]) == 1
    assert steps_off_plan(record.human_plan, executed + [(NOOP, '(run human keys)')]) == 1


def test_a_partner_that_forgoes_a_capability_is_seeded():
    """Sent to a place for each errand, the partner's plan uses two capabilities per
    errand it runs; which one it declines is drawn from its own seed."""
    domain = Errands(places={'post-office': ('letter',), 'depot': ('parcel',),
                             'garden': ('plant',), 'hall': ('keys',)})
    truth = domain.catalog.all_capable()
    task = Task('two', frozenset(), frozenset({'(done letter)', '(done parcel)'}))
    with ErrandsPlanner(domain) as planner:
        optimal = planner.plan(task, truth)
        used = {domain.catalog.names[g] for g in optimal.human_capabilities_used}
        assert used == {'run-letter', 'go-post-office', 'run-parcel', 'go-depot'}
        forgone = set()
        for seed in range(8):
            always = SimulatedHuman(planner, truth, forgo_probability=1.0, seed=seed)
            plan = always.begin_task(task)
            assert always.forgone in used
            forgone.add(always.forgone)
            assert domain.catalog.index(always.forgone) not in plan.human_capabilities_used
            assert plan.cost > optimal.cost      # the robot runs that errand instead
            again = SimulatedHuman(planner, truth, forgo_probability=1.0, seed=seed)
            assert again.begin_task(task).sequential == plan.sequential
            assert again.forgone == always.forgone
        assert len(forgone) > 1
        never = SimulatedHuman(planner, truth)
        assert never.begin_task(task).sequential == optimal.sequential
        assert never.forgone is None
        with pytest.raises(ValueError, match='forgo_probability'):
            SimulatedHuman(planner, truth, forgo_probability=2.0)
