"""skill_bridge: run the robot's planned actions on the action servers a robot already has.

The executor sends each robot action as an ``ExecuteSkill`` goal to ``robot/skills/<kind>``.
This node serves those, and runs each goal on an existing action server of any type
(Nav2's ``NavigateToPose``, a manipulation stack's grasp, ...), with the goal filled from
the action's arguments by a skill mapping file (:mod:`.skill_mapping`, docs/robot.md).
The server's result becomes ``success`` (its status, and the result fields the mapping
names), its feedback the skill's status; a cancel of the skill cancels the server's
goal, and a skill that overruns its time is canceled and fails. A server that ends
aborted, succeeds with a result the mapping calls a failure, or overruns is the robot's
skill failing (``skill_failed``: the executor re-plans and the team goes on); one that
rejects the goal or cannot be reached is not. ``wait`` (a step the
robot sits out) succeeds at once unless the mapping gives it a server.
"""

from __future__ import annotations

import sys
import threading

from action_msgs.msg import GoalStatus
from rclpy.action import ActionServer, CancelResponse, GoalResponse

from cecm_ros.action import ExecuteSkill
from cecm_ros.core.errors import ConfigError
from cecm_ros.nodes.common import (
    CecmNode,
    GoalRejectedError,
    PeerUnavailableError,
    ResultTimeoutError,
    SafeActionClient,
    StopRequestedError,
    WaitInterruptedError,
    finish_goal,
    run_node,
)
from cecm_ros.nodes.skill_mapping import (
    SkillMap,
    SkillMapping,
    bind,
    build_goal,
    load_mapping,
    resolve,
    succeeded,
    summary,
)

WAIT = 'wait'
STATUS_NAMES = {GoalStatus.STATUS_SUCCEEDED: 'succeeded', GoalStatus.STATUS_ABORTED: 'aborted',
                GoalStatus.STATUS_CANCELED: 'canceled', GoalStatus.STATUS_UNKNOWN: 'unknown'}


class SkillBridge(CecmNode):
    def __init__(self, **kwargs):
        super().__init__('skill_bridge', **kwargs)
        self.declare('mapping_file', '',
                     'The skill mapping (YAML, docs/robot.md): per skill kind, the action '
                     'server that runs it, its type, and how its goal is filled')
        self.declare('robot_skill_namespace', 'robot/skills',
                     'The ExecuteSkill servers are <namespace>/<kind>')
        self.declare('server_wait_s', 10.0,
                     'How long a skill waits for its action server to be there', low=0.0,
                     high=3600.0)
        self.declare('default_timeout_s', 300.0,
                     'How long a skill may run when its entry gives no timeout_s', low=0.1,
                     high=86400.0)
        self.mapping: SkillMap | None = None
        self.skill_clients: dict[str, SafeActionClient] = {}
        self._cancels: set[bytes] = set()
        self._cancel_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def configure(self) -> None:
        path = self.param('mapping_file')
        if not path:
            raise ConfigError('mapping_file is empty: give the skill mapping file '
                              '(docs/robot.md)')
        self.mapping = load_mapping(path)
        namespace = self.param('robot_skill_namespace').rstrip('/')
        kinds = list(self.mapping.skills)
        if WAIT not in kinds:
            kinds.append(WAIT)
        self.skill_clients = {kind: SafeActionClient(self, entry.action_type, entry.server,
                                               callback_group=self.group)
                        for kind, entry in self.mapping.skills.items()}
        self._entities = [*self.skill_clients.values()] + [
            ActionServer(self, ExecuteSkill, f'{namespace}/{kind}',
                         execute_callback=self._executor_for(kind),
                         goal_callback=lambda _goal: GoalResponse.ACCEPT if self.active
                         else GoalResponse.REJECT,
                         cancel_callback=self._on_cancel, callback_group=self.group)
            for kind in kinds]
        self.get_logger().info(
            f'{len(self.mapping.skills)} skill kinds from {path}: ' + '; '.join(
                f'{kind} -> {entry.server} ({entry.type_name})'
                for kind, entry in self.mapping.skills.items()))

    def _on_cancel(self, goal_handle) -> CancelResponse:
        with self._cancel_lock:
            self._cancels.add(bytes(goal_handle.goal_id.uuid))
        self.notify()
        return CancelResponse.ACCEPT

    # ------------------------------------------------------------------- skills
    def _executor_for(self, kind: str):
        def execute(goal_handle):
            uuid = bytes(goal_handle.goal_id.uuid)
            try:
                return self._execute(kind, goal_handle, uuid)
            except StopRequestedError as stopped:
                return _finish(goal_handle, 'abort', str(stopped))
            except Exception as error:  # noqa: BLE001 - never crash the executor
                self.get_logger().error(f'{kind}: internal error: {error!r}')
                return _finish(goal_handle, 'abort', f'internal error: {error!r}')
            finally:
                with self._cancel_lock:
                    self._cancels.discard(uuid)
        return execute

    def _execute(self, kind: str, goal_handle, uuid: bytes):
        request = goal_handle.request
        assert self.mapping is not None
        entry = self.mapping.skills.get(kind)
        if entry is None:     # wait, with no server of its own: sit the step out
            return _finish(goal_handle, 'succeed', 'waited', changed=False)
        label = f'{request.task_id} step {request.step} {request.action}'
        tables = self.mapping.tables
        try:
            variables = bind(entry, request.action)
            goal = build_goal(entry, request.action, tables)
        except ConfigError as error:
            self.get_logger().warning(f'{label}: refused: {error}')
            return _finish(goal_handle, 'abort', str(error))

        def cancel_asked() -> bool:
            with self._cancel_lock:
                return uuid in self._cancels

        def interrupted() -> bool:     # a cancel, or the bridge being deactivated
            return cancel_asked() or not self.active

        def feedback(message) -> None:
            try:
                goal_handle.publish_feedback(ExecuteSkill.Feedback(
                    status=self._status(entry, message.feedback, variables, tables)))
            except Exception as error:  # noqa: BLE001 - progress is not worth a failure
                self.get_logger().debug(f'{label}: feedback not relayed: {error!r}')

        timeout = entry.timeout_s or self.param('default_timeout_s')
        self.get_logger().info(f'{label}: {entry.server} ({entry.type_name})')
        try:
            status, result = self.send_action_goal(
                self.skill_clients[kind], entry.server, goal, label, self.param('server_wait_s'),
                timeout, feedback=feedback, interrupt=interrupted)
        except WaitInterruptedError:
            if not cancel_asked():
                return self._failed(goal_handle, label, 'skill_bridge was deactivated; the '
                                    f'goal of {entry.server} was canceled')
            self.get_logger().info(f'{label}: canceled; canceled the goal of {entry.server}')
            return _finish(goal_handle, 'canceled', f'canceled ({entry.server} canceled)')
        except GoalRejectedError:
            return self._failed(goal_handle, label, f'{entry.server} rejected the goal')
        except ResultTimeoutError:
            return self._failed(goal_handle, label, f'{entry.server} timed out after '
                                f'{timeout:g} s (its goal was canceled)', skill_failed=True)
        except PeerUnavailableError as error:
            return self._failed(goal_handle, label, str(error))
        if status != GoalStatus.STATUS_SUCCEEDED:
            return self._failed(goal_handle, label, f'{entry.server} ended '
                                f'{STATUS_NAMES.get(status, status)}: {summary(result)}',
                                skill_failed=True)
        problem = succeeded(entry, result)
        if problem:
            return self._failed(goal_handle, label, f'{entry.server} succeeded but {problem}',
                                skill_failed=True)
        return _finish(goal_handle, 'succeed', f'{entry.server} succeeded', changed=True)

    def _failed(self, goal_handle, label: str, message: str, skill_failed: bool = False):
        """The goal fails; ``skill_failed``: the robot's skill ran and failed, as a
        skill does (the team goes on), not a goal that could not run."""
        self.get_logger().warning(f'{label}: failed: {message}')
        return _finish(goal_handle, 'abort', message, skill_failed=skill_failed)

    def _status(self, entry: SkillMapping, feedback, variables: dict[str, str],
                tables: dict[str, dict]) -> str:
        if not entry.feedback:
            return summary(feedback)
        try:
            return str(resolve(entry.feedback, variables, tables, {'feedback': feedback}))
        except (ConfigError, KeyError):
            return summary(feedback)


def _finish(goal_handle, how: str, message: str, changed: bool = False,
            skill_failed: bool = False):
    result = ExecuteSkill.Result(success=how == 'succeed', state_changed=changed,
                                 message=message, skill_failed=skill_failed)
    finish_goal({'succeed': goal_handle.succeed, 'abort': goal_handle.abort,
                 'canceled': goal_handle.canceled}[how])
    return result


def main(args=None) -> int:
    return run_node(SkillBridge, args)


if __name__ == '__main__':
    sys.exit(main())
