"""Finished runs kept on disk, a file each, written the moment a run finishes.

``cecm sweep`` (one folder per cell) and ``cecm experiment`` (one folder per set of
settings) keep their runs the same way, so that one stopped by a kill, a Ctrl-C or a
run that failed goes on, started again with the same command, with the runs not
finished yet and redoes none. A folder holds ``run-NNNN.json`` per finished run (its
result rows and held-out identifiability) and ``run-NNNN.error.txt`` per run that
failed (the error and its trace), which a later success of that run replaces.
"""

from __future__ import annotations

import json
import os
import socket
import traceback
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cecm_ros.core.errors import CecmError

RUN_FORMAT = 'cecm_ros/sweep_run/1'


def run_path(folder: Path, run: int) -> Path:
    return folder / f'run-{run:04d}.json'


def error_path(folder: Path, run: int) -> Path:
    return folder / f'run-{run:04d}.error.txt'


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that a reader sees the old file or the whole new one, never a
    part (a kill mid-write leaves a stray temporary file, which open_folder removes)."""
    temporary = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    with open(temporary, 'w') as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def open_folder(folder: Path) -> None:
    """Make the folder, removing what a write an earlier process did not finish left."""
    folder.mkdir(parents=True, exist_ok=True)
    for torn in folder.glob('.*.tmp'):
        torn.unlink()


def read_run(folder: Path, key: str, run: int, tasks: int) -> dict[str, Any] | None:
    """A finished run's record, or None (missing, or not a complete run of ``key``)."""
    try:
        data = json.loads(run_path(folder, run).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get('format') != RUN_FORMAT \
            or data.get('cell') != key or data.get('run') != run \
            or not isinstance(data.get('rows'), list) or len(data['rows']) != tasks:
        return None
    return data


def run_record(key: str, run: int, rows: Sequence[Any], identifiable: dict[str, list[str]],
               wall_s: float, **extra: Any) -> dict[str, Any]:
    """What is kept of a finished run: its rows (TaskResult), the capabilities the
    held-out pool can identify, where and how long it ran."""
    return {'format': RUN_FORMAT, 'cell': key, 'run': run, 'wall_time_s': round(wall_s, 3),
            'host': socket.gethostname(), 'pid': os.getpid(), **extra,
            'identifiable_capabilities': identifiable,
            'rows': [asdict(row) for row in rows]}


def failure_record(key: str, run: int, error: BaseException) -> dict[str, Any]:
    """A run that failed: the error's message (a CecmError's own words) and its trace."""
    message = str(error) if isinstance(error, CecmError) else \
        f'{type(error).__name__}: {error}'
    return {'format': RUN_FORMAT, 'cell': key, 'run': run, 'error': message,
            'traceback': ''.join(traceback.format_exception(error))}


def keep(folder: Path, outcome: dict[str, Any]) -> None:
    """Write a run's outcome: the record of a finished run (an earlier failure's file
    removed), or the error of a failed one."""
    run = outcome['run']
    if 'error' in outcome:
        write_atomic(error_path(folder, run), f'{outcome["error"]}\n\n'
                                              f'{outcome.get("traceback", "")}')
        return
    write_atomic(run_path(folder, run), json.dumps(outcome))
    error_path(folder, run).unlink(missing_ok=True)
