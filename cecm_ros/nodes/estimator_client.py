"""The capability estimator's interface as a node that runs sessions uses it.

:class:`EstimatorClient` holds, on its node, what the task manager (or a robot stack's
own session node) needs of ``capability_estimator``: the belief as it is published on
``capability_belief`` (only a well-formed, current one about the session's partner),
the update of a finished task (EstimateCapabilities), candidate tasks ranked
(RankTasks), which of a session's tasks are applied (SessionProgress), and the
estimator's settings read back for a summary. Its waits are the node's (bounded, and
ended by the node's stop); a failure is a :class:`~cecm_ros.session.port.SessionError`
(the task may run again) or :class:`~cecm_ros.session.port.TaskFailedError` (the
task's own), as the session runner expects. Time limits are the node's parameters
``server_wait_s``, ``message_timeout_s`` and ``estimate_timeout_s`` (the last, and where
the estimator answers, declared here: :meth:`EstimatorClient.declare_parameters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from action_msgs.msg import GoalStatus

from cecm_ros.action import EstimateCapabilities
from cecm_ros.core.domain import Domain, Task
from cecm_ros.msg import CapabilityBelief, TaskOutcome
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import QOS_LATCHED, SafeActionClient, ros_name
from cecm_ros.session.estimator_parameters import NODE_PARAMETERS
from cecm_ros.session.port import Belief, BeliefUpdate, Ranking, SessionError, TaskFailedError
from cecm_ros.srv import RankTasks, SessionProgress

# What a summary records of the estimator's parameters.
ESTIMATOR_PARAMETERS = ('method', 'seed', *NODE_PARAMETERS)


def goal_status_name(status: int) -> str:
    names = {GoalStatus.STATUS_ABORTED: 'aborted', GoalStatus.STATUS_CANCELED: 'canceled',
             GoalStatus.STATUS_SUCCEEDED: 'succeeded'}
    return f'goal {names.get(status, f"status {status}")}'


class EstimatorClient:
    @staticmethod
    def declare_parameters(node) -> None:
        """The node's parameters that say where the estimator answers."""
        node.declare('rank_service', 'capability_estimator/rank_tasks',
                     'RankTasks service that scores candidate tasks', check=ros_name())
        node.declare('progress_service', 'capability_estimator/session_progress',
                     "SessionProgress service: which of a session's tasks are applied",
                     check=ros_name())
        node.declare('estimate_action', 'capability_estimator/estimate',
                     'EstimateCapabilities action server', check=ros_name())
        node.declare('estimator_node', 'capability_estimator',
                     'Node whose parameters (method, samples, ...) go into the summary',
                     check=ros_name())
        node.declare('estimate_timeout_s', 1800.0, 'How long one belief update may take',
                     low=1.0, high=86_400.0)

    def __init__(self, node, model: Domain, partner_id: str):
        self.node = node
        self.model = model
        self.partner_id = partner_id
        self.belief: CapabilityBelief | None = None
        self.estimate_action = node.param('estimate_action')
        self.rank_service = node.param('rank_service')
        self.progress_service = node.param('progress_service')
        group = node.group
        self.rank_client = node.create_client(RankTasks, self.rank_service,
                                              callback_group=group)
        self.progress_client = node.create_client(SessionProgress, self.progress_service,
                                                  callback_group=group)
        self.estimate_client = SafeActionClient(node, EstimateCapabilities,
                                                self.estimate_action, callback_group=group)
        self.entities = [
            self.rank_client, self.progress_client, self.estimate_client,
            node.create_subscription(CapabilityBelief, 'capability_belief',
                                     node.guarded(self._on_belief, 'capability_belief'),
                                     QOS_LATCHED, callback_group=group)]

    def peers(self, ranking: bool) -> list[tuple[str, Callable[[], bool]]]:
        """What must answer before a session starts (the ranking only when tasks are
        chosen by it)."""
        peers = [(self.estimate_action, self.estimate_client.server_is_ready),
                 (self.progress_service, self.progress_client.service_is_ready)]
        if ranking:
            peers.append((self.rank_service, self.rank_client.service_is_ready))
        return peers

    def _on_belief(self, msg: CapabilityBelief) -> None:
        log = self.node.get_logger()
        try:
            conv.estimate_from_belief_msg(self.model.catalog, msg)
            if msg.partner_id != self.partner_id:
                raise conv.MessageError(f'it is about partner {msg.partner_id!r}, the '
                                        f'session is about {self.partner_id!r}')
        except conv.MessageError as error:
            log.warning(f'ignoring belief: {error}')
            return
        with self.node.locked():
            if self.belief is not None and conv.stamped_before(msg, self.belief):
                log.warning(f'ignoring belief after {msg.tasks_seen} tasks: older than the '
                            'one held (out of order)')
                return
            self.belief = msg
        self.node.notify()

    def _as_belief(self, msg: CapabilityBelief) -> Belief:
        return Belief(estimate=conv.estimate_from_belief_msg(self.model.catalog, msg),
                      theta=tuple(msg.theta), tasks_seen=msg.tasks_seen, method=msg.method,
                      status=tuple(msg.status), confounded_with=tuple(msg.confounded_with),
                      report=tuple(conv.report_from_belief_msg(msg)),
                      lines=tuple(conv.report_lines(msg)))

    def current_belief(self) -> Belief | None:
        with self.node.locked():
            belief = self.belief
        return None if belief is None else self._as_belief(belief)

    def wait_belief(self, tasks_seen: int, what: str,
                    fallback: CapabilityBelief | None = None) -> Belief:
        """The published belief once it has seen ``tasks_seen`` tasks; ``fallback`` (an
        update's result) when none comes in time."""
        timeout = self.node.param('message_timeout_s')

        def arrived() -> bool:
            return self.belief is not None and self.belief.tasks_seen >= tasks_seen

        if self.node.wait_until(arrived, timeout):
            with self.node.locked():
                return self._as_belief(self.belief)
        if fallback is not None and fallback.capability_names:
            self.node.get_logger().warning(f'{what} did not arrive on capability_belief; '
                                           'using the one in the update result')
            return self._as_belief(fallback)
        raise SessionError(f'{what} did not arrive on capability_belief within '
                           f'{timeout:g} s')

    def read_settings(self) -> dict:
        """The estimator's parameters, for a summary; its defaults when it cannot be
        asked (``source`` says which)."""
        name = self.node.param('estimator_node')
        values = {'method': 'cecm', 'seed': 0, **NODE_PARAMETERS}
        values.update(self.node.read_parameters(
            name, ESTIMATOR_PARAMETERS, self.node.param('server_wait_s'),
            self.node.param('message_timeout_s'), 'the summary records defaults instead'))
        values['source'] = name if 'samples' in values else 'defaults'
        return values

    def applied_tasks(self, session_id: str) -> dict[int, str]:
        response = self.node.call_service(
            self.progress_client, SessionProgress.Request(session_id=session_id),
            f'session {session_id}: progress', self.node.param('server_wait_s'), 30.0,
            resend_s=5.0)
        if not response.success:
            raise SessionError(f'session {session_id}: {response.message}')
        return dict(zip((int(i) for i in response.task_indices), response.task_ids))

    def rank_tasks(self, label: str, candidates: Sequence[Task],
                   interrupt: Callable[[], bool]) -> Ranking:
        request = RankTasks.Request(candidates=[
            conv.task_msg(t, self.partner_id, domain=self.model.name) for t in candidates])
        response = self.node.call_service(
            self.rank_client, request, f'{label}: rank_tasks',
            self.node.param('server_wait_s'), self.node.param('estimate_timeout_s'),
            interrupt=interrupt, resend_s=60.0)
        if not response.success or response.best >= len(candidates):
            raise SessionError(f'{label}: the candidates could not be ranked: '
                               f'{response.message}')
        return Ranking(int(response.best), float(response.information[response.best]))

    def update_belief(self, label: str, task: Task, index: int, session_id: str,
                      outcome: TaskOutcome, trajectory: list, seen: int,
                      interrupt: Callable[[], bool]) -> BeliefUpdate:
        """Send a finished task (the executor's ``outcome``, the team states recorded)
        and wait for the belief that counts it."""
        goal = EstimateCapabilities.Goal(outcome=TaskOutcome(
            domain=self.model.name, task_id=task.task_id, partner_id=self.partner_id,
            session_id=session_id, task_index=index, goal_propositions=sorted(task.goal),
            initial_propositions=sorted(task.initial),
            trajectory=trajectory, robot_failed_steps=list(outcome.robot_failed_steps),
            robot_actions=outcome.robot_actions,
            corrections=outcome.corrections, goal_reached=outcome.goal_reached))
        status, update = self.node.send_goal_when_accepted(
            self.estimate_client, self.estimate_action, goal, f'{label}: estimate',
            self.node.param('server_wait_s'), self.node.param('estimate_timeout_s'),
            interrupt=interrupt)
        if status != GoalStatus.STATUS_SUCCEEDED:
            failure = SessionError if update.retry else TaskFailedError
            raise failure(f'{label}: the belief update failed: '
                          f'{update.message or goal_status_name(status)}')
        belief = self.wait_belief(max(seen, update.belief.tasks_seen), 'the updated belief',
                                  fallback=update.belief)
        return BeliefUpdate(belief, update.samples_accepted, update.message)
