"""A robot stack's action servers for the skill_bridge tests, run as a process of its own.

Serves ``navigate_to_pose`` (cecm_test_robot_msgs/action/NavigateToPose, Nav2's fields)
and ``grasp`` (GraspObject) as a robot would, with the outcome chosen by the goal:
x < 0 aborts (Nav2's error code 9000), x > 100 drives until canceled, any other pose
succeeds after three feedback messages; the object ``slippery`` "succeeds" with
``success: false``. Every goal and cancel is appended to the JSON-lines file named on
the command line, so the test sees exactly what the bridge asked for.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import rclpy
from cecm_test_robot_msgs.action import GraspObject, NavigateToPose
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.executors import MultiThreadedExecutor


class RobotStack:
    def __init__(self, node, log_path: str):
        self.node = node
        self.log_path = log_path
        self.lock = threading.Lock()
        ActionServer(node, NavigateToPose, 'navigate_to_pose', self.navigate,
                     goal_callback=lambda _: GoalResponse.ACCEPT,
                     cancel_callback=self.cancel)
        ActionServer(node, GraspObject, 'grasp', self.grasp,
                     goal_callback=lambda _: GoalResponse.ACCEPT,
                     cancel_callback=self.cancel)

    def record(self, **entry) -> None:
        with self.lock, open(self.log_path, 'a') as handle:
            handle.write(json.dumps(entry) + '\n')

    def cancel(self, goal_handle) -> CancelResponse:
        self.record(event='cancel')
        return CancelResponse.ACCEPT

    def navigate(self, goal_handle):
        pose = goal_handle.request.pose
        self.record(event='navigate', frame=pose.header.frame_id, x=pose.pose.position.x,
                    y=pose.pose.position.y, qz=pose.pose.orientation.z,
                    qw=pose.pose.orientation.w)
        result = NavigateToPose.Result()
        x = pose.pose.position.x
        remaining = 3
        while True:
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                self.record(event='navigate canceled')
                return result
            if x < 0:
                result.error_code, result.error_msg = 9000, 'no path to the goal'
                goal_handle.abort()
                return result
            if x <= 100 and remaining == 0:
                goal_handle.succeed()
                return result
            feedback = NavigateToPose.Feedback()
            feedback.distance_remaining = float(max(remaining, 0))
            goal_handle.publish_feedback(feedback)
            remaining -= 1
            time.sleep(0.2)

    def grasp(self, goal_handle):
        request = goal_handle.request
        self.record(event='grasp', object_id=request.object_id,
                    surface=request.support_surface, effort=request.max_effort)
        feedback = GraspObject.Feedback(progress=0.5, stage='closing')
        goal_handle.publish_feedback(feedback)
        time.sleep(0.2)
        goal_handle.succeed()
        return GraspObject.Result(success=request.object_id != 'slippery',
                                  message='slipped' if request.object_id == 'slippery'
                                  else 'holding')


def main() -> None:
    rclpy.init()
    node = rclpy.create_node('robot_stack')
    RobotStack(node, sys.argv[1])
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
