"""CE-CM (inference over capability vectors from observed trajectories) and its baselines.

All estimators share one interface: ``estimate`` (the vector the robot plans with),
``belief`` (a plain, saveable value), ``hypotheses()`` (what it considers possible,
for choosing informative tasks) and ``update(task, observed_trajectory)``.

CE-CM infers in one of two ways (``EstimatorSettings.inference``):

* ``posterior`` (the default): particles that must explain every task seen, and a
  report of what the evidence has decided (``cecm_ros.core.inference``);
* ``abc``: the paper's approximate Bayesian computation, whose accepted samples are
  pooled over tasks. Two presets name its readings: ``paper`` (Algorithm 1 as
  published: samples from the prior, all tasks pooled) and ``sequential`` (samples
  from the current belief, only the last task's kept).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .domain import Domain, State, Task
from .errors import ConfigError
from .estimator_settings import DEFAULT_LIKELIHOOD, EstimatorSettings
from .hypotheses import ProgressCallback
from .inference import (
    CapabilityPrior,
    CapabilityReport,
    ParticlePosterior,
    describe_report,
)
from .likelihood import LikelihoodModel, likelihood_model, likelihood_names, seeded_planners
from .vectors import unique_rows
from .weighted_posterior import WeightedPosterior

BELIEF_FORMAT = 'cecm_ros/capability_belief/2'
OLDER_BELIEF_FORMATS = ('cecm_ros/capability_belief/1',)
# Vectors planned ahead at a time: a caller that stops planning ahead (an update is
# due) waits for at most this many hypotheses' plans.
AHEAD_CHUNK = 4
def alike_rows(catalog, live: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """One row per room of the kinds of capability that matter in every room (in TidyUP:
    move, pick, place), for the alike-rooms prior and the ``analogy`` rule; only the
    catalog's action and room labels are used, never the domain's PDDL."""
    rooms: dict[str, dict[str, int]] = {}
    for index, capability in enumerate(catalog.capabilities):
        if live[index]:
            rooms.setdefault(capability.room, {})[capability.action] = index
    if len(rooms) < 2:
        return ()
    kinds = sorted(set.intersection(*(set(kinds) for kinds in rooms.values())))
    return tuple(tuple(by_kind[kind] for kind in kinds) for by_kind in rooms.values()) \
        if kinds else ()


def make_posterior(prior: CapabilityPrior, live: np.ndarray, settings: EstimatorSettings,
                   names: Sequence[str], rows: Sequence[Sequence[int]]) -> ParticlePosterior:
    """The posterior these settings ask for: weighted under a graded likelihood, or the
    accept/reject one under the indicator."""
    if settings.weighted:
        return WeightedPosterior(prior, live, settings.likelihood_form(), settings.samples,
                                 settings.sweeps, settings.window, names, rows,
                                 settings.known_mass)
    return ParticlePosterior(prior, live, settings.epsilon, settings.samples, settings.sweeps,
                             settings.window, names, rows)


def _bits(vector) -> str:
    return ''.join('1' if bit else '0' for bit in vector)


def _unbits(text: str, size: int, what: str) -> np.ndarray:
    if len(text) != size or set(text) - {'0', '1'}:
        raise ConfigError(f'{what}: expected {size} digits 0/1, got {text!r}')
    return np.array([ch == '1' for ch in text], dtype=bool)


@dataclass
class CapabilityBelief:
    """Everything an estimator knows: a plain value that can be saved and loaded.

    ``abc`` keeps every accepted sample (rows) with the index of the task that accepted
    it in ``accepted_task``; ``theta`` is derived from them (with forgetting). The
    posterior keeps its particles and the evidence (task and observed trajectory of
    every task) in ``posterior``. The pessimistic baseline keeps its observed
    capabilities in ``observed``.
    """

    method: str
    capability_names: list[str]
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    # None is filled in by __post_init__ (empty for the catalogue's size).
    accepted: np.ndarray = None  # type: ignore[assignment]
    accepted_task: np.ndarray = None  # type: ignore[assignment]
    observed: np.ndarray = None  # type: ignore[assignment]
    tasks_seen: int = 0
    seed: int = 0
    posterior: ParticlePosterior | None = None
    last_accepted: int = 0   # samples (abc) or particles (posterior) that explained the last task

    def __post_init__(self):
        size = len(self.capability_names)
        if self.accepted is None:
            self.accepted = np.zeros((0, size), dtype=bool)
        if self.accepted_task is None:
            self.accepted_task = np.zeros(0, dtype=np.int64)
        if self.observed is None:
            self.observed = np.zeros(size, dtype=bool)

    @property
    def uses_posterior(self) -> bool:
        return self.posterior is not None

    def weights(self) -> np.ndarray:
        """Each accepted sample's weight under the forgetting setting (abc).

        Age counts the tasks that contributed samples since the sample's own task, so a
        task that accepts nothing leaves the belief exactly as it was.
        """
        contributing = np.unique(self.accepted_task)
        age = len(contributing) - 1 - np.searchsorted(contributing, self.accepted_task)
        if self.settings.window is not None:
            return (age < self.settings.window).astype(float)
        if self.settings.decay is not None:
            return self.settings.decay ** age.astype(float)
        return np.ones(len(self.accepted_task))

    @property
    def theta(self) -> np.ndarray:
        """Per-capability probability of being present."""
        if self.method in ('optimistic', 'qlearning'):
            return np.ones(len(self.capability_names))
        if self.method == 'pessimistic':
            return self.observed.astype(float)
        if self.posterior is not None:
            return self.posterior.theta()
        weights = self.weights()
        if weights.sum() <= 0:
            return np.full(len(self.capability_names), self.settings.prior)
        return weights @ self.accepted / weights.sum()

    @property
    def estimate(self) -> np.ndarray:
        if self.method == 'pessimistic':
            return self.observed.copy()
        if self.posterior is not None:
            return self.posterior.estimate(self.settings.undecided, self.settings.psi)
        return self.theta > self.settings.psi

    @property
    def report(self) -> list[CapabilityReport]:
        """What the evidence has decided per capability (the posterior only; else [])."""
        return list(self.posterior.report) if self.posterior is not None else []

    @property
    def accepted_count(self) -> int:
        """Samples or particles that explained the last task (abc: all kept samples)."""
        if self.posterior is not None:
            return self.last_accepted
        return int((self.weights() > 0).sum()) if self.method.startswith('cecm') else 0

    @property
    def hypotheses_count(self) -> int:
        """Distinct capability vectors the belief still holds possible."""
        if self.posterior is not None and self.posterior.particles is not None:
            return len(self.posterior.distinct()[0])
        if self.method.startswith('cecm'):
            kept = self.accepted[self.weights() > 0]
            return len(unique_rows(kept)) if len(kept) else 0
        return 1

    def describe(self) -> list[str]:
        """The evidence report in words (see :func:`inference.describe_report`)."""
        report = self.report
        return describe_report(self.capability_names, [r.status for r in report],
                               [r.confounded_with for r in report])

    # --------------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        data = {
            'format': BELIEF_FORMAT, 'method': self.method,
            'capability_names': list(self.capability_names),
            'settings': asdict(self.settings), 'tasks_seen': self.tasks_seen,
            'seed': self.seed, 'last_accepted': self.last_accepted,
            'accepted': [_bits(row) for row in self.accepted],
            'accepted_task': self.accepted_task.tolist(),
            'observed': _bits(self.observed),
            'theta': self.theta.round(6).tolist(),
            'estimate': [bool(b) for b in self.estimate],
        }
        if self.posterior is not None:
            posterior = self.posterior
            data['posterior'] = {
                'live': _bits(posterior.live),
                'groups': [list(g) for g in posterior.prior.groups],
                'patterns': [list(row) for row in posterior.prior.patterns],
                'rows': [list(row) for row in posterior.rows],
                'tasks': [_evidence_dict(item.task, item.observed)
                          for item in posterior.evidence],
                **posterior.state(),
            }
        return data

    @classmethod
    def from_dict(cls, data: dict) -> CapabilityBelief:
        """A belief from its dict; format 1 (the pooled ABC belief) is migrated."""
        if not isinstance(data, dict):
            raise ConfigError('not a capability belief (expected a JSON object)')
        fmt = data.get('format')
        if fmt in OLDER_BELIEF_FORMATS:
            data = {**data, 'settings': {'inference': 'abc', **data.get('settings', {})}}
        elif fmt != BELIEF_FORMAT:
            raise ConfigError(f'not a capability belief (format {fmt!r}, expected '
                              f'{BELIEF_FORMAT!r})')
        names = list(data['capability_names'])
        size = len(names)
        rows = data.get('accepted', [])
        accepted = np.array([_unbits(r, size, 'accepted sample') for r in rows],
                            dtype=bool).reshape(len(rows), size)
        observed = _unbits(data.get('observed', '0' * size), size, 'observed')
        saved = dict(data.get('settings', {}))
        if 'posterior' in data and 'likelihood' not in saved:
            saved['likelihood'] = 'indicator'   # learned before the graded likelihood
        settings = EstimatorSettings.from_dict(saved)
        belief = cls(method=str(data['method']), capability_names=names, settings=settings,
                     accepted=accepted,
                     accepted_task=np.array(data.get('accepted_task', []), dtype=np.int64),
                     observed=observed, tasks_seen=int(data.get('tasks_seen', 0)),
                     seed=int(data.get('seed', 0)),
                     last_accepted=int(data.get('last_accepted', 0)))
        if len(belief.accepted_task) != len(accepted):
            raise ConfigError('belief has accepted samples and task indices of different '
                              'lengths')
        if 'posterior' in data:
            state = data['posterior']
            live = _unbits(state['live'], size, 'posterior live mask')
            prior = CapabilityPrior(size, settings.prior,
                                    tuple(tuple(int(i) for i in g)
                                          for g in state.get('groups', [])),
                                    settings.coupling,
                                    tuple(tuple(int(i) for i in row)
                                          for row in state.get('patterns', [])),
                                    settings.alike_rooms)
            posterior = make_posterior(prior, live, settings, names, state.get('rows', ()))
            posterior.restore(state, [_evidence_from_dict(t) for t in state.get('tasks', [])])
            belief.posterior = posterior
        return belief

    def save(self, path: str | Path) -> None:
        """Write-fsync-rename, so that a crash mid-write never leaves a broken file."""
        from .storage import write_atomically

        write_atomically(Path(path), json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> CapabilityBelief:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ConfigError(f'cannot load belief from {path}: {error}') from error

    def copy(self) -> CapabilityBelief:
        """An independent copy that shares only memoised distances (facts, not state)."""
        posterior, self.posterior = self.posterior, None
        try:
            twin = copy.deepcopy(self)
        finally:
            self.posterior = posterior
        if posterior is not None:
            twin.posterior = posterior.copy()
        return twin


def plain_state(state):
    """A state as plain Python values, as a domain may hold it: an int (a bitmask of
    facts), a tuple of numbers and names (Overcooked's), or a frozenset of atoms (a
    small symbolic domain's); anything else hashable is kept as it is."""
    if isinstance(state, (bool, np.bool_)):
        return bool(state)
    if isinstance(state, (int, np.integer)):
        return int(state)
    if isinstance(state, (float, np.floating)):
        return float(state)
    if isinstance(state, (frozenset, set)):
        return frozenset(plain_state(x) for x in state)
    if isinstance(state, (tuple, list)):
        return tuple(plain_state(x) for x in state)
    return state


def encode_state(state) -> str | list | dict:
    """JSON for a state: a bitmask as hex text (the format beliefs were first saved in),
    a tuple as a list, a set of atoms as ``{"set": [sorted atoms]}``."""
    state = plain_state(state)
    if isinstance(state, int):
        return format(state, 'x')
    if isinstance(state, tuple):
        return list(state)
    if isinstance(state, frozenset) and all(isinstance(x, str) for x in state):
        return {'set': sorted(state)}
    raise ConfigError(f'a state of type {type(state).__name__} cannot be saved in a belief '
                      '(an int, a tuple of numbers and names or a frozenset of atoms can)')


def decode_state(value):
    if isinstance(value, str):
        return int(value, 16)
    if isinstance(value, list):
        return plain_state(value)
    if isinstance(value, dict) and isinstance(value.get('set'), list):
        return frozenset(str(x) for x in value['set'])
    raise TypeError('a saved state must be hex text, a list or {"set": [...]}, got '
                    f'{type(value).__name__}')


def _evidence_dict(task: Task, observed: Sequence) -> dict:
    return {'task_id': task.task_id, 'initial': sorted(task.initial), 'goal': sorted(task.goal),
            'observed': [encode_state(state) for state in observed]}


def _evidence_from_dict(data: dict) -> tuple[Task, tuple]:
    try:
        task = Task(str(data['task_id']), frozenset(data['initial']), frozenset(data['goal']))
        observed = tuple(decode_state(state) for state in data['observed'])
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f'malformed evidence entry in the belief: {error}') from None
    return task, observed


@dataclass(frozen=True)
class UpdateReport:
    task_id: str
    samples_evaluated: int
    samples_accepted: int
    updated: bool       # False when nothing was accepted and the belief stayed as it was
    message: str
    changed: bool = False   # the partner seems to have changed: earlier tasks set aside


class Estimator:
    """Common shape of CE-CM and the baselines."""

    method = 'base'

    def __init__(self, model: Domain, settings: EstimatorSettings | None = None,
                 seed: int = 0, belief: CapabilityBelief | None = None):
        self.model = model
        self.settings = settings or EstimatorSettings()
        if belief is not None:
            if belief.capability_names != list(model.catalog.names):
                raise ConfigError('the belief was learned over other capabilities: '
                                  f'{belief.capability_names}')
            if belief.method != self.method:
                raise ConfigError(f'the belief belongs to method {belief.method!r}, '
                                  f'not {self.method!r}')
            self.settings = belief.settings
            if belief.posterior is not None and not belief.posterior.rows:
                # Saved before rooms were kept with the belief: they follow from the catalog.
                belief.posterior.rows = alike_rows(model.catalog, belief.posterior.live)
        self.belief = belief or CapabilityBelief(self.method, list(model.catalog.names),
                                                 self.settings, seed=seed)

    @property
    def estimate(self) -> np.ndarray:
        return self.belief.estimate

    def hypotheses(self) -> tuple[np.ndarray, np.ndarray]:
        """The capability vectors this estimator holds possible and their weights."""
        return self.estimate[None, :], np.ones(1)

    def update(self, task: Task, observed: Sequence[State],
               progress: ProgressCallback | None = None) -> UpdateReport:
        raise NotImplementedError

    def plan_ahead(self, task: Task, observed: Sequence[State],
                   stop: Callable[[], bool] | None = None) -> bool:
        """Make now, while the team still works on ``task``, plans its update will ask
        for (``observed``: its states so far); whether it got to the end (``stop``,
        asked between a few plans at a time, cuts it short). The belief is not touched;
        the update finds the plans in the planner's memory. Nothing to plan here."""
        return True


class OptimisticEstimator(Estimator):
    """Assumes a fully capable partner and never learns."""

    method = 'optimistic'

    def update(self, task, observed, progress=None) -> UpdateReport:
        self.belief.tasks_seen += 1
        return UpdateReport(task.task_id, 0, 0, False, 'optimistic: nothing to learn')


class PessimisticEstimator(Estimator):
    """A capability counts only once an observed transition has used it (cumulative OR)."""

    method = 'pessimistic'

    def update(self, task, observed, progress=None) -> UpdateReport:
        used = self.model.exercised_capabilities(observed)
        before = self.belief.observed.copy()
        self.belief.observed |= used
        self.belief.tasks_seen += 1
        gained = [self.model.catalog.names[i]
                  for i in np.flatnonzero(self.belief.observed & ~before)]
        return UpdateReport(task.task_id, 0, 0, bool(gained),
                            'newly seen: ' + (', '.join(gained) or 'nothing'))


class CecmEstimator(Estimator):
    """CE-CM (see ``hypotheses`` for how plans are obtained, ``inference`` for the
    posterior and the module docstring for the two ways of inferring)."""

    method = 'cecm'

    def __init__(self, model: Domain, evaluator, settings: EstimatorSettings | None = None,
                 seed: int = 0, belief: CapabilityBelief | None = None):
        super().__init__(model, (settings or EstimatorSettings()).for_domain(model), seed,
                         belief)
        self.evaluator = evaluator
        self.likelihood_model = self._likelihood_model(evaluator)
        if self.settings.inference == 'posterior' and self.belief.posterior is None:
            if self.belief.tasks_seen or len(self.belief.accepted):
                raise ConfigError('this belief was learned with abc inference; it cannot '
                                  'continue as a posterior')
            self.belief.posterior = self._new_posterior()
            self.belief.posterior.start(np.random.default_rng([self.belief.seed, 0]))
        elif self.settings.inference == 'abc' and self.belief.posterior is not None:
            raise ConfigError('this belief is a posterior; it cannot continue with abc')

    def _likelihood_model(self, evaluator) -> LikelihoodModel | None:
        """The graded likelihood's model: the evaluator, and as many searches of other
        seeds as ``likelihood_seeds`` asks for where the planner has a seed."""
        if not self.settings.weighted:
            return None
        evaluators = [evaluator]
        planner = getattr(evaluator, 'planner', None)
        kind = likelihood_model(self.settings.likelihood or DEFAULT_LIKELIHOOD['likelihood'])
        if planner is not None and kind.extra_searches \
                and (self.settings.likelihood_seeds or 1) > 1:
            from .hypotheses import evaluator_for

            # The same kind of evaluator on each twin (CE-CM-Div's with its set rules).
            diversity = getattr(evaluator, 'diversity', None) if self.method == 'cecm_div' \
                else None
            evaluators += [evaluator_for(self.method, twin, diversity) for twin in
                           seeded_planners(planner, self.settings.likelihood_seeds or 1)[1:]]
        return kind.for_domain(self.settings.likelihood_form(), evaluators, self.model)

    def _new_posterior(self) -> ParticlePosterior:
        settings, catalog = self.settings, self.model.catalog
        live = ~self.model.inert_mask
        # Coupling groups: each room's capabilities that can matter at all.
        groups = tuple(g for g in (tuple(i for i in group if live[i])
                                   for group in catalog.groups()) if len(g) > 1)
        rows = alike_rows(catalog, live)
        prior = CapabilityPrior(len(catalog), settings.prior,
                                groups if settings.coupling > 0 else (), settings.coupling,
                                rows if settings.alike_rooms > 0 else (), settings.alike_rooms)
        return make_posterior(prior, live, settings, catalog.names, rows)

    def hypotheses(self) -> tuple[np.ndarray, np.ndarray]:
        belief = self.belief
        if belief.posterior is not None:
            return belief.posterior.distinct()
        weights = belief.weights()
        if weights.sum() > 0:
            vectors, inverse = unique_rows(belief.accepted, return_inverse=True)
            mass = np.bincount(inverse.ravel(), weights=weights, minlength=len(vectors))
            return vectors, mass / mass.sum()
        samples = self.draw_samples()
        return samples, np.full(len(samples), 1.0 / len(samples))

    def proposal_probabilities(self) -> np.ndarray:
        """P(c_i = 1) of the distribution the next task's samples are drawn from (abc).

        The paper draws from the fixed Bernoulli prior. With ``proposal='belief'`` the
        samples come from the current belief instead (kept away from 0 and 1 so that
        every hypothesis can still be drawn): a sequential variant in which what earlier
        tasks established carries into the samples of later ones.
        """
        size = len(self.model.catalog)
        if self.settings.proposal == 'prior' or self.belief.accepted_count == 0:
            return np.full(size, self.settings.prior)
        floor = self.settings.proposal_floor
        return np.clip(self.belief.theta, floor, 1.0 - floor)

    def draw_samples(self) -> np.ndarray:
        """The N samples for the next task (abc); seeded by (seed, tasks seen)."""
        rng = np.random.default_rng([self.belief.seed, self.belief.tasks_seen])
        size = (self.settings.samples, len(self.model.catalog))
        return rng.random(size) < self.proposal_probabilities()

    def update(self, task: Task, observed: Sequence[State],
               progress: ProgressCallback | None = None) -> UpdateReport:
        """One task's update; on any error the belief stays exactly as it was."""
        if len(observed) < 1:
            raise ConfigError(f'task {task.task_id}: the observed trajectory is empty')
        if self.belief.posterior is not None:
            return self._update_posterior(task, observed, progress)
        samples = self.draw_samples()
        distances = self.evaluator.distances(task, samples, observed, progress)
        accepted = samples[distances < self.settings.epsilon]
        belief = self.belief
        if len(accepted):
            belief.accepted = np.vstack([belief.accepted, accepted])
            belief.accepted_task = np.concatenate(
                [belief.accepted_task, np.full(len(accepted), belief.tasks_seen)])
            message = f'accepted {len(accepted)} of {len(samples)} samples'
        else:
            message = (f'no sample of {len(samples)} came within epsilon='
                       f'{self.settings.epsilon:g}; belief unchanged')
        belief.tasks_seen += 1
        belief.last_accepted = len(accepted)
        return UpdateReport(task.task_id, len(samples), len(accepted), bool(len(accepted)),
                            message)

    def plan_ahead(self, task: Task, observed: Sequence[State],
                   stop: Callable[[], bool] | None = None) -> bool:
        # What the update asks for, in its order: the distinct particles on this task,
        # then the change test's fresh partners on it (drawn from the update's own
        # stream, so the same ones), then those on the task before (the two-task test,
        # asked only now and then: planned last); a fresh partner that lacks a capability
        # the states prove is never planned by the update, nor here. Only a graded
        # likelihood's model plans ahead (the accept/reject one is replayed bit for bit,
        # so it keeps to the update's plans). A few vectors at a time, so that ``stop``
        # is heard soon.
        belief, model = self.belief, self.likelihood_model
        posterior = belief.posterior
        if posterior is None or model is None or posterior.particles is None:
            return True
        states = tuple(plain_state(s) for s in observed)
        work = [(task, states, posterior.particles)]
        earlier = posterior.active
        if earlier and isinstance(posterior, WeightedPosterior):
            fresh = posterior.change_test_draws(self._update_rng(belief))
            proven = model.proven(states, posterior.prior.size) & posterior.live
            fresh = fresh[~(proven[None, :] & ~fresh).any(axis=1)]
            work.append((task, states, fresh))
            previous = earlier[-1]
            proven = proven | posterior.proven_by(previous)
            work.append((previous.task, previous.observed,
                         fresh[~(proven[None, :] & ~fresh).any(axis=1)]))
        for on_task, seen, vectors in work:
            if not len(vectors):
                continue
            vectors = vectors[np.sort(unique_rows(vectors, return_index=True)[1])]
            for start in range(0, len(vectors), AHEAD_CHUNK):
                if stop is not None and stop():
                    return False
                model.plan_ahead(on_task, vectors[start:start + AHEAD_CHUNK], seen)
        return True

    def _update_rng(self, belief: CapabilityBelief | None = None) -> np.random.Generator:
        """The stream of ``belief``'s next update (the same one planning ahead names its
        draws from)."""
        belief = self.belief if belief is None else belief
        return np.random.default_rng([belief.seed, belief.tasks_seen + 1])

    def _update_posterior(self, task, observed, progress) -> UpdateReport:
        self.model.validate_task(task)
        for step, state in enumerate(observed):
            try:
                self.model.check_state(state)
            except ConfigError as error:
                raise ConfigError(f'task {task.task_id}: observed state {step}: '
                                  f'{error}') from None
        updated = self.belief.copy()
        rng = self._update_rng()
        assert updated.posterior is not None   # CE-CM with the posterior has one
        result = updated.posterior.update(task, tuple(plain_state(s) for s in observed),
                                          self.likelihood_model or self.evaluator, rng,
                                          progress)
        updated.tasks_seen += 1
        updated.last_accepted = result.survivors
        self.belief = updated
        return UpdateReport(task.task_id, self.settings.samples, result.survivors,
                            result.explained, result.message, result.changed)


class CecmDivEstimator(CecmEstimator):
    """CE-CM-Div: CE-CM with a set of diverse plans per hypothesis (give it a
    :class:`~cecm_ros.core.hypotheses.DiversePlanEvaluator`). Under a likelihood that
    compares with one plan per hypothesis the sets would be made and never read, so such
    a likelihood is refused (those whose class declares ``reads_plan_sets`` read them)."""

    method = 'cecm_div'

    def __init__(self, model: Domain, evaluator, settings: EstimatorSettings | None = None,
                 seed: int = 0, belief: CapabilityBelief | None = None):
        chosen = (belief.settings if belief is not None
                  else (settings or EstimatorSettings())).for_domain(model)
        readers = likelihood_names(reads_plan_sets=True)
        if chosen.weighted and chosen.likelihood not in readers:
            raise ConfigError(
                f'CE-CM-Div compares what the team did with a set of plans per hypothesis, '
                f'but the {chosen.likelihood} likelihood'
                + (f' ({model.name}\'s default)' if (settings is None or
                                                      settings.likelihood is None) else '')
                + ' compares with one plan; choose a likelihood that reads the sets: '
                + ', '.join(readers) + ' (--likelihood)')
        super().__init__(model, evaluator, settings, seed, belief)


class QLearningBaseline(OptimisticEstimator):
    """The optimistic baseline of a domain with a learned policy (it plans with
    ``Domain.baseline_planner``): a fully capable partner, never learning."""

    method = 'qlearning'


ESTIMATORS: dict[str, type[Estimator]] = {'cecm': CecmEstimator, 'cecm_div': CecmDivEstimator,
              'optimistic': OptimisticEstimator, 'pessimistic': PessimisticEstimator,
              'qlearning': QLearningBaseline}


def make_estimator(method: str, model: Domain, evaluator=None,
                   settings: EstimatorSettings | None = None, seed: int = 0,
                   belief: CapabilityBelief | None = None) -> Estimator:
    try:
        cls = ESTIMATORS[method]
    except KeyError:
        raise ConfigError(f'unknown method {method!r}; methods: {", ".join(ESTIMATORS)}') \
            from None
    if issubclass(cls, CecmEstimator):
        if evaluator is None:
            raise ConfigError('CE-CM needs a hypothesis evaluator')
        return cls(model, evaluator, settings, seed, belief)
    return cls(model, settings, seed, belief)


