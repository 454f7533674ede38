"""The TidyUP domain: the PDDL domain grounded for one household."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np
from unified_planning.model import Problem

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import AGENTS, HUMAN, NOOP, ROBOT, Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.resources import config_path, pddl_path
from cecm_ros.domains.pddl.model import (
    ACTION_UNIT,
    CAPABILITY_PREFIX,
    COST_SCALE,
    MAX_EXACT_PLAN_LENGTH,
    TIE_WEIGHTS,
    GroundAction,
    PddlModel,
    atom,
    pddl_name,
    planner_cost,
    split_atom,
)

from .household import Household

DOMAIN_FILE = 'tidyup_domain.pddl'
DEFAULT_CAPABILITIES = 'capabilities.yaml'


def default_catalog() -> CapabilityCatalog:
    """TidyUP's capabilities and partner types (config/capabilities.yaml)."""
    return CapabilityCatalog.from_yaml(config_path(DEFAULT_CAPABILITIES))


class TidyUpModel(PddlModel):
    """The household, its capabilities and the grounded PDDL domain."""

    name = 'tidyup'
    # Put things down and wash them before picking the next one up, and finish in a room
    # before leaving it: the order a plan's actions are tried in when it is re-ordered
    # canonically (cecm_ros.domains.pddl.planner.canonical_order).
    schema_rank = {'place': 0, 'wash': 1, 'pick': 2, 'move': 3}
    static_impossibility = 'impossible in this household (e.g. no sink there)'
    # The household's plan_heuristic: 'pdb' is canonical pattern databases over every
    # interesting pattern of up to three variables (an agent's room with an item's
    # place, say), which see moves a goal costs that CEGAR's goal abstractions miss.
    SEARCHES = {'cegar': None,
                'pdb': 'astar(cpdbs(systematic(3)),verbosity=silent)'}

    def __init__(self, household: Household | None = None,
                 catalog: CapabilityCatalog | None = None,
                 domain_file: str | Path | None = None):
        self.household = household or Household.from_yaml()
        self._task_masks: dict[tuple[str, ...], np.ndarray] = {}
        super().__init__(Path(domain_file) if domain_file else pddl_path(DOMAIN_FILE),
                         catalog or default_catalog())

    def _where(self) -> str:
        return f'household {self.household.name!r}'

    def rebuild_arguments(self) -> tuple:
        return (self.household, self.catalog, self.domain_file)

    def _objects_of_type(self, type_name: str) -> tuple[str, ...]:
        objects = {'agent': AGENTS, 'room': self.household.rooms,
                   'item': self.household.item_names}
        try:
            return objects[type_name]
        except KeyError:
            raise ConfigError(f'PDDL type {type_name!r} is not supported by the household') \
                from None

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

    def problem_text(self, task: Task) -> str:
        """The PDDL problem of a task with a fully capable human (not validated), over
        the items the task needs (:meth:`task_items`) and the rooms it covers
        (:meth:`task_rooms`)."""
        house = self.household
        items = self.task_items(task)
        rooms = self.task_rooms(task)
        dropped = (set(house.item_names) - items) | (set(house.rooms) - set(rooms))

        def kept(text: str) -> bool:
            return not dropped.intersection(split_atom(text)[1:])

        lines = [f'(define (problem {pddl_name(task.task_id)}) (:domain tidyup)',
                 ' (:objects ' + ' '.join(AGENTS) + ' - agent '
                 + ' '.join(rooms) + ' - room'
                 + ''.join(f' {i}' for i in house.item_names if i in items)
                 + (' - item)' if items else ')'),
                 ' (:init (= (total-cost) 0)']
        lines += [f'  {a}' for a in sorted(task.initial) if kept(a)]
        lines += [f'  {atom("has-sink", room)}' for room in house.sinks if room in rooms]
        lines += [f'  {atom("connected", here, there)}' for here in rooms
                  for there in rooms if house.connected(here, there)]
        lines += [f'  (= {term} {value})' for term, value in self.planner_costs.items()
                  if kept(term)]
        for agent in AGENTS:
            # Everyone starts capable; the planner clones and switches human facts off.
            for predicate in self._capability_predicates:
                lines += [f'  {atom(predicate, agent, room)}' for room in rooms]
        lines.append(' )')
        lines.append(' (:goal (and ' + ' '.join(sorted(task.goal)) + '))')
        lines.append(' (:metric minimize (total-cost)))')
        return '\n'.join(lines)

    def task_rooms(self, task: Task) -> tuple[str, ...]:
        """The rooms the planner's problem for ``task`` covers, in the household's order.

        Every room, unless the household says ``plan_rooms: task`` and the partner's hand
        is free. Then only the rooms the task involves: where the agents are, where the
        items it needs are (or go, by its goal), and the sinks when one of them must
        still be washed. The robot may do anything anywhere, so these rooms always hold
        a plan when the household does; a partner holding an item may have nowhere among
        them to put it down, hence every room then. Every room opens onto every other
        and a move costs an agent the same wherever it goes, so no route needs another
        room; what such a problem cannot express is an item handed over or put down in a
        room nothing else happens in. An optimal plan may do that where no room of the
        task serves as cheaply, or where one serves exactly as well and the tie-breaking
        costs prefer the other room. That is not proven never to change a plan, which is
        why it is the household's choice: docs/performance.md measures it on the 10-room
        household.
        """
        house = self.household
        if house.plan_rooms != 'task' or any(split_atom(text)[:2] == ('holding', HUMAN)
                                             for text in task.initial):
            # A partner with an item in hand may be able to put it down only in a room
            # the task does not involve (its capabilities say where): every room.
            return house.rooms
        items = self.task_items(task)
        involved: set[str] = set()
        washing = False
        for text in task.initial:
            parts = split_atom(text)
            if parts[0] == 'agent-at' or (parts[0] == 'item-at' and parts[1] in items):
                involved.add(parts[-1])
        for text in task.goal:
            parts = split_atom(text)
            if parts[0] in ('agent-at', 'item-at'):
                involved.add(parts[-1])
            elif parts[0] == 'clean' and atom('dirty', parts[1]) in task.initial:
                washing = True
        if washing:
            involved.update(house.sinks)
        return tuple(room for room in house.rooms if room in involved)

    def problem_objects(self, task: Task) -> tuple[str, ...] | None:
        return self.task_rooms(task) if self.household.plan_rooms == 'task' else None

    def task_inert_mask(self, task: Task) -> np.ndarray:
        """The inert capabilities and those of rooms the task's problem leaves out."""
        rooms = self.task_rooms(task)
        if len(rooms) == len(self.household.rooms):
            return self.inert_mask
        cached = self._task_masks.get(rooms)
        if cached is None:
            outside = np.array([capability.room not in rooms
                                for capability in self.catalog.capabilities], dtype=bool)
            cached = self.inert_mask | outside
            cached.flags.writeable = False
            self._task_masks[rooms] = cached
        return cached

    @property
    def optimal_search(self) -> str | None:  # type: ignore[override]
        """The search of the household's plan_heuristic. Both find an optimal plan, the
        same one unless two plans tie to the last of the planner's tie-breaking costs;
        then each may find another (docs/performance.md, "The search's heuristic")."""
        return self.SEARCHES[self.household.plan_heuristic]

    def plan_scope(self) -> str:
        scope = super().plan_scope()
        if self.household.plan_rooms != 'all':
            # Raise the number when task_rooms changes which rooms a task gets.
            scope += f':rooms={self.household.plan_rooms}/2'
        if self.household.plan_heuristic != 'cegar':
            scope += f':heuristic={self.household.plan_heuristic}'
        return scope

    def task_items(self, task: Task) -> set[str]:
        """The items a plan of ``task`` may handle: those its goal names and those an
        agent holds at the start. Every action costs something and no precondition
        asks for another item, so an optimal plan never touches the rest; leaving them
        out of the planner's problem changes no optimal plan and keeps the search's
        state space the size of the task, not of the household."""
        items = set(self.household.item_names)
        needed = {part for text in task.goal for part in split_atom(text)[1:]
                  if part in items}
        for text in task.initial:
            parts = split_atom(text)
            if parts[0] == 'holding' and len(parts) == 3 and parts[2] in items:
                needed.add(parts[2])
        return needed

    @cached_property
    def _capability_predicates(self) -> tuple[str, ...]:
        return tuple(f.name for f in self._domain_problem.fluents
                     if f.name.startswith(CAPABILITY_PREFIX))

    def conditioned_problem(self, base: Problem, capabilities: np.ndarray) -> Problem:
        """The induced problem: the human's gated actions need the capability."""
        capabilities = self.catalog.check_vector(capabilities)
        problem = base.clone()
        human = problem.object(HUMAN)
        for index in np.flatnonzero(~capabilities):
            capability = self.catalog.capabilities[index]
            if not problem.has_object(capability.room):
                continue  # a room this household (or this task's problem) does not have
            predicate = CAPABILITY_PREFIX + capability.action
            if not problem.has_fluent(predicate):
                raise ConfigError(
                    f'capability {capability.name!r} gates action {capability.action!r}, '
                    f'which the PDDL domain does not have')
            fluent = problem.fluent(predicate)
            problem.set_initial_value(fluent(human, problem.object(capability.room)), False)
        return problem

    def task_generator(self, seed: int):
        from .tasks import TaskGenerator

        return TaskGenerator(self, seed)

    def describe(self) -> str:
        return f'tidyup (household {self.household.name!r})'


def make_tidyup(household: str | Path | None = None,
                capabilities: str | Path | None = None) -> TidyUpModel:
    """TidyUP with an optional household file and capability catalogue (by default the
    one the household file names, else the package's)."""
    home = Household.from_yaml(household) if household else None
    catalogue = capabilities
    if not catalogue and home is not None and home.capabilities_file is not None:
        catalogue = home.capabilities_file
        if not catalogue.is_file():   # (checked only when used: an explicit one wins)
            raise ConfigError(f'household {home.name!r} names the capability catalogue '
                              f'{catalogue}, which is not a file')
    return TidyUpModel(home, CapabilityCatalog.from_yaml(catalogue) if catalogue else None)


__all__ = ['ACTION_UNIT', 'AGENTS', 'COST_SCALE', 'HUMAN', 'MAX_EXACT_PLAN_LENGTH', 'NOOP',
           'ROBOT', 'TIE_WEIGHTS', 'GroundAction', 'Task', 'TidyUpModel', 'atom',
           'default_catalog', 'make_tidyup', 'planner_cost', 'split_atom']
