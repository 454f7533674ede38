"""The posterior over every task seen, its evidence report and the choice of informative
tasks (core/inference.py, core/task_choice.py), on the stub domain.

The stub here sends the partner to a place for each errand: the letter and the parcel
are in town, the plant in the garden, the keys in the hall, and nothing needs the
attic (inert). An errand the partner leaves to the robot says only that it lacks the
errand's own capability or the place's: a confound, as TidyUP's move, pick and place
make one, except where another errand showed the partner there. Seven live
capabilities make 128 vectors, so the particles are checked against the exact
posterior, and that against an enumeration by hand of who runs which errand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from stub_domain import Errands, OptimalErrandsPlanner

from cecm_ros.core.domain import Task
from cecm_ros.core.errors import ConfigError, PlannerTimeoutError
from cecm_ros.core.estimator import (
    CapabilityBelief,
    EstimatorSettings,
    alike_rows,
    make_estimator,
)
from cecm_ros.core.hypotheses import DiversePlanEvaluator, SharedPlanEvaluator
from cecm_ros.core.inference import (
    CONFOUNDED_PRESENT,
    INERT,
    KNOWN_ABSENT,
    KNOWN_PRESENT,
    NEVER_EXERCISED,
    UNDECIDED,
    CapabilityPrior,
    CapabilityReport,
    ParticlePosterior,
    describe_report,
    exact_posterior,
)
from cecm_ros.core.task_choice import choose_task, outcome_entropy
from cecm_ros.core.trajectory import jaccard_distance

PLACES = {'town': ('letter', 'parcel'), 'garden': ('plant',), 'hall': ('keys',),
          'attic': ()}
# Runs the letter and the keys; cannot run the parcel (seen: it is in town all the same)
# and cannot go to the garden (which of the plant's two it lacks no task can tell).
PARTNER = 'run-parcel=0,go-garden=0'


@pytest.fixture(scope='module')
def model():
    return Errands(places=PLACES)


@pytest.fixture(scope='module')
def planner(model):
    with OptimalErrandsPlanner(model) as shared:
        yield shared


@pytest.fixture(scope='module')
def evaluator(planner):
    return SharedPlanEvaluator(planner)


def observations(model, planner, partner, seed, count):
    truth = model.catalog.resolve(partner)
    tasks = model.task_generator(seed).tasks(count)
    return truth, [(task, planner.plan(task, truth).trajectory) for task in tasks]


def posterior(model, p=0.5, particles=500, window=None, seed=1, prior=None):
    live = ~model.inert_mask
    prior = prior or CapabilityPrior(len(model.catalog), p)
    result = ParticlePosterior(prior, live, 0.24, particles,
                               sweeps=4, window=window, names=model.catalog.names)
    result.start(np.random.default_rng(seed))
    return result


def explains_by_hand(model, vector, task, observed) -> bool:
    """Whether a partner with ``vector`` leaves the team the observed trajectory, by the
    stub's rules rather than its planner: the partner is cheaper than the robot, so it
    runs every errand of the goal it can (it needs the errand's capability and, at a
    place, the place's) and the robot the others; the final state shows which it ran."""
    names = model.catalog.names

    def can(errand):
        place = model.place_of.get(errand)
        return vector[names.index(f'run-{errand}')] and \
            (place is None or vector[names.index(f'go-{place}')])

    runs = {e for e in model.errands if f'(done {e})' in task.goal and can(e)}
    return runs == {e for e in model.errands if f'(ran-by-partner {e})' in observed[-1]}


def exact_by_hand(model, evidence, log_prior):
    """P(c_i = 1 | evidence) over every vector of the live capabilities (inert ones at
    1), each weighed by its prior if it explains every task."""
    live = np.flatnonzero(~model.inert_mask)
    grid = (np.arange(2 ** len(live))[:, None] >> np.arange(len(live))) & 1
    vectors = np.ones((len(grid), len(model.catalog)), dtype=bool)
    vectors[:, live] = grid.astype(bool)
    keep = np.array([all(explains_by_hand(model, v, task, observed)
                         for task, observed in evidence) for v in vectors])
    weight = np.exp(log_prior(vectors)) * keep
    return weight @ vectors / weight.sum()


def independent(p):
    return lambda vectors: np.where(vectors, np.log(p), np.log1p(-p)).sum(axis=1)


def test_the_stub_is_small_enough_to_enumerate(model):
    assert int((~model.inert_mask).sum()) == 7 and model.inert_capabilities == ['go-attic']
    # One row per place of (go, run): the town's row holds the parcel, the letter is
    # outside the rows.
    assert alike_rows(model.catalog, ~model.inert_mask) == ((4, 1), (5, 2), (6, 3))


@pytest.mark.parametrize('p, partner, seed', [(0.5, PARTNER, 0), (0.8, PARTNER, 2),
                                              (0.5, 'go-town=0,run-keys=0', 5)])
def test_particles_match_the_exact_posterior_after_three_tasks(model, planner, evaluator, p,
                                                               partner, seed):
    _, evidence = observations(model, planner, partner, seed, 3)
    belief = posterior(model, p)
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([1, index + 1]))
    prior = CapabilityPrior(len(model.catalog), p)
    exact = exact_posterior(prior, ~model.inert_mask, 0.24, evaluator, evidence)
    by_hand = exact_by_hand(model, evidence, independent(p))
    live = ~model.inert_mask
    assert exact[live] == pytest.approx(by_hand[live], abs=1e-9)
    assert exact[~live] == pytest.approx(p)
    assert np.abs(belief.theta() - exact).max() <= 0.05
    # The exact posterior is not trivial here: the evidence moved some capabilities
    # without deciding them.
    open_ = (exact > 0.01) & (exact < 0.99) & live & ~np.isclose(exact, p)
    assert open_.any()


@pytest.mark.parametrize('partner, seed', [(PARTNER, 0), ('run-parcel=0,go-hall=0', 1)])
def test_particles_match_the_exact_posterior_under_the_alike_rooms_prior(
        model, planner, evaluator, partner, seed):
    rows = alike_rows(model.catalog, ~model.inert_mask)
    assert len(rows) == 3 and {len(row) for row in rows} == {2}    # go, run
    prior = CapabilityPrior(len(model.catalog), 0.8, patterns=rows, concentration=1.0)
    _, evidence = observations(model, planner, partner, seed, 3)
    belief = posterior(model, prior=prior)
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([1, index + 1]))
    exact = exact_posterior(prior, ~model.inert_mask, 0.24, evaluator, evidence)
    live = ~model.inert_mask
    assert exact[live] == pytest.approx(exact_by_hand(model, evidence, prior.log_prob)[live])
    assert np.abs(belief.theta() - exact).max() <= 0.05
    plain = exact_posterior(CapabilityPrior(len(model.catalog), 0.8), ~model.inert_mask,
                            0.24, evaluator, evidence)
    # The prior matters here: the town was seen entered and its parcel left, so a place
    # the evidence leaves open is likelier entered than the independent prior says.
    assert np.abs(exact - plain).max() > 0.05
    # 'cautious' under a coupled prior: a confounded capability is planned present when
    # the other rooms make it clearly probable.
    cautious, theta = belief.estimate('cautious', 0.5), belief.theta()
    confounded = [i for i, entry in enumerate(belief.report)
                  if entry.status == UNDECIDED and entry.confounded_with]
    assert confounded
    for i in confounded:
        assert cautious[i] == (theta[i] >= CONFOUNDED_PRESENT)


def test_the_alike_rooms_prior_is_a_distribution_with_the_same_marginals():
    prior = CapabilityPrior(7, 0.7, patterns=((0, 1), (2, 3), (4, 5)), concentration=1.0)
    grid = ((np.arange(128)[:, None] >> np.arange(7)) & 1).astype(bool)
    mass = np.exp(prior.log_prob(grid))
    assert mass.sum() == pytest.approx(1.0)
    assert mass @ grid == pytest.approx(np.full(7, 0.7))
    draws = prior.sample(np.random.default_rng(0), 50000)
    frequency = np.bincount((draws * (1 << np.arange(7))).sum(axis=1), minlength=128)
    assert frequency / len(draws) == pytest.approx(mass, abs=0.01)
    # A room's pattern takes after the others': two rooms without kind 1 make a third
    # more likely to lack it than the independent prior says.
    both = ~grid[:, 1] & ~grid[:, 3]
    third = mass[both & ~grid[:, 5]].sum() / mass[both].sum()
    assert third > 0.3 + 0.1
    with pytest.raises(ConfigError, match='same kinds'):
        CapabilityPrior(4, 0.5, patterns=((0, 1), (2,)), concentration=1.0)
    with pytest.raises(ConfigError, match='not both'):
        CapabilityPrior(4, 0.5, groups=((0, 1),), coupling=0.5, patterns=((0,), (1,)),
                        concentration=1.0)


def test_only_what_the_evidence_adds_to_the_priors_ties_is_a_confound(model):
    """Under the alike-rooms prior two rooms share a pattern with probability 1/(1 + A)
    before any task, so the same kind in two rooms is tied by the prior itself (a gap of
    (1/(1 + A)) * 1 = 0.5 at A = 1); kinds within one room are not."""
    live = ~model.inert_mask
    rows = alike_rows(model.catalog, live)
    alike = ParticlePosterior(CapabilityPrior(len(model.catalog), 0.8, patterns=rows,
                                              concentration=1.0), live, 0.24, 10)
    gaps = alike.prior.ties
    (go_a, run_a), (go_b, _) = rows[0], rows[1]
    assert gaps[go_a, go_b] == pytest.approx(0.5, abs=0.03)
    assert gaps[go_a, run_a] == pytest.approx(0.0, abs=0.03)
    assert not posterior(model).prior.ties.any()       # the independent prior ties nothing


def test_every_hypothesis_kept_explains_every_task(model, planner, evaluator):
    truth, evidence = observations(model, planner, PARTNER, 0, 3)
    belief = posterior(model)
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([2, index]))
        vectors, mass = belief.distinct()
        assert mass.sum() == pytest.approx(1.0)
        for seen, seen_observed in evidence[:index + 1]:
            assert (evaluator.distances(seen, vectors, seen_observed) < 0.24).all()
    # The truth explains everything, so what it has is never known absent, nor what it
    # lacks known present.
    statuses = [entry.status for entry in belief.report]
    assert KNOWN_ABSENT in statuses and KNOWN_PRESENT in statuses
    for status, present in zip(statuses, truth | model.inert_mask):
        if status == KNOWN_ABSENT:
            assert not present
        if status == KNOWN_PRESENT:
            assert present


def test_report_statuses_and_confounding(model, planner, evaluator):
    _, evidence = observations(model, planner, PARTNER, 0, 3)
    belief = posterior(model)
    assert {e.status for e in belief.report} == {NEVER_EXERCISED, INERT}
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([3, index]))
    statuses = {model.catalog.names[i]: e for i, e in enumerate(belief.report)}
    assert {name: e.status for name, e in statuses.items()} == {
        'run-letter': KNOWN_PRESENT, 'go-town': KNOWN_PRESENT, 'run-parcel': KNOWN_ABSENT,
        'run-plant': UNDECIDED, 'go-garden': UNDECIDED, 'run-keys': KNOWN_PRESENT,
        'go-hall': KNOWN_PRESENT, 'go-attic': INERT}
    for name in model.inert_capabilities:
        assert statuses[name].status == INERT
    theta = belief.theta()
    for index, entry in enumerate(belief.report):
        if entry.status == KNOWN_PRESENT:
            assert theta[index] == 1.0
        elif entry.status == KNOWN_ABSENT:
            assert theta[index] == 0.0
        elif entry.status == UNDECIDED:
            assert 0.0 < theta[index] < 1.0
            assert entry.confounded_with
            for other in entry.confounded_with:
                assert statuses[other].status != INERT
                # A relation: each undecided confounder lists this one back.
                back = statuses[other]
                if back.status == UNDECIDED and len(back.confounded_with) < 4:
                    assert model.catalog.names[index] in back.confounded_with
    assert statuses['run-plant'].confounded_with == ('go-garden',)
    lines = describe_report(model.catalog.names, [e.status for e in belief.report],
                            [e.confounded_with for e in belief.report])
    assert any(line.startswith('known present: ') for line in lines)
    assert 'undecided: run-plant (with go-garden), go-garden (with run-plant)' in lines
    assert not any(name in line for line in lines if line.startswith('known')
                   for name, e in statuses.items() if e.status == UNDECIDED)


def test_the_estimate_plans_undecided_capabilities_by_the_chosen_rule(model, planner,
                                                                      evaluator):
    _, evidence = observations(model, planner, PARTNER, 0, 2)
    belief = posterior(model)
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([4, index]))
    undecided = [i for i, e in enumerate(belief.report) if e.status == UNDECIDED]
    assert undecided
    assert not belief.estimate('absent', 0.5)[undecided].any()
    assert belief.estimate('present', 0.5)[undecided].all()
    decided = [i for i, entry in enumerate(belief.report) if entry.decided]
    assert decided
    for i in decided:
        for rule in ('absent', 'present', 'marginal', 'mode'):
            assert belief.estimate(rule, 0.5)[i] == \
                (belief.report[i].status == KNOWN_PRESENT)
    with pytest.raises(ConfigError, match='rule'):
        belief.estimate('coin', 0.5)
    # 'cautious': missing where confounded with others, else by probability.
    cautious, theta = belief.estimate('cautious', 0.5), belief.theta()
    for i in undecided:
        confounded = bool(belief.report[i].confounded_with)
        assert cautious[i] == (not confounded and theta[i] > 0.5)
    # 'mode': the undecided capabilities of the kept hypothesis with the most prior mass
    # (every kept one explains every task, so that is the most probable one).
    vectors, _ = belief.distinct()
    mode = belief.estimate('mode', 0.5)
    completed = np.where([e.status == UNDECIDED for e in belief.report], vectors, mode)
    best = belief.prior.log_prob(completed).max()
    assert belief.prior.log_prob(mode[None])[0] == pytest.approx(best)
    assert any((row[undecided] == mode[undecided]).all() for row in vectors)


def test_analogy_plans_a_confounded_place_like_the_town_the_evidence_decided(
        model, planner, evaluator):
    """The town was seen entered and its parcel left: the garden, whose plant the partner
    left too, is planned entered with the plant left, as far as the evidence allows."""
    _, evidence = observations(model, planner, PARTNER, 0, 3)
    belief = ParticlePosterior(CapabilityPrior(len(model.catalog), 0.5), ~model.inert_mask,
                               0.24, 300, names=model.catalog.names,
                               rows=alike_rows(model.catalog, ~model.inert_mask))
    belief.start(np.random.default_rng(0))
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([6, index]))
    names = model.catalog.names
    garden = [names.index('go-garden'), names.index('run-plant')]
    assert list(belief.estimate('cautious', 0.5)[garden]) == [False, False]
    assert list(belief.estimate('analogy', 0.5)[garden]) == [True, False]
    decided = [i for i, entry in enumerate(belief.report) if entry.decided]
    assert (belief.estimate('analogy', 0.5)[decided] ==
            belief.estimate('cautious', 0.5)[decided]).all()


def rooms_posterior(hypotheses, statuses, rows):
    """A posterior over rooms of (move, pick, place) whose kept hypotheses and report are
    set by hand: the rows say which capability indices form each room."""
    size = len(statuses)
    names = [f'c{i}' for i in range(size)]
    prior = CapabilityPrior(size, 0.8)
    belief = ParticlePosterior(prior, np.ones(size, dtype=bool), 0.24, 10, sweeps=0,
                               names=names, rows=rows)
    vectors = np.array([[bit == '1' for bit in h] for h in hypotheses], dtype=bool)
    mass = np.exp(prior.log_prob(vectors))
    belief.particles = vectors.copy()
    belief.support = (vectors, mass / mass.sum())
    undecided = [i for i, s in enumerate(statuses) if s == 'U']
    words = {'P': KNOWN_PRESENT, 'A': KNOWN_ABSENT, 'U': UNDECIDED, 'N': NEVER_EXERCISED}
    belief.report = [CapabilityReport(words[s], 0.5, tuple(names[j] for j in undecided
                                                           if j != i) if s == 'U' else ())
                     for i, s in enumerate(statuses)]
    return belief


# Two rooms A and B; capability order: move_A, pick_A, place_A, move_B, pick_B, place_B.
ROOMS = ((0, 1, 2), (3, 4, 5))
# Room A closed to the partner somehow, and no task has said how: by the feet (any
# pick and place) or by the hands (enters, picks and places nothing).
CLOSED_A = ['000', '001', '010', '011', '100']


def test_analogy_plans_a_confounded_room_like_a_room_the_evidence_decided():
    # Room B was decided "cannot enter, can pick and place": room A is planned alike.
    feet = rooms_posterior([a + '011' for a in CLOSED_A], 'UUUAPP', ROOMS)
    assert list(feet.estimate('cautious', 0.5)) == [0, 0, 0, 0, 1, 1]
    assert list(feet.estimate('analogy', 0.5)) == [0, 1, 1, 0, 1, 1]
    # Only what room B decided is copied: with its place never tried, room A's place
    # stays missing as `cautious` has it.
    untried = rooms_posterior([a + '011' for a in CLOSED_A], 'UUUAPN', ROOMS)
    assert list(untried.estimate('analogy', 0.5)) == [0, 1, 0, 0, 1, 1]
    # Decided "enters, picks and places nothing": room A likewise.
    hands = rooms_posterior([a + '100' for a in CLOSED_A], 'UUUPAA', ROOMS)
    assert list(hands.estimate('analogy', 0.5)) == [1, 0, 0, 1, 0, 0]
    # A room with nothing known absent says nothing about how another room is closed,
    # even where the evidence would allow room A to be like it.
    open_b = rooms_posterior([a + '111' for a in CLOSED_A + ['110']], 'UUUPPN', ROOMS)
    assert list(open_b.estimate('analogy', 0.5)) == list(open_b.estimate('cautious', 0.5)) \
        == [0, 0, 0, 1, 1, 1]
    # No kept hypothesis has room A like room B: the evidence wins over the analogy.
    no_room = rooms_posterior([a + '010' for a in CLOSED_A if a != '100'], 'UUUPPA', ROOMS)
    assert list(no_room.estimate('analogy', 0.5)) == list(no_room.estimate('cautious', 0.5))


def test_analogy_leaves_alone_the_kinds_on_which_decided_rooms_disagree():
    rows = ROOMS + ((6, 7, 8),)
    # Room B cannot be entered but is handled; room C is entered but not handled. Both
    # moves and hands disagree, so room A stays as `cautious` plans it.
    mixed = rooms_posterior([a + '011100' for a in CLOSED_A], 'UUUAPPPAA', rows)
    assert list(mixed.estimate('analogy', 0.5)) == list(mixed.estimate('cautious', 0.5))
    # Without rows (a domain with no rooms of alike kinds) the rule is `cautious`.
    flat = rooms_posterior([a + '011' for a in CLOSED_A], 'UUUAPP', ())
    assert list(flat.estimate('analogy', 0.5)) == list(flat.estimate('cautious', 0.5))
    for rows in (((0, 1, 2), (3, 4)), ((0, 1, 2), (2, 3, 4)), ((0, 1, 2), (3, 4, 9)),
                 ((0, 1, 2), (3, 4, 5.0)), ((0, 1, 2), (3, 4, True)), 5):
        with pytest.raises(ConfigError, match='rows of rooms'):
            rooms_posterior(['000111'], 'UUUPPP', rows)


def test_analogies_of_two_rooms_must_hold_together():
    # Rooms A and C are both confounded; room B was decided "can enter, can pick up,
    # cannot put down". Each room alone may be like B, but the evidence needs A or C to
    # lack the pick: only the first room in order is planned like B, the other as
    # `cautious` plans it.
    rows = ((0, 1, 2), (3, 4, 5), (6, 7, 8))
    hypotheses = [a + '110' + c for a in ('000', '110') for c in ('000', '110')
                  if '000' in (a, c)]
    both = rooms_posterior(hypotheses, 'UUUPPAUUU', rows)
    assert list(both.estimate('analogy', 0.5)) == [1, 1, 0, 1, 1, 0, 0, 0, 0]


class TwoExplanations:
    """An evaluator of six capabilities whose one task is explained by exactly two
    vectors three changes apart; any other vector predicts a state that differs from the
    observed one in as many propositions as it differs from the second explanation."""

    observed = 1 << 10
    first = np.array([0, 1, 1, 1, 1, 1], dtype=bool)
    second = np.array([1, 0, 0, 1, 1, 1], dtype=bool)

    def trajectory_sets(self, task, samples, progress=None):
        sets = []
        for vector in np.asarray(samples, dtype=bool):
            if (vector == self.first).all() or (vector == self.second).all():
                sets.append([(self.observed,)])
            else:
                differ = int(np.packbits(vector ^ self.second, bitorder='little')[0])
                sets.append([(self.observed ^ differ,)])
        return sets

    def distances(self, task, samples, observed, progress=None):
        return np.array([0.0 if trajectories[0] == tuple(observed) else 1.0
                         for trajectories in self.trajectory_sets(task, samples)])

    def predicted_trajectories(self, task, samples):
        return [t[0] for t in self.trajectory_sets(task, samples)]


def test_no_capability_is_called_known_while_a_hypothesis_with_the_other_value_explains_all():
    """The particles all hold the first explanation, whose single changes explain
    nothing: only a search finds the second, so capability 0 (absent in the first,
    present in the second) and 1 and 2 must stay undecided; 3-5 agree in both."""
    domain = TwoExplanations()
    belief = ParticlePosterior(CapabilityPrior(6, 0.8), np.ones(6, dtype=bool), 0.24, 50,
                               sweeps=0)
    belief.start(np.random.default_rng(0))
    belief.particles = np.repeat(domain.first[None], 50, axis=0)
    belief.update('task', (domain.observed,), domain, np.random.default_rng(1))
    assert (belief.particles == domain.first).all()
    statuses = [entry.status for entry in belief.report]
    assert statuses[:3] == [UNDECIDED] * 3
    assert statuses[3:] == [KNOWN_PRESENT] * 3


def test_a_contradicting_task_forgets_the_older_evidence(model, planner, evaluator):
    """The partner changed: the new task is explained only once the old ones are gone."""
    _, before = observations(model, planner, 'all', 7, 2)
    _, after = observations(model, planner, 'run-letter=0', 9, 1)
    # Before, the partner ran the letter in both tasks; now it leaves it to the robot.
    assert all('(ran-by-partner letter)' in observed[-1] for _, observed in before)
    assert '(ran-by-partner letter)' not in after[0][1][-1]
    assert '(ran-by-partner parcel)' in after[0][1][-1]
    belief = posterior(model)
    for index, (task, observed) in enumerate(before):
        belief.update(task, observed, evaluator, np.random.default_rng([5, index]))
    update = belief.update(*after[0], evaluator, np.random.default_rng([5, 9]))
    assert update.explained
    assert update.forgotten == [before[0][0].task_id, before[1][0].task_id]
    assert 'forgot' in update.message
    assert [e.active for e in belief.evidence] == [False, False, True]
    vectors, _ = belief.distinct()
    assert (evaluator.distances(after[0][0], vectors, after[0][1]) < 0.24).all()


def test_an_unexplainable_observation_is_set_aside(model, planner, evaluator):
    _, evidence = observations(model, planner, PARTNER, 0, 2)
    belief = posterior(model)
    belief.update(*evidence[0], evaluator, np.random.default_rng(6))
    theta = belief.theta().copy()
    task, observed = evidence[1]
    # Nobody moves and the goal is not reached: no capability vector plans that.
    update = belief.update(task, [observed[0]] * 3, evaluator, np.random.default_rng(7))
    assert not update.explained and 'no capability vector explains' in update.message
    assert belief.theta() == pytest.approx(theta)
    assert [e.active for e in belief.evidence] == [True, False]


def test_a_window_keeps_only_the_recent_tasks(model, planner, evaluator):
    _, evidence = observations(model, planner, PARTNER, 0, 3)
    belief = posterior(model, window=2)
    for index, (task, observed) in enumerate(evidence):
        belief.update(task, observed, evaluator, np.random.default_rng([8, index]))
    assert [e.active for e in belief.evidence] == [False, True, True]
    assert 'window' in belief.evidence[0].note


def test_the_coupled_prior_is_a_distribution_with_the_same_marginals():
    prior = CapabilityPrior(4, 0.7, groups=((0, 1, 2),), coupling=0.5)
    grid = ((np.arange(16)[:, None] >> np.arange(4)) & 1).astype(bool)
    mass = np.exp(prior.log_prob(grid))
    assert mass.sum() == pytest.approx(1.0)
    assert mass @ grid == pytest.approx(np.full(4, 0.7))
    draws = prior.sample(np.random.default_rng(0), 20000)
    assert draws.mean(axis=0) == pytest.approx(np.full(4, 0.7), abs=0.02)
    together = draws[:, :3].all(axis=1) | (~draws[:, :3]).all(axis=1)
    assert together.mean() == pytest.approx(mass[grid[:, :3].all(1) | (~grid[:, :3]).all(1)]
                                            .sum(), abs=0.02)
    with pytest.raises(ConfigError):
        CapabilityPrior(4, 1.0)
    with pytest.raises(ConfigError):
        CapabilityPrior(4, 0.5, groups=((0, 1), (1, 2)), coupling=0.3)


@pytest.mark.parametrize('alike_rooms', [0.0, 1.0])
def test_the_estimators_posterior_round_trips_and_continues_identically(
        model, planner, evaluator, tmp_path, alike_rooms):
    _, evidence = observations(model, planner, PARTNER, 0, 3)
    settings = EstimatorSettings(samples=200, alike_rooms=alike_rooms)
    first = make_estimator('cecm', model, evaluator, settings, seed=5)
    first.update(*evidence[0])
    path = tmp_path / 'belief.json'
    first.belief.save(path)
    assert not list(tmp_path.glob('.belief.json.*'))   # nothing left of the atomic write
    resumed = make_estimator('cecm', model, evaluator, belief=CapabilityBelief.load(path))
    for estimator in (first, resumed):
        for task, observed in evidence[1:]:
            estimator.update(task, observed)
    assert resumed.belief.to_dict() == first.belief.to_dict()
    data = json.loads(path.read_text())
    assert data['format'] == 'cecm_ros/capability_belief/2'
    assert [t['task_id'] for t in data['posterior']['tasks']] == [evidence[0][0].task_id]
    assert bool(data['posterior']['patterns']) == (alike_rooms > 0)
    assert resumed.belief.posterior.prior == first.belief.posterior.prior
    rows = alike_rows(model.catalog, ~model.inert_mask)
    assert resumed.belief.posterior.rows == rows and len(rows) == 3
    # A belief saved before the rooms were kept gets them from the catalog.
    del data['posterior']['rows']
    older = CapabilityBelief.from_dict(data)
    assert older.posterior.rows == ()
    assert make_estimator('cecm', model, evaluator, belief=older).belief.posterior.rows == rows


def test_a_failed_update_leaves_the_posterior_untouched(model, planner, evaluator):
    _, evidence = observations(model, planner, PARTNER, 0, 2)
    estimator = make_estimator('cecm', model, evaluator, EstimatorSettings(samples=100),
                               seed=2)
    estimator.update(*evidence[0])
    before = estimator.belief.to_dict()

    def fail(done, total):
        raise RuntimeError('planner crashed')

    with pytest.raises(RuntimeError, match='crashed'):
        estimator.update(*evidence[1], progress=fail)
    with pytest.raises(ConfigError, match='not a state'):
        estimator.update(evidence[1][0], [1 << 200])
    assert estimator.belief.to_dict() == before


def test_outcome_entropy_counts_only_distinguishable_outcomes():
    one, two = (1, 2, 3, 4), (1, 5, 6, 7)
    assert outcome_entropy([one, one], np.array([0.5, 0.5]), 0.24, jaccard_distance) == 0.0
    assert outcome_entropy([one, two], np.array([0.5, 0.5]), 0.24, jaccard_distance) \
        == pytest.approx(1.0)
    near = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    nearer = near + (11,)
    assert outcome_entropy([near, nearer], np.array([0.5, 0.5]), 0.24, jaccard_distance) == 0.0
    assert outcome_entropy([one, two, one], np.array([0.25, 0.25, 0.5]), 0.24,
                           jaccard_distance) == pytest.approx(-(0.75 * np.log2(0.75)
                                                                + 0.25 * np.log2(0.25)))


def split_hypotheses(model):
    truth = model.catalog.resolve(PARTNER)
    lacking = truth.copy()
    lacking[model.catalog.index('run-keys')] = False
    return truth, lacking


def test_task_choice_prefers_a_task_that_splits_the_hypotheses(model, evaluator):
    tasks = model.task_generator(1).tasks(3)
    truth, lacking = split_hypotheses(model)
    vectors = np.array([truth, lacking])
    choice = choose_task(tasks, vectors, np.array([0.5, 0.5]), evaluator, 0.24)
    gains = choice.information
    assert len(gains) == len(tasks) and choice.index == int(np.argmax(gains))
    # Only a task with the keys in its goal tells the two apart, by one bit.
    assert gains == pytest.approx([float('(done keys)' in t.goal) for t in tasks])
    assert choice.index == 1
    # Two identical hypotheses cannot be told apart by any task.
    same = choose_task(tasks, np.array([truth, truth]), np.array([0.5, 0.5]), evaluator, 0.24)
    assert same.index == 0 and max(same.information) == 0.0
    assert choose_task(tasks[:1], vectors, np.array([0.5, 0.5]), evaluator, 0.24).index == 0
    with pytest.raises(ValueError, match='no candidate'):
        choose_task([], vectors, np.array([0.5, 0.5]), evaluator, 0.24)


def test_a_candidate_whose_search_times_out_is_left_out_of_the_choice(model, evaluator):
    """A slow candidate must not end the session: the others are ranked without it."""
    tasks = model.task_generator(1).tasks(3) + [
        Task('keys-only', frozenset(), frozenset({'(done keys)', '(done plant)'}))]
    vectors, weights = np.array(split_hypotheses(model)), np.array([0.5, 0.5])
    full = choose_task(tasks, vectors, weights, evaluator, 0.24)

    class Slow:
        distance = evaluator.distance

        def __init__(self, slow):
            self.slow = slow

        def predicted_trajectories(self, task, samples):
            if task.task_id in self.slow:
                raise PlannerTimeoutError(f'{task.task_id}: no plan within 0.001 s')
            return evaluator.predicted_trajectories(task, samples)

    best = tasks[full.index].task_id
    choice = choose_task(tasks, vectors, weights, Slow({best}), 0.24)
    assert choice.skipped == [full.index] and choice.index != full.index
    assert np.isnan(choice.information[full.index])
    others = [g for i, g in enumerate(full.information) if i != full.index]
    assert choice.information[choice.index] == max(others) > 0.0
    with pytest.raises(PlannerTimeoutError, match='every one of the 4 candidate tasks'):
        choose_task(tasks, vectors, weights, Slow({t.task_id for t in tasks}), 0.24)


def test_diverse_sets_depend_only_on_the_task_and_the_hypothesis(model):
    task = model.task_generator(9).next_task()
    samples = np.random.default_rng(3).random((12, len(model.catalog))) < 0.7
    loose = dict(cost_slack=1.0, diversity=0.1)
    with OptimalErrandsPlanner(model) as fresh:
        first = DiversePlanEvaluator(fresh, **loose).plan_sets(task, samples)
    with OptimalErrandsPlanner(model) as busy:
        # Plan much else first: other vectors and the full-capability plan.
        others = np.random.default_rng(9).random((40, len(model.catalog))) < 0.4
        SharedPlanEvaluator(busy).plans(task, others)
        busy.plan(task, model.catalog.all_capable())
        second = DiversePlanEvaluator(busy, **loose).plan_sets(task, samples[::-1])[::-1]
    assert [[p.sequential for p in s] for s in first] == \
        [[p.sequential for p in s] for s in second]
    assert any(len(s) > 1 for s in first)
