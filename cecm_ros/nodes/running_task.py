"""The running task and its states so far, as the capability estimator hears them (for
planning ahead while the team works: cecm_ros/session/plan_ahead.py).

The task manager publishes each task it runs on ``task/request`` (latched) and the world
each joint step's state on ``team_state``; this keeps them by the rules every node that
follows the world keeps them by (:class:`~cecm_ros.nodes.conversions.TeamStates`) and
hands the task with every new state to ``on_states``, with the run they belong to (a
task asked again is another run). What does not fit is skipped at
DEBUG level: the estimator is not the keeper of the world's states (the task manager and
the executor are, and say so), and a state it misses only costs a head start.
"""

from __future__ import annotations

from collections.abc import Callable

from cecm_ros.msg import TaskRequest, TeamState
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.common import QOS_LATCHED, QOS_TEAM_STATE


class RunningTask:
    """Subscriptions to the running task and its states (``entities``, for teardown)."""

    def __init__(self, node, model, on_states: Callable[[object, list, tuple], None]):
        self.node = node
        self.model = model
        self.on_states = on_states
        self.task = None
        self.run: tuple[str, int] | None = None
        self.requests = 0     # runs heard: a run's key (task id, attempt, this count)
        self.team_states = conv.TeamStates(model, kept=1)
        self.entities = [
            node.create_subscription(TaskRequest, 'task/request',
                                     node.guarded(self._on_task, 'task/request'), QOS_LATCHED,
                                     callback_group=node.group),
            node.create_subscription(TeamState, 'team_state',
                                     node.guarded(self._on_state, 'team_state'),
                                     QOS_TEAM_STATE, callback_group=node.group),
        ]

    def _on_task(self, msg: TaskRequest) -> None:
        try:
            task = conv.task_from_msg(self.model, msg)
        except conv.MessageError as error:
            self.node.get_logger().debug(f'planning ahead: task/request skipped: {error}')
            return
        run = (msg.task_id, int(msg.attempt))
        with self.node.locked():
            if run == self.run:
                return
            if self.run is not None and self.run[0] == msg.task_id:
                self.team_states.restart(msg.task_id)   # run again from its start
            self.task, self.run = task, run
            self.requests += 1
            self.team_states.current = msg.task_id
        self._hand_on()

    def _on_state(self, msg: TeamState) -> None:
        try:
            with self.node.locked():
                # Kept also before its request comes (two topics are not ordered).
                if not self.team_states.add(msg) or self.task is None or \
                        msg.task_id != self.task.task_id:
                    return
        except conv.MessageError as error:
            self.node.get_logger().debug(f'planning ahead: team_state skipped: {error}')
            return
        self._hand_on()

    def _hand_on(self) -> None:
        with self.node.locked():
            task, run = self.task, (*(self.run or ('', 0)), self.requests)
            steps = self.team_states.steps(task.task_id) if task is not None else {}
            messages = [steps[step] for step in sorted(steps)]
        if task is None or not messages:
            return
        states = [conv.state_from_team_state(self.model, msg) for msg in messages]
        self.on_states(task, states, run)
