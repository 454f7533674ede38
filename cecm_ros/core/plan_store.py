"""Plans kept on disk, so that no process plans again what another already planned.

A plan is stored under a key made of what determines it: the domain's content (a hash
of its files), the planner's settings and seed, the task and the capability vector.
Only planners whose guarantees say ``deterministic`` may use the store (the same key
must mean the same plan in any process). The store is one SQLite file (the standard
library's sqlite3; WAL, so several processes read and write at once), bounded in
entries: the least recently used go first. A file that is not a plan store of ours,
or is corrupt, is moved aside with a warning and a fresh store begins (it is never
trusted); a store that cannot be opened at all (a folder that cannot be written, a
directory in its place) raises :class:`PlanStoreUnavailableError`, and planners then
plan without one. Reads and writes that fail warn and plan instead; nothing crashes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .domain import Domain, JointPlan, JointStep

FORMAT = 'cecm_ros/plan_store/1'
# About 6 KB per Overcooked plan: some 1.2 GB at the bound.
DEFAULT_MAX_ENTRIES = 200_000


class PlanStoreUnavailableError(OSError):
    """The store cannot be opened (a folder that cannot be written, a directory where
    the file should be, a lock held for too long): planners then plan without it."""


class ForeignStoreError(sqlite3.DatabaseError):
    """An SQLite file that is not a plan store of this format."""


def _corrupt(error: sqlite3.Error) -> bool:
    text = str(error).lower()
    return 'not a database' in text or 'malformed' in text or 'corrupt' in text


def cache_directory() -> Path:
    """Where cecm_ros keeps what it computed: ``$CECM_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/cecm_ros``, else ``~/.cache/cecm_ros``."""
    override = os.environ.get('CECM_CACHE_DIR')
    if override:
        return Path(override).expanduser()
    base = os.environ.get('XDG_CACHE_HOME')
    return (Path(base).expanduser() if base else Path.home() / '.cache') / 'cecm_ros'


def default_store_path() -> Path:
    return cache_directory() / 'plans.sqlite'


def files_digest(paths: Iterable[str | Path], extra: Any = None) -> str:
    """A hash of the files' contents (and ``extra``): what a domain's plans depend on."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
        digest.update(b'\0')
    digest.update(repr(extra).encode())
    return digest.hexdigest()[:32]


class PlanStore:
    """A bounded SQLite table of plans; thread- and process-safe."""

    def __init__(self, path: str | Path | None = None,
                 max_entries: int = DEFAULT_MAX_ENTRIES):
        self.path = Path(path) if path else default_store_path()
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._local = threading.local()
        self._writes = 0
        if self.path.is_dir():
            raise PlanStoreUnavailableError(f'plan cache {self.path} is a directory')
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise PlanStoreUnavailableError(f'plan cache folder {self.path.parent}: {error}') \
                from None
        # One process at a time creates the store or sets a bad file aside; the others
        # wait for it (several nodes open the same store when a graph starts).
        lock_path = Path(str(self.path) + '.lock')
        try:
            with open(lock_path, 'a') as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    self._open_checked()
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        except OSError as error:
            raise PlanStoreUnavailableError(f'plan cache {self.path}: {error}') from None

    # --------------------------------------------------------------- opening
    def _connect(self, wal: bool = True) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        if wal:
            connection.execute('PRAGMA journal_mode=WAL')
            connection.execute('PRAGMA synchronous=NORMAL')
        return connection

    def _create(self) -> None:
        # Looked at before anything is written: a foreign SQLite file is left as it was.
        connection = self._connect(wal=False)
        try:
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables:
                row = connection.execute(
                    "SELECT value FROM meta WHERE key = 'format'").fetchone() \
                    if 'meta' in tables else None
                if row is None or row[0] != FORMAT:
                    raise ForeignStoreError(
                        f'format {row[0] if row else None!r}, not {FORMAT!r} (tables: '
                        f'{", ".join(sorted(tables))})')
            connection.execute('PRAGMA journal_mode=WAL')
            connection.execute('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, '
                               'value TEXT)')
            connection.execute('CREATE TABLE IF NOT EXISTS plans (key TEXT PRIMARY KEY, '
                               'value TEXT NOT NULL, used REAL NOT NULL)')
            connection.execute('CREATE INDEX IF NOT EXISTS plans_used ON plans (used)')
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT,))
            row = connection.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is None or row[0] != FORMAT:
                raise ForeignStoreError(f'format {row[0] if row else None!r}, not {FORMAT!r}')
        finally:
            connection.close()

    def _open_checked(self) -> None:
        """Open (or create) the store; a file that is not a store of ours is moved aside
        once, and a store that cannot be opened at all raises PlanStoreUnavailableError."""
        for attempt in range(2):
            try:
                self._create()
                return
            except (ForeignStoreError, sqlite3.DatabaseError) as error:
                if isinstance(error, sqlite3.OperationalError) and not _corrupt(error):
                    raise PlanStoreUnavailableError(f'plan cache {self.path}: {error}') from None
                if attempt or not self.path.is_file():
                    raise PlanStoreUnavailableError(f'plan cache {self.path}: {error}') from None
                aside = self.path.with_name(f'{self.path.name}.bad-{int(time.time())}')
                warnings.warn(f'plan cache {self.path} is not usable ({error}); moved aside '
                              f'to {aside}, starting a new one', RuntimeWarning,
                              stacklevel=4)
                for suffix in ('', '-wal', '-shm'):
                    source = Path(str(self.path) + suffix)
                    if source.exists():
                        os.replace(source, str(aside) + suffix)

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, 'connection', None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    # ------------------------------------------------------------ read/write
    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored values of those ``keys`` that are stored."""
        found: dict[str, str] = {}
        if not keys:
            return found
        try:
            connection = self._connection()
            for start in range(0, len(keys), 500):
                chunk = list(keys[start:start + 500])
                marks = ','.join('?' * len(chunk))
                for key, value in connection.execute(
                        f'SELECT key, value FROM plans WHERE key IN ({marks})', chunk):
                    found[key] = value
        except sqlite3.Error as error:
            warnings.warn(f'plan cache {self.path}: read failed ({error}); planning instead',
                          RuntimeWarning, stacklevel=2)
            return {}
        if found:
            # Which plans were used lately (for trimming): worth a try, not a failure.
            try:
                now = time.time()
                connection.execute('BEGIN IMMEDIATE')
                connection.executemany('UPDATE plans SET used = ? WHERE key = ?',
                                       [(now, k) for k in found])
                connection.execute('COMMIT')
            except sqlite3.Error:
                _rollback(connection)
        return found

    def put_many(self, items: dict[str, str]) -> None:
        if not items:
            return
        now = time.time()
        connection = self._connection()
        try:
            connection.execute('BEGIN IMMEDIATE')
            connection.executemany('INSERT OR REPLACE INTO plans VALUES (?, ?, ?)',
                                   [(k, v, now) for k, v in items.items()])
            connection.execute('COMMIT')
        except sqlite3.Error as error:
            _rollback(connection)   # never keep the write lock after a failure
            warnings.warn(f'plan cache {self.path}: write failed ({error})', RuntimeWarning,
                          stacklevel=2)
            return
        with self._lock:
            self._writes += len(items)
            trim = self._writes >= 1000
            if trim:
                self._writes = 0
        if trim:
            try:
                self.trim()
            except sqlite3.Error as error:
                warnings.warn(f'plan cache {self.path}: trimming failed ({error})',
                              RuntimeWarning, stacklevel=2)

    def trim(self) -> None:
        """Drop the least recently used plans beyond ``max_entries``."""
        connection = self._connection()
        count = connection.execute('SELECT COUNT(*) FROM plans').fetchone()[0]
        if count > self.max_entries:
            connection.execute('DELETE FROM plans WHERE key IN (SELECT key FROM plans '
                               'ORDER BY used LIMIT ?)', (count - self.max_entries,))

    def info(self) -> dict[str, Any]:
        connection = self._connection()
        count = connection.execute('SELECT COUNT(*) FROM plans').fetchone()[0]
        size = sum(Path(str(self.path) + s).stat().st_size for s in ('', '-wal')
                   if Path(str(self.path) + s).exists())
        return {'path': str(self.path), 'plans': count, 'bytes': size,
                'max_entries': self.max_entries}

    def clear(self) -> int:
        connection = self._connection()
        count = connection.execute('SELECT COUNT(*) FROM plans').fetchone()[0]
        connection.execute('DELETE FROM plans')
        connection.execute('VACUUM')
        return count

    def close(self) -> None:
        connection = getattr(self._local, 'connection', None)
        if connection is not None:
            connection.close()
            self._local.connection = None


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        try:
            connection.execute('ROLLBACK')
        except sqlite3.Error:
            pass


def read_only_info(path: str | Path) -> dict[str, Any]:
    """What ``cecm cache info`` shows, without creating or changing anything."""
    path = Path(path)
    try:
        connection = sqlite3.connect(f'file:{path}?mode=ro', uri=True, timeout=10.0)
        try:
            row = connection.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is None or row[0] != FORMAT:
                raise ForeignStoreError('not a plan store')
            count = connection.execute('SELECT COUNT(*) FROM plans').fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error as error:
        return {'path': str(path), 'error': str(error)}
    size = sum(Path(str(path) + s).stat().st_size for s in ('', '-wal')
               if Path(str(path) + s).exists())
    return {'path': str(path), 'plans': count, 'bytes': size}


# ------------------------------------------------------------- plan <-> text
def plan_to_text(domain: Domain, plan: JointPlan) -> str:
    return json.dumps({
        'steps': [[s.robot, s.human] for s in plan.steps], 'cost': plan.cost,
        'robot_cost': plan.robot_cost, 'human_cost': plan.human_cost,
        'trajectory': [domain.state_to_text(s) for s in plan.trajectory],
        'used': sorted(plan.human_capabilities_used),
        'planning_time_s': plan.planning_time_s, 'planner_cost': plan.planner_cost,
        'sequential': list(plan.sequential),
    }, separators=(',', ':'))


def plan_from_text(domain: Domain, task_id: str, text: str) -> JointPlan:
    data = json.loads(text)
    return JointPlan(task_id=task_id,
                     steps=tuple(JointStep(robot=r, human=h) for r, h in data['steps']),
                     cost=float(data['cost']), robot_cost=float(data['robot_cost']),
                     human_cost=float(data['human_cost']),
                     trajectory=tuple(domain.state_from_text(s) for s in data['trajectory']),
                     human_capabilities_used=frozenset(int(i) for i in data['used']),
                     planning_time_s=float(data['planning_time_s']),
                     planner_cost=int(data['planner_cost']),
                     sequential=tuple(str(a) for a in data.get('sequential', ())))


def plan_key(scope: str, task_key: tuple, vector_bits: str) -> str:
    """The store key of one plan: ``scope`` (domain content and planner settings), the
    task and the vector."""
    text = repr((scope, task_key, vector_bits)).encode()
    return hashlib.sha256(text).hexdigest()
