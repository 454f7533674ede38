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
