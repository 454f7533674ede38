"""`cecm sweep`: the sweep file's checks, a small TidyUP sweep on this machine, resuming it,
its rows against `cecm experiment`'s, and the same sweep on a local Ray head.

The sweeps run through the installed `cecm` (a subprocess, as a user runs it). They share
the test session's plan store (conftest.py sets CECM_CACHE_DIR): the first plans, the
later ones mostly read, which must not change a number.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from graph_fixtures import TIME_SCALE

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.errors import ConfigError
from cecm_ros.domains import load_domain
from cecm_ros.experiments.sweep import Progress, load_sweep

CLI = Path(sys.executable).with_name('cecm')
RAY = Path(sys.executable).with_name('ray')
IN_CI = os.environ.get('CI', '').lower() in ('true', '1', 'yes')

TINY = """\
name: tiny
description: two partners and two methods, two short runs each
fixed:
  domain: tidyup
  runs: 2
  tasks: 2
  samples: 30
  heldout: 4
  seed: 1
grid:
  partner: [low_capability, high_capability]
  method: [cecm, pessimistic]
"""
# The cell whose rows are compared with `cecm experiment`'s, and its arguments there.
COMPARED = {'partner': 'low_capability', 'method': 'cecm'}
EXPERIMENT_ARGS = ['--partner', 'low_capability', '--method', 'cecm', '--runs', '2',
                   '--tasks', '2', '--samples', '30', '--heldout', '4', '--seed', '1']


@pytest.fixture(scope='module')
def tidyup():
    return load_domain('tidyup')


@pytest.fixture(scope='module')
def loader(tidyup):
    """load_domain, with TidyUP loaded once for the whole module."""
    def load(spec, **options):
        return tidyup if spec == 'tidyup' and not options else load_domain(spec, **options)
    return load


def write(folder: Path, text: str, name: str = 'sweep.yaml') -> Path:
    path = folder / name
    path.write_text(text)
    return path


def sweep_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    assert CLI.is_file(), f'{CLI} is missing: run `make build`'
    return subprocess.run([str(CLI), 'sweep', *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env or dict(os.environ),
                          timeout=1800)


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline='') as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------- the sweep file
BAD_FILES = {
    'unknown top-level key': ('grids: {}\n', "unknown key 'grids'"),
    'not a mapping': ('- partner\n', 'a sweep file is a mapping'),
    'not YAML': ('fixed: [unclosed\n', 'not valid YAML'),
    'unknown setting': ('fixed: {sample: 30}\n', "fixed: unknown setting 'sample'"),
    'jobs is no setting': ('fixed: {jobs: 2}\n', 'fixed: jobs is not a sweep setting'),
    'wrong type': ('fixed: {runs: two}\n', "fixed.runs: runs must be an integer, got 'two'"),
    'a bool is no number': ('fixed: {prior: true}\n', 'fixed.prior: prior must be a number'),
    'below the minimum': ('fixed: {tasks: 0}\n', 'fixed.tasks: tasks must be at least 1'),
    'unknown method': ('grid: {method: [cecm, oracle]}\n',
                       "grid.method[1]: method must be one of cecm, cecm_div, optimistic, "
                       "pessimistic, qlearning, got 'oracle'"),
    'unknown inference': ('grid: {inference: [posterior, exact]}\n',
                          "grid.inference[1]: inference must be one of posterior, paper, "
                          "sequential, got 'exact'"),
    'unknown partner': ('grid: {partner: [low_capability, lowcap]}\n',
                        "cell partner=lowcap: partner: unknown partner type 'lowcap'"),
    'unknown capability in a vector': ('fixed: {partner: "fly_kitchen=0"}\n', 'fly_kitchen'),
    'unknown switch partner': ('fixed: {switch_partner: nobody, switch_after: 1}\n',
                               "switch_partner: unknown partner type 'nobody'"),
    'unknown domain': ('fixed: {domain: kitchen}\n', "domain 'kitchen': unknown domain"),
    'missing domain file': ('fixed: {domain: nowhere/domain.yaml}\n',
                            "domain: no such file 'nowhere/domain.yaml'"),
    'an option tidyup only takes': ('fixed: {domain: overcooked, household: sweep.yaml}\n',
                                    "domain 'overcooked': domain 'overcooked' takes no option"),
    'out of range': ('fixed: {forgo_probability: 2}\n',
                     'cell (the only one): forgo_probability must lie in [0, 1]'),
    'switch without its task': ('fixed: {switch_partner: high_capability}\n',
                                'switch_partner and switch_after go together'),
    'empty axis': ('grid: {partner: []}\n', 'grid.partner: expected a non-empty list'),
    'repeated value': ('grid: {seed: [0, 1, 0]}\n', "grid.seed: repeated values ['0']"),
    'axis also fixed': ('fixed: {seed: 0}\ngrid: {seed: [1, 2]}\n',
                        'grid.seed: seed is in fixed as well'),
    'unknown axis': ('grid: {colour: [red, blue]}\n', "grid: unknown setting 'colour'"),
    'entry without a label': ('grid:\n  variant:\n    - {inference: paper}\n',
                              'grid.variant[0]: an entry of a named axis needs a label'),
    'unknown setting in an entry': ('grid:\n  variant:\n    - {label: a, inferenc: paper}\n',
                                    "grid.variant[0]: unknown setting 'inferenc'"),
    'mixed entries': ('grid:\n  variant:\n    - {label: a, inference: paper}\n    - b\n',
                      'grid.variant: mixes settings mappings and plain values'),
    'two axes set one setting': ('grid:\n  inference: [paper, sequential]\n  variant:\n'
                                 '    - {label: a, inference: posterior}\n',
                                 'grid.variant: inference is set by axis inference too'),
    'plot_by names no axis': ('grid: {method: [cecm]}\nplot_by: partner\n',
                              "plot_by: 'partner' is not a grid axis"),
    'same settings twice': ('grid:\n  variant:\n    - {label: a, samples: 40}\n'
                            '    - {label: b, samples: 40}\n',
                            'cell variant=b: has the same settings as cell variant=a'),
}


@pytest.mark.parametrize('case', sorted(BAD_FILES))
def test_a_bad_sweep_file_is_refused_naming_file_and_entry(case, loader, tmp_path):
    text, message = BAD_FILES[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_sweep(path, loader)
    assert str(raised.value).startswith(f'{path}: ')
    assert message in str(raised.value)


def test_the_cli_reports_a_bad_sweep_file_and_exits_2(tmp_path, capsys):
    path = write(tmp_path, 'fixed: {samples: many}\n')
    assert cecm_main(['sweep', str(path), '--out', str(tmp_path / 'out')]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f'cecm: error: {path}: fixed.samples: samples must be an integer')
    assert 'Traceback' not in error
    assert not (tmp_path / 'out').exists()
    missing = tmp_path / 'missing.yaml'
    assert cecm_main(['sweep', str(missing), '--out', str(tmp_path / 'out')]) == 2
    assert f'cannot read the sweep file {missing}' in capsys.readouterr().err


def test_cells_are_the_grid_and_their_folders_follow_the_settings(loader, tmp_path):
    sweep = load_sweep(write(tmp_path, TINY + 'plot_by: partner\n'), loader)
    assert [dict(cell.axes) for cell in sweep.cells] == [
        {'partner': p, 'method': m} for p in ('low_capability', 'high_capability')
        for m in ('cecm', 'pessimistic')]
    assert sweep.plot_by == 'partner'
    first = sweep.cells[0]
    assert first.cell_id.startswith('low_capability-cecm-')
    assert first.settings.jobs == 1 and first.settings.estimator.samples == 30
    assert first.settings.heldout == 4 and first.settings.runs == 2
    # More runs keep the folder (runs are added); any other setting makes a new one.
    more = load_sweep(write(tmp_path, TINY.replace('runs: 2', 'runs: 5')), loader)
    assert [c.cell_id for c in more.cells] == [c.cell_id for c in sweep.cells]
    other = load_sweep(write(tmp_path, TINY.replace('samples: 30', 'samples: 31')), loader)
    assert not {c.cell_id for c in other.cells} & {c.cell_id for c in sweep.cells}
    # CE-CM-Div's delta is a setting (appendix C.3's sweep); out of [0, 1] it is refused.
    delta = load_sweep(write(tmp_path, TINY + '  set_diversity: [0.2]\n'), loader)
    assert {c.settings.set_diversity for c in delta.cells} == {0.2}
    assert not {c.cell_id for c in delta.cells} & {c.cell_id for c in sweep.cells}
    with pytest.raises(ConfigError, match='set_diversity must lie in'):
        load_sweep(write(tmp_path, TINY + '  set_diversity: [1.5]\n'), loader)
    # Named axes: labelled sets of settings, which override `fixed`; plot_by defaults to
    # `method` where the grid has that axis.
    named = load_sweep(write(tmp_path, (
        'fixed: {task_choice: given, samples: 30}\n'
        'grid:\n  variant:\n'
        '    - {label: informative, task_choice: informative, candidates: 3, window: 3}\n'
        '    - {label: sequential, inference: sequential}\n'
        '    - {label: sequential_all_tasks, inference: sequential, window: 0}\n')), loader)
    assert named.plot_by is None
    informative, sequential, all_tasks = named.cells
    assert informative.settings.task_choice == 'informative'
    assert informative.settings.candidates == 3
    assert informative.settings.estimator.window == 3
    assert sequential.settings.task_choice == 'given'
    assert sequential.settings.estimator.variant == 'sequential'
    assert sequential.settings.estimator.window == 1
    assert all_tasks.settings.estimator.window is None    # 0: no forgetting
    assert informative.cell_id.startswith('informative-')


def test_progress_redraws_one_line_on_a_terminal_and_writes_lines_otherwise(loader, tmp_path):
    sweep = load_sweep(write(tmp_path, TINY), loader)

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, tty in ((Terminal(), True), (io.StringIO(), False)):
        progress = Progress(stream, sweep.cells, {c.cell_id: set() for c in sweep.cells})
        for cell in sweep.cells:
            for run in range(cell.runs):
                progress.finished(cell, run, 1.0)
        progress.close()
        text = stream.getvalue()
        assert 'cells 4/4, runs 8/8' in text and 'done' in text
        if tty:
            assert text.count('\r') >= 8 and text.count('\n') == 1
        else:
            assert text.count('\n') == 8 and '\r' not in text
            assert 'cells 1/4, runs 2/8' in text and 'left' in text


# --------------------------------------------------------------------- running a sweep
@pytest.fixture(scope='module')
def sweep_file(tmp_path_factory):
    return write(tmp_path_factory.mktemp('sweep'), TINY, 'tiny.yaml')


@pytest.fixture(scope='module')
def local_sweep(sweep_file):
    """The tiny sweep on this machine, two processes."""
    out = sweep_file.parent / 'local'
    done = sweep_cli(str(sweep_file), '--out', str(out), '--jobs', '2')
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


def cell_folder(out: Path, axes: dict) -> Path:
    for folder in (out / 'runs').iterdir():
        cell = json.loads((folder / 'cell.json').read_text())
        if cell['axes'] == axes:
            return folder
    raise AssertionError(f'no cell {axes} under {out}')


def test_a_small_local_sweep_writes_runs_summaries_table_and_plots(local_sweep, sweep_file):
    out, done = local_sweep
    assert '4 cells, 8 runs: 0 finished before, 8 run now, 0 failed' in done.stdout
    assert '0 finished before (skipped), 8 to run on 2 local processes' in done.stderr
    assert 'cells 4/4, runs 8/8' in done.stderr
    assert (out / 'sweep.yaml').read_text() == sweep_file.read_text()
    table = rows(out / 'table.csv')
    assert [(r['partner'], r['method']) for r in table] == [
        ('low_capability', 'cecm'), ('low_capability', 'pessimistic'),
        ('high_capability', 'cecm'), ('high_capability', 'pessimistic')]
    columns = list(table[0])
    assert columns[:8] == ['partner', 'method', 'runs', 'task', 'hamming',
                           'hamming_ci95_low', 'hamming_ci95_high', 'correction_ratio']
    for name in ('iou', 'infeasible_assigned', 'heldout_agreement', 'hamming_identifiable'):
        assert name in columns and f'{name}_ci95_high' in columns
    for row in table:
        assert row['runs'] == '2' and row['task'] == '2'
        assert float(row['hamming_ci95_low']) <= float(row['hamming']) \
            <= float(row['hamming_ci95_high'])
        folder = out / 'runs' / row['cell']
        summary = json.loads((folder / 'summary.json').read_text())
        final = summary['per_task'][-1]
        assert float(row['iou']) == pytest.approx(final['iou']['mean'], abs=1e-6)
        assert summary['settings']['method'] == row['method']
        assert summary['settings']['partner'] == row['partner']
        assert sorted(p.name for p in folder.glob('run-*.json')) == \
            ['run-0000.json', 'run-0001.json']
        assert len(rows(folder / 'runs.csv')) == 4
    markdown = (out / 'table.md').read_text()
    assert markdown.startswith('# tiny\n')
    assert '| partner | method | runs | task | hamming | correction_ratio | iou | ' \
           'infeasible_assigned |' in markdown
    assert markdown.count('\n| low_capability |') == 2
    # A plot per metric for each partner, with a line per method.
    for partner in ('low_capability', 'high_capability'):
        for name in ('hamming', 'correction_ratio', 'iou', 'heldout_agreement'):
            assert (out / 'plots' / partner / f'{name}.png').stat().st_size > 1000


def test_a_sweep_started_again_runs_only_what_is_missing(local_sweep, sweep_file, tmp_path):
    original, _ = local_sweep
    out = tmp_path / 'resumed'
    shutil.copytree(original, out)
    cell = cell_folder(out, COMPARED)
    removed = cell / 'run-0001.json'
    before = json.loads(removed.read_text())
    removed.unlink()
    (cell / 'run-0000.json').write_text('{"format": "cecm_ros/sweep_run/1", "cel')  # torn
    for name in ('table.csv', 'table.md'):
        (out / name).unlink()
    done = sweep_cli(str(sweep_file), '--out', str(out), '--jobs', '2')
    assert done.returncode == 0, done.stderr[-3000:]
    assert '6 finished before (skipped), 2 to run' in done.stderr
    assert '4 cells, 8 runs: 6 finished before, 2 run now, 0 failed' in done.stdout
    after = json.loads(removed.read_text())
    assert after['rows'] == before['rows']
    for name in ('table.csv', 'table.md'):
        assert (out / name).read_bytes() == (original / name).read_bytes(), name
    # Nothing left to do: a third start runs nothing and writes the same table.
    again = sweep_cli(str(sweep_file), '--out', str(out), '--quiet')
    assert again.returncode == 0 and again.stderr == ''
    assert '8 finished before, 0 run now' in again.stdout
    assert (out / 'table.csv').read_bytes() == (original / 'table.csv').read_bytes()


def _children(pid: int) -> list[int]:
    found = []
    for status in Path('/proc').glob('[0-9]*/status'):
        try:
            fields = dict(line.split(':\t', 1) for line in status.read_text().splitlines()
                          if ':\t' in line)
        except OSError:
            continue
        if fields.get('PPid', '').strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child its parent has not reaped)."""
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def test_a_killed_sweep_stops_its_workers_and_keeps_what_was_written(tmp_path):
    """SIGTERM to `cecm sweep` (a kill, a job scheduler) ends the runs under way, as
    Ctrl-C does: no worker goes on computing runs that nobody will write."""
    sweep = write(tmp_path, TINY.replace('samples: 30', 'samples: 400').replace(
        'runs: 2', 'runs: 6'), 'long.yaml')
    driver = subprocess.Popen([str(CLI), 'sweep', str(sweep), '--out', str(tmp_path / 'out'),
                               '--jobs', '2', '--no-plan-store'],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120 * TIME_SCALE
        while len(workers := _children(driver.pid)) < 2 and driver.poll() is None:
            assert time.monotonic() < deadline, 'the sweep started no workers'
            time.sleep(0.2)
        time.sleep(2.0)     # runs under way
        driver.send_signal(signal.SIGTERM)
        _, stderr = driver.communicate(timeout=60 * TIME_SCALE)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode != 0
    assert 'the same command continues with the rest' in stderr, stderr[-2000:]
    deadline = time.monotonic() + 30 * TIME_SCALE
    while (alive := [w for w in workers if _running(w)]):
        assert time.monotonic() < deadline, f'workers {alive} outlived the sweep'
        time.sleep(0.2)


def test_a_cell_has_the_rows_of_cecm_experiment(local_sweep, tmp_path, capsys):
    out, _ = local_sweep
    # All runs in one process on one planner, planned here (not read from the plan store
    # the sweep filled): the rows must still be the sweep's.
    assert cecm_main(['experiment', *EXPERIMENT_ARGS, '--jobs', '2', '--quiet',
                      '--no-plan-store', '--out', str(tmp_path / 'experiment')]) == 0
    capsys.readouterr()
    expected = rows(tmp_path / 'experiment' / 'runs.csv')
    cell = cell_folder(out, COMPARED)
    measured = rows(cell / 'runs.csv')
    assert len(measured) == len(expected) == 4
    for want, got in zip(expected, measured):
        differing = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
        assert not differing, f'run {want["run"]} task {want["task_index"]}: {differing}'
    summary = json.loads((tmp_path / 'experiment' / 'summary.json').read_text())
    ours = json.loads((cell / 'summary.json').read_text())
    assert ours['per_task'] == summary['per_task']
    assert ours['identifiable_capabilities'] == summary['identifiable_capabilities']


# ------------------------------------------------------------------------------- Ray
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def session_processes(session: int) -> list[int]:
    """Processes of the session the Ray head was started in (its pid is the session's
    id): what the head started, workers included; nothing else on the machine."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == session:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.fixture
def ray_head(tmp_path):
    """A Ray head on 127.0.0.1 (2 CPUs, a small object store), stopped afterwards: the
    head is sent SIGTERM (it stops what it started), then anything left of its session
    is killed by pid."""
    if importlib.util.find_spec('ray') is None or not RAY.is_file():
        if IN_CI:
            pytest.fail('CI=true: the Ray test must run, but ray is not installed in '
                        f'{sys.prefix} (make venv installs it)')
        pytest.skip('ray is not installed (make venv installs it)')
    port = free_port()
    # Ray's socket paths must stay short: a folder directly under /tmp.
    temp = Path(tempfile.mkdtemp(prefix='cecm-ray-', dir='/tmp' if Path('/tmp').is_dir()
                                 else None))
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED='0')
    env.pop('RAY_ADDRESS', None)
    log = open(tmp_path / 'ray_head.log', 'w')
    head = subprocess.Popen(
        [str(RAY), 'start', '--head', '--block', '--node-ip-address=127.0.0.1',
         f'--port={port}', '--num-cpus=2', '--include-dashboard=false',
         '--disable-usage-stats', '--object-store-memory=80000000', f'--temp-dir={temp}'],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 300 * TIME_SCALE   # a stuck start, not a timing
        while not (temp / 'ray_current_cluster').exists():
            if head.poll() is not None or time.monotonic() > deadline:
                raise AssertionError('the Ray head did not start:\n' +
                                     (tmp_path / 'ray_head.log').read_text()[-3000:])
            time.sleep(0.5)
        yield f'127.0.0.1:{port}'
    finally:
        if head.poll() is None:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(timeout=90)
            except subprocess.TimeoutExpired:
                head.kill()
                head.wait()
        for _ in range(20):
            left = session_processes(head.pid)
            if not left:
                break
            time.sleep(0.5)
        for pid in session_processes(head.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def test_the_same_sweep_on_a_local_ray_head_gives_the_same_table(local_sweep, sweep_file,
                                                                  ray_head, tmp_path):
    original, _ = local_sweep
    out = tmp_path / 'ray'
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED='0')
    env.pop('RAY_ADDRESS', None)
    done = sweep_cli(str(sweep_file), '--out', str(out), '--address', ray_head, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f'8 to run on the Ray cluster at {ray_head}' in done.stderr
    assert 'cells 4/4, runs 8/8' in done.stderr
    for name in ('table.csv', 'table.md'):
        assert (out / name).read_bytes() == (original / name).read_bytes(), name
    for row in rows(out / 'table.csv'):
        assert (out / 'runs' / row['cell'] / 'runs.csv').read_bytes() == \
            (original / 'runs' / row['cell'] / 'runs.csv').read_bytes()
