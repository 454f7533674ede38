"""Errands: a whole cecm_ros domain in a few dozen lines (the core's tests run on it, the
contract test loads it as a plug-in, and docs/domains.md walks through it).

A robot and a person run errands; the person can run only those it has the capability
for (``run-letter``, ...): without it, ``(run human letter)`` is a self-loop. A state
is the set of true atoms (``AtomSetStates``), so only the dynamics are written here.

Two options serve the core's tests of inference: ``places`` sends the partner somewhere
to run an errand, which then needs ``go-PLACE`` as well (so a partner who leaves an
errand to the robot may lack either: a confound), and a place without errands is a
capability nothing depends on (inert); :class:`OptimalErrandsPlanner` ranks every plan,
so that plans may be shared between hypotheses.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Mapping, Sequence

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

    def __init__(self, errands: tuple[str, ...] = ERRANDS,
                 places: Mapping[str, Sequence[str]] | None = None):
        self.errands = tuple(errands)
        # Where the partner must go for an errand (none: it runs it where it is).
        self.places = {place: tuple(there) for place, there in (places or {}).items()}
        self.place_of = {e: place for place, there in self.places.items() for e in there}
        capabilities = [Capability(f'run-{e}', 'run', self.place_of.get(e, e),
                                   f'the partner can run the {e} errand')
                        for e in self.errands]
        capabilities += [Capability(f'go-{place}', 'go', place,
                                    f'the partner can go to the {place}')
                         for place in self.places]
        self.catalog = CapabilityCatalog(
            capabilities,
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
        return bool(capabilities[self.gates(errand)].all())

    def gates(self, errand: str) -> list[int]:
        """The capabilities the partner needs for ``errand``: its own, and its place's."""
        place = self.place_of.get(errand)
        return [self.errands.index(errand)] + \
            ([self.catalog.index(f'go-{place}')] if place is not None else [])

    @property
    def inert_mask(self) -> np.ndarray:
        """The places no errand takes the partner to."""
        return np.array([c.action == 'go' and not self.places[c.room]
                         for c in self.catalog.capabilities])

    def applicable_actions(self, state, agent: str) -> list[str]:
        return [f'(run {agent} {e})' for e in self.errands if f'(done {e})' not in state]

    def action_cost(self, action: str) -> float:
        return 0.0 if action == NOOP else ROBOT_COST if ROBOT in action else HUMAN_COST

    def exercised_capabilities(self, trajectory) -> np.ndarray:
        """What the errands the partner is seen to run need: at some step their atom
        appears."""
        used = np.zeros(len(self.catalog), dtype=bool)
        for e in self.errands:
            if any(f'(ran-by-partner {e})' in after and f'(ran-by-partner {e})' not in before
                   for before, after in zip(trajectory, trajectory[1:])):
                used[self.gates(e)] = True
        return used


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

    guarantees = PlannerGuarantees(cost_optimal=False, deterministic=True)

    def __init__(self, domain: Errands, workers: int = 1, cache_size: int = 100_000,
                 **options):
        super().__init__(domain, type(self).guarantees, cache_size)

    def solve_all(self, task, vectors):
        return [self._search(task, vector) for vector in vectors]

    def _search(self, task: Task, vector: np.ndarray) -> JointPlan:
        domain, start = self.domain, self.domain.initial_state(task)
        tie = itertools.count()
        frontier: list[tuple[float, object, frozenset, tuple[JointStep, ...]]] = \
            [(0.0, self._tie(tie, ()), start, ())]
        seen = set()
        while frontier:
            cost, _, state, steps = heapq.heappop(frontier)
            if domain.goal_reached(task, state):
                return self._plan(task, start, steps, vector, cost)
            if state in seen:
                continue
            seen.add(state)
            for robot in [NOOP, *self._choices(task, state, ROBOT)]:
                for human in [NOOP, *self._choices(task, state, HUMAN)]:
                    if human != NOOP and not domain.partner_capable(human, vector):
                        continue
                    after = domain.transition(state, ROBOT, robot, vector)[0]
                    after = domain.transition(after, HUMAN, human, vector)[0]
                    if after != state:
                        step_cost = 1 + domain.action_cost(robot) + domain.action_cost(human)
                        longer = (*steps, JointStep(robot, human))
                        heapq.heappush(frontier, (cost + step_cost, self._tie(tie, longer),
                                                  after, longer))
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
                         used, sequential=sequential,
                         planner_cost=self._planner_cost(cost, steps))

    def _choices(self, task: Task, state: frozenset, agent: str) -> list[str]:
        return self.domain.applicable_actions(state, agent)

    def _tie(self, counter, steps: tuple[JointStep, ...]) -> object:
        """What orders equally cheap paths: the order they were found in."""
        return next(counter)

    def _planner_cost(self, cost: float, steps: tuple[JointStep, ...]) -> int:
        return int(cost * 10)


class OptimalErrandsPlanner(ErrandsPlanner):
    """Cost-optimal in the core's sense: of the cheapest plans it takes the first in the
    order of its steps' texts, and its ``planner_cost`` ranks every plan by cost, then
    by that order (the steps as digits of a number), so that the optimum under a vector is
    unique and is what a search under any vector that permits it and allows no cheaper
    plan finds (what SharedPlanEvaluator's sharing rules rest on)."""

    guarantees = PlannerGuarantees(cost_optimal=True, deterministic=True)

    def __init__(self, domain: Errands, workers: int = 1, cache_size: int = 100_000,
                 **options):
        super().__init__(domain, workers, cache_size, **options)
        texts = [NOOP, *(f'(run {agent} {e})' for agent in (ROBOT, HUMAN)
                         for e in domain.errands)]
        self.digits = {pair: rank + 1 for rank, pair in
                       enumerate(sorted(itertools.product(texts, texts)))}
        self.base = len(self.digits) + 1
        self.length = len(domain.errands)     # every step runs an errand

    def _choices(self, task: Task, state: frozenset, agent: str) -> list[str]:
        # An errand the goal does not ask for only adds cost: no optimal plan runs one.
        return [a for a in self.domain.applicable_actions(state, agent)
                if f'(done {a[1:-1].split()[2]})' in task.goal]

    def _tie(self, counter, steps: tuple[JointStep, ...]) -> object:
        return tuple((step.robot, step.human) for step in steps)

    def _planner_cost(self, cost: float, steps: tuple[JointStep, ...]) -> int:
        rank = 0
        for index in range(self.length):
            digit = self.digits[(steps[index].robot, steps[index].human)] \
                if index < len(steps) else 0
            rank = rank * self.base + digit
        return int(round(cost)) * self.base ** self.length + rank


SPEC = DomainSpec(name='errands', description='a robot and a person run errands (a stub)',
                  model='stub_domain:Errands', planners={'default': 'stub_domain:ErrandsPlanner'},
                  model_class='stub_domain:Errands')
