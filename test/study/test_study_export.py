"""`cecm study export` on a real recording: a 2-task `cecm demo --record` session (the
installed node graph as processes over DDS, in a ROS domain of its own) becomes a
dataset whose episodes agree with what the graph reported and with what `cecm estimate
--from-recording` replays."""

from __future__ import annotations

import gc
import json
import subprocess

import pytest
import yaml
from graph_fixtures import RosDomain, installed_or_skip, scaled
from paths import VENV

from cecm_ros.cli.main import main as cecm
from cecm_ros.core.dataset import load_dataset
from cecm_ros.core.domain import NOOP
from cecm_ros.study.protocol import load_protocol

pytest.importorskip('rclpy', reason='needs rclpy (make build)')

TASK_REPORT = 'cecm_ros/msg/TaskReport'


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    installed_or_skip('session_recorder')
    work = tmp_path_factory.mktemp('export')
    out, recording = work / 'demo', work / 'session.mcap'
    ros = RosDomain()
    try:
        done = subprocess.run(
            [str(VENV / 'bin' / 'cecm'), 'demo', '--tasks', '2', '--samples', '60',
             '--seed', '0', '--task-choice', 'given', '--out', str(out), '--record',
             str(recording)],
            env=ros.env, cwd=work, capture_output=True, text=True, timeout=scaled(600),
            stdin=subprocess.DEVNULL)
    finally:
        ros.release()
    return {'work': work, 'out': out, 'recording': recording,
            'code': done.returncode, 'log': (done.stdout + done.stderr)[-4000:]}


def _export(capsys, *args) -> tuple[int, str, str]:
    gc.collect()
    capsys.readouterr()
    code = cecm(['study', 'export', *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_recorded_session_becomes_a_dataset(session, capsys, model):
    from cecm_ros.tools.recording import read_recording
    from cecm_ros.tools.reestimate import from_recording

    assert session['code'] == 0, session['log']
    dataset_dir = session['work'] / 'dataset'
    code, out, err = _export(capsys, str(session['recording']), '--out', str(dataset_dir),
                             '--protocol', 'pilot-1')
    assert code == 0, err
    # The graph's partner was low_capability; the export says where it read that.
    assert "participant 'partner', set 1: 2 episodes; capabilities low_capability " in out
    assert ' from ' in out
    dataset = load_dataset(dataset_dir, model)
    assert [(e.participant, e.set_index, e.episode_index, e.type_name, e.protocol)
            for e in dataset.episodes] == [('partner', 1, i, 'low_capability', 'pilot-1')
                                           for i in (1, 2)]
    assert dataset.decoded[0].truth.tolist() == \
        model.catalog.partner_vector('low_capability').tolist()

    # The same trajectories `cecm estimate --from-recording` replays, in the same order.
    evidence = from_recording(session['recording'], model)
    assert [e.task.task_id for e in evidence.entries] == [e.task_id for e in dataset.episodes]
    assert [e.observed for e in evidence.entries] == [d.observed for d in dataset.decoded]

    # Corrections and robot decisions as the task manager reported them per task.
    reports = {m.message.task_id: m.message for m in
               read_recording(session['recording'], (TASK_REPORT,)).of_type(TASK_REPORT)}
    for episode in dataset.episodes:
        report = reports[episode.task_id]
        assert sum(s.correction is not None for s in episode.steps) == report.corrections
        assert sum(s.intent != NOOP or s.robot != NOOP for s in episode.steps) == \
            report.robot_decisions
        for step in episode.steps:
            # The simulated partner answers every intent; a correction is what was done.
            assert step.intent is not None and step.answered, step
            assert step.robot == (step.correction or step.intent)
            assert step.stamps['intent'] <= step.stamps['answer'] <= step.stamps['state']
        assert episode.started <= episode.finished

    # The task manager's summary agrees; a contradicting --capabilities is refused.
    code, out, err = _export(capsys, str(session['recording']), '--out',
                             str(session['work'] / 'again'), '--summary',
                             str(session['out'] / 'summary.json'))
    assert code == 0, err
    code, _, err = _export(capsys, str(session['recording']), '--out',
                           str(session['work'] / 'wrong'), '--capabilities', 'high_capability')
    assert code == 2
    # (Against the world's parameter when the recorder caught it, else the partner's plans.)
    assert '--capabilities' in err and 'place_living_room, place_bedroom' in err, err
    assert not (session['work'] / 'wrong').exists()
    # With the study's protocol file: its digest, and the set the participant's order of
    # types there gives low_capability (the second of a fixed order).
    protocol = session['work'] / 'protocol.yaml'
    protocol.write_text(yaml.safe_dump({
        'study': 'pilot', 'domain': 'tidyup', 'participants': ['partner', 'p02'],
        'types': ['high_capability', 'low_capability'], 'tasks_per_set': 2, 'order': 'fixed',
        'assistant': {'method': 'optimistic'}, 'instructions': 'Tidy up with the robot.',
        'consent': 'I agree.', 'questionnaire': []}))
    code, _, err = _export(capsys, str(session['recording']), '--out',
                           str(session['work'] / 'planned'), '--protocol', str(protocol))
    assert code == 0, err
    planned = load_dataset(session['work'] / 'planned', model).episodes
    assert {(e.set_index, e.protocol) for e in planned} == \
        {(2, load_protocol(protocol).digest)}
    # Written once, a dataset is not overwritten by accident.
    code, _, err = _export(capsys, str(session['recording']), '--out', str(dataset_dir))
    assert code == 2 and 'exist already' in err
    assert json.loads((dataset_dir / 'partner.jsonl').read_text().splitlines()[0])['set'] == 1


def test_the_demo_records_the_scene_and_the_health_for_foxglove(session):
    """--record starts scene_markers too: the recording has what the Foxglove layout
    (config/cecm.foxglove.json) shows beside the session's own topics."""
    from cecm_ros.tools.recording import read_recording

    assert session['code'] == 0, session['log']
    topics = read_recording(session['recording'], types=()).topics
    for name, type_name in (('/markers', 'visualization_msgs/msg/MarkerArray'),
                            ('/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray')):
        assert name in topics and topics[name].type_name == type_name, sorted(topics)
        assert topics[name].count > 0, name
