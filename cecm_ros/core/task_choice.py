"""Choosing the next task to learn from: expected information gain over candidates.

The world is deterministic and a hypothesis either explains an observation or not, so
observing a task's trajectory tells the robot which group of hypotheses predicted it.
The expected information gain of a candidate task is then the entropy, under the
belief's weights, of the trajectory the team would produce: a task on which every
remaining hypothesis predicts the same trajectory teaches nothing, one that splits
them evenly teaches the most. Trajectories closer than epsilon count as one outcome
(the likelihood cannot tell them apart either).

Only the :class:`~cecm_ros.core.hypotheses.HypothesisEvaluator` question is asked, so
this works for any domain.

A ranking may be given a time budget (a person waits for the robot's first task while
it ranks): the hypotheses are then planned in rounds, the most probable first, a round
being the next few hypotheses on every candidate, and the ranking stops after the round
in which the budget ran out. Every candidate is scored on the same hypotheses, so the
comparison stays fair; the choice says how many hypotheses and how much of the belief's
mass it covered. Without a budget (the default, and in experiments, so that a run does
not depend on the machine's speed) every one of the most probable hypotheses is planned.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import PlannerTimeoutError

Distance = Callable[[Sequence, Sequence], float]

# The most probable hypotheses that represent the belief when scoring a task.
MOST_HYPOTHESES = 64
# Hypotheses per candidate in a round of a ranking with a budget: enough to keep two
# planner workers busy, few enough that a round of five candidates ends soon after the
# budget (a round of 8 took over 60 s in a cold kitchen beside the held-out metrics).
ROUND = 4


@dataclass(frozen=True)
class TaskChoice:
    index: int                  # of the chosen candidate
    information: list[float]    # expected information gain per candidate, bits ([] for one;
    #                             NaN for a candidate left out)
    # Candidates left out because a search of theirs timed out (a slow task must not end
    # the session: another candidate is as good a lesson).
    skipped: list[int] = field(default_factory=list)
    # What the scores rest on: the hypotheses planned on every candidate (the most
    # probable MOST_HYPOTHESES, fewer in a ranking its budget cut short) and the share of
    # the belief's mass they hold.
    hypotheses: int = 0
    mass: float = 1.0
    cut_short: bool = False

    def coverage(self) -> str:
        """'' for a whole ranking; else what the budget left it, for a log line."""
        if not self.cut_short:
            return ''
        return (f'ranked on the {self.hypotheses} most probable hypotheses '
                f'({self.mass:.0%} of the belief) within its time budget')


def outcome_entropy(trajectories: Sequence[Sequence], weights: np.ndarray,
                    epsilon: float, distance: Distance) -> float:
    """Entropy (bits) of the outcome when hypothesis i predicts ``trajectories[i]``;
    outcomes closer than ``epsilon`` under the domain's ``distance`` are one."""
    order = np.argsort(-np.asarray(weights), kind='stable')
    representatives: list[Sequence] = []
    mass: list[float] = []
    for i in order:
        for k, representative in enumerate(representatives):
            if distance(trajectories[i], representative) < epsilon:
                mass[k] += float(weights[i])
                break
        else:
            representatives.append(trajectories[i])
            mass.append(float(weights[i]))
    p = np.array(mass) / sum(mass)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def information_gain(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray,
                     evaluator, epsilon: float) -> list[float]:
    """Expected information gain of observing each candidate task (bits), over the
    MOST_HYPOTHESES most probable hypotheses."""
    return _ranked(candidates, vectors, weights, evaluator, epsilon).information


def _ranked(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray, evaluator,
            epsilon: float, budget_s: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> TaskChoice:
    """Every candidate's gain over the most probable hypotheses, heaviest first: all of
    them in one pass, or with ``budget_s`` in rounds of ROUND until a round ends past the
    budget (at least one round). A candidate whose search timed out scores NaN."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
    weights = np.asarray(weights, dtype=float)
    order = np.argsort(-weights, kind='stable')[:MOST_HYPOTHESES]
    vectors, top = vectors[order], weights[order]
    step = len(vectors) if budget_s is None else ROUND
    began = clock()
    predicted: list[list | None] = [[] for _ in candidates]
    covered = 0
    while covered < len(vectors):
        chunk = vectors[covered:covered + step]
        for index, task in enumerate(candidates):
            trajectories = predicted[index]
            if trajectories is None:
                continue
            try:
                trajectories.extend(evaluator.predicted_trajectories(task, chunk))
            except PlannerTimeoutError:
                predicted[index] = None      # left out (choose_task says so)
        covered += len(chunk)
        if budget_s is not None and clock() - began >= budget_s:
            break
    share = top[:covered] / top[:covered].sum()
    gains = [float('nan') if trajectories is None
             else outcome_entropy(trajectories, share, epsilon, evaluator.distance)
             for trajectories in predicted]
    skipped = [i for i, gain in enumerate(gains) if np.isnan(gain)]
    best = -1 if len(skipped) == len(gains) else int(np.nanargmax(gains))
    return TaskChoice(best, gains, skipped, hypotheses=covered,
                      mass=float(top[:covered].sum() / weights.sum()),
                      cut_short=covered < len(vectors))


def choose_task(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray, evaluator,
                epsilon: float, budget_s: float | None = None,
                clock: Callable[[], float] = time.monotonic) -> TaskChoice:
    """The candidate with the highest expected information gain (the first on ties);
    with ``budget_s``, scored on the hypotheses planned within about that time."""
    if not candidates:
        raise ValueError('no candidate tasks to choose from')
    if budget_s is not None and not budget_s > 0:
        raise ValueError(f'a ranking budget must be above 0 s, got {budget_s}')
    if len(candidates) == 1:
        return TaskChoice(0, [])   # nothing to choose: nothing to compute
    choice = _ranked(candidates, vectors, weights, evaluator, epsilon, budget_s, clock)
    if choice.index < 0:
        raise PlannerTimeoutError(f'every one of the {len(candidates)} candidate tasks has '
                                  'a search that timed out; none can be ranked')
    return choice


def ranking_key(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray,
                epsilon: float) -> str:
    """What a ranking depends on: the candidates, the hypotheses and epsilon (the same
    key, the same choice; a ranking asked for again may wait for the one at work)."""
    digest = hashlib.sha1(repr(([(t.task_id, t.key) for t in candidates],
                                epsilon)).encode())
    digest.update(vectors.tobytes())
    digest.update(weights.tobytes())
    return digest.hexdigest()
