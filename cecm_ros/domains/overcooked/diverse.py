"""DiverseMCTS: CE-CM-Div's plan set of one (task, vector), read off the MCTS tree.

The paper's Algorithm 2 (appendix B.4) with its gaps filled (docs/overcooked.md,
"DiverseMCTS"):

* The tree: the search of the hypothesis's own plan (:func:`search_plan`, same seed)
  keeps the subtree of each step it takes, so once the plan is made the first root
  holds every tree along the plan. Its root-to-leaf paths branch off the plan at every
  step, not only at the first decision (whose 200 simulations reach 4-6 joint steps).
* A path is a candidate when it has at least ``min_length`` joint steps (L_min).
* Completion: a path that stops before the dish is served goes on by the prior's most
  probable joint action that leads to a state not yet on the path (ties: the first in
  the search's fixed order) until the dish is served or the domain's step limit; a
  path still not served then is no plan of the task and is dropped (a search per path
  would cost up to a second per path).
* Order: by descending tree length (the paper's), ties by the path's child indices.
* Filter: the set starts with the own plan (what ``plan()`` returns); a candidate is
  kept when its trajectory set difference |S_a minus S_b| / |S_a| against every plan
  kept before it is at least ``diversity`` (delta); at most ``size`` (k) plans. The
  printed algorithm compares a path with a set that holds the path itself (always 0).

Everything follows from the task, the vector and the settings' seed: the same set in
any process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from cecm_ros.core.domain import JointPlan, Task

from .model import DONE, OvercookedDomain

# Part of every stored set's key, with the MCTS rules version: raise it when the rules
# above change what a set holds.
SET_RULES_VERSION = 1
DEFAULT_MIN_LENGTH = 3


@dataclass(frozen=True)
class SetRules:
    """k, delta and L_min of Algorithm 2."""

    size: int = 50
    diversity: float = 0.35
    min_length: int = DEFAULT_MIN_LENGTH

    def key(self) -> tuple:
        return (SET_RULES_VERSION, self.size, round(self.diversity, 6), self.min_length)


def tree_paths(root) -> list[tuple[tuple[int, ...], list]]:
    """Every root-to-leaf path of the tree as (child indices, nodes), depth first in
    child order. A leaf: a node without an expanded child."""
    paths: list[tuple[tuple[int, ...], list]] = []
    stack: list[tuple[tuple[int, ...], list]] = [((), [root])]
    while stack:
        indices, nodes = stack.pop()
        node = nodes[-1]
        children = [(i, c) for i, c in enumerate(node.children) if c is not None]
        if not children:
            paths.append((indices, nodes))
            continue
        for index, child in reversed(children):
            stack.append((indices + (index,), nodes + [child]))
    return paths


def complete(search, domain: OvercookedDomain, actions: list, trajectory: list
             ) -> bool:
    """Extend a path by the prior's most probable joint action to a state not yet on
    it, until the dish is served or the step limit; True when it is served within the
    limit (``actions`` and ``trajectory`` grow in place)."""
    state = trajectory[-1]
    seen = set(trajectory)
    while not state[DONE] and len(actions) < domain.max_steps:
        options, priors, _ = search.options(state)
        # A joint action back to a state already visited would loop: never chosen.
        fresh = [(priors[i], -i, options[i], after) for i in range(len(options))
                 for after in (search.step(state, options[i])[0],) if after not in seen]
        if not fresh:
            break
        _, _, action, state = max(fresh, key=lambda item: item[:2])
        seen.add(state)
        actions.append(action)
        trajectory.append(state)
    # A tree path may already run past the limit (simulations look beyond it).
    return bool(state[DONE]) and len(actions) <= domain.max_steps


def novelty(trajectory, other) -> float:
    """|S_a minus S_b| / |S_a| over the visited states (the paper's set difference)."""
    states = set(trajectory)
    return len(states - set(other)) / len(states)


def select(own: tuple[list, list], candidates: list[tuple[list, list]], rules: SetRules
           ) -> list[tuple[list, list]]:
    """The set: the own plan, then candidates in their order, each kept when it differs
    by at least delta from every one kept before it; at most k."""
    kept = [own]
    for actions, trajectory in candidates:
        if len(kept) >= rules.size:
            break
        if min(novelty(trajectory, other) for _, other in kept) >= rules.diversity:
            kept.append((actions, trajectory))
    return kept


def candidate_paths(search, root, domain: OvercookedDomain, min_length: int
                    ) -> tuple[list[tuple[list, list]], dict[str, int]]:
    """The tree's paths of at least ``min_length`` joint steps, completed and sorted
    (descending tree length, then child indices), and counts of what was dropped."""
    counts = {'paths': 0, 'short': 0, 'unfinished': 0}
    found = []
    for indices, nodes in tree_paths(root):
        counts['paths'] += 1
        length = len(indices)
        if length < min_length:
            counts['short'] += 1
            continue
        actions = [node.actions[i] for node, i in zip(nodes, indices)]
        trajectory = [node.state for node in nodes]
        if not complete(search, domain, actions, trajectory):
            counts['unfinished'] += 1
            continue
        found.append((-length, indices, actions, trajectory))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(actions, trajectory) for _, _, actions, trajectory in found], counts


def plan_set_actions(domain: OvercookedDomain, task: Task, vector: np.ndarray, settings,
                     rules: SetRules) -> list[list[tuple[str, str]]]:
    """The set's plans as joint macro actions (robot, partner), the own plan first."""
    from .mcts import search_plan
    tree: list = []
    own = search_plan(domain, task, vector, settings, tree)
    search, root, chosen = tree
    candidates, _ = candidate_paths(search, root, domain, rules.min_length)
    return [actions for actions, _ in select((chosen, list(own.trajectory)), candidates,
                                             rules)]


def replay(domain: OvercookedDomain, task: Task, search, actions: list[tuple[str, str]]
           ) -> JointPlan:
    """The JointPlan of joint macro actions from the task's start (a stored set)."""
    from .mcts import joint_plan
    started = time.perf_counter()
    pairs = [(robot, partner) for robot, partner in actions]   # lists, when read as JSON
    trajectory = [domain.initial_state(task)]
    for action in pairs:
        trajectory.append(search.step(trajectory[-1], action)[0])
    return joint_plan(domain, task, pairs, trajectory, started)
