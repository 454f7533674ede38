"""The analysis scripts in bench/ that docs/experiments.md quotes."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from cecm_ros.core.domain import TidyUpModel
from cecm_ros.core.planner import JointPlanner
from cecm_ros.core.tasks import TaskSequence

BENCH = Path(__file__).resolve().parents[1] / 'bench'
sys.path.insert(0, str(BENCH))

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


@pytest.fixture(scope='module')
def planner():
    with JointPlanner(TidyUpModel(), workers=1) as planner:
        yield planner


def test_a_partner_is_never_told_apart_from_itself(planner):
    assert twin_partners.told_apart(planner, 0, 2, 2, 'mobility_limited',
                                    'mobility_limited') == [None, None]


def test_a_task_that_tells_two_partners_apart_plans_two_trajectories(planner):
    pair = ('mobility_limited', 'full_capability')
    differs = twin_partners.told_apart(planner, 0, 3, 2, *pair)
    assert any(index is not None for index in differs), differs
    for run, index in enumerate(differs):
        sequence = TaskSequence(planner.model, run, count=2)
        for position in range(2):
            sequence.offer()
            task = sequence.take(0)
            a, b = (planner.plan(task, planner.model.catalog.resolve(p)).trajectory
                    for p in pair)
            if index is None or position < index:
                assert a == b, (run, position)
            elif position == index:
                assert a != b, (run, position)
