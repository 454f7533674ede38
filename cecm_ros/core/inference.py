"""The posterior over capability vectors given every task seen, and what it has decided.

After the tasks ``1..n`` the belief approximates

    P(c | obs_1..n)  proportional to  prior(c) * prod_j 1[ d(tau_{c,j}, obs_j) < epsilon ]

where ``tau_{c,j}`` is what hypothesis ``c`` predicts for task ``j`` (CE-CM-Div: a set of
trajectories, the closest one counts). Every hypothesis must explain *every* task: the
paper's Algorithm 1 pools per-task acceptances instead, and a union of acceptances is
not a posterior (docs/experiments.md shows what that costs).

The approximation is resample-move sequential Monte Carlo (Chopin's IBIS): particles
carry over from task to task; a new task keeps those that explain it, the survivors are
resampled, and Metropolis moves (flip one or two capabilities, or draw afresh from the
current marginals) rejuvenate them. A move is accepted only when the moved hypothesis
explains every task still in the evidence, with the prior ratio (and the proposal
ratio for fresh draws) as the acceptance probability, so the moves leave the posterior
invariant. Distances are memoised per (task, hypothesis) and the plans behind them are
shared by the evaluator, so re-checking old tasks is cheap.

Nothing here knows TidyUP: a task is an opaque value, and the only question asked of
the domain is the :class:`~cecm_ros.core.hypotheses.HypothesisEvaluator` one, "which
trajectories would capability vector ``c`` produce on this task?".
"""

from __future__ import annotations

import copy
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .errors import ConfigError
from .vectors import unique_rows

ProgressCallback = Callable[[int, int], None]

# What the evidence says about one capability (CapabilityBelief.msg carries these).
KNOWN_PRESENT = 'known_present'
KNOWN_ABSENT = 'known_absent'
UNDECIDED = 'undecided'
NEVER_EXERCISED = 'never_exercised'
INERT = 'inert'
STATUSES = (KNOWN_PRESENT, KNOWN_ABSENT, UNDECIDED, NEVER_EXERCISED, INERT)

# How an undecided capability enters the point estimate the robot plans with.
UNDECIDED_RULES = ('cautious', 'analogy', 'absent', 'present', 'marginal', 'mode')
# ... in words, for logs ("undecided capabilities planned ...").
UNDECIDED_RULE_WORDS = {'cautious': 'absent where confounded, else by their probability',
                        'analogy': 'like a room the evidence decided where it allows, else '
                                   'absent where confounded, else by their probability',
                        'absent': 'absent', 'present': 'present',
                        'marginal': 'by their probability',
                        'mode': 'as the most probable hypothesis has them'}

# Mix of Metropolis moves: flip one capability, flip two, or draw from the marginals.
MOVE_SINGLE, MOVE_PAIR = 0.6, 0.25
# Marginals used as a proposal are kept inside [floor, 1 - floor].
PROPOSAL_FLOOR = 0.05
# Undecided capabilities whose conditional marginals differ at least this much are
# reported as confounded.
CONFOUNDING_GAP = 0.3
# Draws from a coupled prior that estimate how much it ties capabilities by itself.
PRIOR_GAP_SAMPLES = 20000
# Under a coupled prior, `cautious` plans a confounded capability as present when it is
# at least this probable (one explanation of the confound far ahead of the others).
CONFOUNDED_PRESENT = 0.9
# At most this many confounders are listed per capability.
CONFOUNDED_SHOWN = 4
# A support of at most this many hypotheses is closed under single changes, and kept
# exactly while the closure stays within SUPPORT_LIMIT (see ParticlePosterior).
SUPPORT_START, SUPPORT_LIMIT = 64, 512
# The search for a counterexample before a capability is called known: starting points
# (besides "capable of everything" and "of nothing") and greedy steps.
COUNTEREXAMPLE_STARTS, COUNTEREXAMPLE_STEPS = 4, 6
# ... taken from the single changes of this many of the most probable hypotheses.
COUNTEREXAMPLE_POOL = 16


# ----------------------------------------------------------------------------- prior
@dataclass(frozen=True)
class CapabilityPrior:
    """P(c): independent Bernoulli(p) per capability, optionally coupled in groups.

    With ``coupling`` k > 0 the capabilities of each group (e.g. those of one room)
    are, with probability k, all present (probability p) or all absent (1 - p)
    together, and otherwise independent: a partner who cannot do one thing in a room
    is more likely to be unable to do the others there too.
    """

    size: int
    p: float = 0.5
    groups: tuple[tuple[int, ...], ...] = ()
    coupling: float = 0.0
    # Alike rooms: one row per room, the same kinds of capability in the same columns.
    # With ``concentration`` a > 0 the rooms' patterns (which kinds are missing) are
    # drawn from one shared, unknown distribution (a Dirichlet(a * base) over patterns,
    # base = the independent prior): a pattern seen in some rooms is likelier in the
    # others, so a room the evidence leaves open takes after the rooms it has closed.
    patterns: tuple[tuple[int, ...], ...] = ()
    concentration: float = 0.0

    def __post_init__(self):
        if not 0.0 < self.p < 1.0:
            raise ConfigError(f'the prior probability must lie in (0, 1), got {self.p}')
        if not 0.0 <= self.coupling < 1.0:
            raise ConfigError(f'prior coupling must lie in [0, 1), got {self.coupling}')
        if self.concentration < 0.0:
            raise ConfigError(f'the pattern concentration must be at least 0, got '
                              f'{self.concentration}')
        if self.coupling > 0 and self.groups and self.alike:
            raise ConfigError('choose either coupled groups or alike rooms, not both')
        _capability_blocks(self.groups, self.size, 'prior groups')
        _capability_blocks(self.patterns, self.size, 'prior patterns', same_kinds=True)

    @property
    def alike(self) -> bool:
        return self.concentration > 0 and len(self.patterns) > 1

    @property
    def coupled(self) -> bool:
        """Whether capabilities depend on each other a priori (not only via evidence)."""
        return (self.coupling > 0 and bool(self.groups)) or self.alike

    def mean(self) -> np.ndarray:
        """P(c_i = 1) under the prior (the same with and without coupling)."""
        return np.full(self.size, self.p)

    def log_prob(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.atleast_2d(vectors).astype(bool)
        independent: np.ndarray = np.where(  # type: ignore[assignment]
            vectors, np.log(self.p), np.log1p(-self.p))
        if self.alike:
            return self._alike_log_prob(vectors, independent)
        if not self.coupled:
            return independent.sum(axis=1)
        grouped = np.zeros(self.size, dtype=bool)
        total = np.zeros(len(vectors))
        for group in self.groups:
            index = list(group)
            grouped[index] = True
            own = independent[:, index].sum(axis=1)
            block = vectors[:, index]
            together = np.where(block.all(axis=1), self.p,
                                np.where((~block).all(axis=1), 1 - self.p, 0.0))
            total += np.log(self.coupling * together + (1 - self.coupling) * np.exp(own))
        return total + independent[:, ~grouped].sum(axis=1)

    def _pattern_base(self) -> np.ndarray:
        """The independent prior's probability of each pattern (bit k = kind k present)."""
        kinds = len(self.patterns[0])
        bits = (np.arange(2 ** kinds)[:, None] >> np.arange(kinds)) & 1
        present = bits.sum(axis=1)
        return self.p ** present * (1 - self.p) ** (kinds - present)

    @cached_property
    def _log_rises(self) -> np.ndarray:
        """[k, c]: log Gamma(alpha_k + c) - log Gamma(alpha_k) for each pattern k and each
        count c of rooms that can have it (log_prob runs in every Metropolis move)."""
        alpha = self.concentration * self._pattern_base()
        return np.array([[math.lgamma(a + c) - math.lgamma(a)
                          for c in range(len(self.patterns) + 1)] for a in alpha])

    @cached_property
    def ties(self) -> np.ndarray:
        """[i, j]: how far knowing capability i moves P(c_j = 1) under the prior alone
        (zero for an independent prior; else estimated once from a fixed-seed sample)."""
        gaps = np.zeros((self.size, self.size))
        if self.coupled:
            draws = self.sample(np.random.default_rng(0), PRIOR_GAP_SAMPLES)
            for i in range(self.size):
                has, lacks = draws[draws[:, i]], draws[~draws[:, i]]
                if len(has) and len(lacks):
                    gaps[i] = np.abs(has.mean(axis=0) - lacks.mean(axis=0))
        return gaps

    def _alike_log_prob(self, vectors: np.ndarray, independent: np.ndarray) -> np.ndarray:
        # Dirichlet-multinomial: the rooms' patterns are exchangeable, so only their
        # counts matter; capabilities outside the rows stay independent.
        rows = np.array(self.patterns)
        rooms = rows.shape[0]
        weights = 1 << np.arange(rows.shape[1])
        codes = (vectors[:, rows] * weights).sum(axis=2)             # (n, rooms)
        rises = self._log_rises
        counts = (codes[:, :, None] == np.arange(len(rises))).sum(axis=1)
        total = (math.lgamma(self.concentration) - math.lgamma(self.concentration + rooms)
                 + rises[np.arange(len(rises)), counts].sum(axis=1))
        outside = np.ones(self.size, dtype=bool)
        outside[rows.ravel()] = False
        return total + independent[:, outside].sum(axis=1)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        vectors = rng.random((count, self.size)) < self.p
        if self.alike:
            # The Polya urn: each room copies an earlier room's pattern or draws afresh.
            rows = np.array(self.patterns)
            for room in range(1, len(rows)):
                copy_from = rng.integers(room, size=count)
                copies = rng.random(count) < room / (room + self.concentration)
                copying = np.flatnonzero(copies)[:, None]
                vectors[copying, rows[room]] = vectors[copying, rows[copy_from[copies]]]
            return vectors
        if self.coupled:
            for group in self.groups:
                together = rng.random(count) < self.coupling
                value = rng.random(count) < self.p
                vectors[np.ix_(together, list(group))] = value[together, None]  # type: ignore[arg-type]
        return vectors


# -------------------------------------------------------------------------- evidence
@dataclass
class Evidence:
    """One observed task. ``active`` is False once it no longer constrains the belief."""

    id: int
    task: Any
    observed: tuple
    active: bool = True
    note: str = ''     # why it stopped counting ('' while active)


@dataclass
class CapabilityReport:
    """What the evidence has decided about one capability."""

    status: str
    probability: float               # posterior P(c_i = 1)
    confounded_with: tuple[str, ...] = ()

    @property
    def decided(self) -> bool:
        return self.status in (KNOWN_PRESENT, KNOWN_ABSENT)


@dataclass
class PosteriorUpdate:
    """What one task did to the posterior."""

    explained: bool          # some hypothesis explains it together with the evidence kept
    survivors: int           # particles that explained it before rejuvenation
    distinct: int            # distinct hypotheses among the particles afterwards
    forgotten: list[str] = field(default_factory=list)   # tasks dropped to explain it
    message: str = ''
    changed: bool = False    # the partner seems to have changed: earlier tasks set aside


def _capability_blocks(blocks, size: int, what: str,
                       same_kinds: bool = False) -> tuple[tuple[int, ...], ...]:
    """Disjoint blocks of capability indices (coupled groups, rows of rooms), checked:
    they may come from a belief file."""
    try:
        checked = tuple(tuple(operator.index(i) for i in block) for block in blocks)
        if any(isinstance(i, bool) for block in blocks for i in block):
            raise TypeError('a truth value is not an index')
    except TypeError as error:
        raise ConfigError(f'{what} must be lists of capability indices ({error})') from None
    members = [i for block in checked for i in block]
    if len(set(members)) != len(members) or any(not 0 <= i < size for i in members):
        raise ConfigError(f'{what} must be disjoint sets of capability indices below {size}')
    if same_kinds and len({len(block) for block in checked}) > 1:
        raise ConfigError(f'{what}: every row needs the same kinds')
    return checked


def _key(vector: np.ndarray) -> bytes:
    return np.packbits(vector).tobytes()


def memoised(known: dict[bytes, float], vectors: np.ndarray,
             compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Per vector, its value in ``known``, computing the missing ones once (distinct
    vectors in one batch, since each may cost a plan)."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=bool))
    if not len(vectors):
        return np.zeros(0)
    # One key per distinct vector (the particles repeat: thousands of rows, hundreds of
    # vectors), asked for in the order the vectors first appear.
    distinct, first, inverse = unique_rows(vectors, return_index=True, return_inverse=True)
    keys = [_key(v) for v in distinct]
    missing = sorted((i for i, key in enumerate(keys) if key not in known),
                     key=lambda i: first[i])
    if missing:
        known.update(zip((keys[i] for i in missing),
                         (float(v) for v in compute(distinct[missing]))))
    return np.array([known[key] for key in keys], dtype=float)[inverse]


class ParticlePosterior:
    """Resample-move particles over capability vectors, checked against every task.

    ``live`` marks the capabilities that can change a prediction at all (the others,
    inert ones, keep their prior). ``window``, when set, keeps only the last ``window``
    tasks as evidence. A task that no hypothesis can explain together with the older
    evidence but that some hypothesis explains on its own means the partner changed (or
    was mis-observed): the oldest tasks are then forgotten until the evidence is
    consistent again, and the update says which.
    """

    def __init__(self, prior: CapabilityPrior, live: np.ndarray, epsilon: float,
                 particles: int = 500, sweeps: int = 4, window: int | None = None,
                 names: Sequence[str] | None = None, rows: Sequence[Sequence[int]] = ()):
        if particles < 1:
            raise ConfigError(f'the posterior needs at least 1 particle, got {particles}')
        if sweeps < 0:
            raise ConfigError(f'sweeps must be at least 0, got {sweeps}')
        live = np.asarray(live, dtype=bool)
        if live.shape != (prior.size,):
            raise ConfigError(f'live mask has shape {live.shape}, expected ({prior.size},)')
        self.prior = prior
        self.live = live
        self.epsilon = epsilon
        self.count = particles
        self.sweeps = sweeps
        self.window = window
        self.names = list(names) if names is not None else [str(i) for i in range(prior.size)]
        # One row per room of the same kinds of capability (move, pick, place), for
        # ``analogy``; empty when the domain has no such structure.
        self.rows = _capability_blocks(rows, prior.size, 'rows of rooms', same_kinds=True)
        self.particles: np.ndarray | None = None   # (count, size) bool, equal weights
        # When the hypotheses that explain the evidence are few, all of them with their
        # exact posterior masses (prior, renormalised): (vectors, masses), else None.
        self.support: tuple[np.ndarray, np.ndarray] | None = None
        self.evidence: list[Evidence] = []
        self.report: list[CapabilityReport] = []
        self._next_id = 0
        self._distances: dict[int, dict[bytes, float]] = {}
        self._rejections: dict[int, int] = {}

    def copy(self) -> ParticlePosterior:
        """An independent copy; memoised distances are shared per task (they are facts)."""
        twin = copy.copy(self)
        twin.particles = None if self.particles is None else self.particles.copy()
        twin.evidence = [replace(item) for item in self.evidence]
        twin.report = list(self.report)
        twin.support = None if self.support is None else (self.support[0].copy(),
                                                          self.support[1].copy())
        twin._distances = dict(self._distances)
        twin._rejections = dict(self._rejections)
        return twin

    # ------------------------------------------------------------------ queries
    @property
    def active(self) -> list[Evidence]:
        return [item for item in self.evidence if item.active]

    def start(self, rng: np.random.Generator) -> None:
        """Draw the initial particles from the prior (before the first task)."""
        self.particles = self._canonical(self.prior.sample(rng, self.count))
        self.report = self._prior_report()

    def theta(self) -> np.ndarray:
        """P(c_i = 1 | evidence). Inert capabilities and those no task has exercised keep
        their prior exactly (the evidence is independent of them; the particles would
        only add noise), unless the prior couples them to others."""
        mean = self.prior.mean()
        if self.particles is None:
            return mean
        vectors, mass = self.distinct()
        theta = np.clip(mass @ vectors, 0.0, 1.0)
        keep = ~self.live
        if not self.prior.coupled and len(self.report) == self.prior.size:
            keep |= np.array([entry.status == NEVER_EXERCISED for entry in self.report])
        return np.where(keep, mean, theta)

    def _particles(self) -> np.ndarray:
        """The particles, which exist from the first update on."""
        if self.particles is None:
            raise RuntimeError('the posterior has no particles before its first update')
        return self.particles

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct hypotheses and their posterior masses: exact when the support is
        known, else the particles' frequencies."""
        if self.support is not None:
            return self.support
        vectors, counts = unique_rows(self._particles(), return_counts=True)
        return vectors, counts / counts.sum()

    def estimate(self, rule: str, psi: float) -> np.ndarray:
        """The vector the robot plans with: decided capabilities as decided, the
        others by ``rule`` (never-exercised and inert ones by their prior).

        ``cautious`` plans an undecided capability as missing when it is confounded with
        others (the evidence needs some of them missing, and which is open: planning
        them all missing keeps the robot from handing over work the partner may not
        manage; under a coupled prior, present when the other rooms make it at least
        CONFOUNDED_PRESENT probable), and by its probability (theta > psi) when the
        evidence merely leaves it open. ``analogy`` is ``cautious``, except that a room
        whose capabilities are confounded is planned like the rooms the evidence decided
        (see _like_decided_rooms). ``absent``/``present`` plan every undecided one so,
        ``marginal`` by theta > psi, ``mode`` as the most probable hypothesis kept has it.
        """
        if rule not in UNDECIDED_RULES:
            raise ConfigError(f'unknown rule {rule!r} for undecided capabilities; rules: '
                              f'{", ".join(UNDECIDED_RULES)}')
        theta = self.theta()
        estimate = theta > psi
        undecided = np.array([entry.status == UNDECIDED for entry in self.report], dtype=bool)
        for i, entry in enumerate(self.report):
            if entry.status == KNOWN_PRESENT:
                estimate[i] = True
            elif entry.status == KNOWN_ABSENT:
                estimate[i] = False
            elif entry.status == UNDECIDED and rule in ('absent', 'present'):
                estimate[i] = rule == 'present'
            elif entry.status == UNDECIDED and rule in ('cautious', 'analogy') \
                    and entry.confounded_with:
                # Under an independent prior the explanations of a confound are ranked by
                # the prior alone, the same way in every room; a coupled prior ranks them
                # by what other rooms showed, and a clear lead is then evidence.
                estimate[i] = self.prior.coupled and theta[i] >= CONFOUNDED_PRESENT
        if rule == 'mode' and undecided.any() and self.particles is not None:
            estimate[undecided] = self._most_probable(estimate, undecided)
        if rule == 'analogy' and self.particles is not None:
            self._like_decided_rooms(estimate)
        return estimate

    def _like_decided_rooms(self, estimate: np.ndarray) -> None:
        """Plan a room whose capabilities the evidence leaves confounded like the rooms
        where it decided those kinds, as far as the evidence allows.

        "Cannot enter the bedroom" and "cannot pick or place in the bedroom" explain the
        same tasks until one starts the partner there; if the study was decided as "cannot
        enter, can pick", the bedroom is planned that way too. Only rooms with a kind known
        absent count (a room the partner fully uses says nothing about which explanation
        of a confound holds), kinds on which such rooms disagree are left alone, and the
        analogy is dropped unless some hypothesis kept has it. Only the kinds those rooms
        decided are copied: the room's other confounded capabilities stay missing, as
        ``cautious`` plans them (a room known to lack the hands says nothing about whether
        the partner can put things down there).
        """
        statuses = [entry.status for entry in self.report]
        if len(statuses) != self.prior.size or not self.rows:
            return
        known = {KNOWN_PRESENT: True, KNOWN_ABSENT: False}
        vectors, mass = self.distinct()
        # Hypotheses kept that agree with every analogy applied so far: each room's must
        # hold together with the others', not only on its own.
        allowed = mass > 0
        for place, row in enumerate(self.rows):
            confounded = [i for i in row if statuses[i] == UNDECIDED
                          and self.report[i].confounded_with]
            if not confounded:
                continue
            shown: dict[int, set[bool]] = {}
            for elsewhere, other in enumerate(self.rows):
                if elsewhere == place or KNOWN_ABSENT not in (statuses[j] for j in other):
                    continue
                for kind, j in enumerate(other):
                    if statuses[j] in known:
                        shown.setdefault(kind, set()).add(known[statuses[j]])
            analogy = {row[kind]: values.pop() for kind, values in shown.items()
                       if len(values) == 1 and row[kind] in confounded}
            if not analogy:
                continue
            cells = list(analogy)
            agree = allowed & np.all(vectors[:, cells] == [analogy[i] for i in cells], axis=1)
            if agree.any():
                estimate[cells] = [analogy[i] for i in cells]
                allowed = agree

    def _most_probable(self, estimate: np.ndarray, undecided: np.ndarray) -> np.ndarray:
        """The undecided capabilities of the most probable hypothesis kept.

        Every hypothesis kept explains every task, so its posterior mass is its prior
        mass: the most probable one is found exactly among the distinct hypotheses (the
        particles' frequencies would only add noise), with the other capabilities held
        at ``estimate`` so that they do not sway the choice. Ties go to the more frequent.
        """
        vectors, mass = self.distinct()
        completed = np.where(undecided, vectors, estimate)
        score = self.prior.log_prob(completed)
        best = np.lexsort((-mass, -score))[0]
        return completed[best, undecided]

    # ------------------------------------------------------------------ updates
    def update(self, task, observed: Sequence, evaluator, rng: np.random.Generator,
               progress: ProgressCallback | None = None) -> PosteriorUpdate:
        """Condition on one more observed task (see the class docstring)."""
        if self.particles is None:
            raise ConfigError('the posterior has no particles yet (call start first)')
        item = Evidence(self._next_id, task, tuple(observed))
        self._next_id += 1
        self.evidence.append(item)
        self._distances[item.id] = {}
        steps = 2 + self.sweeps
        done = [0]

        def advance() -> None:
            done[0] += 1
            if progress:
                progress(done[0] * self.count, steps * self.count)

        alive = self._explains(evaluator, item, self.particles)
        survivors = int(alive.sum())
        update = PosteriorUpdate(True, survivors, 0)
        if survivors:
            self.particles = self._resample(rng, self.particles[alive], np.ones(survivors))
        else:
            self._rescue(evaluator, item, rng, update)
            if not update.explained:
                # Set aside: the belief stays exactly as it was (no moves, no report).
                update.distinct = len(self.distinct()[0])
                update.message = self._describe(item, update)
                return update
        advance()
        self._apply_window(update)
        self.support = None
        for _ in range(self.sweeps):
            self._sweep(evaluator, rng)
            advance()
        self.support = self._closed_support(evaluator)
        if self.support is not None:
            self.particles = self._resample(rng, *self.support)
        # Evidence only added: what was known stays known (fewer hypotheses explain
        # more tasks), so those claims need no new search for a counterexample.
        settled = [] if update.forgotten else [
            entry.status if entry.decided else None for entry in self.report]
        self.report = self._evidence_report(evaluator, settled=settled)
        advance()
        update.distinct = len(unique_rows(self.particles))
        update.message = self._describe(item, update)
        return update

    def _rescue(self, evaluator, item: Evidence, rng, update: PosteriorUpdate) -> None:
        """No particle explains the new task: search for hypotheses that do, first
        together with the older evidence, then alone (and forget what contradicts it);
        if none is found, set the task aside."""
        older = [e for e in self.active if e.id != item.id]
        found = self._search(evaluator, [*older, item])
        if len(found):
            self.particles = self._resample(rng, found, np.ones(len(found)))
            return
        alone = self._search(evaluator, [item]) if older else found
        if not len(alone):
            item.active = False
            item.note = 'no hypothesis explains it'
            update.explained = False
            return
        while older:
            ok = self._consistent(evaluator, alone, older)
            if ok.any():
                alone = alone[ok]
                break
            dropped = older.pop(0)
            dropped.active = False
            dropped.note = f'contradicted by {_task_name(item.task)}'
            update.forgotten.append(_task_name(dropped.task))
        self.particles = self._resample(rng, alone, np.ones(len(alone)))

    def _search(self, evaluator, evidence: Sequence[Evidence], starts: int = 4,
                steps: int = 2 * 16, clamp: tuple[int, bool] | None = None,
                begin: np.ndarray | None = None) -> np.ndarray:
        """Hypotheses that explain every task of ``evidence``, found by greedy descent.

        Where a task is not explained its Jaccard distance is nearly always close to 1,
        whatever the hypothesis, and gives no direction; the descent therefore follows a
        graded distance instead (how many propositions separate the predicted states from
        the nearest observed ones, see :func:`graded_distance`), summed over the tasks a
        hypothesis does not explain. It starts from the particles closest by that measure,
        from "capable of everything" and from "capable of nothing", and at every step
        takes the single change that lowers the sum most. Returns what it reached that
        explains every task (possibly nothing).

        ``clamp`` = (i, value) holds capability i at ``value`` throughout (the search for a
        counterexample to a "known" claim); ``begin`` replaces the particles as the pool
        the starting points are taken from.
        """
        def cost(vectors: np.ndarray) -> np.ndarray:
            total = np.zeros(len(vectors))
            for item in evidence:
                unexplained = self._distance_to(evaluator, item, vectors) >= self.epsilon
                if unexplained.any():
                    total[unexplained] += 1.0 + self._graded(evaluator, item,
                                                             vectors[unexplained])
            return total

        particles = unique_rows(self._particles() if begin is None else begin)
        extremes = self._canonical(np.array([np.ones(self.prior.size, dtype=bool),
                                             np.zeros(self.prior.size, dtype=bool)]))
        live = np.flatnonzero(self.live)
        if clamp is not None:
            # Near the particles, not at the extremes: a counterexample to a claim the
            # particles support differs from them in few capabilities if it exists.
            particles[:, clamp[0]] = clamp[1]
            particles = unique_rows(particles)
            extremes = extremes[:0]
            live = live[live != clamp[0]]
        scores = cost(particles)
        frontier = unique_rows(np.vstack([particles[np.argsort(scores, kind='stable')[:starts]],
                                          extremes]))
        found = []
        current = cost(frontier)
        for _ in range(steps):
            done = current == 0
            found.extend(frontier[done])
            frontier, current = frontier[~done], current[~done]
            if found or not len(frontier) or not len(live):
                break
            neighbours = np.repeat(frontier, len(live), axis=0)
            neighbours[np.arange(len(neighbours)), np.tile(live, len(frontier))] ^= True
            scores = cost(neighbours).reshape(len(frontier), len(live))
            best = scores.argmin(axis=1)
            better = scores[np.arange(len(frontier)), best] < current
            frontier = neighbours.reshape(len(frontier), len(live), -1)[
                np.flatnonzero(better), best[better]]
            current = scores[np.flatnonzero(better), best[better]]
            if len(frontier):
                frontier, unique = unique_rows(frontier, return_index=True)
                current = current[unique]
        return np.array(found, dtype=bool).reshape(-1, self.prior.size)

    def _graded(self, evaluator, item: Evidence, vectors: np.ndarray) -> np.ndarray:
        sets = evaluator.trajectory_sets(item.task, vectors)
        known: dict[tuple, float] = {}   # hypotheses often share their trajectories

        def graded(trajectory) -> float:
            key = tuple(trajectory)
            if key not in known:
                known[key] = graded_distance(trajectory, item.observed)
            return known[key]

        return np.array([min(graded(t) for t in trajectories) for trajectories in sets],
                        dtype=float)

    def _distance_to(self, evaluator, item: Evidence, vectors: np.ndarray) -> np.ndarray:
        self._explains(evaluator, item, vectors)
        known = self._distances[item.id]
        return np.array([known[_key(v)] for v in vectors], dtype=float)

    def _apply_window(self, update: PosteriorUpdate) -> None:
        if self.window is None:
            return
        active = self.active
        for item in active[:max(0, len(active) - self.window)]:
            item.active = False
            item.note = f'older than the window of {self.window} tasks'
            update.forgotten.append(_task_name(item.task))

    def _sweep(self, evaluator, rng: np.random.Generator, particles: np.ndarray | None = None,
               constraint=None, evidence: Sequence[Evidence] | None = None) -> np.ndarray:
        """One Metropolis move per particle; a moved hypothesis must explain every task of
        ``evidence`` (default: all active) and satisfy ``constraint`` when given. Without
        ``particles`` it moves (and replaces) the posterior's own."""
        own = particles is None
        current = self._particles() if particles is None else particles
        evidence = self.active if evidence is None else evidence
        live = np.flatnonzero(self.live)
        if len(live) == 0 or not len(current):
            return current
        count = len(current)
        proposals = current.copy()
        kind = rng.random(count)
        first = rng.choice(live, size=count)
        second = rng.choice(live, size=count)
        rows = np.arange(count)
        proposals[rows, first] ^= True
        pair = (kind >= MOVE_SINGLE) & (kind < MOVE_SINGLE + MOVE_PAIR) & (first != second)
        proposals[rows[pair], second[pair]] ^= True
        fresh = kind >= MOVE_SINGLE + MOVE_PAIR
        marginals = np.clip(current.mean(axis=0), PROPOSAL_FLOOR, 1 - PROPOSAL_FLOOR)
        drawn = rng.random((count, self.prior.size)) < marginals
        proposals[fresh] = np.where(self.live, drawn[fresh], current[fresh])
        log_ratio = self.prior.log_prob(proposals) - self.prior.log_prob(current)
        log_ratio[fresh] += (_log_bernoulli(current[fresh], marginals, self.live)
                             - _log_bernoulli(proposals[fresh], marginals, self.live))
        threshold = np.log(rng.random(count))
        moving = (threshold < log_ratio) & (proposals != current).any(axis=1)
        moved = current.copy()
        if moving.any():
            index = np.flatnonzero(moving)
            ok = np.ones(len(index), dtype=bool)
            if constraint is not None:
                ok = constraint(proposals[index])
            ok[ok] = self._consistent(evaluator, proposals[index[ok]], evidence)
            moved[index[ok]] = proposals[index[ok]]
        if own:
            self.particles = moved
        return moved

    def _closed_support(self, evaluator) -> tuple[np.ndarray, np.ndarray] | None:
        """Every hypothesis that explains the evidence, when the particles found them all.

        Starting from the particles' distinct hypotheses (if few), add every single-
        capability change of a known one that explains every task, until nothing new is
        found. The consistent set is then closed under single changes, which in practice
        means complete; its exact masses are the prior's, renormalised. None when the
        particles are too many or the closure grows past SUPPORT_LIMIT.
        """
        found = unique_rows(self._particles())
        if len(found) > SUPPORT_START or not self.active:
            return None
        live = np.flatnonzero(self.live)
        known = {_key(v) for v in found}
        frontier = found
        while len(frontier):
            flips = np.repeat(frontier, len(live), axis=0)
            flips[np.arange(len(flips)), np.tile(live, len(frontier))] ^= True
            flips = unique_rows(flips)
            new = np.array([_key(v) not in known for v in flips], dtype=bool)
            flips = flips[new]
            if not len(flips):
                break
            frontier = flips[self._consistent(evaluator, flips, self.active)]
            known.update(_key(v) for v in frontier)
            found = np.vstack([found, frontier])
            if len(found) > SUPPORT_LIMIT:
                return None
        log_mass = self.prior.log_prob(found)
        mass = np.exp(log_mass - log_mass.max())
        return found, mass / mass.sum()

    # ------------------------------------------------------------ evidence tests
    def _canonical(self, vectors: np.ndarray) -> np.ndarray:
        """Inert capabilities carry no information: keep them at 1 in the particles."""
        return np.where(self.live, vectors, True)

    def _explains(self, evaluator, item: Evidence, vectors: np.ndarray) -> np.ndarray:
        def distances(fresh: np.ndarray) -> np.ndarray:
            found = np.asarray(evaluator.distances(item.task, fresh, item.observed))
            self._rejections[item.id] = self._rejections.get(item.id, 0) + int(
                np.sum(found >= self.epsilon))
            return found

        return memoised(self._distances[item.id], vectors, distances) < self.epsilon

    def _consistent(self, evaluator, vectors: np.ndarray,
                    evidence: Sequence[Evidence]) -> np.ndarray:
        """Which vectors explain every item of ``evidence`` (the most selective first)."""
        ok = np.ones(len(vectors), dtype=bool)
        order = sorted(evidence, key=lambda e: -self._rejections.get(e.id, 0))
        for item in order:
            if not ok.any():
                break
            index = np.flatnonzero(ok)
            ok[index] = self._explains(evaluator, item, vectors[index])
        return ok

    def _same_predictions(self, evaluator, vectors: np.ndarray, flipped: np.ndarray) -> np.ndarray:
        """Whether each flipped vector is at the same distance from every task as its
        original: the flipped capability then played no part in any observation."""
        same = np.ones(len(vectors), dtype=bool)
        for item in self.active:
            self._explains(evaluator, item, vectors)
            self._explains(evaluator, item, flipped)
            known = self._distances[item.id]
            same &= np.array([known[_key(a)] == known[_key(b)]
                              for a, b in zip(vectors, flipped)], dtype=bool)
        return same

    # ------------------------------------------------------------------ report
    def _prior_report(self) -> list[CapabilityReport]:
        mean = self.prior.mean()
        return [CapabilityReport(NEVER_EXERCISED if self.live[i] else INERT, float(mean[i]))
                for i in range(self.prior.size)]

    def _evidence_report(self, evaluator, most: int = SUPPORT_START,
                         settled: Sequence[str | None] = ()) -> list[CapabilityReport]:
        """Per capability: known (every hypothesis kept agrees, and changing it alone in
        any of them contradicts a task), never exercised (changing it alone changes no
        prediction of any task seen), undecided otherwise, with what it is confounded
        with (capabilities whose values the undecided one constrains).

        Where the hypotheses disagree on a capability the most probable 32 of them
        suffice to tell "undecided" from "never exercised". Where all of them agree, a
        "known" claim also needs every single change of the ``most`` most probable ones
        to contradict a task, and a search held at the other value to find nothing (see
        _counterexample; ``settled`` lists the claims already searched with less evidence,
        which need no new search). The single changes of all capabilities are checked in
        one batch (the planner runs them in parallel).
        """
        if not self.active:
            return self._prior_report()
        vectors, mass = self.distinct()
        theta = np.clip(mass @ vectors, 0.0, 1.0)
        mean = self.prior.mean()
        disagree = vectors.min(axis=0) != vectors.max(axis=0)
        vectors = vectors[np.argsort(-mass, kind='stable')[:most]]
        subsets: dict[int, tuple[np.ndarray, np.ndarray, bool]] = {}
        for i in map(int, np.flatnonzero(self.live)):
            both = bool(disagree[i])
            subset = vectors[:32] if both else vectors
            flipped = subset.copy()
            flipped[:, i] ^= True
            subsets[i] = (subset, flipped, both)
        if subsets:
            everything = unique_rows(np.vstack([f for _, f, _ in subsets.values()]))
            ok = dict(zip((_key(v) for v in everything),
                          self._consistent(evaluator, everything, self.active)))
        report = []
        for i in range(self.prior.size):
            if not self.live[i]:
                report.append(CapabilityReport(INERT, float(mean[i])))
                continue
            subset, flipped, both = subsets[i]
            consistent = np.array([ok[_key(v)] for v in flipped], dtype=bool)
            claim = KNOWN_PRESENT if subset[0, i] else KNOWN_ABSENT
            if not both and not consistent.any() and (
                    i < len(settled) and settled[i] == claim
                    or not self._counterexample(evaluator, i, not subset[0, i], flipped)):
                status = claim
            elif consistent.all() and self._same_predictions(evaluator, subset, flipped).all():
                status = NEVER_EXERCISED
            else:
                status = UNDECIDED
            probability = mean[i] if status == NEVER_EXERCISED and not self.prior.coupled \
                else theta[i]
            report.append(CapabilityReport(status, float(probability),
                                           self._confounded(i) if status == UNDECIDED else ()))
        return self._symmetric(report)

    def _symmetric(self, report: list[CapabilityReport]) -> list[CapabilityReport]:
        """Confounding as a relation: when the hypotheses that have ``move_kitchen`` all
        lack ``pick_kitchen``, the gap is large seen from ``move_kitchen`` but can be
        small seen from ``pick_kitchen`` (most hypotheses lack the move either way); each
        undecided capability lists the undecided ones that list it too."""
        index = {name: i for i, name in enumerate(self.names)}
        others = [list(entry.confounded_with) for entry in report]
        for i, entry in enumerate(report):
            for name in entry.confounded_with:
                j = index[name]
                if report[j].status == UNDECIDED and self.names[i] not in others[j]:
                    others[j].append(self.names[i])
        return [replace(entry, confounded_with=tuple(names[:CONFOUNDED_SHOWN]))
                for entry, names in zip(report, others)]

    def _counterexample(self, evaluator, index: int, value: bool, flipped: np.ndarray) -> bool:
        """Whether a hypothesis with capability ``index`` at ``value`` explains every task
        although no particle and no single change of one does. Without an exact support
        the particles, and a support closed only under single changes, can miss such a
        hypothesis when it differs from them in several capabilities at once; a short
        search held at that value looks for it before the capability is called known."""
        return bool(len(self._search(evaluator, self.active, starts=COUNTEREXAMPLE_STARTS,
                                     steps=COUNTEREXAMPLE_STEPS, clamp=(index, value),
                                     begin=flipped[:COUNTEREXAMPLE_POOL])))

    def _confounded(self, index: int) -> tuple[str, ...]:
        vectors, mass = self.distinct()
        has, lacks = vectors[:, index], ~vectors[:, index]
        if mass[has].sum() == 0 or mass[lacks].sum() == 0:
            return ()
        gap = np.abs(mass[has] @ vectors[has] / mass[has].sum()
                     - mass[lacks] @ vectors[lacks] / mass[lacks].sum())
        # A coupled prior ties capabilities before any task: only what the evidence adds
        # to that is a confound.
        gap = gap - self.prior.ties[index]
        gap[index] = 0.0
        gap[~self.live] = 0.0
        order = [j for j in np.argsort(-gap, kind='stable') if gap[j] >= CONFOUNDING_GAP]
        return tuple(self.names[j] for j in order[:CONFOUNDED_SHOWN])

    def _describe(self, item: Evidence, update: PosteriorUpdate) -> str:
        name = _task_name(item.task)
        if not update.explained:
            return (f'no capability vector explains {name}; it is kept in the log but '
                    'does not change the belief')
        parts = [f'{update.survivors} of {self.count} particles explained {name}']
        if update.survivors == 0:
            parts = [f'no particle explained {name}; new hypotheses do']
        if update.forgotten:
            parts.append(f'forgot {", ".join(update.forgotten)}')
        parts.append(f'{update.distinct} distinct hypotheses explain all '
                     f'{len(self.active)} tasks kept')
        decided = sum(entry.decided for entry in self.report)
        parts.append(f'{decided} of {int(self.live.sum())} capabilities decided')
        return '; '.join(parts)

    # --------------------------------------------------------------- resampling
    def _resample(self, rng: np.random.Generator, vectors: np.ndarray,
                  weights: np.ndarray) -> np.ndarray:
        """Systematic resampling of ``vectors`` to ``count`` equally weighted particles."""
        weights = np.asarray(weights, dtype=float)
        cumulative = np.cumsum(weights / weights.sum())
        cumulative[-1] = 1.0
        positions = (rng.random() + np.arange(self.count)) / self.count
        return vectors[np.searchsorted(cumulative, positions)].copy()

    # ------------------------------------------------------------- persistence
    def state(self) -> dict:
        """Particles, evidence bookkeeping and report as plain values (tasks excluded:
        the owner stores them)."""
        return {
            'particles': [''.join('1' if b else '0' for b in row)
                          for row in (self.particles if self.particles is not None else [])],
            'evidence': [{'id': e.id, 'active': e.active, 'note': e.note}
                         for e in self.evidence],
            'next_id': self._next_id,
            'support': None if self.support is None else {
                'vectors': [''.join('1' if b else '0' for b in row) for row in self.support[0]],
                'mass': [float(m) for m in self.support[1]]},
            'report': [{'status': r.status, 'probability': round(r.probability, 6),
                        'confounded_with': list(r.confounded_with)} for r in self.report],
        }

    def restore(self, state: dict, evidence: Sequence[tuple[Any, tuple]]) -> None:
        """The inverse of :meth:`state`, given the (task, observed) of every evidence item."""
        rows = state.get('particles', [])
        if any(len(row) != self.prior.size or set(row) - {'0', '1'} for row in rows):
            raise ConfigError('posterior particles of the wrong length or alphabet')
        self.particles = (np.array([[ch == '1' for ch in row] for row in rows], dtype=bool)
                          if rows else None)
        if self.particles is not None:
            self.count = len(self.particles)
        entries = state.get('evidence', [])
        if len(entries) != len(evidence):
            raise ConfigError(f'the posterior lists {len(entries)} evidence items but '
                              f'{len(evidence)} tasks were given')
        self.evidence = [Evidence(int(e['id']), task, tuple(observed), bool(e['active']),
                                  str(e.get('note', '')))
                         for e, (task, observed) in zip(entries, evidence)]
        self._next_id = int(state.get('next_id', len(self.evidence)))
        self._distances = {e.id: {} for e in self.evidence}
        support = state.get('support')
        self.support = None
        if support:
            vectors = np.array([[ch == '1' for ch in row] for row in support['vectors']],
                               dtype=bool)
            mass = np.array(support['mass'], dtype=float)
            if vectors.shape[1:] != (self.prior.size,) or len(mass) != len(vectors):
                raise ConfigError('posterior support of the wrong shape')
            self.support = (vectors, mass / mass.sum())
        self.report = [CapabilityReport(str(r['status']), float(r['probability']),
                                        tuple(r.get('confounded_with', ())))
                       for r in state.get('report', [])]
        if self.report and (len(self.report) != self.prior.size
                            or any(r.status not in STATUSES for r in self.report)):
            raise ConfigError('posterior report of the wrong length or with unknown statuses')


STATUS_LABELS = {KNOWN_PRESENT: 'known present', KNOWN_ABSENT: 'known absent',
                 UNDECIDED: 'undecided', NEVER_EXERCISED: 'never exercised',
                 INERT: 'inert here'}


def describe_report(names: Sequence[str], statuses: Sequence[str],
                    confounded: Sequence[Sequence[str]] = ()) -> list[str]:
    """The report in words, one line per status; an undecided capability is listed as
    undecided, with what it is confounded with, never as a fact."""
    confounded = list(confounded) or [()] * len(statuses)
    groups: dict[str, list[str]] = {status: [] for status in STATUSES}
    for name, status, others in zip(names, statuses, confounded):
        others = [o for o in others if o]
        groups.setdefault(status, []).append(
            name + (f' (with {", ".join(others)})' if others else ''))
    return [f'{STATUS_LABELS.get(status, status)}: {", ".join(items)}'
            for status, items in groups.items() if items]


def graded_distance(predicted: Sequence, observed: Sequence) -> float:
    """How far apart two trajectories are in propositions, not just in whole states.

    For states that are binary proposition vectors (ints used as bit masks) it is the
    mean, over the states of each trajectory, of the number of propositions in which
    the nearest state of the other differs, averaged over both directions; other states
    count 1 per differing state. Only a search aid: whether a hypothesis explains a task
    is decided by the Jaccard distance. Bit-mask states are compared all at once, as
    64-bit words.
    """
    if predicted and observed and all(type(s) is int and s >= 0 for s in (*predicted,
                                                                          *observed)):
        differ = _bit_differences(list(predicted), list(observed))
    else:
        differ = np.array([[int(a != b) for b in observed] for a in predicted], dtype=float)
    forward = differ.min(axis=0).mean()    # each observed state to the nearest predicted
    backward = differ.min(axis=1).mean()   # and back
    return float(forward + backward) / 2.0


def _bit_differences(first: list[int], second: list[int]) -> np.ndarray:
    """The number of differing bits of every pair (first x second) of non-negative ints."""
    words = max(1, (max(max(first), max(second)).bit_length() + 63) // 64)

    def as_words(states: list[int]) -> np.ndarray:
        mask = (1 << 64) - 1
        return np.array([[(s >> (64 * w)) & mask for w in range(words)] for s in states],
                        dtype=np.uint64)

    a, b = as_words(first), as_words(second)
    return np.bitwise_count(a[:, None, :] ^ b[None, :, :]).sum(axis=2, dtype=np.int64)


def _log_bernoulli(vectors: np.ndarray, probabilities: np.ndarray,
                   mask: np.ndarray | None = None) -> np.ndarray:
    terms = np.where(vectors, np.log(probabilities), np.log1p(-probabilities))
    if mask is not None:
        terms = terms[:, mask]
    return terms.sum(axis=1)


def _task_name(task) -> str:
    return str(getattr(task, 'task_id', task))


def exact_posterior(prior: CapabilityPrior, live: np.ndarray, epsilon: float, evaluator,
                    evidence: Sequence[tuple[Any, Sequence]], likelihood=None) -> np.ndarray:
    """P(c_i = 1 | evidence) by enumerating every vector over the live capabilities.

    Only for small problems (2^live vectors): the reference the particles are tested
    against. Inert capabilities keep their prior. Without ``likelihood`` a vector counts
    when it explains every task (the indicator); with a
    :class:`~cecm_ros.core.likelihood.LikelihoodModel` each task weighs it by its
    likelihood.
    """
    live_index = np.flatnonzero(live)
    if len(live_index) > 16:
        raise ConfigError(f'{len(live_index)} live capabilities are too many to enumerate')
    grid = ((np.arange(2 ** len(live_index))[:, None] >> np.arange(len(live_index))) & 1) \
        .astype(bool)
    vectors = np.ones((len(grid), prior.size), dtype=bool)
    vectors[:, live_index] = grid
    log_weight = prior.log_prob(vectors)
    terms, steps = np.zeros(len(vectors)), 0
    for task, observed in evidence:
        if likelihood is not None:
            terms = terms + likelihood.task_terms(task, vectors, observed)
            steps += len(observed) - 1
            continue
        explains = evaluator.distances(task, vectors, observed) < epsilon
        log_weight = np.where(explains, log_weight, -np.inf)
    if likelihood is not None:
        log_weight = log_weight + likelihood.combine(terms, steps)
    if np.isneginf(log_weight).all():
        raise ConfigError('no capability vector explains all the evidence')
    weight = np.exp(log_weight - log_weight.max())
    theta = weight @ vectors / weight.sum()
    return np.where(live, theta, prior.mean())
