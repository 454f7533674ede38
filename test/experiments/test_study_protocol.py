"""A study protocol: counterbalanced orders, seeded sets, clear errors; and a
participant's progress, which survives a crash and refuses another protocol version."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest
import yaml
from paths import REPO

from cecm_ros.core.errors import ConfigError
from cecm_ros.domains import load_domain
from cecm_ros.study.progress import Progress
from cecm_ros.study.protocol import load_protocol, order_row

PROTOCOL = {
    'study': 'kitchen-pilot', 'domain': 'overcooked', 'participants': 6,
    'types': ['type_1', 'type_2', 'type_3'], 'tasks_per_set': 2, 'task_seed': 4,
    'order': 'williams', 'assistant': {'method': 'optimistic'},
    'instructions': 'Make the salads with the robot.', 'consent': 'I agree to take part.',
    'questionnaire': [{'id': 'trust', 'text': 'I trusted the robot', 'points': 7}],
}


def write(tmp_path, changes=None, name='protocol.yaml'):
    data = json.loads(json.dumps(PROTOCOL))
    for key, value in (changes or {}).items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize('count', [2, 3, 4, 5])
def test_a_latin_square_puts_every_condition_in_every_position_equally(count):
    rows = [order_row('latin_square', count, p) for p in range(count)]
    for position in range(count):
        assert sorted(row[position] for row in rows) == list(range(count))


@pytest.mark.parametrize('count', [2, 3, 4, 5])
def test_a_williams_design_balances_which_condition_follows_which(count):
    size = count if count % 2 == 0 else 2 * count
    rows = [order_row('williams', count, p) for p in range(size)]
    assert all(sorted(row) == list(range(count)) for row in rows)
    follows = Counter((a, b) for row in rows for a, b in itertools.pairwise(row))
    assert set(follows.values()) == {1 if count % 2 == 0 else 2}
    assert len(follows) == count * (count - 1)
    for position in range(count):
        assert Counter(row[position] for row in rows) == \
            dict.fromkeys(range(count), size // count)


def test_a_plan_rotates_the_types_and_keeps_the_tasks_of_each_position(tmp_path):
    protocol = load_protocol(write(tmp_path))
    assert protocol.participants == ('P01', 'P02', 'P03', 'P04', 'P05', 'P06')
    domain = load_domain('overcooked')
    plans = {p: protocol.plan_for(p, domain) for p in protocol.participants}
    orders = {tuple(s.partner_type for s in plan) for plan in plans.values()}
    assert len(orders) == 6   # a Williams design of 3 types: 6 different orders
    for position in range(3):
        tasks = {tuple(t.task_id for t in plan[position].tasks) for plan in plans.values()}
        assert len(tasks) == 1 and len(next(iter(tasks))) == 2
    assert load_protocol(write(tmp_path, name='again.yaml')).digest == protocol.digest
    assert load_protocol(write(tmp_path, {'task_seed': 5}, 'other.yaml')).digest != \
        protocol.digest


@pytest.mark.parametrize('changes, words', [
    ({'types': ['type_1', 'type_1']}, 'distinct partner types'),
    ({'order': 'random'}, "order 'random'"),
    ({'participants': ['Jane Doe']}, 'not an id'),
    ({'participants': ['P1', 'P1']}, 'listed twice'),
    ({'assistant': {'method': 'oracle'}}, 'assistant needs a method'),
    ({'tasks_per_set': 0}, 'tasks_per_set'),
    ({'questionnaire': [{'id': 'q', 'text': 'x', 'points': 1}]}, 'points must be'),
    ({'questionnaire': [{'text': 'x'}]}, 'needs "id" and "text"'),
    ({'colour': 'blue'}, 'unknown key colour'),
    ({'assistant': {'method': 'cecm', 'particles': 5}}, 'assistant: unknown key particles'),
    ({'assistant': {'method': 'cecm', 'samples': 'many'}}, 'samples must be a whole number'),
    ({'web': {'port': 70000}}, 'web: port must be a port number'),
    ({'web': {'colour': 1}}, 'web: unknown key colour'),
    ({'domain': None}, '"domain" is missing'),
])
def test_a_protocol_mistake_is_named(tmp_path, changes, words):
    with pytest.raises(ConfigError, match='protocol.yaml') as caught:
        load_protocol(write(tmp_path, changes))
    assert words in str(caught.value)


def test_a_type_the_domain_lacks_and_a_stranger_are_named(tmp_path):
    protocol = load_protocol(write(tmp_path, {'types': ['type_1', 'chef']}))
    with pytest.raises(ConfigError, match="type 'chef' is not a partner type"):
        protocol.plan_for('P01', load_domain('overcooked'))
    with pytest.raises(ConfigError, match="no participant 'P99'"):
        protocol.type_order('P99')


def test_progress_survives_a_restart_and_refuses_another_protocol(tmp_path):
    folder = tmp_path / 'P01'
    progress = Progress.open(folder, 'kitchen-pilot', 'P01', 'abc')
    progress.give_consent()
    progress.begin('set-1-type_2', 'kitchen-pilot-P01-1', 'set-1.mcap')
    again = Progress.open(folder, 'kitchen-pilot', 'P01', 'abc')
    assert again.consented == progress.consented and not again.done('set-1-type_2')
    again.begin('set-1-type_2', 'kitchen-pilot-P01-1', 'set-1-part2.mcap')
    again.finish('set-1-type_2', {'trust': 6})
    final = Progress.open(folder, 'kitchen-pilot', 'P01', 'abc')
    entry = final.entry('set-1-type_2')
    assert final.done('set-1-type_2') and entry.answers == {'trust': 6}
    assert entry.recordings == ['set-1.mcap', 'set-1-part2.mcap']
    with pytest.raises(ConfigError, match='finished already'):
        final.begin('set-1-type_2', 'kitchen-pilot-P01-1', 'x.mcap')
    with pytest.raises(ConfigError, match='another version of the protocol'):
        Progress.open(folder, 'kitchen-pilot', 'P01', 'changed')
    (folder / 'progress.json').write_text('{"format": "nonsense"}')
    with pytest.raises(ConfigError, match='unreadable study progress'):
        Progress.open(folder, 'kitchen-pilot', 'P01', 'abc')


@pytest.mark.parametrize('path', sorted(
    [*(REPO / 'config' / 'studies').glob('*.yaml'),
     *(REPO / 'docs' / 'results' / 'study').glob('*/protocol.yaml')]), ids=lambda p: p.name)
def test_the_shipped_protocols_plan_every_participant(path):
    from cecm_ros.domains import load_domain

    protocol = load_protocol(path)
    domain = load_domain(protocol.domain)
    for participant in protocol.participants:
        sets = protocol.plan_for(participant, domain)
        assert sorted(s.partner_type for s in sets) == sorted(protocol.types)
        assert all(len(s.tasks) == protocol.tasks_per_set for s in sets)


def test_a_protocol_that_gives_a_type_a_task_no_plan_serves_is_refused(tmp_path):
    """Kitchen B cuts the kitchen in two: a type_1 partner (no vegetables) cannot pass the
    robot what it needs, so no plan serves its tasks there. Listing kitchens A and C only
    (task_ids) makes the same design servable."""
    from cecm_ros.domains import planner_for

    domain = load_domain('overcooked')
    with planner_for(domain, plan_cache=True) as planner:
        every = load_protocol(write(tmp_path, {'tasks_per_set': 5}))
        with pytest.raises(ConfigError, match='no plan serves these tasks') as raised:
            every.check_served(domain, planner)
        assert 'type_1: B-' in str(raised.value) and 'task_ids' in str(raised.value)
        served_ids = [t.task_id for t in domain.tasks if not t.task_id.startswith('B-')]
        served = load_protocol(write(tmp_path, {'tasks_per_set': 5, 'task_ids': served_ids},
                                     name='served.yaml'))
        served.check_served(domain, planner)
        for participant in served.participants:
            for study_set in served.plan_for(participant, domain):
                assert len(study_set.tasks) == 5
                assert all(t.task_id in served_ids for t in study_set.tasks)


@pytest.mark.parametrize('task_ids, words', [
    (['A-lettuce_onion', 'Z-nothing'], 'Z-nothing is no task of domain'),
    (['A-lettuce_onion'], 'fewer than tasks_per_set'),
    ('A-lettuce_onion', 'task_ids must list distinct task ids')])
def test_a_bad_task_list_is_named(tmp_path, task_ids, words):
    domain = load_domain('overcooked')
    with pytest.raises(ConfigError, match=words):
        load_protocol(write(tmp_path, {'task_ids': task_ids})).plan_for('P01', domain)
