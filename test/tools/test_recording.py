"""Session recordings: written by session_recorder into MCAP, re-estimated by cecm estimate.

The first part checks the pure helpers on small fixtures: message definitions in the
ros2msg convention (from a share folder made here), the QoS metadata, the cutting of
recorded team states into task runs, files cut off by a crash, the choice of estimator
settings and the errors for bad input. The second part records a real session (the
installed executables as processes over DDS, 3 tasks with 60 samples, seed 0) with two
recorders, one stopped with SIGINT and one killed, and checks that the files are valid
MCAP that rosbags decodes on its own, and that `cecm estimate` gives back the live belief
exactly, from the recording, from the partner store and from an exported profile.
"""

from __future__ import annotations

import gc
import json
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from cecm_ros.cli.main import main as cecm
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.core.partner_store import PartnerStore
from cecm_ros.tools.recording import (
    SEPARATOR,
    DefinitionNotFoundError,
    DefinitionSource,
    McapSink,
    RecordingError,
    RequestRecord,
    StateRecord,
    field_types,
    offered_qos_yaml,
    output_file,
    read_recording,
    reconstruct_runs,
)
from cecm_ros.tools.reestimate import Evidence, choose_settings


# ------------------------------------------------------------------- definitions
@pytest.fixture
def share(tmp_path) -> DefinitionSource:
    """Three small interface packages in a share folder of their own."""
    files = {
        'demo_msgs/msg/Outer.msg': '# outer\nInner[] inners  # a list\n'
                                   'other_msgs/Leaf leaf\nInner single\nint32 N=3\n',
        'demo_msgs/msg/Inner.msg': 'other_msgs/Leaf[<=2] leaves\nstring<=8 tag\n',
        'demo_msgs/msg/Broken.msg': 'other_msgs/Gone gone\n',
        'other_msgs/msg/Leaf.msg': 'string name\n',
        'unique_identifier_msgs/msg/UUID.msg': 'uint8[16] uuid\n',
        'demo_msgs/action/Do.action': 'Inner target\n---\nbool ok\n---\nuint32 progress\n',
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return DefinitionSource(lambda package: tmp_path / package)


def test_field_types_name_every_used_type_once():
    text = ('# Header header is a comment\nstd_msgs/Header header\nTeamState[] trajectory\n'
            'string<=5 name\nuint8 A=1\nTeamState[<=3] more\npkg/action/X_Goal goal\n')
    assert field_types(text, 'cecm_ros') == ['std_msgs/Header', 'cecm_ros/TeamState',
                                             'pkg/action/X_Goal']


def test_schema_appends_each_dependency_once_after_a_separator(share):
    schema = share.schema('demo_msgs/msg/Outer')
    sections = schema.split(SEPARATOR + '\n')
    assert sections[0] == share.text('demo_msgs/msg/Outer')
    assert [s.splitlines()[0] for s in sections[1:]] == ['MSG: demo_msgs/Inner',
                                                         'MSG: other_msgs/Leaf']
    assert 'string name' in sections[2]


def test_action_types_are_cut_and_composed_from_the_action_file(share):
    assert share.text('demo_msgs/action/Do_Goal') == 'demo_msgs/Inner target\n'
    assert share.text('demo_msgs/action/Do_Feedback') == 'uint32 progress\n'
    schema = share.schema('demo_msgs/action/Do_FeedbackMessage')
    assert schema.startswith('unique_identifier_msgs/UUID goal_id\n'
                             'demo_msgs/Do_Feedback feedback\n')
    assert f'{SEPARATOR}\nMSG: demo_msgs/Do_Feedback\nuint32 progress' in schema
    response = share.schema('demo_msgs/action/Do_GetResult_Response')
    assert response.startswith('int8 status\ndemo_msgs/Do_Result result\n')
    assert 'bool ok' in response


def test_schemas_parse_with_independent_ros2msg_readers(share):
    """mcap-ros2-support parses message schemas; rosbags also the action types (whose
    names mcap-ros2-support refuses, like rosidl's .msg rules)."""
    from mcap_ros2._dynamic import generate_dynamic
    from rosbags.typesys import get_types_from_msg

    assert 'demo_msgs/msg/Outer' in generate_dynamic('demo_msgs/msg/Outer',
                                                     share.schema('demo_msgs/msg/Outer'))
    types = get_types_from_msg(share.schema('demo_msgs/action/Do_FeedbackMessage'),
                               'demo_msgs/action/Do_FeedbackMessage')
    assert 'demo_msgs/action/Do_FeedbackMessage' in types


def test_a_missing_definition_is_named(share):
    with pytest.raises(DefinitionNotFoundError, match='demo_msgs/msg/Missing'):
        share.schema('demo_msgs/msg/Missing')
    with pytest.raises(DefinitionNotFoundError, match='other_msgs/Gone'):
        share.schema('demo_msgs/msg/Broken')     # a type it uses is missing
    with pytest.raises(DefinitionNotFoundError, match="'nonsense' is not a ROS 2 type"):
        share.schema('nonsense')


def test_offered_qos_is_written_as_rosbag2_does():
    infinite = 2**63 - 1
    text = offered_qos_yaml([{'history': 3, 'depth': 0, 'reliability': 1, 'durability': 1,
                              'liveliness': 1, 'deadline': infinite, 'lifespan': infinite,
                              'liveliness_lease_duration': 1_500_000_000}])
    [profile] = yaml.safe_load(text)
    assert profile['reliability'] == 'reliable' and profile['durability'] == 'transient_local'
    assert profile['history'] == 'unknown' and profile['depth'] == 0
    assert profile['deadline'] == {'sec': 9223372036, 'nsec': 854775807}
    assert profile['liveliness_lease_duration'] == {'sec': 1, 'nsec': 500_000_000}


def test_output_file_of_a_folder_is_timestamped(tmp_path):
    assert output_file(str(tmp_path / 'x.mcap')) == tmp_path / 'x.mcap'
    assert output_file(str(tmp_path / 'x')) == tmp_path / 'x.mcap'
    named = output_file(str(tmp_path), now=0.0)
    assert named.parent == tmp_path and named.name.startswith('session-19')
    assert output_file(str(tmp_path / 'new') + '/').parent == tmp_path / 'new'


# ----------------------------------------------------------------- reconstruction
GOAL = ('(item-at plate kitchen)',)


def _states(task_id: str, start: int, steps: list[tuple[str, ...]]) -> list[StateRecord]:
    return [StateRecord(start + i, task_id, i, atoms) for i, atoms in enumerate(steps)]


def test_runs_are_cut_at_the_goal_in_the_order_they_finished():
    away, home = ('(item-at plate study)',), ('(item-at plate kitchen)',)
    requests = [RequestRecord(1, 'a', 'p', 1, away, GOAL), RequestRecord(101, 'b', 'p', 2,
                                                                         away, GOAL),
                RequestRecord(201, 'a', 'p', 3, away, GOAL), RequestRecord(301, 'c', 'p', 4,
                                                                           away, GOAL)]
    states = (_states('a', 0, [away, away, away])               # interrupted
              + _states('b', 100, [away, home])
              + _states('a', 200, [away, away, home, home]))    # run again, reaches the goal
    states.append(StateRecord(150, 'b', 1, home))               # delivered twice
    result = reconstruct_runs(requests, list(reversed(states)))
    assert [(r.task_id, r.attempt) for r in result.runs] == [('b', 2), ('a', 3)]
    assert result.runs[1].states == (away, away, home)          # the first goal state ends it
    assert result.runs[0].finished == 101
    reasons = dict(result.left_out)
    assert 'without reaching its goal' in reasons['a (attempt 1)']
    assert 'none of its team states' in reasons['c']


def test_a_hole_in_a_run_leaves_it_out_and_partners_are_kept_apart():
    away = ('(item-at plate study)',)
    requests = [RequestRecord(1, 'a', 'p', 1, away, GOAL), RequestRecord(2, 'b', 'q', 1,
                                                                         away, GOAL)]
    states = [StateRecord(0, 'a', 0, away), StateRecord(3, 'a', 2, GOAL)]
    with pytest.raises(RecordingError, match="several partners .*'p', 'q'.*--partner-id"):
        reconstruct_runs(requests, states)
    result = reconstruct_runs(requests, states, partner_id='p')
    assert result.runs == [] and 'missing from the recording after step 0' in \
        dict(result.left_out)['a (attempt 1)']
    with pytest.raises(RecordingError, match="no task of partner 'r'"):
        reconstruct_runs(requests, states, partner_id='r')
    with pytest.raises(RecordingError, match='no task'):
        reconstruct_runs([], states)


def test_settings_default_to_the_beliefs_and_options_replace_them():
    learned = EstimatorSettings(samples=60, prior=0.7)
    evidence = Evidence('store x', 'p', [], method='cecm', settings=learned, seed=4)
    assert choose_settings(evidence, None, None, {}, None, None) == ('cecm', learned, 4)
    method, paper, seed = choose_settings(evidence, None, 'paper', {'samples': 80}, None, 1)
    assert (method, seed, paper.variant, paper.samples, paper.prior) == ('cecm', 1, 'paper',
                                                                         80, 0.7)
    _, windowed, _ = choose_settings(evidence, None, None, {}, 2, None)
    assert windowed.window == 2 and windowed.samples == 60
    recorded = Evidence('recording x', 'p', [], inference='sequential')
    _, settings, seed = choose_settings(recorded, None, None, {}, None, None)
    assert settings.variant == 'sequential' and seed == 0


def test_the_estimate_command_leaves_every_setting_it_is_not_given_to_the_belief():
    """`cecm estimate`'s options have no defaults of their own: a belief learned with
    prior 0.7 and misperception 0.05 is replayed with them unless an option says not."""
    from cecm_ros.cli.main import build_parser
    from cecm_ros.tools.options import estimator_values

    learned = EstimatorSettings(samples=60, prior=0.7, misperception=0.05)
    evidence = Evidence('store x', 'p', [], method='cecm', settings=learned, seed=4)
    args = build_parser().parse_args(['estimate', '--from-store', 'x.sqlite'])
    assert not any(value is not None for value in estimator_values(args).values())
    overrides = {k: v for k, v in estimator_values(args).items() if k != 'window'}
    assert choose_settings(evidence, None, None, overrides, None, None)[1] == learned
    args = build_parser().parse_args(['estimate', '--from-store', 'x.sqlite',
                                      '--misperception', '0'])
    overrides = {k: v for k, v in estimator_values(args).items() if k != 'window'}
    replayed = choose_settings(evidence, None, None, overrides, None, None)[1]
    assert (replayed.misperception, replayed.prior) == (0.0, 0.7)


# ------------------------------------------------------------- files and errors
def _serialize(msg) -> bytes:
    serialization = pytest.importorskip('rclpy.serialization')
    return serialization.serialize_message(msg)


def _installed_definitions() -> DefinitionSource:
    pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')
    return DefinitionSource()


def _team_state(task_id: str, step: int, atoms):
    from cecm_ros.msg import TeamState

    return TeamState(task_id=task_id, step=step, true_propositions=list(atoms))


def test_a_recording_cut_off_by_a_crash_is_read_up_to_its_last_chunk(tmp_path):
    definitions = _installed_definitions()
    path = tmp_path / 'crashed.mcap'
    sink = McapSink(path, definitions)
    sink.add_topic('/team_state', 'cecm_ros/msg/TeamState')
    for step in range(3):
        sink.write('/team_state', _serialize(_team_state('t', step, ['(clean plate)'])),
                   step + 1, step + 1)
    assert sink.flush() == 3
    sink.write('/team_state', _serialize(_team_state('t', 3, [])), 9, 9)   # never flushed
    recording = read_recording(path)        # the sink is still open: as if it had died
    assert not recording.complete and 'was not closed' in recording.problems[0]
    assert [m.message.step for m in recording.messages] == [0, 1, 2]
    assert recording.messages[1].message.true_propositions == ['(clean plate)']
    sink.close()
    closed = read_recording(path)
    assert closed.complete and [m.message.step for m in closed.messages] == [0, 1, 2, 3]
    assert closed.topics['/team_state'].count == 4
    with pytest.raises(RecordingError, match='exists already'):
        McapSink(path, definitions)


def test_a_rosbag2_folder_is_read_through_its_mcap_files(tmp_path):
    definitions = _installed_definitions()
    folder = tmp_path / 'rosbag2_2025_01_01-00_00_00'
    for index, step in enumerate((0, 1)):
        sink = McapSink(folder / f'rosbag2_{index}.mcap', definitions)
        sink.add_topic('/team_state', 'cecm_ros/msg/TeamState')
        sink.write('/team_state', _serialize(_team_state('t', step, [])), step + 1, step + 1)
        sink.close()
    recording = read_recording(folder)
    assert [m.message.step for m in recording.messages] == [0, 1]
    assert len(recording.files) == 2 and recording.complete
    (tmp_path / 'sqlite').mkdir()
    (tmp_path / 'sqlite' / 'bag_0.db3').write_bytes(b'')
    with pytest.raises(RecordingError, match='bag_0.db3: rosbag2 SQLite files; record with'):
        read_recording(tmp_path / 'sqlite')


def _cli(capsys, *args) -> tuple[int, str, str]:
    # Garbage of earlier tests first: what rclpy prints when it collects a future of a
    # node destroyed there is not this command's output.
    gc.collect()
    capsys.readouterr()
    code = cecm(['estimate', *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_estimate_names_what_is_wrong_with_its_input(tmp_path, capsys):
    missing = tmp_path / 'missing.mcap'
    assert _cli(capsys, '--from-recording', str(missing))[::2] == \
        (2, f'cecm: error: {missing}: no such file\n')
    text = tmp_path / 'notes.mcap'
    text.write_text('hello')
    code, _, err = _cli(capsys, '--from-recording', str(text))
    assert code == 2 and 'is not an MCAP file' in err
    code, _, err = _cli(capsys, '--from-log', str(text))
    assert code == 2 and 'is not a partner profile (not JSON' in err
    belief = tmp_path / 'belief.json'
    belief.write_text(json.dumps({'format': 'cecm_ros/capability_belief/2'}))
    code, _, err = _cli(capsys, '--from-log', str(belief))
    assert code == 2 and 'it is a belief file, which has no task log' in err
    code, _, err = _cli(capsys, '--from-store', str(tmp_path / 'none.sqlite'))
    assert code == 2 and 'none.sqlite: no such file' in err
    with PartnerStore(tmp_path / 'store.sqlite') as store:
        store.save('ann', _fresh_belief())
        store.save('bob', _fresh_belief())
    code, _, err = _cli(capsys, '--from-store', str(tmp_path / 'store.sqlite'))
    assert code == 2 and "2 partners ('ann', 'bob'); choose one with --partner-id" in err
    code, out, err = _cli(capsys, '--from-store', str(tmp_path / 'store.sqlite'),
                          '--partner-id', 'ann')
    assert code == 2 and 'holds no task to replay' in err


def _fresh_belief():
    from cecm_ros.core.estimator import CapabilityBelief
    from cecm_ros.domains.tidyup.model import TidyUpModel

    return CapabilityBelief('cecm', list(TidyUpModel().catalog.names))


def test_estimate_refuses_recordings_without_tasks_or_of_another_household(tmp_path, capsys):
    definitions = _installed_definitions()
    from std_msgs.msg import String

    from cecm_ros.msg import TaskRequest

    chatter = tmp_path / 'chatter.mcap'
    sink = McapSink(chatter, definitions)
    sink.add_topic('/chatter', 'std_msgs/msg/String')
    sink.write('/chatter', _serialize(String(data='hi')), 1, 1)
    sink.close()
    code, _, err = _cli(capsys, '--from-recording', str(chatter))
    assert code == 2 and 'holds no task: no cecm_ros/msg/TaskRequest' in err
    assert '(topics: /chatter)' in err

    other = tmp_path / 'other_home.mcap'
    sink = McapSink(other, definitions)
    sink.add_topic('/task/request', 'cecm_ros/msg/TaskRequest')
    sink.add_topic('/team_state', 'cecm_ros/msg/TeamState')
    atoms = ['(item-at spaceship hangar)']
    sink.write('/task/request', _serialize(TaskRequest(
        task_id='t', partner_id='p', initial_propositions=atoms, goal_propositions=atoms)),
        2, 2)
    sink.write('/team_state', _serialize(_team_state('t', 0, atoms)), 1, 1)
    sink.close()
    code, _, err = _cli(capsys, '--from-recording', str(other))
    assert code == 2 and "unknown proposition '(item-at spaceship hangar)'" in err
    assert 'the recording is of another household; give its household file with ' \
           '--household' in err


@pytest.mark.parametrize('arguments, problem', [
    (['-p', 'output:=/proc/no/such/folder/session.mcap'], 'cannot record: cannot create'),
    (['-p', 'output:={existing}'], 'exists already; give another file or a folder'),
    (['-p', 'queue_depth:=0'], "parameter 'queue_depth' = 0: Parameter queue_depth out of range"),
    (['-p', 'flush_period_s:=-1.0'],
     "parameter 'flush_period_s' = -1.0: Parameter flush_period_s out of range"),
], ids=['unwritable-output', 'existing-file', 'queue-depth-zero', 'negative-flush-period'])
def test_a_recorder_that_cannot_record_exits_naming_why(tmp_path, arguments, problem):
    """The recorder is no lifecycle node: a bad start-up value ends the process with
    code 1 and the reason (a file that exists is never overwritten unless asked)."""
    import subprocess

    pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')
    from graph_fixtures import graph_environment, installed_or_skip

    from cecm_ros.tools.ros_domain_ids import reserve_domain_id

    executables, _ = installed_or_skip('session_recorder')
    existing = tmp_path / 'kept.mcap'
    existing.write_bytes(b'not to be lost')
    arguments = [a.format(existing=existing) for a in arguments]
    if not any(a.startswith('output:=') for a in arguments):
        arguments += ['-p', f'output:={tmp_path / "new.mcap"}']
    with reserve_domain_id() as reservation:
        done = subprocess.run(
            [str(executables / 'session_recorder'), '--ros-args', *arguments],
            env=graph_environment(reservation.domain_id, str(tmp_path)), capture_output=True,
            text=True,
            timeout=60, stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert problem in output, output
    assert existing.read_bytes() == b'not to be lost'


# ------------------------------------------------------------- a recorded session
PARTNER = 'low_capability'
TASKS = 3
SAMPLES = 60
SEED = 0
EXPECTED_TOPICS = {
    '/task/request': 'cecm_ros/msg/TaskRequest',
    '/team_state': 'cecm_ros/msg/TeamState',
    '/capability_belief': 'cecm_ros/msg/CapabilityBelief',
    '/robot/intent': 'cecm_ros/msg/RobotIntent',
    '/robot/correction': 'cecm_ros/msg/Correction',
    '/robot/joint_plan': 'cecm_ros/msg/JointPlan',
    '/capability_estimator/estimate/_action/feedback':
        'cecm_ros/action/EstimateCapabilities_FeedbackMessage',
    '/capability_estimator/estimate/_action/status': 'action_msgs/msg/GoalStatusArray',
    '/rosout': 'rcl_interfaces/msg/Log',
}


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    """A session recorded twice: by a recorder stopped with SIGINT, and by one killed."""
    pytest.importorskip('rclpy', reason='needs rclpy (make build)')
    pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')
    from graph_fixtures import (
        MANAGER,
        NODES,
        NodeProcesses,
        RosClient,
        RosDomain,
        installed_or_skip,
    )

    from cecm_ros.srv import PartnerCommand

    executables, params = installed_or_skip('session_recorder')
    work = tmp_path_factory.mktemp('recorded')
    ros_domain = RosDomain()
    env = ros_domain.env
    client = RosClient('cecm_recording_test')
    processes = NodeProcesses(executables, params, env, work)
    state = {'work': work, 'processes': processes, 'store': work / 'partners.sqlite',
             'full': work / 'session.mcap', 'killed': work / 'killed.mcap',
             'profile': work / 'profile.json'}
    try:
        processes.start('session_recorder', {'output': state['full']})
        processes.graph.start('killed_recorder', [
            str(executables / 'session_recorder'), '--ros-args', '-r',
            '__node:=killed_recorder', '-p', f'output:={state["killed"]}', '-p',
            "topics:=['/task/request', 'team_state', '/capability_belief']", '-p',
            'flush_period_s:=0.3'])
        overrides = {
            # The accept/reject likelihood: a replay reproduces it bit for bit. The stepwise
            # one compares exact states with one optimal plan, and when optimal plans tie,
            # which one the shared plans give depends on what was planned before (the live
            # estimator ranked the candidates first): its replay agrees to 0.05 in theta,
            # not exactly (an open defect, docs/design.md).
            'capability_estimator': {'samples': SAMPLES, 'seed': SEED, 'likelihood': 'indicator',
                                     'store_path': str(state['store'])},
            'world_sim': {'partner': PARTNER},
            'simulated_human': {'partner': PARTNER},
            'task_manager': {'partner': PARTNER, 'num_tasks': TASKS, 'seed': SEED,
                             'exit_when_done': True, 'heldout_tasks': 0},
        }
        for node in NODES:
            processes.start(node, overrides.get(node))
        # As under `cecm demo --record`: the scene for Foxglove's layout is recorded too.
        processes.start('scene_markers')
        state['discovered'] = client.wait_for_nodes(
            [*NODES, 'session_recorder', 'killed_recorder', 'scene_markers'], 30.0)
        processes.start(MANAGER)
        state['session_code'] = processes.wait_for_exit('task_manager',
                                                        'the end of the session')
        try:
            response = client.call(PartnerCommand, 'capability_estimator/export_partner',
                                   PartnerCommand.Request(path=str(state['profile'])))
            state['export'] = response.message if response.success else \
                f'failed: {response.message}'
        except TimeoutError as error:   # reported by the test that needs the profile
            state['export'] = f'failed: {error}'
        time.sleep(1.0)   # the killed recorder's last flush (0.3 s) is past
        processes.graph.signal('killed_recorder', signal.SIGKILL)
        state['killed_code'] = processes.processes['killed_recorder'].wait(10)
        state['recorder_code'] = processes.interrupt(['session_recorder'])['session_recorder']
        state['logs'] = processes.graph.errors(40)
        yield state
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _live(state):
    with PartnerStore(state['store']) as store:
        return store.load('partner')


def _assert_same_belief(found: dict, live) -> None:
    assert found['tasks_seen'] == live.tasks_seen == TASKS
    assert found['estimate'] == [bool(b) for b in live.estimate]
    assert np.allclose(found['theta'], live.theta, atol=1e-6, rtol=0)
    from cecm_ros.core.estimator import CapabilityBelief

    rebuilt = CapabilityBelief.from_dict(found)
    assert [r.status for r in rebuilt.report] == [r.status for r in live.report]


def test_the_session_is_recorded_into_a_valid_mcap_file(recorded):
    assert recorded['session_code'] == 0, recorded['logs']
    assert recorded['recorder_code'] == 0, recorded['processes'].log('session_recorder')
    log = recorded['processes'].log('session_recorder')
    assert 'Traceback' not in log and f'to {recorded["full"]}' in log
    recording = read_recording(recorded['full'])
    assert recording.complete and not recording.problems
    found = {name: topic.type_name for name, topic in recording.topics.items()}
    assert found.items() >= EXPECTED_TOPICS.items()
    assert all(recording.topics[name].schema_encoding == 'ros2msg' for name in EXPECTED_TOPICS)
    for name in ('/task/request', '/team_state', '/capability_belief', '/robot/intent'):
        assert recording.topics[name].count > 0, name
    latched = yaml.safe_load(recording.topics['/capability_belief'].offered_qos)
    assert [p['durability'] for p in latched] == ['transient_local']
    events = yaml.safe_load(recording.topics['/robot/intent'].offered_qos)
    assert {p['durability'] for p in events} == {'volatile'}
    assert [m.message.tasks_seen for m in recording.of_type('cecm_ros/msg/CapabilityBelief')
            ][-1] == TASKS


def test_rosbags_decodes_every_recorded_message_from_the_file_alone(recorded):
    """An independent reader with no cecm_ros types of its own: the schemas are complete."""
    from rclpy.serialization import deserialize_message
    from rosbags.highlevel import AnyReader

    from cecm_ros.msg import TeamState

    decoded, checked = 0, 0
    with AnyReader([recorded['full']]) as reader:
        for connection, _, raw in reader.messages():
            message = reader.deserialize(raw, connection.msgtype)
            decoded += 1
            if connection.topic == '/team_state':
                ours = deserialize_message(raw, TeamState)
                assert (message.task_id, message.step, list(message.true_propositions)) == \
                       (ours.task_id, ours.step, list(ours.true_propositions))
                checked += 1
    assert checked > TASKS and decoded == sum(t.count for t in
                                              read_recording(recorded['full']).topics.values())


def test_the_recording_gives_back_the_live_belief(recorded, capsys):
    out = recorded['work'] / 'offline'
    code, text, err = _cli(capsys, '--from-recording', str(recorded['full']),
                           '--samples', str(SAMPLES), '--likelihood', 'indicator',
                           '--out', str(out))
    assert code == 0, err
    assert f"partner 'partner' from the recording {recorded['full']}: {TASKS} tasks" in text
    assert 'compared with the live belief in the recording (after 3 tasks): identical' in text
    assert text.count('  [task ') == TASKS
    _assert_same_belief(json.loads((out / 'belief.json').read_text()), _live(recorded))
    profile = json.loads((out / 'profile.json').read_text())
    assert profile['format'] == 'cecm_ros/partner_profile/1' and len(profile['log']) == TASKS


def test_the_store_and_the_exported_profile_give_back_the_live_belief(recorded, capsys):
    assert 'written to' in recorded['export'], recorded['export']
    for source, path in (('--from-store', recorded['store']),
                         ('--from-log', recorded['profile'])):
        out = recorded['work'] / source.strip('-')
        code, text, err = _cli(capsys, source, str(path), '--out', str(out))
        assert code == 0, err
        assert f'{SAMPLES} particles' in text and 'seed 0' in text   # the belief's settings
        assert '(after 3 tasks): identical' in text
        _assert_same_belief(json.loads((out / 'belief.json').read_text()), _live(recorded))


def test_a_killed_recorder_leaves_a_readable_file_with_the_same_tasks(recorded):
    from cecm_ros.tools.recording import session_records

    killed = read_recording(recorded['killed'])
    assert not killed.complete and 'was not closed' in killed.problems[0]
    assert set(killed.topics) == {'/task/request', '/team_state', '/capability_belief'}
    full = read_recording(recorded['full'])
    runs = [reconstruct_runs(*session_records(r)).runs for r in (killed, full)]
    assert len(runs[1]) == TASKS
    assert [(r.task_id, r.attempt, r.states) for r in runs[0]] == \
           [(r.task_id, r.attempt, r.states) for r in runs[1]]


def test_the_runs_are_the_tasks_the_estimator_logged_in_its_order(recorded):
    with PartnerStore(recorded['store']) as store:
        logged = [(e.task.task_id, len(e.observed)) for e in store.log('partner')]
    from cecm_ros.tools.recording import session_records

    runs = reconstruct_runs(*session_records(read_recording(recorded['full']))).runs
    assert [(r.task_id, len(r.states)) for r in runs] == logged
    assert recorded['killed_code'] == -signal.SIGKILL   # it really died without closing


# ------------------------------------------------------------- the Foxglove layout
LAYOUT = Path(__file__).resolve().parents[2] / 'config' / 'cecm.foxglove.json'
# The panels the layout may name: the settings Foxglove reads from each (name -> type),
# and the message types its topic may carry (None: any).
PANELS = {
    '3D': ({'cameraState': dict, 'followTf': str, 'topics': dict, 'layers': dict},
           {'visualization_msgs/msg/MarkerArray', 'visualization_msgs/msg/Marker'}),
    'DiagnosticSummary': ({'topicToRender': str, 'minLevel': int, 'pinnedIds': list,
                           'sortByLevel': bool}, {'diagnostic_msgs/msg/DiagnosticArray'}),
    'Plot': ({'paths': list}, None),
    'RawMessages': ({'topicPath': str}, None),
    'RosOut': ({'topicToRender': str, 'minLogLevel': int}, {'rcl_interfaces/msg/Log'}),
}


def _leaves(tree) -> list[str]:
    """The panel ids of a Foxglove layout tree (a mosaic of splits)."""
    if isinstance(tree, str):
        return [tree]
    assert isinstance(tree, dict) and tree.get('direction') in ('row', 'column'), tree
    assert 0 < tree.get('splitPercentage', 50) < 100, tree
    return _leaves(tree['first']) + _leaves(tree['second'])


def _panel_topics(kind: str, config: dict) -> list[tuple[str, str]]:
    """(topic, message path after it or '') of each topic a panel's settings name."""
    if kind == '3D':
        return [(topic, '') for topic in config['topics']]
    if kind == 'Plot':
        found = []
        for path in config['paths']:
            assert {'value', 'enabled', 'timestampMethod'} <= set(path), path
            topic, _, field_path = path['value'].partition('.')
            found.append((topic, field_path))
        return found
    if kind == 'RawMessages':
        return [(config['topicPath'], '')]
    return [(config['topicToRender'], '')]


def test_the_foxglove_layout_names_known_panels_with_their_settings():
    layout = json.loads(LAYOUT.read_text())
    assert set(layout) >= {'configById', 'layout', 'globalVariables', 'playbackConfig'}
    panels = layout['configById']
    assert sorted(_leaves(layout['layout'])) == sorted(panels)
    for panel_id, config in panels.items():
        kind, bang, _ = panel_id.partition('!')
        assert bang and kind in PANELS, f'{panel_id}: not a panel this layout may name'
        settings, _ = PANELS[kind]
        for key, kind_of in settings.items():
            assert isinstance(config.get(key), kind_of), f'{panel_id}: {key} {config.get(key)!r}'
        for topic, _ in _panel_topics(kind, config):
            assert topic.startswith('/'), f'{panel_id}: {topic!r} is not an absolute topic'


def test_the_recording_opens_with_the_foxglove_layout(recorded):
    """Every topic the layout shows is in the recording, of a type its panel draws; a
    plotted field is in its messages; the 3D panel's markers are in its frame."""
    assert recorded['session_code'] == 0, recorded['logs']
    layout = json.loads(LAYOUT.read_text())
    topics = read_recording(recorded['full'], types=()).topics
    wanted = {}
    for panel_id, config in layout['configById'].items():
        kind = panel_id.partition('!')[0]
        _, types = PANELS[kind]
        for topic, field_path in _panel_topics(kind, config):
            assert topic in topics and topics[topic].count > 0, \
                f'{panel_id}: {topic} is not in the recording ({sorted(topics)})'
            assert types is None or topics[topic].type_name in types, \
                f'{panel_id}: {topic} carries {topics[topic].type_name}'
            wanted.setdefault(topics[topic].type_name, []).append((topic, field_path))
    recording = read_recording(recorded['full'], types=wanted)
    for type_name, uses in wanted.items():
        for topic, field_path in uses:
            messages = [m.message for m in recording.of_type(type_name) if m.topic == topic]
            assert messages, f'{topic}: no {type_name} decoded'
            for name in filter(None, field_path.split('.')):
                messages = [getattr(m, name) for m in messages]
            if field_path:
                assert all(isinstance(v, float) for v in messages), (topic, field_path)
    frame = layout['configById']['3D!cecm_scene']['followTf']
    arrays = [m.message for m in recording.of_type('visualization_msgs/msg/MarkerArray')]
    drawn = [m for array in arrays for m in array.markers if m.action == 0]   # ADD
    assert drawn and {m.header.frame_id for m in drawn} == {frame}
    assert {'places', 'agents', 'belief'} <= {m.ns for m in drawn}
