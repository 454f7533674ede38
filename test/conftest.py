"""Test-wide settings: computed plans go to a cache of this test session, never to the
user's ~/.cache (processes the tests start inherit it)."""

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault('CECM_CACHE_DIR', tempfile.mkdtemp(prefix='cecm-test-cache-'))

# Shared helpers (fixtures, paths) sit in this folder; tests in its sub-folders import
# them by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
