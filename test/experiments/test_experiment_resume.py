"""`cecm experiment` loses no finished run: each is written the moment it finishes, a run
that fails is recorded with its error while the others go on, and the same command
started again runs only what is missing (run_files.py, the sweep's mechanism)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from graph_fixtures import TIME_SCALE
from paths import REPO, TEST_DIR

from cecm_ros.cli.main import main as cecm_main

CLI = Path(sys.executable).with_name('cecm')
SHIPYARD = TEST_DIR / 'domains' / 'pddl' / 'shipyard' / 'domain.yaml'


def shipyard_experiment(out: Path) -> list[str]:
    return [str(CLI), 'experiment', '--domain', str(SHIPYARD), '--partner', 'landlubber',
            '--runs', '4', '--tasks', '6', '--samples', '200', '--heldout', '4', '--jobs',
            '1', '--quiet', '--no-plan-store', '--out', str(out)]


def test_a_killed_experiment_goes_on_where_it_stopped_with_the_same_command(tmp_path):
    out = tmp_path / 'out'
    process = subprocess.Popen(shipyard_experiment(out), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300 * TIME_SCALE
        while not list(out.glob('runs/*/run-0000.json')):
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, 'no run finished'
            time.sleep(0.02)
        process.kill()      # SIGKILL: nothing of it runs on, nothing is tidied up
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    written = {path: (path.read_bytes(), path.stat().st_mtime_ns)
               for path in out.glob('runs/*/run-*.json')}
    assert 1 <= len(written) < 4 and not (out / 'summary.json').exists()

    again = subprocess.run(shipyard_experiment(out), capture_output=True, text=True,
                           timeout=600 * TIME_SCALE)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f'{len(written)} of 4 runs were finished before and are kept' in again.stderr
    for path, (data, stamp) in written.items():     # kept, not redone
        assert path.read_bytes() == data and path.stat().st_mtime_ns == stamp
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['runs_from_before'] == len(written)
    assert summary['per_task'][-1]['runs'] == 4 and 'failed_runs' not in summary

    # The rows are those of an experiment that was never stopped.
    whole = tmp_path / 'whole'
    subprocess.run(shipyard_experiment(whole), check=True, capture_output=True,
                   timeout=600 * TIME_SCALE)
    assert (out / 'runs.csv').read_text() == (whole / 'runs.csv').read_text()


def shelf_cut_off(tmp_path: Path) -> Path:
    """The workshop with the shelf reachable from nowhere: a task whose part to inspect
    starts on the shelf cannot be done. The templates still allow the goal from other
    starts, so the domain loads; with base seed 16 only the second run draws such a task
    (runs 1 and 3 draw none)."""
    target = tmp_path / 'workshop'
    shutil.copytree(REPO / 'config' / 'domains' / 'workshop', target)
    spec = yaml.safe_load((target / 'domain.yaml').read_text())
    spec['static'] = [fact for fact in spec['static'] if 'shelf' not in fact]
    (target / 'domain.yaml').write_text(yaml.safe_dump(spec))
    return target / 'domain.yaml'


def test_a_run_that_fails_mid_experiment_loses_no_finished_run(tmp_path, capsys):
    out = tmp_path / 'out'
    command = ['experiment', '--domain', str(shelf_cut_off(tmp_path)), '--partner', 'full',
               '--runs', '3', '--tasks', '2', '--seed', '16', '--samples', '40', '--heldout',
               '0', '--jobs', '2', '--quiet', '--no-plan-store', '--out', str(out)]
    error = ('task task-1600049-1: the goal cannot be reached even with a fully capable '
             'human: no team makes (inspected panel) true from its start')
    assert cecm_main(command) == 2
    printed = capsys.readouterr()
    assert '[run 2/3] failed: ' + error in printed.err
    assert '1 run failed (the summary is of the others' in printed.err
    assert f'cecm run 2: {error}' in printed.err
    assert 'evidence after task 2 (2 runs;' in printed.out
    folder, = (out / 'runs').iterdir()
    assert sorted(p.name for p in folder.iterdir()) == \
        ['run-0000.json', 'run-0001.error.txt', 'run-0002.json']
    recorded = (folder / 'run-0001.error.txt').read_text()
    assert recorded.startswith(error) and 'Traceback' in recorded
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['failed_runs'] == [{'run': 2, 'error': error}]
    assert summary['per_task'][-1]['runs'] == 2
    stamps = {p: p.stat().st_mtime_ns for p in folder.glob('run-*.json')}

    # The same command: the finished runs are kept as they are; the failed one is tried
    # again (and fails again: the domain is the same).
    assert cecm_main(command) == 2
    assert '2 of 3 runs were finished before and are kept' in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in folder.glob('run-*.json')} == stamps
