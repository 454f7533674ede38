"""TidyUP's results reproduce run by run across refactors of the core.

Each case is a short `cecm experiment` whose per-run, per-task rows were saved from main
before the core was made domain-neutral (test/data/tidyup_reference/, commit named in
its README). The same arguments and seed must give the same rows: the estimate, the
truth, theta, what the evidence decided, the metrics. A change that moves any of them
changes what the docs' experiments measured, and has to say so by saving new files
(``CECM_SAVE_REFERENCE=1 pytest``
``test/domains/tidyup/test_tidyup_reproduction.py``) in its own commit.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import pytest
from paths import TEST_DIR  # noqa: E402

from cecm_ros.cli.main import main as cecm_main

REFERENCE = TEST_DIR / 'data' / 'tidyup_reference'
# Prose, not results: free to change wording.
IGNORED_COLUMNS = {'update_message'}

# The saved rows were made with the accept/reject posterior: its likelihood is asked for
# by name since the graded one became the default.
COMMON = ['--samples', '60', '--heldout', '6', '--jobs', '2', '--quiet',
          '--likelihood', 'indicator']
CASES = {
    'posterior_given_low_capability': [
        '--partner', 'low_capability', '--runs', '2', '--tasks', '3', '--seed', '3'],
    'posterior_informative_mobility_limited': [
        '--partner', 'mobility_limited', '--runs', '1', '--tasks', '3', '--seed', '1',
        '--task-choice', 'informative', '--candidates', '3'],
    'paper_high_capability': [
        '--partner', 'high_capability', '--inference', 'paper', '--runs', '1', '--tasks',
        '3', '--seed', '2'],
    'sequential_switch': [
        '--partner', 'high_capability', '--inference', 'sequential', '--runs', '1',
        '--tasks', '3', '--seed', '4', '--switch-partner', 'low_capability',
        '--switch-after', '2'],
    'cecm_div_forgoing_partner': [
        '--partner', 'no_kitchen_work', '--method', 'cecm_div', '--forgo-probability',
        '0.5', '--runs', '1', '--tasks', '2', '--seed', '5'],
    'optimistic': [
        '--partner', 'low_capability', '--method', 'optimistic', '--runs', '1', '--tasks',
        '2', '--seed', '6'],
}


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline='') as handle:
        return [{k: v for k, v in row.items() if k not in IGNORED_COLUMNS}
                for row in csv.DictReader(handle)]


@pytest.mark.parametrize('case', sorted(CASES))
def test_tidyup_experiment_reproduces_the_saved_runs(case, tmp_path, capsys):
    out = tmp_path / case
    assert cecm_main(['experiment', *CASES[case], *COMMON, '--out', str(out)]) == 0
    capsys.readouterr()
    saved = REFERENCE / f'{case}.csv'
    if os.environ.get('CECM_SAVE_REFERENCE') == '1':
        REFERENCE.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / 'runs.csv', saved)
        pytest.skip(f'saved {saved}')
    assert saved.is_file(), f'no reference file {saved}'
    expected, measured = read_rows(saved), read_rows(out / 'runs.csv')
    assert len(measured) == len(expected)
    for want, got in zip(expected, measured):
        differing = {k: (want[k], got.get(k)) for k in want if want[k] != got.get(k)}
        assert not differing, (f'{case}: run {want["run"]} task {want["task_index"]} '
                               f'differs (saved, now): {differing}')
