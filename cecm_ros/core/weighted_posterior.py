"""The posterior over capability vectors under a graded likelihood: weighted particles.

After tasks ``1..n`` the belief approximates

    P(c | obs_1..n)  proportional to  prior(c) * prod_j P(obs_j | c)

with the likelihood of :mod:`~cecm_ros.core.likelihood`. Unlike the accept/reject
posterior (:class:`~cecm_ros.core.inference.ParticlePosterior`), a hypothesis that fails
to explain one task is down-weighted, not dropped: the partner may have searched with
another seed, slipped, or preferred another way of doing the same work.

Sequential Monte Carlo with weights (Chopin's IBIS): each task multiplies every particle's
weight by its likelihood; when the effective sample size falls below half the particles
they are resampled (systematic), and Metropolis moves whose acceptance ratio is the
posterior ratio (prior times every task's likelihood, times the proposal ratio) keep the
weighted particles a sample of the posterior. A proposal that contradicts a proven
capability is rejected without planning, and the others stop being evaluated as soon as
the remaining tasks can no longer make them acceptable.

A partner may change (tires, hurts a hand): each task after the first is asked whether a
partner drawn afresh from the prior explains it better than the belief so far does, by
the Bayes factor of "a new partner since this task" (the prior's predictive of this task
alone, estimated from as many prior draws as there are particles, drawn from a stream of
their own) against "the same partner" (the posterior's predictive), with a prior
probability of a change :data:`CHANGE_HAZARD` per task; and, when that one does not
pass but the task still favours a new partner and its factor and the task before's add
up to within :data:`PAIR_SLACK` of the threshold, of "a new partner since the task
before" against the same partner for the two tasks together (a change whose first task
the old belief still partly explains). When
the change is more likely, the tasks before it (and what they proved) are set aside, the
particles are the prior draws weighed by the tasks since, and the update says so.

What the evidence has decided is read from Rao-Blackwellised marginals: for each of the
most probable hypotheses the exact conditional probability of every capability given the
others (its single change is evaluated on every task), averaged under the weights. A
capability is known present when a partner transition proved it, or when that marginal
reaches ``known_mass``; known absent when it falls to ``1 - known_mass``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .errors import ConfigError
from .inference import (
    INERT,
    KNOWN_ABSENT,
    KNOWN_PRESENT,
    NEVER_EXERCISED,
    SUPPORT_START,
    UNDECIDED,
    CapabilityPrior,
    CapabilityReport,
    Evidence,
    ParticlePosterior,
    PosteriorUpdate,
    ProgressCallback,
    _log_bernoulli,
    _task_name,
    memoised,
)
from .likelihood import Likelihood, LikelihoodModel
from .vectors import unique_rows

# Resample when the effective sample size falls below this share of the particles.
RESAMPLE_BELOW = 0.5
# Log-likelihood below a hypothesis's at which its single change stops being evaluated.
NEGLIGIBLE = 25.0
# The two-task change test is asked only when the two tasks' own factors add up to within
# this (log) of the threshold: the two together are about their sum (module docstring).
PAIR_SLACK = 1.0
# The prior probability that the partner changed before a given task (module docstring).
CHANGE_HAZARD = 0.05


class WeightedPosterior(ParticlePosterior):
    """Weighted resample-move particles under a graded likelihood (module docstring)."""

    def __init__(self, prior: CapabilityPrior, live: np.ndarray, likelihood: Likelihood,
                 particles: int = 500, sweeps: int = 4, window: int | None = None,
                 names: Sequence[str] | None = None, rows: Sequence[Sequence[int]] = (),
                 known_mass: float = 0.99):
        super().__init__(prior, live, likelihood.epsilon, particles, sweeps, window, names,
                         rows)
        if not 0.5 < known_mass < 1.0:
            raise ConfigError(f'known_mass must lie in (0.5, 1), got {known_mass}')
        self.likelihood = likelihood
        self.known_mass = known_mass
        self.log_weights: np.ndarray | None = None
        self._loglik: dict[int, dict[bytes, float]] = {}
        self._proven: dict[int, np.ndarray] = {}
        self._marginals: np.ndarray | None = None
        # Per active task, its predictive log-likelihood when it came (the first task's
        # is the prior's), and the Bayes factor of a change then (nan: not tested).
        self.surprise: list[float] = []
        self.change_factors: list[float] = []
        self.changes: list[str] = []    # the tasks before which the partner changed

    def copy(self) -> WeightedPosterior:
        twin = copy.copy(self)
        twin.particles = None if self.particles is None else self.particles.copy()
        twin.log_weights = None if self.log_weights is None else self.log_weights.copy()
        twin.evidence = [replace(item) for item in self.evidence]
        twin.report = list(self.report)
        twin.support = None
        twin._loglik = dict(self._loglik)
        twin._proven = dict(self._proven)
        twin._marginals = None if self._marginals is None else self._marginals.copy()
        twin._distances, twin._rejections = {}, {}
        twin.surprise = list(self.surprise)
        twin.change_factors = list(self.change_factors)
        twin.changes = list(self.changes)
        return twin

    # ------------------------------------------------------------------ queries
    def start(self, rng: np.random.Generator) -> None:
        super().start(rng)
        self.log_weights = np.zeros(self.count)

    def weights(self) -> np.ndarray:
        """The particles' normalised weights."""
        if self.log_weights is None:
            return np.full(self.count, 1.0 / self.count)
        finite = np.isfinite(self.log_weights)
        shifted = np.where(finite, self.log_weights - self.log_weights[finite].max(), -np.inf)
        weights = np.exp(shifted)
        return weights / weights.sum()

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        vectors, inverse = unique_rows(self._particles(), return_inverse=True)
        mass = np.bincount(inverse.ravel(), weights=self.weights(), minlength=len(vectors))
        keep = mass > 0
        return vectors[keep], mass[keep] / mass[keep].sum()

    def effective_size(self) -> float:
        weights = self.weights()
        return float(1.0 / np.sum(weights ** 2))

    def proven(self) -> np.ndarray:
        """Capabilities some active task proves the partner has."""
        proven = np.zeros(self.prior.size, dtype=bool)
        for item in self.active:
            proven |= self._proven.get(item.id, False)
        return proven & self.live

    def theta(self) -> np.ndarray:
        mean = self.prior.mean()
        if self.particles is None:
            return mean
        theta = self._marginals if self._marginals is not None else \
            np.clip(self.weights() @ self._particles(), 0.0, 1.0)
        keep = ~self.live
        if not self.prior.coupled and len(self.report) == self.prior.size:
            keep |= np.array([entry.status == NEVER_EXERCISED for entry in self.report])
        return np.where(keep, mean, theta)

    def _most_probable(self, estimate: np.ndarray, undecided: np.ndarray) -> np.ndarray:
        """The undecided capabilities of the hypothesis with the most posterior mass."""
        vectors, mass = self.distinct()
        return vectors[int(np.argmax(mass)), undecided]

    # ------------------------------------------------------------ likelihoods
    def _task_terms(self, model: LikelihoodModel, item: Evidence,
                    vectors: np.ndarray) -> np.ndarray:
        """The task's terms per vector (its log-likelihood, for an additive model)."""
        return memoised(self._loglik.setdefault(item.id, {}), vectors,
                        lambda fresh: model.task_terms(item.task, fresh, item.observed))

    def _loglik_of(self, model: LikelihoodModel, vectors: np.ndarray,
                   evidence: Sequence[Evidence] | None = None,
                   floor: np.ndarray | None = None) -> np.ndarray:
        """The tasks' log-likelihood per vector (the sum of theirs, or what the model
        makes of their terms); -inf without planning for a vector lacking a proven
        capability. With ``floor`` (one value per vector) a vector stops being evaluated
        once its log-likelihood so far falls below it (a Metropolis proposal that can no
        longer be accepted: another task never raises it)."""
        evidence = self.active if evidence is None else list(evidence)
        vectors = np.atleast_2d(vectors)
        terms = np.zeros(len(vectors))
        proven = np.zeros(self.prior.size, dtype=bool)
        for item in evidence:
            proven |= self._proven.get(item.id, False)
        dead = (proven[None, :] & ~vectors).any(axis=1)
        terms[dead] = -np.inf if model.additive else np.inf
        steps = 0
        for item in evidence:
            total = model.combine(terms, steps)
            alive = np.isfinite(total)
            if floor is not None:
                alive &= total >= floor
            if not alive.any():
                break
            rows = np.flatnonzero(alive)
            terms[rows] += self._task_terms(model, item, vectors[rows])
            steps += len(item.observed) - 1
            if not model.additive:   # (rows left behind are below their floor already)
                terms[~alive] = np.inf
        total = model.combine(terms, steps)
        if floor is not None:
            total = np.where(total < floor, -np.inf, total)
        return total

    def _increment(self, model: LikelihoodModel, item: Evidence, vectors: np.ndarray,
                   before: Sequence[Evidence], after: Sequence[Evidence]) -> np.ndarray:
        """How the log-likelihood of ``vectors`` changes from evidence ``before`` to
        ``after`` (for an additive model: the terms of ``item``, the one task added)."""
        if model.additive:
            return self._task_terms(model, item, vectors)
        old = self._loglik_of(model, vectors, before)
        new = self._loglik_of(model, vectors, after)
        with np.errstate(invalid='ignore'):
            return np.where(np.isfinite(new), new - np.where(np.isfinite(old), old, 0.0),
                            -np.inf)

    # ------------------------------------------------------------------ updates
    def update(self, task, observed: Sequence, evaluator, rng: np.random.Generator,
               progress: ProgressCallback | None = None) -> PosteriorUpdate:
        """Weigh the particles by one more task, resample and move them."""
        if self.particles is None or self.log_weights is None:
            raise ConfigError('the posterior has no particles yet (call start first)')
        model = _as_model(evaluator, self.likelihood)
        item = Evidence(self._next_id, task, tuple(observed))
        self._next_id += 1
        self.evidence.append(item)
        self._loglik[item.id] = {}
        self._proven[item.id] = model.proven(item.observed, self.prior.size) & self.live
        steps = 2 + self.sweeps
        done = [0]

        def advance() -> None:
            done[0] += 1
            if progress:
                progress(done[0] * self.count, steps * self.count)

        earlier = [other for other in self.active if other is not item]
        new = model.report_logs(self._task_terms(model, item, self.particles),
                                item.observed)
        increment = self._increment(model, item, self.particles, earlier, self.active)
        floor = model.explained_floor(item.observed)
        if floor is None and np.isfinite(new).any():
            floor = float(new[np.isfinite(new)].max()) - np.log(10.0)
        explained = int(np.sum(new >= floor - 1e-9)) if floor is not None else 0
        update = PosteriorUpdate(True, explained, 0)
        if self._partner_changed(model, item, increment, earlier, rng, update):
            log_weights = self.log_weights
            new = model.report_logs(self._task_terms(model, item, self._particles()),
                                    item.observed)
            explained = int(np.sum(new >= floor - 1e-9)) if floor is not None else 0
            update.survivors = explained
        else:
            log_weights = self.log_weights + increment
        if not np.isfinite(log_weights).any():
            drawn, log_weights = self._redraw(model, rng)
            if not np.isfinite(log_weights).any():
                item.active = False
                item.note = 'no hypothesis explains it'
                update.explained = False
                update.distinct = len(self.distinct()[0])
                update.message = self._describe(item, update)
                return update
            self.particles = drawn
            update.survivors = 0
        self.log_weights = log_weights
        advance()
        self._apply_window_weighted(model, update)
        if self.effective_size() < RESAMPLE_BELOW * self.count:
            self.particles = self._resample(rng, self._particles(), self.weights())
            self.log_weights = np.zeros(self.count)
        for _ in range(self.sweeps):
            self._move(model, rng)
            advance()
        self.report = self._weighted_report(model)
        advance()
        update.distinct = len(self.distinct()[0])
        update.message = self._describe(item, update)
        return update

    def _partner_changed(self, model: LikelihoodModel, item: Evidence,
                         increment: np.ndarray, earlier: Sequence[Evidence],
                         rng: np.random.Generator, update: PosteriorUpdate) -> bool:
        """Test whether the partner changed before ``item`` (module docstring); if so,
        set the earlier tasks aside and start the particles afresh from the prior,
        weighed by ``item`` alone (the caller goes on from there)."""
        with np.errstate(divide='ignore'):
            past = _log_mean_exp(np.log(self.weights()) + increment, weighted=True)
        self.surprise.append(past)
        if not earlier:
            self.change_factors.append(float('nan'))
            return False
        drawn = self.change_test_draws(rng)
        fresh_logs = self._loglik_of(model, drawn, [item])
        factor = _log_mean_exp(fresh_logs) - past
        self.change_factors.append(float(factor))
        threshold = np.log((1.0 - CHANGE_HAZARD) / CHANGE_HAZARD)
        since = [item]
        if not factor > threshold:
            # A change whose first task the old belief still half explains: the two
            # tasks since the one before, together (their predictive under the belief
            # before them is the two tasks' surprises), against a fresh partner's. Only
            # when it may pass: the two tasks' factor is about the sum of their own
            # (within PAIR_SLACK in the measurements), so the planning the earlier task's
            # fresh draws need is spent only where it can tell.
            before = self.change_factors[-2] if len(self.change_factors) > 1 else np.nan
            if len(earlier) < 2 or len(self.surprise) < 2 or not factor > 0.0 \
                    or not factor + before > threshold - PAIR_SLACK:
                return False
            previous = earlier[-1]
            pair_logs = self._loglik_of(model, drawn, [previous, item])
            pair = _log_mean_exp(pair_logs) - (self.surprise[-2] + past)
            if not pair > threshold:
                return False
            since, fresh_logs, factor = [previous, item], pair_logs, pair
        first = _task_name(since[0].task)
        for other in earlier:
            if other in since:
                continue
            other.active = False
            other.note = f'before the partner changed (at {first})'
        self.changes.append(first)
        self.particles, self.log_weights = drawn, fresh_logs
        self.surprise, self.change_factors = self.surprise[-len(since):], [float(factor)]
        update.changed = True
        update.forgotten.extend(_task_name(other.task) for other in earlier
                                if other not in since)
        return True

    def proven_by(self, item: Evidence) -> np.ndarray:
        """The capabilities task ``item`` proved the partner has."""
        return np.asarray(self._proven.get(item.id, np.zeros(self.prior.size, dtype=bool)),
                          dtype=bool)

    def change_test_draws(self, rng: np.random.Generator) -> np.ndarray:
        """The fresh partners the change test weighs: prior draws on a stream spawned
        from the update's ``rng`` (the update's own draws stay as they would be without
        the test). Known before the update: planning ahead makes their plans while the
        team still works."""
        return self._canonical(self.prior.sample(rng.spawn(1)[0], self.count))

    def _redraw(self, model: LikelihoodModel, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
        """Every particle contradicts a proven capability: particles drawn afresh from
        the prior with the proven ones held present, and their weights (posterior over
        proposal). The caller keeps them only if some weight is positive."""
        proven = self.proven()
        drawn = self._canonical(self.prior.sample(rng, self.count))
        drawn[:, proven] = True
        free = self.live & ~proven
        proposal = _log_bernoulli(drawn, np.full(self.prior.size, self.prior.p), free)
        return drawn, self.prior.log_prob(drawn) - proposal + self._loglik_of(model, drawn)

    def _apply_window_weighted(self, model: LikelihoodModel, update: PosteriorUpdate) -> None:
        if self.window is None:
            return
        active = self.active
        for item in active[:max(0, len(active) - self.window)]:
            # Its likelihood leaves the weights with it.
            kept = [other for other in self.active if other is not item]
            if model.additive:
                old = self._task_terms(model, item, self._particles())
                self.log_weights = self.log_weights - np.where(np.isfinite(old), old, 0.0)
            else:
                self.log_weights = self.log_weights - self._increment(
                    model, item, self._particles(), kept, self.active)
            item.active = False
            item.note = f'older than the window of {self.window} tasks'
            update.forgotten.append(_task_name(item.task))

    def _move(self, model: LikelihoodModel, rng: np.random.Generator) -> None:
        """One Metropolis move per particle, invariant for the weighted posterior."""
        current = self._particles()
        live = np.flatnonzero(self.live)
        if len(live) == 0:
            return
        count = len(current)
        proposals = current.copy()
        kind = rng.random(count)
        first = rng.choice(live, size=count)
        second = rng.choice(live, size=count)
        rows = np.arange(count)
        proposals[rows, first] ^= True
        pair = (kind >= 0.6) & (kind < 0.85) & (first != second)
        proposals[rows[pair], second[pair]] ^= True
        fresh = kind >= 0.85
        marginals = np.clip(self.weights() @ current, 0.05, 0.95)
        drawn = rng.random((count, self.prior.size)) < marginals
        proposals[fresh] = np.where(self.live, drawn[fresh], current[fresh])
        log_ratio = self.prior.log_prob(proposals) - self.prior.log_prob(current)
        log_ratio[fresh] += (_log_bernoulli(current[fresh], marginals, self.live)
                             - _log_bernoulli(proposals[fresh], marginals, self.live))
        threshold = np.log(rng.random(count))
        moving = np.flatnonzero((proposals != current).any(axis=1))
        if not len(moving):
            return
        here = self._loglik_of(model, current[moving])
        # Accept when threshold < log_ratio + L(proposal) - L(current): a proposal whose
        # likelihood sum falls below the floor cannot be accepted any more.
        floor = threshold[moving] - log_ratio[moving] + here
        there = self._loglik_of(model, proposals[moving], floor=floor)
        accept = np.isfinite(there) & (there >= floor)
        chosen = moving[accept]
        current[chosen] = proposals[chosen]
        self.particles = current

    # ------------------------------------------------------------------ report
    def _weighted_report(self, model: LikelihoodModel) -> list[CapabilityReport]:
        if not self.active:
            self._marginals = None
            return self._prior_report()
        vectors, mass = self.distinct()
        order = np.argsort(-mass, kind='stable')[:SUPPORT_START]
        top, top_mass = vectors[order], mass[order]
        rest = np.ones(len(vectors), dtype=bool)
        rest[order] = False
        live = np.flatnonzero(self.live)
        flips = np.repeat(top, len(live), axis=0)
        flips[np.arange(len(flips)), np.tile(live, len(top))] ^= True
        evidence = self._loglik_of(model, top)
        # A single change that falls this far below its original has a conditional of
        # 0 or 1 to within 1e-11; its evaluation stops there (no further plans).
        floor = np.repeat(evidence, len(live)) - NEGLIGIBLE
        changed_evidence = self._loglik_of(model, flips, floor=floor)
        here = self.prior.log_prob(top) + evidence
        there = (self.prior.log_prob(flips) + changed_evidence).reshape(len(top), len(live))
        # P(c_i = 1 | the others) for each top hypothesis and live capability.
        with np.errstate(invalid='ignore'):
            has = np.where(top[:, live], here[:, None], there)
            lacks = np.where(top[:, live], there, here[:, None])
            high = np.maximum(has, lacks)
            conditional = np.exp(has - high) / (np.exp(has - high) + np.exp(lacks - high))
        conditional = np.nan_to_num(conditional, nan=0.5)
        marginals = self.prior.mean().copy()
        marginals[live] = top_mass @ conditional + mass[rest] @ vectors[rest][:, live]
        self._marginals = np.clip(marginals, 0.0, 1.0)
        # Never exercised: changing it alone changes no task's likelihood in the
        # hypotheses that hold (all but 1 - known_mass of) the top mass. A hypothesis the
        # evidence has all but ruled out may have a capability that would matter to it
        # (its flip would explain a task); that says nothing about the partner.
        # (Equal sums over the tasks stand for equal likelihoods on every task.)
        changed = changed_evidence.reshape(len(top), len(live)) != evidence[:, None]
        unchanged = top_mass @ changed <= (1.0 - self.known_mass) * top_mass.sum()
        proven = self.proven()
        column = {int(i): k for k, i in enumerate(live)}
        mean = self.prior.mean()
        report = []
        for i in range(self.prior.size):
            if not self.live[i]:
                report.append(CapabilityReport(INERT, float(mean[i])))
                continue
            probability = float(self._marginals[i])
            if proven[i]:
                status = KNOWN_PRESENT
            elif unchanged[column[i]]:
                status = NEVER_EXERCISED
            elif probability >= self.known_mass:
                status = KNOWN_PRESENT
            elif probability <= 1.0 - self.known_mass:
                status = KNOWN_ABSENT
            else:
                status = UNDECIDED
            shown = mean[i] if status == NEVER_EXERCISED and not self.prior.coupled \
                else probability
            report.append(CapabilityReport(status, float(shown),
                                           self._confounded(i) if status == UNDECIDED else ()))
        return self._symmetric(report)

    def _describe(self, item: Evidence, update: PosteriorUpdate) -> str:
        name = _task_name(item.task)
        if not update.explained:
            return (f'no capability vector can produce {name}; it is kept in the log but '
                    'does not change the belief')
        parts = [f'{update.survivors} of {self.count} particles explained {name}',
                 f'effective sample size {self.effective_size():.0f}',
                 f'{update.distinct} distinct hypotheses']
        if update.changed:
            since = self.changes[-1] if self.changes else name
            shown = name if since == name else f'{since} and {name}'
            parts.append(f'the partner seems to have changed: {shown} '
                         f'{"is" if since == name else "are"} explained far better by a '
                         'partner drawn afresh than by the belief so far, so the '
                         f'{len(update.forgotten)} earlier tasks are set aside')
        elif update.forgotten:
            parts.append(f'forgot {", ".join(update.forgotten)}')
        decided = sum(entry.decided for entry in self.report)
        parts.append(f'{decided} of {int(self.live.sum())} capabilities decided')
        return '; '.join(parts)

    # ------------------------------------------------------------- persistence
    def state(self) -> dict:
        state = super().state()
        state['support'] = None
        state['log_weights'] = [] if self.log_weights is None else \
            [None if not np.isfinite(w) else float(w) for w in self.log_weights]
        state['marginals'] = None if self._marginals is None else \
            [float(m) for m in self._marginals]
        state['proven'] = {str(item.id): ''.join('1' if b else '0' for b in p)
                           for item in self.evidence
                           if (p := self._proven.get(item.id)) is not None}
        state['surprise'] = [float(v) for v in self.surprise]
        state['change_factors'] = [None if np.isnan(v) else float(v)
                                   for v in self.change_factors]
        state['changes'] = list(self.changes)
        return state

    def restore(self, state: dict, evidence: Sequence[tuple]) -> None:
        super().restore(state, evidence)
        self.support = None
        weights = state.get('log_weights')
        if self.particles is not None:
            if weights is None or len(weights) != len(self.particles):
                raise ConfigError('weighted posterior: log_weights missing or of the wrong '
                                  'length')
            self.log_weights = np.array([-np.inf if w is None else float(w) for w in weights])
        marginals = state.get('marginals')
        self._marginals = None if marginals is None else np.array(marginals, dtype=float)
        if self._marginals is not None and self._marginals.shape != (self.prior.size,):
            raise ConfigError('weighted posterior: marginals of the wrong length')
        self._loglik = {item.id: {} for item in self.evidence}
        self.surprise = [float(v) for v in state.get('surprise') or []]
        self.change_factors = [float('nan') if v is None else float(v)
                               for v in state.get('change_factors') or []]
        self.changes = [str(v) for v in state.get('changes') or []]
        self._proven = {}
        for key, bits in (state.get('proven') or {}).items():
            if len(bits) != self.prior.size or set(bits) - {'0', '1'}:
                raise ConfigError('weighted posterior: proven capabilities of the wrong '
                                  'length or alphabet')
            self._proven[int(key)] = np.array([ch == '1' for ch in bits], dtype=bool)


def _log_mean_exp(logs: np.ndarray, weighted: bool = False) -> float:
    """log(mean(exp(logs))), or with ``weighted`` log(sum(exp(logs))) (the weights are in
    the logs already); -inf when every term is."""
    logs = np.asarray(logs, dtype=float)
    finite = logs[np.isfinite(logs)]
    if not len(finite):
        return -np.inf
    high = float(finite.max())
    total = float(np.exp(finite - high).sum())
    return high + float(np.log(total if weighted else total / len(logs)))


def _as_model(evaluator, likelihood: Likelihood) -> LikelihoodModel:
    """The likelihood model to ask: given, or one built around a bare evaluator (its
    planner's domain proves capabilities)."""
    if isinstance(evaluator, LikelihoodModel):
        return evaluator
    planner = getattr(evaluator, 'planner', None)
    exercised = getattr(getattr(planner, 'domain', None), 'exercised_capabilities', None)
    return LikelihoodModel(likelihood, [evaluator], exercised)
