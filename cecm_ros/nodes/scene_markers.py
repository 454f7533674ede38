"""scene_markers: the session as RViz and Foxglove show it (``visualization_msgs/
MarkerArray`` on ``markers``).

It draws what the web panel draws, from the same messages: the domain's places and
objects as its panel view lays them out (``scene``), the agents, the robot's next action
(the open intent, or the answer the executor accepted instead) with an arrow to the
place it goes to, the joint plan still to come with the robot's route, and the belief:
one bar per capability, its length the probability, its colour what the evidence has
decided. Every message is checked as the graph's nodes check it (conversions); one that
does not fit is a warning and changes nothing. Markers are published latched, at most
``max_rate_hz`` times a second, each array complete (a DELETEALL first).

Not a lifecycle node: like session_recorder it is a tool that runs until stopped.
"""

from __future__ import annotations

import sys
import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from visualization_msgs.msg import MarkerArray

from cecm_ros.core.domain import NOOP
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import panel_view_for
from cecm_ros.msg import (
    CapabilityBelief,
    CorrectionStatus,
    JointPlan,
    RobotIntent,
    StepResult,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED, QOS_TEAM_STATE, not_empty, run_node
from cecm_ros.nodes.diagnostics import NodeDiagnostics
from cecm_ros.nodes.domain_parameters import DomainParameters
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.markers import Picture, marker_array
from cecm_ros.nodes.parameters import DeclaredParameters


class SceneMarkers(BoundedLogging, DomainParameters, NodeDiagnostics, DeclaredParameters, Node):
    PARAMETER_REFUSED = 'does not start'

    def __init__(self, **kwargs):
        super().__init__('scene_markers', **kwargs)
        self.start_parameter_checks()
        self.declare('frame_id', 'map', 'The frame of every marker (set RViz\'s fixed frame '
                     'to it)', check=not_empty)
        self.declare('max_rate_hz', 5.0, 'At most this many marker arrays a second',
                     low=0.1, high=100.0)
        self.declare_model_parameters()
        if self.parameter_errors:
            raise CecmError('; '.join(self.parameter_errors))
        self.start_diagnostics()
        self.model = self.load_model()
        self.view = panel_view_for(self.model)
        self._lock = threading.Lock()
        self.team_states = conv.TeamStates(self.model)
        self.task: TaskRequest | None = None
        self.last_task = ''           # the task of the newest team state
        self.intent: RobotIntent | None = None
        self.answer: CorrectionStatus | None = None
        self.plan: tuple[JointPlan, int] | None = None   # the plan, its first step
        self.belief: CapabilityBelief | None = None
        self.changed = False
        self.published = 0
        self.finished = Future()
        self.exit_code = 0
        self.markers_pub = self.create_publisher(MarkerArray, 'markers', QOS_LATCHED)
        for kind, topic, qos, callback in (
                (TeamState, 'team_state', QOS_TEAM_STATE, self._on_team_state),
                (TaskRequest, 'task/request', QOS_LATCHED, self._on_task),
                (RobotIntent, 'robot/intent', QOS_EVENTS, self._on_intent),
                (CorrectionStatus, 'robot/correction_status', QOS_EVENTS, self._on_answer),
                (StepResult, 'robot/step_result', QOS_EVENTS, self._on_step),
                (JointPlan, 'robot/joint_plan', QOS_LATCHED, self._on_plan),
                (CapabilityBelief, 'capability_belief', QOS_LATCHED, self._on_belief)):
            self.create_subscription(kind, topic, self._checked(callback, topic), qos)
        self.create_timer(1.0 / self.param('max_rate_hz'), self._publish,
                          callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f'drawing domain {self.model.describe()} on markers '
                               f'(frame {self.param("frame_id")!r})')

    # run_node's process-exit hooks: nothing to release.
    def request_stop(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _checked(self, callback, topic: str):
        def take(msg) -> None:
            try:
                with self._lock:
                    self.changed = callback(msg) is not False or self.changed
            except CecmError as error:   # the conversions' MessageError, among others
                self.get_logger().warning(f'ignoring {topic}: {error}')
        return take

    # ------------------------------------------------------------------ topics
    def _on_team_state(self, msg: TeamState) -> bool:
        self.last_task = msg.task_id
        return self.team_states.add(msg)

    def _on_task(self, msg: TaskRequest) -> None:
        conv.task_from_msg(self.model, msg)
        if self.task is not None and self.task.task_id == msg.task_id and \
                self.task.attempt != msg.attempt:
            self.team_states.restart(msg.task_id)   # run again from its start
        self.task = msg
        self.team_states.current = msg.task_id

    def _on_intent(self, msg: RobotIntent) -> None:
        conv.intent_from_msg(self.model, msg)
        self.intent, self.answer = msg, None

    def _on_answer(self, msg: CorrectionStatus) -> bool:
        intent = self.intent
        if not msg.accepted or intent is None or \
                (msg.task_id, msg.step) != (intent.task_id, intent.step):
            return False
        conv.answer_action(self.model, msg.corrected_action)
        self.answer = msg
        return True

    def _on_step(self, msg: StepResult) -> None:
        conv.step_result_action(self.model, msg)
        if self.intent is not None and (msg.task_id, msg.step) == \
                (self.intent.task_id, self.intent.step):
            self.intent = self.answer = None

    def _on_plan(self, msg: JointPlan) -> None:
        conv.plan_from_msg(self.model, msg)
        self.plan = (msg, self.team_states.latest(msg.task_id) or 0)

    def _on_belief(self, msg: CapabilityBelief) -> bool:
        conv.estimate_from_belief_msg(self.model.catalog, msg)
        if self.belief is not None and conv.stamped_before(msg, self.belief):
            return False
        self.belief = msg
        return True

    # ---------------------------------------------------------------- markers
    def picture(self) -> Picture | None:
        """What to draw now (under the lock); None before any team state."""
        task_id = self.task.task_id if self.task is not None and \
            self.team_states.steps(self.task.task_id) else self.last_task
        step = self.team_states.latest(task_id)
        if step is None:
            return None
        state = conv.state_from_team_state(self.model, self.team_states.steps(task_id)[step])
        picture = Picture(self.view.scene(state), title=f'task {task_id}, step {step}',
                          belief=self.belief)
        intent = self.intent
        if intent is not None and intent.task_id == task_id:
            action = self.answer.corrected_action if self.answer is not None else intent.action
            picture.next_action = conv.canonical_action(self.model, action)
        if self.plan is not None and self.plan[0].task_id == task_id:
            plan, first = self.plan
            done = max(0, step - first)
            picture.plan = [(s.robot_action or NOOP, s.human_action or NOOP)
                            for s in plan.steps[done:]]
            picture.plan_first_step = first + done
        return picture

    def _publish(self) -> None:
        with self._lock:
            if not self.changed:
                return
            self.changed = False
            try:
                picture = self.picture()
            except CecmError as error:
                self.get_logger().warning(f'cannot draw the scene: {error}')
                return
        if picture is not None:
            self.markers_pub.publish(marker_array(picture, self.param('frame_id'),
                                                  self.get_clock().now().to_msg()))
            self.published += 1

    def diagnostic_values(self) -> dict:
        return {'marker_arrays_published': self.published,
                'task': self.task.task_id if self.task is not None else 'none',
                'belief_heard': self.belief is not None}


def main(args=None) -> int:
    return run_node(SceneMarkers, args, threads=2)


if __name__ == '__main__':
    sys.exit(main())
