"""lifecycle_manager: brings the lifecycle nodes of the graph up in order and down in reverse.

Like nav2's lifecycle manager: parameter ``node_names`` lists the managed nodes in
start order. With ``autostart`` it configures every node, then activates every node,
each through its ``<node>/change_state`` service, logging each transition. On SIGINT
or SIGTERM it deactivates and cleans up the nodes in reverse order before it exits.
A failed start-up is undone the same way and ends the process with exit code 1.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

import rclpy
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future

from cecm_ros.nodes.common import leave

DEFAULT_NODES = ['household_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
                 'executor', 'task_manager']

# transition id -> (label, state before, state after)
STEPS = {
    Transition.TRANSITION_CONFIGURE: ('configure', State.PRIMARY_STATE_UNCONFIGURED,
                                      State.PRIMARY_STATE_INACTIVE),
    Transition.TRANSITION_ACTIVATE: ('activate', State.PRIMARY_STATE_INACTIVE,
                                     State.PRIMARY_STATE_ACTIVE),
    Transition.TRANSITION_DEACTIVATE: ('deactivate', State.PRIMARY_STATE_ACTIVE,
                                       State.PRIMARY_STATE_INACTIVE),
    Transition.TRANSITION_CLEANUP: ('cleanup', State.PRIMARY_STATE_INACTIVE,
                                    State.PRIMARY_STATE_UNCONFIGURED),
}


class LifecycleManager(Node):
    def __init__(self, stop: threading.Event, **kwargs):
        super().__init__('lifecycle_manager', **kwargs)
        self.stop = stop
        self._lock = threading.Lock()
        self._pending: set[threading.Event] = set()
        self._declare('node_names', list(DEFAULT_NODES),
                      'Managed lifecycle nodes, in start-up order (shut down in reverse)',
                      ParameterType.PARAMETER_STRING_ARRAY)
        self._declare('autostart', True, 'Configure and activate all nodes at start-up',
                      ParameterType.PARAMETER_BOOL)
        self._declare('service_wait_s', 60.0,
                      "How long to wait for a node's lifecycle services at start-up",
                      ParameterType.PARAMETER_DOUBLE)
        self._declare('transition_timeout_s', 120.0,
                      'How long one transition (e.g. configure) may take',
                      ParameterType.PARAMETER_DOUBLE)
        self._declare('shutdown_timeout_s', 3.0,
                      'Time budget of the whole reverse shutdown (under ros2 launch\'s '
                      '5 s SIGINT-to-SIGTERM escalation)', ParameterType.PARAMETER_DOUBLE)
        self.names = list(self.get_parameter('node_names').value)
        group = ReentrantCallbackGroup()
        self.change = {n: self.create_client(ChangeState, f'{n}/change_state',
                                             callback_group=group) for n in self.names}
        self.get = {n: self.create_client(GetState, f'{n}/get_state', callback_group=group)
                    for n in self.names}

    def _declare(self, name, default, description, param_type) -> None:
        self.declare_parameter(name, default, ParameterDescriptor(
            name=name, type=param_type, description=description))

    # ------------------------------------------------------------------- calls
    def _call(self, client, request, timeout_s: float, interruptible: bool = True):
        """Call a service; None on timeout (or on a stop request when interruptible)."""
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if interruptible:
            with self._lock:
                self._pending.add(done)
        try:
            done.wait(timeout_s)
        finally:
            with self._lock:
                self._pending.discard(done)
        if not future.done():
            client.remove_pending_request(future)
            return None
        return future.result()

    def interrupt(self) -> None:
        """A stop request: wake the start-up sequence wherever it waits."""
        self.stop.set()
        with self._lock:
            for event in self._pending:
                event.set()

    def _wait_services(self, name: str, timeout_s: float) -> bool:
        # rclpy has no discovery event; Client.wait_for_service re-checks in short sleeps.
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.stop.is_set():
            if self.change[name].wait_for_service(0.5) and self.get[name].service_is_ready():
                return True
        return self.change[name].service_is_ready() and self.get[name].service_is_ready()

    def state_of(self, name: str, timeout_s: float, interruptible: bool = True) -> int | None:
        response = self._call(self.get[name], GetState.Request(), timeout_s, interruptible)
        return None if response is None else response.current_state.id

    def transition(self, name: str, transition: int, timeout_s: float,
                   interruptible: bool = True) -> bool:
        label, before, after = STEPS[transition]
        state = self.state_of(name, min(timeout_s, 10.0), interruptible)
        if state is None:
            self.get_logger().error(f'{name}: no answer from {name}/get_state')
            return False
        if state == after:
            return True   # already there (e.g. started by hand)
        if state != before:
            self.get_logger().error(f'{name}: cannot {label} from state id {state}')
            return False
        self.get_logger().info(f'{name}: {label} ...')
        started = time.monotonic()
        request = ChangeState.Request(transition=Transition(id=transition))
        response = self._call(self.change[name], request, timeout_s, interruptible)
        if response is None:
            self.get_logger().error(f'{name}: {label} gave no answer within {timeout_s:g} s')
            return False
        if not response.success:
            self.get_logger().error(f'{name}: {label} failed (see the log of {name})')
            return False
        self.get_logger().info(f'{name}: {label} done ({time.monotonic() - started:.1f} s)')
        return True

    # ----------------------------------------------------------------- sequences
    def startup(self) -> bool:
        wait_s = self.get_parameter('service_wait_s').value
        timeout_s = self.get_parameter('transition_timeout_s').value
        self.get_logger().info(f'starting {len(self.names)} nodes: {", ".join(self.names)}')
        for name in self.names:
            if not self._wait_services(name, wait_s):
                if not self.stop.is_set():
                    self.get_logger().error(f'{name}: lifecycle services not found within '
                                            f'{wait_s:g} s (is the node running?)')
                return False
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            for name in self.names:
                if self.stop.is_set() or not self.transition(name, transition, timeout_s):
                    return False
        self.get_logger().info(f'all {len(self.names)} nodes are active')
        return True

    def shutdown(self) -> None:
        """Deactivate and clean up in reverse order within ``shutdown_timeout_s`` in all."""
        deadline = time.monotonic() + self.get_parameter('shutdown_timeout_s').value
        self.get_logger().info('shutting down the managed nodes in reverse order')
        for name in reversed(self.names):
            left = deadline - time.monotonic()
            if left <= 0.05:
                self.get_logger().warning(f'shutdown budget used up before {name}')
                break
            if not self.get[name].service_is_ready():
                self.get_logger().info(f'{name}: already gone')
                continue
            state = self.state_of(name, min(left, 0.5), interruptible=False)
            if state is None:
                self.get_logger().info(f'{name}: no answer (already stopping)')
                continue
            for transition, when in ((Transition.TRANSITION_DEACTIVATE,
                                      State.PRIMARY_STATE_ACTIVE),
                                     (Transition.TRANSITION_CLEANUP,
                                      State.PRIMARY_STATE_INACTIVE)):
                left = deadline - time.monotonic()
                if state != when or left <= 0.05:
                    continue
                if not self.transition(name, transition, left, interruptible=False):
                    break
                state = STEPS[transition][2]
        self.get_logger().info('shutdown of the managed nodes done')


def main(args=None) -> int:
    # The reverse shutdown needs a live ROS context, so SIGINT/SIGTERM do not go to
    # rclpy: a Python handler turns them into a stop request. The main thread spins
    # (in short waits, so that the handler runs promptly); start-up and shutdown run
    # in a supervisor thread.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = LifecycleManager(threading.Event())
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: node.interrupt())
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    done = Future()

    def supervise() -> None:
        code = 0
        if node.get_parameter('autostart').value and not node.startup() \
                and not node.stop.is_set():
            node.get_logger().error('start-up failed; undoing it')
            code = 1
            node.interrupt()
        node.stop.wait()
        node.shutdown()
        done.set_result(code)

    supervisor = threading.Thread(target=supervise)
    supervisor.start()
    try:
        while not done.done():
            executor.spin_once(timeout_sec=0.25)
        supervisor.join()
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return leave(done.result())


if __name__ == '__main__':
    sys.exit(main())
