"""Stub partner plug-ins for the tests: one of each kind a researcher may write, and ones
that break each rule the loader and the partner check.

Each is made as ``Class(domain=..., capabilities=..., seed=...)`` and asked ``act(view)``
every joint step (docs/partners.md, "Your own partner").
"""

from __future__ import annotations

from cecm_ros.core.domain import HUMAN, NOOP
from cecm_ros.core.partner_policies import PartnerMove


class _Base:
    def __init__(self, domain, capabilities, seed):
        self.domain, self.capabilities, self.seed = domain, capabilities, seed
        self.tasks = 0

    def begin_task(self, view):
        self.tasks += 1


class Waiter(_Base):
    """Never does anything itself; lets the robot do the task."""

    def act(self, view):
        return NOOP


class RandomHelper(_Base):
    """A seeded random action it can do, and a word to the robot when it clashes: if the
    robot announced the same kind of action, it tells the robot to wait."""

    def act(self, view):
        allowed = view.allowed_actions()
        if not allowed:
            return NOOP
        action = allowed[int(view.rng.integers(len(allowed)))]
        kind = action.strip('()').split()[0]
        if view.intent != NOOP and view.intent.strip('()').split()[0] == kind:
            return PartnerMove(action, robot=NOOP)
        return action


class Overreacher(_Base):
    """Returns an applicable action whose capability it lacks (refused)."""

    def act(self, view):
        for action in view.domain.applicable_actions(view.state, HUMAN):
            if not view.domain.partner_capable(action, view.capabilities):
                return action
        return NOOP


class Ghost(_Base):
    """Returns a partner action that cannot change the state (refused)."""

    def act(self, view):
        applicable = set(view.domain.applicable_actions(view.state, HUMAN))
        for ground in view.domain.actions:   # (a PDDL domain's ground actions)
            if ground.agent == HUMAN and ground.name not in applicable \
                    and view.domain.partner_capable(ground.name, view.capabilities):
                return ground.name
        return NOOP


class RobotHand(_Base):
    """Returns the robot's action as its own (refused)."""

    def act(self, view):
        return view.intent if view.intent != NOOP else \
            view.domain.applicable_actions(view.state, 'robot')[0]


class Gibberish(_Base):
    def act(self, view):
        return '(fly human kitchen)'


class NoAct(_Base):
    """Has no act method (refused at load)."""


def broken(domain, capabilities, seed):
    raise RuntimeError('the fitted model file is missing')


NOT_CALLABLE = 42
