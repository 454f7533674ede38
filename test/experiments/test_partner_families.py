"""Partners of other decision rules than the robot's planner, on streams of their own
(docs/partners.md): greedy, satisficing, habit and plug-ins, with real planners.

Every family is seeded and reproducible; no simulated partner searches with a seed an
estimator uses; a plug-in is loaded by path, module or entry point and what it returns
is checked; CE-CM-Div runs only under a likelihood that reads its plan sets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from core_fixtures import close_planner

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.domain import HUMAN, NOOP
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import DiversePlanEvaluator, evaluator_for
from cecm_ros.core.likelihood import LIKELIHOOD_SEED_BASE, likelihood_names, seeded_planners
from cecm_ros.core.likelihood_usage import UsageLikelihoodModel
from cecm_ros.core.partner_policies import PartnerPolicyError, PolicyPartner
from cecm_ros.core.partners import (
    PARTNER_SEED_SPAN,
    PartnerBehaviour,
    ReplanRule,
    RobotTeammate,
    SimulatedHuman,
    SimulatedPartner,
    partner_search_seed,
    run_shared_task,
)
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.pddl.planner import FastDownwardPlanner

STUBS = Path(__file__).resolve().parents[1] / 'partner_plugins' / 'stub_partners.py'


@pytest.fixture(scope='module')
def planner(model):
    planner = FastDownwardPlanner(model)
    yield planner
    close_planner(planner)


@pytest.fixture(scope='module')
def kitchen():
    return load_domain('overcooked')


@pytest.fixture(scope='module')
def mcts(kitchen):
    planner = planner_for(kitchen, plan_cache=False)
    yield planner
    planner.close()


def play(model, planner, behaviour: str, truth, seed: int, tasks: int = 2,
         search: str = 'own'):
    """``tasks`` tasks of one simulated partner (run seed ``seed``) with an optimistic
    robot that follows the world, as `cecm experiment` runs them."""
    partner = SimulatedPartner(planner, truth, PartnerBehaviour.parse(behaviour), seed=seed,
                               search=search)
    records = []
    try:
        for task in model.task_generator(seed).tasks(tasks):
            robot = RobotTeammate(planner, model.catalog.all_capable(),
                                  ReplanRule(follow_world=True))
            records.append(run_shared_task(model, task, robot, partner.for_task(task.task_id)))
    finally:
        partner.close()
    return records


def steps(records):
    return [[(s.robot.action, s.human.action) for s in r.steps] for r in records]


# ------------------------------------------------------------------ the families
@pytest.mark.parametrize('behaviour', ['greedy', 'satisficing', 'habit:0.8'])
def test_each_family_is_seeded_reproducible_and_ends_its_tasks(model, planner, behaviour):
    truth = model.catalog.resolve('high_capability')
    first = play(model, planner, behaviour, truth, seed=4)
    again = play(model, planner, behaviour, truth, seed=4)
    assert steps(first) == steps(again)
    assert [list(r.trajectory) for r in first] == [list(r.trajectory) for r in again]
    assert all(r.goal_reached for r in first)
    for record in first:   # whatever rule it decides by, it acts only as it can
        for step in record.steps:
            assert step.human.action == NOOP or model.partner_capable(step.human.action, truth)


def test_a_greedy_partner_answers_only_to_correct_and_acts_on_the_world(model, planner):
    truth = model.catalog.resolve('low_capability')
    records = play(model, planner, 'greedy', truth, seed=2, tasks=3)
    assert all(r.corrections == 0 for r in records)
    assert not any(step.answered for r in records for step in r.steps)
    # Its own actions come from the world it sees, not from a plan of the robot's: it
    # leaves the optimal plan of its capabilities somewhere.
    assert sum(r.partner_deviations for r in records) > 0
    assert any(step.human.changed for r in records for step in r.steps)


def test_a_greedy_partner_goes_for_the_nearest_gain(model, planner):
    """From a start where a dirty plate lies in its room, it washes it before anything
    else (two of its own actions), ignoring what the robot does."""
    from core_fixtures import make_task

    from cecm_ros.domains.tidyup.model import atom
    task = make_task('wash-first', [atom('clean', 'plate'), atom('item-at', 'plate', 'kitchen'),
                                    atom('item-at', 'toothbrush', 'bathroom')],
                     robot='study', human='kitchen', items={'plate': 'kitchen',
                                                            'toothbrush': 'bedroom'},
                     dirty=['plate'])
    truth = model.catalog.all_capable()
    partner = SimulatedPartner(planner, truth, PartnerBehaviour('greedy'), seed=1)
    human = partner.for_task(task.task_id)
    assert isinstance(human, PolicyPartner)
    human.begin_task(task)
    state = model.initial_state(task)
    first = human.choose_step(state, '(move robot study bedroom)').human
    assert first == '(pick human plate kitchen)'
    after, _ = model.transition(state, HUMAN, first, truth)
    human.advance(after)
    assert human.choose_step(after, NOOP).human == '(wash human plate kitchen)'
    assert human.review_intent('(move robot study bedroom)') is None


def test_a_greedy_cook_climbs_the_recipe_in_every_kitchen(kitchen, mcts):
    truth = kitchen.catalog.resolve('type_2')
    records = play(kitchen, mcts, 'greedy', truth, seed=0, tasks=3)
    assert steps(records) == steps(play(kitchen, mcts, 'greedy', truth, seed=0, tasks=3))
    assert any(r.goal_reached for r in records)
    used = {s.human.action.split()[0].strip('(') for r in records for s in r.steps
            if s.human.changed}
    assert used and used <= {'get_lettuce', 'get_onion', 'get_tomato', 'get_plate_1',
                             'get_plate_2', 'go_to_knife_1', 'go_to_knife_2',
                             'out_of_the_way'}   # (type_2 neither chops nor delivers)


def test_a_satisficing_partner_plans_with_another_search_of_its_own_seed(model, planner):
    truth = model.catalog.resolve('high_capability')
    tasks = model.task_generator(7).tasks(4)
    longer = 0
    for task in tasks:
        optimal = planner.plan(task, truth)
        seeds = []
        for seed in (partner_search_seed(7, task.task_id), partner_search_seed(8, task.task_id)):
            twin = planner.satisficing(seed)
            assert twin is not None and twin.search_seed == seed
            assert not twin.guarantees.cost_optimal
            try:
                plan = twin.plan(task, truth)
            finally:
                twin.close()
            assert model.goal_reached(task, plan.trajectory[-1])
            assert plan.cost >= optimal.cost
            seeds.append(plan.sequential)
        longer += plan.cost > optimal.cost
    assert longer > 0   # worse than optimal on some task


def test_a_habit_lasts_across_tasks_and_keeps_to_favourite_tools(model, planner, kitchen,
                                                                 mcts):
    truth = model.catalog.resolve('high_capability')
    partner = SimulatedPartner(planner, truth, PartnerBehaviour('habit', 1.0), seed=3)
    orders = []
    for task in model.task_generator(3).tasks(3):
        human = partner.for_task(task.task_id)
        assert isinstance(human, SimulatedHuman)
        human.begin_task(task)
        assert human.habitual and sorted(human.goal_order) == sorted(task.goal)
        orders.append(human.goal_order)
    # One habit for the partner: two atoms that two tasks share keep their order.
    for first in orders:
        for second in orders:
            shared = [atom for atom in first if atom in second]
            assert shared == [atom for atom in second if atom in shared]
    partner.close()
    # P = 0: the optimal partner.
    never = play(model, planner, 'habit:0', truth, seed=3)
    assert steps(never) == steps(play(model, planner, 'optimal', truth, seed=3))
    # In the kitchen it keeps to one plate and one knife where it can.
    cook = SimulatedPartner(mcts, kitchen.catalog.all_capable(),
                            PartnerBehaviour('habit', 1.0), seed=5)
    try:
        task = kitchen.tasks[0]
        human = cook.for_task(task.task_id)
        human.begin_task(task)
        declined = [kitchen.catalog.names[i] for i in np.flatnonzero(~human.willing)]
        assert len(declined) == 2 and {name.rsplit('_', 1)[0] for name in declined} == \
            {'handle_plate', 'handle_knife'}
        gates = {kitchen.gate[m] for s in human.plan.steps for m in [s.human.split()[0][1:]]
                 if s.human != NOOP}
        assert not gates & {kitchen.catalog.index(name) for name in declined}
    finally:
        cook.close()


# ------------------------------------------------------------ their own streams
@pytest.mark.parametrize('behaviour', ['optimal', 'independent', 'boltzmann:3', 'noisy:0.2',
                                       'forgo:0.5', 'preference', 'detour:0.2', 'greedy',
                                       'satisficing', 'habit:0.8',
                                       f'{STUBS}:Waiter'])
def test_no_simulated_partner_searches_with_an_estimator_seed(kitchen, mcts, behaviour):
    """The estimator searches with the planner's own seed and LIKELIHOOD_SEED_BASE + m
    (its extra searches); a partner of every behaviour, in every task, with neither."""
    estimator = {mcts.search_seed, *(twin.search_seed for twin in seeded_planners(mcts, 8))}
    assert LIKELIHOOD_SEED_BASE + 1 in estimator
    partner = SimulatedPartner(mcts, kitchen.catalog.resolve('type_2'),
                               PartnerBehaviour.parse(behaviour), seed=11)
    seen = set()
    try:
        for task in kitchen.tasks[:4]:
            human = partner.for_task(task.task_id)
            seed = human.planner.search_seed
            assert seed is not None and seed not in estimator
            assert 1 <= seed <= PARTNER_SEED_SPAN + 1 < LIKELIHOOD_SEED_BASE
            seen.add(seed)
    finally:
        partner.close()
    assert len(seen) == 4   # a stream of its own per task
    # Named as the oracle it is, it searches with the robot's own stream.
    oracle = SimulatedPartner(mcts, kitchen.catalog.resolve('type_2'),
                              PartnerBehaviour.parse(behaviour), seed=11, search='shared')
    try:
        assert oracle.oracle and oracle.for_task('A-lettuce_onion').planner.search_seed in \
            (mcts.search_seed, None) or behaviour == 'satisficing'
    finally:
        oracle.close()


def test_an_experiment_reports_the_partners_family_and_stream(tmp_path, capsys):
    out = tmp_path / 'greedy'
    assert cecm_main(['experiment', '--partner-behaviour', 'greedy', '--runs', '1',
                      '--tasks', '1', '--samples', '20', '--heldout', '0', '--jobs', '1',
                      '--out', str(out)]) == 0
    error = capsys.readouterr().err
    assert 'partner greedy: out of model (greedy)' in error
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['partner_family'] == 'greedy' and summary['partner_in_model'] is False
    assert summary['partner_search'] == 'own'
    oracle = tmp_path / 'oracle'
    assert cecm_main(['experiment', '--partner-search', 'shared', '--runs', '1', '--tasks',
                      '1', '--samples', '20', '--heldout', '0', '--jobs', '1', '--quiet',
                      '--out', str(oracle)]) == 0
    capsys.readouterr()
    summary = json.loads((oracle / 'summary.json').read_text())
    assert summary['partner_search'] == 'shared (oracle)' and summary['partner_in_model']


# --------------------------------------------------------------------- plug-ins
def test_a_plug_in_loads_by_path_module_and_entry_point(model, planner, tmp_path,
                                                        monkeypatch):
    truth = model.catalog.resolve('low_capability')
    by_path = play(model, planner, f'{STUBS}:RandomHelper', truth, seed=1, tasks=2)
    assert steps(by_path) == steps(play(model, planner, f'{STUBS}:RandomHelper', truth,
                                        seed=1, tasks=2))
    assert any(r.corrections for r in by_path)   # it told the robot to wait, sometimes
    monkeypatch.syspath_prepend(str(STUBS.parent))
    assert steps(play(model, planner, 'stub_partners:RandomHelper', truth, seed=1,
                      tasks=2)) == steps(by_path)
    dist = tmp_path / 'stub_partners_plugin-0.1.dist-info'
    dist.mkdir()
    (dist / 'METADATA').write_text('Metadata-Version: 2.1\nName: stub-partners-plugin\n'
                                   'Version: 0.1\n')
    (dist / 'entry_points.txt').write_text('[cecm_ros.partners]\n'
                                           'patient = stub_partners:Waiter\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    behaviour = PartnerBehaviour.parse('patient')
    assert behaviour.kind == 'plugin' and behaviour.family == 'plug-in'
    records = play(model, planner, 'patient', truth, seed=1, tasks=1)
    assert all(s.human.action == NOOP for r in records for s in r.steps)
    assert records[0].goal_reached   # the robot did it all


@pytest.mark.parametrize('name, message', [
    ('NoSuchClass', 'has no'), ('NoAct', 'has no act(view) method'),
    ('broken', 'could not be made: RuntimeError: the fitted model file is missing'),
    ('NOT_CALLABLE', 'is not a class or function')])
def test_a_plug_in_that_cannot_be_made_is_refused_naming_it(model, planner, name, message):
    text = f'{STUBS}:{name}'
    with pytest.raises(PartnerPolicyError, match=re.escape(message)) as raised:
        PartnerBehaviour.parse(text).check()
        SimulatedPartner(planner, model.catalog.all_capable(), PartnerBehaviour.parse(text))
    assert name in str(raised.value)


@pytest.mark.parametrize('name, message', [
    ('Overreacher', 'which its capabilities do not allow'),
    ('Ghost', 'cannot change the state here'),
    ('RobotHand', 'an action of the robot, not of the partner'),
    ('Gibberish', "unknown action 'fly'")])
def test_what_a_plug_in_returns_is_checked(model, planner, name, message):
    truth = model.catalog.resolve('low_capability')
    with pytest.raises(PartnerPolicyError, match=re.escape(message)) as raised:
        play(model, planner, f'{STUBS}:{name}', truth, seed=0, tasks=2)
    text = str(raised.value)
    assert name in text and 'step ' in text and 'task ' in text


def test_the_cli_refuses_a_plug_in_before_it_runs(tmp_path, capsys):
    out = tmp_path / 'out'
    assert cecm_main(['experiment', '--partner-behaviour', f'{STUBS}:Gone', '--runs', '1',
                      '--out', str(out)]) == 2
    error = capsys.readouterr().err
    assert "has no 'Gone'" in error and 'Traceback' not in error and not out.exists()


# ------------------------------------------------------- CE-CM-Div's plan sets
@pytest.mark.parametrize('likelihood', ['stepwise', 'fitted_stepwise'])
def test_cecm_div_under_a_likelihood_that_cannot_read_sets_is_refused(model, planner,
                                                                       likelihood):
    settings = EstimatorSettings(samples=10, likelihood=likelihood)
    with pytest.raises(ConfigError, match='choose a likelihood that reads the sets: '
                       + ', '.join(likelihood_names(reads_plan_sets=True))) as raised:
        make_estimator('cecm_div', model, evaluator_for('cecm_div', planner), settings)
    assert likelihood in str(raised.value)


@pytest.mark.parametrize('likelihood', [*likelihood_names(reads_plan_sets=True), None])
def test_cecm_div_reads_its_sets_under_the_likelihoods_that_can(model, planner, likelihood):
    """None is TidyUP's default (usage), which reads the sets."""
    settings = EstimatorSettings(samples=10, likelihood=likelihood)
    estimator = make_estimator('cecm_div', model, evaluator_for('cecm_div', planner),
                               settings)
    assert estimator.settings.likelihood in likelihood_names(reads_plan_sets=True)
    lik = estimator.likelihood_model
    if lik is not None:
        assert all(isinstance(e, DiversePlanEvaluator) for e in lik.evaluators)


def test_the_usage_likelihood_counts_every_plan_of_a_set(model, planner):
    """With sets, a capability used by one plan of a hypothesis's set of two counts half a
    search; without, the optimal plan's use alone counts."""
    from cecm_ros.core.likelihood import Likelihood

    task = model.task_generator(5).next_task()
    truth = model.catalog.resolve('high_capability')
    diverse = DiversePlanEvaluator(planner)
    single = evaluator_for('cecm', planner)
    form = Likelihood.named('usage', 0.24, 0.05, 0.0)
    observed = tuple(planner.plan(task, truth).trajectory)
    with_sets = UsageLikelihoodModel(form, [diverse], model.exercised_capabilities)
    without = UsageLikelihoodModel(form, [single], model.exercised_capabilities)
    sets = diverse.trajectory_sets(task, truth[None, :])[0]
    assert len(sets) > 1
    used = np.mean([model.exercised_capabilities(t) for t in sets], axis=0)
    assert np.any((used > 0) & (used < 1))   # some capability only some plans use
    assert with_sets.log_likelihood(task, truth[None, :], observed) != \
        without.log_likelihood(task, truth[None, :], observed)


def test_the_set_rules_reach_the_extra_searches(kitchen, mcts):
    settings = EstimatorSettings(samples=10, likelihood='kernel', likelihood_seeds=3)
    estimator = make_estimator('cecm_div', kitchen,
                               evaluator_for('cecm_div', mcts, set_diversity=0.2), settings)
    evaluators = estimator.likelihood_model.evaluators
    assert len(evaluators) == 3 and {e.diversity for e in evaluators} == {0.2}
