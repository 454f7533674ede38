"""CE-CM (approximate Bayesian computation over capability vectors) and its baselines.

All estimators share one interface: ``estimate`` (the vector the robot plans with),
``belief`` (a plain, saveable value) and ``update(task, observed_trajectory)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .domain import HUMAN, Task, TidyUpModel
from .errors import ConfigError
from .hypotheses import ProgressCallback

BELIEF_FORMAT = 'cecm_ros/capability_belief/1'


@dataclass(frozen=True)
class EstimatorSettings:
    """CE-CM's parameters; defaults are the paper's TidyUP settings."""

    samples: int = 500            # N, capability vectors drawn per task
    prior: float = 0.8            # P(c_i = 1) of the Bernoulli prior
    epsilon: float = 0.24         # accept when the trajectory distance is below this
    psi: float = 0.5              # estimate_i = theta_i > psi
    window: int | None = None     # forget samples from tasks older than this many
    decay: float | None = None    # or weigh a sample from k tasks ago by decay**k
    proposal: str = 'prior'       # draw samples from the prior, or from the belief
    proposal_floor: float = 0.05  # with 'belief': keep every P(c_i = 1) in [floor, 1-floor]

    def __post_init__(self):
        if self.samples < 1:
            raise ConfigError(f'samples must be at least 1, got {self.samples}')
        if not 0.0 <= self.prior <= 1.0:
            raise ConfigError(f'prior must lie in [0, 1], got {self.prior}')
        if not 0.0 < self.epsilon <= 1.0:
            raise ConfigError(f'epsilon must lie in (0, 1], got {self.epsilon}')
        if not 0.0 <= self.psi < 1.0:
            raise ConfigError(f'psi must lie in [0, 1), got {self.psi}')
        if self.window is not None and self.window < 1:
            raise ConfigError(f'window must be at least 1 task, got {self.window}')
        if self.decay is not None and not 0.0 < self.decay <= 1.0:
            raise ConfigError(f'decay must lie in (0, 1], got {self.decay}')
        if self.proposal not in ('prior', 'belief'):
            raise ConfigError(f"proposal must be 'prior' or 'belief', got {self.proposal!r}")
        if not 0.0 < self.proposal_floor < 0.5:
            raise ConfigError(f'proposal_floor must lie in (0, 0.5), got {self.proposal_floor}')
        if self.window is not None and self.decay is not None:
            raise ConfigError('choose either window or decay forgetting, not both')


@dataclass
class CapabilityBelief:
    """Everything an estimator knows: a plain value that can be saved and loaded.

    ``accepted`` holds every accepted sample (rows) with the index of the task that
    accepted it in ``accepted_task``; ``theta`` is derived from them (with forgetting).
    The pessimistic baseline keeps its observed capabilities in ``observed``.
    """

    method: str
    capability_names: list[str]
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    accepted: np.ndarray | None = None
    accepted_task: np.ndarray | None = None
    observed: np.ndarray | None = None
    tasks_seen: int = 0
    seed: int = 0

    def __post_init__(self):
        size = len(self.capability_names)
        if self.accepted is None:
            self.accepted = np.zeros((0, size), dtype=bool)
        if self.accepted_task is None:
            self.accepted_task = np.zeros(0, dtype=np.int64)
        if self.observed is None:
            self.observed = np.zeros(size, dtype=bool)

    def weights(self) -> np.ndarray:
        """Each accepted sample's weight under the forgetting setting.

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
        if self.method == 'optimistic':
            return np.ones(len(self.capability_names))
        if self.method == 'pessimistic':
            return self.observed.astype(float)
        weights = self.weights()
        if weights.sum() <= 0:
            return np.full(len(self.capability_names), self.settings.prior)
        return weights @ self.accepted / weights.sum()

    @property
    def estimate(self) -> np.ndarray:
        if self.method == 'pessimistic':
            return self.observed.copy()
        return self.theta > self.settings.psi

    @property
    def accepted_count(self) -> int:
        return int((self.weights() > 0).sum()) if self.method.startswith('cecm') else 0

    def to_dict(self) -> dict:
        return {
            'format': BELIEF_FORMAT, 'method': self.method,
            'capability_names': list(self.capability_names),
            'settings': asdict(self.settings), 'tasks_seen': self.tasks_seen,
            'seed': self.seed,
            'accepted': [''.join('1' if bit else '0' for bit in row) for row in self.accepted],
            'accepted_task': self.accepted_task.tolist(),
            'observed': ''.join('1' if bit else '0' for bit in self.observed),
            'theta': self.theta.round(6).tolist(),
            'estimate': [bool(b) for b in self.estimate],
        }

    @classmethod
    def from_dict(cls, data: dict) -> CapabilityBelief:
        if data.get('format') != BELIEF_FORMAT:
            raise ConfigError(f'not a capability belief (format {data.get("format")!r}, '
                              f'expected {BELIEF_FORMAT!r})')
        names = list(data['capability_names'])
        rows = data.get('accepted', [])
        if any(len(row) != len(names) or set(row) - {'0', '1'} for row in rows):
            raise ConfigError('belief has accepted samples of the wrong length or alphabet')
        accepted = np.array([[ch == '1' for ch in row] for row in rows], dtype=bool) \
            .reshape(len(rows), len(names))
        observed = np.array([ch == '1' for ch in data.get('observed', '0' * len(names))],
                            dtype=bool)
        return cls(method=data['method'], capability_names=names,
                   settings=EstimatorSettings(**data.get('settings', {})),
                   accepted=accepted,
                   accepted_task=np.array(data.get('accepted_task', []), dtype=np.int64),
                   observed=observed, tasks_seen=int(data.get('tasks_seen', 0)),
                   seed=int(data.get('seed', 0)))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> CapabilityBelief:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f'cannot load belief from {path}: {error}') from error


@dataclass(frozen=True)
class UpdateReport:
    task_id: str
    samples_evaluated: int
    samples_accepted: int
    updated: bool       # False when nothing was accepted and the belief stayed as it was
    message: str


class Estimator:
    """Common shape of CE-CM and the baselines."""

    method = 'base'

    def __init__(self, model: TidyUpModel, settings: EstimatorSettings | None = None,
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
        self.belief = belief or CapabilityBelief(self.method, list(model.catalog.names),
                                                 self.settings, seed=seed)

    @property
    def estimate(self) -> np.ndarray:
        return self.belief.estimate

    def update(self, task: Task, observed: Sequence[int],
               progress: ProgressCallback | None = None) -> UpdateReport:
        raise NotImplementedError


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
        used = observed_human_capabilities(self.model, observed)
        before = self.belief.observed.copy()
        self.belief.observed |= used
        self.belief.tasks_seen += 1
        gained = [self.model.catalog.names[i]
                  for i in np.flatnonzero(self.belief.observed & ~before)]
        return UpdateReport(task.task_id, 0, 0, bool(gained),
                            'newly seen: ' + (', '.join(gained) or 'nothing'))


class CecmEstimator(Estimator):
    """CE-CM, the paper's Algorithm 1 (see ``hypotheses`` for how plans are obtained)."""

    method = 'cecm'

    def __init__(self, model: TidyUpModel, evaluator, settings: EstimatorSettings | None = None,
                 seed: int = 0, belief: CapabilityBelief | None = None):
        super().__init__(model, settings, seed, belief)
        self.evaluator = evaluator

    def proposal_probabilities(self) -> np.ndarray:
        """P(c_i = 1) of the distribution the next task's samples are drawn from.

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
        """The N samples for the next task; seeded by (seed, tasks seen)."""
        rng = np.random.default_rng([self.belief.seed, self.belief.tasks_seen])
        size = (self.settings.samples, len(self.model.catalog))
        return rng.random(size) < self.proposal_probabilities()

    def update(self, task: Task, observed: Sequence[int],
               progress: ProgressCallback | None = None) -> UpdateReport:
        if len(observed) < 1:
            raise ConfigError(f'task {task.task_id}: the observed trajectory is empty')
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
        return UpdateReport(task.task_id, len(samples), len(accepted), bool(len(accepted)),
                            message)


def observed_human_capabilities(model: TidyUpModel, trajectory: Sequence[int]) -> np.ndarray:
    """Capabilities the partner provably used: a human transition that changed the state.

    For each step the pair of actions (robot, human) that explains the state change is
    found among the applicable ground actions; a step no pair explains is skipped.
    """
    used = np.zeros(len(model.catalog), dtype=bool)
    for before, after in zip(trajectory, trajectory[1:]):
        if before == after:
            continue
        robot = [None] + [a for a in model.actions if a.agent != HUMAN and a.applicable(before)]
        human = [a for a in model.actions if a.agent == HUMAN and a.applicable(before)]
        for h in human:
            middle = h.apply(before)
            if any((middle if r is None else r.apply(middle)) == after
                   for r in robot if r is None or r.applicable(middle)):
                if h.gate is not None:
                    used[h.gate] = True
                break
    return used


class CecmDivEstimator(CecmEstimator):
    """CE-CM-Div: CE-CM with a set of diverse plans per hypothesis (give it a
    :class:`~cecm_ros.core.hypotheses.DiversePlanEvaluator`)."""

    method = 'cecm_div'


ESTIMATORS = {'cecm': CecmEstimator, 'cecm_div': CecmDivEstimator,
              'optimistic': OptimisticEstimator, 'pessimistic': PessimisticEstimator}


def make_estimator(method: str, model: TidyUpModel, evaluator=None,
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


