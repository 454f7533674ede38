"""Sweeps: a grid of experiments, executed run by run, on this machine or on a Ray cluster.

A sweep file (YAML) holds settings that every experiment shares (``fixed``) and grid
axes (``grid``); every combination of one value per axis is a *cell*, one experiment.
The unit of work is one run of one cell. A run is executed in a process of its own
choosing (a worker of a local process pool, or a Ray worker) on a planner made for that
run alone, and computes its own held-out metrics, so its rows are the ones
:func:`~cecm_ros.experiments.experiment.run_experiment` gives for that run, whatever ran
before it in the same process and wherever it ran. Each finished run is written to its
own file as soon as it arrives, so a sweep that stops can be started again and runs only
what is missing. At the end every cell gets the experiment's ``summary.json`` and
``runs.csv``, and the sweep one table (CSV and Markdown) and plots.

Format of a sweep file::

    name: lc-hc                  # optional: the table's title
    description: ...             # optional
    fixed:                       # settings every cell shares
      domain: tidyup             # a registered domain or a domain file
      runs: 20
      samples: 500
    grid:                        # one value per axis makes a cell
      partner: [low_capability, high_capability]        # a setting and its values
      variant:                                          # a named axis: labelled entries
        - {label: posterior_given, inference: posterior}
        - {label: sequential, inference: sequential}
    plot_by: variant             # the axis whose values share a plot (default: method)

The settings are those of ``cecm experiment`` (see SETTINGS); a named axis's entry
overrides ``fixed``. Relative paths (a domain file, TidyUP's ``household`` and
``capabilities_file``) are relative to the sweep file's folder.

Output folder: ``sweep.yaml`` (the sweep file as run), ``runs/<cell>/`` per cell
(``cell.json`` with the cell's settings, ``run-NNNN.json`` per finished run, then
``summary.json`` and ``runs.csv``), ``table.csv``, ``table.md`` and
``plots/<group>/*.png``. A cell's folder name is a readable slug and a hash of its
settings (all but the number of runs, which only adds or drops runs): a changed setting
is a new cell, never a reuse of runs made with other settings. The hash covers the
settings, not the code: after a change of code that changes results, use a new folder.
"""

from __future__ import annotations

import concurrent.futures
import csv
import hashlib
import importlib
import itertools
import json
import logging
import math
import multiprocessing
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from cecm_ros.core.domain import Domain
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.core.estimator_settings import SETTINGS as ESTIMATOR_SCHEMA
from cecm_ros.core.estimator_settings import settings_from_values
from cecm_ros.core.world_conditions import WORLD_SETTINGS
from cecm_ros.domains import planner_for
from cecm_ros.experiments.experiment import (
    METHODS,
    METRICS,
    PARTNER_SEARCHES,
    TASK_CHOICES,
    ExperimentSettings,
    TaskResult,
    add_heldout_metrics,
    baseline_for,
    heldout_pool,
    plot_summaries,
    run_once,
    summarise,
    write_outputs,
)
from cecm_ros.experiments.run_files import (
    failure_record,
    keep,
    open_folder,
    read_run,
    run_record,
    write_atomic,
)

SWEEP_FORMAT = 'cecm_ros/sweep/1'
TOP_LEVEL = ('name', 'description', 'fixed', 'grid', 'plot_by')
# The table's metrics (of the final task) come first in this order, then the others.
TABLE_METRICS = ('hamming', 'correction_ratio', 'iou', 'infeasible_assigned')
RAY_EXTRA_HINT = ("pip install 'cecm_ros[ray]' (or `make venv`, which installs ray into "
                  '.venv)')

# A domain loader: cecm_ros.domains.load_domain (the core imports no domain; the caller
# hands the loader in, and it reaches worker processes by reference).
DomainLoader = Callable[..., Domain]


@dataclass(frozen=True)
class _Kind:
    type: type
    # The values allowed, or a function that lists them when a file is read (a
    # registry that plug-ins may add to).
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    nullable: bool = False
    minimum: float | None = None


# Every setting a sweep file may give, by where it goes.
DOMAIN_SETTINGS = {
    'domain': _Kind(str),
    'household': _Kind(str, nullable=True),            # TidyUP: a household file
    'capabilities_file': _Kind(str, nullable=True),    # TidyUP: a capability catalogue
}
EXPERIMENT_SETTINGS = {
    'partner': _Kind(str),
    'method': _Kind(str, METHODS),
    'task_choice': _Kind(str, TASK_CHOICES),
    'runs': _Kind(int, minimum=1),
    'tasks': _Kind(int, minimum=1),
    'seed': _Kind(int),
    'switch_partner': _Kind(str, nullable=True),
    'switch_after': _Kind(int, nullable=True, minimum=0),
    'forgo_probability': _Kind(float),
    'partner_search': _Kind(str, PARTNER_SEARCHES),
    'partner_behaviour': _Kind(str, nullable=True),   # PartnerBehaviour text
    'candidates': _Kind(int, minimum=1),
    'heldout': _Kind(int, minimum=0),
    'set_diversity': _Kind(float, nullable=True),     # CE-CM-Div's delta; null: 0.35
    **{name: _Kind(float) for name in WORLD_SETTINGS},   # core/world_conditions.py
}
# The estimator's, as its schema declares them (core/estimator_settings.py); null leaves
# one open (the domain's, the preset's), and switches off one that can be (window).
ESTIMATOR_SETTINGS = {
    name: _Kind(spec.type, spec.choices, nullable=spec.default is None or bool(spec.open))
    for name, spec in ESTIMATOR_SCHEMA.items()}
SETTINGS = {**DOMAIN_SETTINGS, **EXPERIMENT_SETTINGS, **ESTIMATOR_SETTINGS}
_NOT_SETTINGS = {'jobs': 'each run uses one core; `cecm sweep --jobs` sets how many run '
                         'at once'}


# ------------------------------------------------------------------------ the sweep file
@dataclass(frozen=True)
class Cell:
    """One experiment of the grid."""

    cell_id: str                             # slug and hash: its folder under runs/
    axes: tuple[tuple[str, str], ...]        # (axis, the value's label) in grid order
    domain: str                              # as the sweep file names it
    domain_spec: str                         # what the loader is given (paths resolved)
    domain_options: tuple[tuple[str, str], ...]   # loader options (paths resolved)
    settings: ExperimentSettings             # jobs=1: one run, one core
    identity: dict[str, Any]                 # what the hash in cell_id covers

    @property
    def runs(self) -> int:
        return self.settings.runs

    def label(self) -> str:
        return ', '.join(f'{axis}={value}' for axis, value in self.axes) or 'the only cell'


@dataclass
class Sweep:
    path: Path
    text: str
    name: str
    description: str
    axes: list[str]
    plot_by: str | None
    cells: list[Cell]
    models: dict[tuple, Domain]              # the driver's copy of each domain

    def model(self, cell: Cell) -> Domain:
        return self.models[(cell.domain_spec, cell.domain_options)]


def _fail(path: Path, where: str, message: str) -> ConfigError:
    return ConfigError(f'{path}: {where}: {message}')


def _check_value(path: Path, where: str, key: str, value: Any) -> Any:
    """A setting's value in its type (an int where a float is asked for becomes one)."""
    kind = SETTINGS[key]
    if value is None:
        if kind.nullable:
            return None
        raise _fail(path, where, f'{key} needs a value')
    if kind.type is float:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise _fail(path, where, f'{key} must be a number, got {value!r}')
        value = float(value)
    elif kind.type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(path, where, f'{key} must be an integer, got {value!r}')
    elif not isinstance(value, str) or not value.strip():
        raise _fail(path, where, f'{key} must be a non-empty string, got {value!r}')
    choices = kind.choices() if callable(kind.choices) else kind.choices
    if choices is not None and value not in choices:
        raise _fail(path, where, f'{key} must be one of {", ".join(choices)}, got '
                                 f'{value!r}')
    if kind.minimum is not None and value < kind.minimum:
        raise _fail(path, where, f'{key} must be at least {kind.minimum:g}, got {value!r}')
    return value


def _check_key(path: Path, where: str, key: Any) -> str:
    if not isinstance(key, str):
        raise _fail(path, where, f'a setting name must be a string, got {key!r}')
    if key in _NOT_SETTINGS:
        raise _fail(path, where, f'{key} is not a sweep setting ({_NOT_SETTINGS[key]})')
    if key not in SETTINGS:
        raise _fail(path, where, f'unknown setting {key!r}; settings: '
                                 f'{", ".join(SETTINGS)}')
    return key


def _settings_block(path: Path, where: str, block: Any, allow_label: bool = False
                    ) -> tuple[str | None, dict[str, Any]]:
    if not isinstance(block, dict):
        raise _fail(path, where, f'expected a mapping of settings, got {block!r}')
    label = None
    values = {}
    for key, value in block.items():
        if allow_label and key == 'label':
            if not isinstance(value, str | int | float) or isinstance(value, bool) \
                    or not str(value).strip():
                raise _fail(path, where, f'label must be a non-empty string, got {value!r}')
            label = str(value)
            continue
        name = _check_key(path, where, key)
        values[name] = _check_value(path, f'{where}.{key}', name, value)
    return label, values


@dataclass
class _Axis:
    name: str
    # Per value: its label in the table and the settings it sets.
    values: list[tuple[str, dict[str, Any]]]


def _axis(path: Path, name: Any, entries: Any) -> _Axis:
    where = f'grid.{name}'
    if not isinstance(name, str) or not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
        raise _fail(path, 'grid', f'an axis name must be an identifier, got {name!r}')
    if not isinstance(entries, list) or not entries:
        raise _fail(path, where, f'expected a non-empty list of values, got {entries!r}')
    values: list[tuple[str, dict[str, Any]]] = []
    if all(isinstance(entry, dict) for entry in entries):
        if name in SETTINGS:
            raise _fail(path, where, f'{name} is a setting: list its values, or give the '
                                     'named axis another name')
        for index, entry in enumerate(entries):
            label, settings = _settings_block(path, f'{where}[{index}]', entry, True)
            if label is None:
                raise _fail(path, f'{where}[{index}]', 'an entry of a named axis needs a '
                                                       'label')
            if not settings:
                raise _fail(path, f'{where}[{index}]', 'an entry sets no setting')
            values.append((label, settings))
    elif any(isinstance(entry, dict) for entry in entries):
        raise _fail(path, where, 'mixes settings mappings and plain values')
    else:
        _check_key(path, 'grid', name)
        for index, entry in enumerate(entries):
            value = _check_value(path, f'{where}[{index}]', name, entry)
            values.append(('null' if value is None else str(value), {name: value}))
    labels = [label for label, _ in values]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise _fail(path, where, f'repeated values {repeated}')
    return _Axis(name, values)


def _is_path(spec: str) -> bool:
    return '/' in spec or spec.endswith(('.yaml', '.yml'))


def _resolve_file(path: Path, where: str, value: str) -> str:
    resolved = Path(value).expanduser()
    if not resolved.is_absolute():
        resolved = path.parent / resolved
    if not resolved.is_file():
        raise _fail(path, where, f'no such file {value!r} (relative paths are relative to '
                                 f"the sweep file's folder: {resolved})")
    return str(resolved.resolve())


def _file_digest(file: str) -> str:
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]


def _slug(text: str, limit: int = 72) -> str:
    slug = re.sub(r'[^A-Za-z0-9_.-]+', '_', text).strip('_.-') or 'x'
    return slug[:limit].rstrip('_.-')


def load_sweep(file: str | Path, loader: DomainLoader) -> Sweep:
    """Read and check a sweep file: every key, value, partner, method and domain of every
    cell. Errors are ConfigErrors that name the file and the entry."""
    path = Path(file)
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f'cannot read the sweep file {path}: {error.strerror or error}') \
            from error
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f'{path}: not valid YAML: {error}') from error
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: a sweep file is a mapping with the keys '
                          f'{", ".join(TOP_LEVEL)}')
    unknown = [key for key in data if key not in TOP_LEVEL]
    if unknown:
        raise ConfigError(f'{path}: unknown key {unknown[0]!r}; a sweep file has the keys '
                          f'{", ".join(TOP_LEVEL)}')
    for key in ('name', 'description'):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise _fail(path, key, f'expected a string, got {data[key]!r}')
    _, fixed = _settings_block(path, 'fixed', data.get('fixed') or {})
    grid = data.get('grid') or {}
    if not isinstance(grid, dict):
        raise _fail(path, 'grid', f'expected a mapping of axes, got {grid!r}')
    axes = [_axis(path, name, entries) for name, entries in grid.items()]
    # Who sets what: an axis's settings may override `fixed`, but no two axes set one.
    setter: dict[str, str] = {}
    for axis in axes:
        for key in sorted({k for _, settings in axis.values for k in settings}):
            if key in setter:
                raise _fail(path, f'grid.{axis.name}', f'{key} is set by axis '
                                                       f'{setter[key]} too')
            if key in fixed and axis.name == key:
                raise _fail(path, f'grid.{axis.name}', f'{key} is in fixed as well')
            setter[key] = axis.name
    plot_by = data.get('plot_by')
    names = [axis.name for axis in axes]
    if plot_by is not None and plot_by not in names:
        raise _fail(path, 'plot_by', f'{plot_by!r} is not a grid axis (axes: '
                                     f'{", ".join(names) or "none"})')
    if plot_by is None and 'method' in names:
        plot_by = 'method'

    models: dict[tuple, Domain] = {}
    cells: list[Cell] = []
    by_hash: dict[str, Cell] = {}
    for combination in itertools.product(*(axis.values for axis in axes)):
        values = dict(fixed)
        for _, settings in combination:
            values.update(settings)
        labels = tuple((axis.name, label) for axis, (label, _) in zip(axes, combination))
        where = 'cell ' + (', '.join(f'{a}={v}' for a, v in labels) or '(the only one)')
        cell = _make_cell(path, where, values, labels, loader, models)
        digest = cell.cell_id.rsplit('-', 1)[-1]
        if digest in by_hash:
            twin = by_hash[digest]
            aside = ' (a number of runs is not another experiment: its runs are the first '\
                'ones of the larger)' if twin.runs != cell.runs else ''
            raise _fail(path, where, f'has the same settings as cell {twin.label()}{aside}')
        by_hash[digest] = cell
        cells.append(cell)
    return Sweep(path=path, text=text, name=str(data.get('name') or path.stem),
                 description=str(data.get('description') or ''), axes=names,
                 plot_by=plot_by, cells=cells, models=models)


def _make_cell(path: Path, where: str, values: dict[str, Any],
               labels: tuple[tuple[str, str], ...], loader: DomainLoader,
               models: dict[tuple, Domain]) -> Cell:
    domain = values.get('domain', 'tidyup')
    spec = _resolve_file(path, f'{where}: domain', domain) if _is_path(domain) else domain
    options: dict[str, str] = {}
    digests: dict[str, str] = {}
    if _is_path(domain):
        digests['domain'] = _file_digest(spec)
    for key, option in (('household', 'household'), ('capabilities_file', 'capabilities')):
        if values.get(key) is not None:
            options[option] = _resolve_file(path, f'{where}: {key}', values[key])
            digests[key] = _file_digest(options[option])
    option_key = tuple(sorted(options.items()))
    model = models.get((spec, option_key))
    if model is None:
        try:
            model = loader(spec, **options)
        except CecmError as error:
            raise _fail(path, f'{where}: domain {domain!r}', str(error)) from error
        models[(spec, option_key)] = model
    experiment = {k: v for k, v in values.items() if k in EXPERIMENT_SETTINGS}
    experiment.setdefault('partner', model.default_partner())
    for key in ('partner', 'switch_partner'):
        if experiment.get(key) is not None:
            try:
                model.catalog.resolve(experiment[key])
            except CecmError as error:
                raise _fail(path, f'{where}: {key}', str(error)) from error
    estimator = {k: v for k, v in values.items() if k in ESTIMATOR_SETTINGS}
    for name in estimator:
        off = ESTIMATOR_SCHEMA[name].off
        if estimator[name] is None and off is not None:
            estimator[name] = off     # null: off (window: no forgetting, as 0 is)
    try:
        # As `cecm experiment` makes them: the domain's epsilon where none is given.
        estimator_settings = settings_from_values(estimator, model.default_epsilon)
        settings = ExperimentSettings(jobs=1, estimator=estimator_settings, **experiment)
    except CecmError as error:
        raise _fail(path, where, str(error)) from error
    described = settings.identity()   # cells from before later settings keep their ids
    identity = {'format': SWEEP_FORMAT, 'domain': domain, 'files': digests,
                'settings': described}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    slug = _slug('-'.join(label for _, label in labels) or 'cell')
    return Cell(cell_id=f'{slug}-{digest}', axes=labels, domain=domain, domain_spec=spec,
                domain_options=option_key, settings=settings, identity=identity)


# ---------------------------------------------------------------------- one run, anywhere
@dataclass(frozen=True)
class RunWork:
    """What a worker needs to execute one run of one cell (picklable)."""

    cell_id: str
    run: int
    domain_spec: str
    domain_options: tuple[tuple[str, str], ...]
    settings: dict[str, Any]                 # asdict(ExperimentSettings)
    plan_cache: bool | str
    loader: DomainLoader


# A worker process keeps the domains it loaded (never a planner: each run makes its own).
_WORKER_DOMAINS: dict[tuple, Domain] = {}


def settings_from_dict(values: dict[str, Any]) -> ExperimentSettings:
    values = dict(values)
    estimator = EstimatorSettings.from_dict(values.pop('estimator'))
    return ExperimentSettings(estimator=estimator, **values)


def execute_run(work: RunWork) -> dict[str, Any]:
    """One run of one cell on a planner of its own (workers=1), with its own held-out
    metrics: the rows of this run that ``run_experiment`` gives, wherever it runs."""
    key = (getattr(work.loader, '__module__', ''), getattr(work.loader, '__qualname__', ''),
           work.domain_spec, work.domain_options)
    model = _WORKER_DOMAINS.get(key)
    if model is None:
        model = _WORKER_DOMAINS[key] = work.loader(work.domain_spec,
                                                   **dict(work.domain_options))
    settings = settings_from_dict(work.settings)
    started = time.perf_counter()
    planner = planner_for(model, workers=1, plan_cache=work.plan_cache)
    baseline = baseline_for(model, settings.method)
    try:
        rows = run_once(model, planner, settings, work.run, None, baseline)
        identifiable: dict[str, list[str]] = {}
        if settings.heldout:
            pool = heldout_pool(model, planner, settings)
            identifiable = add_heldout_metrics(model, pool, rows)
    finally:
        planner.close()
        if baseline is not None:
            baseline.close()
    return run_record(work.cell_id, work.run, rows, identifiable,
                      time.perf_counter() - started,
                      planner_calls=getattr(planner, 'calls', 0),
                      planner_cache_hits=getattr(planner, 'cache_hits', 0),
                      plan_store_hits=getattr(planner, 'store_hits', 0))


def guarded_run(work: RunWork) -> dict[str, Any]:
    """:func:`execute_run`, with a failure returned as a value (its message and trace)."""
    try:
        return execute_run(work)
    except Exception as error:   # noqa: BLE001 - reported per run; the others go on
        return failure_record(work.cell_id, work.run, error)


def _ignore_interrupts() -> None:
    """In a pool's worker: Ctrl-C is the driver's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ----------------------------------------------------------------------------- backends
ResultHandler = Callable[[dict[str, Any]], None]


def run_local(works: Sequence[RunWork], jobs: int, on_result: ResultHandler) -> None:
    """Every run in a pool of ``jobs`` fresh processes ('spawn': nothing inherited)."""
    context = multiprocessing.get_context('spawn')
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=max(1, min(jobs, len(works))), mp_context=context,
        initializer=_ignore_interrupts)
    futures = {executor.submit(guarded_run, work): work for work in works}
    previous = None
    if threading.current_thread() is threading.main_thread():
        # A kill (SIGTERM) stops the workers as Ctrl-C does, instead of leaving them to
        # finish runs nobody will write.
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        for future in concurrent.futures.as_completed(futures):
            work = futures[future]
            try:
                outcome = future.result()
            except Exception as error:   # noqa: BLE001 - a worker process died
                outcome = {'cell': work.cell_id, 'run': work.run,
                           'error': f'the worker process failed: {type(error).__name__}: '
                                    f'{error}'}
            on_result(outcome)
    except BaseException:
        # Stop the runs under way now (their results would be lost anyway); the pool
        # then fails the runs not begun (cancelling them as well races with that).
        for process in list((getattr(executor, '_processes', None) or {}).values()):
            process.terminate()
        executor.shutdown(wait=False)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    executor.shutdown(wait=True)


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f'signal {signum}')


def ray_environment() -> dict[str, str]:
    """What a Ray worker needs to import this package and share the plan store: the
    package root on PYTHONPATH, and CECM_CACHE_DIR when set."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
                      if p and p != root]
    env = {'PYTHONPATH': os.pathsep.join(paths)}
    if os.environ.get('CECM_CACHE_DIR'):
        env['CECM_CACHE_DIR'] = os.environ['CECM_CACHE_DIR']
    return env


def run_ray(works: Sequence[RunWork], address: str, on_result: ResultHandler) -> None:
    """One Ray task per run (one CPU each) on the cluster at ``address``; results are
    handed to ``on_result`` in the order they finish."""
    try:
        ray: Any = importlib.import_module('ray')
    except ImportError as error:
        raise CecmError(f'a sweep on a Ray cluster (--address, RAY_ADDRESS) needs ray, which '
                        f'is not installed here ({error}): {RAY_EXTRA_HINT}') from error
    try:
        ray.init(address=address, runtime_env={'env_vars': ray_environment()},
                 logging_level=logging.WARNING, log_to_driver=False)
    except Exception as error:   # noqa: BLE001 - any failure to connect is the user's to fix
        raise CecmError(f'cannot connect to the Ray cluster at {address}: '
                        f'{type(error).__name__}: {error}') from error
    try:
        remote = ray.remote(num_cpus=1)(guarded_run)
        pending = {remote.remote(work): work for work in works}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    work = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except Exception as error:   # noqa: BLE001 - the worker or node died
                        outcome = {'cell': work.cell_id, 'run': work.run,
                                   'error': f'the Ray task failed: {type(error).__name__}: '
                                            f'{error}'}
                    on_result(outcome)
        except BaseException:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:   # noqa: BLE001, S110 - best effort while stopping
                    pass
            raise
    finally:
        ray.shutdown()


# ----------------------------------------------------------------------------- progress
def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f'{seconds}s'
    if seconds < 3600:
        return f'{seconds // 60}m{seconds % 60:02d}s'
    return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'


class Progress:
    """Cells and runs done, elapsed time and an estimate of the time left: one line
    redrawn in place on a terminal, a line per finished run otherwise."""

    def __init__(self, stream: IO[str] | None, cells: Sequence[Cell],
                 done: dict[str, set[int]]):
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, 'isatty', lambda: False)())
        self.total = {cell.cell_id: cell.runs for cell in cells}
        self.done = {cell_id: len(runs) for cell_id, runs in done.items()}
        self.before = sum(self.done.values())
        self.failed = 0
        self.started = time.monotonic()
        self.width = 0

    def status(self) -> str:
        runs = sum(self.done.values())
        total = sum(self.total.values())
        cells = sum(1 for cell_id, n in self.total.items() if self.done[cell_id] >= n)
        elapsed = time.monotonic() - self.started
        now = runs - self.before
        left = total - runs - self.failed
        if now and left > 0:
            eta = f'~{_duration(elapsed / now * left)} left'
        else:
            eta = 'estimating' if left > 0 else 'done'
        failed = f', {self.failed} failed' if self.failed else ''
        return (f'cells {cells}/{len(self.total)}, runs {runs}/{total}{failed}, '
                f'elapsed {_duration(elapsed)}, {eta}')

    def finished(self, cell: Cell, run: int, wall: float | None, error: str = '') -> None:
        if error:
            self.failed += 1
        else:
            self.done[cell.cell_id] += 1
        if self.stream is None:
            return
        if self.tty:
            runs = sum(self.done.values())
            total = max(1, sum(self.total.values()))
            filled = int(24 * runs / total)
            line = f'[cecm sweep] [{"#" * filled}{"." * (24 - filled)}] {self.status()}'
            if error:
                self._clear()
                print(f'[cecm sweep] run {run} of {cell.cell_id} failed: {error}',
                      file=self.stream)
            self.stream.write('\r' + line.ljust(self.width))
            self.width = len(line)
            self.stream.flush()
        else:
            what = f'failed: {error}' if error else f'done in {wall:.1f} s'
            print(f'[cecm sweep] run {run} of {cell.cell_id} {what}; {self.status()}',
                  file=self.stream, flush=True)

    def _clear(self) -> None:
        if self.stream is not None and self.width:
            self.stream.write('\r' + ' ' * self.width + '\r')
            self.width = 0

    def close(self) -> None:
        if self.tty and self.stream is not None and self.width:
            self.stream.write('\n')
            self.stream.flush()
            self.width = 0

    def say(self, text: str) -> None:
        if self.stream is not None:
            self._clear()
            print(f'[cecm sweep] {text}', file=self.stream, flush=True)


# --------------------------------------------------------------------------- the driver
@dataclass
class SweepOutcome:
    cells: int
    runs: int
    skipped: int                 # finished before this invocation
    executed: int
    failed: list[str]            # one message per failed run
    table_csv: Path
    table_md: Path
    plots: list[Path]
    incomplete: list[str]        # cells left without a summary (runs failed)


def cell_folder(out_dir: Path, cell: Cell) -> Path:
    return out_dir / 'runs' / cell.cell_id


def _read_run(out_dir: Path, cell: Cell, run: int) -> dict[str, Any] | None:
    """A finished run's file, or None (missing, or not a complete run of this cell)."""
    return read_run(cell_folder(out_dir, cell), cell.cell_id, run, cell.settings.tasks)


def run_sweep(sweep: Sweep, out_dir: str | Path, loader: DomainLoader, jobs: int = 1,
              address: str | None = None, plan_cache: bool | str = True,
              stream: IO[str] | None = sys.stderr) -> SweepOutcome:
    """Run every run of every cell not finished in ``out_dir`` yet (locally in ``jobs``
    processes, or on the Ray cluster at ``address``), then write the summaries, the
    table and the plots of what is there."""
    out = Path(out_dir)
    (out / 'runs').mkdir(parents=True, exist_ok=True)
    write_atomic(out / 'sweep.yaml', sweep.text)
    done: dict[str, set[int]] = {}
    works: list[RunWork] = []
    for cell in sweep.cells:
        folder = cell_folder(out, cell)
        open_folder(folder)
        write_atomic(folder / 'cell.json', json.dumps(
            {'cell': cell.cell_id, 'axes': dict(cell.axes), 'domain_spec': cell.domain_spec,
             'domain_options': dict(cell.domain_options), 'runs': cell.runs,
             **cell.identity}, indent=1))
        done[cell.cell_id] = set()
        for run in range(cell.runs):
            if _read_run(out, cell, run) is not None:
                done[cell.cell_id].add(run)
                continue
            works.append(RunWork(cell.cell_id, run, cell.domain_spec, cell.domain_options,
                                 asdict(cell.settings), plan_cache, loader))
    cells = {cell.cell_id: cell for cell in sweep.cells}
    progress = Progress(stream, sweep.cells, done)
    skipped = progress.before
    total = sum(cell.runs for cell in sweep.cells)
    known = set(cells)
    strays = sorted(p.name for p in (out / 'runs').iterdir() if p.is_dir() and p.name not in known)
    where = f'the Ray cluster at {address}' if address else \
        f'{max(1, min(jobs, len(works) or 1))} local processes'
    progress.say(f'{len(sweep.cells)} cells, {total} runs: {skipped} finished before '
                 f'(skipped), {len(works)} to run on {where}')
    if strays:
        progress.say(f'{len(strays)} folders under {out / "runs"} belong to no cell of this '
                     'sweep (other settings); left as they are')
    failures: list[str] = []

    def arrived(outcome: dict[str, Any]) -> None:
        cell = cells[outcome['cell']]
        run = outcome['run']
        keep(cell_folder(out, cell), outcome)
        if 'error' in outcome:
            failures.append(f'run {run} of {cell.cell_id}: {outcome["error"]}')
            progress.finished(cell, run, None, outcome['error'])
            return
        done[cell.cell_id].add(run)
        progress.finished(cell, run, outcome['wall_time_s'])

    try:
        if works:
            if address:
                run_ray(works, address, arrived)
            else:
                run_local(works, jobs, arrived)
    except KeyboardInterrupt:
        progress.close()
        progress.say(f'interrupted: {sum(map(len, done.values()))} of {total} runs are '
                     f'written; the same command continues with the rest')
        raise
    progress.close()
    outcome = finish_sweep(sweep, out, done)
    outcome.skipped, outcome.executed, outcome.failed = skipped, len(works) - len(failures), \
        failures
    return outcome


def finish_sweep(sweep: Sweep, out: Path, done: dict[str, set[int]]) -> SweepOutcome:
    """Per complete cell summary.json and runs.csv; the table and the plots."""
    summaries: dict[str, dict] = {}
    incomplete = []
    for cell in sweep.cells:
        if len(done[cell.cell_id]) < cell.runs:
            incomplete.append(cell.cell_id)
            continue
        summaries[cell.cell_id] = _summarise_cell(sweep, cell, out)
    table_csv, table_md = write_table(sweep, summaries, out)
    plots = write_plots(sweep, summaries, out)
    return SweepOutcome(cells=len(sweep.cells), runs=sum(c.runs for c in sweep.cells),
                        skipped=0, executed=0, failed=[], table_csv=table_csv,
                        table_md=table_md, plots=plots, incomplete=incomplete)


def _summarise_cell(sweep: Sweep, cell: Cell, out: Path) -> dict:
    model = sweep.model(cell)
    runs = []
    for run in range(cell.runs):
        data = _read_run(out, cell, run)
        assert data is not None
        runs.append(data)
    results = [TaskResult(**row) for data in runs for row in data['rows']]
    identifiable: dict[str, list[str]] = {}
    for data in runs:
        identifiable.update(data['identifiable_capabilities'])
    extra: dict[str, Any] = {
        'planner_calls': sum(d['planner_calls'] for d in runs),
        'planner_cache_hits': sum(d['planner_cache_hits'] for d in runs),
        'plan_store_hits': sum(d.get('plan_store_hits', 0) for d in runs),
        'estimator_variant': cell.settings.estimator.variant,
        'sweep': {'name': sweep.name, 'cell': cell.cell_id, 'axes': dict(cell.axes),
                  'domain': cell.domain, 'wall_time_s': "the runs' wall times added up"},
    }
    if cell.settings.heldout:
        extra['identifiable_capabilities'] = dict(sorted(identifiable.items()))
        extra['heldout_seed'] = cell.settings.heldout_seed
    wall = sum(d['wall_time_s'] for d in runs)
    summary = summarise(cell.settings, results, wall, model, extra)
    write_outputs(out / 'runs' / cell.cell_id, summary, results)
    return summary


def _final(summary: dict) -> dict:
    return summary['per_task'][-1]


def _metric_names(summaries: Iterable[dict]) -> list[str]:
    present = {name for s in summaries for name in METRICS if name in _final(s)}
    return [m for m in TABLE_METRICS if m in present] + \
        [m for m in METRICS if m in present and m not in TABLE_METRICS]


def write_table(sweep: Sweep, summaries: dict[str, dict], out: Path) -> tuple[Path, Path]:
    """table.csv and table.md: a row per cell (grid axes, then the final task's mean and
    95% interval of every metric); cells without all their runs are left out."""
    names = _metric_names(summaries.values())
    rows = [(cell, summaries[cell.cell_id]) for cell in sweep.cells
            if cell.cell_id in summaries]
    header = [*sweep.axes, 'runs', 'task']
    for name in names:
        header += [name, f'{name}_ci95_low', f'{name}_ci95_high']
    header.append('cell')
    csv_path = out / 'table.csv'
    temporary = csv_path.with_name('.table.csv.tmp')
    with open(temporary, 'w', newline='') as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for cell, summary in rows:
            final = _final(summary)
            line: list[Any] = [value for _, value in cell.axes] + [final['runs'],
                                                                   final['task']]
            for name in names:
                entry = final.get(name)
                line += [f'{entry[k]:.6f}' for k in ('mean', 'ci95_low', 'ci95_high')] \
                    if entry else ['', '', '']
            line.append(cell.cell_id)
            writer.writerow(line)
    os.replace(temporary, csv_path)

    lines = [f'# {sweep.name}', '']
    if sweep.description:
        lines += [sweep.description.strip(), '']
    lines += ['At the final task: mean over runs [95% confidence interval, Student t]. '
              f'Sweep file: `{sweep.path.name}` (a copy: `sweep.yaml`).', '']
    columns = [*sweep.axes, 'runs', 'task', *names]
    lines.append('| ' + ' | '.join(columns) + ' |')
    lines.append('|' + '---|' * len(columns))
    for cell, summary in rows:
        final = _final(summary)
        values = [value for _, value in cell.axes] + [str(final['runs']), str(final['task'])]
        for name in names:
            entry = final.get(name)
            values.append(f'{entry["mean"]:.3f} [{entry["ci95_low"]:.3f}, '
                          f'{entry["ci95_high"]:.3f}]' if entry else '-')
        lines.append('| ' + ' | '.join(values) + ' |')
    missing = [cell.cell_id for cell in sweep.cells if cell.cell_id not in summaries]
    if missing:
        lines += ['', f'Not in the table (runs missing): {", ".join(missing)}']
    md_path = out / 'table.md'
    write_atomic(md_path, '\n'.join(lines) + '\n')
    return csv_path, md_path


def write_plots(sweep: Sweep, summaries: dict[str, dict], out: Path) -> list[Path]:
    """Per group of cells that differ only in the ``plot_by`` axis, one PNG per metric
    with a line per value of that axis (plots/<the other axes' values>/)."""
    groups: dict[tuple, dict[str, dict]] = {}
    titles: dict[tuple, str] = {}
    for cell in sweep.cells:
        if cell.cell_id not in summaries:
            continue
        others = tuple((a, v) for a, v in cell.axes if a != sweep.plot_by)
        line = dict(cell.axes).get(sweep.plot_by or '', cell.settings.method)
        if sweep.plot_by is None:
            others = cell.axes
        groups.setdefault(others, {})[line] = summaries[cell.cell_id]
        titles[others] = ', '.join(v for _, v in others) or sweep.name
    written: list[Path] = []
    for others, members in groups.items():
        folder = out / 'plots' / _slug('-'.join(v for _, v in others) or 'all')
        folder.mkdir(parents=True, exist_ok=True)
        runs = sorted({s['settings']['runs'] for s in members.values()})
        title = f'{titles[others]} ({"/".join(map(str, runs))} runs)'
        written += plot_summaries(members, folder, title)
    return written


def describe(sweep: Sweep, out_dir: str | Path | None = None) -> list[str]:
    """One line per cell: its folder, settings of the grid and runs finished in out_dir."""
    lines = []
    for cell in sweep.cells:
        finished = ''
        if out_dir is not None:
            count = sum(1 for run in range(cell.runs)
                        if _read_run(Path(out_dir), cell, run))
            finished = f', {count} finished'
        lines.append(f'{cell.cell_id}: {cell.label()} ({cell.runs} runs x '
                     f'{cell.settings.tasks} tasks{finished})')
    return lines
