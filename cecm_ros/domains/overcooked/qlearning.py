"""The optimistic baseline's planner: a tabular Q-learning joint policy trained with a
fully capable partner (the paper's appendix B.3), rolled out as a softmax policy.

* The table holds Q(state, joint action) over the joint actions MCTS considers
  (:meth:`JointSearch.options` with every capability), with the rewards of
  :meth:`JointSearch.step`. Episodes start from the 9 tasks' initial states, a seeded
  shuffle of them per pass, and end when the salad is served or after the domain's
  ``max_steps`` joint steps (a time limit, so the last step still bootstraps).
* Exploration: softmax(Q / ``softmax_temperature``) with probability
  ``explore_softmax``, else a uniform joint action.
* Replay: every transition is also kept in a buffer of the last ``replay_size``; every
  ``replay_every`` environment steps the whole buffer is replayed once, in a seeded
  random order, with the same Q-learning update. That is our reading of the paper's
  "replay buffer update frequency 100k": with both at 100k each transition is learnt
  from twice, once online and once in the next sweep, with values that have meanwhile
  moved on downstream.
* The paper trains for 70M steps; the default budget here is 1M (60-90 s on one
  core), and it is not converged (the tau policy serves 2 of the 9 tasks; 3 after 3.5M
  steps): the visited states grow by some 0.3 per step, and the explorer stays near
  uniform, since Q differences are a fraction of the temperature 1.0, so the states
  past a few steps from the start keep untried actions, which the initial Q makes look
  best. :func:`report` prints the learning curve.
* A state the table never visited, or whose actions all still hold the initial Q, has
  the same Q for every action, so the policy there is uniform over the joint actions
  (``fallback='uniform'``, the plain Q-policy). ``fallback='heuristic'`` samples the
  MCTS heuristic prior there instead, which borrows MCTS's knowledge.

The trained table is kept under ``cache_directory()/overcooked`` as a NumPy ``.npz``
(no pickle), keyed by a hash of the domain files and the settings.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
import warnings
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core.domain import JointPlan, Planner, PlannerGuarantees, Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.plan_store import cache_directory, files_digest

from .mcts import RULES_VERSION, JointSearch, MctsSettings, joint_plan
from .model import DONE, MACROS, STAY, OvercookedDomain

# Part of the cache key: raise it whenever training or the file layout changes.
QLEARNING_VERSION = 1
FORMAT = 'cecm_ros/overcooked_qtable/1'
CAPABLE = (True,) * len(MACROS)
AGENT_MACROS = MACROS + (STAY,)
STATE_WIDTH = DONE + 1
# Bounds the memo tables of the model: training visits millions of states.
MEMO_LIMIT = 500_000
FALLBACKS = ('uniform', 'heuristic')


@dataclass(frozen=True)
class QLearningSettings:
    """The paper's table B.3 but for the budget (``steps``, 70M there); ``replay_every``
    is how many environment steps pass between two sweeps over the replay buffer;
    ``curve_points`` how many evaluations the learning curve has."""

    steps: int = 1_000_000
    alpha: float = 0.1
    gamma: float = 0.99
    initial_q: float = 0.01
    explore_softmax: float = 0.8
    softmax_temperature: float = 1.0
    replay_size: int = 100_000
    replay_every: int = 100_000
    inference_temperature: float = 0.1
    curve_points: int = 20
    fallback: str = 'uniform'
    seed: int = 0

    def __post_init__(self):
        for name in ('steps', 'replay_every', 'curve_points'):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f'qlearning {name} must be an integer of at least 1, '
                                  f'got {getattr(self, name)!r}')
        if not isinstance(self.replay_size, int) or self.replay_size < 0:
            raise ConfigError(f'qlearning replay_size must be an integer of at least 0 '
                              f'(0: no replay), got {self.replay_size!r}')
        if not isinstance(self.seed, int):
            raise ConfigError(f'qlearning seed must be an integer, got {self.seed!r}')
        for name, low in (('alpha', 0.0), ('gamma', 0.0), ('explore_softmax', None)):
            value = getattr(self, name)
            inside = isinstance(value, int | float) and (
                0.0 <= value <= 1.0 if low is None else low < value <= 1.0)
            if not inside:
                bounds = '[0, 1]' if low is None else '(0, 1]'
                raise ConfigError(f'qlearning {name} must lie in {bounds}, got {value!r}')
        for name in ('softmax_temperature', 'inference_temperature'):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0 or math.isinf(value):
                raise ConfigError(f'qlearning {name} must be above 0, got {value!r}')
        if self.fallback not in FALLBACKS:
            raise ConfigError(f'qlearning fallback must be one of {", ".join(FALLBACKS)}, '
                              f'got {self.fallback!r}')
        if not isinstance(self.initial_q, int | float) or not math.isfinite(self.initial_q):
            raise ConfigError(f'qlearning initial_q must be a finite number, got '
                              f'{self.initial_q!r}')


@dataclass(frozen=True)
class CurvePoint:
    """The tau policy on all tasks after ``steps`` training steps."""

    steps: int
    mean_return: float
    served: float          # share of the tasks served
    mean_length: float     # joint steps per rollout
    states: int            # states in the table
    explored_served: float = 0.0   # share of the training episodes since the last point
                                   # that served (with the exploring policy)


@dataclass
class QTable:
    """Per visited state, its joint actions and their Q-values (same order)."""

    rows: dict[tuple, tuple[tuple, list[float]]]
    curve: list[CurvePoint] = field(default_factory=list)
    train_seconds: float = 0.0
    loaded_from: Path | None = None


class _Model(JointSearch):
    """The joint actions, steps and prior of MCTS with a fully capable partner, with
    memo tables that forget when large (training would otherwise keep every state
    twice)."""

    def __init__(self, domain: OvercookedDomain, prior: str = 'uniform'):
        super().__init__(domain, CAPABLE, MctsSettings(prior=prior), random.Random(0))

    def options(self, state: tuple) -> tuple[list, list, list]:
        if len(self._options) > MEMO_LIMIT:
            self._options.clear()
        return super().options(state)

    def step(self, state: tuple, action: tuple[str, str]) -> tuple[tuple, float]:
        if len(self._step) > MEMO_LIMIT:
            self._step.clear()
        return super().step(state, action)


def _softmax_pick(values: list[float], temperature: float, draw: float) -> int:
    top = max(values)
    weights = [math.exp((v - top) / temperature) for v in values]
    threshold = draw * sum(weights)
    running = 0.0
    for index, weight in enumerate(weights):
        running += weight
        if running > threshold:
            return index
    return len(weights) - 1


def rollout(model: JointSearch, table: QTable, state: tuple, settings: QLearningSettings,
            rng: random.Random, limit: int) -> tuple[list[tuple], list[tuple], list[float]]:
    """(joint actions, trajectory, rewards) of the softmax(Q / inference_temperature)
    policy from ``state``, until served, no joint action, or ``limit`` joint steps.
    ``model`` gives the heuristic prior when ``settings.fallback`` asks for it."""
    actions: list[tuple] = []
    trajectory = [state]
    rewards: list[float] = []
    temperature, initial = settings.inference_temperature, float(settings.initial_q)
    while not state[DONE] and len(actions) < limit:
        row = table.rows.get(state)
        if row is None or all(v == initial for v in row[1]):
            # One Q for all: drawn as the softmax would, whether the row is stored or not.
            options, _, sums = model.options(state)
            if not options:
                break
            if settings.fallback == 'heuristic':
                index = min(bisect_right(sums, rng.random() * sums[-1]), len(options) - 1)
            else:
                index = _softmax_pick([0.0] * len(options), temperature, rng.random())
            action = options[index]
        else:
            action = row[0][_softmax_pick(row[1], temperature, rng.random())]
        state, reward = model.step(state, action)
        actions.append(action)
        trajectory.append(state)
        rewards.append(reward)
    return actions, trajectory, rewards


def task_seed(seed: int, task: Task) -> int:
    """The rollout's random seed from the settings' seed and the task (stable across
    processes, unlike hash())."""
    text = repr(('qpolicy', seed, task.key)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), 'big')


def evaluate(domain: OvercookedDomain, model: JointSearch, table: QTable,
             settings: QLearningSettings, steps: int) -> CurvePoint:
    returns, served, lengths = [], 0, []
    for task in domain.tasks:
        rng = random.Random(task_seed(settings.seed, task))
        actions, trajectory, rewards = rollout(model, table, domain.initial_state(task),
                                               settings, rng, domain.max_steps)
        returns.append(math.fsum(rewards))
        served += trajectory[-1][DONE]
        lengths.append(len(actions))
    count = len(domain.tasks)
    return CurvePoint(steps, round(math.fsum(returns) / count, 4), round(served / count, 4),
                      round(sum(lengths) / count, 3), len(table.rows))


def _train(domain: OvercookedDomain, settings: QLearningSettings,
           progress: Callable[[CurvePoint], None] | None) -> QTable:
    started = time.perf_counter()
    rng = random.Random(settings.seed)
    model = _Model(domain)
    judge = model if settings.fallback == 'uniform' else _Model(domain, settings.fallback)
    table = QTable({})
    rows = table.rows
    shared: dict[tuple, tuple] = {}   # one tuple per distinct set of joint actions
    initial = float(settings.initial_q)
    alpha, gamma = settings.alpha, settings.gamma
    explore, temperature = settings.explore_softmax, settings.softmax_temperature
    replay: deque = deque(maxlen=settings.replay_size)
    keep = settings.replay_size > 0
    every = max(1, settings.steps // settings.curve_points)
    starts = [domain.initial_state(t) for t in domain.tasks]
    order: list[tuple] = []

    def row(state: tuple) -> tuple[tuple, list[float]]:
        known = rows.get(state)
        if known is None:
            options = tuple(model.options(state)[0])
            options = shared.setdefault(options, options)
            known = (options, [initial] * len(options))
            rows[state] = known
        return known

    def learn(q: list[float], index: int, reward: float, after: tuple) -> None:
        target = reward
        if not after[DONE]:
            following = rows[after][1]
            if following:
                target += gamma * max(following)
        q[index] += alpha * (target - q[index])

    step = episodes = served = 0
    while step < settings.steps:
        if not order:
            order = list(starts)
            rng.shuffle(order)
        state = order.pop()
        episodes += 1
        for _ in range(domain.max_steps):
            options, q = row(state)
            if not options:
                break
            if rng.random() < explore:
                index = _softmax_pick(q, temperature, rng.random())
            else:
                index = rng.randrange(len(options))
            after, reward = model.step(state, options[index])
            if not after[DONE]:
                row(after)
            learn(q, index, reward, after)
            if keep:
                replay.append((q, index, reward, after))
            step += 1
            if keep and step % settings.replay_every == 0:
                for entry in rng.sample(list(replay), len(replay)):
                    learn(*entry)
            served += after[DONE]
            if step % every == 0 or step == settings.steps:
                point = replace(evaluate(domain, judge, table, settings, step),
                                explored_served=round(served / episodes, 4))
                episodes = served = 0
                table.curve.append(point)
                if progress is not None:
                    progress(point)
            state = after
            if after[DONE] or step >= settings.steps:
                break
    # A row still at the initial Q says what no row says; dropping it keeps the table
    # in memory equal to the one stored.
    for state in [s for s, r in rows.items() if all(v == initial for v in r[1])]:
        del rows[state]
    table.train_seconds = time.perf_counter() - started
    return table


# ------------------------------------------------------------------ the cache
def table_digest(domain: OvercookedDomain, settings: QLearningSettings) -> str:
    return files_digest(domain.fingerprint_files(),
                        ('qlearning', QLEARNING_VERSION, RULES_VERSION, asdict(settings)))


def table_path(domain: OvercookedDomain, settings: QLearningSettings) -> Path:
    return cache_directory() / 'overcooked' / f'qtable-{table_digest(domain, settings)}.npz'


def _encode_action(action: tuple[str, str]) -> int:
    return AGENT_MACROS.index(action[0]) * len(AGENT_MACROS) + AGENT_MACROS.index(action[1])


def save_table(domain: OvercookedDomain, settings: QLearningSettings, table: QTable,
               path: Path) -> None:
    """Write the table atomically, so that concurrent runs never read half a file."""
    kitchens, recipes = list(domain.kitchens), list(domain.recipe_names)
    kept = list(table.rows.items())
    states = np.array([(kitchens.index(s[0]), recipes.index(s[1]), *s[2:])
                       for s, _ in kept], dtype=np.int16).reshape(len(kept), STATE_WIDTH)
    lengths = np.array([len(r[0]) for _, r in kept], dtype=np.int64)
    actions = np.array([_encode_action(a) for _, r in kept for a in r[0]], dtype=np.int16)
    values = np.array([v for _, r in kept for v in r[1]], dtype=np.float64)
    curve = np.array([[p.steps, p.mean_return, p.served, p.mean_length, p.states,
                       p.explored_served] for p in table.curve],
                     dtype=np.float64).reshape(len(table.curve), 6)
    meta = json.dumps({'format': FORMAT, 'digest': table_digest(domain, settings),
                       'kitchens': kitchens, 'recipes': recipes,
                       'settings': asdict(settings), 'train_seconds': table.train_seconds,
                       'visited_states': len(table.rows)})
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f'{path.name}.{os.getpid()}.{threading.get_ident()}.tmp')
    with open(partial, 'wb') as handle:
        np.savez_compressed(handle, meta=np.array(meta), states=states, lengths=lengths,
                            actions=actions, values=values, curve=curve)
    os.replace(partial, path)


def load_table(domain: OvercookedDomain, settings: QLearningSettings, path: Path) -> QTable:
    """The table stored at ``path``; raises ValueError when it is not one of ours for
    this domain and these settings."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data['meta']))
        states, lengths = data['states'], data['lengths']
        actions, values, curve = data['actions'], data['values'], data['curve']
    if meta.get('format') != FORMAT or meta.get('digest') != table_digest(domain, settings):
        raise ValueError('written for another domain, version or settings')
    kitchens, recipes = meta['kitchens'], meta['recipes']
    if states.ndim != 2 or states.shape[1] != STATE_WIDTH or lengths.shape != (len(states),) \
            or int(lengths.sum()) != len(actions) or actions.shape != values.shape \
            or curve.ndim != 2 or curve.shape[1] != 6:
        raise ValueError('arrays of inconsistent shapes')
    if not np.isfinite(values).all() or (lengths < 0).any() or (actions < 0).any() \
            or (actions >= len(AGENT_MACROS) ** 2).any():
        raise ValueError('values out of range')
    pairs = [(AGENT_MACROS[c // len(AGENT_MACROS)], AGENT_MACROS[c % len(AGENT_MACROS)])
             for c in range(len(AGENT_MACROS) ** 2)]
    shared: dict[tuple, tuple] = {}
    rows: dict[tuple, tuple[tuple, list[float]]] = {}
    ends = np.cumsum(lengths)
    codes, numbers = actions.tolist(), values.tolist()
    for entry, end, count in zip(states.tolist(), ends.tolist(), lengths.tolist()):
        state = (kitchens[entry[0]], recipes[entry[1]], *entry[2:])
        options = tuple(pairs[c] for c in codes[end - count:end])
        options = shared.setdefault(options, options)
        rows[state] = (options, numbers[end - count:end])
    points = [CurvePoint(int(p[0]), p[1], p[2], p[3], int(p[4]), p[5]) for p in curve.tolist()]
    return QTable(rows, points, float(meta.get('train_seconds', 0.0)), path)


def train_q_table(domain: OvercookedDomain, settings: QLearningSettings | None = None,
                  progress: Callable[[CurvePoint], None] | None = None,
                  cache: bool = True) -> QTable:
    """The Q-table for ``settings``: loaded from the cache when there, else trained
    (deterministic for a seed) and stored. A cached file that cannot be read is
    ignored with a warning and the table trained again."""
    settings = settings or QLearningSettings()
    path = table_path(domain, settings)
    if cache and path.exists():
        try:
            return load_table(domain, settings, path)
        except Exception as error:   # a cache is never trusted, never a crash
            warnings.warn(f'Q-table cache {path} is not usable ({error}); training again',
                          RuntimeWarning, stacklevel=2)
    table = _train(domain, settings, progress)
    if cache:
        try:
            save_table(domain, settings, table, path)
        except OSError as error:
            warnings.warn(f'cannot store the Q-table in {path}: {error}', RuntimeWarning,
                          stacklevel=2)
    return table


def learning_curve(domain: OvercookedDomain, settings: QLearningSettings | None = None
                   ) -> list[CurvePoint]:
    return train_q_table(domain, settings).curve


def report(domain: OvercookedDomain, settings: QLearningSettings | None = None) -> str:
    """The learning curve as a text table (for docs)."""
    settings = settings or QLearningSettings()
    table = train_q_table(domain, settings)
    lines = [f'Q-learning baseline: {settings.steps:,} steps, seed {settings.seed}, '
             f'trained in {table.train_seconds:.0f} s; policy softmax tau '
             f'{settings.inference_temperature:g} on the {len(domain.tasks)} tasks',
             f'{"steps":>11}  {"mean return":>11}  {"served":>6}  {"joint steps":>11}  '
             f'{"states":>9}  {"explorer served":>15}']
    for point in table.curve:
        lines.append(f'{point.steps:>11,}  {point.mean_return:>11.3f}  {point.served:>6.0%}  '
                     f'{point.mean_length:>11.2f}  {point.states:>9,}  '
                     f'{point.explored_served:>15.0%}')
    return '\n'.join(lines)


# ---------------------------------------------------------------- the planner
class QPolicyPlanner(Planner):
    """The optimistic baseline: whatever the vector, the plan is a rollout of the
    softmax(Q / tau) policy trained with a fully capable partner, seeded by the task."""

    def __init__(self, domain: OvercookedDomain, settings: QLearningSettings | None = None,
                 **options: Any):
        self.domain: OvercookedDomain = domain
        self.guarantees = PlannerGuarantees(cost_optimal=False, deterministic=True)
        if settings is not None and options:
            raise ConfigError('qlearning planner: give settings or options, not both')
        if settings is None:
            known = {f.name for f in fields(QLearningSettings)}
            unknown = sorted(set(options) - known)
            if unknown:
                raise ConfigError(f'qlearning planner: unknown options {unknown}; known: '
                                  f'{", ".join(sorted(known))}')
            settings = QLearningSettings(**options)
        self.settings = settings
        self.calls = 0
        self.cache_hits = 0
        self._table: QTable | None = None
        self._plans: dict[tuple, JointPlan] = {}
        self._model = _Model(domain, settings.fallback)
        self._lock = threading.Lock()

    @property
    def table(self) -> QTable:
        """Trained (or loaded) on first use, so a planner that never plans costs
        nothing."""
        with self._lock:
            return self._loaded()

    def _loaded(self) -> QTable:
        if self._table is None:
            self._table = train_q_table(self.domain, self.settings)
        return self._table

    def plan_many(self, task: Task, vectors: Iterable[np.ndarray]) -> list[JointPlan]:
        checked = [self.domain.catalog.check_vector(v) for v in vectors]
        if not checked:
            return []
        with self._lock:
            plan = self._plans.get(task.key)
            if plan is None:
                plan = self._rollout_plan(task)
                self._plans[task.key] = plan
                self.calls += 1
                self.cache_hits += len(checked) - 1
            else:
                self.cache_hits += len(checked)
        return [plan] * len(checked)

    def _rollout_plan(self, task: Task) -> JointPlan:
        started = time.perf_counter()
        domain = self.domain
        table = self._loaded()
        state = domain.initial_state(task)
        rng = random.Random(task_seed(self.settings.seed, task))
        actions, trajectory, _ = rollout(self._model, table, state, self.settings, rng,
                                         domain.max_steps)
        return joint_plan(domain, task, actions, trajectory, started)

    def known_plan_count(self, task: Task) -> int:
        return int(task.key in self._plans)
