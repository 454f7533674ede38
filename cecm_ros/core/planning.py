"""Plans kept per (task, vector): the memory every planner of a domain shares.

CE-CM asks for the plans of many capability vectors on the same few tasks; vectors that
differ only in inert capabilities induce the same plan. :class:`CachingPlanner` answers
repeated questions from memory and leaves the domain to plan the vectors it has not seen
(:meth:`CachingPlanner.solve_all`), so the hypothesis evaluators can also ask which plans
are already known for a task. Those searches may run elsewhere (:class:`SearchOffload`, a
Ray cluster: :mod:`cecm_ros.cluster`); the memory, the plan store and the sharing of
searches under way stay here.
"""

from __future__ import annotations

import threading
import warnings
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from .domain import Domain, JointPlan, Planner, PlannerGuarantees, Task
from .errors import CecmError, PlanningError
from .plan_store import (
    PlanStore,
    PlanStoreUnavailableError,
    plan_from_text,
    plan_key,
    plan_to_text,
)

# What a planner's ``plan_cache`` option takes: True (the store in the user's cache
# directory), False (none) or the path of a store file.
PlanCacheOption = bool | str


class SearchOffload(Protocol):
    """Where a :class:`CachingPlanner`'s searches run instead of in its own process (the
    core knows no cluster: :mod:`cecm_ros.cluster` makes one). It must give the plans
    :meth:`CachingPlanner.solve_all` would give, so only a deterministic planner
    offloads."""

    def solve_all(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        """The plans of distinct vectors (inert capabilities set), as ``solve_all``."""

    def with_seed(self, seed: int) -> SearchOffload:
        """The same place for a twin of the planner with another seed (``with_seed``)."""

    def close(self) -> None:
        """Let go of the place; a later search may take it again."""


@dataclass
class _InFlight:
    """A search under way: set when it ended; ``plan`` is None when it failed."""

    done: threading.Event = field(default_factory=threading.Event)
    plan: JointPlan | None = None
    error: PlanningError | None = None     # the search's own failure (a timeout)


class CachingPlanner(Planner):
    """A planner with a bounded in-process cache of plans per (task, vector)."""

    def __init__(self, domain: Domain, guarantees: PlannerGuarantees, cache_size: int = 100_000):
        self.domain = domain
        # A plan store on disk (see :mod:`~cecm_ros.core.plan_store`) and the scope of
        # this planner's keys in it; set by :meth:`use_store`.
        self.store: PlanStore | None = None
        self.store_scope = ''
        self.store_hits = 0
        self.guarantees = guarantees
        self._cache: OrderedDict[tuple, JointPlan] = OrderedDict()
        # The same plans indexed by task, so that the plans known for one task are found
        # without a scan of the whole cache (the hypothesis evaluators ask often).
        self._by_task: dict[tuple, dict[bytes, JointPlan]] = {}
        self._cache_size = cache_size
        self._lock = threading.Lock()
        # Searches under way, per (task, vector): a second caller waits for the first.
        self._in_flight: dict[tuple, _InFlight] = {}
        self.calls = 0          # plans made (cache misses)
        self.cache_hits = 0
        self.in_flight_hits = 0  # plans another thread's search under way gave
        # Where solve_all's searches run, when not here (offload_searches).
        self.offload: SearchOffload | None = None

    @abstractmethod
    def solve_all(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        """Plans for distinct vectors (inert capabilities already set), none cached."""

    def plan_many(self, task: Task, vectors: Iterable[np.ndarray]) -> list[JointPlan]:
        """Plans for several vectors of one task, solved together where not cached.

        A plan another thread is searching for right now is waited for, not searched
        again (the estimator's update and the held-out metrics often ask for the same
        plans at once)."""
        domain = self.domain
        results: list[JointPlan | None] = []
        missing: dict[bytes, np.ndarray] = {}       # searched here
        awaited: dict[bytes, _InFlight] = {}         # searched by another thread
        mine: dict[bytes, _InFlight] = {}
        keys = []
        # Checked before any search is registered as under way (a bad vector must not
        # leave a registration nobody completes).
        inert = domain.task_inert_mask(task)
        checked = [domain.catalog.check_vector(vector) | inert for vector in vectors]
        with self._lock:
            for effective in checked:
                # Inert capabilities cannot change any plan: they share one cache entry.
                key = (task.key, effective.tobytes())
                keys.append(key)
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
                    self.cache_hits += 1
                elif key[1] not in missing and key[1] not in awaited:
                    flight = self._in_flight.get(key)
                    if flight is not None:
                        awaited[key[1]] = flight
                    else:
                        mine[key[1]] = self._in_flight[key] = _InFlight()
                        missing[key[1]] = effective
                results.append(cached)
        by_bytes: dict[bytes, JointPlan] = {}
        if missing:
            try:
                solved = self._solve_or_load(task, list(missing))
                by_bytes.update(zip(missing, solved))
                with self._lock:
                    self._remember(task, by_bytes)
                    for vector_bytes, plan in by_bytes.items():
                        mine[vector_bytes].plan = plan
            except PlanningError as error:
                for flight in mine.values():
                    flight.error = error     # the waiters get the same answer
                raise
            finally:
                with self._lock:
                    for vector_bytes in missing:
                        self._in_flight.pop((task.key, vector_bytes), None)
                for flight in mine.values():
                    flight.done.set()
        for vector_bytes, flight in awaited.items():
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            if flight.plan is None:
                # That search was cut short otherwise (a stop, a batch that failed on
                # another vector): search it here.
                by_bytes[vector_bytes] = self.plan_many(
                    task, [np.frombuffer(vector_bytes, dtype=bool)])[0]
            else:
                by_bytes[vector_bytes] = flight.plan
                with self._lock:
                    self.in_flight_hits += 1
        if by_bytes:
            results = [r if r is not None else by_bytes[k[1]] for r, k in zip(results, keys)]
        plans = [plan for plan in results if plan is not None]
        return [plan if plan.task_id == task.task_id else replace(plan, task_id=task.task_id)
                for plan in plans]

    def _remember(self, task: Task, plans: dict[bytes, JointPlan]) -> None:
        """Cache ``plans`` of ``task`` (under the lock), dropping the oldest beyond the
        cache's size."""
        if self._cache_size > 0:
            known = self._by_task.setdefault(task.key, {})
            for vector_bytes, plan in plans.items():
                self._cache[(task.key, vector_bytes)] = plan
                known[vector_bytes] = plan
        while len(self._cache) > self._cache_size:
            (task_key, vector_bytes), _ = self._cache.popitem(last=False)
            per_task = self._by_task.get(task_key)
            if per_task is not None:
                per_task.pop(vector_bytes, None)
                if not per_task:
                    del self._by_task[task_key]

    def offload_searches(self, offload: SearchOffload | None) -> None:
        """Run the searches :meth:`solve_all` would run in ``offload`` (None: here again).
        Only a deterministic planner may: the plans must not depend on where they were
        made. A planner whose ``with_seed`` makes twins gives each twin
        ``offload.with_seed(seed)``."""
        if offload is not None and not self.guarantees.deterministic:
            raise ValueError('only a deterministic planner may search elsewhere')
        self.offload = offload

    def close(self) -> None:
        """Let go of the offload (subclasses that start processes extend this)."""
        if self.offload is not None:
            self.offload.close()

    def _searched(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        offload = self.offload
        if offload is None:
            return self.solve_all(task, vectors)
        return offload.solve_all(task, vectors)

    def use_store(self, store: PlanStore | None, scope: str) -> None:
        """Keep plans in ``store`` under ``scope`` (what else determines them: the domain's
        content, the planner's settings and seed). Only a deterministic planner may."""
        if store is not None and not self.guarantees.deterministic:
            raise ValueError('only a deterministic planner may keep plans on disk')
        self.store, self.store_scope = store, scope

    def open_store(self, plan_cache: PlanCacheOption | None, scope: str) -> None:
        """Keep plans in the store ``plan_cache`` names (True: the default one); a store
        that cannot be opened is a warning, and this planner then plans without one."""
        if not plan_cache:
            return
        try:
            store = PlanStore(plan_cache if isinstance(plan_cache, str) else None)
        except PlanStoreUnavailableError as error:
            warnings.warn(f'{error}; planning without a plan cache', RuntimeWarning,
                          stacklevel=3)
            return
        self.use_store(store, scope)

    def _solve_or_load(self, task: Task, vectors: list[bytes]) -> list[JointPlan]:
        """Plans of the given vectors: from the store where kept there, else solved (and
        then kept)."""
        size = len(self.domain.catalog)
        arrays = [np.frombuffer(v, dtype=bool, count=size) for v in vectors]
        if self.store is None:
            with self._lock:
                self.calls += len(arrays)
            return self._searched(task, arrays)
        keys = [plan_key(self.store_scope, task.key,
                         ''.join('1' if b else '0' for b in vector)) for vector in arrays]
        stored = self.store.get_many(keys)
        plans: dict[str, JointPlan] = {}
        for key, text in stored.items():
            try:
                plans[key] = plan_from_text(self.domain, task.task_id, text)
            except (ValueError, LookupError, TypeError, CecmError):
                continue   # not a plan of this domain after all: plan it again
        todo = [i for i, key in enumerate(keys) if key not in plans]
        with self._lock:
            self.store_hits += len(plans)
            self.calls += len(todo)
        if todo:
            solved = self._searched(task, [arrays[i] for i in todo])
            fresh = {keys[i]: plan for i, plan in zip(todo, solved)}
            self.store.put_many({k: plan_to_text(self.domain, p) for k, p in fresh.items()})
            plans.update(fresh)
        return [plans[key] for key in keys]

    def cached_plans(self, task: Task) -> list[tuple[np.ndarray, JointPlan]]:
        size = len(self.domain.catalog)
        with self._lock:
            known = list(self._by_task.get(task.key, {}).items())
        return [(np.frombuffer(vector, dtype=bool, count=size), plan) for vector, plan in known]

    def known_plan_count(self, task: Task) -> int:
        with self._lock:
            return len(self._by_task.get(task.key, ()))
