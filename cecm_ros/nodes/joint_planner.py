"""joint_planner: capability-conditioned joint planning as a service.

Service ``plan_task`` (PlanTask): plans the task with the domain's planner under an
explicit capability spec when the request gives one, else under the latest
``capability_belief`` estimate (use_belief) or for a fully capable partner. Every plan
it returns is also published on ``joint_plan``. A bad request, an unsolvable task or a
planner timeout gives success=false with the reason; the node keeps serving.
"""

from __future__ import annotations

import sys

from cecm_ros.core.domain import Planner
from cecm_ros.core.errors import (
    CecmError,
    PlannerTimeoutError,
    PlanningError,
    UnsolvableTaskError,
)
from cecm_ros.domains import planner_for
from cecm_ros.msg import CapabilityBelief, JointPlan
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import QOS_LATCHED, CecmNode, run_node
from cecm_ros.srv import PlanTask


class JointPlannerNode(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('joint_planner', **kwargs)
        self.declare_model_parameters()
        self.declare_plan_store()
        self.declare('planner_timeout_s', 30.0, 'Planner time limit per plan, in seconds',
                     low=0.001, high=3600.0)
        self.declare('planner_workers', 1, 'Planner worker processes (parallel requests)',
                     low=1, high=64)
        self.planner: Planner | None = None
        self.estimate = None
        self.belief: CapabilityBelief | None = None   # the message the estimate came from
        self.belief_source = ''
        # /diagnostics: plan requests at work (beyond planner_workers they wait), and
        # how many ran out of time or failed.
        self.requests_open = self.timeouts = self.failures = 0

    def configure(self) -> None:
        self.model = self.load_model()
        self.planner = planner_for(self.model, timeout_s=self.param('planner_timeout_s'),
                                          workers=self.param('planner_workers'),
                                          **self.planner_options())
        self.plan_pub = self.create_lifecycle_publisher(JointPlan, 'joint_plan', QOS_LATCHED)
        self._entities = [
            self.plan_pub,
            self.create_subscription(CapabilityBelief, 'capability_belief',
                                     self.guarded(self._on_belief, 'capability_belief'),
                                     QOS_LATCHED, callback_group=self.group),
            self.create_service(PlanTask, 'plan_task',
                                self.guarded_service(self._counted, 'plan_task'),
                                callback_group=self.group),
        ]
        self.get_logger().info(
            f'domain {self.model.describe()}, {len(self.model.catalog)} '
            f'capabilities, timeout {self.param("planner_timeout_s"):g} s, '
            f'{self.param("planner_workers")} planner worker(s)')

    def _on_belief(self, msg: CapabilityBelief) -> None:
        try:
            estimate = conv.estimate_from_belief_msg(self.model.catalog, msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring belief: {error}')
            return
        if self.belief is not None and conv.stamped_before(msg, self.belief):
            self.get_logger().warning(
                f'ignoring belief of {msg.partner_id!r} after {msg.tasks_seen} tasks: it is '
                'older than the one planned with (out of order)')
            return
        self.belief = msg
        self.estimate = estimate
        self.belief_source = f'{msg.method} belief of {msg.partner_id!r} after ' \
                             f'{msg.tasks_seen} tasks'
        self.get_logger().info(f'planning under the {self.belief_source}: lacks '
                               f'{self.model.catalog.describe_missing(estimate)}')

    def _counted(self, request: PlanTask.Request, response: PlanTask.Response):
        with self.locked():
            self.requests_open += 1
        try:
            return self._on_plan(request, response)
        finally:
            with self.locked():
                self.requests_open -= 1

    def diagnostic_values(self) -> dict:
        planner = self.planner
        workers = self.param('planner_workers')
        return {'requests_open': self.requests_open,
                'requests_queued': max(0, self.requests_open - workers),
                'planner_workers': workers,
                'planner_timeout_s': self.param('planner_timeout_s'),
                'timeouts': self.timeouts, 'failures': self.failures,
                'plans_made': getattr(planner, 'calls', 0),
                'plans_from_store': getattr(planner, 'store_hits', 0),
                'planning_under': self.belief_source or 'no belief yet'}

    def _on_plan(self, request: PlanTask.Request, response: PlanTask.Response):
        catalog = self.model.catalog
        task_id = request.task.task_id
        if not self.active:
            response.success, response.message = False, 'joint_planner is not active'
            return response
        try:
            task = conv.task_from_msg(self.model, request.task)
            if request.capabilities.strip():
                vector = catalog.resolve(request.capabilities.strip())
                planned_for = 'explicit'
            elif request.use_belief and self.estimate is not None:
                vector, planned_for = self.estimate, 'belief'
            else:
                if request.use_belief:
                    self.get_logger().warning(
                        f'task {task_id}: no capability_belief received yet; planning for '
                        'a fully capable partner')
                vector, planned_for = catalog.all_capable(), 'full'
            if planned_for == 'belief':
                # The same fallback as the core's robot: when the estimate makes the goal
                # unreachable (the partner holds an item it "cannot" place), plan as if
                # the partner were fully capable.
                plan, relaxed = self.planner.plan_under_estimate(task, vector)
                if relaxed:
                    self.get_logger().warning(
                        f'task {task_id}: unreachable under the belief from this state; '
                        'planned for a fully capable partner instead')
                    vector, planned_for = catalog.all_capable(), 'full'
            else:
                plan = self.planner.plan(task, vector)
        except CecmError as error:
            with self.locked():
                if isinstance(error, PlannerTimeoutError):
                    self.timeouts += 1
                else:
                    self.failures += 1
            self.get_logger().warning(f'plan_task {task_id!r} failed: {error}')
            response.success, response.message = False, str(error)
            # A search that crashed or ran out of time may succeed when asked again; a
            # goal that cannot be reached, or a malformed request, will not.
            response.retry = (isinstance(error, PlanningError)
                              and not isinstance(error, UnsolvableTaskError))
            return response
        response.plan = conv.plan_msg(plan, catalog, vector, planned_for, self.stamp())
        response.success = True
        response.message = (f'{len(plan.steps)} joint steps, cost {plan.cost:g}, planned for '
                            f'{planned_for} ({catalog.format_vector(vector)})')
        self.plan_pub.publish(response.plan)
        self.get_logger().info(f'plan_task {task_id}: {response.message} in '
                               f'{plan.planning_time_s:.2f} s')
        return response


def main(args=None) -> int:
    return run_node(JointPlannerNode, args)


if __name__ == '__main__':
    sys.exit(main())
