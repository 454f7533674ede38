"""The usage likelihood: which capabilities the partner used, against how often the
searches of a hypothesis use them (a summary statistic that a partner of another
decision rule shares with the robot's model far more often than a whole trajectory)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import ConfigError
from .likelihood import Likelihood, LikelihoodModel


class UsageLikelihoodModel(LikelihoodModel):
    """The likelihood of which capabilities the partner used, under ``c``'s searches.

    A capability vector matters to a trajectory only through the partner actions it
    lets change the world, so the summary statistic here is the set of capabilities a
    trajectory proves used (``Domain.exercised_capabilities``). Per capability, ``c``'s
    ``M`` seeded searches give how often a partner like ``c`` uses it on this task
    (``(uses + 1) / (M + 2)``, Laplace's rule, kept inside ``[lapse, 1 - lapse]``; with
    CE-CM-Div's plan sets a search counts the share of its set's plans that use it); the
    observation weighs ``c`` by the product of
    those frequencies for the capabilities it shows used and their complements for the
    others, the capabilities taken as independent (an approximation). ABC with this
    statistic instead of the whole trajectory: "the partner never chopped, although a
    partner who can chop does in half of the searches" counts, whether or not the rest
    of the kitchen moved the same way. A capability ``c`` lacks cannot show as used
    (``F``).
    """

    name = 'usage'
    summary = 'which capabilities it used, against how often searches of the hypothesis use them'
    lapse_rule = 'slip'
    reads_plan_sets = True

    def __init__(self, likelihood: Likelihood, evaluators: Sequence, exercised=None):
        super().__init__(likelihood, evaluators, exercised)
        if exercised is None:
            raise ConfigError('the usage likelihood needs the domain\'s '
                              'exercised_capabilities')

    def explained_floor(self, observed: Sequence) -> float | None:
        return None   # no absolute level: the report counts those near the best

    def log_likelihood(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
        if not len(vectors):
            return np.zeros(0)
        shown = self._used_along(observed)
        log_f = self.log_feasibility(vectors, observed)
        logs = np.full(len(vectors), -np.inf)
        rows = np.flatnonzero(np.isfinite(log_f))
        if not len(rows):
            return logs
        lapse = self.likelihood.lapse
        frequency = np.zeros((len(rows), vectors.shape[1]))
        for evaluator in self.evaluators:
            # One trajectory per hypothesis, or (CE-CM-Div) a set whose plans share a vote.
            if getattr(evaluator, 'makes_sets', False):
                for row, trajectories in enumerate(evaluator.trajectory_sets(task,
                                                                             vectors[rows])):
                    frequency[row] += np.mean([self._used_along(t) for t in trajectories],
                                              axis=0)
                continue
            predicted = evaluator.predicted_trajectories(task, vectors[rows])
            frequency += np.array([self._used_along(t) for t in predicted], dtype=float)
        # Laplace's rule: four searches that all use a capability say "likely", not
        # "always" (a partner who has it and did not use it is then not ruled out by one
        # task); a capability no search uses weighs every vector alike.
        frequency = np.clip((frequency + 1.0) / (len(self.evaluators) + 2.0),
                            lapse, 1.0 - lapse)
        terms = np.where(shown[None, :], np.log(frequency), np.log1p(-frequency))
        logs[rows] = terms.sum(axis=1) + log_f[rows]
        return logs
