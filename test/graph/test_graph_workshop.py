"""The node graph on a domain of one's own: the example workshop domain file, given to
every node as its ``domain`` parameter, runs a 2-task session over DDS.

The same installed executables as test_graph_dds.py, in separate processes; only the
domain differs. The session must end with both tasks reached, the messages must name
the domain and carry its facts, and no node may log an internal error.
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
from paths import REPO  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from cecm_ros.msg import CapabilityBelief, TaskRequest, TeamState  # noqa: E402

DOMAIN_FILE = REPO / 'config' / 'domains' / 'workshop' / \
    'domain.yaml'
PARTNER = 'apprentice'
TASKS = 2
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
EVENTS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    executables, params = installed_or_skip(MANAGER)
    ros_domain = RosDomain()
    work = tmp_path_factory.mktemp('workshop')
    client = RosClient('cecm_workshop_test')
    processes = NodeProcesses(executables, params, ros_domain.env, work)
    state = {'requests': [], 'states': [], 'beliefs': [], 'processes': processes,
             'work': work}
    client.collect(TaskRequest, 'task/request', LATCHED, state['requests'])
    client.collect(TeamState, 'team_state', EVENTS, state['states'])
    client.collect(CapabilityBelief, 'capability_belief', LATCHED, state['beliefs'])
    summary_path = work / 'summary.json'
    domain = {'domain': str(DOMAIN_FILE)}
    try:
        for node in NODES:
            overrides = {
                'capability_estimator': {'samples': 40,
                                         'store_path': str(work / 'partners-{domain}.sqlite')},
                'world_sim': {'partner': PARTNER},
                'simulated_human': {'partner': PARTNER},
                'task_manager': {'partner': PARTNER, 'num_tasks': TASKS, 'heldout_tasks': 4,
                                 'exit_when_done': True, 'summary_path': str(summary_path)},
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


def test_the_session_of_the_workshop_completes(session):
    assert session['code'] == 0, _logs(session)
    summary = session['summary']
    assert summary is not None, _logs(session)
    assert summary['domain'].startswith('workshop')
    assert len(summary['capabilities']) == 11
    assert [row['task'] for row in summary['per_task']] == [1, 2]
    # One partner store per domain: '{domain}' in store_path is the domain's name.
    assert (session['work'] / 'partners-workshop.sqlite').is_file()


def test_messages_name_the_domain_and_carry_its_facts(session):
    assert session['requests'], _logs(session)
    assert {r.domain for r in session['requests']} == {'workshop'}
    assert session['states']
    for state in session['states']:
        assert state.domain == 'workshop'
        assert any(f.startswith('(agent-at worker ') for f in state.true_propositions)
        assert not list(state.state_features)
    beliefs = session['beliefs']
    assert beliefs and beliefs[-1].tasks_seen == TASKS
    assert 'assemble' in beliefs[-1].capability_names


def test_no_node_logged_an_internal_error(session):
    for name in (*NODES, MANAGER):
        log = session['processes'].log(name)
        for marker in ('Traceback', 'internal error'):
            assert marker not in log, f'{name}:\n{log[-3000:]}'
