"""Plans on disk for the PDDL domains: what the store keeps, when it must not be reused,
and the switches of the CLI, the nodes and the benchmark (small settings)."""

import json
import sqlite3
import warnings

import numpy as np
import pytest
from paths import REPO  # noqa: E402

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.hypotheses import SharedPlanEvaluator
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.tidyup.household import Household
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.bench import run_session_benchmark
from cecm_ros.experiments.experiment import TaskResult
from cecm_ros.session.records import SessionJournal


def vectors(model, count, seed):
    rng = np.random.default_rng(seed)
    return rng.random((count, len(model.catalog))) < 0.8


def test_a_second_planner_on_the_same_store_plans_nothing_and_gets_the_same_plans(
        model, tmp_path):
    task = model.task_generator(3).next_task()
    samples = vectors(model, 40, 3)
    store = str(tmp_path / 'plans.sqlite')
    with planner_for(model, workers=2, plan_cache=store) as first:
        plans = SharedPlanEvaluator(first).plans(task, samples)
        made = first.calls
    assert made > 0 and first.store_hits == 0
    with planner_for(model, workers=2, plan_cache=store) as second:
        again = SharedPlanEvaluator(second).plans(task, samples)
        assert second.calls == 0
        assert second.store_hits == made
    assert [p.steps for p in plans] == [p.steps for p in again]
    assert [p.trajectory for p in plans] == [p.trajectory for p in again]
    assert [p.sequential for p in plans] == [p.sequential for p in again]
    assert [p.human_capabilities_used for p in plans] == \
        [p.human_capabilities_used for p in again]


def test_another_domain_never_reads_these_plans(model, tmp_path):
    """The key holds the grounded domain (its PDDL, actions, costs and gates): another
    domain, or a household with other rooms or costs, has another scope."""
    store = str(tmp_path / 'plans.sqlite')
    task = model.task_generator(0).next_task()
    truth = model.catalog.resolve('low_capability')
    with planner_for(model, plan_cache=store) as planner:
        planner.plan(task, truth)
    same = TidyUpModel()
    assert same.plan_scope() == model.plan_scope()
    text = (REPO / 'config' / 'tidyup_household.yaml') \
        .read_text()
    dearer = tmp_path / 'household.yaml'
    dearer.write_text(text.replace('robot: {move_cost: 1}', 'robot: {move_cost: 2}'))
    assert TidyUpModel(Household.from_yaml(dearer)).plan_scope() != model.plan_scope()
    workshop = load_domain('config/domains/workshop/domain.yaml')
    assert workshop.plan_scope() != model.plan_scope()
    with planner_for(same, plan_cache=store) as planner:
        planner.plan(task, truth)
        assert planner.calls == 0


def test_a_foreign_file_in_the_store_s_place_is_set_aside_not_trusted(model, tmp_path):
    path = tmp_path / 'plans.sqlite'
    connection = sqlite3.connect(path)
    connection.execute('CREATE TABLE plans (key TEXT, plan TEXT)')
    connection.execute("INSERT INTO plans VALUES ('x', 'not a plan')")
    connection.commit()
    connection.close()
    task = model.task_generator(0).next_task()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with planner_for(model, plan_cache=str(path)) as planner:
            plan = planner.plan(task, model.catalog.all_capable())
            assert planner.calls == 1
    assert plan.steps
    assert any('set aside' in str(w.message) or 'moved' in str(w.message) for w in caught)
    assert list(tmp_path.glob('plans.sqlite.*')), 'the foreign file is kept aside'


def test_a_store_that_cannot_be_opened_warns_and_plans_without(model, tmp_path):
    folder = tmp_path / 'plans.sqlite'
    folder.mkdir()
    with pytest.warns(RuntimeWarning, match='without a plan cache'):
        planner = planner_for(model, plan_cache=str(folder))
    with planner:
        assert planner.store is None
        assert planner.plan(model.task_generator(0).next_task(),
                            model.catalog.all_capable()).steps


def test_cli_experiment_twice_plans_nothing_the_second_time(tmp_path, capsys, monkeypatch):
    store = tmp_path / 'plans.sqlite'
    common = ['experiment', '--runs', '2', '--tasks', '2', '--samples', '30', '--heldout', '5',
              '--jobs', '2', '--quiet', '--plan-store', str(store)]
    assert cecm_main([*common, '--out', str(tmp_path / 'first')]) == 0
    assert cecm_main([*common, '--out', str(tmp_path / 'second')]) == 0
    first = json.loads((tmp_path / 'first' / 'summary.json').read_text())
    second = json.loads((tmp_path / 'second' / 'summary.json').read_text())
    assert first['planner_calls'] > 0
    assert second['planner_calls'] == 0
    assert first['per_task'] == second['per_task']
    capsys.readouterr()
    # --no-plan-store keeps nothing on disk, and the two options exclude each other.
    monkeypatch.setenv('CECM_CACHE_DIR', str(tmp_path / 'cache'))
    default_store = tmp_path / 'cache' / 'plans.sqlite'
    assert cecm_main(['experiment', '--runs', '1', '--tasks', '1', '--samples', '10',
                      '--heldout', '0', '--quiet', '--no-plan-store',
                      '--out', str(tmp_path / 'third')]) == 0
    assert not default_store.exists()
    with pytest.raises(SystemExit):
        cecm_main([*common, '--no-plan-store', '--out', str(tmp_path / 'fourth')])
    assert cecm_main(['experiment', '--runs', '1', '--tasks', '1', '--samples', '10',
                      '--plan-store', str(tmp_path), '--out', str(tmp_path / 'fifth')]) == 2
    assert 'directory' in capsys.readouterr().err


def test_the_cli_plan_store_is_on_by_default_in_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('CECM_CACHE_DIR', str(tmp_path / 'cache'))
    assert cecm_main(['plan', '--seed', '4']) == 0
    assert (tmp_path / 'cache' / 'plans.sqlite').is_file()
    assert cecm_main(['cache', 'info']) == 0


def test_the_session_benchmark_reports_latency_and_the_warm_repeat(model):
    result = run_session_benchmark(model, 'low_capability', samples=30, seed=2, jobs=2,
                                   tasks=2, candidates=2)
    assert {'first_task_s', 'update_median_s', 'update_p95_s', 'session_cold_s',
            'session_warm_s', 'warm_speedup'} <= set(result)
    assert result['session_plans_made'][0] > 0
    assert result['session_plans_made'][1] == 0
    assert result['same_result_warm']
    assert len(result['session_per_task']) == 2
    assert result['update_median_s'] <= result['update_p95_s']
    # Planned ahead (as the estimator node does while the team works), on a new store:
    # plans were made ahead of each update, and the run ends as the cold one did.
    assert result['same_result_ahead'] and result['ahead_plans_made'] > 0
    assert len(result['ahead_s']) == 2
    assert result['update_ahead_median_s'] <= result['update_ahead_p95_s']


def test_a_journal_gives_a_task_s_later_held_out_metrics_with_its_row(tmp_path):
    journal = SessionJournal(tmp_path / 'journal.jsonl')
    row = TaskResult(run=0, task_index=0, task_id='t', hamming=0.1, hamming_active=0.1,
                     correction_ratio=0.0, iou=1.0, infeasible_assigned=0,
                     accepted_samples=3, corrections=0, robot_decisions=2, goal_reached=True,
                     estimate='1', truth='1', theta='1.0', update_message='')
    journal.append('done', index=0, result=row.__dict__)
    assert np.isnan(journal.result(0).heldout_agreement)
    journal.append('metrics', index=0, heldout_agreement=0.75, hamming_identifiable=0.5)
    again = SessionJournal(tmp_path / 'journal.jsonl').result(0)
    assert again.heldout_agreement == 0.75 and again.hamming_identifiable == 0.5
    # Metrics of an earlier run of that position do not belong to a newer row.
    journal.append('done', index=0, result=row.__dict__)
    assert np.isnan(SessionJournal(tmp_path / 'journal.jsonl').result(0).heldout_agreement)


def test_the_plan_store_parameter_refuses_a_directory(tmp_path):
    from cecm_ros.nodes.domain_parameters import _plan_store_check

    assert _plan_store_check('') == ''
    assert _plan_store_check('off') == ''
    assert _plan_store_check(str(tmp_path / 'plans.sqlite')) == ''
    assert 'directory' in _plan_store_check(str(tmp_path))
    # A parameters file's bare `off` arrives as false (YAML), and means off.
    assert _plan_store_check(False) == '' and _plan_store_check(True) == ''
    assert 'neither' in _plan_store_check(3)


def test_the_planner_s_problem_holds_only_the_items_the_task_needs():
    """A bigger household: items the goal does not name (and nobody holds) stay out of
    the planner's problem; the plan's states still carry them, unchanged."""
    config = REPO / 'config' / 'households'
    big = load_domain('tidyup', household=config / 'tidyup_10_rooms.yaml',
                      capabilities=config / 'capabilities_10_rooms.yaml')
    task = big.task_generator(0).next_task()
    items = big.task_items(task)
    named = {part for text in task.goal for part in text.strip('()').split()}
    assert items == named & set(big.household.item_names)
    others = set(big.household.item_names) - items
    assert len(others) == 4
    text = big.problem_text(task)
    assert not any(f' {item} ' in text or f' {item})' in text for item in others)
    held = next(a for a in task.initial
                if a.startswith('(item-at ') and a.split()[1] in others)
    holding = task.__class__(task_id='held', initial=frozenset(
        {*task.initial - {held}, f'(holding human {held.split()[1]})'} - {'(hand-free human)'}),
        goal=task.goal)
    assert held.split()[1] in big.task_items(holding)
    with planner_for(big, plan_cache=False) as planner:
        plan = planner.plan(task, big.catalog.resolve('low_capability'))
    start, end = plan.trajectory[0], plan.trajectory[-1]
    for item in others:
        facts = {f for f in big.state_facts(start) if item in f.split()}
        assert facts and facts <= set(big.state_facts(end))
