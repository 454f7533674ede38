"""What a domain gives the core: the one interface between CE-CM and a world.

The core (estimators, posterior, task choice, metrics, experiments, sessions) asks a
domain only what is declared here, and a domain answers it in its own terms: TidyUP
grounds a PDDL file and plans with Fast Downward; a grid kitchen could simulate numeric
states and plan by tree search. A state is any hashable value the domain chooses (an int
bitmask of facts, a tuple of numbers); the core stores and compares states only through
the domain. The registry that finds domains by name lives outside the core
(:mod:`cecm_ros.domains`), so the core never imports a domain.

Two roles act in every domain: the robot (fully capable, its actions executed by the
robot) and the human partner (whose capability vector is hidden). Each domain names the
agents that play them; action texts are the domain's own.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from .capabilities import CapabilityCatalog
from .errors import ConfigError, UnsolvableTaskError
from .trajectory import jaccard_distance

ROBOT = 'robot'
HUMAN = 'human'
AGENTS = (ROBOT, HUMAN)
NOOP = 'noop'

State = Hashable
# A domain's own kind of state (TidyUP: int bitmasks); the core holds states opaquely.
StateT = TypeVar('StateT', bound=Hashable)
Trajectory = tuple  # of states, s_0 .. s_H


@dataclass(frozen=True)
class Task:
    """A shared goal from a start state, as the domain's atoms (canonical texts)."""

    task_id: str
    initial: frozenset[str]
    goal: frozenset[str]
    # The task this one continues (the same goal from a state reached on the way), a
    # hint a planner may use to reuse work done for it; not part of the task's identity.
    origin: Task | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple:
        return (tuple(sorted(self.initial)), tuple(sorted(self.goal)))


@dataclass(frozen=True)
class JointStep:
    robot: str = NOOP
    human: str = NOOP

    def action_of(self, agent: str) -> str:
        return self.robot if agent == ROBOT else self.human


@dataclass(frozen=True)
class JointPlan:
    """A joint plan and the state trajectory it induces (states as the domain keeps them)."""

    task_id: str
    steps: tuple[JointStep, ...]
    cost: float
    robot_cost: float
    human_cost: float
    trajectory: tuple
    human_capabilities_used: frozenset[int]
    planning_time_s: float = 0.0
    sequential: tuple[str, ...] = field(default=(), repr=False)
    # The planner's objective (for TidyUP: cost, then action count, then tie weights).
    planner_cost: int = field(default=0, repr=False)

    def actions_of(self, agent: str) -> list[str]:
        return [s.action_of(agent) for s in self.steps if s.action_of(agent) != NOOP]

    def format(self, width: int = 34, partner: str = 'partner') -> str:
        """A two-column table of who does what, one joint step per line (the robot's
        column as wide as its longest action, so columns never run together);
        ``partner`` heads the partner's column (the domain's name for it)."""
        width = max([width - 2, *(len(step.robot) for step in self.steps)]) + 2
        lines = [f'{"step":>4}  {"robot":<{width}}{partner}']
        for index, step in enumerate(self.steps, 1):
            lines.append(f'{index:>4}  {step.robot:<{width}}{step.human}')
        lines.append(f'cost {self.cost:g} (robot {self.robot_cost:g}, {partner} '
                     f'{self.human_cost:g}), {len(self.steps)} joint steps')
        return '\n'.join(lines)


@dataclass(frozen=True)
class ActionOutcome:
    agent: str
    action: str          # canonical action text, or "noop"
    changed: bool        # False for self-loops and no-ops
    reason: str = ''     # why nothing changed ('' when the action applied)

    @property
    def self_loop(self) -> bool:
        return self.action != NOOP and not self.changed


@dataclass(frozen=True)
class PlannerGuarantees:
    """What a planner promises; shortcuts that rely on a promise check it first.

    ``cost_optimal``: every plan minimises the planner's objective, so a plan optimal
    under a vector stays optimal under any smaller vector that permits it (the shared
    plans of :class:`~cecm_ros.core.hypotheses.SharedPlanEvaluator`).
    ``deterministic``: the same task and vector give the same plan in every process, so
    a plan may be kept and reused beyond the process that made it.
    """

    cost_optimal: bool
    deterministic: bool


class TaskSource(Protocol):
    """A seeded stream of tasks: the same seed gives the same tasks."""

    def next_task(self) -> Task: ...

    def tasks(self, count: int) -> list[Task]: ...


class Planner(ABC):
    """Plans a task jointly under a capability vector of the partner.

    Implementations must be thread-safe; ``calls`` and ``cache_hits`` count the plans
    made and the plans answered from memory.
    """

    domain: Domain[Any]
    guarantees: PlannerGuarantees
    calls: int = 0
    cache_hits: int = 0
    # The seed of this planner's own random choices (None: a planner without seeds).
    search_seed: int | None = None

    @abstractmethod
    def plan_many(self, task: Task, vectors: Iterable[np.ndarray]) -> list[JointPlan]:
        """Per vector, the joint plan the team would follow if the partner had it.
        Raises UnsolvableTaskError when a vector leaves the goal unreachable."""

    def plan(self, task: Task, capabilities: np.ndarray) -> JointPlan:
        return self.plan_many(task, [capabilities])[0]

    def plan_under_estimate(self, task: Task, estimate: np.ndarray) -> tuple[JointPlan, bool]:
        """The robot's plan under its estimate, and whether it had to relax the estimate.

        Mid-task the partner may already hold something the estimate says it can never
        put down (it evidently could pick it up): the goal is then unreachable under
        the estimate, and the robot plans as if the partner were fully capable, leaving
        the partner to finish what it started, rather than giving up.
        """
        try:
            return self.plan(task, estimate), False
        except UnsolvableTaskError:
            return self.plan(task, self.domain.catalog.all_capable()), True

    def plan_sets(self, task: Task, vectors: np.ndarray, size: int, diversity: float = 0.35
                  ) -> list[list[JointPlan]] | None:
        """Per vector, up to ``size`` diverse plans whose first is the vector's plan, each
        differing by at least ``diversity`` (trajectory set difference, :meth:`Domain.
        novelty`) from those before it, for CE-CM-Div, when this planner makes such sets
        itself (a top-k or diverse planner). None (the default) when it does not:
        CE-CM-Div then builds each set from the plans of partners who decline a
        capability the optimal plan uses
        (:class:`~cecm_ros.core.hypotheses.DiversePlanEvaluator`)."""
        return None

    def action_values(self, task: Task, state: State, vector: np.ndarray,
                      actions: Sequence[str]) -> dict[str, float]:
        """How good each of the partner's ``actions`` (NOOP: wait) is now, in ``state`` of
        ``task``, for a partner with ``vector``: higher is better, in the domain's units
        (what a Boltzmann partner chooses by). By default minus (the action's cost, then an
        optimal plan's cost from where it leads), one plan per action, remembered like any
        plan; an action after which the goal is out of reach is left out. A planner with
        value estimates of its own (a tree search) overrides this."""
        domain = self.domain
        values: dict[str, float] = {}
        for action in actions:
            after, _ = domain.transition(state, HUMAN, action, vector)
            try:
                plan = self.plan(domain.task_from_state(task, after), vector)
            except UnsolvableTaskError:
                continue
            values[action] = -(domain.action_cost(action) + plan.cost)
        return values

    def with_seed(self, seed: int) -> Planner | None:
        """A planner like this one whose own random choices take ``seed`` (another search
        among equally good plans), or None for a planner without a seed (the default)."""
        return None

    def satisficing(self, seed: int) -> Planner | None:
        """A planner of another configuration than this one, seeded with ``seed``, that
        takes the first plan it finds rather than the best (a greedy best-first search, a
        shallow tree search): a ``satisficing`` simulated partner plans with it. None (the
        default) when the domain's planner has none."""
        return None

    def cached_plans(self, task: Task) -> list[tuple[np.ndarray, JointPlan]]:
        """The (vector, plan) pairs already known for ``task`` (none by default)."""
        return []

    def known_plan_count(self, task: Task) -> int:
        return 0

    def close(self) -> None:  # noqa: B027 - optional: most planners start nothing
        """Stop whatever the planner started (processes, threads)."""

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WorldModel(ABC, Generic[StateT]):
    """A world in which a robot and a partner share tasks: what CE-CM must know of it.

    Seven methods and a capability catalog are required: the tasks, the start and the
    goal, the dynamics with the self-loop rule (:meth:`transition`), the same goal from
    a state on the way, and whose an action is and whether a partner can do it. The rest
    are abilities with defaults a domain may refine (a distance, the capabilities a
    trajectory proves, costs, the actions a noisy partner may pick from).
    """

    name: str = ''
    catalog: CapabilityCatalog
    # The acceptance threshold suited to this domain's distance (None: the estimator's
    # default, which suits a Jaccard distance over sets of states).
    default_epsilon: float | None = None
    # The likelihood's parameters suited to this domain's planner and partners (keys
    # lapse, bandwidth, likelihood_seeds; see core/likelihood.py); unset ones take the
    # estimator's defaults. A domain file may set them in a `likelihood:` section.
    likelihood_defaults: dict[str, Any] = {}
    # The simulated partner's behaviour when a command names none (text of
    # cecm_ros.core.partners.PartnerBehaviour): 'optimal' plans as the robot's planner
    # would; a domain whose planner is its own oracle (Overcooked) says 'independent'.
    default_partner_behaviour: str = 'optimal'

    # ------------------------------------------------------------------ required
    @abstractmethod
    def task_generator(self, seed: int) -> TaskSource:
        """The seeded task stream of this domain."""

    @abstractmethod
    def initial_state(self, task: Task) -> StateT: ...

    @abstractmethod
    def goal_reached(self, task: Task, state: StateT) -> bool: ...

    @abstractmethod
    def task_from_state(self, task: Task, state: StateT) -> Task:
        """The same goal from an intermediate state (what a robot re-plans from)."""

    @abstractmethod
    def transition(self, state: StateT, agent: str, action: str | None,
                   capabilities: np.ndarray) -> tuple[StateT, ActionOutcome]:
        """One agent's action: unknown actions raise, infeasible ones are self-loops
        (an action whose capability the partner lacks leaves the state as it was)."""

    @abstractmethod
    def action_agent(self, action: str) -> str:
        """ROBOT or HUMAN: whose action ``action`` is (raises UnknownNameError)."""

    @abstractmethod
    def partner_capable(self, action: str, capabilities: np.ndarray) -> bool:
        """Whether a partner with ``capabilities`` can do ``action`` (the robot can)."""

    # ------------------------------------------------------------ capabilities
    @property
    def inert_mask(self) -> np.ndarray:
        """True for capabilities no transition of this domain can depend on (none, unless
        the domain knows better: an inert capability is never worth asking about)."""
        return np.zeros(len(self.catalog), dtype=bool)

    @property
    def inert_capabilities(self) -> list[str]:
        return [self.catalog.names[i] for i in np.flatnonzero(self.inert_mask)]

    def task_inert_mask(self, task: Task) -> np.ndarray:
        """True for capabilities the planner's problem for ``task`` never asks about:
        the inert ones and any of what the domain leaves out of that problem (TidyUP's
        rooms a task does not involve, where the household asks for that). Planners key
        and share plans on vectors with these set."""
        return self.inert_mask

    def exercised_capabilities(self, trajectory: Sequence[StateT]) -> np.ndarray:
        """Capabilities the partner provably used along ``trajectory`` (none by default:
        proof makes a capability certain, so a domain that cannot tell says nothing):
        the union of what each step proves, a step asked about alone (the likelihood's
        misperception term counts the steps one at a time)."""
        return np.zeros(len(self.catalog), dtype=bool)

    # ------------------------------------------------------------------- tasks
    def validate_task(self, task: Task) -> None:
        """Raise ConfigError (naming the task and what is wrong) for a task this domain
        cannot run (every task passes by default)."""

    def task_from_dict(self, entry: dict[str, Any], default_id: str) -> Task:
        """A task from ``{id, initial: [atoms], goal: [atoms]}``, canonical and checked."""
        if not isinstance(entry, dict) or 'initial' not in entry or 'goal' not in entry:
            raise ConfigError(f'task {default_id}: needs "initial" and "goal" lists')
        task_id = str(entry.get('id', default_id))
        initial = self.canonical_atoms(entry['initial'], task_id)
        goal = self.canonical_atoms(entry['goal'], task_id)
        task = Task(task_id, frozenset(initial), frozenset(goal))
        self.validate_task(task)
        return task

    def task_to_dict(self, task: Task) -> dict[str, Any]:
        return {'id': task.task_id, 'initial': sorted(task.initial), 'goal': sorted(task.goal)}

    def canonical_atoms(self, atoms: Iterable[str], task_id: str = '') -> list[str]:
        """The domain's spelling of ``atoms`` (raises on an unknown one)."""
        return sorted(str(a) for a in atoms)

    def task_universe(self) -> list[Task] | None:
        """All of this domain's tasks when they are few (Overcooked: 9), else None. An
        experiment then holds out the tasks its runs do not learn on."""
        return None

    def default_partner(self) -> str:
        """The partner type a command runs with when none is named: ``low_capability``
        when the domain has it, else its first partner type (else a capable one)."""
        types = list(self.catalog.partner_types)
        if 'low_capability' in types:
            return 'low_capability'
        return types[0] if types else 'all'

    # ----------------------------------------------------------------- actions
    def canonical_action(self, action: str) -> str:
        """The domain's spelling of an action text (raises UnknownNameError); the text
        itself, stripped, by default."""
        return action.strip()

    def action_cost(self, action: str) -> float:
        """What ``action`` costs in the units of a plan's ``cost`` (NOOP: 0); 1 unless the
        domain has costs of its own (a partner's action values add it up)."""
        return 0.0 if action == NOOP else 1.0

    def applicable_actions(self, state: StateT, agent: str) -> list[str]:
        """``agent``'s actions that would change ``state`` for a capable agent: what a
        noisy partner picks among and what a person may tell the robot to do instead.
        None listed by default (a partner then keeps to its plan, the panel offers
        only waiting)."""
        return []

    # ----------------------------------------------------------- trajectories
    def distance(self, first: Sequence[StateT], second: Sequence[StateT]) -> float:
        """The distance CE-CM's epsilon is compared with, in [0, 1]: by default the
        Jaccard distance between the two sets of states visited."""
        return jaccard_distance(first, second)

    def novelty(self, trajectory: Sequence[StateT], other: Sequence[StateT]) -> float:
        """How much of ``trajectory`` is not in ``other`` (CE-CM-Div's thinning)."""
        states = set(trajectory)
        return len(states - set(other)) / len(states)

    def describe(self) -> str:
        return self.name


class StateCodec(ABC, Generic[StateT]):
    """How a domain's states are checked, saved as text and read from messages."""

    @abstractmethod
    def check_state(self, state: StateT) -> None:
        """Raise ConfigError when ``state`` is not a state of this domain."""

    @abstractmethod
    def state_to_text(self, state: StateT) -> str:
        """A compact text of a state that :meth:`state_from_text` reads back (saved
        evidence)."""

    @abstractmethod
    def state_from_text(self, text: str) -> StateT: ...

    @abstractmethod
    def state_facts(self, state: StateT) -> list[str]:
        """The state as true atoms (empty for a numeric domain)."""

    def state_features(self, state: StateT) -> list[float]:
        """The state as numbers (empty for a symbolic domain)."""
        return []

    @abstractmethod
    def state_from_wire(self, facts: Sequence[str], features: Sequence[float]) -> StateT:
        """The state a message carried (facts or features, as this domain uses)."""


class Domain(WorldModel[StateT], StateCodec[StateT]):
    """What the core is handed: a world model whose states can be saved and sent.

    Planners, the web panel's drawing and the robot's skill kinds are not part of it:
    a domain declares them beside its model in the registry (:mod:`cecm_ros.domains`).
    """

    def goal_progress(self, task: Task, state: StateT) -> float:
        """How far ``state`` is along ``task``'s goal, higher is nearer: the simple
        distance a greedy partner climbs. By default how many of the goal's atoms hold
        (a domain whose goal is one atom says more)."""
        facts = set(self.state_facts(state))
        return float(sum(atom in facts for atom in task.goal))

    def misperceived(self, state: StateT, rng: np.random.Generator, missed: float,
                     spurious: float) -> StateT:
        """``state`` as a perception reports it that misses each true fact with
        probability ``missed`` and with probability ``spurious`` sees one false fact
        (:mod:`~cecm_ros.core.world_conditions`). By default through the state's facts,
        the false one drawn from :meth:`perceivable_facts`; a domain whose states are not
        any set of facts says what a glitch looks like in its own terms."""
        facts = self.state_facts(state)
        kept = [fact for fact, draw in zip(facts, rng.random(len(facts))) if draw >= missed]
        if rng.random() < spurious:
            present = set(facts)
            absent = [fact for fact in self.perceivable_facts() if fact not in present]
            if absent:
                kept.append(absent[int(rng.integers(len(absent)))])
        return self.state_from_wire(kept, [])

    def perceivable_facts(self) -> Sequence[str]:
        """The facts a perception may see, true or not (none by default: no false fact
        is ever seen)."""
        return ()

    def interchangeable_capabilities(self) -> tuple[tuple[int, ...], ...]:
        """Groups of capabilities that serve the same purpose (two plates, two knives),
        by index: a partner's habit may keep to one of each. None by default."""
        return ()


class AtomSetStates(StateCodec[frozenset]):
    """States that are sets of true atoms (texts), for a small symbolic domain: the
    codec, and a task's start, goal test and re-planning start, all given."""

    def check_state(self, state: frozenset) -> None:
        if not isinstance(state, frozenset) or not all(isinstance(a, str) for a in state):
            raise ConfigError(f'not a state (a frozenset of atoms): {state!r}')

    def state_to_text(self, state: frozenset) -> str:
        return ' '.join(sorted(state))

    def state_from_text(self, text: str) -> frozenset:
        return frozenset(_ATOM.findall(text))

    def state_facts(self, state: frozenset) -> list[str]:
        return sorted(state)

    def state_from_wire(self, facts: Sequence[str], features: Sequence[float]) -> frozenset:
        return frozenset(str(f).strip() for f in facts)

    def initial_state(self, task: Task) -> frozenset:
        return frozenset(task.initial)

    def goal_reached(self, task: Task, state: frozenset) -> bool:
        return task.goal <= state

    def task_from_state(self, task: Task, state: frozenset) -> Task:
        return Task(task.task_id, frozenset(state), task.goal, origin=task)


# One atom of a saved text: "(pred a b)" (AtomSetStates).
_ATOM = re.compile(r'\([^()]*\)')
