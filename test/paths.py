"""Where things are, for tests in any folder under test/."""

from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent
