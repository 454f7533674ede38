"""ROS_DOMAIN_IDs handed out, not guessed: parallel sessions on one machine never share one.

A process holds an id by binding an abstract Unix socket named after it (Linux); the
kernel releases it when the socket closes or the process dies, so a crashed test never
leaks an id. Ids come from 1-101, the range in which Fast DDS's ports stay below the
ephemeral ones.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

LOWEST, HIGHEST = 1, 101


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


def reserve_domain_id(lowest: int = LOWEST, highest: int = HIGHEST) -> DomainReservation:
    """The first free id, starting at a place that depends on the process id."""
    count = highest - lowest + 1
    start = os.getpid() % count
    for offset in range(count):
        candidate = lowest + (start + offset) % count
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            holder.bind(f'\0cecm_ros/ros_domain_id/{candidate}')
        except OSError:
            holder.close()
            continue
        return DomainReservation(candidate, holder)
    raise RuntimeError(f'every ROS_DOMAIN_ID from {lowest} to {highest} is in use on this '
                       'machine')
