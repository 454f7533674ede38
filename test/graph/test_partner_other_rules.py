"""Partners of other decision rules in the node graph: a greedy partner and a plug-in.

Neither follows a plan of the robot's model: the partner node reads the world's
team_state at each step, lets its policy decide, and answers the robot only when the
policy corrects it, so the executor follows the world (as with a silent person) and the
session still ends with every task. Real processes over DDS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import NodeProcesses, play_session  # noqa: E402

PARTNER = 'low_capability'
STUBS = Path(__file__).resolve().parents[1] / 'partner_plugins' / 'stub_partners.py'


def run_session(tmp_path, behaviour: str, tasks: int) -> tuple[dict, NodeProcesses, str]:
    summary_path = tmp_path / 'summary.json'
    code, processes, logs = play_session(tmp_path, {
        'capability_estimator': {'samples': 30, 'seed': 0,
                                 'store_path': str(tmp_path / 'partners.sqlite')},
        'world_sim': {'partner': PARTNER},
        'simulated_human': {'partner': PARTNER, 'partner_behaviour': behaviour},
        'executor': {'correction_window_s': 0.2, 'max_steps': 80},
        # No held-out pool: these tests ask how the partner played, not what was learnt.
        'task_manager': {'partner': PARTNER, 'num_tasks': tasks, 'seed': 2, 'heldout_tasks': 0,
                         'exit_when_done': True, 'summary_path': str(summary_path)},
    }, 'cecm_other_rule_test')
    assert code == 0, logs
    return json.loads(summary_path.read_text()), processes, logs


def test_a_greedy_partner_plays_a_session_through_the_graph(tmp_path):
    summary, processes, logs = run_session(tmp_path, 'greedy', tasks=2)
    assert len(summary['tasks']) == 2 and '"greedy"' in json.dumps(summary), logs
    assert all(task['corrections'] == 0 for task in summary['tasks']), logs
    partner = processes.log('simulated_human')
    assert 'corrected the robot' not in partner, logs
    # It decided from the world (its own actions went to the world) and the robot
    # followed the world it left, not a plan nobody enforced.
    assert "of the task's evidence may mislead" not in processes.log('task_manager')
    assert 'the greedy partner played' in processes.log('task_manager'), logs
    assert 're-planning from the observed state' in processes.log('executor'), logs
    assert 'ERROR' not in partner, logs


def test_a_plug_in_partner_is_loaded_by_the_partner_node(tmp_path):
    summary, processes, logs = run_session(tmp_path, f'{STUBS}:Waiter', tasks=1)
    task = summary['tasks'][0]
    assert task['goal_reached'], logs
    assert 'ERROR' not in processes.log('simulated_human'), logs
