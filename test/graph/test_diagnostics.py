"""/diagnostics as rqt_robot_monitor or an aggregator reads it: the whole graph (the
managed nodes, the lifecycle manager, scene_markers) as real processes running a short
session; this process reads every node's DiagnosticStatus, then kills one node and sees
the lifecycle manager report it STALE while its own status stops coming.
"""

from __future__ import annotations

import signal
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
)

from cecm_ros.nodes.diagnostics import DIAGNOSTICS_TOPIC, QOS_DIAGNOSTICS  # noqa: E402

MARKERS = 'scene_markers'
VICTIM = 'simulated_human'   # killed: no respawn here, so it stays away


@pytest.fixture(scope='module')
def graph(tmp_path_factory):
    executables, params = installed_or_skip(MANAGER)
    work = tmp_path_factory.mktemp('diagnostics')
    ros_domain = RosDomain()
    client = RosClient('diagnostics_test')
    arrays: list[DiagnosticArray] = []
    client.collect(DiagnosticArray, DIAGNOSTICS_TOPIC, QOS_DIAGNOSTICS, arrays)
    processes = NodeProcesses(executables, params, ros_domain.env, work)
    # The partner leaves every intent unanswered, so that each step waits out a short
    # correction window: a task lasts seconds, long enough for the 1 Hz reports to
    # catch the executor at work.
    overrides = {
        'simulated_human': {'answer_intents': False},
        'executor': {'correction_window_s': 0.5},
        'capability_estimator': {'samples': 30, 'store_path': str(work / 'partners.sqlite')},
        'task_manager': {'num_tasks': 1, 'heldout_tasks': 0,
                         'journal_dir': str(work / 'journal'),
                         'summary_path': str(work / 'summary.json')},
    }
    try:
        for node in NODES:
            processes.start(node, overrides.get(node))
        processes.start(MANAGER)
        processes.start(MARKERS)
        yield {'client': client, 'arrays': arrays, 'processes': processes}
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _statuses(graph, name: str, since: int = 0) -> list[DiagnosticStatus]:
    """Every status named ``name`` received so far (from array ``since`` on), oldest
    first."""
    return [s for array in list(graph['arrays'])[since:] for s in array.status
            if s.name == name]


def _wait_status(graph, name: str, accept, what: str, timeout_s: float = 120.0,
                 since: int = 0):
    def found():
        return next((s for s in reversed(_statuses(graph, name, since)) if accept(s)), None)
    assert graph['client'].wait_for(lambda: found() is not None, timeout_s), \
        f'no status {name!r} {what}; last: {_statuses(graph, name)[-1:]}\n' \
        f'{graph["processes"].graph.errors(20)}'
    return found()


def _values(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def test_every_node_reports_its_health(graph):
    for node in (*NODES, MANAGER, MARKERS):
        status = _wait_status(graph, f'{node}: health', lambda s: s.level == DiagnosticStatus.OK,
                              'at level OK')
        values = _values(status)
        assert status.hardware_id == node
        assert {'lifecycle_state', 'last_heartbeat', 'pid'} <= set(values), values
        if node in NODES:
            assert values['lifecycle_state'] == 'active', values
            # The lifecycle manager's heartbeat asks every managed node its state.
            beat = _wait_status(graph, f'{node}: health',
                                lambda s: _values(s)['last_heartbeat'] != 'never',
                                'with a heartbeat')
            assert float(_values(beat)['heartbeat_age_s']) < scaled(10.0)
        # The lifecycle manager's view of each managed node.
        if node in NODES:
            _wait_status(graph, f'{MANAGER}: {node}', lambda s: s.level == DiagnosticStatus.OK,
                         'at level OK')
    # At 1 Hz: a node's status comes again within a few seconds.
    count = len(_statuses(graph, 'executor: health'))
    assert graph['client'].wait_for(
        lambda: len(_statuses(graph, 'executor: health')) >= count + 2, 10.0)


def test_the_nodes_own_figures(graph):
    # The session's one task ends with a belief update: its time and the samples held.
    estimator = _wait_status(graph, 'capability_estimator: health',
                             lambda s: _values(s).get('last_update', 'never') != 'never',
                             'after the first update', timeout_s=120.0)
    values = _values(estimator)
    assert int(values['particles']) > 0 and int(values['tasks_seen']) >= 1, values
    # Plans come from the planner or from the plan store the estimator filled first.
    planner = _values(_wait_status(
        graph, 'joint_planner: health',
        lambda s: int(_values(s)['plans_made']) + int(_values(s)['plans_from_store']) > 0
        and _values(s)['planning_under'] != 'no belief yet', 'after a plan under a belief'))
    assert {'requests_open', 'requests_queued', 'timeouts', 'failures'} <= set(planner)
    assert int(planner['timeouts']) == 0, planner
    executor = _values(_wait_status(
        graph, 'executor: health',
        lambda s: _values(s)['task'] != 'none' and
        _values(s)['awaiting_answer_for_step'] != 'none', 'at work on a task'))
    assert executor['running'] == 'true' and int(executor['attempt']) >= 1, executor


def test_a_killed_node_turns_stale(graph):
    processes = graph['processes']
    name = f'{VICTIM}: health'
    _wait_status(graph, f'{MANAGER}: {VICTIM}', lambda s: s.level == DiagnosticStatus.OK,
                 'at level OK before the kill')
    processes.graph.signal(VICTIM, signal.SIGKILL)
    processes.processes[VICTIM].wait(timeout=scaled(30.0))
    stale = _wait_status(graph, f'{MANAGER}: {VICTIM}',
                         lambda s: s.level == DiagnosticStatus.STALE, 'at level STALE',
                         timeout_s=60.0, since=len(graph['arrays']))
    assert 'no answer to the heartbeat' in stale.message, stale.message
    assert stale.hardware_id == VICTIM
    assert _values(stale)['responsive'] == 'false'
    # Its own status stopped; the others' go on.
    killed_at = len(graph['arrays'])
    time.sleep(scaled(3.0))
    later = [s.name for array in graph['arrays'][killed_at:] for s in array.status]
    assert name not in later
    assert 'executor: health' in later
