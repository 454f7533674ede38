"""session_recorder: records every topic of a session into an MCAP file.

A tool like ``ros2 bag record -a -s mcap`` (which is not available from PyPI): it looks
for topics every ``discovery_period_s`` (``get_topic_names_and_types``), subscribes to
each one that has a publisher and that ``topics``/``exclude`` select, with the QoS its
publishers offer (reliable and transient local when all of them are, so that the latched
``task/request``, ``team_state`` and ``capability_belief`` are caught from their start),
and writes the serialized messages with their ROS 2 definitions into an MCAP file
(cecm_ros/tools/recording.py). Every ``flush_period_s`` the open chunk is closed and the file
synced, so a recorder that is killed leaves a file readable up to then; on SIGINT or
SIGTERM the file is finished with its summary and index.

Not a lifecycle node: like correction_console it is a tool that runs until stopped.
"""

from __future__ import annotations

import fnmatch
import importlib
import sys
import time
from functools import partial

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future

from cecm_ros.nodes.common import run_node
from cecm_ros.nodes.diagnostics import NodeDiagnostics
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.parameters import DeclaredParameters
from cecm_ros.tools.recording import McapSink, RecordingError, output_file

DEFAULT_OUTPUT = '~/.ros/cecm_ros/recordings/'


def message_class(type_name: str):
    """The Python class of a ROS 2 type ``pkg/msg/Type`` (also the types rosidl derives
    from services and actions, e.g. ``pkg/action/X_FeedbackMessage``)."""
    package, kind, name = type_name.split('/')
    module = importlib.import_module(f'{package}.{kind}')
    if hasattr(module, name):
        return getattr(module, name)
    base, _, part = name.rpartition('_')
    interface = getattr(module, base, None)
    if interface is not None and hasattr(interface, part):
        return getattr(interface, part)          # X_Goal, X_Result, X_Feedback, X_Request
    if interface is not None and hasattr(getattr(interface, 'Impl', None), part):
        return getattr(interface.Impl, part)     # X_FeedbackMessage
    raise ImportError(f'no Python class for {type_name}')


def _qos_fields(profile) -> dict:
    """A publisher's offered QoS as plain values (for the channel metadata)."""
    return {'history': int(profile.history), 'depth': int(profile.depth),
            'reliability': int(profile.reliability), 'durability': int(profile.durability),
            'liveliness': int(profile.liveliness),
            'deadline': profile.deadline.nanoseconds, 'lifespan': profile.lifespan.nanoseconds,
            'liveliness_lease_duration': profile.liveliness_lease_duration.nanoseconds}


def subscription_qos(offered, depth: int) -> QoSProfile:
    """A QoS that matches every offering publisher: reliable and transient local only
    where all of them are (history and depth are not discovered: keep the last
    ``depth``, enough for a late joiner's whole backlog)."""
    reliable = bool(offered) and all(p.reliability == ReliabilityPolicy.RELIABLE
                                     for p in offered)
    latched = bool(offered) and all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL
                                    for p in offered)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliable
                      else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                      else DurabilityPolicy.VOLATILE)


def _absolute(pattern: str) -> str:
    pattern = pattern.strip()
    return pattern if pattern.startswith(('/', '*')) else '/' + pattern


class SessionRecorder(BoundedLogging, NodeDiagnostics, DeclaredParameters, Node):
    PARAMETER_REFUSED = 'does not start'

    def __init__(self, **kwargs):
        super().__init__('session_recorder', **kwargs)
        self.start_parameter_checks()
        self.start_diagnostics()
        self.declare('output', DEFAULT_OUTPUT,
                     'MCAP file to write, or a folder (an existing one, or a path '
                     "ending in '/') for a timestamped session-*.mcap in it")
        self.topics = self._names('topics', 'Record only these topics (names or shell '
                                  "patterns such as '/robot/*'); none given = every topic")
        self.exclude = self._names('exclude', "Never record these topics (e.g. '/rosout')")
        self.declare('overwrite', False, 'Replace an existing output file')
        self.declare('discovery_period_s', 0.5, 'Seconds between looks for new topics',
                     low=1e-3, high=3600.0)
        self.declare('flush_period_s', 1.0, 'Seconds between writes to disk',
                     low=1e-3, high=3600.0)
        self.declare('queue_depth', 1000, 'Messages kept per topic while writing',
                     low=1, high=1_000_000)
        if self.parameter_errors:
            # A tool, not a lifecycle node: it cannot wait to be fixed, so it refuses.
            raise ValueError('; '.join(self.parameter_errors))
        output = self.param('output')
        overwrite = self.param('overwrite')
        period = self.param('discovery_period_s')
        flush = self.param('flush_period_s')
        self.depth = self.param('queue_depth')
        self.sink = McapSink(output_file(output), overwrite=overwrite)
        self.sink.add_metadata('cecm_ros', {
            'recorder': 'session_recorder', 'node': self.get_fully_qualified_name(),
            'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'topics': ' '.join(self.topics),
            'exclude': ' '.join(self.exclude)})
        self.subscriptions_by_topic: dict[str, object] = {}
        self.skipped: dict[str, str] = {}    # topic -> why it is not recorded
        self.finished = Future()             # never done: run until SIGINT/SIGTERM
        self.exit_code = 0
        self.stopped = False
        self.get_logger().info(
            f'recording {", ".join(self.topics) or "every topic"}'
            + (f' except {", ".join(self.exclude)}' if self.exclude else '')
            + f' to {self.sink.path}')
        self.discover()
        self.create_timer(period, self.discover)
        self.create_timer(flush, self.sink.flush)

    def _names(self, name: str, description: str) -> list[str]:
        """A list of topic names, absent by default (an empty list has no type in ROS)."""
        values = self.declare_unset_list(name, description)
        return [_absolute(v) for v in values if v.strip()]

    # --------------------------------------------------------------- discovery
    def selected(self, topic: str) -> bool:
        if self.topics and not any(fnmatch.fnmatchcase(topic, p) for p in self.topics):
            return False
        return not any(fnmatch.fnmatchcase(topic, p) for p in self.exclude)

    def discover(self) -> None:
        """Subscribe to every selected topic that has appeared and has a publisher."""
        if self.stopped:
            return
        for topic, types in self.get_topic_names_and_types():
            if topic in self.subscriptions_by_topic or topic in self.skipped:
                continue
            if not self.selected(topic):
                self.skipped[topic] = 'not selected'
                continue
            if len(types) != 1:
                self._skip(topic, f'it carries several types ({", ".join(types)})')
                continue
            offered = [info.qos_profile for info in self.get_publishers_info_by_topic(topic)]
            if not offered:
                continue   # no publisher yet: its QoS is not known
            try:
                msg_type = message_class(types[0])
            except (ImportError, AttributeError, ValueError) as error:
                self._skip(topic, f'its type {types[0]} cannot be loaded here ({error})')
                continue
            self.sink.add_topic(topic, types[0], [_qos_fields(p) for p in offered])
            if types[0] in self.sink.problems:
                self.get_logger().warning(f'{topic}: recorded without a message definition: '
                                          f'{self.sink.problems[types[0]]}')
            qos = subscription_qos(offered, self.depth)
            self.subscriptions_by_topic[topic] = self.create_subscription(
                msg_type, topic, partial(self._on_message, topic), qos, raw=True)
            reliable = qos.reliability == ReliabilityPolicy.RELIABLE
            latched = qos.durability == DurabilityPolicy.TRANSIENT_LOCAL
            self.get_logger().info(
                f'recording {topic} ({types[0]}, {"reliable" if reliable else "best effort"}, '
                f'{"transient local" if latched else "volatile"})')

    def _skip(self, topic: str, why: str) -> None:
        self.skipped[topic] = why
        self.get_logger().warning(f'not recording {topic}: {why}')

    def _on_message(self, topic: str, data: bytes, info) -> None:
        received = info.get('received_timestamp') or time.time_ns()
        self.sink.write(topic, data, received, info.get('source_timestamp') or received)

    # --------------------------------------------------------------- shutdown
    def request_stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        """Finish the file (summary and index); called once the executor has stopped."""
        if self.sink.closed:
            return
        self.sink.close()
        counts = {t: n for t, n in self.sink.counts.items() if n}
        size = self.sink.path.stat().st_size if self.sink.path.exists() else 0
        text = (f'wrote {self.sink.message_count} messages on {len(counts)} of '
                f'{len(self.sink.counts)} topics to {self.sink.path} ({size / 1024:.0f} KiB): '
                + ', '.join(f'{t} {n}' for t, n in sorted(counts.items())))
        if self.context.ok():
            self.get_logger().info(text)
        else:
            # After SIGINT the context is shut down and /rosout cannot take the line.
            print(f'[INFO] [{self.get_name()}]: {text}', flush=True)


def main(args=None) -> int:
    def create() -> SessionRecorder:
        try:
            return SessionRecorder()
        except RecordingError as error:
            raise RuntimeError(f'cannot record: {error}') from None
    return run_node(create, args, threads=2)


if __name__ == '__main__':
    sys.exit(main())
