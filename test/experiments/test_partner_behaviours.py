"""Simulated partners who are not optimal (docs/partners.md), with real planners.

Each behaviour is seeded: the same seed gives the same trajectory, and a stochastic one
another trajectory for some other seed. A partner that leaves its plan re-plans, keeps
enforcing its new plan and counts the step.
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from core_fixtures import close_planner, make_task

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.domain import HUMAN, NOOP
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.partners import (
    BEHAVIOUR_FORMS,
    PartnerBehaviour,
    RobotTeammate,
    SimulatedHuman,
    partner_seed,
    resolve_partner_behaviour,
    run_shared_task,
)
from cecm_ros.domains import load_domain
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import atom
from cecm_ros.experiments.experiment import ExperimentSettings
from cecm_ros.experiments.sweep import load_sweep

STOCHASTIC = ('boltzmann:1', 'noisy:0.5', 'detour:0.5', 'preference', 'forgo:1')



@pytest.fixture(scope='module')
def planner(model):
    planner = FastDownwardPlanner(model)
    yield planner
    close_planner(planner)


@pytest.fixture(scope='module')
def task():
    """Three goal atoms, two rooms apart: a few joint steps, several orders."""
    return make_task('three-items', [atom('item-at', 'plate', 'kitchen'),
                                     atom('clean', 'plate'),
                                     atom('item-at', 'toothbrush', 'bathroom')],
                     robot='living_room', human='bedroom',
                     items={'plate': 'bedroom', 'toothbrush': 'bedroom'}, dirty=['plate'])


@pytest.fixture(scope='module')
def truth(model):
    return model.catalog.resolve('high_capability')


def run(model, planner, task, truth, behaviour: str, seed: int):
    human = SimulatedHuman(planner, truth, seed=partner_seed(seed, task.task_id),
                           behaviour=PartnerBehaviour.parse(behaviour))
    robot = RobotTeammate(planner, model.catalog.all_capable())
    return run_shared_task(model, task, robot, human), human


# ------------------------------------------------------------------- parsing
@pytest.mark.parametrize('text', ['optimal', 'independent', 'boltzmann:2', 'noisy:0.25',
                                  'forgo:1', 'preference', 'detour:0', 'greedy',
                                  'satisficing', 'habit:0.8', 'my_pkg.partners:Persona',
                                  'partners/persona.py:Persona'])
def test_every_form_parses_and_reads_back(text):
    behaviour = PartnerBehaviour.parse(text)
    assert str(behaviour) == text and PartnerBehaviour.parse(str(behaviour)) == behaviour


@pytest.mark.parametrize('text, reason', [
    ('telepathic', 'unknown partner behaviour'), ('boltzmann', 'unknown partner behaviour'),
    ('optimal:1', 'unknown partner behaviour'), ('noisy:often', 'P must be a number'),
    ('noisy:1.5', 'noisy:P needs a P in [0, 1]'), ('boltzmann:-1', 'at least 0'),
    ('detour:nan', 'detour:P needs a P in [0, 1]'), ('habit', 'unknown partner behaviour'),
    ('habit:2', 'habit:P needs a P in [0, 1]'), ('greedy:1', 'unknown partner behaviour')])
def test_a_bad_behaviour_is_refused_naming_it(text, reason):
    with pytest.raises(ConfigError, match=re.escape(reason)) as raised:
        PartnerBehaviour.parse(text)
    assert repr(text) in str(raised.value)
    assert ', '.join(BEHAVIOUR_FORMS) in str(raised.value)


def test_the_old_options_map_to_behaviours_and_clash_with_another(model):
    assert resolve_partner_behaviour(None, 0.3) == PartnerBehaviour('forgo', 0.3)
    # Where its searches come from is not a behaviour (every partner searches on its own).
    assert resolve_partner_behaviour(None, partner_search='independent') == \
        PartnerBehaviour()
    assert resolve_partner_behaviour('boltzmann:2', partner_search='shared') == \
        PartnerBehaviour('boltzmann', 2.0)
    assert resolve_partner_behaviour('', default='independent') == \
        PartnerBehaviour('independent')
    assert resolve_partner_behaviour('forgo:0.3', 0.3) == PartnerBehaviour('forgo', 0.3)
    with pytest.raises(ConfigError, match='contradicts forgo_probability 0.3'):
        resolve_partner_behaviour('noisy:0.1', 0.3)
    with pytest.raises(ConfigError, match='partner_search must be one of'):
        resolve_partner_behaviour('boltzmann:2', partner_search='telepathic')
    with pytest.raises(ConfigError, match='contradicts'):
        ExperimentSettings(forgo_probability=0.2, partner_behaviour='detour:0.2')
    assert ExperimentSettings(forgo_probability=0.5).behaviour(model) == \
        PartnerBehaviour('forgo', 0.5)
    assert ExperimentSettings().behaviour(model) == PartnerBehaviour()
    # Overcooked's experiments default to a partner with a search of its own.
    overcooked = load_domain('overcooked')
    assert ExperimentSettings().behaviour(overcooked) == PartnerBehaviour('independent')
    assert ExperimentSettings(partner_behaviour='optimal').behaviour(overcooked) == \
        PartnerBehaviour()


@pytest.mark.parametrize('argv, message', [
    (['--partner-behaviour', 'telepathic'], "unknown partner behaviour 'telepathic'"),
    (['--forgo-probability', '0.3', '--partner-behaviour', 'noisy:0.1'],
     'contradicts forgo_probability 0.3'),
    (['--partner-behaviour', 'no_such_package.partners:Persona'],
     "cannot import module 'no_such_package.partners'"),
    (['--partner-behaviour', '/no/such/persona.py:Persona'], 'no file /no/such/persona.py')])
def test_the_cli_refuses_a_bad_or_clashing_behaviour(argv, message, tmp_path, capsys):
    assert cecm_main(['experiment', *argv, '--out', str(tmp_path / 'out')]) == 2
    error = capsys.readouterr().err
    assert message in error and 'Traceback' not in error
    assert not (tmp_path / 'out').exists()


def test_the_demo_refuses_a_bad_behaviour_before_it_starts(capsys):
    assert cecm_main(['demo', '--no-ros', '--partner-behaviour', 'noisy:2']) == 2
    assert 'noisy:P needs a P in [0, 1]' in capsys.readouterr().err


def test_a_sweep_takes_the_behaviour_and_refuses_a_bad_one(tmp_path):
    tidyup = load_domain('tidyup')
    path = tmp_path / 'sweep.yaml'
    path.write_text('fixed: {runs: 1, tasks: 1}\n'
                    'grid: {partner_behaviour: [optimal, "boltzmann:2"]}\n')
    sweep = load_sweep(path, lambda spec, **options: tidyup)
    assert [c.settings.partner_behaviour for c in sweep.cells] == ['optimal', 'boltzmann:2']
    path.write_text('fixed: {partner_behaviour: "noisy:often"}\n')
    with pytest.raises(ConfigError, match="partner behaviour 'noisy:often'"):
        load_sweep(path, lambda spec, **options: tidyup)


# ----------------------------------------------------------------- behaviours
def test_an_optimal_partner_follows_its_plan_and_the_old_forgo_option_is_forgo(
        model, planner, task, truth):
    record, human = run(model, planner, task, truth, 'optimal', 0)
    assert record.partner_deviations == 0 and human.replans == 0
    assert list(record.trajectory) == list(record.human_plan.trajectory)
    old = SimulatedHuman(planner, truth, forgo_probability=1.0, seed=3)
    new = SimulatedHuman(planner, truth, seed=3, behaviour=PartnerBehaviour('forgo', 1.0))
    assert old.begin_task(task).steps == new.begin_task(task).steps
    assert old.forgone == new.forgone is not None


@pytest.mark.parametrize('behaviour', ['noisy:0', 'detour:0', 'boltzmann:1000'])
def test_a_partner_that_never_deviates_is_the_optimal_one(model, planner, task, truth,
                                                          behaviour):
    optimal, _ = run(model, planner, task, truth, 'optimal', 5)
    record, _ = run(model, planner, task, truth, behaviour, 5)
    assert record.partner_deviations == 0
    assert list(record.trajectory) == list(optimal.trajectory)
    assert [(s.robot.action, s.human.action) for s in record.steps] == \
        [(s.robot.action, s.human.action) for s in optimal.steps]


@pytest.mark.parametrize('behaviour', STOCHASTIC)
def test_each_behaviour_is_seeded(model, planner, task, truth, behaviour):
    first, _ = run(model, planner, task, truth, behaviour, 1)
    again, _ = run(model, planner, task, truth, behaviour, 1)
    assert first.goal_reached and again.goal_reached
    assert list(first.trajectory) == list(again.trajectory)
    assert first.partner_deviations == again.partner_deviations
    others = [run(model, planner, task, truth, behaviour, seed)[0].trajectory
              for seed in range(2, 8)]
    assert any(list(t) != list(first.trajectory) for t in others), \
        f'{behaviour}: seven seeds gave one trajectory'


@pytest.mark.parametrize('behaviour', ['noisy:0.5', 'detour:0.5', 'boltzmann:1'])
def test_a_deviation_is_the_partners_alone_and_it_replans_from_there(
        model, planner, task, truth, behaviour):
    records = [run(model, planner, task, truth, behaviour, seed) for seed in range(4)]
    assert sum(r.partner_deviations for r, _ in records) > 0
    for record, human in records:
        deviated = [s for s in record.steps if s.deviated]
        assert len(deviated) == record.partner_deviations == human.deviations
        assert human.replans == human.deviations   # one new plan after each
        for step in deviated:   # the robot was made to wait; the partner's action applied
            assert step.robot.action == NOOP and step.human.action != NOOP
            assert step.human.changed
        assert record.goal_reached
        # The task's plan as it stands is the steps taken.
        taken = [(s.robot.action, s.human.action) for s in record.steps]
        assert [(s.robot, s.human) for s in human.task_plan().steps] == taken


def test_a_detour_is_an_action_its_plan_does_not_have(model, planner, task, truth):
    for seed in range(4):
        human = SimulatedHuman(planner, truth, seed=partner_seed(seed, task.task_id),
                               behaviour=PartnerBehaviour('detour', 1.0))
        plan = human.begin_task(task)
        step = human.choose_step()
        assert human.deviating and step.robot == NOOP
        assert step.human not in plan.actions_of(HUMAN)


def test_a_preference_partner_achieves_the_goal_in_its_own_order(model, planner, task,
                                                                 truth):
    orders = set()
    for seed in range(6):
        record, human = run(model, planner, task, truth, 'preference', seed)
        assert record.goal_reached and record.partner_deviations == 0
        order = human.goal_order
        assert sorted(order) == sorted(task.goal)
        orders.add(order)
        # Each prefix of its order holds from some step on, the earlier ones first.
        firsts = []
        for size in range(1, len(order) + 1):
            goal = model.state_from_atoms(order[:size])
            firsts.append(next(i for i, s in enumerate(record.trajectory)
                               if s & goal == goal))
        assert firsts == sorted(firsts)
    assert len(orders) > 1


def test_action_values_of_a_cost_optimal_plan(model, planner, task, truth):
    """The plan's first partner action is worth minus the plan's cost; every other is worth
    no more (a detour costs its action)."""
    plan = planner.plan(task, truth)
    state = model.initial_state(task)
    planned = plan.steps[0].human
    actions = [a for a in model.applicable_actions(state, HUMAN)
               if model.partner_capable(a, truth)]
    values = planner.action_values(task, state, truth, [*actions, planned])
    assert values[planned] == pytest.approx(-plan.cost)
    assert max(values.values()) == pytest.approx(-plan.cost)
    assert min(values.values()) < -plan.cost
    assert model.action_cost(NOOP) == 0.0 and model.action_cost(planned) >= 1.0


def test_the_partner_draws_nothing_from_the_estimators_stream():
    """Its seed mixes the run's seed with the task id: another task, another stream, and
    never the run's seed itself (which the estimator takes)."""
    assert partner_seed(3, 'task-1') != partner_seed(3, 'task-2')
    first = np.random.default_rng(partner_seed(3, 'task-1')).random(4)
    assert not np.allclose(first, np.random.default_rng(3).random(4))


# --------------------------------------------------------------- experiments
def test_an_experiment_records_the_deviation_rate(tmp_path, capsys):
    out = tmp_path / 'noisy'
    assert cecm_main(['experiment', '--partner-behaviour', 'noisy:0.5', '--runs', '1',
                      '--tasks', '2', '--samples', '20', '--heldout', '0', '--jobs', '1',
                      '--quiet', '--out', str(out)]) == 0
    capsys.readouterr()
    with open(out / 'runs.csv', newline='') as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and any(float(r['partner_deviation']) > 0 for r in rows)
    assert all(0 <= float(r['partner_deviation']) <= 1 for r in rows)
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['partner_behaviour'] == 'noisy:0.5'
    assert 'partner_deviation' in summary['per_task'][0]


def test_independent_in_tidyup_says_it_is_optimal(tmp_path, capsys):
    out = tmp_path / 'independent'
    assert cecm_main(['experiment', '--partner-behaviour', 'independent', '--runs', '1',
                      '--tasks', '1', '--samples', '20', '--heldout', '0', '--jobs', '1',
                      '--out', str(out)]) == 0
    assert 'planner has no seed' in capsys.readouterr().err
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['partner_behaviour'] == 'independent'
    with open(out / 'runs.csv', newline='') as handle:
        assert [r['partner_deviation'] for r in csv.DictReader(handle)] == ['0.0']


# ---------------------------------------------------------------------- node
def test_the_simulated_human_node_declares_and_checks_partner_behaviour():
    rclpy = pytest.importorskip('rclpy')
    from rclpy.parameter import Parameter

    from cecm_ros.nodes.simulated_human import SimulatedHumanNode

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = SimulatedHumanNode(context=context)
        try:
            assert node.get_parameter('partner_behaviour').value == ''
            refused = node.set_parameters([Parameter('partner_behaviour',
                                                     Parameter.Type.STRING, 'telepathic')])
            assert not refused[0].successful
            assert "unknown partner behaviour 'telepathic'" in refused[0].reason
            taken = node.set_parameters([Parameter('partner_behaviour',
                                                   Parameter.Type.STRING, 'boltzmann:2')])
            assert taken[0].successful
            assert node.get_parameter('partner_behaviour').value == 'boltzmann:2'
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
