"""Errands: a whole cecm_ros domain in a few dozen lines (the core's tests run on it, the
contract test loads it as a plug-in, and docs/domains.md walks through it).

A robot and a person run errands; the person can run only those it has the capability
for (``run-letter``, ...): without it, ``(run human letter)`` is a self-loop. A state
is the set of true atoms (``AtomSetStates``), so only the dynamics are written here.
"""

from __future__ import annotations

import heapq
import itertools
import random

import numpy as np

from cecm_ros.core.capabilities import Capability, CapabilityCatalog, PartnerType
from cecm_ros.core.domain import (
    HUMAN,
    NOOP,
    ROBOT,
    ActionOutcome,
    AtomSetStates,
    Domain,
    JointPlan,
    JointStep,
    PlannerGuarantees,
    Task,
)
from cecm_ros.core.errors import UnknownNameError, UnsolvableTaskError
from cecm_ros.core.planning import CachingPlanner
from cecm_ros.domains import DomainSpec

ERRANDS = ('letter', 'parcel', 'plant', 'keys')
ROBOT_COST, HUMAN_COST = 3.0, 1.0     # the robot is slow: the partner does what it can


class Errands(AtomSetStates, Domain):
    name = 'errands'

    def __init__(self, errands: tuple[str, ...] = ERRANDS):
        self.errands = tuple(errands)
        self.catalog = CapabilityCatalog(
            [Capability(f'run-{e}', 'run', e, f'the partner can run the {e} errand')
             for e in self.errands],
            {'low_capability': PartnerType('low_capability', 'runs the first errand only',
                                           tuple(f'run-{e}' for e in self.errands[1:]))})

    def task_generator(self, seed: int) -> Tasks:
        return Tasks(self, seed)

    def transition(self, state, agent, action, capabilities):
        action = NOOP if action in (None, NOOP) else self.canonical_action(action)
        if action == NOOP:
            return state, ActionOutcome(agent, NOOP, False)
        who, errand = action[1:-1].split()[1:]
        if who != agent:
            raise UnknownNameError(f'{action} is not an action of the {agent}')
        if agent == HUMAN and not self.partner_capable(action, capabilities):
            return state, ActionOutcome(agent, action, False, 'the partner cannot')
        done = f'(done {errand})'
        if done in state:
            return state, ActionOutcome(agent, action, False, 'already done')
        added = {done} | ({f'(ran-by-partner {errand})'} if agent == HUMAN else set())
        return state | added, ActionOutcome(agent, action, True)

    def canonical_action(self, action: str) -> str:
        words = action.strip().strip('()').split()
        if len(words) != 3 or words[0] != 'run' or words[1] not in (ROBOT, HUMAN) \
                or words[2] not in self.errands:
            raise UnknownNameError(f'unknown action {action!r}')
        return f'(run {words[1]} {words[2]})'

    def action_agent(self, action: str) -> str:
        return self.canonical_action(action)[1:-1].split()[1]

    def partner_capable(self, action: str, capabilities: np.ndarray) -> bool:
        errand = self.canonical_action(action)[1:-1].split()[2]
        return bool(capabilities[self.errands.index(errand)])

    def applicable_actions(self, state, agent: str) -> list[str]:
        return [f'(run {agent} {e})' for e in self.errands if f'(done {e})' not in state]

    def action_cost(self, action: str) -> float:
        return 0.0 if action == NOOP else ROBOT_COST if ROBOT in action else HUMAN_COST

    def exercised_capabilities(self, trajectory) -> np.ndarray:
        """The errands the partner is seen to run: at some step their atom appears."""
        return np.array([any(f'(ran-by-partner {e})' in after and
                             f'(ran-by-partner {e})' not in before
                             for before, after in zip(trajectory, trajectory[1:]))
                         for e in self.errands])


class Tasks:
    """Seeded goals: two or three of the errands, nothing done yet."""

    def __init__(self, domain: Errands, seed: int):
        self.domain, self.random, self.count = domain, random.Random(seed), 0

    def next_task(self) -> Task:
        self.count += 1
        goal = self.random.sample(self.domain.errands, self.random.choice((2, 3)))
        return Task(f'errands-{self.count}', frozenset(), frozenset(f'(done {e})' for e in goal))

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]


class ErrandsPlanner(CachingPlanner):
    """A cheapest joint plan by uniform-cost search over joint steps. Deterministic, but
    not ``cost_optimal`` in the core's sense: equally cheap plans are not told apart, so
    a plan may not be shared between vectors (each hypothesis is planned)."""

    def __init__(self, domain: Errands, workers: int = 1, **options):
        super().__init__(domain, PlannerGuarantees(cost_optimal=False, deterministic=True))

    def solve_all(self, task, vectors):
        return [self._search(task, vector) for vector in vectors]

    def _search(self, task: Task, vector: np.ndarray) -> JointPlan:
        domain, start = self.domain, self.domain.initial_state(task)
        tie = itertools.count()
        frontier: list[tuple[float, int, frozenset, tuple[JointStep, ...]]] = \
            [(0.0, next(tie), start, ())]
        seen = set()
        while frontier:
            cost, _, state, steps = heapq.heappop(frontier)
            if domain.goal_reached(task, state):
                return self._plan(task, start, steps, vector, cost)
            if state in seen:
                continue
            seen.add(state)
            for robot in [NOOP, *domain.applicable_actions(state, ROBOT)]:
                for human in [NOOP, *domain.applicable_actions(state, HUMAN)]:
                    if human != NOOP and not domain.partner_capable(human, vector):
                        continue
                    after = domain.transition(state, ROBOT, robot, vector)[0]
                    after = domain.transition(after, HUMAN, human, vector)[0]
                    if after != state:
                        step_cost = 1 + domain.action_cost(robot) + domain.action_cost(human)
                        heapq.heappush(frontier, (cost + step_cost, next(tie), after,
                                                  (*steps, JointStep(robot, human))))
        raise UnsolvableTaskError(f'task {task.task_id}: unreachable for this partner')

    def _plan(self, task, start, steps, vector, cost) -> JointPlan:
        trajectory = [start]
        for step in steps:
            after = self.domain.transition(trajectory[-1], ROBOT, step.robot, vector)[0]
            trajectory.append(self.domain.transition(after, HUMAN, step.human, vector)[0])
        robot = sum(self.domain.action_cost(s.robot) for s in steps)
        human = sum(self.domain.action_cost(s.human) for s in steps)
        used = frozenset(int(i) for i in np.flatnonzero(
            self.domain.exercised_capabilities(trajectory)))
        sequential = tuple(a for s in steps for a in (s.robot, s.human) if a != NOOP)
        return JointPlan(task.task_id, tuple(steps), cost, robot, human, tuple(trajectory),
                         used, sequential=sequential, planner_cost=int(cost * 10))


SPEC = DomainSpec(name='errands', description='a robot and a person run errands (a stub)',
                  model='stub_domain:Errands', planners={'default': 'stub_domain:ErrandsPlanner'},
                  model_class='stub_domain:Errands')
