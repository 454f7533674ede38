"""ROS domain ids: held while reserved, not reused at once, cleared of dead Fast DDS files."""

from __future__ import annotations

import fcntl
import mmap
import os
import time

import pytest

from cecm_ros.tools import ros_domain_ids as domain_ids
from cecm_ros.tools.ros_domain_ids import remove_stale_shared_memory, reserve_domain_id

DOMAIN = 7
PORT = domain_ids.PORT_BASE + domain_ids.PORTS_PER_DOMAIN * DOMAIN + 11   # a user port


# Either naming: Fast DDS 3 (Kilted) and Fast DDS 2.x (Jazzy, Humble).
PREFIXES = pytest.mark.parametrize('prefix', domain_ids.FAST_DDS_PREFIXES)


def _port(folder, number: int, lock: bool = True, age_s: float = 60.0,
          prefix: str = 'fastdds_'):
    """A port file as Fast DDS leaves it: the port, its _el lock file, its mutex."""
    names = [f'{prefix}port{number}', f'sem.{prefix}port{number}_mutex']
    if lock:
        names.append(f'{prefix}port{number}_el')
    old = time.time() - age_s
    for name in names:
        (folder / name).write_bytes(b'\0' * 64)
        os.utime(folder / name, (old, old))
    return folder / names[0]


@PREFIXES
def test_ports_of_dead_participants_in_the_domain_are_removed_and_nothing_else(tmp_path, prefix):
    dead = _port(tmp_path, PORT, prefix=prefix)
    # LOCALHOST discovery: rmw_fastrtps numbers every participant's discovery port from
    # 7000, whatever its domain; a dead one is a zombie for any domain.
    dead_discovery = _port(tmp_path, 7003, prefix=prefix)
    never_listened = _port(tmp_path, PORT + 2, lock=False, prefix=prefix)
    other_domain = _port(tmp_path, PORT + domain_ids.PORTS_PER_DOMAIN, prefix=prefix)
    young = _port(tmp_path, PORT + 4, age_s=0.0, prefix=prefix)
    held = _port(tmp_path, PORT + 6, prefix=prefix)
    mapped = _port(tmp_path, PORT + 8, prefix=prefix)
    segment = tmp_path / f'{prefix}0123456789abcdef'
    segment.write_bytes(b'\0' * 64)
    (tmp_path / f'{prefix}0123456789abcdef_el').write_bytes(b'')
    os.utime(segment, (time.time() - 60, time.time() - 60))
    lock = os.open(tmp_path / f'{prefix}port{PORT + 6}_el', os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)   # a live owner
    with open(mapped, 'r+b') as stream, mmap.mmap(stream.fileno(), 0):
        try:
            removed = remove_stale_shared_memory(DOMAIN, tmp_path)
        finally:
            os.close(lock)
    assert sorted(removed) == sorted([dead.name, dead_discovery.name, never_listened.name,
                                      segment.name])
    assert not dead.exists() and not (tmp_path / f'{dead.name}_el').exists()
    assert not dead_discovery.exists()
    assert not (tmp_path / f'sem.{dead.name}_mutex').exists()
    assert not segment.exists() and not (tmp_path / f'{segment.name}_el').exists()
    for kept in (other_domain, young, held, mapped):
        assert kept.exists(), kept.name


def test_a_missing_folder_removes_nothing(tmp_path):
    assert remove_stale_shared_memory(DOMAIN, tmp_path / 'absent') == []


def test_a_reserved_id_is_held_and_the_next_reservation_takes_another():
    first = reserve_domain_id()
    try:
        second = reserve_domain_id()
        assert second.domain_id != first.domain_id
        second.release()
        # Released, the second id is still not the next one handed out.
        third = reserve_domain_id()
        assert third.domain_id not in (first.domain_id, second.domain_id)
        third.release()
    finally:
        first.release()


@PREFIXES
def test_a_domain_where_live_participants_work_is_passed_over(tmp_path, prefix):
    # Two ids free of reservations: DOMAIN has a port a live process holds (a graph
    # started without a reservation), the next one only a dead participant's port.
    live = _port(tmp_path, PORT, prefix=prefix)
    dead = _port(tmp_path, PORT + domain_ids.PORTS_PER_DOMAIN, prefix=prefix)
    lock = os.open(tmp_path / f'{live.name}_el', os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert domain_ids.domain_in_use(DOMAIN, tmp_path)
        assert not domain_ids.domain_in_use(DOMAIN + 1, tmp_path)
        reservation = reserve_domain_id(DOMAIN, DOMAIN + 1, folder=tmp_path)
        try:
            assert reservation.domain_id == DOMAIN + 1
            assert live.exists() and not dead.exists()   # the dead one was cleared
        finally:
            reservation.release()
    finally:
        os.close(lock)


@PREFIXES
def test_the_files_a_process_owns_are_found_by_their_locks_and_removed(tmp_path, prefix):
    mine = _port(tmp_path, PORT, prefix=prefix)
    other = _port(tmp_path, PORT + 2, prefix=prefix)
    segment = tmp_path / f'{prefix}0123456789abcdef'
    segment.write_bytes(b'\0' * 64)
    (tmp_path / f'{prefix}0123456789abcdef_el').write_bytes(b'')
    locks = [os.open(tmp_path / name, os.O_RDWR)
             for name in (f'{mine.name}_el', f'{prefix}0123456789abcdef_el')]
    for descriptor in locks:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        owned = domain_ids.owned_shared_memory([os.getpid()], tmp_path)
        assert owned == {mine.name, f'{mine.name}_el', f'sem.{mine.name}_mutex',
                         segment.name, f'{segment.name}_el'}
        assert sorted(domain_ids.remove_own_shared_memory(tmp_path)) == sorted(owned)
    finally:
        for descriptor in locks:
            os.close(descriptor)
    assert not mine.exists() and not segment.exists()
    assert other.exists() and (tmp_path / f'{other.name}_el').exists()
