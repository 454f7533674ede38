"""The world simulator: joint steps through a domain's transitions.

The domain applies each action with the paper's self-loop rule (an action whose
capability the actor lacks leaves the state as it was and spends the step); this module
orders the two agents' actions of a joint step and records the trajectory.
"""

from __future__ import annotations

import numpy as np

from .domain import HUMAN, NOOP, ROBOT, ActionOutcome, Domain, State, Task
from .errors import UnknownNameError

__all__ = ['SKILL_FAILED', 'ActionOutcome', 'WorldSimulator', 'predicted_trajectory']

# The reason a robot action's outcome gives when its skill failed.
SKILL_FAILED = 'the skill failed'


class WorldSimulator:
    """A domain's state, advanced one joint step at a time."""

    def __init__(self, domain: Domain, human_capabilities: np.ndarray, state: State):
        self.domain = domain
        self.human_capabilities = domain.catalog.check_vector(human_capabilities)
        self.state = state
        self.trajectory: list[State] = [state]

    def step(self, robot_action: str | None, human_action: str | None,
             robot_failed: bool = False) -> tuple[ActionOutcome, ActionOutcome]:
        """Apply a joint step. The human acts first, then the robot, each on the
        state the previous one left, so two actions that compete for one object
        resolve the same way every time (the second one loops). ``robot_failed``: the
        robot's skill for its action failed, so only the human's action applies and the
        robot's outcome says :data:`SKILL_FAILED`."""
        # Validate both before changing anything, so bad input leaves the world as it was.
        for agent, text in ((ROBOT, robot_action), (HUMAN, human_action)):
            if text not in (None, NOOP) and self.domain.action_agent(text) != agent:
                raise UnknownNameError(f'action {text} is not an action of the {agent}')
        state, human = self.domain.transition(self.state, HUMAN, human_action,
                                              self.human_capabilities)
        if robot_failed:
            robot = ActionOutcome(ROBOT, self.domain.canonical_action(robot_action)
                                  if robot_action not in (None, NOOP) else NOOP,
                                  False, SKILL_FAILED)
        else:
            state, robot = self.domain.transition(state, ROBOT, robot_action,
                                                  self.human_capabilities)
        self.state = state
        self.trajectory.append(state)
        return robot, human

    def goal_reached(self, task: Task) -> bool:
        return self.domain.goal_reached(task, self.state)


def predicted_trajectory(domain: Domain, state: State, steps, human_capabilities: np.ndarray
                         ) -> tuple:
    """The states a joint plan's steps lead through from ``state`` for a partner with
    ``human_capabilities``: what the plan predicts, for a plan that came without them
    (over a message)."""
    world = WorldSimulator(domain, human_capabilities, state)
    for step in steps:
        world.step(step.robot, step.human)
    return tuple(world.trajectory)
