"""The experiment runner, its outputs and the update benchmark (small settings)."""

import csv
import json

import pytest

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.experiments.bench import run_update_benchmark
from cecm_ros.experiments.experiment import METRICS, ExperimentSettings, mean_ci95, run_experiment

SMALL = EstimatorSettings(samples=25)



def test_mean_ci95_uses_student_t():
    summary = mean_ci95([1.0, 2.0, 3.0])
    assert summary['mean'] == 2.0
    assert summary['ci95_high'] - 2.0 == pytest.approx(4.303 * 1.0 / 3 ** 0.5)
    assert mean_ci95([5.0]) == {'mean': 5.0, 'ci95_low': 5.0, 'ci95_high': 5.0}


def test_settings_are_validated():
    with pytest.raises(ConfigError, match='method'):
        ExperimentSettings(method='oracle')
    with pytest.raises(ConfigError, match='go together'):
        ExperimentSettings(switch_partner='high_capability')


def copied_present(letters, capability):
    """Whether `analogy` may have planned this undecided capability present: it is of a
    kind rooms share, and every room with a kind known absent (a witness) that decided
    this kind decided it present."""
    kinds = ('move', 'pick', 'place')
    witnesses = {room for (room, action), letter in letters.items()
                 if letter == 'A' and action in kinds}
    decided = [letters[room, capability.action] for room in witnesses - {capability.room}
               if letters[room, capability.action] in 'PA']
    return capability.action in kinds and bool(decided) and set(decided) == {'P'}


def test_small_experiment_writes_summary_and_csv(model, tmp_path):
    settings = ExperimentSettings(partner='low_capability', runs=2, tasks=2, seed=1, jobs=2,
                                  estimator=SMALL, heldout=6)
    summary = run_experiment(settings, model, tmp_path, quiet=True)
    written = json.loads((tmp_path / 'summary.json').read_text())
    assert written == json.loads(json.dumps(summary))
    assert written['settings']['runs'] == 2 and written['wall_time_s'] > 0
    assert [row['task'] for row in written['per_task']] == [1, 2]
    for row in written['per_task']:
        # TidyUP's tasks are endless: nothing is held out for open-loop plans.
        assert 'heldout_feasible' not in row
        for name in METRICS:
            if name == 'heldout_feasible':
                continue
            value = row[name]
            assert set(value) == {'mean', 'ci95_low', 'ci95_high'}
            assert value['ci95_low'] <= value['mean'] <= value['ci95_high']
        assert 0.0 <= row['hamming']['mean'] <= 1.0
        assert list(row['theta']) == list(model.catalog.names)
    rows = list(csv.DictReader(open(tmp_path / 'runs.csv')))
    assert len(rows) == 4 and all(row['goal_reached'] == 'True' for row in rows)
    # The per-capability means are those of the runs' thetas, whose threshold is the estimate.
    for index, row in enumerate(written['per_task']):
        thetas = [[float(v) for v in r['theta'].split()] for r in rows
                  if int(r['task_index']) == index]
        first = model.catalog.names[0]
        assert row['theta'][first]['mean'] == pytest.approx(
            sum(t[0] for t in thetas) / len(thetas), abs=1e-3)
    # What the evidence decided is what the robot plans with; the default rule (analogy)
    # plans an undecided one present only where its probability says so, or where another
    # room with a kind known absent is its template; untouched ones keep the prior of 0.8.
    capabilities = model.catalog.capabilities
    for r in rows:
        letters = {(c.room, c.action): letter for c, letter in zip(capabilities, r['status'])}

        assert len(r['status']) == 20 and int(r['decided']) == sum(
            letter in 'PA' for letter in r['status'])
        assert r['wrong_known'] == '0'
        for value, bit, letter, capability in zip(r['theta'].split(), r['estimate'],
                                                  r['status'], capabilities):
            expected = {'P': ('1.000', '1'), 'A': ('0.000', '0'), 'N': ('0.800', '1'),
                        'I': ('0.800', '1')}.get(letter)
            if expected:
                assert (value, bit) == expected
            else:
                assert letter == 'U' and 0.0 < float(value) < 1.0
                assert bit == '0' or float(value) > 0.5 or copied_present(letters, capability)
        assert 0.0 <= float(r['heldout_agreement']) <= 1.0
    assert written['identifiable_capabilities']['pick_living_room=0,pick_bedroom=0,'
                                                'pick_study=0,place_living_room=0,'
                                                'place_bedroom=0,place_study=0,'
                                                'wash_living_room=0,wash_bedroom=0,'
                                                'wash_study=0']


def test_methods_share_seeds_and_an_informed_robot_is_not_corrected(model, tmp_path):
    settings = dict(partner='low_capability', runs=1, tasks=2, seed=2, jobs=1,
                    estimator=SMALL, heldout=0)
    optimistic = run_experiment(ExperimentSettings(method='optimistic', **settings), model,
                                tmp_path / 'o', quiet=True)
    pessimistic = run_experiment(ExperimentSettings(method='pessimistic', **settings), model,
                                 tmp_path / 'p', quiet=True)
    tasks = [[r['task_id'] for r in csv.DictReader(open(tmp_path / d / 'runs.csv'))]
             for d in ('o', 'p')]
    assert tasks[0] == tasks[1]
    # The optimistic robot keeps an all-ones estimate: its Hamming distance is fixed.
    assert {row['hamming']['mean'] for row in optimistic['per_task']} == {9 / 20}
    assert pessimistic['per_task'][0]['hamming']['mean'] >= 0.0


def test_partner_switch_changes_the_truth_mid_run(model, tmp_path):
    settings = ExperimentSettings(partner='low_capability', method='optimistic', runs=1,
                                  tasks=2, jobs=1, switch_partner='high_capability',
                                  switch_after=1, heldout=0)
    run_experiment(settings, model, tmp_path, quiet=True)
    truths = [row['truth'] for row in csv.DictReader(open(tmp_path / 'runs.csv'))]
    assert truths[0] != truths[1]
    assert truths[1] == ''.join('1' if b else '0' for b in
                                model.catalog.resolve('high_capability'))


def test_cli_compare_writes_plots_and_comparison(tmp_path, capsys):
    out = tmp_path / 'cmp'
    code = cecm_main(['experiment', '--compare', 'cecm,optimistic', '--runs', '1',
                      '--tasks', '2', '--samples', '15', '--jobs', '2', '--quiet',
                      '--heldout', '4', '--out', str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert f'summary: {out / "comparison.json"}' in printed
    comparison = json.loads((out / 'comparison.json').read_text())
    assert set(comparison) == {'cecm', 'optimistic'}
    assert (out / 'hamming.png').stat().st_size > 1000
    assert (out / 'capabilities.png').stat().st_size > 1000
    assert (out / 'heldout_agreement.png').stat().st_size > 1000
    assert (out / 'cecm' / 'summary.json').exists()


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert cecm_main(['experiment', '--partner', 'superhuman', '--runs', '1']) == 2
    assert 'superhuman' in capsys.readouterr().err
    assert cecm_main(['plan', '--capabilities', 'fly_kitchen=0']) == 2
    assert 'fly_kitchen' in capsys.readouterr().err


def test_cli_estimator_variants():
    from cecm_ros.cli.main import build_parser
    from cecm_ros.tools.options import estimator_settings

    def settings(*argv):
        return estimator_settings(build_parser().parse_args(list(argv)))

    for command in ('experiment', 'demo'):
        assert settings(command).variant == 'posterior'          # the default everywhere
    paper = settings('experiment', '--inference', 'paper')
    assert (paper.variant, paper.prior, paper.window) == ('paper', 0.8, None)
    sequential = settings('experiment', '--inference', 'sequential')
    assert (sequential.proposal, sequential.window) == ('belief', 1)
    assert settings('experiment', '--inference', 'sequential', '--window', '0').window is None
    assert settings('experiment', '--window', '2').window == 2
    decayed = settings('demo', '--inference', 'sequential', '--decay', '0.5')
    assert (decayed.window, decayed.decay) == (None, 0.5)         # decay replaces the window
    with pytest.raises(SystemExit):                                # one kind of forgetting
        settings('experiment', '--window', '2', '--decay', '0.5')
    # The alike-rooms prior reaches the settings, and the demo says it is on.
    from cecm_ros.tools.demo_graph import _estimator_variant
    assert settings('demo', '--alike-rooms', '1').alike_rooms == 1.0
    assert 'alike rooms' in _estimator_variant(build_parser().parse_args(
        ['demo', '--alike-rooms', '1']))
    assert 'alike rooms' not in _estimator_variant(build_parser().parse_args(['demo']))
    with pytest.raises(ConfigError, match='decay'):
        settings('experiment', '--decay', '0.5')                  # not for the posterior


def test_bench_reports_its_figures(model):
    result = run_update_benchmark(model, 'low_capability', samples=12, seed=0, jobs=2)
    assert {'naive_s', 'fast_s', 'speedup', 'agreement', 'same_estimate',
            'peak_rss_mb'} <= set(result)
    assert result['naive_planner_calls'] == 12
    assert result['fast_planner_calls'] >= 1
    assert 0.0 <= result['agreement'] <= 1.0


def test_bench_over_several_tasks_adds_up_its_tasks(model):
    result = run_update_benchmark(model, 'high_capability', samples=6, seed=1, jobs=2, tasks=2)
    assert [t['naive_planner_calls'] for t in result['per_task']] == [6, 6]
    assert result['naive_planner_calls'] == 12
    assert result['naive_s'] == pytest.approx(sum(t['naive_s'] for t in result['per_task']),
                                              abs=0.01)
    assert result['same_estimate'] == all(t['same_estimate'] for t in result['per_task'])
