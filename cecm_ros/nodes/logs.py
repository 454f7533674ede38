"""Log lines of a bounded size, whatever a sender put into a message.

A node quotes what it refuses, and a message may carry a string of a megabyte (DDS sets
no limit), a NUL (which would end the line in rcutils) or a lone surrogate (which
cannot be written at all). Every node's ``get_logger()`` gives a logger that cuts a
line at MAX_LOG_CHARS and writes such characters escaped.
"""

from __future__ import annotations

import os
from typing import Any

from rclpy.impl import rcutils_logger
from rclpy.impl.rcutils_logger import RcutilsLogger

MAX_LOG_CHARS = 4000   # of one log line; the longest a node writes of its own is ~1,000

# rclpy keys a line's severity and filters on its caller, the first frame outside the
# files it lists here (a list meant for third parties' wrappers): this file is one.
rcutils_logger._internal_callers.append(os.path.realpath(__file__))


def bounded_line(message: Any) -> str:
    """``message`` as one line of at most MAX_LOG_CHARS characters (and a note of how
    many more there were), with NUL and lone surrogates escaped."""
    text = str(message)
    if len(text) > MAX_LOG_CHARS:
        text = (f'{text[:MAX_LOG_CHARS]}... ({len(text) - MAX_LOG_CHARS} more characters '
                'not logged)')
    return text.replace('\x00', '\\x00').encode('utf-8', 'backslashreplace').decode('utf-8')


class BoundedLogger(RcutilsLogger):
    """An rcutils logger that bounds each line (:func:`bounded_line`)."""

    def log(self, message: Any, severity: Any, **kwargs: Any) -> bool:
        return super().log(bounded_line(message), severity, **kwargs)


class BoundedLogging:
    """Mixin for a node (before rclpy's Node): its logger bounds every line."""

    def get_logger(self) -> RcutilsLogger:
        logger = super().get_logger()  # type: ignore[misc]
        if not isinstance(logger, BoundedLogger):
            logger = self._logger = BoundedLogger(logger.name)
        return logger
