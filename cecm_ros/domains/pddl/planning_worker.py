"""A planning worker process: ``python -m cecm_ros.domains.pddl.planning_worker``.

The parent (:class:`cecm_ros.domains.pddl.planner.FastDownwardPlanner`) starts workers itself rather
than through multiprocessing, so neither forking an rclpy process nor re-importing a
user's ``__main__`` ever happens. Each worker runs in a private working directory,
because Fast Downward's driver writes its intermediate files into the current one.

Protocol: length-prefixed pickles. The parent first sends the model settings
``(model class, its rebuild arguments, engine, timeout_s)``; then each request is
``(task, vector)`` and each reply ``('ok', JointPlan)`` or ``('error', exception)``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import struct
import sys
import tempfile
from typing import BinaryIO

HEADER = struct.Struct('>Q')


def send(stream: BinaryIO, value) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()


def receive(stream: BinaryIO):
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError('planning channel closed')
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError('planning channel closed mid-message')
    return pickle.loads(payload)


def main() -> int:
    # The parent ends a worker by closing its stdin. A Ctrl-C in the terminal reaches
    # the whole process group; the worker leaves it to the parent (no traceback here).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Keep the protocol on a private copy of stdout; anything printed goes to stderr.
    channel_out = os.fdopen(os.dup(1), 'wb')
    os.dup2(2, 1)
    channel_in = sys.stdin.buffer
    workdir = tempfile.mkdtemp(prefix='cecm-planner-')
    os.chdir(workdir)
    try:
        from cecm_ros.core.errors import PlanningError

        from .planner import PlanningBackend

        model_class, arguments, engine, timeout_s = receive(channel_in)
        backend: PlanningBackend | None = None
        failure: Exception | None = None
        try:
            backend = PlanningBackend(model_class(*arguments), engine, timeout_s)
        except Exception as error:  # noqa: BLE001 - the parent hears why, per request
            failure = error
        while True:
            try:
                task, vector = receive(channel_in)
            except EOFError:
                return 0
            reply: tuple[str, object]
            try:
                if backend is None:
                    raise PlanningError(f'the planning worker cannot build the domain: '
                                        f'{failure}')
                reply = ('ok', backend.solve(task, vector))
            except Exception as error:  # noqa: BLE001 - every failure goes to the parent
                reply = ('error', error)
            send(channel_out, reply)
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
