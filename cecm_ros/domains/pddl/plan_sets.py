"""CE-CM-Div's plan sets for PDDL domains from K*, a top-k planner (optional).

K* (IBM's ``kstar-planner`` on PyPI, GPLv3) is an optional extra,
``pip install 'cecm_ros[plansets]'``: it is never imported, only its search binary is
run as a subprocess, so cecm_ros itself stays Apache-2.0. Without it CE-CM-Div builds
its sets from the plans of partners who decline a capability (one warning says so).

A vector's set: its own plan (what ``plan()`` returns) first, then K*'s unordered top-k
plans of the vector's induced task (the task translated once with a capable human, the
operators the vector lacks dropped, as the planner's own search does); K* is asked for
``REQUEST`` plans (its cost grows fast with k, see there). Unordered: plans that
reorder the same actions count once (the planner puts every plan into one canonical
order anyway). Each plan is lifted into
joint steps like any plan (``build_joint_plan``), ordered by planner cost (then its
actions), and kept when its trajectory set difference against every plan kept before
it is at least delta; at most k. K*'s search has no random choices: the same task and
vector give the same set, which is kept in the plan store under a key of its own.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cecm_ros.core.domain import JointPlan, Task
from cecm_ros.core.errors import PlanningError
from cecm_ros.core.plan_store import plan_key

if TYPE_CHECKING:
    from .planner import FastDownwardPlanner

PACKAGE = 'kstar-planner'
INSTALL = "pip install 'cecm_ros[plansets]' (or: pip install kstar-planner)"
# Part of every stored set's key: raise it when what a set holds changes.
SET_RULES_VERSION = 1
# Plans asked of K* per vector, whatever k: on a TidyUP task K* takes 1.7 s for 10
# unordered plans and 12 s for 50 (lmcut; CEGAR is slower), and CE-CM-Div asks for
# every distinct hypothesis. After delta = 0.35, 50 plans left sets of 8-12.
REQUEST = 10
_warned = threading.Event()
# Sets made in this process: (scope, task, vector bits) -> the candidates as JSON.
_known: dict[tuple, str] = {}
_known_lock = threading.Lock()


def kstar_binary() -> Path | None:
    """K*'s search binary inside the installed package (found, not imported), or None."""
    try:
        spec = importlib.util.find_spec('kstar_planner')
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(list(spec.submodule_search_locations)[0]) / 'builds/release/bin/downward'
    return binary if binary.is_file() else None


def warn_missing() -> None:
    """Say once per process that CE-CM-Div falls back to the declined-capability sets."""
    if not _warned.is_set():
        _warned.set()
        warnings.warn(f'CE-CM-Div: {PACKAGE} is not installed, so PDDL plan sets are the '
                      'plans of partners who decline a capability, not top-k plans; '
                      f'install it with {INSTALL}', RuntimeWarning, stacklevel=3)


def top_k_plans(binary: Path, sas_text: str, count: int, timeout_s: float, label: str
                ) -> tuple[list[list[str]], bool]:
    """K*'s unordered top-``count`` plans of a translated task (action texts without
    parentheses), and whether the search ran out of time (then fewer, not stored)."""
    search = (f'kstar(lmcut(), k={count}, max_time={max(1, int(timeout_s))}, '
              'find_unordered_plans=true, dump_plan_files=false, '
              'json_file_to_dump=plans.json, verbosity=silent)')
    with tempfile.TemporaryDirectory(prefix='cecm-kstar-') as scratch:
        try:
            result = subprocess.run([str(binary), '--search', search], input=sas_text,
                                    text=True, capture_output=True, cwd=scratch,
                                    timeout=timeout_s + 30)
        except subprocess.TimeoutExpired:
            raise PlanningError(f'{label}: K* did not stop within {timeout_s:g} s') from None
        found = Path(scratch) / 'plans.json'
        plans = json.loads(found.read_text())['plans'] if found.is_file() else []
    if not plans and result.returncode not in (0, 12):
        raise PlanningError(f'{label}: K* failed (exit code {result.returncode}): '
                            f'{(result.stderr or result.stdout)[-400:]}')
    timed_out = 'time limit' in result.stdout or result.returncode == 12 and not plans
    return [list(plan['actions']) for plan in plans], timed_out


def kstar_plan_sets(planner: FastDownwardPlanner, binary: Path, task: Task,
                    vectors: list[np.ndarray], size: int, diversity: float
                    ) -> list[list[JointPlan]]:
    """Per vector, its own plan and K*'s top-k plans, thinned (see the module)."""
    from .planner import build_joint_plan
    model = planner.model
    own_plans = planner.plan_many(task, vectors)
    inert = model.task_inert_mask(task)
    effective = [model.catalog.check_vector(v) | inert for v in vectors]
    scope = repr(('kstar-sets', SET_RULES_VERSION, REQUEST, planner.store_scope,
                  model.plan_scope()))
    goal = model.state_from_atoms(task.goal)
    trivial = model.state_from_atoms(task.initial) & goal == goal
    sets: list[list[JointPlan]] = []
    for vector, own in zip(effective, own_plans):
        bits = ''.join('1' if b else '0' for b in vector)
        key = plan_key(scope, task.key, bits)
        with _known_lock:
            stored = _known.get((scope, task.key, bits))
        if stored is None and planner.store is not None:
            stored = planner.store.get_many([key]).get(key)
        if stored is not None:
            candidates, timed_out = json.loads(stored), False
        elif trivial:
            candidates, timed_out = [], False
        else:
            translated, gates = planner._translation(task)
            keep = (gates < 0) | vector[np.maximum(gates, 0)]
            started = time.perf_counter()
            found, timed_out = top_k_plans(binary, translated.restricted(keep), REQUEST,
                                           planner.timeout_s, f'task {task.task_id}')
            elapsed = time.perf_counter() - started
            candidates = []
            for names in found:
                actions = [model.action(f'({name})') for name in names]
                plan = build_joint_plan(model, task, actions, vector, elapsed)
                candidates.append(list(plan.sequential))
        plans = [build_joint_plan(model, task, [model.action(a) for a in names], vector)
                 for names in candidates]
        plans.sort(key=lambda p: (p.planner_cost, p.sequential))
        kept = [own]
        for plan in plans:
            if len(kept) >= size:
                break
            if plan.sequential == own.sequential:
                continue
            if min(model.novelty(plan.trajectory, other.trajectory)
                   for other in kept) >= diversity:
                kept.append(plan)
        if stored is None and not timed_out:
            text = json.dumps(candidates, separators=(',', ':'))
            with _known_lock:
                _known[(scope, task.key, bits)] = text
                while len(_known) > 4096:
                    _known.pop(next(iter(_known)))
            if planner.store is not None:
                planner.store.put_many({key: text})
        sets.append(kept)
    return sets
