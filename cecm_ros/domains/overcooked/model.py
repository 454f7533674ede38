"""The Overcooked domain: two cooks, macro actions on a grid kitchen, salads to serve.

A state is a tuple of small ints (and the kitchen's and recipe's names)::

    (kitchen, recipe, robot cell, partner cell,
     where lettuce, onion, tomato are, their chops (0-3), where plate_1, plate_2 are,
     served)

An object's place is a counter cell, ``HELD + agent``, ``ON_PLATE + plate`` (vegetables)
or ``SERVED``. A joint step runs the partner's macro action to its end, then the
robot's (the order of :class:`~cecm_ros.core.simulator.WorldSimulator`); each walks by A*
with the other agent in the way and then works at its counter. A macro action that
cannot do anything in a state (``get_onion`` with full hands) leaves the state as it
is, and so does one whose capability the partner lacks (the paper's self-loop).

Every macro action needs one capability, the one named after it (``get_lettuce``:
``handle_lettuce``; ``chop``: ``chop``), so a capability vector is exactly a set of
macro actions the partner can use. Rules:

* ``get_<vegetable>``: empty-handed, pick it up (raw, or chopped from a board or off a
  plate on a counter); holding a plate, put it on the plate when it is chopped (also
  from the other cook's hands).
* ``get_plate_<k>``: empty-handed, pick the plate up (with what is on it); holding a
  chopped vegetable, put it on the plate (also in the other cook's hands).
* ``go_to_knife_<k>``: holding a raw vegetable, put it on the free board; holding a
  plate, take the chopped vegetable off the board onto it; a board with something to
  chop on it: go there (whatever the hands hold).
* ``chop``: chop the vegetable on a board next to the agent, three chops, to the end.
* ``deliver``: hand in the plate held; the right salad serves the task, a wrong one is
  refused (the cook keeps it).
* ``out_of_the_way``: put what is held on the nearest free middle counter (in a kitchen
  without one, the nearest free counter); empty-handed, stand by the middle counter, or
  on the park cell of a kitchen without one.

Rewards (the paper's): -0.1 per primitive tick of a joint step (the longer macro
action of the two), +0.5 for the last chop of a vegetable the recipe needs, +1 for the
right salad served, -1 for a wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from cecm_ros.core.capabilities import Capability, CapabilityCatalog, PartnerType
from cecm_ros.core.domain import (
    HUMAN,
    NOOP,
    ROBOT,
    ActionOutcome,
    Domain,
    Task,
)
from cecm_ros.core.errors import CecmError, ConfigError, UnknownNameError
from cecm_ros.core.estimator_settings import likelihood_section
from cecm_ros.core.resources import config_path

from .kitchen import ROLES, VEGETABLES, Kitchen

HELD, ON_PLATE, SERVED, ABSENT = 100, 200, 300, -1
PLATES = ('plate_1', 'plate_2')
KNIVES = ('knife_1', 'knife_2')
MACROS = ('get_lettuce', 'get_onion', 'get_tomato', 'get_plate_1', 'get_plate_2',
          'go_to_knife_1', 'go_to_knife_2', 'deliver', 'chop', 'out_of_the_way')
STAY = 'stay'   # written "noop" in joint plans
CHOPS = 3
AGENT_OF_ROLE = {ROBOT: 0, HUMAN: 1}
ROLE_OF_AGENT = (ROBOT, HUMAN)
# State tuple positions.
K, RECIPE, POS, VLOC, CHOP, PLOC, DONE = 0, 1, 2, 4, 7, 10, 12
DEFAULT_FILE = 'domains/overcooked/domain.yaml'
# Bounds the memo tables (transitions, features): a search visits many states.
MEMO_LIMIT = 300_000
_NAME = re.compile(r'^[A-Za-z0-9_]+$')
_ACTION = re.compile(r'^\(?\s*([a-z_0-9]+)\s+([a-z_]+)\s*\)?$')
_FACT = re.compile(r'^\(\s*([a-z_]+)((?:\s+[A-Za-z_0-9]+)*)\s*\)$')


class Rewards:
    def __init__(self, step: float = -0.1, chop: float = 0.5, dish: float = 1.0,
                 wrong_dish: float = -1.0):
        self.step, self.chop, self.dish, self.wrong_dish = step, chop, dish, wrong_dish

    def as_dict(self) -> dict[str, float]:
        return {'step': self.step, 'chop': self.chop, 'dish': self.dish,
                'wrong_dish': self.wrong_dish}


class OvercookedDomain(Domain[tuple]):
    """Kitchens x recipes as tasks, macro actions with the self-loop rule, cosine
    distance over state features, and a PUCT MCTS planner."""

    name = 'overcooked'
    # Joint steps are compared by cosine over their features; trajectories of different
    # lengths are padded with their last state (a served kitchen stays served).
    default_epsilon = 0.03
    # The robot searches its hypotheses with the planner's seed, so a partner that plans
    # with it too is an oracle (the true vector reproduces it exactly); the paper's
    # partner searches on its own.
    default_partner_behaviour = 'independent'
    # A partner's own search lands within epsilon of the true vector's predicted plan in
    # only a third to a half of the tasks, and the cosine distance barely sees who did a
    # step (docs/experiments.md): the likelihood compares which capabilities the partner
    # used with how often four searches of a hypothesis use them (a domain file's
    # `likelihood:` section overrides these).
    likelihood_defaults: dict[str, Any] = {'likelihood': 'usage', 'lapse': 0.1,
                                           'bandwidth': 0.0, 'likelihood_seeds': 4}

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else config_path(DEFAULT_FILE)
        data = self._read(self.path)
        base = self.path.parent
        self.kitchens: dict[str, Kitchen] = {}
        for entry in data.get('kitchens') or ():
            kitchen = Kitchen.from_yaml(base / str(entry))
            if kitchen.name in self.kitchens:
                raise ConfigError(f'{self.path}: two kitchens are named {kitchen.name!r}')
            self.kitchens[kitchen.name] = kitchen
        if not self.kitchens:
            raise ConfigError(f'{self.path}: "kitchens" lists no kitchen file')
        recipes = data.get('recipes')
        if not isinstance(recipes, dict) or not recipes:
            raise ConfigError(f'{self.path}: "recipes" maps names to lists of vegetables')
        self.recipes: dict[str, tuple[str, ...]] = {}
        for name, vegetables in recipes.items():
            if not _NAME.match(str(name)):
                raise ConfigError(f'{self.path}: recipe name {name!r}: use letters, digits '
                                  'and _ only')
            if not isinstance(vegetables, list) or not vegetables:
                raise ConfigError(f'{self.path}: recipe {name!r} needs a list of vegetables')
            for vegetable in vegetables:
                if vegetable not in VEGETABLES:
                    raise ConfigError(f'{self.path}: recipe {name!r} names an unknown '
                                      f'vegetable {vegetable!r}; vegetables: '
                                      f'{", ".join(VEGETABLES)}')
            if len(set(vegetables)) != len(vegetables):
                raise ConfigError(f'{self.path}: recipe {name!r} repeats a vegetable')
            self.recipes[str(name)] = tuple(v for v in VEGETABLES if v in vegetables)
        for kitchen in self.kitchens.values():
            for name, vegetables in self.recipes.items():
                missing = [v for v in vegetables if v not in kitchen.objects]
                if missing:
                    raise ConfigError(f'{self.path}: recipe {name!r} needs {missing} but '
                                      f'kitchen {kitchen.name!r} has none')
        rewards = data.get('rewards') or {}
        if not isinstance(rewards, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for v in rewards.values()):
            raise ConfigError(f'{self.path}: rewards maps step, chop, dish and wrong_dish to '
                              f'numbers, got {rewards!r}')
        try:
            self.rewards = Rewards(**rewards)
        except TypeError as error:
            raise ConfigError(f'{self.path}: rewards: {error}') from error
        self.max_steps = data.get('max_steps', 30)
        if not isinstance(self.max_steps, int) or isinstance(self.max_steps, bool) \
                or self.max_steps < 1:
            raise ConfigError(f'{self.path}: max_steps must be a whole number of at least 1, '
                              f'got {self.max_steps!r}')
        self.catalog = self._read_catalog(data)
        self.likelihood_defaults = {**type(self).likelihood_defaults,
                                    **likelihood_section(data.get('likelihood'),
                                                         str(self.path))}
        self.recipe_names = tuple(self.recipes)
        self._tasks = [self._make_task(k, r) for k in self.kitchens for r in self.recipes]
        self._acts: dict[tuple, tuple[tuple, int, float]] = {}
        self._features: dict[tuple, tuple[float, ...]] = {}

    # --------------------------------------------------------------- loading
    def _read(self, path: Path) -> dict[str, Any]:
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f'cannot read the Overcooked domain file {path}: {error}') \
                from error
        if not isinstance(data, dict):
            raise ConfigError(f'{path}: expected a mapping')
        known = {'kitchens', 'recipes', 'rewards', 'max_steps', 'capabilities',
                 'partner_types', 'likelihood'}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f'{path}: unknown keys {unknown}; known: {sorted(known)}')
        return data

    def _read_catalog(self, data: dict[str, Any]) -> CapabilityCatalog:
        entries = data.get('capabilities') or []
        capabilities = []
        for entry in entries:
            if not isinstance(entry, dict) or 'name' not in entry or 'action' not in entry:
                raise ConfigError(f'{self.path}: a capability needs name and action, got '
                                  f'{entry!r}')
            if entry['action'] not in MACROS:
                raise ConfigError(f'{self.path}: capability {entry["name"]!r} gates an '
                                  f'unknown macro action {entry["action"]!r}; macro '
                                  f'actions: {", ".join(MACROS)}')
            capabilities.append(Capability(str(entry['name']), str(entry['action']),
                                           'kitchen', str(entry.get('description', ''))))
        gated = [c.action for c in capabilities]
        if sorted(gated) != sorted(MACROS):
            raise ConfigError(f'{self.path}: every macro action but stay needs exactly one '
                              f'capability; missing {sorted(set(MACROS) - set(gated))}, '
                              f'repeated {sorted({a for a in gated if gated.count(a) > 1})}')
        partners = {}
        types = data.get('partner_types') or {}
        if not isinstance(types, dict):
            raise ConfigError(f'{self.path}: partner_types maps names to {{description, '
                              f'missing: [capabilities]}}, got {types!r}')
        for name, entry in types.items():
            missing = (entry.get('missing') or []) if isinstance(entry, dict) else None
            if not isinstance(missing, list):
                raise ConfigError(f'{self.path}: partner type {name!r} needs a mapping with '
                                  f'"missing" a list of capabilities')
            partners[str(name)] = PartnerType(str(name), str(entry.get('description', '')),
                                              tuple(str(m) for m in missing))
        try:
            catalog = CapabilityCatalog(capabilities, partners)
        except CecmError as error:
            raise ConfigError(f'{self.path}: {error}') from None
        # The capability of each macro action, by position in the catalogue.
        self.gate = {c.action: i for i, c in enumerate(catalog.capabilities)}
        return catalog

    def fingerprint_files(self) -> list[Path]:
        """The files whose content defines this domain (a plan cache keys on them)."""
        return [self.path] + [Path(k.source) for k in self.kitchens.values()]

    # ----------------------------------------------------------- capabilities
    @property
    def inert_mask(self) -> np.ndarray:
        return np.zeros(len(self.catalog), dtype=bool)

    def relevant_mask(self, task: Task) -> np.ndarray:
        """Capabilities that can matter in ``task``: a vegetable the recipe does not use
        is never useful there (the planner prunes it), so vectors that differ only there
        plan alike."""
        state = self.initial_state(task)
        mask = np.ones(len(self.catalog), dtype=bool)
        for vegetable in VEGETABLES:
            if vegetable not in self.recipes[state[RECIPE]]:
                mask[self.gate[f'get_{vegetable}']] = False
        return mask

    def interchangeable_capabilities(self) -> tuple[tuple[int, ...], ...]:
        """The two plates, and the two knives: a partner's habit may keep to one of each."""
        return tuple((self.gate[f'{kind}_1'], self.gate[f'{kind}_2'])
                     for kind in ('get_plate', 'go_to_knife'))

    def goal_progress(self, task: Task, state: tuple) -> float:
        """A cook's plain count of how far the salad is (what a greedy partner climbs,
        unlike the planner's prior): per vegetable of the recipe 2 on a board raw, 3
        chopped, 4 on a plate; 20 once served. (Carrying counts for nothing: a cook who
        cannot bring a vegetable to a board loses nothing by putting it down.)"""
        if state[DONE]:
            return 20.0
        recipe = self.recipes[state[RECIPE]]
        boards = {self.kitchens[state[K]].objects[knife] for knife in KNIVES}
        value = 0.0
        for i, vegetable in enumerate(VEGETABLES):
            if vegetable not in recipe:
                continue
            where = state[VLOC + i]
            if ON_PLATE <= where < SERVED:
                value += 4.0
            elif state[CHOP + i] == CHOPS:
                value += 3.0
            elif where in boards:
                value += 2.0
        return value

    def exercised_capabilities(self, trajectory: Sequence[tuple]) -> np.ndarray:
        """A capability is proven used at a step when every pair of macro actions (the
        partner's, then the robot's) that explains the step has the partner use it."""
        used = np.zeros(len(self.catalog), dtype=bool)
        options = (STAY,) + MACROS
        for before, after in zip(trajectory, trajectory[1:]):
            if before == after:
                continue
            needed: set[int | None] = set()
            for partner in options:
                middle = before if partner == STAY else self.act(before, 1, partner)[0]
                for robot in options:
                    reached = middle if robot == STAY else self.act(middle, 0, robot)[0]
                    if reached == after:
                        needed.add(None if middle == before else self.gate[partner])
            if len(needed) == 1 and None not in needed:
                used[needed.pop()] = True
        return used

    # ------------------------------------------------------------------ tasks
    def _make_task(self, kitchen: str, recipe: str) -> Task:
        state = self._start(kitchen, recipe)
        return Task(f'{kitchen}-{recipe}', frozenset(self.state_facts(state)),
                    frozenset({f'(served {recipe})'}))

    def _start(self, kitchen_name: str, recipe: str) -> tuple:
        kitchen = self.kitchens[kitchen_name]
        vloc = tuple(kitchen.objects.get(v, ABSENT) for v in VEGETABLES)
        ploc = tuple(kitchen.objects[p] for p in PLATES)
        return (kitchen_name, recipe, *kitchen.starts, *vloc, 0, 0, 0, *ploc, 0)

    @property
    def tasks(self) -> list[Task]:
        """The kitchens x recipes, in file order."""
        return list(self._tasks)

    def default_partner(self) -> str:
        return 'type_2' if 'type_2' in self.catalog.partner_types else super().default_partner()

    def task_universe(self) -> list[Task]:
        return self.tasks

    def task_generator(self, seed: int) -> TaskShuffle:
        return TaskShuffle(self._tasks, seed)

    def validate_task(self, task: Task) -> None:
        state = self.initial_state(task)   # raises on malformed facts
        goal = self._goal_recipe(task)
        if goal != state[RECIPE]:
            raise ConfigError(f'task {task.task_id}: the goal serves {goal!r} but the '
                              f'state says recipe {state[RECIPE]!r}')

    def _goal_recipe(self, task: Task) -> str:
        goals = sorted(task.goal)
        if len(goals) != 1 or not goals[0].startswith('(served '):
            raise ConfigError(f'task {task.task_id}: the goal is one fact (served RECIPE), '
                              f'got {goals}')
        recipe = goals[0][len('(served '):-1].strip()
        if recipe not in self.recipes:
            raise ConfigError(f'task {task.task_id}: unknown recipe {recipe!r}; recipes: '
                              f'{", ".join(self.recipes)}')
        return recipe

    def canonical_atoms(self, atoms, task_id: str = '') -> list[str]:
        return sorted(' '.join(str(a).replace('(', ' ( ').replace(')', ' ) ').split())
                      .replace('( ', '(').replace(' )', ')') for a in atoms)

    # --------------------------------------------------------------- dynamics
    def initial_state(self, task: Task) -> tuple:
        return self._state_from_facts(task.initial, task.task_id)

    def goal_reached(self, task: Task, state: tuple) -> bool:
        return state[DONE] == 1

    def task_from_state(self, task: Task, state: tuple) -> Task:
        return Task(task.task_id, frozenset(self.state_facts(state)), task.goal)

    def holding(self, state: tuple, agent: int) -> tuple[str, int] | None:
        """What ``agent`` (0 robot, 1 partner) holds: ('vegetable', i), ('plate', k)."""
        mark = HELD + agent
        for i in range(3):
            if state[VLOC + i] == mark:
                return ('vegetable', i)
        for k in range(2):
            if state[PLOC + k] == mark:
                return ('plate', k)
        return None

    def act(self, state: tuple, agent: int, macro: str) -> tuple[tuple, int, float]:
        """(next state, primitive ticks, reward other than the per-tick cost) of a capable
        ``agent`` doing ``macro``; the state itself when it can do nothing there."""
        key = (state, agent, macro)
        known = self._acts.get(key)
        if known is None:
            known = self._act(state, agent, macro)
            if len(self._acts) > MEMO_LIMIT:
                self._acts.clear()
            self._acts[key] = known
        return known

    def _act(self, state: tuple, agent: int, macro: str) -> tuple[tuple, int, float]:
        kitchen = self.kitchens[state[K]]
        s = list(state)
        held = self.holding(state, agent)
        recipe = self.recipes[state[RECIPE]]
        nothing = (state, 1, 0.0)

        def go(target: int, stand_on: bool = False) -> int | None:
            walk = kitchen.walk(s[POS + agent], target, s[POS + 1 - agent], stand_on)
            if walk is None:
                return None
            s[POS + agent] = walk[0]
            return walk[1]

        def lying_at(cell: int) -> int | None:
            for i in range(3):
                if s[VLOC + i] == cell:
                    return i
            return None

        if state[DONE]:
            return nothing
        if macro.startswith('get_') and macro[4:] in VEGETABLES:
            i = VEGETABLES.index(macro[4:])
            where = state[VLOC + i]
            if where == HELD + 1 - agent and held is not None and held[0] == 'plate' \
                    and state[CHOP + i] == CHOPS:
                # Hand-over: the other cook holds it chopped; put it on my plate.
                moves = go(state[POS + 1 - agent])
                if moves is None:
                    return nothing
                s[VLOC + i] = ON_PLATE + held[1]
                return tuple(s), moves + 1, 0.0
            if held is None and ON_PLATE <= where < SERVED \
                    and 0 <= state[PLOC + where - ON_PLATE] < HELD:
                # Take it off a plate that lies on a counter (to move it to another).
                moves = go(state[PLOC + where - ON_PLATE])
                if moves is None:
                    return nothing
                s[VLOC + i] = HELD + agent
                return tuple(s), moves + 1, 0.0
            if where < 0 or where >= HELD or state[CHOP + i] not in (0, CHOPS):
                return nothing
            if held is None:
                moves = go(where)
                if moves is None:
                    return nothing
                s[VLOC + i] = HELD + agent
            elif held[0] == 'plate' and state[CHOP + i] == CHOPS:
                moves = go(where)
                if moves is None:
                    return nothing
                s[VLOC + i] = ON_PLATE + held[1]
            else:
                return nothing
            return tuple(s), moves + 1, 0.0
        if macro in ('get_plate_1', 'get_plate_2'):
            k = PLATES.index(macro[4:])
            where = state[PLOC + k]
            if where == HELD + 1 - agent and held is not None and held[0] == 'vegetable' \
                    and state[CHOP + held[1]] == CHOPS:
                # Hand-over: the other cook holds the plate; put my vegetable on it.
                moves = go(state[POS + 1 - agent])
                if moves is None:
                    return nothing
                s[VLOC + held[1]] = ON_PLATE + k
                return tuple(s), moves + 1, 0.0
            if where < 0 or where >= HELD:
                return nothing
            if held is None:
                moves = go(where)
                if moves is None:
                    return nothing
                s[PLOC + k] = HELD + agent
            elif held[0] == 'vegetable' and state[CHOP + held[1]] == CHOPS:
                moves = go(where)
                if moves is None:
                    return nothing
                s[VLOC + held[1]] = ON_PLATE + k
            else:
                return nothing
            return tuple(s), moves + 1, 0.0
        if macro in ('go_to_knife_1', 'go_to_knife_2'):
            board = kitchen.objects[macro[6:]]
            on_board = lying_at(board)
            if on_board is None:
                # A free board: put the raw vegetable held on it.
                if held is None or held[0] != 'vegetable' or state[CHOP + held[1]] != 0:
                    return nothing
                moves = go(board)
                if moves is None:
                    return nothing
                s[VLOC + held[1]] = board
                return tuple(s), moves + 1, 0.0
            if state[CHOP + on_board] == CHOPS:
                # Something chopped on it: take it onto the plate held.
                if held is None or held[0] != 'plate':
                    return nothing
                moves = go(board)
                if moves is None:
                    return nothing
                s[VLOC + on_board] = ON_PLATE + held[1]
                return tuple(s), moves + 1, 0.0
            # Something to chop on it: go there (whatever the hands hold) to chop.
            if s[POS + agent] in kitchen.neighbours(board):
                return nothing
            moves = go(board)
            if moves is None:
                return nothing
            return tuple(s), moves, 0.0
        if macro == 'chop':
            here = kitchen.neighbours(state[POS + agent])
            for knife in KNIVES:
                board = kitchen.objects[knife]
                lying = lying_at(board)
                if board in here and lying is not None and state[CHOP + lying] < CHOPS:
                    done = CHOPS - state[CHOP + lying]
                    s[CHOP + lying] = CHOPS
                    bonus = self.rewards.chop if VEGETABLES[lying] in recipe else 0.0
                    return tuple(s), done, bonus
            return nothing
        if macro == 'deliver':
            if held is None or held[0] != 'plate':
                return nothing
            k = held[1]
            dish = tuple(v for i, v in enumerate(VEGETABLES) if state[VLOC + i] == ON_PLATE + k)
            if not dish:
                return nothing
            moves = go(kitchen.objects['delivery'])
            if moves is None:
                return nothing
            if dish != recipe:
                return tuple(s), moves + 1, self.rewards.wrong_dish
            s[PLOC + k] = SERVED
            for i in range(3):
                if s[VLOC + i] == ON_PLATE + k:
                    s[VLOC + i] = SERVED
            s[DONE] = 1
            return tuple(s), moves + 1, self.rewards.dish
        if macro == 'out_of_the_way':
            if held is None:
                # Empty-handed: make room (by the middle counter, or on the park cell).
                if kitchen.middle:
                    if any(c in kitchen.neighbours(s[POS + agent]) for c in kitchen.middle):
                        return nothing
                    targets = list(kitchen.middle)
                else:
                    assert kitchen.park is not None   # a kitchen has middle or park
                    if s[POS + agent] == kitchen.park:
                        return nothing
                    moves = go(kitchen.park, stand_on=True)
                    return nothing if moves is None else (tuple(s), moves, 0.0)
            else:
                taken = set(s[VLOC:VLOC + 3]) | set(s[PLOC:PLOC + 2])
                targets = [c for c in kitchen.put_down_cells if c not in taken]
            best = None
            for cell in targets:
                walk = kitchen.walk(s[POS + agent], cell, s[POS + 1 - agent])
                if walk is not None and (best is None or walk[1] < best[1][1]):
                    best = (cell, walk)
            if best is None:
                return nothing
            cell, (end, moves) = best
            s[POS + agent] = end
            if held is None:
                return tuple(s), moves, 0.0
            if held[0] == 'vegetable':
                s[VLOC + held[1]] = cell
            else:
                s[PLOC + held[1]] = cell
            return tuple(s), moves + 1, 0.0
        raise UnknownNameError(f'unknown macro action {macro!r}; macro actions: '
                               f'{", ".join((STAY,) + MACROS)}')

    def useful(self, state: tuple, agent: int, macro: str, can_chop: bool = True) -> bool:
        """Whether ``macro`` does something worth planning for in ``state``: it changes
        more than where the agent stands, walks to a board to chop (for an agent that
        ``can_chop``) or out of the way; never fetching a vegetable the recipe does not
        need."""
        if macro.startswith('get_') and macro[4:] in VEGETABLES \
                and macro[4:] not in self.recipes[state[RECIPE]]:
            return False
        after = self.act(state, agent, macro)[0]
        if after == state:
            return False
        if after[VLOC:] != state[VLOC:]:
            return True
        # A walk is worth it to chop, or to make way (a cook on the only cell next to a
        # board blocks the other).
        return macro == 'out_of_the_way' or (can_chop and macro.startswith('go_to_knife'))

    def transition(self, state: tuple, agent: str, action: str | None,
                   capabilities: np.ndarray) -> tuple[tuple, ActionOutcome]:
        if action in (None, NOOP, STAY):
            return state, ActionOutcome(agent, NOOP, False)
        macro, role = self.parse_action(action)
        if role != agent:
            raise UnknownNameError(f'action {action} is not an action of the {agent}')
        index = AGENT_OF_ROLE[role]
        text = self.action_text(macro, index)
        if role == HUMAN and not capabilities[self.gate[macro]]:
            return state, ActionOutcome(agent, text, False,
                                        f'the partner lacks {self.catalog.names[self.gate[macro]]}')
        after = self.act(state, index, macro)[0]
        if after == state:
            return state, ActionOutcome(agent, text, False, f'{macro} can do nothing here')
        return after, ActionOutcome(agent, text, True)

    # ---------------------------------------------------------------- actions
    def action_text(self, macro: str, agent: int) -> str:
        return f'({macro} {ROLES[agent]})'

    def parse_action(self, action: str) -> tuple[str, str]:
        """(macro, role) of an action text such as ``(chop partner)``."""
        match = _ACTION.match(str(action).strip())
        if not match or match.group(1) not in MACROS or match.group(2) not in ROLES:
            raise UnknownNameError(
                f'unknown action {action!r}: write (MACRO AGENT), MACRO one of '
                f'{", ".join(MACROS)} and AGENT robot or partner')
        return match.group(1), ROLE_OF_AGENT[ROLES.index(match.group(2))]

    def action_agent(self, action: str) -> str:
        return self.parse_action(action)[1]

    def canonical_action(self, action: str) -> str:
        macro, role = self.parse_action(action)
        return self.action_text(macro, AGENT_OF_ROLE[role])

    def partner_capable(self, action: str, capabilities: np.ndarray) -> bool:
        macro, role = self.parse_action(action)
        return role == ROBOT or bool(capabilities[self.gate[macro]])

    def applicable_actions(self, state: tuple, agent: str) -> list[str]:
        index = AGENT_OF_ROLE[agent]
        return [self.action_text(m, index) for m in MACROS
                if self.act(state, index, m)[0] != state]

    # ----------------------------------------------------------- trajectories
    def features(self, state: tuple) -> tuple[float, ...]:
        """The paper's vector state: per vegetable x, y and chops/3; plates, knives,
        delivery and both agents x, y (cells over the grid size); the recipe one-hot."""
        known = self._features.get(state)
        if known is not None:
            return known
        kitchen = self.kitchens[state[K]]
        size = float(max(kitchen.width, kitchen.height))

        def xy(cell: int) -> tuple[float, float]:
            row, column = kitchen.row_column(cell)
            return column / size, row / size

        def place(where: int) -> tuple[float, float]:
            if where == ABSENT:
                return (0.0, 0.0)
            if where == SERVED:
                return xy(kitchen.objects['delivery'])
            if where >= ON_PLATE:
                return place(state[PLOC + where - ON_PLATE])
            if where >= HELD:
                return xy(state[POS + where - HELD])
            return xy(where)

        values: list[float] = []
        for i in range(3):
            values.extend(place(state[VLOC + i]))
            values.append(state[CHOP + i] / CHOPS)
        for k in range(2):
            values.extend(place(state[PLOC + k]))
        for knife in KNIVES:
            values.extend(xy(kitchen.objects[knife]))
        values.extend(xy(kitchen.objects['delivery']))
        for agent in range(2):
            values.extend(xy(state[POS + agent]))
        values.extend(1.0 if name == state[RECIPE] else 0.0 for name in self.recipe_names)
        known = tuple(values)
        if len(self._features) > MEMO_LIMIT:
            self._features.clear()
        self._features[state] = known
        return known

    def feature_names(self) -> list[str]:
        names = []
        for vegetable in VEGETABLES:
            names += [f'{vegetable}_x', f'{vegetable}_y', f'{vegetable}_chopped']
        for thing in PLATES + KNIVES + ('delivery', 'robot', 'partner'):
            names += [f'{thing}_x', f'{thing}_y']
        return names + [f'recipe_{name}' for name in self.recipe_names]

    def distance(self, first: Sequence[tuple], second: Sequence[tuple]) -> float:
        """1 - cosine similarity of the flattened feature trajectories; the shorter one
        is padded with its last state (the paper leaves the rule open)."""
        length = max(len(first), len(second))
        if not length:
            return 0.0
        a = np.array([self.features(first[min(t, len(first) - 1)]) for t in range(length)])
        b = np.array([self.features(second[min(t, len(second) - 1)]) for t in range(length)])
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        if norm == 0.0:
            return 0.0 if not a.any() and not b.any() else 1.0
        return float(min(1.0, max(0.0, 1.0 - float(np.sum(a * b)) / norm)))

    # ------------------------------------------------------------------ states
    def check_state(self, state: tuple) -> None:
        if not isinstance(state, tuple) or len(state) != DONE + 1 \
                or state[K] not in self.kitchens or state[RECIPE] not in self.recipes \
                or not all(isinstance(v, int) for v in state[POS:]):
            raise ConfigError(f'not an Overcooked state: {state!r}')
        cells = self.kitchens[state[K]].width * self.kitchens[state[K]].height
        places = state[VLOC:VLOC + 3] + state[PLOC:PLOC + 2]
        valid = set(range(cells)) | {HELD, HELD + 1, ON_PLATE, ON_PLATE + 1, SERVED, ABSENT}
        if not (all(p in valid for p in places) and all(0 <= c <= CHOPS for c in
                                                         state[CHOP:CHOP + 3])
                and all(0 <= p < cells for p in state[POS:POS + 2])
                and state[DONE] in (0, 1)):
            raise ConfigError(f'not an Overcooked state: {state!r}')
        if self._state_from_facts(self.state_facts(state), 'state') != state:
            raise ConfigError(f'not a consistent Overcooked state: {state!r}')

    def state_facts(self, state: tuple) -> list[str]:
        kitchen = self.kitchens[state[K]]

        def at(cell: int) -> str:
            row, column = kitchen.row_column(cell)
            return f'{row} {column}'

        facts = [f'(kitchen {state[K]})', f'(recipe {state[RECIPE]})',
                 f'(at robot {at(state[POS])})', f'(at partner {at(state[POS + 1])})']
        for name, where in [(v, state[VLOC + i]) for i, v in enumerate(VEGETABLES)] + \
                [(p, state[PLOC + k]) for k, p in enumerate(PLATES)]:
            if where == ABSENT:
                continue
            if where == SERVED:
                facts.append(f'(served_with {name})')
            elif where >= ON_PLATE:
                facts.append(f'(on {name} {PLATES[where - ON_PLATE]})')
            elif where >= HELD:
                facts.append(f'(holds {ROLES[where - HELD]} {name})')
            else:
                facts.append(f'(at {name} {at(where)})')
        for i, vegetable in enumerate(VEGETABLES):
            if state[CHOP + i]:
                facts.append(f'(chopped {vegetable} {state[CHOP + i]})')
        if state[DONE]:
            facts.append(f'(served {state[RECIPE]})')
        return sorted(facts)

    def _state_from_facts(self, facts, where: str) -> tuple:
        kitchen_name = recipe = None
        places: dict[str, int] = {}
        chops = [0, 0, 0]
        served = False
        parsed = []
        for fact in facts:
            match = _FACT.match(str(fact).strip())
            if not match:
                raise ConfigError(f'{where}: malformed fact {fact!r}')
            parsed.append((match.group(1), match.group(2).split()))
        for name, args in parsed:
            if name in ('kitchen', 'recipe') and len(args) == 1:
                if (kitchen_name if name == 'kitchen' else recipe) is not None:
                    raise ConfigError(f'{where}: more than one {name} fact')
                if name == 'kitchen':
                    kitchen_name = args[0]
                else:
                    recipe = args[0]
        if kitchen_name not in self.kitchens:
            raise ConfigError(f'{where}: unknown or missing kitchen {kitchen_name!r}; '
                              f'kitchens: {", ".join(self.kitchens)}')
        if recipe not in self.recipes:
            raise ConfigError(f'{where}: unknown or missing recipe {recipe!r}; recipes: '
                              f'{", ".join(self.recipes)}')
        kitchen = self.kitchens[kitchen_name]
        things = VEGETABLES + PLATES

        def cell(args: list[str], fact: str) -> int:
            try:
                row, column = int(args[0]), int(args[1])
            except (ValueError, IndexError):
                raise ConfigError(f'{where}: malformed position in {fact}') from None
            if not (0 <= row < kitchen.height and 0 <= column < kitchen.width):
                raise ConfigError(f'{where}: {fact} lies outside kitchen {kitchen.name}')
            return kitchen.cell(row, column)

        special = {c for n, c in kitchen.objects.items() if n.startswith('knife')}
        delivery = kitchen.objects['delivery']
        chopped_named: set[str] = set()

        def place(thing: str, where_code: int, fact: str) -> None:
            if thing in places:
                raise ConfigError(f'{where}: {fact}: {thing} is placed twice')
            if where_code == delivery or (where_code in special and thing in PLATES):
                raise ConfigError(f'{where}: {fact}: only a vegetable lies on a board, '
                                  'nothing on the delivery counter')
            places[thing] = where_code

        for name, args in parsed:
            fact = f'({name} {" ".join(args)})'
            if name in ('kitchen', 'recipe'):
                continue
            if name == 'at' and len(args) == 3:
                if args[0] in ROLES:
                    position = cell(args[1:], fact)
                    if position not in kitchen.floor:
                        raise ConfigError(f'{where}: {fact}: agents stand on the floor')
                    if args[0] in places:
                        raise ConfigError(f'{where}: {fact}: the {args[0]} is placed twice')
                    places[args[0]] = position
                elif args[0] in things:
                    position = cell(args[1:], fact)
                    if position in kitchen.floor:
                        raise ConfigError(f'{where}: {fact}: objects lie on counters')
                    place(args[0], position, fact)
                else:
                    raise ConfigError(f'{where}: unknown object in {fact}')
            elif name == 'holds' and len(args) == 2 and args[0] in ROLES and args[1] in things:
                place(args[1], HELD + ROLES.index(args[0]), fact)
            elif name == 'on' and len(args) == 2 and args[0] in VEGETABLES \
                    and args[1] in PLATES:
                place(args[0], ON_PLATE + PLATES.index(args[1]), fact)
            elif name == 'served_with' and len(args) == 1 and args[0] in things:
                places.setdefault(args[0], SERVED)
                if places[args[0]] != SERVED:
                    raise ConfigError(f'{where}: {fact}: {args[0]} is placed twice')
            elif name == 'chopped' and len(args) == 2 and args[0] in VEGETABLES \
                    and args[1] in ('0', '1', '2', '3'):
                if args[0] in chopped_named:
                    raise ConfigError(f'{where}: {fact}: {args[0]} has two chop counts')
                chopped_named.add(args[0])
                chops[VEGETABLES.index(args[0])] = int(args[1])
            elif name == 'served' and len(args) == 1:
                if args[0] != recipe:
                    raise ConfigError(f'{where}: {fact}, but the recipe is {recipe}')
                served = True
            else:
                raise ConfigError(f'{where}: unknown fact {fact}')
        for role in ROLES:
            if role not in places:
                raise ConfigError(f'{where}: where is the {role}? (at {role} ROW COLUMN)')
        if places['robot'] == places['partner']:
            raise ConfigError(f'{where}: both agents stand on one cell')
        for plate in PLATES:
            if plate not in places:
                raise ConfigError(f'{where}: where is {plate}?')
        for vegetable in VEGETABLES:
            if vegetable not in places and vegetable in kitchen.objects:
                raise ConfigError(f'{where}: where is the {vegetable}?')
        for role_index in range(2):
            hands = [t for t in things if places.get(t) == HELD + role_index]
            if len(hands) > 1:
                raise ConfigError(f'{where}: the {ROLES[role_index]} holds {hands}; one at '
                                  'a time')
        counters = [places[t] for t in things if t in places and 0 <= places[t] < HELD]
        if len(counters) != len(set(counters)):
            raise ConfigError(f'{where}: two objects lie on one counter')
        state = (kitchen_name, recipe, places['robot'], places['partner'],
                 *(places.get(v, ABSENT) for v in VEGETABLES), *chops,
                 *(places[p] for p in PLATES), int(served))
        return state

    def state_to_text(self, state: tuple) -> str:
        return ' '.join(str(v) for v in state)

    def state_from_text(self, text: str) -> tuple:
        parts = str(text).split()
        if len(parts) != DONE + 1:
            raise ConfigError(f'not an Overcooked state text: {text!r}')
        try:
            numbers = [int(v) for v in parts[2:]]
        except ValueError:
            raise ConfigError(f'not an Overcooked state text: {text!r}') from None
        state = (parts[0], parts[1], *numbers)
        self.check_state(state)
        return state

    def state_features(self, state: tuple) -> list[float]:
        return list(self.features(state))

    def misperceived(self, state: tuple, rng: np.random.Generator, missed: float,
                     spurious: float) -> tuple:
        """A kitchen's glitch: a person or an object on a cell seen on a neighbouring
        cell where it could be (a state is positions, not a set of facts to drop): each
        with probability ``missed``, and one more of them with probability
        ``spurious``."""
        kitchen = self.kitchens[state[K]]
        cells = kitchen.width * kitchen.height
        slots = [POS, POS + 1] + [VLOC + i for i in range(len(VEGETABLES))] + \
            [PLOC + k for k in range(len(PLATES))]
        slots = [slot for slot in slots if 0 <= state[slot] < cells]
        draws = rng.random(len(slots))
        moved = [slot for slot, draw in zip(slots, draws) if draw < missed]
        if slots and rng.random() < spurious:
            moved.append(slots[int(rng.integers(len(slots)))])
        seen = list(state)
        for slot in moved:
            options = [cell for cell in kitchen.neighbours(seen[slot])
                       if self._could_be(tuple(seen[:slot] + [cell] + seen[slot + 1:]))]
            if options:
                seen[slot] = options[int(rng.integers(len(options)))]
        return tuple(seen)

    def _could_be(self, state: tuple) -> bool:
        try:
            self.check_state(state)
        except ConfigError:
            return False
        return True

    def state_from_wire(self, facts: Sequence[str], features: Sequence[float]) -> tuple:
        return self._state_from_facts(facts, 'team state')

    # ---------------------------------------------------------------- planning
    def describe(self) -> str:
        return (f'overcooked ({len(self.kitchens)} kitchens: {", ".join(self.kitchens)}; '
                f'{len(self.recipes)} recipes)')


def make_overcooked(file: str | Path | None = None) -> OvercookedDomain:
    """Overcooked with an optional domain file (kitchens, recipes, capabilities)."""
    return OvercookedDomain(file)


class TaskShuffle:
    """The kitchens x recipes in a seeded order, shuffled again after each pass: the
    first ``n`` of a run are its learning tasks, the next ones what it has not seen."""

    def __init__(self, tasks: Sequence[Task], seed: int):
        self._tasks = list(tasks)
        self._rng = np.random.default_rng([seed, 31])
        self._queue: list[Task] = []

    def next_task(self) -> Task:
        if not self._queue:
            self._queue = [self._tasks[i] for i in self._rng.permutation(len(self._tasks))]
        return self._queue.pop(0)

    def tasks(self, count: int) -> list[Task]:
        return [self.next_task() for _ in range(count)]

