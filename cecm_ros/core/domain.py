"""The TidyUP model: the PDDL domain grounded for one household.

The PDDL file is the single source of truth for what actions do. This module reads
it through unified-planning and grounds it twice over:

* into UP problems (one per task and capability vector) for the planner, and
* into STRIPS-style ground actions over a fixed proposition index, which the world
  simulator, the trajectory distances and the metrics use. A joint state is an int
  bitmask over that index: bit ``i`` is set when proposition ``i`` is true.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import unified_planning.shortcuts as up
from unified_planning.io import PDDLReader
from unified_planning.model import Problem

from .capabilities import CapabilityCatalog
from .errors import ConfigError, UnknownNameError
from .household import AGENTS, HUMAN, ROBOT, Household
from .resources import DOMAIN_FILE, pddl_path

up.get_environment().credits_stream = None

NOOP = 'noop'
STATIC_ROOM_PREDICATES = {'has-sink'}
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


@dataclass(frozen=True)
class Task:
    """A shared goal from a start state; atoms are canonical texts."""

    task_id: str
    initial: frozenset[str]
    goal: frozenset[str]

    @property
    def key(self) -> tuple:
        return (tuple(sorted(self.initial)), tuple(sorted(self.goal)))


class TidyUpModel:
    """The household, its capabilities and the grounded PDDL domain."""

    def __init__(self, household: Household | None = None,
                 catalog: CapabilityCatalog | None = None,
                 domain_file: str | Path | None = None):
        self.household = household or Household.from_yaml()
        self.catalog = catalog or CapabilityCatalog.from_yaml()
        self.domain_file = Path(domain_file) if domain_file else pddl_path(DOMAIN_FILE)
        try:
            self._domain_text = self.domain_file.read_text()
        except OSError as error:
            raise ConfigError(f'cannot read PDDL domain {self.domain_file}: {error}') from error
        self._reader_lock = threading.Lock()
        self.propositions: tuple[str, ...] = self._dynamic_propositions()
        self._prop_index = {p: i for i, p in enumerate(self.propositions)}
        self._cost_terms: dict[str, float] = {}  # filled by the grounding
        self.actions: tuple[GroundAction, ...] = self._ground_actions()
        self._actions_by_name = {a.name: a for a in self.actions}
        self.inert_mask = self._inert_capabilities()

    # ----------------------------------------------------------------- propositions
    def _objects_of_type(self, type_name: str) -> tuple[str, ...]:
        objects = {'agent': AGENTS, 'room': self.household.rooms,
                   'item': self.household.item_names}
        try:
            return objects[type_name]
        except KeyError:
            raise ConfigError(f'PDDL type {type_name!r} is not supported by the household') \
                from None

    @cached_property
    def _domain_problem(self) -> Problem:
        with self._reader_lock:
            return PDDLReader().parse_problem_string(self._domain_text)

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
                f'unknown proposition {text!r} in household {self.household.name!r}') from None

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

    # ---------------------------------------------------------------- ground actions
    def _static_value(self, predicate: str, args: tuple[str, ...]) -> bool:
        if predicate == 'has-sink':
            return args[0] in self.household.sinks
        if predicate == 'connected':
            return self.household.connected(*args)
        raise ConfigError(f'static predicate {predicate!r} of the domain has no household data')

    def _cost_value(self, fluent: str, args: tuple[str, ...]) -> float:
        if fluent == 'move-cost':
            return self.household.move_cost[args[0]]
        if fluent == 'handling-cost':
            return self.household.item(args[1]).cost[args[0]]
        raise ConfigError(f'cost function {fluent!r} of the domain has no household data')

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

    def _cost_of(self, expression: up.FNode, binding: dict[str, str]) -> tuple[float, int]:
        """The household's cost of one cost effect and the planner's integer for it.

        Only cost functions are supported: their values are written, tie-breaks
        included, into every problem; a constant in the domain would reach the planner
        without them.
        """
        if not expression.is_fluent_exp():
            raise ConfigError(f'unsupported action cost expression {expression} (the '
                              'domain must give costs as cost functions)')
        fluent, args = self._bind(expression, binding)
        term = atom(fluent, *args)
        cost = self._cost_value(fluent, args)
        self._cost_terms[term] = cost
        return cost, planner_cost(cost, term)

    @staticmethod
    def _bind(node: up.FNode, binding: dict[str, str]) -> tuple[str, tuple[str, ...]]:
        args = []
        for arg in node.args:
            if arg.is_parameter_exp():
                args.append(binding[arg.parameter().name])
            elif arg.is_object_exp():
                args.append(arg.object().name)
            else:
                raise ConfigError(f'unsupported argument {arg} in {node}')
        return node.fluent().name, tuple(args)

    def _ground_one(self, action, binding, values, static) -> GroundAction | None:
        agent = binding.get('a')
        if agent is None:
            raise ConfigError(f'action {action.name!r} must name its actor parameter ?a')
        pre = 0
        gate = None
        possible = True
        conditions = []
        for precondition in action.preconditions:
            conditions.extend(precondition.args if precondition.is_and() else [precondition])
        for condition in conditions:
            if condition.is_not() and condition.arg(0).is_equals():
                left, right = (self._bind_term(t, binding) for t in condition.arg(0).args)
                if left == right:
                    return None  # e.g. moving from a room into itself
                continue
            if not condition.is_fluent_exp():
                raise ConfigError(f'unsupported precondition {condition} in {action.name!r}')
            name, args = self._bind(condition, binding)
            if name.startswith(CAPABILITY_PREFIX):
                if args[0] == HUMAN:
                    gate = self.catalog.gate_index(name[len(CAPABILITY_PREFIX):], args[1])
                continue
            if name in static:
                possible &= self._static_value(name, args)
                continue
            pre |= 1 << self._prop_index[atom(name, *args)]
        add = delete = 0
        cost, tie_broken = 0.0, 0
        for effect in action.effects:
            if effect.is_increase() and effect.fluent.fluent().name == 'total-cost':
                term_cost, term_planner_cost = self._cost_of(effect.value, binding)
                cost += term_cost
                tie_broken += term_planner_cost
                continue
            name, args = self._bind(effect.fluent, binding)
            bit = 1 << self._prop_index[atom(name, *args)]
            if effect.value.is_true():
                add |= bit
            elif effect.value.is_false():
                delete |= bit
            else:
                raise ConfigError(f'unsupported effect {effect} in {action.name!r}')
        delete &= ~add
        return GroundAction(
            name=atom(action.name, *values), schema=action.name, agent=agent,
            args=tuple(values), pre=pre, add=add, delete=delete, cost=cost,
            planner_cost=tie_broken, gate=gate, statically_possible=possible)

    @staticmethod
    def _bind_term(term: up.FNode, binding: dict[str, str]) -> str:
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
        for value in parts[1:]:
            known = (*AGENTS, *self.household.rooms, *self.household.item_names)
            if value not in known:
                raise UnknownNameError(
                    f'unknown name {value!r} in action {text!r} for household '
                    f'{self.household.name!r}')
        raise UnknownNameError(f'action {text!r} does not exist (wrong arguments?)')

    def applicable_actions(self, state: int, agent: str) -> list[str]:
        """Canonical names of ``agent``'s ground actions applicable in ``state``.

        What a person may tell the robot to do instead of its intent (a correction
        panel offers these, never free text). Capabilities are not consulted: the robot
        has them all, and for the human they are what is being estimated.
        """
        self.household.check_agent(agent)
        return [a.name for a in self.actions if a.agent == agent and a.applicable(state)]

    def _inert_capabilities(self) -> np.ndarray:
        live = np.zeros(len(self.catalog), dtype=bool)
        for action in self.actions:
            if action.agent == HUMAN and action.gate is not None and action.statically_possible:
                live[action.gate] = True
        return ~live

    @property
    def inert_capabilities(self) -> list[str]:
        """Capabilities no transition of this household can depend on."""
        return [self.catalog.names[i] for i in np.flatnonzero(self.inert_mask)]

    # ------------------------------------------------------------------- problems
    def validate_task(self, task: Task) -> None:
        """Check that the start state is a consistent household state and goals exist."""
        state = self.state_from_atoms(task.initial)
        self.state_from_atoms(task.goal)
        atoms = set(self.atoms_of(state))
        for agent in AGENTS:
            rooms = [r for r in self.household.rooms if atom('agent-at', agent, r) in atoms]
            if len(rooms) != 1:
                raise ConfigError(f'task {task.task_id}: {agent} must be in exactly one room, '
                                  f'found {rooms or "none"}')
            held = [i for i in self.household.item_names if atom('holding', agent, i) in atoms]
            free = atom('hand-free', agent) in atoms
            if len(held) > 1 or free == bool(held):
                raise ConfigError(f'task {task.task_id}: {agent} must either hold one item '
                                  'or have a free hand')
        for item in self.household.item_names:
            places = [r for r in self.household.rooms if atom('item-at', item, r) in atoms]
            holders = [a for a in AGENTS if atom('holding', a, item) in atoms]
            if len(places) + len(holders) != 1:
                raise ConfigError(f'task {task.task_id}: item {item} must be in exactly one '
                                  'place (a room or a hand)')
            if (atom('dirty', item) in atoms) == (atom('clean', item) in atoms):
                raise ConfigError(f'task {task.task_id}: item {item} must be dirty or clean')
        if not task.goal:
            raise ConfigError(f'task {task.task_id} has an empty goal')

    def task_from_state(self, task: Task, state: int) -> Task:
        """The same goal from an intermediate state (what a robot re-plans after a step)."""
        return Task(task.task_id, frozenset(self.atoms_of(state)), task.goal)

    def problem_text(self, task: Task) -> str:
        """The PDDL problem of a task with a fully capable human (not validated)."""
        house = self.household
        lines = [f'(define (problem {_pddl_name(task.task_id)}) (:domain tidyup)',
                 ' (:objects ' + ' '.join(AGENTS) + ' - agent '
                 + ' '.join(house.rooms) + ' - room ' + ' '.join(house.item_names) + ' - item)',
                 ' (:init (= (total-cost) 0)']
        lines += [f'  {a}' for a in sorted(task.initial)]
        lines += [f'  {atom("has-sink", room)}' for room in house.sinks]
        lines += [f'  {atom("connected", here, there)}' for here in house.rooms
                  for there in house.rooms if house.connected(here, there)]
        lines += [f'  (= {term} {value})' for term, value in self.planner_costs.items()]
        for agent in AGENTS:
            # Everyone starts capable; the planner clones and switches human facts off.
            for predicate in self._capability_predicates:
                lines += [f'  {atom(predicate, agent, room)}' for room in house.rooms]
        lines.append(' )')
        lines.append(' (:goal (and ' + ' '.join(sorted(task.goal)) + '))')
        lines.append(' (:metric minimize (total-cost)))')
        return '\n'.join(lines)

    @cached_property
    def _capability_predicates(self) -> tuple[str, ...]:
        return tuple(f.name for f in self._domain_problem.fluents
                     if f.name.startswith(CAPABILITY_PREFIX))

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

    def conditioned_problem(self, base: Problem, capabilities: np.ndarray) -> Problem:
        """The induced problem: the human's gated actions need the capability."""
        capabilities = self.catalog.check_vector(capabilities)
        problem = base.clone()
        human = problem.object(HUMAN)
        for index in np.flatnonzero(~capabilities):
            capability = self.catalog.capabilities[index]
            if capability.room not in self.household.rooms:
                continue  # a room this household does not have: inert
            predicate = CAPABILITY_PREFIX + capability.action
            if not problem.has_fluent(predicate):
                raise ConfigError(
                    f'capability {capability.name!r} gates action {capability.action!r}, '
                    f'which the PDDL domain does not have')
            fluent = problem.fluent(predicate)
            problem.set_initial_value(fluent(human, problem.object(capability.room)), False)
        return problem

    def human_capable(self, action: GroundAction, capabilities: np.ndarray) -> bool:
        return action.agent != HUMAN or action.gate is None or bool(capabilities[action.gate])


def _pddl_name(text: str) -> str:
    cleaned = ''.join(ch if ch.isalnum() or ch in '-_' else '-' for ch in text)
    return ('task-' + cleaned) if not cleaned[:1].isalpha() else cleaned


__all__ = ['AGENTS', 'HUMAN', 'NOOP', 'ROBOT', 'GroundAction', 'Task', 'TidyUpModel', 'atom',
           'split_atom']
