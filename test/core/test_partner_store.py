"""The partner store on the stub domain (core/partner_store.py): a profile per partner,
atomic updates, idempotency, rebuilding from the log, and the files it refuses. The
stub's states are sets of atoms, so the log carries them as such."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.partner_store import (
    STORE_VERSION,
    LogEntry,
    PartnerStore,
    StoreError,
    rebuild_belief,
)


@pytest.fixture(scope='module')
def observations(errands):
    domain, planner = errands
    truth = domain.catalog.resolve('run-plant=0')
    return [(task, planner.plan(task, truth).trajectory)
            for task in domain.task_generator(3).tasks(3)]


def estimator_for(errands, belief=None, seed=4):
    domain, planner = errands
    return make_estimator('cecm', domain, evaluator_for('cecm', planner),
                          EstimatorSettings(samples=150), seed=seed, belief=belief)


def test_updates_are_logged_and_the_belief_rebuilds_from_the_log(errands, observations,
                                                                  tmp_path):
    store = PartnerStore(tmp_path / 'partners.sqlite')
    estimator = estimator_for(errands)
    store.save('ada', estimator.belief)
    for index, (task, observed) in enumerate(observations):
        report = estimator.update(task, observed)
        entry = LogEntry('s1', index, task, tuple(observed), {'message': report.message})
        assert store.record_update('ada', estimator.belief, entry)
    assert estimator.belief.tasks_seen == 3
    assert store.load('ada').to_dict() == estimator.belief.to_dict()
    log = store.log('ada')
    assert [e.task.task_id for e in log] == [t.task_id for t, _ in observations]
    assert log[1].observed == tuple(observations[1][1])
    assert all(isinstance(state, frozenset) for state in log[1].observed)
    assert log[2].report == {'message': report.message}
    assert [e.task_index for e in store.log('ada', 's1')] == [0, 1, 2]
    assert store.log('ada', 'other') == []
    rebuilt = rebuild_belief(store.load('ada'), log,
                             lambda fresh: estimator_for(errands, belief=fresh))
    assert rebuilt.to_dict() == estimator.belief.to_dict()
    summary = store.partners()[0]
    assert (summary.partner_id, summary.tasks_seen, summary.log_entries) == ('ada', 3, 3)


def test_an_update_sent_twice_is_not_counted_twice(errands, observations, tmp_path):
    store = PartnerStore(tmp_path / 'partners.sqlite')
    estimator = estimator_for(errands)
    task, observed = observations[0]
    estimator.update(task, observed)
    entry = LogEntry('s1', 0, task, tuple(observed))
    assert store.record_update('ada', estimator.belief, entry)
    before = store.load('ada').to_dict()
    estimator.update(task, observed)                    # the retry
    assert estimator.belief.to_dict() != before          # (the estimator did count it)
    assert not store.record_update('ada', estimator.belief, entry)
    assert store.load('ada').to_dict() == before        # the second write rolled back
    assert store.find('ada', 's1', 0) is not None and store.find('ada', 's1', 1) is None
    assert len(store.log('ada')) == 1


def test_profiles_are_kept_apart_and_survive_reopening(errands, observations, tmp_path):
    path = tmp_path / 'partners.sqlite'
    task, observed = observations[0]
    with PartnerStore(path) as store:
        for name, seed in (('ada', 1), ('bob', 2)):
            estimator = estimator_for(errands, seed=seed)
            estimator.update(task, observed)
            store.record_update(name, estimator.belief,
                                LogEntry('s', 0, task, tuple(observed)))
    with PartnerStore(path) as store:
        assert [p.partner_id for p in store.partners()] == ['ada', 'bob']
        assert store.load('ada').seed == 1 and store.load('bob').seed == 2
        exported = store.export('ada')
        assert exported['format'] == 'cecm_ros/partner_profile/1' and len(exported['log']) == 1
        fresh = estimator_for(errands).belief
        store.reset('ada', fresh)
        assert store.log('ada') == [] and store.load('ada').tasks_seen == 0
        assert store.delete('bob') and not store.delete('bob')
        assert store.load('bob') is None
        assert store.import_profile(json.loads(json.dumps(exported)), 'carol') == 'carol'
        assert len(store.log('carol')) == 1
        assert store.log('carol')[0].observed == tuple(observed)
        with pytest.raises(StoreError, match='exists already'):
            store.import_profile(exported, 'carol')


def test_foreign_newer_and_broken_stores_are_refused_with_the_reason(tmp_path):
    garbage = tmp_path / 'garbage.sqlite'
    garbage.write_bytes(b'this is not a database' * 100)
    with pytest.raises(StoreError, match='not a usable partner store'):
        PartnerStore(garbage)
    foreign = tmp_path / 'foreign.sqlite'
    with sqlite3.connect(foreign) as db:
        db.execute('CREATE TABLE photos (id INTEGER)')
    with pytest.raises(StoreError, match='not a cecm_ros partner store'):
        PartnerStore(foreign)
    newer = tmp_path / 'newer.sqlite'
    PartnerStore(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(STORE_VERSION + 1),))
    with pytest.raises(StoreError, match='newer cecm_ros'):
        PartnerStore(newer)
    PartnerStore(tmp_path / 'fresh.sqlite').close()
    PartnerStore(tmp_path / 'fresh.sqlite').close()    # its own store opens again


def test_an_old_belief_file_is_imported_without_a_log(errands, observations, tmp_path):
    estimator = estimator_for(errands)
    estimator.update(*observations[0])
    document = estimator.belief.to_dict()
    with PartnerStore(tmp_path / 'p.sqlite') as store:
        assert store.import_profile(document, 'dan') == 'dan'
        assert np.array_equal(store.load('dan').estimate, estimator.estimate)
        assert store.load('dan').tasks_seen == 1
        assert store.log('dan') == []


def test_an_unreadable_profile_is_named_and_can_be_deleted(errands, tmp_path):
    """A profile row damaged outside cecm_ros: listing and loading name the partner; the
    other profiles stay readable and deleting the damaged one repairs the store."""
    path = tmp_path / 'p.sqlite'
    with PartnerStore(path) as store:
        store.save('ada', estimator_for(errands).belief)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO partners VALUES ('mangled', 0, 0, '{not json')")
    with PartnerStore(path) as store:
        assert store.has('mangled') and not store.has('nobody')
        with pytest.raises(StoreError, match="stored belief of 'mangled' is unreadable"):
            store.partners()
        with pytest.raises(StoreError, match="stored belief of 'mangled' is unreadable"):
            store.load('mangled')
        assert store.load('ada').tasks_seen == 0
        assert store.delete('mangled')
        assert [p.partner_id for p in store.partners()] == ['ada']
