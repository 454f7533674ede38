"""Node processes without ``ros2 launch``: started, logged, respawned, stopped.

Where ``launch`` is missing (the PyPI wheels) ``cecm demo`` and the tests start the
installed node executables themselves. Like a launch file's ``respawn=True``, a process
that ends while the graph is running is started again with the same command after a
short delay, and the lifecycle manager then brings the new node back to active. Each
process runs in a session of its own, so that a Ctrl-C in the terminal reaches only the
parent, which stops the graph in order.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cecm_ros.tools.ros_domain_ids import remove_stale_shared_memory


def open_private(path: Path, mode: str = 'a', **kwargs):
    """``path`` opened for writing (``mode`` 'a' or 'w', as ``open`` takes it), readable
    by this user only (0600, also a file that was there before): a node's log and the
    parameters may hold the web panel's access token."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if 'a' in mode else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o600)
    os.fchmod(descriptor, 0o600)
    return os.fdopen(descriptor, mode, **kwargs)


def private_folder(path: Path) -> Path:
    """``path`` as a folder only this user can enter (0700, also one that was there)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


class ProcessGraph:
    """Named processes, each logging into ``log_dir/<name>.log`` (all lives appended;
    readable by this user only)."""

    def __init__(self, env: dict[str, str], log_dir: Path, respawn: bool = False,
                 respawn_delay_s: float = 1.0,
                 report: Callable[[str], None] | None = None,
                 crash_loop_s: float = 10.0, crash_loop_limit: int = 5):
        self.env = env
        # A process that ends this many times in a row, each within crash_loop_s of its
        # start, is not respawned again: it fails at start-up (a wrong parameter, say),
        # and respawning it for ever would only bury its error in the logs.
        self.crash_loop_s = crash_loop_s
        self.crash_loop_limit = crash_loop_limit
        self.quick_exits: dict[str, int] = {}
        self.given_up: set[str] = set()
        self._started: dict[str, float] = {}
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.respawn = respawn
        self.respawn_delay_s = respawn_delay_s
        self.report = report or (lambda text: None)
        self.processes: dict[str, subprocess.Popen] = {}
        self.commands: dict[str, tuple[list[str], bool]] = {}
        self.respawns: dict[str, int] = {}
        # Per process, exit codes that mean it ended for good (not a crash to undo).
        self.final_codes: dict[str, tuple[int, ...]] = {}
        # Streamed processes' lines as (name, line); (name, None) when it ended for good.
        self.lines: queue.Queue = queue.Queue()
        self._logs: dict[str, object] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._monitor: threading.Thread | None = None

    # ---------------------------------------------------------------- starting
    def start(self, name: str, command: list[str], stream: bool = False,
              respawn: bool | None = None, final_codes: tuple[int, ...] = ()) -> None:
        """Start ``command`` as ``name``; ``stream`` also queues its lines on ``lines``;
        an exit with one of ``final_codes`` is not respawned (the process gave up)."""
        with self._lock:
            self.commands[name] = (list(command), stream)
            self.final_codes[name] = tuple(final_codes)
            if respawn is False:
                self.respawns.setdefault(name, -1)   # -1: never respawned
            else:
                self.respawns.setdefault(name, 0)
            self._launch(name)
        if self.respawn and self._monitor is None:
            self._monitor = threading.Thread(target=self._watch, daemon=True,
                                             name='cecm-respawn')
            self._monitor.start()

    def _launch(self, name: str) -> None:
        command, stream = self.commands[name]
        log = self._logs.get(name)
        if log is None:
            path = self.log_dir / f'{name}.log'   # a name with '/' gets a subfolder
            path.parent.mkdir(parents=True, exist_ok=True)
            log = open_private(path, 'a', buffering=1)  # closed in stop()
            self._logs[name] = log
        process = subprocess.Popen(
            command, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stream else log, stderr=subprocess.STDOUT,
            text=True, bufsize=1, start_new_session=True)
        self.processes[name] = process
        self._started[name] = time.monotonic()
        if stream:
            threading.Thread(target=self._pump, args=(name, process, log),
                             daemon=True).start()

    def _respawnable(self, name: str, code: int | None) -> bool:
        """A process that ends with an error while the graph runs comes back; one that
        finished (exit code 0) does not."""
        return (self.respawn and code != 0 and code not in self.final_codes.get(name, ())
                and self.respawns.get(name, -1) >= 0 and name not in self.given_up
                and not self._stopping.is_set())

    def _crash_looping(self, name: str, code: int) -> bool:
        """Count a quick exit of ``name``; True (and given up) at the limit's."""
        life = time.monotonic() - self._started.get(name, 0.0)
        quick = self.quick_exits.get(name, 0) + 1 if life < self.crash_loop_s else 0
        self.quick_exits[name] = quick
        if quick < self.crash_loop_limit:
            return False
        self.given_up.add(name)
        self._logs[name].write(f'[process_graph] exited with code {code} {quick} times in a '
                               f'row, each within {self.crash_loop_s:g} s of its start; not '
                               'respawned again\n')
        if self.commands[name][1]:
            self.lines.put((name, None))
        return True

    def _pump(self, name: str, process: subprocess.Popen, log) -> None:
        for line in process.stdout:
            log.write(line)
            self.lines.put((name, line.rstrip('\n')))
        if not self._respawnable(name, process.wait()):
            self.lines.put((name, None))

    def _watch(self) -> None:
        """Respawn processes that end while the graph runs (launch's respawn=True)."""
        while not self._stopping.wait(0.2):
            with self._lock:
                ended = [(n, p.returncode) for n, p in self.processes.items()
                         if p.poll() is not None and self._respawnable(n, p.returncode)]
            for name, code in ended:
                if self._stopping.wait(self.respawn_delay_s):
                    return
                with self._lock:
                    if self._stopping.is_set() or self.processes[name].poll() is None:
                        continue
                    if self._crash_looping(name, code):
                        self.report(f'{name} exited (code {code}) {self.quick_exits[name]} '
                                    f'times in a row within {self.crash_loop_s:g} s of its '
                                    f'start; not respawned again (its log: '
                                    f'{self.log_dir / name}.log)')
                        continue
                    self.respawns[name] += 1
                    self._logs[name].write(f'[process_graph] exited with code {code}; '
                                           f'respawn {self.respawns[name]}\n')
                    self._remove_dead_shared_memory()
                    self._launch(name)
                self.report(f'{name} exited (code {code}); respawned it '
                            f'({self.respawns[name]} so far)')

    def _remove_dead_shared_memory(self) -> None:
        """A process that died (SIGKILL, a crash) left its Fast DDS shared-memory ports;
        the new one would take such a port over, and may then never discover some of
        its peers (ros_domain_ids explains the defect). Remove them first."""
        try:
            domain_id = int(self.env.get('ROS_DOMAIN_ID', '0') or 0)
        except ValueError:
            return
        remove_stale_shared_memory(domain_id)

    # ---------------------------------------------------------------- queries
    def alive(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.poll() is None

    def pid(self, name: str) -> int:
        return self.processes[name].pid

    def ended(self, ignore: str = '') -> list[tuple[str, int]]:
        """Processes that have ended and will not come back (name, exit code)."""
        with self._lock:
            return [(n, p.returncode) for n, p in self.processes.items()
                    if n != ignore and p.poll() is not None
                    and not self._respawnable(n, p.returncode)]

    def log(self, name: str) -> str:
        path = self.log_dir / f'{name}.log'
        return path.read_text(errors='replace') if path.is_file() else ''

    def tail(self, name: str, lines: int = 15) -> str:
        return '\n'.join('    ' + line for line in self.log(name).splitlines()[-lines:])

    def errors(self, most: int = 20) -> str:
        """Every process's error lines (the cause of a failure is often in another log)."""
        found = [f'    {line}' for path in sorted(self.log_dir.glob('*.log'))
                 for line in path.read_text(errors='replace').splitlines()
                 if '[ERROR]' in line or '[FATAL]' in line]
        return '\n'.join(found[-most:])

    # ---------------------------------------------------------------- stopping
    def signal(self, name: str, signum: int) -> None:
        """Send ``signum`` to one process (fault tests: SIGKILL, SIGSTOP, SIGCONT)."""
        self.processes[name].send_signal(signum)

    def interrupt(self, names, grace_s: float = 15.0) -> list[str]:
        """SIGINT, then SIGTERM, then SIGKILL; returns the names that needed force."""
        targets = [(n, self.processes[n]) for n in names if n in self.processes]
        for _, process in targets:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        forced = []
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + grace_s
            for name, process in targets:
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    forced.append(name)
                    process.send_signal(sig)
        for _, process in targets:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        return sorted(set(forced))

    def stop(self, first: tuple[str, ...] = (), grace_s: float = 15.0) -> list[str]:
        """Stop respawning, then end ``first`` (e.g. the lifecycle manager, which takes
        the nodes down in order) and then the rest; returns the names that needed force."""
        self._stopping.set()
        forced = self.interrupt([n for n in first if n in self.processes], grace_s=30.0)
        forced += self.interrupt([n for n in self.processes if n not in first], grace_s)
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in self._logs.values():
            log.close()
        return sorted(set(forced))
