"""Nobody answers the robot: the node graph still finishes the task.

With ``answer_intents: false`` a person is meant to answer for the simulated partner;
here nobody does, so every intent passes as consent and the robot, which starts out
believing a low-capability partner can do everything, leaves the world where neither
plan predicted. Both sides must carry on from the state they see (the robot re-plans,
the partner re-plans, and the robot takes over what the partner leaves undone) rather
than follow stale plans until ``max_steps`` aborts the task. Real processes over DDS.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
)

PARTNER = 'low_capability'
MAX_STEPS = 60


def test_a_task_nobody_corrects_still_reaches_its_goal(tmp_path):
    executables, params = installed_or_skip(MANAGER)
    domain = RosDomain()
    client = RosClient('cecm_silent_partner_test')
    processes = NodeProcesses(executables, params, domain.env, tmp_path)
    summary_path = tmp_path / 'summary.json'
    try:
        for node in NODES:
            processes.start(node, {
                'capability_estimator': {'samples': 30, 'seed': 0,
                                         'store_path': str(tmp_path / 'partners.sqlite')},
                'world_sim': {'partner': PARTNER},
                'simulated_human': {'partner': PARTNER, 'answer_intents': False},
                'executor': {'correction_window_s': 0.05, 'max_steps': MAX_STEPS},
                'task_manager': {'partner': PARTNER, 'num_tasks': 1, 'seed': 0,
                                 'heldout_tasks': 0, 'exit_when_done': True,
                                 'summary_path': str(summary_path)},
            }.get(node))
        assert client.wait_for_nodes(NODES, 30.0)
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0})
        code = processes.wait_for_exit('task_manager', 'the end of the session')
        logs = '\n'.join(f'--- {name}\n{processes.log(name)[-3000:]}' for name in NODES)
        assert code == 0, logs
        task = json.loads(summary_path.read_text())['tasks'][0]
        assert task['goal_reached'], logs
        assert task['corrections'] == 0, logs   # nobody answered
        executor, partner = processes.log('executor'), processes.log('simulated_human')
        # Both sides did meet a world their plan had not predicted, and went on from it.
        assert 're-planning from the observed state' in executor, logs
        assert 'the world is not where the plan predicted; re-planned' in partner, logs
        # The first task waits on a partner who waits on the robot: the robot takes over.
        assert 'the robot plans the rest alone' in executor, logs
        assert 'joint steps for the robot alone' in executor, logs
        # The session says that this task's evidence broke CE-CM's assumption.
        assert "were not the partner's plan: nobody enforced it" in \
            processes.log('task_manager'), logs
        assert f'goal not reached after {MAX_STEPS} steps' not in executor
    finally:
        processes.close()
        client.close()
        domain.release()
