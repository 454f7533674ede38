"""capability_estimator: the robot's belief about its partner's capabilities.

EstimateCapabilities action server ``capability_estimator/estimate``: each goal carries
one observed TaskOutcome (goal + trajectory) and runs one update of the core estimator
(CE-CM's posterior by default, the paper's or the sequential reading, CE-CM-Div, or a
baseline). The belief of partner ``partner_id`` lives in the partner store
(``store_path``, SQLite): it is loaded at configure, and every update is committed there
together with its task-log entry in one transaction. An outcome of a session's task that
is logged already is answered from the log and not counted again. The belief is
published on ``capability_belief`` (transient local) at activation and after every
change. Profile services list, export, reset and delete partners; ``rank_tasks`` scores
candidate tasks by expected information gain. A failed update leaves the belief, in
memory and in the store, exactly as it was.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import Future
from contextlib import nullcontext

from rclpy.action import ActionServer, CancelResponse, GoalResponse

from cecm_ros.action import EstimateCapabilities
from cecm_ros.core.domain import Planner
from cecm_ros.core.errors import CecmError, PlannerTimeoutError, PlanningError
from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.estimator_settings import SETTINGS
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.likelihood import likelihood_help
from cecm_ros.core.partner_store import LogEntry, PartnerStore
from cecm_ros.core.storage import write_atomically
from cecm_ros.core.task_choice import choose_task, ranking_key
from cecm_ros.domains import planner_for
from cecm_ros.msg import CapabilityBelief as CapabilityBeliefMsg
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import (
    QOS_LATCHED,
    CecmNode,
    StopRequestedError,
    finish_goal,
    not_empty,
    run_node,
)
from cecm_ros.nodes.diagnostics import wall_time
from cecm_ros.nodes.partner_queries import list_partners, session_progress
from cecm_ros.nodes.running_task import RunningTask
from cecm_ros.session.estimator_parameters import (
    NODE_PARAMETERS,
    parameter_description,
    parameter_range,
    settings_from_parameters,
)
from cecm_ros.session.plan_ahead import PlanAhead
from cecm_ros.srv import (
    ListPartners,
    LoadBelief,
    PartnerCommand,
    RankTasks,
    SaveBelief,
    SessionProgress,
)

METHODS = ('cecm', 'cecm_div', 'optimistic', 'pessimistic')
MEMORY = 'memory'   # store_path for a store kept in memory (ros2 launch refuses '')


class _CanceledError(Exception):
    pass


def _ray_address_check(value: str) -> str:
    """An address of a form the planner takes (whether a cluster answers there is seen
    at configure)."""
    if not value.strip():
        return ''
    from cecm_ros.cluster.ray_searches import parse_address
    try:
        parse_address(value)
    except CecmError as error:
        return str(error)
    return ''


class CapabilityEstimator(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('capability_estimator', **kwargs)
        self.declare_model_parameters()
        self.declare('method', 'cecm', 'Estimation method', choices=METHODS)
        # The estimator's settings, each as the one schema declares it
        # (core/estimator_settings.py; their ROS form: session/estimator_parameters.py).
        for name, spec in SETTINGS.items():
            description = parameter_description(spec)
            if name == 'likelihood':
                description += f' ({likelihood_help()}; usage in every built-in domain)'
            self.declare(name, NODE_PARAMETERS[name], description, **parameter_range(spec))
        self.declare('seed', 0, 'Seed of the sample draws (with the number of tasks seen)',
                     low=0, high=2**31 - 1)
        self.declare('partner_id', 'partner', 'The partner whose belief this node keeps',
                     check=not_empty)
        self.declare('store_path', '',
                     "Partner store (SQLite) that keeps every partner's belief and task log; "
                     "'~' is expanded, '{domain}' becomes the domain's name (a store per "
                     "domain); '' or 'memory' = in memory only (lost at exit)")
        self.declare('planner_workers', 2, 'Parallel planner runs for hypothesis plans',
                     low=1, high=64)
        self.declare_plan_store()
        self.declare('ray_address', '',
                     "Run the planner's searches (hypotheses, ranking) as Ray tasks on the "
                     'cluster at this address: auto, HOST:PORT, ray://HOST:PORT or local:N (a '
                     "head of N CPUs in this process); '' = in this process. Plans and beliefs "
                     'are the same',
                     check=_ray_address_check)
        self.declare('planner_timeout_s', 30.0, 'Planner time limit per plan, in seconds',
                     low=0.001, high=3600.0)
        self.declare('rank_budget_s', 20.0, 'About how long rank_tasks plans; then it scores '
                     'on the hypotheses planned so far (0 = all)', low=0.0, high=3600.0)
        self.declare('plan_ahead', True, "Plan the running task's hypotheses while the team "
                     'works (task/request, team_state), so its update finds them made')
        self.ahead: PlanAhead | None = None
        self.planner: Planner | None = None
        self.store: PartnerStore | None = None
        self.estimator = None
        self.busy = False
        self.last_accepted_any = False
        self.cancel_requested = False
        # Rankings at work, by what they rank: a request sent again while its first copy
        # is still at work (the task manager re-sends after a minute; a cold Overcooked
        # ranking plans for minutes) waits for that one instead of planning it all again.
        self.rankings: dict[str, Future] = {}

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        self.model = self.load_model()
        self.partner_id = self.param('partner_id').strip()
        if not self.partner_id:
            raise ValueError("partner_id must not be empty")
        self.method = self.param('method')
        self.seed = self.param('seed')
        self.settings = self._settings()
        path = self.param('store_path').strip()
        if path in ('', MEMORY):
            path = ''
        self.store = PartnerStore(
            _expand(path).replace('{domain}', self.model.name) if path else ':memory:')
        self.planner = planner_for(self.model, timeout_s=self.param('planner_timeout_s'),
                                          workers=self.param('planner_workers'),
                                          ray_address=self.param('ray_address'),
                                          **self.planner_options())
        self.evaluator = evaluator_for(self.method, self.planner)
        if self.param('plan_ahead'):
            self.ahead = PlanAhead(self.get_logger().warning, lambda: getattr(
                self.planner, 'calls', 0) + getattr(self.planner, 'store_hits', 0),
                lambda: self.active)
            self._entities += RunningTask(self, self.model, self._want_ahead).entities
        belief = self.store.load(self.partner_id)
        try:
            self.estimator = self._make_estimator(belief)
        except CecmError as error:
            raise ValueError(f'the stored belief of partner {self.partner_id!r} cannot be '
                             f'continued here: {error} (reset_partner starts it over)') from None
        if belief is None:
            self.store.save(self.partner_id, self.estimator.belief)
        self.belief_pub = self.create_lifecycle_publisher(
            CapabilityBeliefMsg, 'capability_belief', QOS_LATCHED)
        services = (
            (SaveBelief, '~/save_belief', self._on_save),
            (LoadBelief, '~/load_belief', self._on_load),
            (RankTasks, '~/rank_tasks', self._on_rank),
            (ListPartners, '~/list_partners', self._on_list),
            (PartnerCommand, '~/export_partner', self._on_export),
            (PartnerCommand, '~/reset_partner', self._on_reset),
            (PartnerCommand, '~/delete_partner', self._on_delete),
            (SessionProgress, '~/session_progress', self._on_progress),
        )
        self._entities += [
            self.belief_pub,
            ActionServer(self, EstimateCapabilities, '~/estimate',
                         execute_callback=self._execute, goal_callback=self._on_goal,
                         cancel_callback=self._on_cancel, callback_group=self.group),
            *[self.create_service(kind, name, self.guarded_service(callback, name[2:]),
                                  callback_group=self.group)
              for kind, name, callback in services],
        ]
        belief = self.estimator.belief
        origin = (f'resumed from {path or "memory"}' if belief.tasks_seen
                  else f'new, kept in {path or "memory only"}')
        variant = f' ({belief.settings.variant} inference)' \
            if self.method.startswith('cecm') else ''
        self.get_logger().info(
            f'{self.method}{variant} belief about {self.partner_id!r} ({origin}, '
            f'{belief.tasks_seen} tasks seen): N={belief.settings.samples}, '
            f'prior={belief.settings.prior:g}, epsilon={belief.settings.epsilon:g}, '
            f'seed={belief.seed}' + (f', likelihood {belief.settings.likelihood} (lapse '
                                     f'{belief.settings.likelihood_form().lapse:g})'
                                     if belief.settings.weighted else ''))

    def teardown(self) -> None:
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            ahead.close()
        store, self.store = self.store, None
        if store is not None:
            store.close()
        super().teardown()

    def check_parameters(self, changes: dict) -> str:
        """The estimator settings must make sense together (e.g. epsilon > 0, not both
        window and decay), as EstimatorSettings requires, before any value is taken."""
        if not set(changes) & set(NODE_PARAMETERS):
            return ''
        values = {name: changes[name] if name in changes else
                  self.param(name) if self.has_parameter(name) else default
                  for name, default in NODE_PARAMETERS.items()}
        try:
            settings_from_parameters(values, self._default_epsilon())
        except CecmError as error:
            return f'estimator settings: {error}'
        return ''

    def _settings(self) -> EstimatorSettings:
        """The estimator settings from the parameters (presets fill what is left open)."""
        return settings_from_parameters({name: self.param(name) for name in NODE_PARAMETERS},
                                        self._default_epsilon())

    def _default_epsilon(self) -> float | None:
        try:
            return self.load_model().default_epsilon
        except CecmError:
            return None

    def activate(self) -> None:
        self._publish()

    def _want_ahead(self, task, states, run) -> None:
        ahead = self.ahead
        if ahead is not None and self.active:
            ahead.want(self.estimator, task, states, run)

    def _planner_alone(self, updating: str | None = None):
        """The planner for an update (of task ``updating``) or a ranking alone (planning
        ahead waits)."""
        ahead = self.ahead
        return ahead.exclusive(updating) if ahead is not None else nullcontext()

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

    def _log_failure(self, task_id: str, message: str, log) -> None:
        """A failure is the node's to report, unless the node is stopping: then the
        update was cut short on purpose (its planners are closing), which is news only
        at INFO."""
        if self.stopping.is_set():
            self.get_logger().info(f'task {task_id!r}: stopped mid-update (the node is '
                                   'shutting down); belief unchanged')
        else:
            log(f'task {task_id!r}: {message}')

    def _execute(self, goal_handle) -> EstimateCapabilities.Result:
        outcome = goal_handle.request.outcome
        result = EstimateCapabilities.Result()
        try:
            report, updated = self._update(goal_handle, outcome)
        except PlannerTimeoutError as error:
            # As in `cecm experiment`: an update that cannot finish in the planner's time
            # limit leaves the belief as it was (never a partial one), says so, and the
            # session goes on; the task is not run again for it.
            result.belief = self._publish()
            result.updated = False
            result.message = (f'update not finished ({error}); the belief is as before '
                              'this task')
            self._log_failure(outcome.task_id, result.message, self.get_logger().warning)
            finish_goal(goal_handle.succeed)
        except (conv.MessageError, CecmError, ValueError) as error:
            result.message = f'update failed, belief unchanged: {error}'
            # A malformed outcome stays malformed; a crashed search, or the store
            # logging the task meanwhile, may go otherwise when it is sent again.
            result.retry = isinstance(error, PlanningError) or not isinstance(error,
                                                                               CecmError)
            self._log_failure(outcome.task_id, result.message, self.get_logger().warning)
            finish_goal(goal_handle.abort)
        except _CanceledError:
            result.message, result.retry = 'canceled, belief unchanged', True
            finish_goal(goal_handle.canceled)
        except StopRequestedError as stopped:
            result.message, result.retry = f'{stopped}; belief unchanged', True
            finish_goal(goal_handle.abort)
        except Exception as error:  # noqa: BLE001 - keep serving; the belief is restored
            result.message = f'update failed, belief unchanged: internal error: {error!r}'
            result.retry = True
            self._log_failure(outcome.task_id, result.message, self.get_logger().error)
            finish_goal(goal_handle.abort)
        else:
            self.updated_at = time.time()   # (/diagnostics: the last update)
            result.belief = self._publish()
            result.updated = updated
            result.samples_evaluated = int(report.get('samples_evaluated', 0))
            result.samples_accepted = int(report.get('samples_accepted', 0))
            result.message = str(report.get('message', ''))
            self.get_logger().info(
                f'task {outcome.task_id}: {result.message}; estimate lacks '
                f'{self.model.catalog.describe_missing(self.estimator.estimate)} '
                f'({self.estimator.belief.tasks_seen} tasks seen; the update took '
                f'{getattr(self, "update_s", 0.0):.2f} s)')
            finish_goal(goal_handle.succeed)
        finally:
            with self.locked():
                self.busy = False
        if not result.belief.capability_names:
            result.belief = conv.belief_msg(self.model, self.estimator.belief,
                                            self.partner_id, self.last_accepted_any,
                                            self.stamp())
        return result

    def _update(self, goal_handle, outcome) -> tuple[dict, bool]:
        """One update, committed with its log entry; (report, whether it changed)."""
        self.update_s = 0.0
        task, trajectory = conv.outcome_from_msg(self.model, outcome)
        if outcome.partner_id and outcome.partner_id != self.partner_id:
            raise conv.MessageError(f'the outcome is about partner {outcome.partner_id!r}, '
                                    f'this belief is about {self.partner_id!r}')
        session = outcome.session_id
        index = int(outcome.task_index) if session else self.estimator.belief.tasks_seen
        if session:
            logged = self.store.find(self.partner_id, session, index)
            if logged is not None:
                if logged.task.task_id != task.task_id:
                    raise conv.MessageError(
                        f'task {index} of session {session!r} was {logged.task.task_id!r}, '
                        f'not {task.task_id!r}')
                report = dict(logged.report)
                report['message'] = (f'already applied (task {index} of session {session!r}); '
                                     'not counted again')
                return report, False

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
        try:
            planner_ahead = self.ahead
            with self._planner_alone(task.task_id):
                ahead = planner_ahead.planned_for(task.task_id) if planner_ahead else 0
                self.get_logger().info(f'task {task.task_id}: updating with a trajectory of '
                                       f'{len(trajectory)} states ({ahead} plans made or read '
                                       'from the plan store ahead)')
                began = time.monotonic()
                update = self.estimator.update(task, trajectory, progress)
                self.update_s = time.monotonic() - began
            report = {'samples_evaluated': update.samples_evaluated,
                      'samples_accepted': update.samples_accepted,
                      'updated': update.updated, 'message': update.message}
            entry = LogEntry(session, index, task, tuple(trajectory), report, time.time())
            if not self.store.record_update(self.partner_id, self.estimator.belief, entry):
                raise ValueError(f'task {index} of session {session!r} was logged meanwhile')
        except BaseException:
            self.estimator.belief = snapshot
            raise
        self.last_accepted_any = update.samples_accepted > 0
        goal_handle.publish_feedback(EstimateCapabilities.Feedback(
            samples_evaluated=update.samples_evaluated,
            samples_total=update.samples_evaluated,
            samples_accepted=update.samples_accepted))
        return report, update.updated

    # ----------------------------------------------------------------- services
    def _exclusive(self, response, work):
        """Run ``work`` while no update runs (the belief is not replaced under it)."""
        with self.locked():
            if self.busy:
                response.success, response.message = False, 'an update is running; try later'
                return response
            self.busy = True
        try:
            return work()
        finally:
            with self.locked():
                self.busy = False

    def _on_save(self, request: SaveBelief.Request, response: SaveBelief.Response):
        if not request.path.strip():
            response.success, response.message = False, 'no path given'
            return response
        with self.locked():
            belief = self.estimator.belief.copy()
        try:
            belief.save(_expand(request.path))
        except OSError as error:
            response.success, response.message = False, f'cannot save to {request.path}: {error}'
            self.get_logger().warning(response.message)
            return response
        response.success, response.message = True, f'belief saved to {request.path}'
        self.get_logger().info(response.message)
        return response

    def _on_load(self, request: LoadBelief.Request, response: LoadBelief.Response):
        def load():
            try:
                belief = CapabilityBelief.load(_expand(request.path))
                estimator = self._make_estimator(belief)
                # Only a belief that can be published replaces the current one.
                conv.belief_msg(self.model, estimator.belief, self.partner_id, False)
                self.store.reset(self.partner_id, estimator.belief)
            except (CecmError, ValueError) as error:
                response.success = False
                response.message = f'belief unchanged: {error}'
                self.get_logger().warning(f'load_belief {request.path!r}: {response.message}')
                return response
            self.estimator = estimator
            self._publish()
            response.success = True
            response.message = (f'loaded {belief.method} belief from {request.path} '
                                f'({belief.tasks_seen} tasks seen); the task log of '
                                f'{self.partner_id!r} starts over')
            self.get_logger().info(response.message)
            return response
        return self._exclusive(response, load)

    def _on_rank(self, request: RankTasks.Request, response: RankTasks.Response):
        if not self.active:
            response.success, response.message = False, 'capability_estimator is not active'
            return response
        try:
            if not request.candidates:
                raise conv.MessageError('no candidate tasks given')
            if len(request.candidates) > conv.MAX_CANDIDATES:
                raise conv.MessageError(f'{len(request.candidates)} candidates; at most '
                                        f'{conv.MAX_CANDIDATES}')
            candidates = [conv.task_from_msg(self.model, task) for task in request.candidates]
            with self.locked():
                estimator = self.estimator
            vectors, weights = estimator.hypotheses()
            epsilon = estimator.belief.settings.epsilon
            def rank():
                with self._planner_alone():
                    return choose_task(candidates, vectors, weights, self.evaluator, epsilon,
                                       budget_s=self.param('rank_budget_s') or None)

            choice = self._rank_once(ranking_key(candidates, vectors, weights, epsilon), rank)
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
        if choice.skipped:
            response.message += (f'; {len(choice.skipped)} left out (a search timed out): '
                                 + ', '.join(candidates[i].task_id for i in choice.skipped))
        response.message += f'; {choice.coverage()}' if choice.cut_short else ''
        self.get_logger().info(f'rank_tasks: {response.message}')
        return response

    def _rank_once(self, key: str, rank):
        """``rank()``, or the result of the same ranking that is at work already."""
        with self.locked():
            running = self.rankings.get(key)
            mine = running is None
            if mine:
                running = self.rankings[key] = Future()
                running.add_done_callback(lambda _: self.notify())
        if not mine:
            self.get_logger().info('rank_tasks: the same ranking is at work already; this '
                                   'request gets its answer')
            self.wait_until(running.done, None)
            return running.result()
        try:
            running.set_result(rank())
        except BaseException as error:
            running.set_exception(error)
            raise
        finally:
            with self.locked():
                self.rankings.pop(key, None)
        return running.result()

    def _on_list(self, request: ListPartners.Request, response: ListPartners.Response):
        return list_partners(self.store, self.param('store_path'), response, self.get_logger())

    def _on_export(self, request: PartnerCommand.Request, response: PartnerCommand.Response):
        if not request.path.strip():
            response.success, response.message = False, 'export_partner needs a path'
            return response
        partner = request.partner_id or self.partner_id
        try:
            document = self.store.export(partner)
            write_atomically(_expand(request.path), json.dumps(document, indent=1))
        except (CecmError, OSError) as error:
            response.success, response.message = False, f'cannot export {partner!r}: {error}'
            return response
        response.success = True
        response.message = (f'partner {partner!r} ({len(document["log"])} log entries) '
                            f'written to {request.path}')
        self.get_logger().info(response.message)
        return response

    def _on_reset(self, request: PartnerCommand.Request, response: PartnerCommand.Response):
        partner = request.partner_id or self.partner_id
        if partner != self.partner_id and not self.store.has(partner):
            response.success = False
            response.message = f'no partner {partner!r} in the store; nothing reset'
            return response

        def reset():
            fresh = self._make_estimator(None)
            self.store.reset(partner, fresh.belief)
            if partner == self.partner_id:
                self.estimator = fresh
                self._publish()
            response.success = True
            response.message = f'partner {partner!r} starts over (fresh belief, empty log)'
            self.get_logger().info(response.message)
            return response
        return self._exclusive(response, reset)

    def _on_delete(self, request: PartnerCommand.Request, response: PartnerCommand.Response):
        partner = request.partner_id.strip()
        if not partner:
            response.success, response.message = False, 'delete_partner needs a partner_id'
            return response
        if partner == self.partner_id:
            self._on_reset(request, response)
            if response.success:
                response.message += ' (it is the active partner: reset, not deleted)'
            return response
        response.success = self.store.delete(partner)
        response.message = (f'partner {partner!r} deleted' if response.success
                            else f'no partner {partner!r} in the store')
        return response

    def _on_progress(self, request: SessionProgress.Request,
                     response: SessionProgress.Response):
        return session_progress(self.store, self.partner_id,
                                self.estimator.belief.tasks_seen, request, response)

    def diagnostic_values(self) -> dict:
        """/diagnostics: the last update, the particles or samples held, the update at
        work."""
        estimator = getattr(self, 'estimator', None)
        belief = estimator.belief if estimator is not None else None
        posterior = getattr(belief, 'posterior', None)
        held = getattr(posterior, 'particles', None) if posterior is not None else \
            getattr(belief, 'accepted', None)
        return {'last_update': wall_time(getattr(self, 'updated_at', None)),
                'update_running': bool(getattr(self, 'busy', False)),
                'method': getattr(self, 'method', ''),
                'particles': len(held) if held is not None else 0,
                'plans_made_ahead': getattr(getattr(self, 'ahead', None), 'plans', 0),
                'tasks_seen': belief.tasks_seen if belief is not None else 0,
                'partner_id': getattr(self, 'partner_id', '')}


def _expand(path: str) -> str:
    from os.path import expanduser

    return expanduser(path.strip())


def main(args=None) -> int:
    return run_node(CapabilityEstimator, args)


if __name__ == '__main__':
    sys.exit(main())
