"""The world simulator: deterministic transitions with the paper's self-loop rule.

An action whose enabling capability the actor lacks does not fail and is not removed:
it is a self-loop (the state stays as it was and the step is spent). An action whose
ordinary preconditions do not hold is a self-loop too; the outcome says which.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .domain import HUMAN, NOOP, ROBOT, TidyUpModel
from .errors import UnknownNameError


@dataclass(frozen=True)
class ActionOutcome:
    agent: str
    action: str          # canonical action text, or "noop"
    changed: bool        # False for self-loops and no-ops
    reason: str = ''     # why nothing changed ('' when the action applied)

    @property
    def self_loop(self) -> bool:
        return self.action != NOOP and not self.changed


def transition(model: TidyUpModel, state: int, agent: str, action_text: str | None,
               human_capabilities: np.ndarray) -> tuple[int, ActionOutcome]:
    """Apply one agent's action to ``state``; unknown actions raise, infeasible ones loop."""
    if action_text is None or action_text == NOOP:
        return state, ActionOutcome(agent, NOOP, False, 'no-op')
    action = model.action(action_text)
    if action.agent != agent:
        raise UnknownNameError(
            f'action {action.name} belongs to {action.agent}, not to {agent}')
    if not model.human_capable(action, human_capabilities):
        missing = model.catalog.names[action.gate]
        return state, ActionOutcome(agent, action.name, False, f'missing capability {missing}')
    if not action.statically_possible:
        return state, ActionOutcome(agent, action.name, False,
                                    'impossible in this household (e.g. no sink there)')
    if not action.applicable(state):
        unmet = model.atoms_of(action.pre & ~state)
        return state, ActionOutcome(agent, action.name, False,
                                    'precondition not met: ' + ' '.join(unmet))
    return action.apply(state), ActionOutcome(agent, action.name, True)


class WorldSimulator:
    """The household's state, advanced one joint step at a time."""

    def __init__(self, model: TidyUpModel, human_capabilities: np.ndarray, state: int):
        self.model = model
        self.human_capabilities = model.catalog.check_vector(human_capabilities)
        self.state = state
        self.trajectory: list[int] = [state]

    def step(self, robot_action: str | None, human_action: str | None
             ) -> tuple[ActionOutcome, ActionOutcome]:
        """Apply a joint step. The human acts first, then the robot, each on the
        state the previous one left, so two actions that compete for one item
        resolve the same way every time (the second one loops)."""
        # Validate both before changing anything, so bad input leaves the world as it was.
        for agent, text in ((ROBOT, robot_action), (HUMAN, human_action)):
            if text not in (None, NOOP) and self.model.action(text).agent != agent:
                raise UnknownNameError(f'action {text} is not an action of the {agent}')
        state, human = transition(self.model, self.state, HUMAN, human_action,
                                  self.human_capabilities)
        state, robot = transition(self.model, state, ROBOT, robot_action,
                                  self.human_capabilities)
        self.state = state
        self.trajectory.append(state)
        return robot, human

    def satisfies(self, goal_state: int) -> bool:
        return (self.state & goal_state) == goal_state


def predicted_trajectory(model: TidyUpModel, state: int, steps, human_capabilities: np.ndarray
                         ) -> tuple[int, ...]:
    """The states a joint plan's steps lead through from ``state`` for a partner with
    ``human_capabilities``: what the plan predicts, for a plan that came without them
    (over a message)."""
    world = WorldSimulator(model, human_capabilities, state)
    for step in steps:
        world.step(step.robot, step.human)
    return tuple(world.trajectory)
