"""The shared-task loop in the cases TidyUP makes: a partner who holds an item the
robot's estimate says it can never put down, and Fast Downward's plans of TidyUP's
partner types rebuilt from their steps by TidyUP's transitions (the loop itself is
tested on the stub domain in test/core/test_partners.py)."""

import numpy as np

from cecm_ros.core.partners import RobotTeammate, SimulatedHuman, run_shared_task
from cecm_ros.core.simulator import predicted_trajectory
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.domains.tidyup.tasks import TaskGenerator


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


def test_the_trajectory_a_plan_predicts_is_rebuilt_from_its_steps(model):
    """What the executor does with a plan that came over a message (no states)."""
    task = TaskGenerator(model, seed=0).next_task()
    start = model.state_from_atoms(task.initial)
    with FastDownwardPlanner(model) as planner:
        for spec in ('low_capability', 'high_capability', 'full_capability'):
            vector = model.catalog.resolve(spec)
            plan = planner.plan(task, vector)
            assert predicted_trajectory(model, start, plan.steps, vector) == plan.trajectory
