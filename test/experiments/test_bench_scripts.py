"""The analysis scripts in bench/ that docs/experiments.md quotes."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO, VENV  # noqa: E402

from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import ExperimentSettings, run_once

BENCH = REPO / 'bench'
sys.path.insert(0, str(BENCH))

import declined_plans  # noqa: E402
import load_harness  # noqa: E402
import twin_partners  # noqa: E402


def _runs_csv(folder: Path, final: dict[int, float]) -> Path:
    folder.mkdir()
    with (folder / 'runs.csv').open('w', newline='') as stream:
        writer = csv.DictWriter(stream, ['run', 'task_index', 'heldout_agreement'])
        writer.writeheader()
        for run, value in final.items():
            writer.writerow({'run': run, 'task_index': 0, 'heldout_agreement': 0.0})
            writer.writerow({'run': run, 'task_index': 1, 'heldout_agreement': value})
    return folder


def _paired(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / 'paired_difference.py'), *args],
                          capture_output=True, text=True, timeout=60)


def test_the_paired_difference_counts_runs_won_tied_and_lost(tmp_path):
    first = _runs_csv(tmp_path / 'a', {0: 1.0, 1: 0.5, 2: 0.75})
    second = _runs_csv(tmp_path / 'b', {0: 0.5, 1: 0.5, 2: 1.0})
    done = _paired(str(first), str(second), '--task', '2')
    assert done.returncode == 0, done.stderr
    # differences +0.5, 0, -0.25: mean 0.083, sd 0.382, t(2) = 4.303: half width 0.949
    assert '+0.083 [-0.865, +1.032] over 3 runs; won 1, tied 1, lost 1' in done.stdout


def test_the_paired_difference_refuses_folders_of_other_runs(tmp_path):
    first = _runs_csv(tmp_path / 'a', {0: 1.0, 1: 0.5})
    second = _runs_csv(tmp_path / 'b', {0: 0.5})
    done = _paired(str(first), str(second), '--task', '2')
    assert done.returncode == 2 and 'must hold the same runs at task 2' in done.stderr
    done = _paired(str(first), str(first), str(second), '--task', '2')
    assert done.returncode == 2 and 'folders come in pairs' in done.stderr


def test_pairs_of_other_seeds_are_pooled_run_by_run(tmp_path):
    seed0 = (_runs_csv(tmp_path / 'a0', {0: 1.0, 1: 0.5}),
             _runs_csv(tmp_path / 'b0', {0: 0.5, 1: 0.5}))
    seed1 = (_runs_csv(tmp_path / 'a1', {0: 0.75}), _runs_csv(tmp_path / 'b1', {0: 1.0}))
    done = _paired(*map(str, seed0 + seed1), '--task', '2')
    assert done.returncode == 0, done.stderr
    # the same three differences as above, from two pairs
    assert '2 pairs pooled' in done.stdout
    assert '+0.083 [-0.865, +1.032] over 3 runs; won 1, tied 1, lost 1' in done.stdout


@pytest.fixture(scope='module')
def planner():
    with FastDownwardPlanner(TidyUpModel(), workers=1) as planner:
        yield planner


def test_a_partner_is_never_told_apart_from_itself(planner):
    assert twin_partners.first_telling_task(planner, 0, 2, 2, 'mobility_limited',
                                            'mobility_limited') == [None, None]


def test_runs_of_twins_end_alike_until_a_task_tells_them_apart(planner):
    """The estimator of `cecm experiment` sees only the trajectories: until the first
    task the script names, both twins' runs hold the same belief."""
    twins = ('mobility_limited', 'no_bedroom_study_work')
    runs, tasks = 4, 2
    telling = twin_partners.first_telling_task(planner, 0, runs, tasks, *twins)
    results = {}
    for partner in twins:
        settings = ExperimentSettings(partner=partner, runs=runs, tasks=tasks, seed=0,
                                      jobs=1, estimator=EstimatorSettings(samples=25),
                                      heldout=0)
        results[partner] = [run_once(planner.model, planner, settings, run)
                            for run in range(runs)]
    compared = 0
    for run, index in enumerate(telling):
        for position in range(tasks if index is None else index):
            a, b = (results[p][run][position] for p in twins)
            assert (a.theta, a.estimate) == (b.theta, b.estimate), (run, position)
            compared += 1
    assert compared, telling   # some task of these runs looks alike for both


def test_the_default_plan_set_explains_a_partner_who_declines_a_capability(planner):
    counts = declined_plans.count_explained(planner, 'high_capability', 0, 1, 2, 1.0,
                                            [0.0, None])
    assert counts['declined'] == 2   # forgo probability 1: a capability in every task
    assert counts['explained'][1] == 2
    # A set cut at the optimal cost holds the optimal plan alone (or its equals).
    assert counts['mean_set_size'][0] <= counts['mean_set_size'][1]


def test_the_load_harness_finds_internal_errors_in_node_logs_and_output(tmp_path):
    (tmp_path / 'graph').mkdir()
    (tmp_path / 'graph' / 'executor.log').write_text(
        "[INFO] [executor]: task t: started\n"
        "[ERROR] [executor]: task 't': internal error: ValueError('x'); it may be run again\n")
    (tmp_path / 'planner.log').write_text('[WARN] [joint_planner]: plan_task failed\n')
    found = load_harness.internal_errors(tmp_path, 'Traceback (most recent call last):\n')
    assert found == ["executor.log: [ERROR] [executor]: task 't': internal error: "
                     "ValueError('x'); it may be run again",
                     'output: Traceback (most recent call last):']


def test_the_load_harness_runs_a_selection_beside_burners_and_reports_it(tmp_path):
    """A small real run: one burner per two cores, a pytest selection that passes."""
    venv_pytest = VENV / 'bin' / 'pytest'
    if not venv_pytest.exists():
        pytest.skip(f'{venv_pytest} missing (make build)')
    done = subprocess.run(
        [sys.executable, str(BENCH / 'load_harness.py'), '--load', '0.5', '--no-idle',
         '--json', str(tmp_path / 'runs.json'), '--', 'test/core/test_core_trajectory.py'],
        cwd=BENCH.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '1 of 1 loaded runs clean' in done.stdout
    (run,) = json.loads((tmp_path / 'runs.json').read_text())
    assert run['passed'] > 0 and run['failed'] == 0 and run['internal_errors'] == []
    assert run['load'] == 0.5


def test_the_planning_free_benchmark_checks_both_versions_agree():
    """bench/planning_free.py asserts that each fast version answers as the plain one
    before it times them; a small run must get through those checks."""
    done = subprocess.run([sys.executable, str(BENCH / 'planning_free.py'), '--samples', '200',
                           '--repeats', '2', '--seed', '3'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'distinct rows, N = 200 x 40' in done.stdout
    assert 'graded distance, 30x30 of 150 bits' in done.stdout


def test_the_calibration_counts_known_and_wrong_and_bins_the_rest(tmp_path):
    """Three capabilities over two task rows: known present once wrong and once right,
    known absent right twice, an inert one left out, an undecided one binned; a cell
    left out by name is not read."""
    cell = tmp_path / 'sweep' / 'runs' / 'cecm-greedy-x'
    cell.mkdir(parents=True)
    rows = [{'status': 'PAI', 'theta': '1.0 0.0 0.5', 'truth': '001'},
            {'status': 'UPA', 'theta': '0.7 1.0 0.0', 'truth': '110'}]
    (cell / 'run-0000.json').write_text(json.dumps({'rows': rows}))
    other = tmp_path / 'sweep' / 'runs' / 'indicator-greedy-x'
    other.mkdir()
    (other / 'run-0000.json').write_text(json.dumps({'rows': rows}))
    done = subprocess.run([sys.executable, str(BENCH / 'calibration.py'),
                           str(tmp_path / 'sweep'), '--exclude', 'indicator'],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '1 cells, 2 task rows' in done.stdout
    assert 'known present: 2 reported, 1 wrong' in done.stdout
    assert 'known absent: 2 reported, 0 wrong' in done.stdout
    assert 'known, in all: 4 reported, 1 wrong (25.00%' in done.stdout
    assert '| [0.60, 0.80) | 1 | 0.700 | 1.000' in done.stdout


def test_the_estimate_errors_count_what_the_plans_get_wrong(tmp_path):
    """Two runs of one TidyUP cell at task 1: a capability planned present that the
    partner lacks, one planned absent that it has, an inert one left out, and the watched
    move capabilities' "known present" counted; a capability name it does not know is
    refused, naming the domain's."""
    cell = tmp_path / 'sweep' / 'runs' / 'default-greedy-x'
    cell.mkdir(parents=True)
    (cell / 'cell.json').write_text(json.dumps({'domain_spec': 'tidyup',
                                                'domain_options': {}}))
    size = 20
    truth = '1' * size
    over = '0' + '1' * (size - 1)          # move_kitchen planned present, lacks it
    under = '1' * (size - 1) + '0'         # wash_bathroom planned absent, has it
    inert = 'U' * (size - 1) + 'I'         # ... but inert: left out
    rows = [{'task_index': 0, 'estimate': '1' * size, 'truth': over, 'status': 'P' * size,
             'heldout_agreement': 0.5},
            {'task_index': 0, 'estimate': under, 'truth': truth, 'status': inert,
             'heldout_agreement': 1.0},
            {'task_index': 1, 'estimate': truth, 'truth': truth, 'status': 'P' * size,
             'heldout_agreement': 0.0}]
    for run, row in enumerate(rows[:2]):
        (cell / f'run-{run:04d}.json').write_text(json.dumps({'rows': [row, rows[2]]}))

    def errors(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(BENCH / 'estimate_errors.py'),
                               str(tmp_path / 'sweep'), '--task', '1', *extra],
                              capture_output=True, text=True, timeout=120)

    done = errors('--known', 'move_kitchen,move_bedroom')
    assert done.returncode == 0, done.stderr
    line = next(text for text in done.stdout.splitlines() if 'default-greedy-x' in text)
    assert line == ('| default-greedy-x | 2 | 0.750 | 0.50 | 0.00 | move_kitchen 1 |  | '
                    '2 of 4 |'), done.stdout
    refused = errors('--known', 'fly_kitchen')
    assert refused.returncode != 0
    assert 'fly_kitchen not among the capabilities of tidyup' in refused.stderr
    assert 'move_kitchen' in refused.stderr
