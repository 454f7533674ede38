"""How likely an observed team trajectory is if the partner has capability vector ``c``.

The posterior (``weighted_posterior``) multiplies, per task, a likelihood

    P(obs | c) = F(obs, c) * (lapse + (1 - lapse) * S(obs, c))

* ``F`` is 0 when the observation shows the partner change the world in a way a partner
  with ``c`` cannot (the self-loop rule: a missing capability never changes the state),
  else 1. It holds for every partner, optimal or not, so it is the one part of the
  evidence that may be certain.
* ``S`` says how well the plans ``c`` leads to explain what the team did: the share of
  ``M`` searches of ``c`` (one per search seed; one for a deterministic planner) whose
  trajectory lies within ``epsilon`` of the observation, with an optional soft shoulder
  beyond ``epsilon`` (``bandwidth``). With one search this is the ABC acceptance kernel
  (Wilkinson 2013: ABC is exact inference under an explicit error model); the share of
  several seeded searches is its pseudo-marginal estimate (Andrieu & Roberts 2009) of the
  chance that a partner who plans like ``c``, but with its own seed, lands there.
* ``misperception`` (0 by default: perception is taken as true) is the chance that one
  observed step shows the partner change the world when it did not: a perception glitch.
  With it, ``F`` is no longer 0 or 1 but, up to a factor common to every ``c``,
  ``(misperception / (1 - misperception)) ** k``, ``k`` the observed steps that only an
  action ``c`` cannot take explains (each of them must then be a glitch), so
  one glitch costs the true vector weight instead of ruling it out, and no capability is
  certain from one sighting; what the steps prove then weighs like any other evidence.
* ``lapse`` is the chance that the partner did something none of its modelled plans
  does (a detour, a preference, a slip). It keeps a hypothesis that fails one task of
  five in the running instead of discarding it, which is what makes the estimator
  usable with people and with partners that search with their own seed.

``indicator`` (lapse 0, no shoulder, no feasibility term) is the hard accept/reject of
earlier versions, kept so that old results can be re-made.

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

Nothing here knows a domain: the trajectories come from hypothesis evaluators
(:mod:`~cecm_ros.core.hypotheses`) and the proven capabilities from
``Domain.exercised_capabilities``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, UnknownNameError

LIKELIHOODS = ('kernel', 'stepwise', 'fitted_stepwise', 'usage', 'indicator')
# The likelihoods that take a lapse in (0, 0.5) (the fitted one infers its own).
LAPSE_LIKELIHOODS = ('stepwise', 'usage')
# fitted_stepwise: the lapses a partner may have (equal prior weights), each below 1/2 so
# that a slip is always the less likely outcome of a step.
LAPSE_GRID = (0.01, 0.03, 0.06, 0.1, 0.15, 0.22, 0.3, 0.38, 0.45)
# The likelihoods that read a hypothesis's set of plans (CE-CM-Div) where there is one: the
# kernel and the indicator by the set's closest plan, usage by how often its plans use
# each capability. The stepwise likelihood follows one plan.
PLAN_SET_LIKELIHOODS = ('kernel', 'usage', 'indicator')
# The likelihoods whose feasibility term a misperception probability softens (the
# indicator has none; the fitted lapse's tasks combine by slips, which it does not weigh).
MISPERCEPTION_LIKELIHOODS = ('kernel', 'stepwise', 'usage')
# Seeds of the estimator's extra searches (the m-th is LIKELIHOOD_SEED_BASE + m): far from
# any seed a simulated partner searches with, so the two never share a random stream.
LIKELIHOOD_SEED_BASE = 1_500_000_007


@dataclass(frozen=True)
class Likelihood:
    """The likelihood's form and parameters (see the module docstring)."""

    epsilon: float
    lapse: float = 0.0
    bandwidth: float = 0.0
    feasibility: bool = True
    misperception: float = 0.0

    def __post_init__(self):
        if not 0.0 < self.epsilon <= 1.0:
            raise ConfigError(f'epsilon must lie in (0, 1], got {self.epsilon}')
        if not 0.0 <= self.lapse < 1.0:
            raise ConfigError(f'lapse must lie in [0, 1), got {self.lapse}')
        if self.bandwidth < 0.0:
            raise ConfigError(f'bandwidth must be at least 0, got {self.bandwidth}')
        if not 0.0 <= self.misperception < 0.5:
            raise ConfigError(f'misperception must lie in [0, 0.5), got {self.misperception}')

    @classmethod
    def named(cls, kind: str, epsilon: float, lapse: float, bandwidth: float,
              misperception: float = 0.0) -> Likelihood:
        if kind not in LIKELIHOODS:
            raise ConfigError(f'unknown likelihood {kind!r}; choose one of '
                              f'{", ".join(LIKELIHOODS)}')
        if misperception and kind not in MISPERCEPTION_LIKELIHOODS:
            raise ConfigError(f'misperception {misperception:g}: the {kind} likelihood '
                              f'has no feasibility term to soften; use one of '
                              f'{", ".join(MISPERCEPTION_LIKELIHOODS)}')
        if kind == 'indicator':
            return cls(epsilon, 0.0, 0.0, feasibility=False)
        if kind in LAPSE_LIKELIHOODS and not 0.0 < lapse < 0.5:
            raise ConfigError(f'the {kind} likelihood needs a lapse in (0, 0.5), got {lapse}')
        return cls(epsilon, lapse, bandwidth, feasibility=True, misperception=misperception)

    @property
    def hard(self) -> bool:
        """Whether a hypothesis either explains a task (1) or not (0)."""
        return self.lapse == 0.0 and self.bandwidth == 0.0 and not self.feasibility

    def match(self, distances: np.ndarray) -> np.ndarray:
        """S per row of ``distances`` (one column per search): the mean kernel value."""
        distances = np.atleast_2d(np.asarray(distances, dtype=float))
        inside = distances < self.epsilon
        if self.bandwidth > 0:
            beyond = np.exp(-(distances - self.epsilon) / self.bandwidth)
            values = np.where(inside, 1.0, beyond)
        else:
            values = inside.astype(float)
        return values.mean(axis=1)

    def log_values(self, distances: np.ndarray, feasible: np.ndarray) -> np.ndarray:
        """log P(obs | c) per row, from the distances of its searches and F."""
        value = self.lapse + (1.0 - self.lapse) * self.match(distances)
        with np.errstate(divide='ignore'):
            logs = np.log(value)
        return np.where(np.asarray(feasible, dtype=bool), logs, -np.inf)


class LikelihoodModel:
    """The likelihood of observations under capability vectors, from evaluators.

    ``evaluators`` answer "which trajectories does ``c`` lead to" (each with its own
    search seed; the first is the robot's own, whose plans also predict the team for
    task choice). ``exercised`` maps an observed trajectory to the capabilities it proves
    (``Domain.exercised_capabilities``). Proven capabilities are computed once per
    observation.
    """

    def __init__(self, likelihood: Likelihood, evaluators: Sequence, exercised=None):
        if not evaluators:
            raise ConfigError('a likelihood needs at least one hypothesis evaluator')
        self.likelihood = likelihood
        self.evaluators = list(evaluators)
        self._exercised_of = exercised
        self._used: dict[tuple, np.ndarray] = {}
        self._lock = threading.Lock()

    # What the task choice and the older code ask of an evaluator: the robot's own.
    @property
    def primary(self):
        return self.evaluators[0]

    def distance(self, first, second) -> float:
        return self.primary.distance(first, second)

    def predicted_trajectories(self, task, samples):
        return self.primary.predicted_trajectories(task, samples)

    def trajectory_sets(self, task, samples, progress=None):
        return self.primary.trajectory_sets(task, samples, progress)

    def distances(self, task, samples, observed, progress=None):
        return self.primary.distances(task, samples, observed, progress)

    @property
    def seeds(self) -> int:
        return len(self.evaluators)

    def plan_ahead(self, task, vectors: np.ndarray, observed: Sequence) -> None:
        """Make the plans weighing ``vectors`` by ``task`` will ask for, as far as the
        states observed so far tell (the team still works): here the plans from the
        start. Only the planner's memory changes."""
        self.primary.predicted_trajectories(task, vectors)

    # Whether the tasks' log-likelihoods simply add up (their terms are those).
    additive = True

    def task_terms(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """What one task contributes per vector; the posterior adds the terms of its
        tasks and :meth:`combine` makes the log-likelihood of them all. Here the task's
        log-likelihood (tasks are independent given the vector)."""
        return self.log_likelihood(task, vectors, observed)

    def combine(self, terms: np.ndarray, steps: int) -> np.ndarray:
        """The log-likelihood of tasks whose terms add up to ``terms`` and whose observed
        trajectories have ``steps`` joint steps in all. Adding a task never raises it (a
        partial sum bounds the whole from above)."""
        return terms

    def report_logs(self, terms: np.ndarray, observed: Sequence) -> np.ndarray:
        """One task's terms as the log-likelihoods :meth:`explained_floor` speaks of."""
        return terms

    def proven(self, observed: Sequence, size: int) -> np.ndarray:
        """The capabilities ``observed`` proves the partner has (none without a domain
        function, for a likelihood without the feasibility term, or where a glitch may
        have shown what did not happen: then they are evidence, weighed by
        :meth:`log_feasibility`)."""
        if self._exercised_of is None or not self.likelihood.feasibility \
                or self.likelihood.misperception:
            return np.zeros(size, dtype=bool)
        return self._used_along(observed)

    def _sightings(self, observed: Sequence, size: int) -> np.ndarray:
        """Per capability, at how many observed steps only a partner action gated by it
        explains the change (each step asked alone, so one capability per step)."""
        counts = np.zeros(size)
        if self._exercised_of is None:
            return counts
        for before, after in zip(observed, observed[1:]):
            if before != after:
                counts += self._used_along((before, after))
        return counts

    def log_feasibility(self, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """log F per vector: 0 where it has every capability ``observed`` shows used;
        elsewhere -inf, or with a misperception probability ``k`` times its log for the
        ``k`` steps only a glitch then explains (module docstring)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
        rate = self.likelihood.misperception
        if not rate or not self.likelihood.feasibility:
            return np.where(self.feasible(vectors, observed), 0.0, -np.inf)
        glitches = (~vectors).astype(float) @ self._sightings(observed, vectors.shape[1])
        # Odds against each: a vector with the capability explains the step unless it
        # was a glitch (1 - rate), one without only if it was (rate).
        return glitches * (np.log(rate) - np.log1p(-rate))

    def _used_along(self, trajectory) -> np.ndarray:
        """The capabilities ``trajectory`` proves used (the domain's answer, memoised:
        observations and predicted plans are asked about again and again)."""
        key = tuple(trajectory)
        with self._lock:
            known = self._used.get(key)
        if known is None:
            known = np.asarray(self._exercised_of(trajectory), dtype=bool).copy()
            with self._lock:
                self._used[key] = known
                while len(self._used) > 20_000:
                    self._used.pop(next(iter(self._used)))
        return known

    def feasible(self, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """F per vector: whether it has every capability ``observed`` proves."""
        proven = self.proven(observed, vectors.shape[1])
        return ~(proven[None, :] & ~vectors).any(axis=1)

    def explained_floor(self, observed: Sequence) -> float | None:
        """The log-likelihood at or above which a hypothesis counts as explaining a task
        (for reports): half its searches within epsilon. None: no absolute level."""
        return float(np.log(self.likelihood.lapse + (1 - self.likelihood.lapse) * 0.5))

    def search_distances(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        """(vectors, searches): each search's distance to the observation (for a plan
        set, its closest plan)."""
        columns = [np.asarray(e.distances(task, vectors, observed), dtype=float)
                   for e in self.evaluators]
        return np.stack(columns, axis=1)

    def log_likelihood(self, task, vectors: np.ndarray, observed: Sequence) -> np.ndarray:
        vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
        if not len(vectors):
            return np.zeros(0)
        log_f = self.log_feasibility(vectors, observed)
        logs = np.full(len(vectors), -np.inf)
        rows = np.flatnonzero(np.isfinite(log_f))
        if len(rows):
            distances = self.search_distances(task, vectors[rows], observed)
            logs[rows] = self.likelihood.log_values(distances, np.ones(len(rows), dtype=bool)) \
                + log_f[rows]
        return logs


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


def seeded_planners(planner, count: int) -> list:
    """The planner and up to ``count - 1`` twins searching with seeds of their own (none
    for a planner without a seed: a deterministic planner's searches would all agree)."""
    planners = [planner]
    for m in range(1, max(1, count)):
        twin = planner.with_seed(LIKELIHOOD_SEED_BASE + m)
        if twin is None:
            break
        planners.append(twin)
    return planners


# A domain file's `likelihood:` section: its keys and the estimator settings they set.
SECTION_KEYS = {'form': 'likelihood', 'lapse': 'lapse', 'bandwidth': 'bandwidth',
                'seeds': 'likelihood_seeds'}


def likelihood_section(entry, where: str) -> dict:
    """The estimator defaults a domain file's ``likelihood:`` section gives (``form``,
    ``lapse``, ``bandwidth``, ``seeds``), checked; ``where`` names the file in errors."""
    if entry is None:
        return {}
    if not isinstance(entry, dict):
        raise ConfigError(f'{where}: likelihood: expected a mapping of '
                          f'{", ".join(SECTION_KEYS)}, got {entry!r}')
    unknown = sorted(set(entry) - set(SECTION_KEYS))
    if unknown:
        raise ConfigError(f'{where}: likelihood: unknown keys {unknown}; known: '
                          f'{sorted(SECTION_KEYS)}')
    values = {}
    for key, value in entry.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == 'form':
            if value not in LIKELIHOODS:
                raise ConfigError(f'{where}: likelihood: form must be one of '
                                  f'{", ".join(LIKELIHOODS)}, got {value!r}')
        elif key == 'seeds':
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f'{where}: likelihood: seeds must be a whole number of at '
                                  f'least 1, got {value!r}')
        elif not number or (key == 'lapse' and not 0.0 <= value < 1.0) \
                or (key == 'bandwidth' and value < 0.0):
            bound = 'in [0, 1)' if key == 'lapse' else 'at least 0'
            raise ConfigError(f'{where}: likelihood: {key} must be a number {bound}, got '
                              f'{value!r}')
        values[SECTION_KEYS[key]] = value
    return values
