"""The world a robot meets, over the node graph: world_sim's perception noise and robot
skills that fail, with the estimator told to expect glitches. Every task still ends at
its goal, the executor re-plans after each failed skill instead of giving the task up,
the failed steps reach the estimator as the robot's own (TaskOutcome.robot_failed_steps)
and no node reports an internal error. Real processes over DDS."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import NODES, play_session  # noqa: E402

PARTNER = 'low_capability'


def test_a_session_in_a_noisy_world_with_failing_skills_completes_and_learns(tmp_path):
    summary_path = tmp_path / 'summary.json'
    code, processes, logs = play_session(tmp_path, {
        'capability_estimator': {'samples': 60, 'seed': 0, 'misperception': 0.05,
                                 'store_path': str(tmp_path / 'partners.sqlite')},
        'world_sim': {'partner': PARTNER, 'perception_missed': 0.03,
                      'perception_spurious': 0.01, 'skill_failure': 0.3, 'world_seed': 4},
        'simulated_human': {'partner': PARTNER},
        'executor': {'correction_window_s': 0.2, 'max_steps': 80},
        'task_manager': {'partner': PARTNER, 'num_tasks': 2, 'seed': 2, 'heldout_tasks': 0,
                         'exit_when_done': True, 'summary_path': str(summary_path)},
    }, 'cecm_world_conditions_test')
    assert code == 0, logs
    summary = json.loads(summary_path.read_text())
    assert len(summary['tasks']) == 2, logs
    assert all(task['goal_reached'] for task in summary['tasks']), logs
    world, executor = processes.log('world_sim'), processes.log('executor')
    assert 'skill_failure 0.3' in world, logs
    failures = len(re.findall(r"the robot's skill failed on", executor))
    assert failures > 0, logs
    assert executor.count('re-planning from the observed state') >= failures, logs
    for name in NODES:
        assert 'ERROR' not in processes.log(name), f'{name}:\n{processes.log(name)}'
    # The estimator weighed every task (none refused as malformed).
    assert processes.log('capability_estimator').count('updating with a trajectory of') == 2
