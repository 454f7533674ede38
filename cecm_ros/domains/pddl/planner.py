"""Capability-conditioned joint planning through unified-planning and Fast Downward.

The planner solves the induced problem sequentially (cost-optimal by default) and then
lifts the sequential plan into joint steps: every action moves to the earliest step
after the actions it depends on or interferes with, so independent actions of the
robot and the human share a step. Same inputs give the same plan.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter, OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import numpy as np
from unified_planning.model import Problem

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, JointPlan, JointStep, Task
from cecm_ros.core.errors import (
    ConfigError,
    PlannerTimeoutError,
    PlanningError,
    UnknownNameError,
    UnsolvableTaskError,
)
from cecm_ros.core.planning import CachingPlanner
from cecm_ros.domains.pddl.model import GroundAction, PddlModel

from .fast_downward import (
    OPTIMAL_SEARCH,
    FastDownwardSearch,
    TranslatedTask,
    fast_downward_root,
)
from .planning_worker import receive, send

DEFAULT_ENGINE = 'fast-downward-opt'
# A satisficing partner's search (FastDownwardPlanner.satisficing), a seed filled in.
SATISFICING_SEARCH = ('lazy_greedy([ff()], preferred=[ff()], randomize_successors=true, '
                      'random_seed={seed}, verbosity=silent)')
# Part of every stored plan's key: raise it when a change here (the search, the lifting
# into joint steps, the canonical order) can change the plan of a (task, vector).
PLANNER_VERSION = 2
# unified-planning's engines (its OneshotPlanner, the result statuses) are imported
# where a backend plans, in its worker process: a node that only hands searches to
# workers never pays for them (up_environment.py).


def canonical_order(actions: list[GroundAction], start: int, goal: int,
                    schema_rank: dict[str, int] | None = None) -> list[GroundAction]:
    """The first valid ordering of a plan's actions, trying them in one fixed order.

    The planner's tie-breaking costs (``domain.planner_cost``) are additive, so they
    pin down which actions an optimal plan uses but not their order: a robot that
    fetches the bowl and then the blanket uses the same actions as one that fetches
    them the other way round. Re-ordering every plan by one rule makes the result
    independent of how the planner found it. Depth-first with memoised dead ends; the
    given order is valid, so some ordering is always found. ``schema_rank`` is the
    domain's preferred order of action schemas (unranked ones last, then by name).
    """
    rank = schema_rank or {}
    ranked = sorted({a.name: a for a in actions}.values(),
                    key=lambda a: (rank.get(a.schema, len(rank)), a.name))
    counts = Counter(a.name for a in actions)
    remaining = [counts[a.name] for a in ranked]
    ordered: list[GroundAction] = []
    dead_ends: set[tuple[int, tuple[int, ...]]] = set()

    def extend(state: int) -> bool:
        if len(ordered) == len(actions):
            return state & goal == goal
        key = (state, tuple(remaining))
        if key in dead_ends:
            return False
        for index, action in enumerate(ranked):
            if remaining[index] and action.applicable(state):
                remaining[index] -= 1
                ordered.append(action)
                if extend(action.apply(state)):
                    return True
                ordered.pop()
                remaining[index] += 1
        dead_ends.add(key)
        return False

    return ordered if extend(start) else list(actions)


def lift_to_joint_steps(actions: Iterable[GroundAction]) -> list[list[GroundAction | None]]:
    """Schedule a valid sequential plan into joint steps, each action as early as possible.

    Two actions conflict when one deletes what the other needs or adds, or one adds
    what the other needs; conflicting actions keep their sequential order in distinct
    steps, so every linearisation of the steps is equivalent to the sequential plan.
    """
    steps: list[list[GroundAction | None]] = []  # [robot, human]
    placed: list[tuple[GroundAction, int]] = []
    last_step = {ROBOT: -1, HUMAN: -1}
    for action in actions:
        earliest = last_step[action.agent] + 1
        for other, index in placed:
            if index >= earliest and _conflict(other, action):
                earliest = index + 1
        slot = 0 if action.agent == ROBOT else 1
        while earliest < len(steps) and steps[earliest][slot] is not None:
            earliest += 1
        if earliest == len(steps):
            steps.append([None, None])
        steps[earliest][slot] = action
        placed.append((action, earliest))
        last_step[action.agent] = earliest
    return steps


def _conflict(first: GroundAction, second: GroundAction) -> bool:
    return bool(first.add & second.pre or first.delete & (second.pre | second.add)
                or second.delete & (first.pre | first.add))


class PlanningBackend:
    """Solves induced problems with unified-planning; lives in a planning worker process.

    Fast Downward's driver writes its intermediate ``output.sas`` into the current
    directory, so two planner runs that share a working directory corrupt each other.
    Every backend therefore runs in its own process with a private working directory.
    """

    def __init__(self, model: PddlModel, engine: str, timeout_s: float):
        self.model = model
        self.engine = engine
        self.timeout_s = timeout_s
        self._base_problems: OrderedDict[tuple, Problem] = OrderedDict()

    def _base_problem(self, task: Task) -> Problem:
        base = self._base_problems.get(task.key)
        if base is None:
            base = self.model.base_problem(task)
            self._base_problems[task.key] = base
            if len(self._base_problems) > 64:
                self._base_problems.popitem(last=False)
        else:
            self._base_problems.move_to_end(task.key)
        return base

    def solve(self, task: Task, capabilities: np.ndarray) -> JointPlan:
        from unified_planning.engines import PlanGenerationResultStatus as Status

        unsolvable = {Status.UNSOLVABLE_PROVEN, Status.UNSOLVABLE_INCOMPLETELY}
        model = self.model
        start = model.state_from_atoms(task.initial)
        goal = model.state_from_atoms(task.goal)
        started = time.perf_counter()
        if start & goal == goal:
            actions: list[GroundAction] = []
        else:
            problem = model.conditioned_problem(self._base_problem(task), capabilities)
            result = self._run_engine(problem)
            if result.status in unsolvable:
                # Seen once under heavy load: a spurious "unsolvable" for a task the robot
                # alone can do. Only an answer that a second, identical run repeats counts.
                first = result
                result = self._run_engine(problem)
                if result.status not in unsolvable:
                    log = ' '.join(m.message for m in first.log_messages or [])[-800:]
                    print(f'cecm planner: {self.engine} said {first.status.name} for task '
                          f'{task.task_id}, then solved it on a second run; log tail: {log}',
                          file=sys.stderr, flush=True)
            if result.status == Status.TIMEOUT:
                raise PlannerTimeoutError(
                    f'task {task.task_id}: {self.engine} found no plan within '
                    f'{self.timeout_s:g} s')
            if result.status in unsolvable:
                lacking = model.catalog.format_vector(capabilities)
                who = ('even with a fully capable human' if lacking == 'all'
                       else f'when the human lacks {lacking}')
                atoms = model.unreachable_atoms(task) if lacking == 'all' else []
                why = f': no team makes {" ".join(atoms)} true from its start' if atoms else ''
                raise UnsolvableTaskError(
                    f'task {task.task_id}: the goal cannot be reached {who}{why}')
            if result.plan is None:
                raise PlanningError(f'task {task.task_id}: {self.engine} ended with '
                                    f'{result.status.name} and no plan')
            actions = [model.action(_instance_text(a)) for a in result.plan.actions]
        elapsed = time.perf_counter() - started
        return build_joint_plan(model, task, actions, capabilities, elapsed)


    def _run_engine(self, problem: Problem):
        import unified_planning.shortcuts as up

        with warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)  # "cannot establish..." noise
            with up.OneshotPlanner(name=self.engine) as engine:
                return engine.solve(problem, timeout=self.timeout_s)


def build_joint_plan(model: PddlModel, task: Task, actions: list[GroundAction],
                     capabilities: np.ndarray, elapsed: float = 0.0) -> JointPlan:
    """Validate a sequential plan against the model and lift it into joint steps."""
    start = model.state_from_atoms(task.initial)
    goal = model.state_from_atoms(task.goal)
    state = start
    for action in actions:
        if not (action.applicable(state) and model.human_capable(action, capabilities)):
            raise PlanningError(f'task {task.task_id}: planner returned an inapplicable '
                                f'action {action.name}')
        state = action.apply(state)
    if state & goal != goal:
        raise PlanningError(f'task {task.task_id}: the plan does not reach the goal')
    actions = canonical_order(actions, start, goal, model.schema_rank)
    steps, trajectory, state = [], [start], start
    for robot, human in lift_to_joint_steps(actions):
        for done in (human, robot):
            if done is not None:
                state = done.apply(state)
        trajectory.append(state)
        steps.append(JointStep(robot.name if robot else NOOP, human.name if human else NOOP))
    human_cost = sum(a.cost for a in actions if a.agent == HUMAN)
    robot_cost = sum(a.cost for a in actions if a.agent == ROBOT)
    used = frozenset(a.gate for a in actions if a.agent == HUMAN and a.gate is not None)
    return JointPlan(task.task_id, tuple(steps), robot_cost + human_cost, robot_cost,
                     human_cost, tuple(trajectory), used, elapsed,
                     tuple(a.name for a in actions), sum(a.planner_cost for a in actions))


class WorkerLostError(PlanningError):
    """A planning worker process died while it worked."""


class _WorkerProcess:
    """One planning worker process and its pipe; used by one thread at a time."""

    def __init__(self, settings: tuple):
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'cecm_ros.domains.pddl.planning_worker'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_worker_environment())
        self.lock = threading.Lock()
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: BinaryIO = self.process.stdin  # type: ignore[assignment]
        self.stdout: BinaryIO = self.process.stdout  # type: ignore[assignment]
        send(self.stdin, settings)

    def solve(self, task: Task, vector: np.ndarray) -> JointPlan:
        with self.lock:
            try:
                send(self.stdin, (task, vector))
                status, value = receive(self.stdout)
            except (EOFError, BrokenPipeError, OSError) as error:
                raise WorkerLostError(
                    f'task {task.task_id}: the planning worker (pid {self.process.pid}) '
                    f'stopped: {error}') from error
        if status == 'error':
            raise value
        return value

    def close(self) -> None:
        try:
            self.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()


def _worker_environment() -> dict[str, str]:
    """The parent's environment with this package importable from the child."""
    environment = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    paths = environment.get('PYTHONPATH', '')
    if package_root not in paths.split(os.pathsep):
        environment['PYTHONPATH'] = os.pathsep.join(p for p in (package_root, paths) if p)
    return environment


class FastDownwardPlanner(CachingPlanner):
    """Plans a task under a capability vector of the human with Fast Downward.

    Plans are cached per (task, vector) in this process (:class:`CachingPlanner`). With
    ``reuse_translation`` (the default, for the default optimal engine) each task is
    translated by Fast Downward once and every vector only runs the search, in up to
    ``workers`` threads (see :mod:`.fast_downward`). Otherwise each vector is one
    unified-planning call in one of up to ``workers`` planning processes (started on
    first use, see ``planning_worker``); that path also confirms every "unsolvable".
    :meth:`plan_many` uses several cores either way. Thread-safe. Call :meth:`close`
    (or use ``with``) to stop the workers. With ``plan_cache`` (a path, or True for the
    user's cache directory) plans are kept on disk for later processes
    (:mod:`cecm_ros.core.plan_store`).
    """

    def __init__(self, model: PddlModel, engine: str = DEFAULT_ENGINE,
                 timeout_s: float = 60.0, workers: int = 1, cache_size: int = 100_000,
                 reuse_translation: bool = True, plan_cache: bool | str = False,
                 search: str | None = None, search_seed: int | None = None):
        if workers < 1:
            raise ValueError(f'workers must be at least 1, got {workers}')
        # ``search``: another Fast Downward search than the optimal one (satisficing).
        optimal = engine == DEFAULT_ENGINE and search is None
        super().__init__(model, model.guarantees if optimal else
                         replace(model.guarantees, cost_optimal=False), cache_size)
        self.search_seed = search_seed
        self._own_search = search
        self.model = model
        self.engine = engine
        self.timeout_s = timeout_s
        self.workers = workers
        self._workers: list[_WorkerProcess] = []
        root = fast_downward_root() if reuse_translation and engine == DEFAULT_ENGINE \
            else None
        if search is not None and root is None:
            raise ConfigError('a Fast Downward search of its own needs the up-fast-downward '
                              'package and the default engine')
        self._search = FastDownwardSearch(root, timeout_s,
                                          search or model.optimal_search or OPTIMAL_SEARCH) \
            if root else None
        self._translations: OrderedDict[tuple, tuple[TranslatedTask, np.ndarray]] = \
            OrderedDict()
        # Translator runs, and re-plans served by an earlier translation (benchmarks).
        self.fresh_translations = 0
        self.rebased_translations = 0
        self._search_threads: ThreadPoolExecutor | None = None
        # A plan is the same whether or not the translation is reused; the timeout only
        # decides whether there is one (a timeout is raised, never stored).
        self.open_store(plan_cache, self._scope())

    def _scope(self) -> str:
        scope: tuple = ('fast-downward', PLANNER_VERSION, self.engine, self.model.plan_scope())
        if self._own_search is not None:
            scope += (self._own_search,)
        return repr(scope)

    def satisficing(self, seed: int) -> FastDownwardPlanner | None:
        """The first plan of a lazy greedy best-first search with the FF heuristic and its
        preferred operators, successors in an order drawn from ``seed`` (LAMA's first
        iteration, without landmarks): often longer than the optimal plan and shaped
        otherwise. Shares this planner's plan store (its own keys); one worker."""
        if self._search is None:
            return None
        twin = FastDownwardPlanner(self.model, timeout_s=self.timeout_s,
                                   search=SATISFICING_SEARCH.format(seed=int(seed)),
                                   search_seed=int(seed))
        if self.store is not None:
            twin.use_store(self.store, twin._scope())
        return twin

    def close(self) -> None:
        """Stop the planning workers; the next planning call starts new ones."""
        with self._lock:
            workers, self._workers = self._workers, []
            threads, self._search_threads = self._search_threads, None
        for worker in workers:
            worker.close()
        if threads is not None:
            # Searches not begun are dropped (a planning call still waiting for them
            # fails): closing waits for at most the searches under way.
            threads.shutdown(wait=True, cancel_futures=True)
        super().close()

    def plan_sets(self, task: Task, vectors, size: int, diversity: float = 0.35
                  ) -> list[list[JointPlan]] | None:
        """CE-CM-Div's sets from K*'s top-k plans (:mod:`.plan_sets`) when the optional
        ``kstar-planner`` is installed and this planner reuses translations; else None
        (the declined-capability sets; a missing package is said once)."""
        from .plan_sets import kstar_binary, kstar_plan_sets, warn_missing
        binary = kstar_binary()
        if binary is None:
            warn_missing()
            return None
        if self._search is None:
            return None
        return kstar_plan_sets(self, binary, task, list(vectors), size, diversity)

    # ---------------------------------------------------------------- internals
    def _started_workers(self, wanted: int) -> list[_WorkerProcess]:
        with self._lock:
            model = self.model
            settings = (type(model), model.rebuild_arguments(), self.engine, self.timeout_s)
            while len(self._workers) < min(wanted, self.workers):
                self._workers.append(_WorkerProcess(settings))
            return list(self._workers[:max(1, min(wanted, self.workers))])

    def solve_all(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        if self._search is None:
            return self._solve_in_workers(task, vectors)
        model = self.model
        goal = model.state_from_atoms(task.goal)
        if model.state_from_atoms(task.initial) & goal == goal:
            return [build_joint_plan(model, task, [], vector) for vector in vectors]
        translated, gates = self._translation(task)
        if translated.unsolvable:
            return self._solve_in_workers(task, vectors)

        engine = self._search
        assert engine is not None

        def search(vector: np.ndarray) -> JointPlan | None:
            started = time.perf_counter()
            keep = (gates < 0) | vector[np.maximum(gates, 0)]
            names = engine.search(translated.restricted(keep), f'task {task.task_id}')
            if names is None:
                return None
            actions = [model.action(f'({name})') for name in names]
            return build_joint_plan(model, task, actions, vector, time.perf_counter() - started)

        with self._lock:
            if self._search_threads is None:
                self._search_threads = ThreadPoolExecutor(
                    self.workers, thread_name_prefix='cecm-search')
            threads = self._search_threads
        # Fewer capabilities mean longer searches: start those first so that the last
        # searches of a batch are short ones (less idle time on the other cores).
        order = sorted(range(len(vectors)), key=lambda i: int(np.count_nonzero(vectors[i])))
        plans: list[JointPlan | None] = [None] * len(vectors)
        for index, plan in zip(order, threads.map(search, [vectors[i] for i in order])):
            plans[index] = plan
        unsolved = [i for i, plan in enumerate(plans) if plan is None]
        if unsolved:
            # The unified-planning path words the error (and would catch a wrong verdict).
            confirmed = self._solve_in_workers(task, [vectors[i] for i in unsolved])
            for index, plan in zip(unsolved, confirmed):
                plans[index] = plan
        return plans  # type: ignore[return-value]

    def _translation(self, task: Task) -> tuple[TranslatedTask, np.ndarray]:
        """The task translated with a fully capable human, and each operator's gate."""
        with self._lock:
            known = self._translations.get(task.key)
            if known is not None:
                self._translations.move_to_end(task.key)
                return known
        self.model.validate_task(task)
        assert self._search is not None
        entry = self._rebased_translation(task)
        if entry is None:
            entry = self._fresh_translation(task)
        with self._lock:
            self._translations[task.key] = entry
            if len(self._translations) > 256:
                self._translations.popitem(last=False)
        return entry

    def _rebased_translation(self, task: Task) -> tuple[TranslatedTask, np.ndarray] | None:
        """A state on the way to the same goal (a re-plan): its origin's translation with
        the start replaced, where that is sound (TranslatedTask.rebased), instead of a
        translator run per state; None otherwise."""
        origin = task.origin
        if origin is None or not origin.initial or origin.goal != task.goal \
                or origin.key == task.key:
            return None
        if self.model.problem_objects(task) != self.model.problem_objects(origin):
            return None     # the origin's problem holds other objects: translate afresh
        try:
            root, gates = self._translation(replace(origin, origin=None))
        except (ConfigError, PlanningError):
            return None     # an origin this planner cannot translate: no help
        rebased = root.rebased(task.initial, origin.initial)
        if rebased is None:
            return None
        with self._lock:
            self.rebased_translations += 1
        return rebased, gates

    def _fresh_translation(self, task: Task) -> tuple[TranslatedTask, np.ndarray]:
        assert self._search is not None
        # The model's own PDDL text: parsing it into unified-planning and writing it back
        # costs more than the translation, and with the planner's tie-breaking the
        # encoding does not decide which optimal plan is found.
        translated = self._search.translate(self.model.domain_text,
                                            self.model.problem_text(task),
                                            f'task {task.task_id}')
        with self._lock:
            self.fresh_translations += 1
        gates = np.full(len(translated.operator_names), -1, dtype=np.int64)
        for index, name in enumerate(translated.operator_names):
            try:
                action = self.model.action(f'({name})')
            except UnknownNameError as error:
                raise PlanningError(f'task {task.task_id}: the translator produced an '
                                    f'operator this model does not know: {name}') from error
            if action.agent == HUMAN and action.gate is not None:
                gates[index] = action.gate
        return translated, gates

    def _solve_in_workers(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        """Solve in the worker processes; once more with new workers if one died."""
        try:
            return self._solve_in_workers_once(task, vectors)
        except WorkerLostError as error:
            print(f'cecm planner: {error}; starting new planning workers and trying again',
                  file=sys.stderr, flush=True)
            return self._solve_in_workers_once(task, vectors)

    def _solve_in_workers_once(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        workers = self._started_workers(len(vectors))
        if len(workers) == 1:
            try:
                return [workers[0].solve(task, v) for v in vectors]
            except PlanningError as error:
                if not isinstance(error, (UnsolvableTaskError, PlannerTimeoutError)):
                    self.close()
                raise
        jobs: queue.SimpleQueue[tuple[int, np.ndarray]] = queue.SimpleQueue()
        for index, vector in enumerate(vectors):
            jobs.put((index, vector))
        results: list[JointPlan | None] = [None] * len(vectors)
        errors: list[BaseException] = []

        def drain(worker: _WorkerProcess) -> None:
            while not errors:
                try:
                    index, vector = jobs.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = worker.solve(task, vector)
                except BaseException as error:  # noqa: BLE001 - re-raised below
                    errors.append(error)

        threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            if not isinstance(errors[0], (UnsolvableTaskError, PlannerTimeoutError)):
                self.close()
            raise errors[0]
        return results  # type: ignore[return-value]


def _instance_text(instance) -> str:
    args = ' '.join(str(p) for p in instance.actual_parameters)
    return f'({instance.action.name} {args})'


def reference_planner(domain: PddlModel, **options) -> FastDownwardPlanner:
    """The straightforward planner benchmarks compare with: one full planning call per
    vector, on one core, nothing remembered."""
    return FastDownwardPlanner(domain, **{'workers': 1, 'cache_size': 0,
                                          'reuse_translation': False, **options})
