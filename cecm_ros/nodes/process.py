"""A node's process: spin until SIGINT, SIGTERM, shutdown or done; stop in order; never
hang on the way out."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from cecm_ros.nodes.rclpy_compat import shutdown_executor
from cecm_ros.tools.ros_domain_ids import remove_own_shared_memory

if TYPE_CHECKING:
    from cecm_ros.nodes.common import CecmNode

# Threads of every node's MultiThreadedExecutor (run_node).
EXECUTOR_THREADS = 8


def run_node(node_factory: Callable[[], CecmNode], args=None,
             threads: int = EXECUTOR_THREADS) -> int:
    """Spin a node until SIGINT, shutdown or the node finishes; exit without tracebacks.

    Any node with CecmNode's ``finished``, ``exit_code``, ``request_stop()`` and
    ``close()`` will do (correction_console is a plain Node).
    """
    try:
        # Not rclpy's signal handler, which shuts the context down at once: callbacks at
        # work would then fail and log (to a /rosout that is gone) as if something broke.
        # Ctrl-C (and launch's SIGTERM) raise KeyboardInterrupt here instead, and the
        # node stops in order while its context still works.
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as error:  # noqa: BLE001
        print(f'cannot initialise ROS: {error}')
        return 1
    _interrupt_on_signals()
    _watch_shutdown(rclpy.utilities.get_default_context())
    node = None
    executor = None
    code = 0
    try:
        node = node_factory()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(node)
        context = rclpy.utilities.get_default_context()
        while not node.finished.done() and context.ok():
            # In slices: a signal's handler runs only once the wait for work returns,
            # and an idle node may have nothing to wake it.
            spin_slice(executor, SPIN_SLICE_S)
        code = node.exit_code
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as error:  # noqa: BLE001 - a node that cannot start says why
        if node is not None:
            node.get_logger().fatal(f'{error}')
        else:
            print(f'cannot start node: {error}')
        code = 1
    finally:
        # A signal now must not interrupt the clean-up (the exit watchdog bounds it).
        _ignore_signals()
        # Whatever ended the spin, the process ends within EXIT_GRACE_S: a clean-up step
        # that blocks (seen in CI once per few hundred process exits) must not keep it.
        _exit_if_stuck(code)
        if node is not None:
            node.request_stop()
        if executor is not None:
            # Callbacks see the stop and return; do not wait for one that does not (a
            # long computation would hold the process past launch's SIGINT-to-SIGTERM
            # escalation).
            shutdown_executor(executor)
            _wait_for_callbacks(executor, STOP_WAIT_S)
        if node is not None:
            node.close()
            try:
                node.destroy_node()
            except Exception:  # noqa: BLE001 - the context may be gone already
                pass
        rclpy.try_shutdown()
    return leave(code)


# After SIGINT (or any shutdown of the context) the process ends within this long,
# even if a thread the executor waits for never returns.
EXIT_GRACE_S = 10.0
# How long an orderly stop waits for the callbacks at work to return.
STOP_WAIT_S = 3.0
# The longest the main thread waits for work before a signal gets its turn.
SPIN_SLICE_S = 0.25


def spin_slice(executor, timeout_s: float) -> None:
    """One ``spin_once``, which survives an entity destroyed while the wait set was built.

    rclpy's executor builds its wait set from a snapshot of the node's entities; an
    action server or client destroyed in between (a lifecycle cleanup in a callback
    thread) is skipped when its handle is entered but still added to the wait set, and
    that raises RCLError ("Failed to add 'rcl_action_server_t' to wait set: action
    server pointer is invalid"; seen in CI when the estimator node was cleaned up). The
    next slice builds the wait set anew without it, so only that error is let pass.
    """
    try:
        executor.spin_once(timeout_sec=timeout_s)
    except RuntimeError as error:
        if not entity_gone_from_wait_set(error):
            raise


def entity_gone_from_wait_set(error: BaseException) -> bool:
    """Whether ``error`` is rclpy's failure to add an entity destroyed a moment ago."""
    text = str(error)
    return 'to wait set' in text and 'is invalid' in text


def _interrupt_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread (once: a second
    signal while stopping is ignored, and the exit watchdog bounds the stop)."""
    def interrupted(signum, frame) -> None:
        _ignore_signals()
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)


def _ignore_signals() -> None:
    """Further SIGINT/SIGTERM do nothing here. A handler, not SIG_IGN, which processes
    started from now on (a planner's search) would inherit."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _no_op)


def _no_op(signum, frame) -> None:
    pass


def _wait_for_callbacks(executor, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for the executor's worker threads to go idle, so that
    what they log still reaches /rosout before the context goes."""
    pool = getattr(executor, '_executor', None)     # MultiThreadedExecutor's pool
    threads = list(getattr(pool, '_threads', ()))
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


_watchdog_started = threading.Event()


def _watch_shutdown(context) -> None:
    """Start the exit watchdog once the context is shut down (SIGINT shuts it down from
    rclpy's signal handler), from a thread of its own: whatever the main thread is
    blocked on, the process still ends."""
    def watch() -> None:
        while context.ok():
            time.sleep(0.2)
        _exit_if_stuck()
    threading.Thread(target=watch, name='shutdown-watch', daemon=True).start()


def _exit_if_stuck(code: int = 0) -> None:
    """Start (once) a thread that ends the process with ``code`` after EXIT_GRACE_S."""
    if _watchdog_started.is_set():
        return
    _watchdog_started.set()

    def watchdog() -> None:
        time.sleep(EXIT_GRACE_S)
        print(f'[WARN] shutdown did not finish within {EXIT_GRACE_S:g} s; exiting',
              flush=True)
        remove_own_shared_memory()
        os._exit(code)
    threading.Thread(target=watchdog, name='exit-watchdog', daemon=True).start()


def leave(code: int) -> int:
    """End the process now that everything is released.

    Interpreter finalisation (module teardown and the DDS middleware's static
    destructors) takes about 2 s per node process, more under load, long enough for
    ``ros2 launch`` to escalate SIGINT to SIGTERM after its 5 s. Every ROS entity,
    context and planner worker is closed by now, so skip it.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    # A participant still held by a callback that did not return is never deleted, and
    # its shared-memory ports would outlive the process as zombies (ros_domain_ids).
    remove_own_shared_memory()
    os._exit(code)
    return code  # not reached


def lower_priority(niceness: int = 10) -> None:
    """Run the calling thread (and the threads and processes it starts, which inherit
    it) at a lower CPU priority: for work beside the critical path, such as metrics."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
    except (OSError, AttributeError):
        pass   # not Linux, or not allowed: the work runs at the usual priority
