"""The node graph on the Overcooked domain: every node's ``domain`` parameter is
``overcooked``, and one kitchen task runs over DDS with a partner that cannot chop or
deliver (``type_2``).

The task is kitchen A's lettuce-onion salad, which the MCTS plan for that partner serves
in about a dozen joint steps, so the test asks for the dish to be served. The messages
must name the domain and carry its facts and features (a numeric state travels as both),
and no node may log an internal error.
"""

from __future__ import annotations

import json

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
)
from graph_fixtures import OVERCOOKED_TASK as TASK  # noqa: E402
from graph_fixtures import write_overcooked_task_file as write_task_file  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from cecm_ros.domains import load_domain  # noqa: E402
from cecm_ros.msg import CapabilityBelief, TaskRequest, TeamState  # noqa: E402

PARTNER = 'type_2'
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
EVENTS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    executables, params = installed_or_skip(MANAGER)
    ros_domain = RosDomain()
    work = tmp_path_factory.mktemp('overcooked')
    tasks_file = write_task_file(work / 'tasks.yaml')
    client = RosClient('cecm_overcooked_test')
    processes = NodeProcesses(executables, params, ros_domain.env, work)
    state = {'requests': [], 'states': [], 'beliefs': [], 'processes': processes,
             'work': work}
    client.collect(TaskRequest, 'task/request', LATCHED, state['requests'])
    client.collect(TeamState, 'team_state', EVENTS, state['states'])
    client.collect(CapabilityBelief, 'capability_belief', LATCHED, state['beliefs'])
    summary_path = work / 'summary.json'
    domain = {'domain': 'overcooked'}
    try:
        for node in NODES:
            overrides = {
                'capability_estimator': {'samples': 40,
                                         'store_path': str(work / 'partners-{domain}.sqlite')},
                'world_sim': {'partner': PARTNER},
                'simulated_human': {'partner': PARTNER},
                'task_manager': {'partner': PARTNER, 'tasks_file': str(tasks_file),
                                 'heldout_tasks': 0, 'exit_when_done': True,
                                 'summary_path': str(summary_path)},
            }.get(node, {})
            processes.start(node, {**domain, **overrides})
        client.wait_for_nodes(NODES, 30.0)
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0})
        state['code'] = processes.wait_for_exit('task_manager', 'the end of the session')
        state['summary'] = json.loads(summary_path.read_text()) \
            if summary_path.is_file() else None
        yield state
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _logs(session) -> str:
    return '\n'.join(f'--- {name}\n{session["processes"].log(name)[-3000:]}'
                     for name in (*NODES, MANAGER))


def test_the_dish_is_served(session):
    assert session['code'] == 0, _logs(session)
    summary = session['summary']
    assert summary is not None, _logs(session)
    assert summary['domain'].startswith('overcooked')
    assert len(summary['capabilities']) == 10
    assert [row['task'] for row in summary['per_task']] == [1]
    assert (session['work'] / 'partners-overcooked.sqlite').is_file()
    states = session['states']
    assert states, _logs(session)
    assert any('(served lettuce_onion)' in s.true_propositions for s in states), \
        _logs(session)


def test_messages_name_the_domain_and_carry_its_facts_and_features(session):
    assert session['requests'], _logs(session)
    assert {r.domain for r in session['requests']} == {'overcooked'}
    assert {r.task_id for r in session['requests']} == {TASK}
    features = len(load_domain('overcooked').feature_names())
    for state in session['states']:
        assert state.domain == 'overcooked'
        facts = list(state.true_propositions)
        assert '(kitchen A)' in facts and '(recipe lettuce_onion)' in facts
        assert any(f.startswith('(at robot ') for f in facts)
        assert len(state.state_features) == features
    beliefs = session['beliefs']
    assert beliefs and beliefs[-1].tasks_seen == 1
    assert 'chop' in beliefs[-1].capability_names


def test_no_node_logged_an_internal_error(session):
    for name in (*NODES, MANAGER):
        log = session['processes'].log(name)
        for marker in ('Traceback', 'internal error'):
            assert marker not in log, f'{name}:\n{log[-3000:]}'
