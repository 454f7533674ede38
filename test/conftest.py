"""Test-wide settings: computed plans go to a cache of this test session, never to the
user's ~/.cache (processes the tests start inherit it)."""

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault('CECM_CACHE_DIR', tempfile.mkdtemp(prefix='cecm-test-cache-'))

# Shared helpers (fixtures, paths) sit in this folder; tests in its sub-folders import
# them by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope='module')
def model():
    """TidyUP with its default household: the model of every test that names no other
    (a test module may define its own ``model``)."""
    from cecm_ros.domains.tidyup.model import TidyUpModel

    return TidyUpModel()


@pytest.fixture(scope='module')
def errands():
    """The stub domain (test/stub_domain.py) and its planner."""
    from stub_domain import Errands, ErrandsPlanner

    domain = Errands()
    with ErrandsPlanner(domain) as planner:
        yield domain, planner


# Where the suite's time goes: per folder and per file, summed over setup, call and
# teardown, printed after --durations' list (issue 48 traces the suite's growth by it).
_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split('::', 1)[0]
    _SECONDS[path] = _SECONDS.get(path, 0.0) + report.duration


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    if not _SECONDS:
        return
    folders: dict[str, float] = {}
    for path, seconds in _SECONDS.items():
        folder = '/'.join(path.split('/')[:2])    # test/<folder>
        folders[folder] = folders.get(folder, 0.0) + seconds
    total = sum(_SECONDS.values())
    terminalreporter.write_sep('=', f'time per folder and the slowest files ({total:.0f} s '
                                    'of setup, call and teardown)')
    for folder, seconds in sorted(folders.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f'{seconds:8.1f} s  {folder}')
    terminalreporter.write_line('')
    for path, seconds in sorted(_SECONDS.items(), key=lambda item: -item[1])[:15]:
        terminalreporter.write_line(f'{seconds:8.1f} s  {path}')
