"""web_panel with a stock roslibjs 2.x client (npm's roslib under Node.js), on the real graph.

A page using roslibjs 2.1 subscribed to ``capability_belief`` the way docs/nodes.md names
it (no leading slash) and heard nothing: roslibjs routes an incoming ``publish`` by the
topic name its own ``subscribe`` gave, and the panel answered with ``/capability_belief``.
rosbridge answers each client with that client's spelling, and so must the panel.

The installed executables run as separate processes over DDS, in a ROS domain of this
module's own (as in test_web_panel.py), the simulated partner answering the robot. Then
test/js/roslib_client.mjs runs under node with the roslib that ``make test`` pins and
installs into .venv/node: three connections subscribe to the belief as
``capability_belief``, ``/capability_belief`` or both, one publishes a correction and
calls ``task_manager/start``. The checks: every subscription's callback got the belief
this process hears over DDS, each under its own spelling; the executor answered the
correction; the service answered and started the session. A second test checks the same
rules on the wire (aiohttp): one ``publish`` per spelling and message however many ids
share the spelling, ``unsubscribe`` ends one spelling only, and a ``service_response``
names the service as the client did and carries its ``id``.

Without node (20 or newer) or the installed roslib the roslibjs test skips with the
reason, except with CI=true, where it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')
aiohttp = pytest.importorskip('aiohttp', reason='needs aiohttp (make build)')

from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
    wait_progressing,
)
from paths import REPO, TEST_DIR, VENV  # noqa: E402

from cecm_ros.msg import CapabilityBelief, Correction, CorrectionStatus, TaskRequest  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED  # noqa: E402

NODE_MODULES = Path(os.environ.get('CECM_NODE_MODULES',
                                   VENV / 'node' / 'node_modules'))
CLIENT = TEST_DIR / 'js' / 'roslib_client.mjs'
PANEL = 'web_panel'
GRAPH = (*NODES[:-1], PANEL, NODES[-1])     # the panel serves before the session starts
PARTNER = 'low_capability'
SEED = 5
SAMPLES = 60
TOKEN = 'roslibjs-test-token'
SENDER = 'web_panel'
# How long the roslibjs client may take for all of its steps (scaled); an idle machine
# needs a second or two.
CLIENT_TIMEOUT_S = 45.0
ANSWER_TIMEOUT_S = 30.0
BELIEF_SPELLINGS = {'both': {'capability_belief', '/capability_belief'},
                    'plain': {'capability_belief'}, 'slashed': {'/capability_belief'}}


def _roslibjs_or_skip() -> str:
    """The path of node, or skip (fail with CI=true) saying what is missing."""
    problem = None
    node = shutil.which('node')
    if node is None:
        problem = 'no node on PATH: roslib 2.x needs Node.js 20 or newer'
    else:
        version = subprocess.run([node, '--version'], capture_output=True, text=True,
                                 timeout=scaled(30.0)).stdout.strip()
        major = re.match(r'v(\d+)\.', version)
        if major is None or int(major.group(1)) < 20:
            problem = f'node {version or "(no version)"} at {node}: roslib 2.x needs 20 or newer'
    manifest = NODE_MODULES / 'roslib' / 'package.json'
    if problem is None and not manifest.is_file():
        problem = f'no roslib in {NODE_MODULES}: `make test` installs it with npm'
    if problem is None:
        version = json.loads(manifest.read_text()).get('version', '')
        if not version.startswith('2.'):
            problem = f'roslib {version} in {NODE_MODULES} is not 2.x (make test pins it)'
    if problem:
        if os.environ.get('CI', '').lower() in ('true', '1', 'yes'):
            pytest.fail(f'CI=true: the roslibjs test must run, but {problem}')
        pytest.skip(problem)
    return node


@pytest.fixture(scope='module')
def node_executable() -> str:
    """node, checked before the graph starts (a test that skips starts nothing)."""
    return _roslibjs_or_skip()


@pytest.fixture(scope='module')
def graph(tmp_path_factory):
    """The graph with the panel (the simulated partner answering), and what this process
    hears of it over DDS."""
    executables, params = installed_or_skip(PANEL)
    ros_domain = RosDomain()
    work = tmp_path_factory.mktemp('roslibjs')
    client = RosClient('web_panel_roslibjs_test')
    processes = NodeProcesses(executables, params, ros_domain.env, work)
    seen = {'beliefs': [], 'corrections': [], 'statuses': [], 'requests': []}
    client.collect(CapabilityBelief, 'capability_belief', QOS_LATCHED, seen['beliefs'])
    client.collect(Correction, 'robot/correction', QOS_EVENTS, seen['corrections'])
    client.collect(CorrectionStatus, 'robot/correction_status', QOS_EVENTS, seen['statuses'])
    client.collect(TaskRequest, 'task/request', QOS_LATCHED, seen['requests'])
    publisher = client.node.create_publisher(Correction, 'robot/correction', QOS_EVENTS)
    overrides = {
        'capability_estimator': {'samples': SAMPLES, 'seed': SEED},
        'world_sim': {'partner': PARTNER},
        'simulated_human': {'partner': PARTNER},
        'executor': {'intent_subscribers': 2, 'server_wait_s': 120.0,
                     'state_timeout_s': 120.0},
        'task_manager': {'partner': PARTNER, 'num_tasks': 1, 'seed': SEED,
                         'autostart_tasks': False, 'heldout_tasks': 0,
                         'server_wait_s': 120.0, 'message_timeout_s': 120.0},
        PANEL: {'port': 0, 'access_token': TOKEN},
    }
    try:
        for node in GRAPH:
            processes.start(node, overrides.get(node))
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0, 'node_names': list(GRAPH)})
        up = 'task_manager: activate done'
        try:
            wait_progressing(lambda: up in processes.log(MANAGER), processes.activity,
                             'the graph coming up', stall_s=60.0, limit_s=300.0)
        except AssertionError as error:
            print(error)
            # Where each node was (its stacks), and a rerun when DDS discovery failed.
            processes.dump_stacks()
            processes.raise_if_a_node_never_answered()
        match = re.search(r'web panel: (http://\S+)', processes.log(PANEL))
        state = {'client': client, 'processes': processes, 'seen': seen,
                 'publisher': publisher, 'up': up in processes.log(MANAGER) and bool(match)}
        if match:
            base = match.group(1).split('?')[0].rstrip('/')
            state['ws_url'] = base.replace('http://', 'ws://') + f'/ws?token={TOKEN}'
        yield state
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _logs(graph, tail: int = 2500) -> str:
    processes = graph['processes']
    return '\n'.join(f'--- {name} ({processes.status(name)})\n{processes.log(name)[-tail:]}'
                      for name in (*GRAPH, MANAGER))


def _ready(graph) -> None:
    assert graph['up'], f'the graph did not come up\n{_logs(graph)}'


def _panel_hears(graph, topic: str, publisher: bool) -> bool:
    """Whether the panel's publisher of (or subscription to) ``topic`` is discovered."""
    node = graph['client'].node
    deadline = time.monotonic() + scaled(ANSWER_TIMEOUT_S)
    while time.monotonic() < deadline:
        infos = node.get_publishers_info_by_topic(topic) if publisher else \
            node.get_subscriptions_info_by_topic(topic)
        if any(info.node_name == PANEL for info in infos):
            return True
        time.sleep(0.1)
    return False


# ================================================================= roslibjs itself
def test_roslibjs_hears_every_spelling_publishes_and_calls(node_executable, graph):
    _ready(graph)
    client, seen = graph['client'], graph['seen']
    assert client.wait_for(lambda: bool(seen['beliefs']), ANSWER_TIMEOUT_S), \
        f'no belief over DDS\n{_logs(graph)}'
    assert _panel_hears(graph, '/robot/correction', publisher=True), \
        'this process never discovered the panel publishing robot/correction'
    probe = f'roslibjs-probe-{os.getpid()}'
    command = [node_executable, str(CLIENT), str(NODE_MODULES), graph['ws_url'],
               f'{scaled(CLIENT_TIMEOUT_S):g}', probe]
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                         timeout=scaled(CLIENT_TIMEOUT_S) + 60.0)
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{')]
    report = f'exit {run.returncode}\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}\n' \
             f'--- {PANEL}\n{graph["processes"].log(PANEL)[-2500:]}'
    assert run.returncode == 0 and lines and lines[-1]['event'] == 'done', report
    start = lines[0]
    assert start['event'] == 'start' and start['roslib'].startswith('2.'), start

    # Every subscription's callback got beliefs, each one this process heard over DDS.
    frames = [line for line in lines if line['event'] == 'frame']
    messages = [line for line in lines if line['event'] == 'message']
    over_dds = {(b.header.stamp.sec, b.header.stamp.nanosec): b for b in seen['beliefs']}
    for name, spellings in BELIEF_SPELLINGS.items():
        for spelled in spellings:
            got = [m for m in messages if (m['client'], m['topic']) == (name, spelled)]
            assert got, f'{name}: its subscription to {spelled!r} got nothing\n{report}'
            for message in got:
                belief = over_dds.get((message['stamp']['sec'], message['stamp']['nanosec']))
                assert belief is not None, (name, spelled, message, list(over_dds))
                assert (message['tasks_seen'], message['capabilities']) == \
                    (belief.tasks_seen, len(belief.capability_names))
            # The panel published them under this spelling, once each (as rosbridge does).
            published = [f for f in frames if (f['client'], f['op'], f.get('topic')) ==
                         (name, 'publish', spelled)]
            assert len(published) == len(got), (name, spelled, len(published), len(got))
        # Nothing under a spelling this connection did not use.
        topics = {f['topic'] for f in frames if f['client'] == name and f['op'] == 'publish'}
        assert topics <= spellings | {'robot/correction_status'}, (name, topics)

    # The correction reached the executor, which answered it (no task runs yet: refused),
    # and roslibjs heard the verdict on robot/correction_status and as the status of its
    # publish.
    assert client.wait_for(lambda: any(
        s.task_id == probe and s.sender == SENDER for s in seen['statuses']),
        ANSWER_TIMEOUT_S), f'the executor gave no verdict on {probe}\n{_logs(graph)}'
    assert any(c.task_id == probe and c.sender == SENDER and c.corrected_action == 'noop'
               for c in seen['corrections'])
    verdict = next(s for s in seen['statuses'] if s.task_id == probe and s.sender == SENDER)
    assert not verdict.accepted and verdict.reason == 'no task is running', verdict
    heard = [m for m in messages if (m['client'], m['topic'], m.get('task_id')) ==
             ('both', 'robot/correction_status', probe)]
    assert heard and (heard[0]['accepted'], heard[0]['reason']) == (False, verdict.reason)
    statuses = [f for f in frames if f['op'] == 'status']
    assert [(f.get('level'), f.get('text')) for f in statuses] == \
        [('error', f'refused by the executor: {verdict.reason}')], statuses
    assert statuses[0]['id'].startswith('publish:robot/correction:'), statuses

    # The service answered, under the client's spelling and id, and the session started.
    answer = next(line for line in lines if line['event'] == 'service')
    assert answer['result'] is True and \
        answer['values'] == {'success': True, 'message': 'session started'}, answer
    responses = [f for f in frames if f['op'] == 'service_response']
    assert len(responses) == 1 and responses[0].get('service') == 'task_manager/start', \
        responses
    assert responses[0]['id'].startswith('call_service:task_manager/start:'), responses
    assert client.wait_for(lambda: bool(seen['requests']), ANSWER_TIMEOUT_S), \
        f'no TaskRequest after task_manager/start\n{_logs(graph)}'


# ===================================================================== the wire
def _subscribe(topic: str, sid: str) -> dict:
    return {'op': 'subscribe', 'id': sid, 'topic': topic, 'type': 'cecm_ros/msg/Correction'}


def test_each_spelling_is_a_subscription_of_its_own_on_the_wire(graph):
    """As rosbridge: a ``publish`` per spelling and message, whatever the ids; an
    ``unsubscribe`` ends its id, or without one the spelling, and no other; a service's
    answer names it as the client did."""
    _ready(graph)
    assert _panel_hears(graph, '/robot/correction', publisher=False), \
        'this process never discovered the panel subscribing to robot/correction'
    publisher = graph['publisher']
    probe = f'wire-probe-{os.getpid()}'

    async def session() -> None:
        frames: list[dict] = []
        async with aiohttp.ClientSession() as http, http.ws_connect(graph['ws_url']) as ws:

            async def until(what: str, done) -> None:
                deadline = time.monotonic() + scaled(ANSWER_TIMEOUT_S)
                while not done():
                    left = deadline - time.monotonic()
                    assert left > 0, f'{what}: not within {scaled(ANSWER_TIMEOUT_S):g} s; ' \
                                     f'received {frames[-10:]}'
                    try:
                        # Not receive(timeout=): each of the panel's heartbeat pings
                        # starts that one again.
                        frame = await asyncio.wait_for(ws.receive(), left)
                    except TimeoutError:
                        frame = None
                    assert frame is not None, f'{what}: not within ' \
                        f'{scaled(ANSWER_TIMEOUT_S):g} s; received {frames[-10:]}'
                    assert frame.type == aiohttp.WSMsgType.TEXT, frame
                    frames.append(json.loads(frame.data))

            def under(spelled: str, task_id: str) -> list[dict]:
                return [f for f in frames if f['op'] == 'publish' and f['topic'] == spelled
                        and f['msg']['task_id'] == task_id]

            async def barrier(label: str) -> None:
                """Wait until the panel has handled what this client sent so far: it
                handles a client's messages in order, and answers this one at once (a
                subscribe or unsubscribe is not answered; a correction published over DDS
                right after one could overtake it)."""
                await ws.send_json({'op': 'call_service', 'id': label,
                                    'service': 'barrier/not_bridged'})
                await until(f'the answer to {label}', lambda: any(
                    f['op'] == 'service_response' and f.get('id') == label for f in frames))

            async def correct(number: int, spellings: set[str]) -> str:
                """Publish a correction over DDS; wait until it came under ``spellings``."""
                task_id = f'{probe}-{number}'
                publisher.publish(Correction(task_id=task_id, step=0,
                                             corrected_action='noop', sender='wire_test'))
                await until(f'correction {task_id} under {sorted(spellings)}',
                            lambda: all(under(s, task_id) for s in spellings))
                return task_id

            for message in (_subscribe('robot/correction', 'a'),
                            _subscribe('/robot/correction', 'b'),
                            _subscribe('robot/correction', 'c')):
                await ws.send_json(message)
            await barrier('subscribed')
            both = {'robot/correction', '/robot/correction'}
            first = await correct(1, both)
            fence = await correct(2, both)
            # One frame per spelling, though two ids share the unslashed one.
            assert [len(under(s, t)) for t in (first, fence) for s in sorted(both)] == \
                [1, 1, 1, 1], frames
            await ws.send_json({'op': 'unsubscribe', 'id': 'a', 'topic': 'robot/correction'})
            await barrier('unsubscribed a')
            await correct(3, both)                       # id c keeps the spelling
            await ws.send_json({'op': 'unsubscribe', 'topic': 'robot/correction'})
            await barrier('unsubscribed the spelling')
            gone = await correct(4, {'/robot/correction'})
            fence = await correct(5, {'/robot/correction'})
            assert under('robot/correction', gone) == under('robot/correction', fence) == []
            # A service's answer: the client's spelling and id, from the task manager
            # (a request it refuses, so that no session starts) and from the panel.
            await ws.send_json({'op': 'call_service', 'id': 7, 'service': 'task_manager/start',
                                'args': {'num_tasks': 4294967295}})
            await ws.send_json({'op': 'call_service', 'id': 'x', 'service': 'no/such_service'})
            await until('the two service answers', lambda: {7, 'x'} <= {
                f.get('id') for f in frames if f['op'] == 'service_response'})
        answers = {f['id']: f for f in frames if f['op'] == 'service_response'}
        assert answers[7]['service'] == 'task_manager/start', answers
        assert answers[7]['result'] is True and answers[7]['values']['success'] is False
        assert 'is more than' in answers[7]['values']['message'], answers
        assert (answers['x']['service'], answers['x']['result']) == ('no/such_service', False)
        assert 'no/such_service may not be called' in answers['x']['values'], answers

    asyncio.run(session())
    assert graph['processes'].alive(PANEL)
