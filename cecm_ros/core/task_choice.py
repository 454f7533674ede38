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
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import PlannerTimeoutError

Distance = Callable[[Sequence, Sequence], float]

# The most probable hypotheses that represent the belief when scoring a task.
MOST_HYPOTHESES = 64


@dataclass(frozen=True)
class TaskChoice:
    index: int                  # of the chosen candidate
    information: list[float]    # expected information gain per candidate, bits ([] for one;
    #                             NaN for a candidate left out)
    # Candidates left out because a search of theirs timed out (a slow task must not end
    # the session: another candidate is as good a lesson).
    skipped: list[int] = field(default_factory=list)


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
    """Expected information gain of observing each candidate task (bits)."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
    weights = np.asarray(weights, dtype=float)
    if len(vectors) > MOST_HYPOTHESES:
        keep = np.argsort(-weights, kind='stable')[:MOST_HYPOTHESES]
        vectors, weights = vectors[keep], weights[keep]
    weights = weights / weights.sum()
    gains = []
    for task in candidates:
        try:
            predicted = evaluator.predicted_trajectories(task, vectors)
        except PlannerTimeoutError:
            gains.append(float('nan'))     # left out (choose_task says so)
            continue
        gains.append(outcome_entropy(predicted, weights, epsilon, evaluator.distance))
    return gains


def choose_task(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray, evaluator,
                epsilon: float) -> TaskChoice:
    """The candidate with the highest expected information gain (the first on ties)."""
    if not candidates:
        raise ValueError('no candidate tasks to choose from')
    if len(candidates) == 1:
        return TaskChoice(0, [])   # nothing to choose: nothing to compute
    gains = information_gain(candidates, vectors, weights, evaluator, epsilon)
    skipped = [i for i, gain in enumerate(gains) if np.isnan(gain)]
    if len(skipped) == len(candidates):
        raise PlannerTimeoutError(f'every one of the {len(candidates)} candidate tasks has '
                                  'a search that timed out; none can be ranked')
    return TaskChoice(int(np.nanargmax(gains)), gains, skipped)


def ranking_key(candidates: Sequence, vectors: np.ndarray, weights: np.ndarray,
                epsilon: float) -> str:
    """What a ranking depends on: the candidates, the hypotheses and epsilon (the same
    key, the same choice; a ranking asked for again may wait for the one at work)."""
    digest = hashlib.sha1(repr(([(t.task_id, t.key) for t in candidates],
                                epsilon)).encode())
    digest.update(vectors.tobytes())
    digest.update(weights.tobytes())
    return digest.hexdigest()
