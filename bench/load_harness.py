"""Run tests or a demo session on a busy machine, beside an idle run of the same.

    .venv/bin/python bench/load_harness.py --runs 3 -- test/graph/test_graph_dds.py \
        test/graph/test_faults.py
    .venv/bin/python bench/load_harness.py --load 2 --memory-mb 2048 --io --demo -- --tasks 3

Users run the graph on laptops busy with a simulator, a browser and a bag recorder. This
keeps the machine busy while the target runs: ``--load`` x cores CPU burners (busy loops
in processes of their own, at the same priority as everything else), optionally a
memory hog (``--memory-mb``: resident pages it keeps touching) and an I/O hog (``--io``:
a file written and synced over and over). The target is a pytest selection (the
arguments after ``--``) or, with ``--demo``, a ``cecm demo`` session (the arguments
after ``--`` go to it). Each run starts from nothing of the previous one.

It prints, per run: passed, failed and skipped tests (or the demo's exit code), the wall
time beside the idle run's (``--no-idle`` skips that run), the load average the run saw,
and every internal error in a node log or in the output (``internal error``, a Python
traceback): a busy machine may make things slower, never wrong. The tests' own time
limits are stretched by ``CECM_TEST_TIME_SCALE`` (default: 1 + load, the slowdown a
process sees when ``load`` x cores burners share the cores with it). Exit code 0 when
every run passed with no internal error. It is a benchmark, not a test: it takes as
long as its runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The venv this runs in (.venv, .venv-jazzy): its pytest and cecm.
VENV_BIN = Path(sys.prefix) / 'bin'
# What a node must never log, however busy the machine is.
INTERNAL_ERROR = re.compile(r'internal error|Traceback \(most recent call last\)|'
                            r'Unhandled exception', re.IGNORECASE)
BURN = 'while True:\n    pass\n'
MEMORY = '''
import sys, time
size = int(sys.argv[1]) * 1024 * 1024
block = bytearray(size)
while True:   # touch every page, so that they stay resident
    for offset in range(0, size, 4096):
        block[offset] = (block[offset] + 1) % 256
    time.sleep(0.5)
'''
DISK = '''
import os, sys, time
path = sys.argv[1]
chunk = os.urandom(1024 * 1024)
while True:
    with open(path, 'wb') as stream:
        for _ in range(64):
            stream.write(chunk)
        stream.flush()
        os.fsync(stream.fileno())
    os.remove(path)
'''


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else \
        (os.cpu_count() or 1)


class Hogs:
    """The processes that keep the machine busy; stopped (killed) on exit."""

    def __init__(self, burners: int, memory_mb: int, disk: bool, work: Path):
        self.processes: list[subprocess.Popen] = []
        for _ in range(burners):
            self._start('-c', BURN)
        if memory_mb > 0:
            self._start('-c', MEMORY, str(memory_mb))
        if disk:
            self._start('-c', DISK, str(work / 'io_hog.bin'))

    def _start(self, *args: str) -> None:
        self.processes.append(subprocess.Popen(
            [sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait()
        self.processes = []


class LoadMonitor:
    """Samples the 1-minute load average every few seconds while a run goes on."""

    def __init__(self, every_s: float = 5.0):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(every_s,), daemon=True)
        self._thread.start()

    def _watch(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> tuple[float, float]:
        self._stop.set()
        self._thread.join()
        if not self.samples:
            return os.getloadavg()[0], os.getloadavg()[0]
        return sum(self.samples) / len(self.samples), max(self.samples)


@dataclass
class RunResult:
    label: str
    load: float
    wall_s: float
    exit_code: int
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    load_mean: float = 0.0
    load_max: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.failed and not self.internal_errors


def junit_counts(path: Path) -> tuple[int, int, int, list[str]]:
    """(passed, failed, skipped, failing test ids) from pytest's JUnit XML."""
    if not path.is_file():
        return 0, 0, 0, []
    passed = failed = skipped = 0
    failing = []
    for case in ET.parse(path).getroot().iter('testcase'):
        name = f'{case.get("classname", "")}::{case.get("name", "")}'
        if case.find('failure') is not None or case.find('error') is not None:
            failed += 1
            failing.append(name)
        elif case.find('skipped') is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, failing


def internal_errors(folder: Path, output: str, most: int = 20) -> list[str]:
    """Lines that report an internal error, in the node logs under ``folder`` and in
    the run's own output."""
    found = []
    sources = [(path, path.read_text(errors='replace')) for path in sorted(folder.rglob('*.log'))]
    sources.append((Path('output'), output))
    for path, text in sources:
        for line in text.splitlines():
            if INTERNAL_ERROR.search(line):
                found.append(f'{path.name}: {line.strip()[:300]}')
    return found[:most] + ([f'... and {len(found) - most} more'] if len(found) > most else [])


def environment(scale: float) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env['CECM_TEST_TIME_SCALE'] = f'{scale:g}'
    env['PYTHONUNBUFFERED'] = '1'
    return env


def run_once(args, label: str, load: float, scale: float) -> RunResult:
    """One run of the target while ``load`` x cores burners (and the other hogs) run."""
    with tempfile.TemporaryDirectory(prefix='cecm_load_') as scratch:
        work = Path(scratch)
        hogs = Hogs(round(load * cores()), args.memory_mb if load else 0,
                    args.io and bool(load), work)
        monitor = LoadMonitor()
        started = time.monotonic()
        try:
            if args.demo:
                command = [str(VENV_BIN / 'cecm'), 'demo', '--out', str(work / 'demo'),
                           *args.target]
            else:
                command = [str(VENV_BIN / 'pytest'), '-q', '-p', 'no:cacheprovider',
                           '--basetemp', str(work / 'pytest'),
                           '--junitxml', str(work / 'junit.xml'), *args.target]
            print(f'[load] {label}: {" ".join(command)}', flush=True)
            done = subprocess.run(command, cwd=REPO, env=environment(scale), text=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        finally:
            wall = time.monotonic() - started
            hogs.stop()
            load_mean, load_max = monitor.stop()
        output = done.stdout
        if args.keep:   # the output, and the node logs of every graph the run started
            kept = Path(args.keep) / label
            kept.mkdir(parents=True, exist_ok=True)
            (kept / 'output.txt').write_text(output)
            for log in work.rglob('*.log'):
                target = kept / log.relative_to(work)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log, target)
        result = RunResult(label, load, round(wall, 1), done.returncode,
                           load_mean=round(load_mean, 2), load_max=round(load_max, 2))
        if args.demo:
            success = done.returncode == 0 and 'session done' in output
            result.passed, result.failed = (1, 0) if success else (0, 1)
            if not success:
                result.failures = output.strip().splitlines()[-5:]
        else:
            result.passed, result.failed, result.skipped, result.failures = \
                junit_counts(work / 'junit.xml')
            if done.returncode and not result.failed:   # e.g. a collection error
                result.failed, result.failures = 1, output.strip().splitlines()[-5:]
        result.internal_errors = internal_errors(work, output)
        return result


def report(results: list[RunResult]) -> str:
    idle = next((r for r in results if r.load == 0), None)
    lines = ['run        load  load avg (mean/max)  wall s  vs idle  passed  failed  '
             'skipped  internal errors']
    for r in results:
        ratio = f'{r.wall_s / idle.wall_s:6.2f}x' if idle and idle.wall_s else '      -'
        lines.append(f'{r.label:<10} {r.load:4g}  {r.load_mean:8.2f} / {r.load_max:<8.2f}  '
                     f'{r.wall_s:6.0f}  {ratio}  {r.passed:6d}  {r.failed:6d}  {r.skipped:7d}'
                     f'  {len(r.internal_errors):15d}')
    for r in results:
        for name in r.failures:
            lines.append(f'  {r.label} failed: {name}')
        for line in r.internal_errors:
            lines.append(f'  {r.label} internal error: {line}')
    loaded = [r for r in results if r.load]
    verdict = 'every loaded run passed with no internal error' if loaded and all(
        r.ok for r in loaded) else 'NOT every loaded run passed cleanly'
    lines.append(f'{sum(r.ok for r in loaded)} of {len(loaded)} loaded runs clean; {verdict}')
    return '\n'.join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description='Run tests or a demo on a busy machine, beside an idle run.',
        epilog='Arguments after -- are the pytest selection (or, with --demo, cecm demo '
               'options).')
    parser.add_argument('--load', type=float, default=2.0,
                        help='CPU burners per core (default: %(default)s, i.e. 2x the cores)')
    parser.add_argument('--memory-mb', type=int, default=0,
                        help='also keep this many MB resident and touched (default: none)')
    parser.add_argument('--io', action='store_true',
                        help='also write and sync a 64 MB file over and over')
    parser.add_argument('--runs', type=int, default=1, help='loaded runs (default: 1)')
    parser.add_argument('--no-idle', action='store_true', help='skip the idle reference run')
    parser.add_argument('--time-scale', type=float, default=None,
                        help="CECM_TEST_TIME_SCALE of the loaded runs (default: 1 + load)")
    parser.add_argument('--demo', action='store_true',
                        help='run a cecm demo session instead of pytest')
    parser.add_argument('--keep', metavar='DIR',
                        help="keep each run's output and node logs in DIR/<run>")
    parser.add_argument('--json', metavar='PATH', help='also write the results as JSON')
    parser.add_argument('target', nargs='*', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load < 0 or args.runs < 1 or args.memory_mb < 0:
        parser.error('--load and --memory-mb must be at least 0, --runs at least 1')
    if not args.demo and not args.target:
        parser.error('give a pytest selection after --, e.g. -- test/graph/test_faults.py')
    if not (VENV_BIN / ('cecm' if args.demo else 'pytest')).exists():
        parser.error(f'{VENV_BIN} has no {"cecm" if args.demo else "pytest"}: run make build')
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # hogs die with us
    scale = args.time_scale if args.time_scale is not None else 1.0 + args.load
    print(f'[load] {cores()} cores; loaded runs: {round(args.load * cores())} CPU burners'
          + (f', {args.memory_mb} MB memory hog' if args.memory_mb else '')
          + (', I/O hog' if args.io else '') + f', CECM_TEST_TIME_SCALE={scale:g}',
          flush=True)
    plan = ([] if args.no_idle else [('idle', 0.0, 1.0)]) + \
        [(f'loaded-{k + 1}', args.load, scale) for k in range(args.runs)]
    results = []
    for label, load, run_scale in plan:
        result = run_once(args, label, load, run_scale)
        results.append(result)
        print(f'[load] {label}: {"clean" if result.ok else "NOT clean"} in {result.wall_s:.0f} s '
              f'({result.passed} passed, {result.failed} failed, '
              f'{len(result.internal_errors)} internal errors; load average '
              f'{result.load_mean:.2f})', flush=True)
    text = report(results)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + '\n')
    return 0 if all(r.ok for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
