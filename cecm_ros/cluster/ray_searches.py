"""A planner's searches as Ray tasks on a cluster (the planner option ``ray_address``).

An update of the estimator asks for the plans of tens to hundreds of capability vectors of
one task at a time, and its time is planning (docs/performance.md). With ``ray_address``
the planner keeps its memory, its plan store and its sharing of searches under way in this
process and sends only the searches it would make itself to Ray: the vectors of one
``solve_all`` call dealt into chunks, one Ray task (one CPU) per chunk. A Ray worker
process builds the domain once (from the recipe the registry gives: the model's rebuild
arguments, its registry spec and options, or a pickled copy) and the planner once (the
registry's own factory, one search at a time, no plan store), and returns JointPlans.
Only deterministic planners search elsewhere, so the plans, and every belief made from
them, are the ones a search in this process gives.

Addresses:

* ``auto``: the cluster ``ray start`` left on this machine, or ``$RAY_ADDRESS``;
* ``HOST:PORT``: the head of a cluster (its GCS port), as ``cecm sweep --address``;
* ``ray://HOST:PORT``: a Ray Client server (needs ``ray[client]``);
* ``local:N``: a Ray head of N CPUs started in this process for it (tests, benchmarks).

One process talks to one cluster (``ray.init`` allows one): planners that search on the
same address share the connection, and the last one closed ends it (and stops a local
head). An address nothing answers at is refused within seconds (``ray.init`` itself
waits for minutes).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core.domain import Domain, JointPlan, Planner, Task
from cecm_ros.core.errors import CecmError, ConfigError, PlanningError
from cecm_ros.core.planning import CachingPlanner

RAY_HINT = "pip install ray (or pip install 'cecm_ros[ray]'; `make venv` installs it)"
ADDRESS_FORMS = "auto, HOST:PORT, ray://HOST:PORT or local:N ('' = search in this process)"
# A head with Ray's token authentication on asks every client for its token.
AUTH_HINT = ('if the head asks for a token (Ray token authentication), run with '
             'RAY_AUTH_MODE=token; the token is read from $RAY_AUTH_TOKEN, '
             '$RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token (`ray get-auth-token`)')
PROBE_TIMEOUT_S = 5.0          # a head that does not accept a connection by then is down
LOCAL_OBJECT_STORE_BYTES = 100_000_000   # a local head holds tasks and plans, nothing big
CHUNKS_PER_CPU = 2             # chunks per CPU of the cluster: long searches even out
WORKER_PLANNERS_KEPT = 4       # planners a worker process keeps (one per driver planner)
WARM_UP_TASKS = 64             # at most this many workers make their planner at connecting


class ClusterError(PlanningError):
    """The cluster did not make the searches: the connection was lost, a worker died or
    could not build the domain. A PlanningError, so an update fails as it would on any
    planner failure and leaves the belief as it was."""


# ---------------------------------------------------------------- what a worker builds
@dataclass(frozen=True)
class DomainRecipe:
    """How a worker builds the domain again: ``factory(*args, **kwargs)``; ``what`` says
    which way, for messages."""

    factory: Callable[..., Domain]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    what: str = ''


def as_given(domain: Domain) -> Domain:
    """The factory of a domain that travels pickled: the copy itself."""
    return domain


@dataclass(frozen=True)
class WorkerPlanner:
    """What a worker needs to make the planner: the domain's recipe, the registry's
    planner factory (sent by reference) with the role and options, and the name and
    capabilities the domain it builds must have."""

    recipe: DomainRecipe
    factory: Callable[..., Planner]
    role: str
    options: tuple[tuple[str, Any], ...]
    domain_name: str
    capabilities: tuple[str, ...]

    def make(self) -> CachingPlanner:
        recipe = self.recipe
        domain = recipe.factory(*recipe.args, **dict(recipe.kwargs))
        if domain.name != self.domain_name or tuple(domain.catalog.names) != self.capabilities:
            raise ClusterError(f'the worker built another domain ({recipe.what}): '
                               f'{domain.name!r} with {len(domain.catalog)} capabilities, not '
                               f'{self.domain_name!r} with {len(self.capabilities)}')
        planner = self.factory(domain, self.role, **dict(self.options))
        if not isinstance(planner, CachingPlanner):
            raise ClusterError(f'the worker made a {type(planner).__name__}, not a '
                               'CachingPlanner')
        return planner


# ------------------------------------------------------------ in a Ray worker process
# The planners this worker process made, by the digest of what made them (a process
# serves the chunks of every driver planner that sends it some), the latest last; and
# their twins of other seeds.
_WORKER_PLANNERS: OrderedDict[str, CachingPlanner] = OrderedDict()
_WORKER_TWINS: dict[tuple[str, int], CachingPlanner] = {}
_WORKER_LOCK = threading.Lock()


def search_chunk(key: str, boxed: list, seed: int | None, task: Task | None,
                 vectors: list[bytes]) -> tuple[str, Any, tuple[str, int]]:
    """One Ray task: the plans of a chunk of vectors of one task, searched by this worker
    process's planner. Returns ``('ok', plans, where)`` or ``('error', exception,
    where)``: a planning error reaches the driver as itself (an unsolvable vector, a
    timeout), anything else as a ClusterError with its text."""
    where = (socket.gethostname(), os.getpid())
    try:
        planner = _worker_planner(key, boxed, seed)
        if task is None:
            return 'ok', [], where      # a warm-up: the planner is made, nothing to search
        size = len(planner.domain.catalog)
        arrays = [np.frombuffer(v, dtype=bool, count=size).copy() for v in vectors]
        return 'ok', planner.solve_all(task, arrays), where
    except PlanningError as error:
        return 'error', error, where
    except Exception as error:  # noqa: BLE001 - the driver raises it, with its text
        return 'error', ClusterError(f'{type(error).__name__}: {error}'), where


def _worker_planner(key: str, boxed: list, seed: int | None) -> CachingPlanner:
    """The planner of ``key`` in this process, made on its first chunk (the spec comes
    out of the object store only then: ``boxed`` keeps Ray from fetching it for every
    task)."""
    with _WORKER_LOCK:
        planner = _WORKER_PLANNERS.get(key)
        if planner is None:
            spec = boxed[0]
            if not isinstance(spec, WorkerPlanner):
                ray = importlib.import_module('ray')
                spec = ray.get(spec)
            planner = spec.make()
            _WORKER_PLANNERS[key] = planner
            while len(_WORKER_PLANNERS) > WORKER_PLANNERS_KEPT:
                old_key, old = _WORKER_PLANNERS.popitem(last=False)
                for twin_key in [k for k in _WORKER_TWINS if k[0] == old_key]:
                    _WORKER_TWINS.pop(twin_key).close()
                old.close()
        else:
            _WORKER_PLANNERS.move_to_end(key)
        if seed is None:
            return planner
        twin = _WORKER_TWINS.get((key, seed))
        if twin is None:
            made = planner.with_seed(seed)
            if not isinstance(made, CachingPlanner):
                raise ClusterError(f'the planner made no twin of seed {seed} on the worker')
            twin = _WORKER_TWINS[(key, seed)] = made
        return twin


# ------------------------------------------------------------------ the connection
def import_ray(address: str) -> Any:
    """ray, or a ConfigError that says how to install it."""
    try:
        return importlib.import_module('ray')
    except ImportError as error:
        raise ConfigError(f'ray_address {address!r}: searching on a Ray cluster needs ray, '
                          f'which is not installed here ({error}): {RAY_HINT}') from error


def parse_address(text: str) -> tuple[str, Any]:
    """``('local', N)``, ``('auto', None)``, ``('client', (host, port))`` or ``('head',
    (host, port))``; a ConfigError naming the forms for anything else."""
    address = text.strip()
    if address == 'auto':
        return 'auto', None
    if address.startswith('local:'):
        count = address.partition(':')[2]
        if count.isdigit() and 1 <= int(count) <= 4096:
            return 'local', int(count)
        raise ConfigError(f'ray_address {text!r}: local:N needs a number of CPUs from 1 '
                          f'to 4096; addresses: {ADDRESS_FORMS}')
    kind, rest = ('client', address[len('ray://'):]) if address.startswith('ray://') \
        else ('head', address)
    host, _, port = rest.rpartition(':')
    host = host.strip('[]')
    if host and port.isdigit() and 0 < int(port) < 65536 and '/' not in host:
        return kind, (host, int(port))
    raise ConfigError(f'ray_address {text!r} is not an address; addresses: {ADDRESS_FORMS}')


def worker_environment() -> dict[str, str]:
    """What a Ray worker needs to import this package: its root on PYTHONPATH."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
                      if p and p != root]
    return {'PYTHONPATH': os.pathsep.join(paths)}


def _probe(address: str, host: str, port: int) -> None:
    """Refuse an address nothing answers at now (``ray.init`` would wait for minutes)."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as error:
        raise ConfigError(f'cannot connect to the Ray cluster at {address}: nothing answers '
                          f'at {host}:{port} ({error.strerror or error}); is its head '
                          'running (ray start --head)?') from error


def _auto_head(ray: Any) -> tuple[str, int] | None:
    """The head ``auto`` means (``$RAY_ADDRESS``, or the cluster ``ray start`` left on
    this machine), to probe; None when this version of ray cannot say."""
    try:
        services = importlib.import_module('ray._private.services')
        found = services.canonicalize_bootstrap_address_or_die('auto')
    except ConnectionError as error:
        raise ConfigError(f'ray_address auto: no Ray cluster found ({error})') from error
    except Exception:   # noqa: BLE001 - an internal helper of ray; ray.init says the rest
        return None
    host, _, port = str(found).rpartition(':')
    return (host, int(port)) if host and port.isdigit() else None


@dataclass
class _Connection:
    """This process's connection to one Ray cluster."""

    address: str
    ray: Any
    remote: Any            # search_chunk as a Ray remote function of one CPU
    cpus: int
    temp_dir: str | None   # a local head's files
    users: int = 0
    ended: bool = False


_CONNECTION: _Connection | None = None
_CONNECTION_LOCK = threading.Lock()


def _connect(address: str) -> _Connection:
    ray = import_ray(address)
    kind, value = parse_address(address)
    arguments: dict[str, Any] = {'runtime_env': {'env_vars': worker_environment()},
                                 'logging_level': logging.WARNING, 'log_to_driver': False}
    temp_dir = None
    if kind == 'local':
        # A head for this process alone (never $RAY_ADDRESS's), its socket paths short.
        temp_dir = tempfile.mkdtemp(prefix='cecm-ray-',
                                    dir='/tmp' if os.path.isdir('/tmp') else None)
        os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')   # a test head reports none
        arguments.update(address='local', num_cpus=value, include_dashboard=False,
                         object_store_memory=LOCAL_OBJECT_STORE_BYTES, _temp_dir=temp_dir)
    else:
        head = value if kind != 'auto' else _auto_head(ray)
        if head is not None:
            _probe(address, *head)
        arguments['address'] = address
    try:
        ray.init(**arguments)
        cpus = int(ray.cluster_resources().get('CPU', 0))
        if cpus < 1:
            raise ConfigError('the cluster has no CPUs')
    except Exception as error:  # noqa: BLE001 - any failure to connect is the caller's
        try:
            ray.shutdown()
        except Exception:   # noqa: BLE001, S110 - best effort after a failed start
            pass
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
        detail = str(error) if isinstance(error, CecmError) else \
            f'{type(error).__name__}: {error}'
        if kind != 'local' and not isinstance(error, CecmError) and \
                os.environ.get('RAY_AUTH_MODE', '').strip().lower() != 'token':
            detail += f' ({AUTH_HINT})'
        raise ConfigError(f'cannot connect to the Ray cluster at {address}: {detail}') \
            from error
    return _Connection(address, ray, ray.remote(num_cpus=1)(search_chunk), cpus, temp_dir)


def acquire(address: str) -> _Connection:
    """The connection to ``address``, made on first use and shared; a ConfigError when
    it cannot be made or this process is connected to another cluster."""
    global _CONNECTION
    with _CONNECTION_LOCK:
        current = _CONNECTION
        if current is not None and not current.ray.is_initialized():
            # Shut down under us (ray.shutdown elsewhere): connect afresh.
            _CONNECTION = None
            _end(current)
            current = None
        if current is not None:
            if current.address != address:
                raise ConfigError(f'ray_address {address!r}: this process searches on the '
                                  f'Ray cluster at {current.address} already (ray allows '
                                  'one cluster per process)')
            current.users += 1
            return current
        ray = import_ray(address)
        if ray.is_initialized():
            raise ConfigError(f'ray_address {address!r}: something else in this process '
                              'is connected to Ray already (ray allows one cluster per '
                              'process)')
        current = _CONNECTION = _connect(address)
        current.users = 1
        return current


def release(connection: _Connection) -> None:
    """One user fewer; the last one ends the connection (and stops a local head)."""
    global _CONNECTION
    with _CONNECTION_LOCK:
        connection.users -= 1
        if connection.users > 0:
            return
        if _CONNECTION is connection:
            _CONNECTION = None
            _end(connection)


def _end(connection: _Connection) -> None:
    """Shut the connection down, once (ray is one per process: a second shutdown of an
    ended connection would end its successor)."""
    if connection.ended:
        return
    connection.ended = True
    try:
        connection.ray.shutdown()
    except Exception:   # noqa: BLE001, S110 - best effort: the cluster may be gone already
        pass
    if connection.temp_dir is not None:
        shutil.rmtree(connection.temp_dir, ignore_errors=True)


def chunks_of(vectors: list[np.ndarray], count: int) -> list[list[int]]:
    """The indices of ``vectors`` dealt into at most ``count`` chunks: fewer capabilities
    (longer searches) first, dealt in turn, so each chunk gets its share of long ones."""
    order = sorted(range(len(vectors)), key=lambda i: int(np.count_nonzero(vectors[i])))
    count = max(1, min(count, len(vectors)))
    return [order[k::count] for k in range(count)]


# ------------------------------------------------------------------------ the offload
class RaySearches:
    """A :class:`~cecm_ros.core.planning.SearchOffload` to the Ray cluster at
    ``address``: connects at once (a ConfigError that names the address when it cannot),
    and again on the next search after :meth:`close` or a lost connection."""

    def __init__(self, address: str, worker: WorkerPlanner, seed: int | None = None,
                 owner: RaySearches | None = None):
        self.address = address.strip()
        self.worker = worker
        self.seed = seed
        # The one that holds the connection; twins of other seeds share it.
        self._owner = owner or self
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._spec: Any = None      # the WorkerPlanner in the object store
        self._key = ''
        self._warming: list = []    # the warm-up tasks sent at connecting
        self.chunks = 0             # Ray tasks answered
        self.searches = 0           # vectors searched there
        self.processes: set[tuple[str, int]] = set()   # (host, pid) that answered
        if owner is None:
            self._connected()

    def _connected(self) -> tuple[_Connection, Any, str]:
        owner = self._owner
        with owner._lock:
            connection = owner._connection
            if connection is not None and not connection.ray.is_initialized():
                owner._connection = None
                release(connection)
                raise ClusterError(f'the connection to the Ray cluster at {self.address} '
                                   'was closed (the next search connects again)')
            if connection is None:
                connection = acquire(owner.address)
                try:
                    ray = connection.ray
                    owner._key = hashlib.sha256(ray.cloudpickle.dumps(owner.worker)
                                                ).hexdigest()[:20]
                    owner._spec = ray.put(owner.worker)
                except Exception as error:  # noqa: BLE001 - e.g. a domain that won't pickle
                    release(connection)
                    raise ConfigError(f'the Ray cluster at {owner.address} cannot take the '
                                      f'planner ({owner.worker.recipe.what}): '
                                      f'{type(error).__name__}: {error}') from error
                owner._connection = connection
                owner._warming = [connection.remote.remote(owner._key, [owner._spec], None,
                                                           None, [])
                                  for _ in range(min(connection.cpus, WARM_UP_TASKS))]
            return connection, owner._spec, owner._key

    def warm_up(self) -> float:
        """Wait until the workers have made their planners (begun at connecting, so that
        the first update does not wait for Ray to start its workers); the seconds it
        took."""
        started = time.perf_counter()
        connection, _, _ = self._connected()
        warming, self._owner._warming = self._owner._warming, []
        try:
            connection.ray.get(warming)
        except Exception as error:  # noqa: BLE001 - Ray's own failures, in our words
            raise ClusterError(f'warming up the Ray cluster at {self.address} failed: '
                               f'{type(error).__name__}: {error}') from error
        return time.perf_counter() - started

    def solve_all(self, task: Task, vectors: list[np.ndarray]) -> list[JointPlan]:
        if not vectors:
            return []
        try:
            connection, spec, key = self._connected()
        except ConfigError as error:
            raise ClusterError(f'task {task.task_id}: {error}') from error
        ray = connection.ray
        chunks = chunks_of(vectors, connection.cpus * CHUNKS_PER_CPU)
        plans: list[JointPlan | None] = [None] * len(vectors)
        pending: dict[Any, list[int]] = {}
        failure: BaseException | None = None
        try:
            for chunk in chunks:
                ref = connection.remote.remote(key, [spec], self.seed, task,
                                               [vectors[i].tobytes() for i in chunk])
                pending[ref] = chunk
            while pending and failure is None:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    chunk = pending.pop(ref)
                    status, value, where = ray.get(ref)
                    with self._lock:
                        self.chunks += 1
                        self.searches += len(chunk)
                        self.processes.add(where)
                    if status != 'ok':
                        failure = value
                        break
                    for index, plan in zip(chunk, value, strict=True):
                        plans[index] = plan
        except Exception as error:  # noqa: BLE001 - Ray's own failures, in our words
            self._cancel(ray, pending)
            raise ClusterError(f'task {task.task_id}: the searches on the Ray cluster at '
                               f'{self.address} failed: {type(error).__name__}: {error}') \
                from error
        except BaseException:       # an interrupt: the chunks under way are not needed
            self._cancel(ray, pending)
            raise
        if failure is not None:
            # The first failure ends the call, as a failed search ends solve_all here.
            self._cancel(ray, pending)
            raise failure
        return plans  # type: ignore[return-value]

    @staticmethod
    def _cancel(ray: Any, pending: dict) -> None:
        for ref in pending:
            try:
                ray.cancel(ref)
            except Exception:   # noqa: BLE001, S110 - best effort while failing anyway
                pass

    def with_seed(self, seed: int) -> RaySearches:
        return RaySearches(self.address, self.worker, seed, owner=self._owner)

    def close(self) -> None:
        """Let go of the connection (a twin of another seed holds none)."""
        if self._owner is not self:
            return
        with self._lock:
            connection, self._connection = self._connection, None
            self._warming = []
        if connection is not None:
            release(connection)
