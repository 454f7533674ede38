"""Partner profiles that persist: each partner's belief and the task log that produced it.

A robot works next to the same person for months, so what it has learned about them is
kept in one SQLite file (Python's standard library; one transaction per update, so a
crash leaves the previous state or the new one, never a part). Per partner id it holds
the current belief and the log of every update: the task, the observed trajectory and
the update's report. The log is enough to rebuild the belief (:func:`rebuild_belief`),
and its key ``(session, task index)`` makes an update idempotent: an outcome sent twice
(a retry after a crash) is recognised and not counted again.

The store is owned by one writer, the capability estimator; everything else reads.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .domain import Task
from .errors import ConfigError
from .estimator import CapabilityBelief, decode_state, encode_state

STORE_FORMAT = 'cecm_ros/partner_store'
STORE_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE partners (
    partner_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    belief TEXT NOT NULL
);
CREATE TABLE task_log (
    partner_id TEXT NOT NULL REFERENCES partners(partner_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    task_index INTEGER NOT NULL,
    task TEXT NOT NULL,
    observed TEXT NOT NULL,
    report TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (partner_id, position),
    UNIQUE (partner_id, session_id, task_index)
);
"""


class StoreError(ConfigError):
    """The store cannot be used (foreign file, newer format, corrupt)."""


@dataclass(frozen=True)
class LogEntry:
    """One update of a partner's belief."""

    session_id: str
    task_index: int
    task: Task
    observed: tuple
    report: dict = field(default_factory=dict)   # samples evaluated/accepted, message, ...
    recorded: float = 0.0

    def to_dict(self) -> dict:
        return {'session_id': self.session_id, 'task_index': self.task_index,
                'task': task_to_dict(self.task),
                'observed': [encode_state(state) for state in self.observed],
                'report': self.report, 'recorded': self.recorded}

    @classmethod
    def from_dict(cls, data: dict) -> LogEntry:
        try:
            return cls(str(data['session_id']), int(data['task_index']),
                       task_from_dict(data['task']),
                       tuple(decode_state(s) for s in data['observed']),
                       dict(data.get('report', {})), float(data.get('recorded', 0.0)))
        except (KeyError, TypeError, ValueError) as error:
            raise StoreError(f'malformed task log entry: {error}') from None


@dataclass(frozen=True)
class PartnerSummary:
    partner_id: str
    method: str
    inference: str
    tasks_seen: int
    log_entries: int
    updated: float


def task_to_dict(task: Task) -> dict:
    return {'task_id': task.task_id, 'initial': sorted(task.initial), 'goal': sorted(task.goal)}


def task_from_dict(data: dict) -> Task:
    return Task(str(data['task_id']), frozenset(data['initial']), frozenset(data['goal']))


class PartnerStore:
    """The profiles in one SQLite file; thread-safe (one connection behind a lock)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=10.0,
                                       check_same_thread=False, isolation_level=None)
            self._db.execute('PRAGMA foreign_keys = ON')
            self._prepare()
        except sqlite3.DatabaseError as error:
            raise StoreError(f'{self.path} is not a usable partner store: {error}') from None
        except OSError as error:
            raise StoreError(f'cannot open the partner store {self.path}: {error}') from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> PartnerStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- format
    def _prepare(self) -> None:
        tables = {row[0] for row in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            self._db.execute('PRAGMA journal_mode = WAL')
            with self._transaction() as db:
                for statement in _SCHEMA.split(';'):
                    if statement.strip():
                        db.execute(statement)
                db.execute('INSERT INTO meta VALUES (?, ?)', ('format', STORE_FORMAT))
                db.execute('INSERT INTO meta VALUES (?, ?)', ('version', str(STORE_VERSION)))
            return
        if 'meta' not in tables:
            raise StoreError(f'{self.path} is an SQLite file but not a cecm_ros partner store '
                             f'(tables: {", ".join(sorted(tables))})')
        meta = dict(self._db.execute('SELECT key, value FROM meta'))
        if meta.get('format') != STORE_FORMAT:
            raise StoreError(f'{self.path} is not a cecm_ros partner store (format '
                             f'{meta.get("format")!r})')
        try:
            version = int(meta.get('version', ''))
        except ValueError:
            raise StoreError(f'{self.path}: unreadable store version '
                             f'{meta.get("version")!r}') from None
        if version > STORE_VERSION:
            raise StoreError(f'{self.path} was written by a newer cecm_ros (store version '
                             f'{version}; this one reads up to {STORE_VERSION}); upgrade '
                             'cecm_ros or export the profiles with it')
        # (Version 1 is the first; later versions migrate older stores here, in one
        # transaction per step, and record the new version.)

    def _transaction(self):
        store = self

        class _Transaction:
            def __enter__(self):
                store._db.execute('BEGIN IMMEDIATE')
                return store._db

            def __exit__(self, kind, value, traceback):
                store._db.execute('COMMIT' if kind is None else 'ROLLBACK')
                return False

        return _Transaction()

    # ------------------------------------------------------------------ reads
    def partners(self) -> list[PartnerSummary]:
        with self._lock:
            rows = self._db.execute(
                'SELECT p.partner_id, p.updated, p.belief, COUNT(t.position) FROM partners p '
                'LEFT JOIN task_log t ON t.partner_id = p.partner_id '
                'GROUP BY p.partner_id ORDER BY p.partner_id').fetchall()
        summaries = []
        for partner_id, updated, belief, entries in rows:
            try:
                data = json.loads(belief)
                summaries.append(PartnerSummary(
                    partner_id, str(data.get('method', '')),
                    str(data.get('settings', {}).get('inference', '')),
                    int(data.get('tasks_seen', 0)), int(entries), float(updated)))
            except (ValueError, TypeError, AttributeError) as error:
                raise StoreError(f'the stored belief of {partner_id!r} is unreadable: '
                                 f'{error}') from None
        return summaries

    def has(self, partner_id: str) -> bool:
        """Whether the store holds a profile of ``partner_id`` (readable or not)."""
        with self._lock:
            return self._db.execute('SELECT 1 FROM partners WHERE partner_id = ?',
                                    (partner_id,)).fetchone() is not None

    def load(self, partner_id: str) -> CapabilityBelief | None:
        """The partner's current belief, or None for an unknown partner."""
        with self._lock:
            row = self._db.execute('SELECT belief FROM partners WHERE partner_id = ?',
                                   (partner_id,)).fetchone()
        if row is None:
            return None
        try:
            return CapabilityBelief.from_dict(json.loads(row[0]))
        except (ValueError, KeyError, TypeError) as error:
            raise StoreError(f'the stored belief of {partner_id!r} is unreadable: '
                             f'{error}') from None

    def log(self, partner_id: str, session_id: str | None = None) -> list[LogEntry]:
        """The partner's updates in order (those of one session when given)."""
        query = ('SELECT session_id, task_index, task, observed, report, recorded '
                 'FROM task_log WHERE partner_id = ?')
        arguments: tuple = (partner_id,)
        if session_id is not None:
            query += ' AND session_id = ?'
            arguments += (session_id,)
        with self._lock:
            rows = self._db.execute(query + ' ORDER BY position', arguments).fetchall()
        return [LogEntry(session, index, task_from_dict(json.loads(task)),
                         tuple(decode_state(s) for s in json.loads(observed)), json.loads(report),
                         recorded)
                for session, index, task, observed, report, recorded in rows]

    def find(self, partner_id: str, session_id: str, task_index: int) -> LogEntry | None:
        """The logged update of a session's task, if it was applied already."""
        for entry in self.log(partner_id, session_id):
            if entry.task_index == task_index:
                return entry
        return None

    def export(self, partner_id: str) -> dict:
        """The whole profile as one JSON-ready document (belief and log)."""
        belief = self.load(partner_id)
        if belief is None:
            raise StoreError(f'no partner {partner_id!r} in {self.path}')
        return {'format': 'cecm_ros/partner_profile/1', 'partner_id': partner_id,
                'belief': belief.to_dict(),
                'log': [entry.to_dict() for entry in self.log(partner_id)]}

    # ----------------------------------------------------------------- writes
    def save(self, partner_id: str, belief: CapabilityBelief) -> None:
        """Create or replace the partner's belief (its log is kept)."""
        text = json.dumps(belief.to_dict())
        now = time.time()
        with self._lock, self._transaction() as db:
            db.execute('INSERT INTO partners VALUES (?, ?, ?, ?) ON CONFLICT(partner_id) '
                       'DO UPDATE SET belief = excluded.belief, updated = excluded.updated',
                       (partner_id, now, now, text))

    def record_update(self, partner_id: str, belief: CapabilityBelief,
                      entry: LogEntry) -> bool:
        """Store the belief after an update together with its log entry, in one
        transaction. False (and nothing written) when that session's task is logged
        already: the update was applied before."""
        text = json.dumps(belief.to_dict())
        now = time.time()
        with self._lock:
            try:
                with self._transaction() as db:
                    db.execute('INSERT INTO partners VALUES (?, ?, ?, ?) '
                               'ON CONFLICT(partner_id) DO UPDATE SET belief = '
                               'excluded.belief, updated = excluded.updated',
                               (partner_id, now, now, text))
                    position = db.execute('SELECT COALESCE(MAX(position), -1) + 1 FROM '
                                          'task_log WHERE partner_id = ?',
                                          (partner_id,)).fetchone()[0]
                    db.execute('INSERT INTO task_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                               (partner_id, position, entry.session_id, entry.task_index,
                                json.dumps(task_to_dict(entry.task)),
                                json.dumps([encode_state(s) for s in entry.observed]),
                                json.dumps(entry.report), entry.recorded or now))
            except sqlite3.IntegrityError:
                return False
        return True

    def reset(self, partner_id: str, belief: CapabilityBelief) -> None:
        """Start the partner over: a fresh belief and an empty log."""
        with self._lock, self._transaction() as db:
            db.execute('DELETE FROM task_log WHERE partner_id = ?', (partner_id,))
            now = time.time()
            db.execute('INSERT INTO partners VALUES (?, ?, ?, ?) ON CONFLICT(partner_id) '
                       'DO UPDATE SET belief = excluded.belief, updated = excluded.updated',
                       (partner_id, now, now, json.dumps(belief.to_dict())))

    def delete(self, partner_id: str) -> bool:
        with self._lock, self._transaction() as db:
            db.execute('DELETE FROM task_log WHERE partner_id = ?', (partner_id,))
            return db.execute('DELETE FROM partners WHERE partner_id = ?',
                              (partner_id,)).rowcount > 0

    def import_profile(self, data: dict, partner_id: str | None = None) -> str:
        """Add a profile exported by :meth:`export` (or a belief JSON file's content,
        which has no log) under ``partner_id`` (default: its own). Refuses to overwrite."""
        if not isinstance(data, dict):
            raise StoreError('a partner profile is a JSON object')
        if data.get('format') == 'cecm_ros/partner_profile/1':
            belief = CapabilityBelief.from_dict(data['belief'])
            entries = [LogEntry.from_dict(e) for e in data.get('log', [])]
            name = partner_id or str(data['partner_id'])
        else:
            belief = CapabilityBelief.from_dict(data)   # migrates older belief files
            entries = []
            name = partner_id or 'partner'
        if self.load(name) is not None:
            raise StoreError(f'partner {name!r} exists already in {self.path}')
        self.save(name, belief)
        for entry in entries:
            self.record_update(name, belief, entry)
        return name


def rebuild_belief(belief: CapabilityBelief, entries: list[LogEntry],
                   make: Callable[[CapabilityBelief], Any]) -> CapabilityBelief:
    """Replay a task log: ``make(fresh_belief)`` must return an estimator that continues
    that (empty) belief; every logged task is given to it in order."""
    fresh = CapabilityBelief(belief.method, list(belief.capability_names), belief.settings,
                             seed=belief.seed)
    estimator = make(fresh)
    for entry in entries:
        estimator.update(entry.task, entry.observed)
    return estimator.belief
