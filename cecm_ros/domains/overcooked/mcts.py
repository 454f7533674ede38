"""PUCT Monte Carlo tree search over joint macro actions (the paper's appendix B.2).

At every joint step the search runs from the current state until the root has been
visited ``simulations`` times (the subtree of the step taken is kept for the next
one), picks the most visited joint action, and goes on until the salad is served, no
joint action is left, or the domain's step limit. A new leaf is valued by ``rollouts``
rollouts of at most ``depth`` joint steps that sample the prior policy.

* Joint actions are all pairs of the two agents' macro actions except (stay, stay).
  An agent's action is considered only when it does something in the state
  (:meth:`OvercookedDomain.useful`); a partner's only when its capability vector has
  the action's capability (the paper's pruning function f).
* The prior: a hand-made heuristic that scores each agent's action by the progress it
  makes towards the recipe (softmax, per agent; the joint prior is their product), or
  ``uniform``. The paper's is a pre-trained joint policy; docs/experiments.md measures
  this choice.
* Deterministic: the random numbers come from a generator seeded with the settings'
  seed, the task and the vector's relevant bits, and every choice breaks ties by a
  fixed order, so a task, a vector and a seed give the same plan in any process.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
from bisect import bisect_right
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import accumulate
from multiprocessing import get_context
from typing import Any

import numpy as np

from cecm_ros.core.domain import NOOP, JointPlan, JointStep, PlannerGuarantees, Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.plan_store import files_digest, plan_key
from cecm_ros.core.planning import CachingPlanner

from .kitchen import VEGETABLES
from .model import (
    CHOP,
    CHOPS,
    DONE,
    HELD,
    MACROS,
    ON_PLATE,
    PLOC,
    RECIPE,
    SERVED,
    STAY,
    VLOC,
    OvercookedDomain,
)

PRIORS = ('heuristic', 'uniform')
# Part of every stored plan's key: raise it whenever the rules or the search change what
# a plan is, so that plans kept on disk by an older version are never reused.
RULES_VERSION = 2
CHOP_INDEX = MACROS.index('chop')


@dataclass(frozen=True)
class MctsSettings:
    simulations: int = 200
    rollouts: int = 12
    depth: int = 20
    gamma: float = 0.99
    c_p: float = 1.0
    prior: str = 'heuristic'
    temperature: float = 0.25   # of the heuristic prior's softmax
    seed: int = 0

    def __post_init__(self):
        for name in ('simulations', 'rollouts', 'depth'):
            if getattr(self, name) < 1:
                raise ConfigError(f'mcts {name} must be at least 1, got {getattr(self, name)}')
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f'mcts gamma must lie in (0, 1], got {self.gamma}')
        if self.c_p < 0:
            raise ConfigError(f'mcts c_p must be at least 0, got {self.c_p}')
        if self.prior not in PRIORS:
            raise ConfigError(f'mcts prior must be one of {", ".join(PRIORS)}, got '
                              f'{self.prior!r}')
        if self.temperature <= 0:
            raise ConfigError(f'mcts temperature must be above 0, got {self.temperature}')


def progress(domain: OvercookedDomain, state: tuple, partner_chops: bool = True) -> float:
    """How far a state is along the recipe (the heuristic prior's potential)."""
    if state[DONE]:
        return 20.0
    value = 0.0
    recipe = domain.recipes[state[RECIPE]]
    kitchen = domain.kitchens[state[0]]
    boards = (kitchen.objects['knife_1'], kitchen.objects['knife_2'])
    middle = kitchen.middle

    def plate_ready(k: int) -> bool:   # held, or passed over the middle counter
        return HELD <= state[PLOC + k] < ON_PLATE or state[PLOC + k] in middle

    chopped_any = False
    for i, vegetable in enumerate(VEGETABLES):
        if vegetable not in recipe:
            continue
        where, chops = state[VLOC + i], state[CHOP + i]
        chopped_any = chopped_any or chops == CHOPS
        if where == SERVED:
            value += 6.0
        elif where >= ON_PLATE:
            value += 4.5 if plate_ready(where - ON_PLATE) else 4.0
        elif where >= HELD:
            value += 1.0 if chops == 0 else 3.5
        elif where in boards:
            value += 2.0 + chops / CHOPS
            if chops < CHOPS:
                for agent in (0, 1) if partner_chops else (0,):
                    if where in kitchen.neighbours(state[2 + agent]):
                        value += 0.4
                        break
        elif where in middle:
            value += 1.5 if chops == 0 else 3.5
        elif chops == CHOPS:
            value += 3.2
        else:
            value += 0.5 if where != kitchen.objects.get(vegetable) else 0.0
    if chopped_any and any(plate_ready(k) for k in range(2)):
        value += 0.3
    return value


class _Node:
    __slots__ = ('state', 'actions', 'priors', 'visits', 'total', 'children', 'rewards',
                 'n', 'value_sum')

    def __init__(self, state: tuple, actions: list, priors: list):
        self.state = state
        self.actions = actions
        self.priors = priors
        self.visits = [0] * len(actions)
        self.total = [0.0] * len(actions)
        self.children: list[_Node | None] = [None] * len(actions)
        self.rewards: list[float | None] = [None] * len(actions)
        self.n = 0
        self.value_sum = 0.0


class JointSearch:
    """MCTS for one (task, vector): the partner may use the macro actions in
    ``allowed``."""

    def __init__(self, domain: OvercookedDomain, allowed: tuple[bool, ...],
                 settings: MctsSettings, rng: random.Random):
        self.domain = domain
        self.allowed = allowed
        self.settings = settings
        self.rng = rng
        self._options: dict[tuple, tuple[list, list, list]] = {}
        self._step: dict[tuple, tuple[tuple, float]] = {}
        self.step_cost = domain.rewards.step

    # ------------------------------------------------------------- the model
    def options(self, state: tuple) -> tuple[list, list, list]:
        """(joint actions, prior probabilities, their running sums) in ``state``."""
        known = self._options.get(state)
        if known is not None:
            return known
        domain = self.domain
        per_agent = []
        for agent in (0, 1):
            can_chop = agent == 0 or self.allowed[CHOP_INDEX]
            macros = [m for m in MACROS if (agent == 0 or self.allowed[MACROS.index(m)])
                      and domain.useful(state, agent, m, can_chop)]
            per_agent.append(macros + [STAY])
        actions = [(r, h) for r in per_agent[0] for h in per_agent[1]
                   if not (r == STAY and h == STAY)]
        if not actions:
            known = ([], [], [])
        else:
            if self.settings.prior == 'uniform':
                weights = [1.0] * len(actions)
            else:
                scores = [self._scores(state, agent, per_agent[agent]) for agent in (0, 1)]
                weights = [scores[0][r] * scores[1][h] for r, h in actions]
            total = sum(weights)
            priors = [w / total for w in weights]
            known = (actions, priors, list(accumulate(priors)))
        self._options[state] = known
        return known

    def _scores(self, state: tuple, agent: int, macros: list[str]) -> dict[str, float]:
        chops = self.allowed[CHOP_INDEX]
        base = progress(self.domain, state, chops)
        raw = {}
        for macro in macros:
            if macro == STAY:
                raw[macro] = 0.0
                continue
            after, ticks, _ = self.domain.act(state, agent, macro)
            raw[macro] = progress(self.domain, after, chops) - base - 0.02 * ticks
        top = max(raw.values())
        return {m: math.exp((v - top) / self.settings.temperature) for m, v in raw.items()}

    def step(self, state: tuple, action: tuple[str, str]) -> tuple[tuple, float]:
        """The joint step: the partner's macro action, then the robot's."""
        key = (state, action)
        known = self._step.get(key)
        if known is not None:
            return known
        robot, partner = action
        ticks_partner = ticks_robot = 0
        reward = 0.0
        if partner != STAY:
            state, ticks_partner, bonus = self.domain.act(state, 1, partner)
            reward += bonus
        if robot != STAY:
            state, ticks_robot, bonus = self.domain.act(state, 0, robot)
            reward += bonus
        reward += self.step_cost * max(1, ticks_partner, ticks_robot)
        known = (state, reward)
        self._step[key] = known
        return known

    # ------------------------------------------------------------- the search
    def node(self, state: tuple) -> _Node:
        actions, priors, _ = self.options(state)
        return _Node(state, actions, priors)

    def rollout_value(self, state: tuple) -> float:
        settings = self.settings
        rng = self.rng.random
        total = 0.0
        for _ in range(settings.rollouts):
            current, discount, value = state, 1.0, 0.0
            for _ in range(settings.depth):
                if current[DONE]:
                    break
                actions, _, sums = self.options(current)
                if not actions:
                    break
                pick = bisect_right(sums, rng() * sums[-1])
                current, reward = self.step(current, actions[min(pick, len(actions) - 1)])
                value += discount * reward
                discount *= settings.gamma
            total += value
        return total / settings.rollouts

    def simulate(self, root: _Node) -> None:
        settings = self.settings
        path: list[tuple[_Node, int]] = []
        node = root
        while True:
            if node.state[DONE] or not node.actions:
                value = 0.0
                break
            index = self.select(node)
            path.append((node, index))
            child = node.children[index]
            if child is None:
                state, reward = self.step(node.state, node.actions[index])
                child = self.node(state)
                node.children[index] = child
                node.rewards[index] = reward
                value = 0.0 if state[DONE] or not child.actions else self.rollout_value(state)
                child.n += 1
                child.value_sum += value
                break
            node = child
        for parent, index in reversed(path):
            edge = parent.rewards[index]
            assert edge is not None
            value = edge + settings.gamma * value
            parent.visits[index] += 1
            parent.total[index] += value
            parent.n += 1
            parent.value_sum += value

    def select(self, node: _Node) -> int:
        c_p = self.settings.c_p
        root_n = math.sqrt(node.n) if node.n else 1.0
        unvisited = node.value_sum / node.n if node.n else 0.0
        best, best_score = 0, -math.inf
        for index, prior in enumerate(node.priors):
            visits = node.visits[index]
            q = node.total[index] / visits if visits else unvisited
            score = q + c_p * prior * root_n / (1 + visits)
            if score > best_score:
                best, best_score = index, score
        return best

    def decide(self, root: _Node) -> int:
        while root.n < self.settings.simulations:
            self.simulate(root)
        return max(range(len(root.actions)),
                   key=lambda i: (root.visits[i],
                                  root.total[i] / root.visits[i] if root.visits[i] else -1e9,
                                  -i))


def search_seed(seed: int, task: Task, allowed: tuple[bool, ...]) -> int:
    """The search's random seed: from the settings' seed, the task and the vector's
    relevant bits only (stable across processes, unlike hash())."""
    text = repr((seed, task.key, allowed)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), 'big')


def allowed_macros(domain: OvercookedDomain, task: Task, vector: np.ndarray
                   ) -> tuple[bool, ...]:
    """The partner's usable macro actions: its capabilities, less those the task can
    never use (so vectors equal on what the task can use search alike)."""
    relevant = domain.relevant_mask(task)
    return tuple(bool(vector[domain.gate[m]] and relevant[domain.gate[m]]) for m in MACROS)


def search_plan(domain: OvercookedDomain, task: Task, vector: np.ndarray,
                settings: MctsSettings, tree: list | None = None) -> JointPlan:
    """The joint plan MCTS makes for ``task`` when the partner has ``vector``; ``tree``,
    when given, receives the search, its first root and the joint actions chosen
    (DiverseMCTS reads the tree)."""
    started = time.perf_counter()
    allowed = allowed_macros(domain, task, vector)
    search = JointSearch(domain, allowed, settings, random.Random(search_seed(
        settings.seed, task, allowed)))
    state = domain.initial_state(task)
    root = search.node(state)
    chosen: list[tuple[str, str]] = []
    if tree is not None:
        tree.extend((search, root, chosen))
    trajectory = [state]
    while not state[DONE] and root.actions and len(chosen) < domain.max_steps:
        index = search.decide(root)
        chosen.append(root.actions[index])
        state = search.step(state, root.actions[index])[0]
        trajectory.append(state)
        child = root.children[index]
        root = child if child is not None else search.node(state)
    return joint_plan(domain, task, chosen, trajectory, started)


def joint_plan(domain: OvercookedDomain, task: Task, chosen: list[tuple[str, str]],
               trajectory: list[tuple], started: float) -> JointPlan:
    """The JointPlan of joint actions (robot macro, partner macro) taken along
    ``trajectory``: its ticks per agent and the partner capabilities that changed
    something."""
    steps: list[JointStep] = []
    robot_ticks = partner_ticks = ticks = 0
    used: set[int] = set()
    for before, (robot, partner) in zip(trajectory, chosen):
        middle, spent_partner = before, 0
        if partner != STAY:
            middle, spent_partner, _ = domain.act(before, 1, partner)
            if middle != before:
                used.add(domain.gate[partner])
        spent_robot = domain.act(middle, 0, robot)[1] if robot != STAY else 0
        partner_ticks += spent_partner
        robot_ticks += spent_robot
        ticks += max(1, spent_partner, spent_robot)
        steps.append(JointStep(robot=NOOP if robot == STAY else domain.action_text(robot, 0),
                               human=NOOP if partner == STAY else domain.action_text(partner, 1)))
    return JointPlan(task_id=task.task_id, steps=tuple(steps), cost=float(ticks),
                     robot_cost=float(robot_ticks), human_cost=float(partner_ticks),
                     trajectory=tuple(trajectory), human_capabilities_used=frozenset(used),
                     planning_time_s=time.perf_counter() - started)


# ---------------------------------------------------------------- processes
_WORKER: dict[str, Any] = {}


def _worker_start(path: str, settings: dict, parent: int) -> None:
    _WORKER['domain'] = OvercookedDomain(path)
    _WORKER['settings'] = MctsSettings(**settings)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True,
                     name='parent_watch').start()


def _exit_with_parent(parent: int) -> None:
    """A search process outlives no parent: one killed (SIGKILL, say) cannot shut its
    pool down, and its searches would run on for nobody."""
    while os.getppid() == parent:
        time.sleep(2.0)
    os._exit(0)


def _worker_settings(wanted: dict) -> MctsSettings:
    # The settings travel with each search: twins of other seeds and depths share a pool.
    settings = _WORKER['settings']
    return settings if asdict(settings) == wanted else MctsSettings(**wanted)


def _worker_plan(task: Task, vector: bytes, wanted: dict) -> JointPlan:
    settings = _worker_settings(wanted)
    return search_plan(_WORKER['domain'], task, np.frombuffer(vector, dtype=bool).copy(),
                       settings)


def _worker_plan_set(task: Task, vector: bytes, wanted: dict, rules: tuple) -> list:
    from .diverse import SetRules, plan_set_actions
    settings = _worker_settings(wanted)
    return plan_set_actions(_WORKER['domain'], task, np.frombuffer(vector, dtype=bool).copy(),
                            settings, SetRules(*rules))


class MctsPlanner(CachingPlanner):
    """Plans by :func:`search_plan`, remembered per (task, relevant vector); with
    ``workers`` > 1 the vectors of one request are searched in that many processes."""

    def __init__(self, domain: OvercookedDomain, workers: int = 1,
                 plan_cache: bool | str = True, timeout_s: float | None = None,
                 **options: Any):
        # timeout_s, which the nodes and `cecm plan` give every planner, is accepted and
        # not used: a search is bounded by its simulations, and a clock would make a
        # plan depend on the machine's load (and the plan cache wrong).
        super().__init__(domain, PlannerGuarantees(cost_optimal=False, deterministic=True))
        self.domain: OvercookedDomain = domain
        try:
            self.settings = MctsSettings(**options)
        except TypeError as error:
            raise ConfigError(f'overcooked planner: {error}') from None
        self.workers = max(1, int(workers))
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # A planner of another seed (with_seed) searches in its owner's processes.
        self._owner: MctsPlanner | None = None
        # DiverseMCTS sets made or loaded here: (task, vector, rules) -> joint actions.
        self._sets: dict[tuple, list] = {}
        self.open_store(plan_cache, files_digest(
            domain.fingerprint_files(), ('mcts', RULES_VERSION, asdict(self.settings))))

    @property
    def search_seed(self) -> int:   # type: ignore[override]
        return self.settings.seed

    def with_seed(self, seed: int) -> MctsPlanner:
        return self._twin(seed=seed)

    def satisficing(self, seed: int) -> MctsPlanner:
        """A shallow search: an eighth of the simulations and a third of the rollouts
        (at least one each), on ``seed``: plans that are often longer than this
        planner's, for a satisficing partner."""
        return self._twin(seed=seed, simulations=max(1, self.settings.simulations // 8),
                          rollouts=max(1, self.settings.rollouts // 3))

    def _twin(self, **changes: Any) -> MctsPlanner:
        twin = MctsPlanner(self.domain, workers=1, plan_cache=False,
                           **{**asdict(self.settings), **changes})
        twin._owner = self._owner or self
        if self.store is not None:
            twin.use_store(self.store, files_digest(self.domain.fingerprint_files(), (
                'mcts', RULES_VERSION, asdict(twin.settings))))
        if self.offload is not None and set(changes) == {'seed'}:
            # (A cluster's workers make seed twins only: other twins search here.)
            twin.offload_searches(self.offload.with_seed(twin.settings.seed))
        return twin

    def action_values(self, task: Task, state: Any, vector: np.ndarray,
                      actions) -> dict[str, float]:   # (state: a kitchen state tuple)
        """The search's own estimates, not a plan per action (far too slow): one search
        decision from ``state``, seeded as a plan from there would be, and each partner
        macro's root value (discounted reward) averaged over the robot's macros, weighted
        by their visits. Macros the search never tried are left out."""
        here = self.domain.task_from_state(task, state)
        vector = self.domain.catalog.check_vector(vector) | ~self.domain.relevant_mask(here)
        allowed = allowed_macros(self.domain, here, vector)
        search = JointSearch(self.domain, allowed, self.settings, random.Random(
            search_seed(self.settings.seed, here, allowed)))
        root = search.node(state)
        if not root.actions:
            return {}
        search.decide(root)
        sums: dict[str, tuple[float, int]] = {}
        for (_, partner), visits, total in zip(root.actions, root.visits, root.total):
            if visits:
                text = NOOP if partner == STAY else self.domain.action_text(partner, 1)
                known = sums.get(text, (0.0, 0))
                sums[text] = (known[0] + total, known[1] + visits)
        return {a: sums[a][0] / sums[a][1] for a in actions if a in sums}

    def plan_many(self, task: Task, vectors) -> list[JointPlan]:
        # Vectors equal on what the task can use share one plan (and one cache entry).
        irrelevant = ~self.domain.relevant_mask(task)
        return super().plan_many(task, [self.domain.catalog.check_vector(v) | irrelevant
                                        for v in vectors])

    def solve_all(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        # Even a single search goes to a worker process: threads that each ask for one
        # plan (the runs of an experiment) then search side by side, not under one GIL.
        pool = self._shared_pool()
        if pool is None:
            return [search_plan(self.domain, task, v, self.settings) for v in vectors]
        workers = (self._owner or self).workers
        return list(pool.map(_worker_plan, [task] * len(vectors),
                             [v.tobytes() for v in vectors], [asdict(self.settings)] * len(vectors),
                             chunksize=max(1, len(vectors) // (4 * workers))))

    def _shared_pool(self) -> ProcessPoolExecutor | None:
        """The search processes of this planner's owner (started on first use; runs in
        several threads and planners of other seeds share them), or None for one worker."""
        owner = self._owner or self
        if owner.workers == 1:
            return None
        with owner._pool_lock:
            if owner._pool is None:
                owner._pool = ProcessPoolExecutor(
                    owner.workers, mp_context=get_context('spawn'), initializer=_worker_start,
                    initargs=(str(owner.domain.path), asdict(owner.settings), os.getpid()))
            return owner._pool

    # DiverseMCTS's L_min (docs/overcooked.md): an attribute, not a search setting, so
    # that plans kept on disk do not depend on it.
    set_min_length: int = 3

    def plan_sets(self, task: Task, vectors, size: int, diversity: float = 0.35
                  ) -> list[list[JointPlan]]:
        """DiverseMCTS (:mod:`.diverse`): per vector, its own plan and paths of the search
        tree that made it, completed and thinned; remembered here and kept in the plan
        store under a key of their own (a set costs a search and more)."""
        from .diverse import SetRules, replay
        rules = SetRules(size=size, diversity=diversity, min_length=self.set_min_length)
        irrelevant = ~self.domain.relevant_mask(task)
        effective = [self.domain.catalog.check_vector(v) | irrelevant | self.domain.inert_mask
                     for v in vectors]
        wanted = {v.tobytes(): v for v in effective}
        known: dict[bytes, list] = {}
        with self._lock:
            sets = self._sets
            for key in wanted:
                found = sets.get((task.key, key, rules))
                if found is not None:
                    known[key] = found
        keys = {}
        if self.store is not None:
            scope = files_digest(self.domain.fingerprint_files(), (
                'mcts-sets', RULES_VERSION, asdict(self.settings), rules.key()))
            keys = {k: plan_key(scope, task.key, ''.join('1' if b else '0' for b in v))
                    for k, v in wanted.items() if k not in known}
            by_store_key = {stored: k for k, stored in keys.items()}
            for key, text in self.store.get_many(list(keys.values())).items():
                vector_key = by_store_key[key]
                try:
                    known[vector_key] = [[tuple(a) for a in plan] for plan in json.loads(text)]
                except (ValueError, TypeError):
                    continue   # not a set after all: search it again
        todo = [k for k in wanted if k not in known]
        if todo:
            made = self._search_sets(task, [wanted[k] for k in todo], rules)
            known.update(zip(todo, made))
            if self.store is not None:
                self.store.put_many({keys[k]: json.dumps(a, separators=(',', ':'))
                                     for k, a in zip(todo, made)})
        search = JointSearch(self.domain, (True,) * len(MACROS), self.settings,
                             random.Random(0))
        replayed = {k: [replay(self.domain, task, search, actions) for actions in known[k]]
                    for k in wanted}
        with self._lock:
            for key in wanted:
                sets[(task.key, key, rules)] = known[key]
            while len(sets) > 4096:
                sets.pop(next(iter(sets)))
        return [replayed[v.tobytes()] for v in effective]

    def _search_sets(self, task: Task, vectors: list[np.ndarray], rules) -> list[list]:
        from .diverse import plan_set_actions
        pool = self._shared_pool()
        if pool is None:
            return [plan_set_actions(self.domain, task, v, self.settings, rules)
                    for v in vectors]
        return list(pool.map(_worker_plan_set, [task] * len(vectors),
                             [v.tobytes() for v in vectors], [asdict(self.settings)] * len(vectors),
                             [tuple(asdict(rules).values())] * len(vectors)))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self.store is not None and self._owner is None:   # a twin's is its owner's
            self.store.close()
        super().close()
