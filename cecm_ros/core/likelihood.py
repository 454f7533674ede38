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

The likelihoods are registered by name (:func:`likelihood_model`): the kernel and the
indicator here, ``stepwise`` and ``fitted_stepwise`` in :mod:`.likelihood_stepwise`,
``usage`` in :mod:`.likelihood_usage`. Each class declares what it takes (its lapse rule,
whether it reads plan sets or weighs a misperception), and the settings, the CLI, sweeps
and the node read those declarations instead of lists of names.

Nothing here knows a domain: the trajectories come from hypothesis evaluators
(:mod:`~cecm_ros.core.hypotheses`) and the proven capabilities from
``Domain.exercised_capabilities``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from typing import ClassVar

import numpy as np

from .errors import ConfigError

# How a likelihood takes the ``lapse`` setting (LikelihoodModel.lapse_rule): any value in
# [0, 1); a slip's chance, in (0, 0.5), so that a slip is always the less likely outcome;
# none (the hard accept/reject: 0 whatever is set); or inferred (the setting is unused).
LAPSE_RULES = ('any', 'slip', 'none', 'fitted')
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
        """The form of the registered likelihood ``kind`` with these settings, checked."""
        return likelihood_model(kind).form(epsilon, lapse, bandwidth, misperception)

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

    # What a registered likelihood declares about itself (register_likelihood): the name
    # the settings, the CLI and sweeps use for it, one line of help, how it takes the lapse
    # (LAPSE_RULES), whether it reads CE-CM-Div's plan sets, whether a misperception
    # probability softens its feasibility term, and whether it uses the extra seeded
    # searches of ``likelihood_seeds`` (else only the robot's own).
    name: ClassVar[str] = ''
    summary: ClassVar[str] = ''
    lapse_rule: ClassVar[str] = 'any'
    reads_plan_sets: ClassVar[bool] = False
    softens_misperception: ClassVar[bool] = True
    extra_searches: ClassVar[bool] = True

    @classmethod
    def check_settings(cls, lapse: float | None, misperception: float) -> None:
        """Raise ConfigError when this likelihood cannot take these settings (None: the
        domain's value, checked when it is filled in)."""
        if misperception and not cls.softens_misperception:
            raise ConfigError(f'misperception {misperception:g}: the {cls.name} likelihood '
                              f'cannot weigh a glitch; use one of '
                              f'{", ".join(likelihood_names(softens_misperception=True))}')
        if lapse is not None and cls.lapse_rule == 'slip' and not 0.0 < lapse < 0.5:
            raise ConfigError(f'the {cls.name} likelihood needs a lapse in (0, 0.5), got '
                              f'{lapse}')

    @classmethod
    def form(cls, epsilon: float, lapse: float, bandwidth: float,
             misperception: float = 0.0) -> Likelihood:
        """The likelihood's parameters for these settings (refused as check_settings says)."""
        cls.check_settings(lapse, misperception)
        if cls.lapse_rule == 'none':
            return Likelihood(epsilon, 0.0, 0.0, feasibility=False)
        return Likelihood(epsilon, lapse, bandwidth, feasibility=True,
                          misperception=misperception)

    @classmethod
    def for_domain(cls, likelihood: Likelihood, evaluators: Sequence, domain):
        """The model on ``evaluators`` with what it needs of ``domain``."""
        return cls(likelihood, evaluators, domain.exercised_capabilities)

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


class KernelLikelihoodModel(LikelihoodModel):
    """The ABC kernel with a lapse: the share of a hypothesis's searches whose trajectory
    lies within epsilon of the observation (module docstring)."""

    name = 'kernel'
    summary = 'a lapse keeps a hypothesis whose plans miss a task'
    reads_plan_sets = True


class IndicatorLikelihoodModel(LikelihoodModel):
    """The hard accept/reject of earlier versions: a hypothesis explains every task or is
    dropped (no lapse, no shoulder, no feasibility term)."""

    name = 'indicator'
    summary = 'explain every task or be dropped (the accept/reject of earlier versions)'
    lapse_rule = 'none'
    reads_plan_sets = True
    softens_misperception = False


# The likelihoods of the package, by name: module and class, imported when first asked
# for. Another is one module with a LikelihoodModel subclass, named here, registered with
# register_likelihood, or installed under the entry-point group below.
BUILT_IN_LIKELIHOODS = {
    'kernel': ('cecm_ros.core.likelihood', 'KernelLikelihoodModel'),
    'stepwise': ('cecm_ros.core.likelihood_stepwise', 'StepwiseLikelihoodModel'),
    'fitted_stepwise': ('cecm_ros.core.likelihood_stepwise', 'FittedLapseLikelihoodModel'),
    'usage': ('cecm_ros.core.likelihood_usage', 'UsageLikelihoodModel'),
    'indicator': ('cecm_ros.core.likelihood', 'IndicatorLikelihoodModel'),
}
ENTRY_POINT_GROUP = 'cecm_ros.likelihoods'
_registered: dict[str, type[LikelihoodModel]] = {}


def register_likelihood(model: type[LikelihoodModel]) -> type[LikelihoodModel]:
    """Make ``model`` a likelihood the settings may name (usable as a class decorator)."""
    if not (isinstance(model, type) and issubclass(model, LikelihoodModel)):
        raise ConfigError(f'{model!r} is not a LikelihoodModel subclass')
    name = model.name
    if not name or not name.isidentifier():
        raise ConfigError(f'{model.__name__}: a likelihood needs a name that is an '
                          f'identifier, got {name!r}')
    if model.lapse_rule not in LAPSE_RULES:
        raise ConfigError(f'{model.__name__}: lapse_rule must be one of '
                          f'{", ".join(LAPSE_RULES)}, got {model.lapse_rule!r}')
    known = _registered.get(name)
    if name in BUILT_IN_LIKELIHOODS or (known is not None and known is not model):
        raise ConfigError(f'the likelihood name {name!r} is taken')
    _registered[name] = model
    return model


@cache
def _entry_points() -> dict[str, metadata.EntryPoint]:
    """The installed plug-ins (read once: what is installed does not change while a
    process runs, and the settings ask on every check)."""
    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:   # a broken installed distribution must not hide the built-ins
        return {}
    return {entry.name: entry for entry in found if entry.name not in BUILT_IN_LIKELIHOODS}


def likelihood_model(name: str) -> type[LikelihoodModel]:
    """The model class of the likelihood called ``name``."""
    if name in BUILT_IN_LIKELIHOODS:
        module, attribute = BUILT_IN_LIKELIHOODS[name]
        return getattr(importlib.import_module(module), attribute)
    if name in _registered:
        return _registered[name]
    entry = _entry_points().get(name) if isinstance(name, str) else None
    if entry is None:
        raise ConfigError(f'unknown likelihood {name!r}; choose one of '
                          f'{", ".join(likelihood_names())}')
    try:
        model = entry.load()
    except Exception as error:
        raise ConfigError(f'the likelihood {name!r} ({entry.value}, entry point of '
                          f'{ENTRY_POINT_GROUP}) cannot be loaded: {error}') from error
    if not (isinstance(model, type) and issubclass(model, LikelihoodModel)) \
            or model.name != name:
        raise ConfigError(f'the likelihood {name!r} ({entry.value}) is not a '
                          f'LikelihoodModel subclass named {name!r}')
    return register_likelihood(model)


def likelihood_names(**having) -> tuple[str, ...]:
    """Every likelihood's name, the built-in ones first; with ``having`` (e.g.
    ``reads_plan_sets=True``), those whose class declares those values."""
    names = [*BUILT_IN_LIKELIHOODS, *_registered, *(n for n in _entry_points()
                                                     if n not in _registered)]
    if having:
        names = [n for n in names if all(getattr(likelihood_model(n), key) == value
                                          for key, value in having.items())]
    return tuple(names)


def likelihood_help() -> str:
    """One line per likelihood for a help text: its name and summary."""
    return '; '.join(f"'{name}' ({likelihood_model(name).summary})"
                     for name in likelihood_names())


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
