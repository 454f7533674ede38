"""Every node's health on ``/diagnostics``, as ROS tools read it (rqt_robot_monitor,
Foxglove's diagnostics panels, diagnostic_aggregator).

Once per ``diagnostics_period_s`` (1 s, the rate diagnostic_updater publishes at) a node
publishes a ``diagnostic_msgs/DiagnosticArray`` with its own ``DiagnosticStatus`` named
``<node>: health`` (diagnostic_updater's ``node: task`` form), hardware_id the node's
name (so that a panel that groups by it shows the manager's view of a node beside it):
its lifecycle state, when the lifecycle manager's heartbeat last asked it its state,
and the figures the node adds (:meth:`NodeDiagnostics.diagnostic_values`). Levels:
OK while the node serves (active, or a tool that runs), WARN while a lifecycle node is
not active, ERROR when it refuses to configure (a bad parameter) or says so itself.
A node that dies stops publishing; the lifecycle manager, which hears who answers its
heartbeat, publishes STALE for it (``lifecycle_manager: <node>``), as an aggregator
would once its status stops coming.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

DIAGNOSTICS_TOPIC = '/diagnostics'   # absolute: one topic whatever a node's namespace
# diagnostic_updater's publisher: reliable, volatile, the last few.
QOS_DIAGNOSTICS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)
OK, WARN, ERROR, STALE = (DiagnosticStatus.OK, DiagnosticStatus.WARN,
                          DiagnosticStatus.ERROR, DiagnosticStatus.STALE)


def diagnostic_status(name: str, level: bytes, message: str, values: Mapping[str, Any],
                      hardware_id: str) -> DiagnosticStatus:
    """A DiagnosticStatus; every value as text, as KeyValue carries it."""
    return DiagnosticStatus(level=level, name=name, message=message,
                            hardware_id=hardware_id,
                            values=[KeyValue(key=key, value=_text(value))
                                    for key, value in values.items()])


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        return f'{value:.3f}'
    return str(value)


def wall_time(seconds: float | None) -> str:
    """A time.time() value as ISO 8601 UTC, or 'never'."""
    if seconds is None:
        return 'never'
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec='milliseconds')


class NodeDiagnostics:
    """Mixed into an rclpy node (lifecycle or not) after DeclaredParameters's checks are
    started: call ``start_diagnostics()`` in ``__init__``. Subclasses add their figures
    in :meth:`diagnostic_values` and may change :meth:`health`."""

    def start_diagnostics(self) -> None:
        self.declare('diagnostics_period_s', 1.0,  # type: ignore[attr-defined]
                     'How often the node publishes its status on /diagnostics '
                     '(diagnostic_msgs/DiagnosticArray); 0 = never', low=0.0, high=60.0)
        self.heartbeat_at: float | None = None   # time.time() of the last get_state asked
        self._hook_heartbeat()
        self.diagnostics_pub = self.create_publisher(  # type: ignore[attr-defined]
            DiagnosticArray, DIAGNOSTICS_TOPIC, QOS_DIAGNOSTICS)
        period = self.param('diagnostics_period_s')  # type: ignore[attr-defined]
        if period > 0:
            self.create_timer(period, self.publish_diagnostics,  # type: ignore[attr-defined]
                              callback_group=MutuallyExclusiveCallbackGroup())

    def _hook_heartbeat(self) -> None:
        """Note each call of the node's lifecycle get_state service: the lifecycle
        manager's heartbeat asks it every heartbeat_period_s."""
        service = getattr(self, '_service_get_state', None)   # rclpy LifecycleNode's
        if service is None:
            return
        answer = service.callback

        def answered(request, response):
            self.heartbeat_at = time.time()
            return answer(request, response)
        service.callback = answered

    # ------------------------------------------------------------------ override
    def diagnostic_values(self) -> dict[str, Any]:
        """The node's own figures (key -> value), after the common ones."""
        return {}

    def lifecycle_label(self) -> str:
        machine = getattr(self, '_state_machine', None)   # rclpy LifecycleNode's
        if machine is None:
            return 'none (not a lifecycle node)'
        return machine.current_state[1]

    def health(self, label: str) -> tuple[bytes, str]:
        """(level, message) of the node's own status."""
        errors = getattr(self, 'parameter_errors', [])
        if errors:
            return ERROR, 'configure refused: ' + '; '.join(errors)
        if label in ('active', 'none (not a lifecycle node)'):
            return OK, 'active' if label == 'active' else 'running'
        return WARN, f'{label}: not serving'

    def diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """The statuses of one report: the node's own (the lifecycle manager adds one per
        managed node)."""
        label = self.lifecycle_label()
        level, message = self.health(label)
        beat = self.heartbeat_at
        values: dict[str, Any] = {
            'lifecycle_state': label,
            'last_heartbeat': wall_time(beat),
            'heartbeat_age_s': time.time() - beat if beat is not None else 'never',
            'pid': os.getpid(),
        }
        values.update(self.diagnostic_values())
        name = self.get_name()  # type: ignore[attr-defined]
        return [diagnostic_status(f'{name}: health', level, message, values, name)]

    def publish_diagnostics(self) -> None:
        try:
            msg = DiagnosticArray(status=self.diagnostic_statuses())
            msg.header.stamp = self.get_clock().now().to_msg()  # type: ignore[attr-defined]
            self.diagnostics_pub.publish(msg)
        except Exception as error:  # noqa: BLE001 - a report must never stop a node
            self.get_logger().debug(f'diagnostics: {error}')  # type: ignore[attr-defined]
