"""The stepwise likelihoods: a partner who follows the plan its planner makes for ``c``
and sometimes slips, then plans again from where the world is (``stepwise``), and the
same with the partner's lapse inferred rather than fixed (``fitted_stepwise``).

``fitted_stepwise`` is the stepwise likelihood with the partner's lapse not fixed but
inferred with the capabilities: one lapse per partner, shared by all its tasks, on a grid
(:data:`LAPSE_GRID`, equal prior weights) over which the likelihood of every task seen is
summed. A partner who follows the robot's model with rare slips is weighed as with a
small lapse (each slip is strong evidence); one whom no hypothesis predicts well (another
decision rule: a myopic person, a habit) gets a large fitted lapse, so its departures
from a hypothesis's plans cost little (robust Bayes under misspecification: a lapse
fitted per partner rather than fixed, cf. Masters & Sardina 2021). Tasks then no longer
add up independently: each gives its slips per hypothesis (:meth:`~LikelihoodModel.
task_terms`) and the posterior combines them (:meth:`~LikelihoodModel.combine`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import ConfigError, UnknownNameError
from .likelihood import Likelihood, LikelihoodModel

# fitted_stepwise: the lapses a partner may have (equal prior weights), each below 1/2 so
# that a slip is always the less likely outcome of a step.
LAPSE_GRID = (0.01, 0.03, 0.06, 0.1, 0.15, 0.22, 0.3, 0.38, 0.45)


class StepwiseLikelihoodModel(LikelihoodModel):
    """The likelihood of a partner who follows its optimal plan and sometimes slips.

    A partner with ``c`` follows the plan its planner makes for ``c``; with probability
    ``lapse`` per step it does something else (a slip, a detour, a softmax choice), and
    from where that leaves the world it plans again. The observed trajectory is walked
    step by step: a step that is the next step of ``c``'s current plan weighs
    ``1 - lapse``, any other ``lapse``, after which ``c``'s plan is made afresh from the
    state observed (the robot's planner from an intermediate state: the task from that
    state). A trajectory-level distance cannot tell "one slip, then the right plan" from
    "the wrong plan all along": after one slip every later joint state differs from the
    plan made at the start. Plans come from the robot's own search only (a
    deterministic planner's; one per observed state a hypothesis departs at, shared
    between hypotheses), and proven capabilities (``F``) are certain as in the kernel.
    """

    name = 'stepwise'
    summary = 'a partner who follows its plan and sometimes slips, then plans again'
    lapse_rule = 'slip'
    extra_searches = False   # the plans of one deterministic search

    @classmethod
    def for_domain(cls, likelihood: Likelihood, evaluators: Sequence, domain):
        return cls(likelihood, evaluators[:1], domain.exercised_capabilities,
                   domain.task_from_state)

    def __init__(self, likelihood: Likelihood, evaluators: Sequence, exercised=None,
                 task_from_state=None):
        super().__init__(likelihood, evaluators, exercised)
        if task_from_state is None:
            raise ConfigError('the stepwise likelihood needs the domain\'s task_from_state')
        self._task_from_state = task_from_state

    def _plans(self, task, vectors: np.ndarray) -> list:
        """The primary evaluator's plans of ``vectors`` (None where ``task`` cannot be
        done under a vector)."""
        from .errors import UnsolvableTaskError

        plans_of = getattr(self.primary, 'plans', None)
        if plans_of is None:
            plans_of = self.primary.shared.plans
        try:
            return list(plans_of(task, vectors))
        except UnsolvableTaskError:
            # Unreachable for every partner: the observation is no task at all (the error
            # names it); else only some vectors cannot finish from here.
            plans_of(task, np.ones((1, vectors.shape[1]), dtype=bool))
            answers = []
            for vector in vectors:
                try:
                    answers.append(plans_of(task, vector[None, :])[0])
                except UnsolvableTaskError:
                    answers.append(None)
            return answers

    def explained_floor(self, observed: Sequence) -> float | None:
        """The log-likelihood of a hypothesis whose plans follow every step."""
        return (len(observed) - 1) * float(np.log1p(-self.likelihood.lapse))

    def plan_ahead(self, task, vectors: np.ndarray, observed: Sequence) -> None:
        """The walk over the states observed so far: it plans from every state a
        hypothesis departs at, as the walk over the whole trajectory will (which departs
        at the same states up to there), so most of an update's plans can be made while
        the team still works."""
        if len(observed):
            self.log_likelihood(task, vectors, observed)

    def log_likelihood(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
        slips = self.slips(task, vectors, observed)
        steps = len(observed) - 1
        lapse = self.likelihood.lapse
        with np.errstate(invalid='ignore'):
            logs = slips * np.log(lapse) + (steps - slips) * np.log1p(-lapse)
        if self.likelihood.misperception and len(vectors):
            logs = logs + self.log_feasibility(vectors, observed)
        return np.where(np.isfinite(slips), logs, -np.inf)

    def slips(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """Per vector, at how many of the observed steps the partner left its plan (inf
        for a vector that cannot make the observation, ``F`` = 0)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
        if not len(vectors):
            return np.zeros(0)
        # (Under a misperception probability nothing is proven, so every vector is
        # walked and F weighs in log_likelihood.)
        feasible = self.feasible(vectors, observed)
        slips = np.where(feasible, 0.0, np.inf)
        rows = np.flatnonzero(feasible)
        if not len(rows):
            return slips
        steps = len(observed) - 1
        current: dict[int, tuple | None] = {}
        position = dict.fromkeys(rows.tolist(), 0)
        replan = rows.tolist()
        for t in range(steps + 1):
            if replan:
                # From the state observed, the start included: the team plans from where
                # the world is, which need not be the start the task was asked with.
                try:
                    here = self._task_from_state(task, observed[t])
                    plans = self._plans(here, vectors[replan])
                except (ConfigError, UnknownNameError):
                    # A state no world is in (a perception glitch): no hypothesis plans
                    # from it, so every one departs at the next step alike.
                    plans = [None] * len(replan)
                for row, plan in zip(replan, plans):
                    current[row] = None if plan is None else plan.trajectory
                    position[row] = 0
            if t == steps:
                break
            replan = []
            for row in rows.tolist():
                trajectory = current[row]
                if trajectory is not None:
                    ahead = min(position[row] + 1, len(trajectory) - 1)
                    if trajectory[ahead] == observed[t + 1]:
                        position[row] = ahead
                        continue
                slips[row] += 1.0
                replan.append(row)
        return slips


class FittedLapseLikelihoodModel(StepwiseLikelihoodModel):
    """The stepwise likelihood with the partner's lapse inferred (``fitted_stepwise``;
    module docstring): a task's term is its number of slips, and the tasks' slips
    ``K`` over ``N`` steps weigh a vector by ``sum_l w_l * l**K * (1 - l)**(N - K)``
    over the lapse grid."""

    name = 'fitted_stepwise'
    summary = 'stepwise, with the partner\'s lapse inferred on a grid (the lapse setting is unused)'
    lapse_rule = 'fitted'
    softens_misperception = False   # its tasks combine by slips, which a glitch is not
    grid = np.array(LAPSE_GRID)
    additive = False

    def task_terms(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        return self.slips(task, vectors, observed)

    def combine(self, terms: np.ndarray, steps: int) -> np.ndarray:
        slips = np.asarray(terms, dtype=float)
        finite = np.isfinite(slips)
        kept = np.where(finite, slips, 0.0)[:, None]
        with np.errstate(invalid='ignore'):
            logs = kept * np.log(self.grid) + (steps - kept) * np.log1p(-self.grid)
        high = logs.max(axis=1, keepdims=True)
        mixed = high[:, 0] + np.log(np.exp(logs - high).mean(axis=1))
        return np.where(finite, mixed, -np.inf)

    def log_likelihood(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """One task alone, its lapse inferred from it alone."""
        return self.combine(self.slips(task, vectors, observed), len(observed) - 1)

    def report_logs(self, terms: np.ndarray, observed: Sequence) -> np.ndarray:
        return self.combine(terms, len(observed) - 1)

    def explained_floor(self, observed: Sequence) -> float | None:
        """A hypothesis whose plans follow every step of the task."""
        return float(self.combine(np.zeros(1), len(observed) - 1)[0])
