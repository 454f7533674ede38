"""A two-agent PDDL domain grounded over fixed objects: the engine of every PDDL domain.

The PDDL file is the single source of truth for what actions do. This module reads
it through unified-planning and grounds it twice over:

* into UP problems (one per task and capability vector) for the planner, and
* into STRIPS-style ground actions over a fixed proposition index, which the world
  simulator, the trajectory distances and the metrics use. A joint state is an int
  bitmask over that index: bit ``i`` is set when proposition ``i`` is true.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import zlib
from abc import abstractmethod
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from unified_planning.io import PDDLReader
from unified_planning.model import FNode, Problem

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import (
    AGENTS,
    HUMAN,
    NOOP,
    ROBOT,
    ActionOutcome,
    Domain,
    PlannerGuarantees,
    Task,
)
from cecm_ros.core.errors import ConfigError, UnknownNameError
from cecm_ros.core.trajectory import jaccard_distance

from . import up_environment
from .positions import at, locate

# Reading PDDL needs no planning engine: a process that only reads a domain (the
# executor, the world) never imports them (up_environment.py).
up_environment.install()

# A precondition (can-<kind> ?agent ?arg) gates an action by the capability of that kind
# and argument (TidyUP's way); other domains name gates in their domain file.
CAPABILITY_PREFIX = 'can-'

# What the planner minimises, folded into one integer per ground action:
#     COST_SCALE * cost + ACTION_UNIT + weight(action),  0 <= weight < TIE_WEIGHTS.
# For plans of at most MAX_EXACT_PLAN_LENGTH actions that is: the household's cost
# first, then the number of actions, then the summed weights, a fixed pseudo-random
# number per cost term (a CRC of its text). Equally cheap plans then rarely tie, so
# every way of calling the planner (one translation per vector or one per task, a
# plan shared between hypotheses or searched afresh) finds the same plan. With
# household costs of at most MAX_ACTION_COST the sum stays within Fast Downward's
# 32-bit costs for plans of up to 100 actions; TidyUP's have 5-30.
COST_SCALE = 1_000_000
ACTION_UNIT = 10_000
TIE_WEIGHTS = 100
MAX_EXACT_PLAN_LENGTH = 99
assert MAX_EXACT_PLAN_LENGTH * (TIE_WEIGHTS - 1) < ACTION_UNIT
assert MAX_EXACT_PLAN_LENGTH * (ACTION_UNIT + TIE_WEIGHTS - 1) < COST_SCALE


def planner_cost(cost: float, term: str) -> int:
    """The integer the planner sees for a household ``cost`` named by ``term``."""
    return round(cost) * COST_SCALE + ACTION_UNIT + zlib.crc32(term.encode()) % TIE_WEIGHTS


def atom(predicate: str, *args: str) -> str:
    """Canonical text of a ground atom or action: ``(pick robot plate kitchen)``."""
    return '(' + ' '.join((predicate, *args)) + ')'


def split_atom(text: str) -> tuple[str, ...]:
    """``(pick robot plate kitchen)`` -> ``('pick', 'robot', 'plate', 'kitchen')``.

    Also accepts ``pick(robot, plate, kitchen)`` and ``pick robot plate kitchen``.
    """
    cleaned = text.strip()
    if cleaned.startswith('(') and cleaned.endswith(')'):
        cleaned = cleaned[1:-1]
    cleaned = cleaned.replace('(', ' ').replace(')', ' ').replace(',', ' ')
    parts = tuple(cleaned.split())
    if not parts:
        raise UnknownNameError(f'empty atom or action text {text!r}')
    return parts


# A change that no single pair of actions explains is explained by the sequences of at
# most this many actions, at most SEQUENCE_ROBOT of them the robot's (a partner at its
# own pace does several between two observations), searched over at most this many
# states.
SEQUENCE_DEPTH = 5
SEQUENCE_ROBOT = 2
SEQUENCE_STATES = 20_000


@dataclass(frozen=True)
class GroundAction:
    """One ground action as add/delete bitmasks over the proposition index."""

    name: str              # canonical text, e.g. "(pick human plate kitchen)"
    schema: str
    agent: str
    args: tuple[str, ...]
    pre: int
    add: int
    delete: int
    cost: float            # the household's cost
    planner_cost: int      # what the planner minimises (cost, then tie-breaks)
    gate: int | None       # capability index that must be present for a human actor
    statically_possible: bool  # False when a static fact (e.g. a sink) rules it out

    def applicable(self, state: int) -> bool:
        return self.statically_possible and (state & self.pre) == self.pre

    def apply(self, state: int) -> int:
        return (state & ~self.delete) | self.add


class PddlModel(Domain[int]):
    """A PDDL domain of two agents grounded over fixed objects.

    States are int bitmasks over the index of dynamic propositions; every ground action
    is a STRIPS action over them (``GroundAction``). Subclasses say where the objects,
    the static facts and the cost values come from (``_objects_of_type``,
    ``_static_value``, ``_cost_value``) and how tasks are made; a capability gates an
    action of the partner either through a ``(can-<kind> ?agent ?arg)`` precondition or
    through ``_schema_gate``.
    """

    guarantees = PlannerGuarantees(cost_optimal=True, deterministic=True)
    # Which capabilities the partner used, against whether a hypothesis's plan uses them:
    # chosen by measurement on partners of other decision rules (greedy, satisficing,
    # habit: docs/experiments.md, "Partners who are not the robot's planner"), where the
    # stepwise likelihood, which compares every step with one optimal plan, reported
    # capabilities known and wrong; it learns as fast from an optimal partner.
    likelihood_defaults: dict[str, Any] = {'likelihood': 'usage', 'lapse': 0.05}
    # The order canonical_order tries action schemas in (unranked ones last).
    schema_rank: dict[str, int] = {}
    # Why an action a static fact rules out does nothing (an outcome's reason).
    static_impossibility = 'impossible here: a static fact rules it out'
    # Fast Downward's optimal search for this domain's problems; None: the default
    # (fast_downward.OPTIMAL_SEARCH). Any admissible heuristic finds an optimal plan,
    # the same one unless two plans tie on every cost (then the order A* expands them
    # in decides), so a domain picks the one that finds it fastest on its problems.
    optimal_search: str | None = None

    def __init__(self, domain_file: str | Path, catalog: CapabilityCatalog,
                 agents: dict[str, str] | None = None):
        """``agents`` maps the PDDL objects of the two agents to their roles."""
        self.catalog = catalog
        self.agents = dict(agents or {ROBOT: ROBOT, HUMAN: HUMAN})
        self.agent_objects = {role: name for name, role in self.agents.items()}
        self.domain_file = Path(domain_file)
        try:
            text = self.domain_file.read_text()
        except OSError as error:
            raise ConfigError(f'cannot read PDDL domain {self.domain_file}: {error}') from error
        # Cost functions this model made for constant costs, and their values.
        self._constant_costs: dict[str, float] = {}
        self._source_text = text     # the file as written: where errors point
        self._reader_lock = threading.Lock()
        self._domain_text = self._planning_text(text)
        self.propositions: tuple[str, ...] = self._dynamic_propositions()
        self._prop_index = {p: i for i, p in enumerate(self.propositions)}
        self._cost_terms: dict[str, float] = {}  # filled by the grounding
        self.actions: tuple[GroundAction, ...] = self._ground_actions()
        self._actions_by_name = {a.name: a for a in self.actions}
        self._inert_mask = self._inert_capabilities()

    # ------------------------------------------------------------ what subclasses give
    def _objects_of_type(self, type_name: str) -> tuple[str, ...]:
        raise NotImplementedError

    def _static_value(self, predicate: str, args: tuple[str, ...]) -> bool:
        raise ConfigError(f'static predicate {predicate!r} of the domain has no data')

    def _cost_value(self, fluent: str, args: tuple[str, ...]) -> float:
        raise ConfigError(f'cost function {fluent!r} of the domain has no data')

    def _planning_text(self, text: str) -> str:
        """The domain text the planner gets (the file's own unless a subclass rewrites
        its costs, filling ``_constant_costs``)."""
        return text

    def _schema_gate(self, schema: str, binding: dict[str, str]) -> int | None:
        """The capability a partner's ground action needs, for gates not written as
        ``can-`` preconditions (none by default)."""
        return None

    def _capability_precondition(self, predicate: str, args: tuple[str, ...]
                                 ) -> tuple[bool, int | None]:
        """Whether a ground precondition is a capability's rather than a fact of the world,
        and the capability it asks of the partner: TidyUP's ``(can-<kind> ?agent ?arg)``,
        where the robot's (None) always holds."""
        if not predicate.startswith(CAPABILITY_PREFIX):
            return False, None
        if self.agents.get(args[0]) != HUMAN:
            return True, None
        return True, self.catalog.gate_index(predicate[len(CAPABILITY_PREFIX):], args[1])

    def _action_at(self, schema: str) -> str:
        """``file:line:column`` of an action schema in the PDDL file as written."""
        return at(self.domain_file, locate(self._source_text, ['(', ':action', schema]))

    def _where(self) -> str:
        """How error messages name this domain."""
        return f'domain {self.name!r}'

    @property
    def all_objects(self) -> tuple[str, ...]:
        domain = self._domain_problem
        names: list[str] = []
        for user_type in domain.user_types:
            names += [o for o in self._objects_of_type(user_type.name) if o not in names]
        return tuple(names)

    def rebuild_arguments(self) -> tuple:
        """What a planning worker process needs to build this model again."""
        raise NotImplementedError

    @abstractmethod
    def problem_text(self, task: Task) -> str:
        """The PDDL problem of a task with a fully capable partner (not validated)."""

    @abstractmethod
    def conditioned_problem(self, base: Problem, capabilities: np.ndarray) -> Problem:
        """The induced problem: the partner's gated actions need the capability."""

    @property
    def inert_mask(self) -> np.ndarray:
        return self._inert_mask

    @cached_property
    def _domain_problem(self) -> Problem:
        with self._reader_lock:
            return PDDLReader().parse_problem_string(self._domain_text)

    @cached_property
    def has_action_costs(self) -> bool:
        """Whether the domain declares ``(total-cost)`` (else plans are shortest)."""
        return any(f.name == 'total-cost' for f in self._domain_problem.fluents)

    def _dynamic_propositions(self) -> tuple[str, ...]:
        domain = self._domain_problem
        static = {f.name for f in domain.get_static_fluents()}
        props = []
        for fluent in domain.fluents:
            if fluent.name in static or not fluent.type.is_bool_type():
                continue
            domains = [self._objects_of_type(p.type.name) for p in fluent.signature]
            for args in itertools.product(*domains):
                props.append(atom(fluent.name, *args))
        return tuple(props)

    def proposition_index(self, text: str) -> int:
        parts = split_atom(text)
        key = atom(*parts)
        try:
            return self._prop_index[key]
        except KeyError:
            raise UnknownNameError(
                f'unknown proposition {text!r} in {self._where()}') from None

    def state_from_atoms(self, atoms: Iterable[str]) -> int:
        state = 0
        for text in atoms:
            state |= 1 << self.proposition_index(text)
        return state

    def atoms_of(self, state: int) -> list[str]:
        return [p for i, p in enumerate(self.propositions) if state >> i & 1]

    def state_vector(self, state: int) -> np.ndarray:
        """The joint state as the paper's binary vector over the proposition index."""
        return np.array([(state >> i) & 1 for i in range(len(self.propositions))], dtype=bool)

    @cached_property
    def planner_costs(self) -> dict[str, int]:
        """Every cost term a ground action uses, e.g. ``(move-cost human kitchen study)``,
        and the integer the planner sees for it (see :func:`planner_cost`)."""
        return {term: planner_cost(cost, term)
                for term, cost in sorted(self._cost_terms.items())}

    def _ground_actions(self) -> tuple[GroundAction, ...]:
        domain = self._domain_problem
        static = {f.name for f in domain.get_static_fluents()}
        ground = []
        for action in domain.actions:
            params = action.parameters
            domains = [self._objects_of_type(p.type.name) for p in params]
            for values in itertools.product(*domains):
                binding = {p.name: v for p, v in zip(params, values)}
                built = self._ground_one(action, binding, values, static)
                if built is not None:
                    ground.append(built)
        return tuple(ground)

    def _cost_of(self, expression: FNode, binding: dict[str, str],
                 action: str) -> tuple[float, int]:
        """The household's cost of one cost effect and the planner's integer for it.

        Only cost functions reach here: their values are written, tie-breaks included,
        into every problem; a constant in the domain would reach the planner without
        them (a file domain turns constants into cost functions first, ``costs.py``).
        """
        if not expression.is_fluent_exp():
            raise ConfigError(f'{self._action_at(action)}: action {action!r}: unsupported '
                              f'cost {expression} (give costs as cost functions)')
        fluent, args = self._bind(expression, binding, action)
        term = atom(fluent, *args)
        constant = self._constant_costs.get(fluent)
        cost = constant if constant is not None else self._cost_value(fluent, args)
        self._cost_terms[term] = cost
        return cost, planner_cost(cost, term)

    def _bind(self, node: FNode, binding: dict[str, str],
              action: str) -> tuple[str, tuple[str, ...]]:
        args = []
        for arg in node.args:
            if arg.is_parameter_exp() and arg.parameter().name in binding:
                args.append(binding[arg.parameter().name])
            elif arg.is_object_exp():
                args.append(arg.object().name)
            else:
                raise ConfigError(f'{self._action_at(action)}: unsupported argument {arg} in '
                                  f'{node} of {action!r} (an argument is a parameter of the '
                                  'action or an object)')
        return node.fluent().name, tuple(args)

    def _ground_one(self, action, binding, values, static) -> GroundAction | None:
        agent = self._actor(action, binding)
        pre = 0
        gate = None
        possible = True
        conditions: list[FNode] = []
        for precondition in action.preconditions:
            conditions.extend(precondition.args if precondition.is_and() else [precondition])
        for condition in conditions:
            if condition.is_not() and condition.arg(0).is_equals():
                left, right = (self._bind_term(t, binding) for t in condition.arg(0).args)
                if left == right:
                    return None  # e.g. moving from a room into itself
                continue
            if not condition.is_fluent_exp():
                raise ConfigError(f'{self._action_at(action.name)}: unsupported precondition '
                                  f'{condition} in {action.name!r} (preconditions are facts, '
                                  'their conjunctions and (not (= ?x ?y)))')
            name, args = self._bind(condition, binding, action.name)
            capability, needed = self._capability_precondition(name, args)
            if capability:
                gate = self._one_gate(action.name, values, gate, needed)
                continue
            if name in static:
                possible &= self._static_value(name, args)
                continue
            pre |= 1 << self._prop_index[atom(name, *args)]
        add = delete = 0
        cost, tie_broken = 0.0, 0
        for effect in action.effects:
            if effect.is_forall() or effect.is_conditional():
                raise ConfigError(f'{self._action_at(action.name)}: unsupported effect '
                                  f'{effect} in {action.name!r} (conditional and forall '
                                  'effects are not supported)')
            if effect.is_increase() and effect.fluent.fluent().name == 'total-cost':
                term_cost, term_planner_cost = self._cost_of(effect.value, binding,
                                                               action.name)
                cost += term_cost
                tie_broken += term_planner_cost
                continue
            name, args = self._bind(effect.fluent, binding, action.name)
            bit = 1 << self._prop_index[atom(name, *args)]
            if effect.value.is_true():
                add |= bit
            elif effect.value.is_false():
                delete |= bit
            else:
                raise ConfigError(f'{self._action_at(action.name)}: unsupported effect '
                                  f'{effect} in {action.name!r}')
        delete &= ~add
        if not self.has_action_costs:
            # Without costs Fast Downward minimises the number of actions: each counts
            # one unit of the planner's objective (and costs 1 to the team).
            cost, tie_broken = 1.0, ACTION_UNIT
        if agent == HUMAN:
            gate = self._one_gate(action.name, values, gate,
                                  self._schema_gate(action.name, binding))
        elif gate is not None:
            raise ConfigError(
                f'{self._action_at(action.name)}: {atom(action.name, *values)} is an action '
                f'of the robot that needs the partner\'s capability '
                f'{self.catalog.names[gate]!r}; a capability gates actions of the partner')
        return GroundAction(
            name=atom(action.name, *values), schema=action.name, agent=agent,
            args=tuple(values), pre=pre, add=add, delete=delete, cost=cost,
            planner_cost=tie_broken, gate=gate, statically_possible=possible)

    def _one_gate(self, schema: str, values: tuple[str, ...], gate: int | None,
                  other: int | None) -> int | None:
        """The gate of a ground action that two of its parts name: one action may need
        one capability."""
        if gate is None or other is None or gate == other:
            return other if gate is None else gate
        names = ', '.join(self.catalog.names[i] for i in (gate, other))
        raise ConfigError(f'{self._action_at(schema)}: capabilities {names} all gate '
                          f'{atom(schema, *values)}; one action may need one capability')

    def _actor(self, action, binding: dict[str, str]) -> str:
        """The role of the agent doing a ground action: its first parameter bound to one
        of the two agents' objects."""
        for parameter in action.parameters:
            role = self.agents.get(binding[parameter.name])
            if role is not None:
                return role
        raise ConfigError(f'{self._action_at(action.name)}: action {action.name!r} has no '
                          'parameter for the agent doing it (one of '
                          f'{", ".join(self.agents)})')

    @staticmethod
    def _bind_term(term: FNode, binding: dict[str, str]) -> str:
        if term.is_parameter_exp():
            return binding[term.parameter().name]
        return term.object().name

    def action(self, text: str) -> GroundAction:
        """Look up a ground action by its text (several spellings accepted)."""
        parts = split_atom(text)
        try:
            return self._actions_by_name[atom(*parts)]
        except KeyError:
            pass
        schemas = sorted({a.schema for a in self.actions})
        if parts[0] not in schemas:
            raise UnknownNameError(
                f'unknown action {parts[0]!r} in {text!r}; actions: {", ".join(schemas)}')
        known = set(self.all_objects)
        for value in parts[1:]:
            if value not in known:
                raise UnknownNameError(
                    f'unknown name {value!r} in action {text!r} for {self._where()}')
        raise UnknownNameError(f'action {text!r} does not exist (wrong arguments?)')

    def applicable_actions(self, state: int, agent: str) -> list[str]:
        """Canonical names of ``agent``'s ground actions applicable in ``state``.

        What a person may tell the robot to do instead of its intent (a correction
        panel offers these, never free text). Capabilities are not consulted: the robot
        has them all, and for the human they are what is being estimated.
        """
        if agent not in AGENTS:
            raise UnknownNameError(f'unknown agent {agent!r}; agents: {", ".join(AGENTS)}')
        return [a.name for a in self.actions if a.agent == agent and a.applicable(state)]

    def unreachable_atoms(self, task: Task) -> list[str]:
        """The goal atoms of ``task`` that no team reaches from its start, whatever it
        can do: not even the actions of both agents with every capability, their deletes
        ignored, make them true. (An empty list does not promise that the goal as a whole
        can be reached.)"""
        return self.atoms_of(self.state_from_atoms(task.goal)
                             & ~self.reachable(self.state_from_atoms(task.initial)))

    def reachable(self, state: int) -> int:
        """Every proposition some sequence of actions could make true from ``state``
        (delete-relaxed: a superset of what can be reached)."""
        actions = [a for a in self.actions if a.statically_possible]
        grown = True
        while grown:
            grown = False
            for action in actions:
                if state & action.pre == action.pre and action.add & ~state:
                    state |= action.add
                    grown = True
        return state

    def _inert_capabilities(self) -> np.ndarray:
        live = np.zeros(len(self.catalog), dtype=bool)
        for action in self.actions:
            if action.agent == HUMAN and action.gate is not None and action.statically_possible:
                live[action.gate] = True
        return ~live

    def task_from_state(self, task: Task, state: int) -> Task:
        """The same goal from an intermediate state (what a robot re-plans after a step)."""
        # A task without a start (a goal only, as a message gives it) is no origin.
        origin = task.origin or (task if task.initial else None)
        return Task(task.task_id, frozenset(self.atoms_of(state)), task.goal, origin=origin)

    def _parse(self, problem_text: str) -> Problem:
        with self._reader_lock:  # PDDLReader keeps parser state
            return PDDLReader().parse_problem_string(self._domain_text, problem_text)

    @property
    def domain_text(self) -> str:
        return self._domain_text

    def base_problem(self, task: Task) -> Problem:
        """The UP problem of a task with a fully capable human."""
        self.validate_task(task)
        return self._parse(self.problem_text(task))

    def human_capable(self, action: GroundAction, capabilities: np.ndarray) -> bool:
        return action.agent != HUMAN or action.gate is None or bool(capabilities[action.gate])

    def canonical_atoms(self, atoms: Iterable[str], task_id: str = '') -> list[str]:
        """The atoms in canonical spelling, each known and listed once."""
        return self.atoms_of(self.state_from_wire(list(atoms), ()))

    def initial_state(self, task: Task) -> int:
        return self.state_from_atoms(task.initial)

    def goal_reached(self, task: Task, state: int) -> bool:
        goal = self.state_from_atoms(task.goal)
        return state & goal == goal

    def goal_progress(self, task: Task, state: int) -> float:
        """How many of the goal's atoms hold (a greedy partner's distance to climb)."""
        return float((state & self.state_from_atoms(task.goal)).bit_count())

    def transition(self, state: int, agent: str, action: str | None,
                   capabilities: np.ndarray) -> tuple[int, ActionOutcome]:
        if action is None or action == NOOP:
            return state, ActionOutcome(agent, NOOP, False, 'no-op')
        ground = self.action(action)
        if ground.agent != agent:
            raise UnknownNameError(
                f'action {ground.name} belongs to {ground.agent}, not to {agent}')
        if ground.gate is not None and not self.human_capable(ground, capabilities):
            missing = self.catalog.names[ground.gate]
            return state, ActionOutcome(agent, ground.name, False,
                                        f'missing capability {missing}')
        if not ground.statically_possible:
            return state, ActionOutcome(agent, ground.name, False,
                                        self.static_impossibility)
        if not ground.applicable(state):
            unmet = self.atoms_of(ground.pre & ~state)
            return state, ActionOutcome(agent, ground.name, False,
                                        'precondition not met: ' + ' '.join(unmet))
        return ground.apply(state), ActionOutcome(agent, ground.name, True)

    def action_agent(self, action: str) -> str:
        return self.action(action).agent

    def canonical_action(self, action: str) -> str:
        return self.action(action).name

    def partner_capable(self, action: str, capabilities: np.ndarray) -> bool:
        return self.human_capable(self.action(action), capabilities)

    def action_cost(self, action: str) -> float:
        """The domain's own cost of ``action`` (a plan's ``cost`` adds these up)."""
        return 0.0 if action == NOOP else float(self.action(action).cost)

    def distance(self, first, second) -> float:
        return jaccard_distance(first, second)

    def exercised_capabilities(self, trajectory) -> np.ndarray:
        """Capabilities the partner provably used: at a step that changed the state, every
        pair of actions (the human's, then the robot's; either may be idle) that explains
        the change has the human take an action gated by the same capability. A change
        the robot could have made alone, or one two different capabilities explain,
        proves nothing (the likelihood treats a proven capability as certain). A change
        that no pair explains (perception saw several actions at once: a partner at its
        own pace, a report that came late) is explained by the sequences of either
        agent's actions that make it (:meth:`_gates_of_sequences`)."""
        used = np.zeros(len(self.catalog), dtype=bool)
        robot_actions = [a for a in self.actions if a.agent != HUMAN]
        for before, after in zip(trajectory, trajectory[1:]):
            if before == after:
                continue
            needed: set[int | None] = set()
            for h in [None] + [a for a in self.actions
                               if a.agent == HUMAN and a.applicable(before)]:
                middle = before if h is None else h.apply(before)
                if middle == after or any(r.apply(middle) == after for r in robot_actions
                                          if r.applicable(middle)):
                    needed.add(None if h is None or middle == before else h.gate)
                if None in needed or len(needed) > 1:
                    break
            if not needed:
                for gate in self._gates_of_sequences(before, after):
                    used[gate] = True
            elif len(needed) == 1 and None not in needed:
                used[needed.pop()] = True
        return used

    def _gates_of_sequences(self, before: int, after: int) -> frozenset[int]:
        """The gates that every sequence of actions from ``before`` to ``after`` uses,
        among the sequences of at most SEQUENCE_DEPTH actions of either agent in any
        order with at most SEQUENCE_ROBOT of them the robot's (the robot acts once per
        observed step; a report that came late may fold two of its steps into one);
        empty when no sequence is that short or the search grows past SEQUENCE_STATES
        states (then nothing is proven). Every sequence, not only the shortest: a
        partner who lacks a capability is the one who takes the longer way round."""
        live = [a for a in self.actions if a.statically_possible]
        # (state, robot actions so far) -> the gate sets of the sequences that reach it
        layer: dict[tuple[int, int], set[frozenset[int]]] = {(before, 0): {frozenset()}}
        proven: frozenset[int] | None = None
        for _ in range(SEQUENCE_DEPTH):
            grown: dict[tuple[int, int], set[frozenset[int]]] = {}
            for (state, robots), gate_sets in layer.items():
                for action in live:
                    robot = action.agent != HUMAN
                    if robots + robot > SEQUENCE_ROBOT or not action.applicable(state):
                        continue
                    nxt = action.apply(state)
                    if nxt == state:
                        continue
                    extra = (frozenset((action.gate,)) if not robot and
                             action.gate is not None else frozenset())
                    grown.setdefault((nxt, robots + robot), set()).update(
                        g | extra for g in gate_sets)
                    if len(grown) > SEQUENCE_STATES:
                        return frozenset()
            for (state, _), gate_sets in grown.items():
                if state == after:
                    for gates in gate_sets:
                        proven = gates if proven is None else proven & gates
                        if not proven:
                            return frozenset()
            layer = grown
        return proven or frozenset()

    def check_state(self, state) -> None:
        if not isinstance(state, (int, np.integer)) or not \
                0 <= int(state) < 1 << len(self.propositions):
            raise ConfigError(f'{state!r} is not a state of {self._where()}')

    def state_to_text(self, state: int) -> str:
        return format(state, 'x')

    def state_from_text(self, text: str) -> int:
        try:
            state = int(text, 16)
        except (TypeError, ValueError):
            raise ConfigError(f'{text!r} is not a saved state of {self._where()}') from None
        self.check_state(state)
        return state

    def state_facts(self, state: int) -> list[str]:
        return self.atoms_of(state)

    def perceivable_facts(self) -> tuple[str, ...]:
        """Every fact an action may change (the static ones are never looked at)."""
        return self.propositions

    def state_from_wire(self, facts, features) -> int:
        """The state of a message's facts: each known and listed once (no features)."""
        if len(features):
            raise ConfigError(f'{self._where()} describes states by facts; state_features '
                              f'must be empty, got {len(features)} numbers')
        facts = list(facts)
        if len(facts) > len(self.propositions):
            raise ConfigError(f'{len(facts)} propositions, but {self._where()} has only '
                              f'{len(self.propositions)}')
        state = 0
        for text in facts:
            bit = 1 << self.proposition_index(text)
            if state & bit:
                raise ConfigError(f'proposition {text!r} is listed twice')
            state |= bit
        return state

    def problem_objects(self, task: Task) -> Hashable:
        """What of the domain the planner's problem for ``task`` holds besides its start,
        where that depends on the task (TidyUP's rooms a task involves); None: the same
        for every task. A re-plan may reuse its origin's translation only when both
        hold the same (a bigger problem could use capabilities the task's mask calls
        inert)."""
        return None

    def plan_scope(self) -> str:
        """A hash of everything this model's plans depend on besides the task and the
        vector: the PDDL text, the grounded actions (effects, costs, gates) and the order
        plans are written in. Two models with equal scopes plan alike."""
        digest = hashlib.sha256(self._domain_text.encode())
        digest.update(repr((self.propositions, self.catalog.names, self.agents,
                            sorted(self.schema_rank.items()))).encode())
        for action in self.actions:
            digest.update(repr((action.name, action.agent, action.pre, action.add,
                                action.delete, action.cost, action.planner_cost, action.gate,
                                action.statically_possible)).encode())
        return digest.hexdigest()[:32]

    def validate_task(self, task: Task) -> None:
        """Every atom must be a proposition of this domain and the goal must say
        something."""
        for what, atoms in (('start', task.initial), ('goal', task.goal)):
            try:
                self.state_from_atoms(atoms)
            except UnknownNameError as error:
                raise ConfigError(f'task {task.task_id}: {what}: {error}') from None
        if not task.goal:
            raise ConfigError(f'task {task.task_id} has an empty goal')


def pddl_name(text: str) -> str:
    """A PDDL name made of ``text`` (problem names)."""
    cleaned = ''.join(ch if ch.isalnum() or ch in '-_' else '-' for ch in text)
    return ('task-' + cleaned) if not cleaned[:1].isalpha() else cleaned
