"""Locate the package's data files (config/, pddl/) in a source tree or an install."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_NAME = 'cecm_ros'


def share_directory() -> Path:
    """The folder holding config/ and pddl/.

    In a source checkout they sit next to the Python package; after ``colcon build``
    they are in ``share/cecm_ros`` of the install prefix. ``CECM_ROS_SHARE`` overrides.
    """
    override = os.environ.get('CECM_ROS_SHARE')
    if override:
        return Path(override)
    source_root = Path(__file__).resolve().parents[2]
    if (source_root / 'pddl').is_dir() and (source_root / 'config').is_dir():
        return source_root
    # Installed: <prefix>/lib/pythonX.Y/site-packages/cecm_ros/core/resources.py
    for parent in Path(__file__).resolve().parents:
        candidate = parent / 'share' / PACKAGE_NAME
        if (candidate / 'pddl').is_dir():
            return candidate
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE_NAME))
    except Exception as error:  # noqa: BLE001 - any failure means "not found"
        raise FileNotFoundError(
            'cannot find the cecm_ros data files (config/, pddl/); '
            'set CECM_ROS_SHARE to the folder that holds them') from error


def config_path(name: str) -> Path:
    return share_directory() / 'config' / name


def pddl_path(name: str) -> Path:
    return share_directory() / 'pddl' / name


