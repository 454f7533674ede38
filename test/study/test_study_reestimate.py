"""A study dataset made by simulated TidyUP participants who are not the planner
(noisy:0.2), re-estimated offline as the paper's section 5.3 and appendix E do:
`cecm study simulate`, then `cecm estimate --from-dataset`."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

from cecm_ros.cli.main import main as cecm
from cecm_ros.core.dataset import load_dataset
from cecm_ros.core.errors import ConfigError
from cecm_ros.study.reestimate import METHODS, method_specs, ndm, set_seed

TYPES = ('low_capability', 'high_capability', 'mobility_limited')
PARTICIPANTS, TASKS, SAMPLES = 2, 2, 20


def _run(capsys, *args) -> tuple[int, str, str]:
    gc.collect()
    capsys.readouterr()
    code = cecm(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope='module')
def study(tmp_path_factory):
    """The dataset and its re-estimation with every method (each command run once)."""
    work = tmp_path_factory.mktemp('study')
    dataset, out = work / 'dataset', work / 'reestimate'
    simulated = cecm(['study', 'simulate', '--out', str(dataset), '--participants',
                      str(PARTICIPANTS), '--types', ','.join(TYPES), '--tasks', str(TASKS),
                      '--seed', '0', '--jobs', '1', '--quiet'])
    estimated = cecm(['estimate', '--from-dataset', str(dataset), '--method',
                      'paper,cecm_div,posterior', '--samples', str(SAMPLES), '--seed', '3',
                      '--jobs', '1', '--out', str(out)])
    return {'dataset': dataset, 'out': out, 'codes': (simulated, estimated)}


def test_the_simulated_dataset_is_one_set_per_participant_and_type(study, model):
    assert study['codes'][0] == 0
    dataset = load_dataset(study['dataset'], model)
    assert [f.name for f in dataset.files] == ['p01.jsonl', 'p02.jsonl']
    sets = dataset.sets()
    assert [(s.participant, s.set_index, s.type_name) for s in sets] == [
        (f'p0{p}', index, kind) for p in (1, 2) for index, kind in enumerate(TYPES, 1)]
    for group in sets:
        assert len(group.positions) == TASKS
        truth = model.catalog.partner_vector(group.type_name)
        assert group.bits == ''.join('1' if b else '0' for b in truth)
    # The same tasks for every participant of a type, played differently.
    by_type: dict[str, list] = {}
    for episode, decoded in zip(dataset.episodes, dataset.decoded):
        by_type.setdefault(episode.type_name, []).append((episode.task_id, decoded.observed))
        assert model.goal_reached(decoded.task, decoded.observed[-1])
        for step, before, after in zip(episode.steps, decoded.observed, decoded.observed[1:]):
            middle, human = model.transition(before, 'human', step.partner, decoded.truth)
            reached, robot = model.transition(middle, 'robot', step.robot, decoded.truth)
            assert reached == after
            assert (human.changed, robot.changed) == (step.partner_changed,
                                                      step.robot_changed)
            assert step.answered and (step.correction is None) == (step.intent == step.robot)
    for kind, played in by_type.items():
        first, second = played[:TASKS], played[TASKS:]
        assert [t for t, _ in first] == [t for t, _ in second], kind
    assert any(a != b for played in by_type.values()
               for (_, a), (_, b) in zip(played[:TASKS], played[TASKS:]))


def test_the_reestimation_table_has_every_type_method_and_task(study):
    assert study['codes'][1] == 0
    result = json.loads((study['out'] / 'reestimate.json').read_text())
    methods = ['paper', 'cecm_div', 'posterior']
    assert [m['name'] for m in result['methods']] == methods
    assert [m['label'] for m in result['methods']] == [METHODS[m][2] for m in methods]
    assert result['command'].startswith(f'cecm estimate --from-dataset {study["dataset"]} '
                                        '--method paper,cecm_div,posterior --samples 20')
    assert len(result['rows']) == PARTICIPANTS * len(TYPES) * TASKS * len(methods)
    table = result['table']
    assert [(r['type'], r['method'], r['task']) for r in table] == [
        (kind, method, task) for kind in TYPES for method in methods
        for task in range(1, TASKS + 1)]
    for entry in table:
        rows = [r for r in result['rows'] if (r['type'], r['method'], r['task']) ==
                (entry['type'], entry['method'], entry['task'])]
        assert entry['sets'] == len(rows) == PARTICIPANTS
        for metric in ('accepted_samples', 'hamming'):
            interval = entry[metric]
            assert interval['mean'] == pytest.approx(np.mean([r[metric] for r in rows]))
            assert interval['ci95_low'] <= interval['mean'] <= interval['ci95_high']
        assert all(0 <= r['accepted_samples'] <= SAMPLES * r['task'] for r in rows)
    report = (study['out'] / 'report.md').read_text()
    assert '| type | method | task | sets | accepted samples | Hamming |' in report
    assert report.count('| low_capability | CE-CM-Div (Algorithm 2) |') == TASKS + 1  # + final
    for name in ('accepted_samples', 'hamming', 'diversity', 'distance'):
        assert (study['out'] / 'plots' / f'{name}.png').stat().st_size > 1000


def test_the_final_table_pairs_each_method_with_algorithm_1_over_the_same_sets(study):
    result = json.loads((study['out'] / 'reestimate.json').read_text())
    final = {(row['type'], row['method']): row for row in result['final']}
    assert sorted(final) == sorted((t, m) for t in TYPES
                                   for m in ('paper', 'cecm_div', 'posterior'))
    for (kind, method), row in final.items():
        last = [r['hamming'] for r in result['rows']
                if (r['type'], r['method'], r['task']) == (kind, method, TASKS)]
        assert row['sets'] == len(last) == PARTICIPANTS
        assert row['hamming']['mean'] == pytest.approx(np.mean(last))
        if method == 'paper':
            assert 'versus' not in row
            continue
        versus = row['versus']
        reference = [r['hamming'] for r in result['rows']
                     if (r['type'], r['method'], r['task']) == (kind, 'paper', TASKS)]
        assert versus['difference']['mean'] == pytest.approx(np.mean(last) - np.mean(reference))
        assert versus['lower'] + versus['equal'] + versus['higher'] == PARTICIPANTS
    report = (study['out'] / 'report.md').read_text()
    assert "## Hamming distance after each set's last episode" in report


def test_hamming_is_against_the_assigned_vector_of_the_set(study, model):
    """Recomputed here from the dataset's own rows: each row's estimate against the
    participant's vector for that set (three types, so a mix-up of sets shows)."""
    result = json.loads((study['out'] / 'reestimate.json').read_text())
    assigned = {}
    for path in sorted(study['dataset'].glob('*.jsonl')):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            assigned[(row['participant'], row['set'])] = row['capabilities']['bits']
    distinct = {r['hamming'] for r in result['rows']}
    assert len(distinct) > 1
    for row in result['rows']:
        truth = assigned[(row['participant'], row['set'])]
        assert row['truth'] == truth
        expected = sum(a != b for a, b in zip(row['estimate'], truth)) / len(truth)
        assert row['hamming'] == pytest.approx(expected)
        live = ~model.inert_mask
        differing = [a != b for a, b, keep in zip(row['estimate'], truth, live) if keep]
        assert row['hamming_active'] == pytest.approx(sum(differing) / len(differing))
        assert row['seed'] == set_seed(3, row['participant'], row['set'])
    # The paper's Algorithm 1 with nothing accepted keeps the prior's estimate (all
    # present, theta 0.8 > psi): its Hamming is then the share the type lacks.
    for row in result['rows']:
        if row['method'] == 'paper' and row['task'] == 1 and row['accepted_samples'] == 0:
            assert row['hamming'] == pytest.approx(row['truth'].count('0') / len(row['truth']))


def test_appendix_e_diversity_and_distance_per_type_and_task(study):
    result = json.loads((study['out'] / 'reestimate.json').read_text())
    assert len(result['diversity']) == len(result['distances']) == len(TYPES) * TASKS
    for entry in result['diversity']:
        assert entry['trajectories'] == PARTICIPANTS
        assert entry['ndm'] is not None and 0.0 <= entry['mean_pairwise'] <= 1.0
    for entry in result['distances']:
        assert len(entry['values']) == PARTICIPANTS
        assert all(0.0 <= v <= 1.0 for v in entry['values'])
        assert entry['mean'] == pytest.approx(np.mean(entry['values']))


def test_ndm_is_the_papers_formula():
    """Three trajectories on a line at 0, 1 and 2: distances 1, 2, 1, D_max 2."""
    found = ndm(np.array([[0.0], [1.0], [2.0]]))
    assert found['d_max'] == 2.0
    assert found['ndm'] == pytest.approx((2 * (1 + 2 + 1) / 2) / 3)
    assert found['mean_pairwise'] == pytest.approx(8 / 2 / 6)
    assert ndm(np.array([[1.0, 2.0], [1.0, 2.0]]))['ndm'] == 0.0
    assert ndm(np.array([[1.0]]))['ndm'] is None


def test_method_names_and_options_are_checked(model):
    with pytest.raises(ConfigError, match="unknown method 'cecm'.*posterior, paper, cecm_div"):
        method_specs(['cecm'], model, {})
    with pytest.raises(ConfigError, match='--inference chooses the reading of cecm_div only'):
        method_specs(['paper'], model, {}, inference='sequential')
    [div] = method_specs(['cecm_div'], model, {'samples': 7}, inference='posterior')
    assert (div.method, div.settings.inference, div.settings.samples, div.label) == \
        ('cecm_div', 'posterior', 7, 'CE-CM-Div (posterior)')


def test_a_malformed_dataset_stops_the_command_naming_its_line(tmp_path, capsys):
    (tmp_path / 'p01.jsonl').write_text('{"format": "cecm_ros/study_episode/1"}\n')
    code, _, err = _run(capsys, 'estimate', '--from-dataset', str(tmp_path), '--out',
                        str(tmp_path / 'out'))
    assert code == 2
    assert err.startswith(f'cecm: error: {tmp_path / "p01.jsonl"} line 1: the episode: '
                          'missing field'), err
    assert not (tmp_path / 'out').exists()


def test_sets_done_before_are_read_and_a_changed_set_is_done_again(study, tmp_path, capsys):
    """OUT/sets keeps each set's rows under a key of its settings and episodes: the same
    command again reads every set; a set whose episodes changed is re-estimated, alone."""
    assert study['codes'][1] == 0
    before = json.loads((study['out'] / 'reestimate.json').read_text())
    args = ['--method', 'paper,cecm_div,posterior', '--samples', str(SAMPLES), '--seed', '3',
            '--jobs', '1', '--out', str(study['out'])]
    code, out, _ = _run(capsys, 'estimate', '--from-dataset', str(study['dataset']), *args)
    assert code == 0
    assert out.count('(done before)') == 3 * PARTICIPANTS * len(TYPES), out
    again = json.loads((study['out'] / 'reestimate.json').read_text())
    assert again['rows'] == before['rows'] and again['table'] == before['table']

    # p02 without its last episode: its last set alone changes.
    changed = tmp_path / 'dataset'
    changed.mkdir()
    (changed / 'p01.jsonl').write_text((study['dataset'] / 'p01.jsonl').read_text())
    lines = (study['dataset'] / 'p02.jsonl').read_text().splitlines(keepends=True)
    (changed / 'p02.jsonl').write_text(''.join(lines[:-1]))
    code, out, _ = _run(capsys, 'estimate', '--from-dataset', str(changed), *args)
    assert code == 0
    redone = [line for line in out.splitlines()
              if ': p0' in line and 'Hamming' in line and 'done before' not in line]
    assert len(redone) == 3 and all(f'p02 set {len(TYPES)}' in line for line in redone), out
    assert out.count('(done before)') == 3 * (PARTICIPANTS * len(TYPES) - 1), out


def test_the_shipped_scripted_study_loads_and_matches_its_report():
    """docs/study.md's table rests on this dataset and this report (made from it)."""
    from pathlib import Path

    from cecm_ros.domains import load_domain

    folder = Path(__file__).resolve().parents[2] / 'docs' / 'results' / 'study' / \
        'overcooked_scripted'
    dataset = load_dataset(folder / 'dataset', load_domain('overcooked'))
    result = json.loads((folder / 'estimate' / 'reestimate.json').read_text())
    assert len(dataset.episodes) == result['episodes'] == 185
    assert len(dataset.sets()) == result['sets'] == 45
    assert dataset.participants == result['participants']
    keys = {(r['participant'], r['set'], r['episode']) for r in result['rows']}
    assert keys == {(e.participant, e.set_index, e.episode_index) for e in dataset.episodes}
