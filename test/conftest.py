"""Test-wide settings: computed plans go to a cache of this test session, never to the
user's ~/.cache (processes the tests start inherit it)."""

import os
import tempfile

os.environ.setdefault('CECM_CACHE_DIR', tempfile.mkdtemp(prefix='cecm-test-cache-'))
