"""The study dataset (cecm_ros/core/dataset.py) on the stub domain: rows written are read
back the same, decoded through the domain; a malformed row is refused naming its file,
its line and what is wrong, and nothing of such a dataset is returned."""

from __future__ import annotations

import json

import pytest

from cecm_ros.core.dataset import (
    DATASET_FORMAT,
    Episode,
    Step,
    WireState,
    load_dataset,
    write_dataset,
)
from cecm_ros.core.errors import ConfigError

NAMES = ('run-letter', 'run-parcel', 'run-plant', 'run-keys')


def _state(*atoms: str) -> WireState:
    return WireState(tuple(sorted(atoms)))


def _episode(participant: str, set_index: int, index: int, bits: str = '1000',
             type_name: str = 'low_capability') -> Episode:
    """Two errands: the partner runs the letter, the robot is corrected from the letter to
    the parcel."""
    steps = (
        Step(0, '(run robot parcel)', '(run human letter)',
             _state('(done letter)', '(done parcel)', '(ran-by-partner letter)'),
             intent='(run robot letter)', answered=True, correction='(run robot parcel)',
             robot_changed=True, partner_changed=True,
             stamps={'intent': 10.0 + index, 'answer': 10.5 + index, 'state': 11.0 + index}),
    )
    return Episode(participant, set_index, index, 'errands', type_name, NAMES,
                   tuple(b == '1' for b in bits), f'errands-{index}', (),
                   ('(done letter)', '(done parcel)'), _state(), steps,
                   protocol='abc123', started=10.0 + index, finished=11.0 + index,
                   source='written by hand')


EPISODES = [_episode('p01', 1, 1), _episode('p01', 1, 2), _episode('p02', 1, 1),
            _episode('p02', 2, 1, '1100', 'letter-and-parcel')]


def test_a_dataset_is_read_back_as_written_and_decoded_by_its_domain(tmp_path, errands):
    domain, _ = errands
    files = write_dataset(tmp_path, list(reversed(EPISODES)))
    assert [f.name for f in files] == ['p01.jsonl', 'p02.jsonl']
    lines = files[0].read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])['format'] == DATASET_FORMAT
    dataset = load_dataset(tmp_path, domain)
    assert sorted(dataset.episodes, key=lambda e: e.key) == EPISODES
    assert dataset.origins[0] == f'{files[0]} line 1'
    assert [(s.participant, s.set_index, s.type_name, len(s.positions))
            for s in dataset.sets()] == [('p01', 1, 'low_capability', 2),
                                         ('p02', 1, 'low_capability', 1),
                                         ('p02', 2, 'letter-and-parcel', 1)]
    decoded = dataset.decoded[0]
    assert decoded.observed == (frozenset(), frozenset({'(done letter)', '(done parcel)',
                                                        '(ran-by-partner letter)'}))
    assert decoded.truth.tolist() == [True, False, False, False]
    assert not decoded.start_differs
    # One file for a whole study reads the same.
    single = tmp_path / 'study' / 'all.jsonl'
    single.parent.mkdir()
    single.write_text(''.join(f.read_text() for f in files))
    assert load_dataset(single, domain).episodes == dataset.episodes


def test_the_writer_refuses_what_it_must_not_write(tmp_path):
    write_dataset(tmp_path, EPISODES[:1])
    with pytest.raises(ConfigError, match='p01.jsonl exist already'):
        write_dataset(tmp_path, EPISODES[:1])
    with pytest.raises(ConfigError, match="'p01' set 1 episode 1 is given twice"):
        write_dataset(tmp_path / 'new', [EPISODES[0], EPISODES[0]])
    broken = Episode(**{**EPISODES[0].__dict__, 'capabilities': (True,)})
    with pytest.raises(ConfigError, match='capabilities bits must be 4 digits'):
        write_dataset(tmp_path / 'other', [broken])
    assert not (tmp_path / 'other').exists()


def _mutate(row: dict, change: str) -> dict | str:
    """Row 2 of p01.jsonl made wrong in one way."""
    step = row['steps'][0]
    if change == 'not json':
        return '{"format": ' + json.dumps(DATASET_FORMAT)
    if change == 'version':
        row['format'] = 'cecm_ros/study_episode/9'
    elif change == 'missing':
        del row['task']
    elif change == 'unknown':
        row['partcipant'] = 'p01'
    elif change == 'bits':
        row['capabilities']['bits'] = '10'
    elif change == 'numbering':
        step['step'] = 3
    elif change == 'correction':
        step['answered'] = False
    elif change == 'feature':
        step['state'] = {'facts': [], 'features': [float('nan')]}
    elif change == 'stamp':
        step['stamps'] = {'lunch': 12.0}
    elif change == 'state':
        step['state'] = {}
    elif change == 'set':
        row['capabilities']['bits'] = '1111'
    elif change == 'duplicate':
        row['episode'] = 1
    return row


@pytest.mark.parametrize('change, problem', [
    ('not json', 'not JSON'),
    ('version', "format 'cecm_ros/study_episode/9', expected 'cecm_ros/study_episode/1'"),
    ('missing', "the episode: missing field 'task'"),
    ('unknown', "the episode: unknown field 'partcipant'"),
    ('bits', "capabilities bits must be 4 digits 0/1 (one per name), got '10'"),
    ('numbering', 'the step at position 0 is numbered 3'),
    ('correction', 'step 0: a correction is an answer; answered must be true'),
    ('feature', 'step 0: state feature 0 must be a finite number, got nan'),
    ('stamp', "step 0: unknown stamp 'lunch'"),
    ('state', 'step 0: state needs "facts"'),
    ('set', "set 1 of 'p01' has type 'low_capability' (1000) at"),
    ('duplicate', "participant 'p01' set 1 episode 1 is also at"),
])
def test_a_malformed_row_is_refused_naming_the_file_and_the_line(tmp_path, change, problem):
    write_dataset(tmp_path, EPISODES)
    path = tmp_path / 'p01.jsonl'
    lines = path.read_text().splitlines()
    changed = _mutate(json.loads(lines[1]), change)
    lines[1] = changed if isinstance(changed, str) else json.dumps(changed)
    path.write_text('\n'.join(lines) + '\n')
    with pytest.raises(ConfigError) as caught:
        load_dataset(tmp_path)
    assert str(caught.value).startswith(f'{path} line 2: '), caught.value
    assert problem in str(caught.value)


@pytest.mark.parametrize('change, problem', [
    ({'domain': 'kitchen'}, "an episode of domain 'kitchen', but the domain given is "
                            "'errands'"),
    ({'partner': '(fly human kite)'}, "step 0: partner '(fly human kite)': unknown action"),
    ({'partner': '(run robot plant)'}, "step 0: partner '(run robot plant)' is an action of "
                                       'the robot, not of the human'),
    ({'goal': ['(done keys)']}, 'goal_reached is true, but the goal does not hold'),
    ({'names': ['run-letter', 'run-parcel', 'run-plant', 'run-dog']},
     'its capabilities are not those of'),
    ({'bits': '1100'}, "type 'low_capability' lacks run-parcel, run-plant, run-keys, but its "
                       'capabilities lack run-plant, run-keys'),
])
def test_a_row_of_another_domain_is_refused_when_loaded_with_one(tmp_path, errands, change,
                                                                  problem):
    domain, _ = errands
    write_dataset(tmp_path, EPISODES[:1])
    path = tmp_path / 'p01.jsonl'
    row = json.loads(path.read_text())
    if 'domain' in change:
        row['domain'] = change['domain']
    if 'partner' in change:
        row['steps'][0]['partner'] = change['partner']
    if 'goal' in change:
        row['task']['goal'] = change['goal']
    if 'names' in change:
        row['capabilities']['names'] = change['names']
    if 'bits' in change:
        row['capabilities']['bits'] = change['bits']
    path.write_text(json.dumps(row) + '\n')
    load_dataset(tmp_path)          # well-formed: only the domain refuses it
    with pytest.raises(ConfigError) as caught:
        load_dataset(tmp_path, domain)
    assert str(caught.value).startswith(f'{path} line 1: '), caught.value
    assert problem in str(caught.value)


def test_an_empty_or_missing_dataset_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='holds no dataset file'):
        load_dataset(tmp_path)
    (tmp_path / 'p.jsonl').write_text('\n\n')
    with pytest.raises(ConfigError, match='the dataset holds no episode'):
        load_dataset(tmp_path)
    with pytest.raises(ConfigError, match='no such file or folder'):
        load_dataset(tmp_path / 'nowhere')
