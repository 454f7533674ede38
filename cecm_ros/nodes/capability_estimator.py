"""capability_estimator: the robot's belief about its partner's capabilities.

EstimateCapabilities action server ``capability_estimator/estimate``: each goal carries
one observed TaskOutcome (goal + trajectory) and runs one update of the core estimator
(CE-CM with the SharedPlanEvaluator, CE-CM-Div, or a baseline: parameter ``method``). The belief is
published on ``capability_belief`` (transient local) at activation and after every
update, and can be saved and loaded (``~/save_belief``, ``~/load_belief``). An update
that fails leaves the belief exactly as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rclpy.action import ActionServer, CancelResponse, GoalResponse

from cecm_ros.action import EstimateCapabilities
from cecm_ros.core.errors import CecmError
from cecm_ros.core.estimator import (
    NODE_PARAMETERS,
    CapabilityBelief,
    EstimatorSettings,
    UpdateReport,
    make_estimator,
    settings_from_parameters,
)
from cecm_ros.core.planner import JointPlanner
from cecm_ros.core.session import evaluator_for
from cecm_ros.core.task_choice import choose_task
from cecm_ros.msg import CapabilityBelief as CapabilityBeliefMsg
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_LATCHED,
    CecmNode,
    StopRequestedError,
    finish_goal,
    run_node,
)
from cecm_ros.srv import LoadBelief, RankTasks, SaveBelief


class _CanceledError(Exception):
    pass


class CapabilityEstimator(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('capability_estimator', **kwargs)
        defaults = EstimatorSettings()
        self.declare_model_parameters()
        self.declare('method', 'cecm',
                     'Estimation method: cecm, cecm_div, optimistic or pessimistic')
        self.declare('inference', 'posterior',
                     "CE-CM's inference: 'posterior' (every hypothesis must explain every "
                     "task), 'paper' (Algorithm 1 as published) or 'sequential'")
        self.declare('samples', defaults.samples,
                     'CE-CM: particles (posterior) or capability vectors sampled per task')
        self.declare('prior', -1.0, 'CE-CM: Bernoulli prior P(c_i = 1); -1 = the '
                     f'inference preset\'s (posterior {defaults.prior}, paper and '
                     'sequential 0.8)')
        self.declare('epsilon', defaults.epsilon,
                     'CE-CM: a trajectory explains an observation below this distance')
        self.declare('psi', defaults.psi, 'Estimate threshold: c_i = 1 when theta_i > psi')
        self.declare('undecided', defaults.undecided,
                     'Posterior: estimate of capabilities the evidence leaves undecided: '
                     'absent, present, marginal (theta > psi) or mode')
        self.declare('sweeps', defaults.sweeps,
                     'Posterior: Metropolis moves per particle after each task')
        self.declare('coupling', defaults.coupling,
                     "Posterior: prior coupling of one room's capabilities (0 = independent)")
        self.declare('window', -1, 'Forget tasks older than this many (0 = never; -1 = the '
                     'inference preset\'s: sequential 1, others never)')
        self.declare('decay', 0.0, 'abc: weigh a sample from k tasks ago by decay**k '
                     '(0.0 = off)')
        self.declare('proposal', '', "abc: draw samples from the 'prior' or the current "
                     "'belief'; '' = the inference preset's")
        self.declare('proposal_floor', defaults.proposal_floor,
                     "abc with proposal 'belief': keep every P(c_i = 1) in [floor, 1 - floor]")
        self.declare('seed', 0, 'Seed of the sample draws (with the number of tasks seen)')
        self.declare('partner_id', 'partner', 'Identifier of the partner the belief is about')
        self.declare('belief_file', '',
                     "Belief JSON file: loaded on configure if it exists, saved after every "
                     "update ('' = none)")
        self.declare('planner_workers', 2, 'Planner worker processes for hypothesis plans')
        self.declare('planner_timeout_s', 30.0, 'Planner time limit per plan, in seconds')
        self.planner: JointPlanner | None = None
        self.estimator = None
        self.busy = False
        self.last_accepted_any = False
        self.cancel_requested = False

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        self.partner_id = self.param('partner_id')
        self.method = self.param('method')
        self.seed = self.param('seed')
        self.settings = self._settings()
        self.belief_file = self.param('belief_file')
        self.planner = JointPlanner(self.model, timeout_s=self.param('planner_timeout_s'),
                                    workers=self.param('planner_workers'))
        self.evaluator = evaluator_for(self.method, self.planner)
        belief = None
        if self.belief_file and Path(self.belief_file).is_file():
            belief = CapabilityBelief.load(self.belief_file)
        self.estimator = self._make_estimator(belief)
        self.belief_pub = self.create_lifecycle_publisher(
            CapabilityBeliefMsg, 'capability_belief', QOS_LATCHED)
        self._entities = [
            self.belief_pub,
            ActionServer(self, EstimateCapabilities, '~/estimate',
                         execute_callback=self._execute, goal_callback=self._on_goal,
                         cancel_callback=self._on_cancel, callback_group=self.group),
            self.create_service(SaveBelief, '~/save_belief',
                                self.guarded_service(self._on_save, 'save_belief'),
                                callback_group=self.group),
            self.create_service(LoadBelief, '~/load_belief',
                                self.guarded_service(self._on_load, 'load_belief'),
                                callback_group=self.group),
            self.create_service(RankTasks, '~/rank_tasks',
                                self.guarded_service(self._on_rank, 'rank_tasks'),
                                callback_group=self.group),
        ]
        origin = f'loaded from {self.belief_file}' if belief else 'fresh'
        settings = self.estimator.belief.settings
        variant = f' ({settings.variant} inference)' if self.method.startswith('cecm') else ''
        self.get_logger().info(
            f'{self.method}{variant} belief about {self.partner_id!r} ({origin}, '
            f'{self.estimator.belief.tasks_seen} tasks seen): N={settings.samples}, '
            f'prior={settings.prior:g}, epsilon={settings.epsilon:g}, '
            f'psi={settings.psi:g}, seed={self.seed}')

    def _settings(self) -> EstimatorSettings:
        """The estimator settings from the parameters (presets fill what is left open)."""
        return settings_from_parameters({name: self.param(name) for name in NODE_PARAMETERS})

    def activate(self) -> None:
        self._publish()

    def _make_estimator(self, belief: CapabilityBelief | None):
        return make_estimator(self.method, self.model, self.evaluator, self.settings,
                              seed=self.seed, belief=belief)

    def _publish(self) -> CapabilityBeliefMsg:
        msg = conv.belief_msg(self.model, self.estimator.belief, self.partner_id,
                              self.last_accepted_any, self.stamp())
        self.belief_pub.publish(msg)
        return msg

    # ------------------------------------------------------------------ updates
    def _on_goal(self, goal) -> GoalResponse:
        if not self.active:
            self.get_logger().warning('estimate goal rejected: not active')
            return GoalResponse.REJECT
        with self.locked():
            if self.busy:
                self.get_logger().warning('estimate goal rejected: an update is running')
                return GoalResponse.REJECT
            self.busy = True
            self.cancel_requested = False
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        self.cancel_requested = True
        return CancelResponse.ACCEPT

    def _execute(self, goal_handle) -> EstimateCapabilities.Result:
        outcome = goal_handle.request.outcome
        result = EstimateCapabilities.Result()
        try:
            report = self._update(goal_handle, outcome)
        except (conv.MessageError, CecmError, ValueError) as error:
            result.message = f'update failed, belief unchanged: {error}'
            self.get_logger().warning(f'task {outcome.task_id!r}: {result.message}')
            finish_goal(goal_handle.abort)
        except _CanceledError:
            result.message = 'canceled, belief unchanged'
            finish_goal(goal_handle.canceled)
        except StopRequestedError as stopped:
            result.message = f'{stopped}; belief unchanged'
            finish_goal(goal_handle.abort)
        except Exception as error:  # noqa: BLE001 - keep serving; the belief is restored
            result.message = f'update failed, belief unchanged: {error}'
            self.get_logger().error(f'task {outcome.task_id!r}: {result.message}')
            finish_goal(goal_handle.abort)
        else:
            result.belief = self._publish()
            result.updated = report.updated
            result.samples_evaluated = report.samples_evaluated
            result.samples_accepted = report.samples_accepted
            result.message = report.message
            self._autosave()
            self.get_logger().info(
                f'task {outcome.task_id}: {report.message}; estimate lacks '
                f'{self.model.catalog.describe_missing(self.estimator.estimate)} '
                f'({self.estimator.belief.tasks_seen} tasks seen)')
            finish_goal(goal_handle.succeed)
        finally:
            with self.locked():
                self.busy = False
        if not result.belief.capability_names:
            result.belief = conv.belief_msg(self.model, self.estimator.belief,
                                            self.partner_id, self.last_accepted_any,
                                            self.stamp())
        return result

    def _update(self, goal_handle, outcome) -> UpdateReport:
        task, trajectory = conv.outcome_from_msg(self.model, outcome)
        if outcome.partner_id and outcome.partner_id != self.partner_id:
            raise conv.MessageError(f'the outcome is about partner {outcome.partner_id!r}, '
                                    f'this belief is about {self.partner_id!r}')
        total = self.settings.samples

        def progress(done: int, of: int) -> None:
            if self.stopping.is_set():
                raise StopRequestedError()
            if not self.active:
                raise StopRequestedError('capability_estimator was deactivated')
            if self.cancel_requested:
                raise _CanceledError()
            goal_handle.publish_feedback(EstimateCapabilities.Feedback(
                samples_evaluated=done, samples_total=of))

        snapshot = self.estimator.belief.copy()
        self.get_logger().info(f'task {task.task_id}: updating with a trajectory of '
                               f'{len(trajectory)} states ({total} samples)')
        try:
            report = self.estimator.update(task, trajectory, progress)
        except BaseException:
            self.estimator.belief = snapshot
            raise
        self.last_accepted_any = report.samples_accepted > 0
        goal_handle.publish_feedback(EstimateCapabilities.Feedback(
            samples_evaluated=report.samples_evaluated, samples_total=report.samples_evaluated,
            samples_accepted=report.samples_accepted))
        return report

    def _autosave(self) -> None:
        if not self.belief_file:
            return
        try:
            self.estimator.belief.save(self.belief_file)
        except OSError as error:
            self.get_logger().warning(f'cannot save the belief to {self.belief_file}: {error}')

    # ----------------------------------------------------------------- services
    def _on_save(self, request: SaveBelief.Request, response: SaveBelief.Response):
        path = request.path or self.belief_file
        if not path:
            response.success, response.message = False, 'no path given and no belief_file set'
            return response
        with self.locked():
            belief = self.estimator.belief.copy()
        try:
            belief.save(path)
        except OSError as error:
            response.success, response.message = False, f'cannot save to {path}: {error}'
            self.get_logger().warning(response.message)
            return response
        response.success, response.message = True, f'belief saved to {path}'
        self.get_logger().info(response.message)
        return response

    def _on_rank(self, request: RankTasks.Request, response: RankTasks.Response):
        if not self.active:
            response.success, response.message = False, 'capability_estimator is not active'
            return response
        try:
            candidates = [conv.task_from_msg(self.model, task) for task in request.candidates]
            if not candidates:
                raise conv.MessageError('no candidate tasks given')
            with self.locked():
                estimator = self.estimator
            vectors, weights = estimator.hypotheses()
            choice = choose_task(candidates, vectors, weights, self.evaluator,
                                 estimator.belief.settings.epsilon)
        except (CecmError, ValueError) as error:
            response.success, response.message = False, str(error)
            self.get_logger().warning(f'rank_tasks: {error}')
            return response
        response.success = True
        response.best = choice.index
        response.information = [float(x) for x in choice.information] or [0.0]
        bits = response.information[choice.index]
        response.message = (f'{candidates[choice.index].task_id} is the most informative of '
                            f'{len(candidates)} candidates ({bits:.2f} bits)')
        self.get_logger().info(f'rank_tasks: {response.message}')
        return response

    def _on_load(self, request: LoadBelief.Request, response: LoadBelief.Response):
        with self.locked():
            if self.busy:
                response.success, response.message = False, 'an update is running; try later'
                return response
            self.busy = True
        try:
            belief = CapabilityBelief.load(request.path)
            self.estimator = self._make_estimator(belief)
        except (CecmError, ValueError) as error:
            response.success = False
            response.message = f'belief unchanged: {error}'
            self.get_logger().warning(f'load_belief {request.path!r}: {response.message}')
            return response
        finally:
            with self.locked():
                self.busy = False
        self._publish()
        response.success = True
        response.message = (f'loaded {belief.method} belief from {request.path} '
                            f'({belief.tasks_seen} tasks seen)')
        self.get_logger().info(response.message)
        return response


def main(args=None) -> int:
    return run_node(CapabilityEstimator, args)


if __name__ == '__main__':
    sys.exit(main())
