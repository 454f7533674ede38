"""Where things are, for tests in any folder under test/."""

import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent
# The venv these tests run in: .venv, or .venv-jazzy under `make test ROS_DISTRO=jazzy`.
VENV = Path(sys.prefix)


def line_of(path: Path, token: str, last: bool = False) -> int:
    """The line of a file (from 1) where ``token`` is written first (or last): where an
    error about it should point."""
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if token in text]
    assert lines, f'{token!r} is not in {path}'
    return lines[-1] if last else lines[0]
