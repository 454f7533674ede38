"""A simulated robot's own action servers, driving world_sim, for the robot-stack test.

A robot stack knows nothing of cecm_ros: it serves ``navigate_to_pose``
(NavigateToPose), ``grasp`` (GraspObject) and ``manipulate`` (ManipulateObject: place
or wash) as a robot would, each goal taking its time (feedback on the way) and failing
now and then as a real one does (Nav2's error 9000, a grasp that slips). Here the robot
is a simulated one: a goal that succeeds becomes the domain's action on world_sim's
robot skill servers (``--world-skills``/<kind>), the pose's room and the surface's room
read back from the same mapping file skill_bridge reads; one that fails leaves the
world as it was. Which goals fail comes from ``--seed`` (its own stream, in the order
the goals come). Every goal and its outcome is appended to the JSON-lines ``--log``.

    python sim_robot_stack.py --mapping skills.yaml --log robot.jsonl --failure 0.15
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time

import rclpy
from cecm_test_robot_msgs.action import GraspObject, ManipulateObject, NavigateToPose
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor

from cecm_ros.action import ExecuteSkill
from cecm_ros.msg import TaskRequest, TeamState
from cecm_ros.nodes.common import QOS_LATCHED, QOS_TEAM_STATE
from cecm_ros.nodes.skill_mapping import load_mapping

FEEDBACKS = 3   # feedback messages per goal, spread over its duration


class SimRobotStack:
    def __init__(self, node, options):
        self.node = node
        self.options = options
        self.lock = threading.Lock()
        self.rng = random.Random(options.seed)
        tables = load_mapping(options.mapping).tables
        self.room_at = {(round(row['x'], 3), round(row['y'], 3)): room
                        for room, row in tables['rooms'].items()}
        self.room_of_surface = {surface: room for room, surface in tables['surfaces'].items()}
        self.run = ('', 0)         # the task and attempt the world runs
        self.robot_room = ''
        group = ReentrantCallbackGroup()
        node.create_subscription(TaskRequest, 'task/request', self.on_task, QOS_LATCHED,
                                 callback_group=group)
        node.create_subscription(TeamState, 'world_state', self.on_world, QOS_TEAM_STATE,
                                 callback_group=group)
        self.world = {kind: ActionClient(node, ExecuteSkill,
                                         f'{options.world_skills}/{kind}',
                                         callback_group=group)
                      for kind in ('move', 'pick', 'place', 'wash')}
        for action_type, name, callback in (
                (NavigateToPose, 'navigate_to_pose', self.navigate),
                (GraspObject, 'grasp', self.grasp),
                (ManipulateObject, 'manipulate', self.manipulate)):
            ActionServer(node, action_type, name, callback, callback_group=group,
                         goal_callback=lambda _: GoalResponse.ACCEPT,
                         cancel_callback=lambda _: CancelResponse.ACCEPT)

    # ------------------------------------------------------------------ topics
    def on_task(self, msg: TaskRequest) -> None:
        with self.lock:
            self.run = (msg.task_id, msg.attempt)

    def on_world(self, msg: TeamState) -> None:
        for fact in msg.true_propositions:
            parts = fact.strip('()').split()
            if parts[:2] == ['agent-at', 'robot']:
                with self.lock:
                    self.robot_room = parts[2]

    def record(self, **entry) -> None:
        with self.lock, open(self.options.log, 'a') as handle:
            handle.write(json.dumps(entry) + '\n')

    # ------------------------------------------------------------------ skills
    def take_time(self, goal_handle, feedback) -> bool:
        """The goal's duration, with feedback; False when it was canceled meanwhile."""
        for index in range(FEEDBACKS):
            if goal_handle.is_cancel_requested:
                return False
            goal_handle.publish_feedback(feedback(index))
            time.sleep(self.options.duration / FEEDBACKS)
        return not goal_handle.is_cancel_requested

    def fails(self) -> bool:
        with self.lock:
            return self.rng.random() < self.options.failure

    def apply(self, kind: str, action: str) -> bool:
        """The action on the simulated world (world_sim's robot skill): whether it ran."""
        with self.lock:
            task_id, attempt = self.run
        client = self.world[kind]
        if not client.wait_for_server(timeout_sec=10.0):
            return False
        done = threading.Event()
        future = client.send_goal_async(ExecuteSkill.Goal(task_id=task_id, attempt=attempt,
                                                          action=action))
        future.add_done_callback(lambda _: done.set())
        if not done.wait(30.0) or not future.result().accepted:
            return False
        result = future.result().get_result_async()
        ended = threading.Event()
        result.add_done_callback(lambda _: ended.set())
        return ended.wait(60.0) and bool(result.result().result.success)

    def navigate(self, goal_handle):
        pose = goal_handle.request.pose.pose
        target = self.room_at.get((round(pose.position.x, 3), round(pose.position.y, 3)))
        result = NavigateToPose.Result()

        def feedback(index):
            return NavigateToPose.Feedback(distance_remaining=float(FEEDBACKS - index))

        if not self.take_time(goal_handle, feedback):
            goal_handle.canceled()
            return result
        with self.lock:
            origin = self.robot_room
        failed = self.fails()
        # A robot asked to drive where it is arrives at once (the executor, seeing the
        # world late, may ask so).
        ran = not failed and target is not None and (
            target == origin or self.apply('move', f'(move robot {origin} {target})'))
        self.record(event='navigate', room=target, origin=origin, failed=failed, ran=ran)
        if not ran:
            result.error_code, result.error_msg = 9000, 'no path to the goal'
            goal_handle.abort()
            return result
        goal_handle.succeed()
        return result

    def grasp(self, goal_handle):
        request = goal_handle.request
        room = self.room_of_surface.get(request.support_surface, '')
        if not self.take_time(goal_handle, lambda i: GraspObject.Feedback(
                progress=(i + 1) / FEEDBACKS, stage='closing')):
            goal_handle.canceled()
            return GraspObject.Result()
        failed = self.fails()
        ran = not failed and self.apply('pick', f'(pick robot {request.object_id} {room})')
        self.record(event='grasp', object_id=request.object_id, room=room, failed=failed,
                    ran=ran)
        goal_handle.succeed()
        return GraspObject.Result(success=ran, message='holding' if ran else 'slipped')

    def manipulate(self, goal_handle):
        request = goal_handle.request
        room = self.room_of_surface.get(request.support_surface, '')
        if not self.take_time(goal_handle, lambda i: ManipulateObject.Feedback(
                progress=(i + 1) / FEEDBACKS)):
            goal_handle.canceled()
            return ManipulateObject.Result()
        failed = self.fails()
        ran = not failed and request.operation in ('place', 'wash') and self.apply(
            request.operation, f'({request.operation} robot {request.object_id} {room})')
        self.record(event=request.operation, object_id=request.object_id, room=room,
                    failed=failed, ran=ran)
        goal_handle.succeed()
        return ManipulateObject.Result(success=ran, message='done' if ran else 'dropped')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mapping', required=True, help="skill_bridge's mapping file")
    parser.add_argument('--log', required=True, help='JSON-lines log of the goals')
    parser.add_argument('--world-skills', default='sim/robot/skills',
                        help="world_sim's robot skill namespace")
    parser.add_argument('--duration', type=float, default=0.3, help='seconds per goal')
    parser.add_argument('--failure', type=float, default=0.0, help='chance a goal fails')
    parser.add_argument('--seed', type=int, default=0, help='seed of the failures')
    options = parser.parse_args()
    rclpy.init()
    node = rclpy.create_node('sim_robot_stack')
    SimRobotStack(node, options)
    executor = MultiThreadedExecutor(num_threads=6)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
