"""Plain setuptools packaging of cecm_ros for pip users who want the ROS-free core and CLI.

colcon does not use this file: package.xml declares build_type ament_cmake, so
colcon builds with CMakeLists.txt (interfaces + Python package + executables).
Installing with pip gives cecm_ros.core and the `cecm` command; the ROS nodes
additionally need rclpy and the generated cecm_ros.msg/srv/action modules, which
only the colcon build produces.
"""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'cecm_ros'

# Keep in sync with CECM_NODES in CMakeLists.txt (test/tools/test_packaging.py checks this).
NODES = [
    'task_manager',
    'capability_estimator',
    'joint_planner',
    'executor',
    'world_sim',
    'household_sim',
    'simulated_human',
    'paced_partner',
    'lifecycle_manager',
    'correction_console',
    'web_panel',
    'session_recorder',
    'skill_bridge',
    'scene_markers',
    'joy_corrections',
]


def share_files(directory):
    """Return data_files entries installing `directory` under share/cecm_ros/."""
    entries = {}
    for path in glob(os.path.join(directory, '**', '*'), recursive=True):
        if os.path.isfile(path) and '__pycache__' not in path:
            target = os.path.join('share', PACKAGE, os.path.dirname(path))
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version='0.1.0',
    description=(
        'Capability estimation (CE-CM) and capability-aware joint planning for '
        'human-robot teams, with a simulated TidyUP household'
    ),
    license='Apache-2.0',
    maintainer='cecm_ros maintainers',
    maintainer_email='cecm-ros@users.noreply.github.com',
    python_requires='>=3.11',
    packages=find_packages(include=[PACKAGE, PACKAGE + '.*']),
    # The web panel's page (not a Python package, so listed as package data).
    package_data={PACKAGE: ['web/*.html', 'web/*.js', 'web/*.css']},
    data_files=[
        ('share/' + PACKAGE, ['package.xml']),
        *share_files('config'),
        *share_files('pddl'),
        *share_files('launch'),
    ],
    install_requires=[
        'numpy',
        'pyyaml',
        'unified-planning',
        'up-fast-downward',
        'matplotlib',
        'aiohttp',
        'mcap',
        'mcap-ros2-support',
    ],
    # 'ray': `cecm sweep --address` runs a sweep on a Ray cluster, and a planner's
    # ray_address (`cecm experiment --ray-address`, the estimator node's parameter) its
    # searches (the Makefile's venv has it, for the tests).
    # 'plansets': CE-CM-Div's PDDL plan sets from K*'s top-k plans (GPLv3: optional,
    # run as a subprocess only; without it the declined-capability sets are used).
    extras_require={'test': ['pytest<9', 'playwright'], 'ray': ['ray==2.60.0'],
                    'plansets': ['kstar-planner>=1.6']},
    zip_safe=False,
    entry_points={
        'console_scripts': [
            'cecm = cecm_ros.cli.main:main',
            *[f'{node} = cecm_ros.nodes.{node}:main' for node in NODES],
        ],
    },
)
