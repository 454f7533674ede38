"""ROS_DOMAIN_IDs handed out, not guessed: parallel sessions on one machine never share one.

A process holds an id by binding an abstract Unix socket named after it (Linux); the
kernel releases it when the socket closes or the process dies, so a crashed test never
leaks an id. Ids come from 1-101, the range in which Fast DDS's ports stay below the
ephemeral ones.

Each reservation of a process starts after the id it took last, so the graphs one test
run starts one after another do not reuse a domain while it lasts, and an id in which
live Fast DDS participants already work (a graph started without a reservation) is
passed over. And before an id is
handed out, the Fast DDS shared-memory files left by processes that died without
closing them (the fault tests kill nodes with SIGKILL) are removed: Fast DDS (3.2 here)
takes such a "zombie" port over when a new participant gets its number, and that
takeover can leave a participant deaf to some of its peers (a graph whose partner never
discovered one of the world's action servers was seen in CI; eProsima/Fast-DDS pull
request 4728 describes the takeover's defect). Those are the domain's own ports and the
discovery ports below every domain's range: with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST,
rmw_fastrtps numbers each participant's discovery (metatraffic) port from 7000 up,
whatever its domain, so a node killed in one domain leaves a port that a participant of
any other domain takes over next.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

LOWEST, HIGHEST = 1, 101
# The RTPS port range of a domain: 7400 + 250 * id, then 250 ports (the spec's defaults,
# which Fast DDS's shared-memory ports are numbered after).
PORT_BASE, PORTS_PER_DOMAIN = 7400, 250
SHARED_MEMORY = Path('/dev/shm')
# Fast DDS's file name prefix: fastdds_ from Fast DDS 3 (Kilted), fastrtps_ before it
# (Fast DDS 2.x: Jazzy, Humble).
FAST_DDS_PREFIXES = ('fastdds_', 'fastrtps_')
# A file younger than this may belong to a participant being created (not yet mapped
# nor locked, which takes Fast DDS milliseconds): left alone. A process killed a moment
# ago has already lost its mappings and locks, so a short margin does.
STALE_AFTER_S = 2.0

_last_taken: int | None = None


@dataclass
class DomainReservation:
    """An id held until :meth:`release` (or the process ends)."""

    domain_id: int
    _socket: socket.socket | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> DomainReservation:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def reserve_domain_id(lowest: int = LOWEST, highest: int = HIGHEST,
                      folder: Path = SHARED_MEMORY) -> DomainReservation:
    """A free id: the first after the one this process took last (at first, after a
    place that depends on the process id) that no reservation holds and in which no live
    Fast DDS participant works (domain_in_use), with its stale shared memory removed."""
    global _last_taken
    count = highest - lowest + 1
    start = os.getpid() % count if _last_taken is None else _last_taken - lowest + 1
    for offset in range(count):
        candidate = lowest + (start + offset) % count
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            holder.bind(f'\0cecm_ros/ros_domain_id/{candidate}')
        except OSError:
            holder.close()
            continue
        if domain_in_use(candidate, folder):
            holder.close()
            continue
        _last_taken = candidate
        remove_stale_shared_memory(candidate, folder)
        return DomainReservation(candidate, holder)
    raise RuntimeError(f'every ROS_DOMAIN_ID from {lowest} to {highest} is in use on this '
                       'machine')


def remove_stale_shared_memory(domain_id: int, folder: Path = SHARED_MEMORY,
                               stale_after_s: float = STALE_AFTER_S) -> list[str]:
    """Remove the Fast DDS shared-memory ports of ``domain_id`` and the shared discovery
    ports below every domain's range that no live process holds, and the participants'
    segments that none holds; the names removed.

    A file is stale when no process has it mapped and its owner's exclusive ``flock`` on
    the ``_el`` file beside it is gone (the kernel drops both when a process dies).
    Best effort: a file that cannot be examined or removed is left where it is.
    """
    if not folder.is_dir():
        return []
    mapped = _mapped_files(folder)
    first = PORT_BASE + PORTS_PER_DOMAIN * domain_id
    ports = range(first, first + PORTS_PER_DOMAIN)
    now = time.time()
    removed = []
    for path in _fast_dds_files(folder):
        name = path.name
        if name.endswith('_el'):
            continue
        number = _port_number(name)
        if number is not None:
            if not number.isdigit() or not (int(number) in ports
                                            or int(number) < PORT_BASE):
                continue
            companions = [folder / f'sem.{name}_mutex']
        else:
            companions = []
        lock = folder / f'{name}_el'
        try:
            if (now - path.stat().st_mtime < stale_after_s or str(path) in mapped
                    or _held(lock)):
                continue
            for stale in (path, lock, *companions):
                stale.unlink(missing_ok=True)
        except OSError:
            continue
        removed.append(name)
    return removed


def domain_in_use(domain_id: int, folder: Path = SHARED_MEMORY) -> bool:
    """Whether a live Fast DDS participant holds a port of ``domain_id``'s own range: a
    ROS graph that took the id without a reservation (a user's, another job's on a
    shared machine, or nodes a killed test left running). A graph started there would
    share its topics and services with that one. Seen only through Fast DDS's shared
    memory on this machine; another middleware's participants are not."""
    first = PORT_BASE + PORTS_PER_DOMAIN * domain_id
    for path in _fast_dds_files(folder):
        number = _port_number(path.name)
        if number is None or not number.isdigit() or \
                not first <= int(number) < first + PORTS_PER_DOMAIN:
            continue
        try:
            if _held(folder / f'{path.name}_el'):
                return True
        except OSError:      # another user's lock: taken as held
            return True
    return False


def owned_shared_memory(pids, folder: Path = SHARED_MEMORY) -> set[str]:
    """The Fast DDS files in ``folder`` that processes ``pids`` own: a participant holds
    an exclusive flock on the ``_el`` file beside each port and segment it created (the
    names of both, and of a port's semaphore)."""
    wanted = {str(pid) for pid in pids}
    inodes = set()
    try:
        with open('/proc/locks') as locks:
            for line in locks:
                fields = line.split()
                # "N: FLOCK ADVISORY WRITE pid major:minor:inode start end"; a waiter's
                # line has "->" after the number.
                if len(fields) > 5 and fields[1] == 'FLOCK' and fields[4] in wanted:
                    major, minor, inode = fields[5].split(':')
                    inodes.add((int(major, 16), int(minor, 16), int(inode)))
    except (OSError, ValueError):
        return set()
    owned = set()
    for lock in _fast_dds_files(folder, '_el'):
        try:
            status = lock.stat()
        except OSError:
            continue
        if (os.major(status.st_dev), os.minor(status.st_dev), status.st_ino) not in inodes:
            continue
        name = lock.name.removesuffix('_el')
        owned.update({lock.name, name})
        if _port_number(name) is not None:
            owned.add(f'sem.{name}_mutex')
    return owned


def _fast_dds_files(folder: Path, suffix: str = '') -> list[Path]:
    """Fast DDS's files in ``folder`` (of either naming) whose names end in ``suffix``."""
    return [path for prefix in FAST_DDS_PREFIXES for path in folder.glob(f'{prefix}*{suffix}')]


def _port_number(name: str) -> str | None:
    """The number of a port file (``fastdds_port7411``: '7411'), None for a segment."""
    for prefix in FAST_DDS_PREFIXES:
        if name.startswith(f'{prefix}port'):
            return name[len(prefix) + len('port'):]
    return None


def remove_own_shared_memory(folder: Path = SHARED_MEMORY) -> list[str]:
    """Remove the Fast DDS files this process owns, as its participant's deletion would
    have: for a process about to end without that deletion (process.leave), so that
    it leaves no zombie port behind. Best effort."""
    removed = []
    for name in sorted(owned_shared_memory([os.getpid()], folder)):
        try:
            (folder / name).unlink()
        except OSError:
            continue
        removed.append(name)
    return removed


def _mapped_files(folder: Path) -> set[str]:
    """Every file under ``folder`` that some process has mapped (that can be read)."""
    prefix = f'{folder}/'
    mapped = set()
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            with open(entry / 'maps') as maps:
                for line in maps:
                    path = line.rstrip('\n').split(maxsplit=5)[-1]
                    if path.startswith(prefix):
                        mapped.add(path.removesuffix(' (deleted)'))
        except OSError:
            continue
    return mapped


def _held(lock: Path) -> bool:
    """Whether a live process holds the ``flock`` of a Fast DDS ``_el`` lock file (no
    file: nothing to hold, so not held)."""
    try:
        descriptor = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return False
    finally:
        os.close(descriptor)
