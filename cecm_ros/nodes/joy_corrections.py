"""joy_corrections: a person answers the robot's intents with a gamepad or a button box.

It listens to ``sensor_msgs/Joy`` on ``joy`` (the joy driver's topic, as
teleop_twist_joy uses it) and turns each button press into an answer, by the YAML
mapping in ``mapping_file`` (config/joy_corrections.yaml says what each entry does):
agree, wait, another robot action that applies now (``robot N``: the web panel's key N)
or a named one, published as a Correction on ``robot/correction``; with ``play`` also
the partner's own action (``partner N``, ``partner wait``, ``partner ACTION``) as a
PartnerChoice on ``human/choice``, which agrees to the robot's open intent of that
step as well (one press per step, as in the panel). Answers follow the console's rules
(answers.py): what cannot be sent is refused in the log with the reason, nothing is
published. A mapping with a mistake is refused at its line, and the node does not start.
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import yaml
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import Joy

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT
from cecm_ros.core.errors import CecmError
from cecm_ros.domains import panel_view_for
from cecm_ros.domains.pddl.positions import YamlPositions, at
from cecm_ros.msg import Correction, PartnerChoice, RobotIntent, StepResult, TaskRequest, TeamState
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.answers import IntentAnswers, NotAnsweredError
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED, QOS_TEAM_STATE, existing_file, run_node
from cecm_ros.nodes.diagnostics import NodeDiagnostics
from cecm_ros.nodes.domain_parameters import DomainParameters
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.parameters import DeclaredParameters
from cecm_ros.web.session_state import play_keys

ENTRY = re.compile(r'^(agree|wait|(robot|partner)\s+(.+))$')
USAGE = ('agree, wait, robot N, robot ACTION, partner wait, partner N or partner ACTION '
         '(N a number from 1)')


class JoyMappingError(CecmError):
    """A mapping file that cannot be used; the text names the file, line and entry."""


def read_mapping(path: str, model) -> dict[int, tuple[str, str]]:
    """button -> (who, what) from a mapping file: ('robot', 'agree' | 'wait' | 'N' |
    ACTION) or ('partner', 'wait' | 'N' | ACTION); ACTIONs checked against ``model``."""
    try:
        text = Path(path).read_text()
        data = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as error:
        raise JoyMappingError(f'{path}: cannot read the mapping: {error}') from None
    positions = YamlPositions(text)
    if not isinstance(data, dict) or set(data) != {'buttons'} or \
            not isinstance(data['buttons'], dict) or not data['buttons']:
        raise JoyMappingError(f'{at(path, positions.of())}: a mapping holds one key, '
                              "'buttons', with one entry per button (0: agree, ...)")
    mapping = {}
    for button, entry in data['buttons'].items():
        where = f'{at(path, positions.of("buttons", str(button), key=True))}: button {button!r}'
        if not isinstance(button, int) or isinstance(button, bool) or button < 0:
            raise JoyMappingError(f'{where}: a button is its index in sensor_msgs/Joy '
                                  'buttons (0, 1, ...)')
        match = ENTRY.match(str(entry).strip()) if isinstance(entry, str) else None
        if match is None:
            raise JoyMappingError(f'{where}: {entry!r} is none of {USAGE}')
        who, what = match.group(2) or ROBOT, (match.group(3) or match.group(1)).strip()
        if what.isdigit() and int(what) < 1:
            raise JoyMappingError(f'{where}: {entry!r}: N counts from 1')
        if not what.isdigit() and what not in ('agree', 'wait'):
            try:
                what = conv.canonical_action(model, what, HUMAN if who == 'partner' else ROBOT,
                                             'the action')
            except conv.MessageError as error:
                raise JoyMappingError(f'{where}: {error}') from None
        mapping[button] = ('partner' if who == 'partner' else ROBOT, what)
    return mapping


class JoyCorrections(BoundedLogging, DomainParameters, NodeDiagnostics, DeclaredParameters,
                     Node):
    PARAMETER_REFUSED = 'does not start'

    def __init__(self, **kwargs):
        super().__init__('joy_corrections', **kwargs)
        self.start_parameter_checks()
        self.declare('mapping_file', '', "The buttons' YAML mapping; '' = the package's "
                     'config/joy_corrections.yaml', check=existing_file)
        self.declare('sender', 'gamepad', 'Who the answers are from (their sender)')
        self.declare('play', False, "Play mode: the partner buttons choose the partner's own "
                     'action (human/choice; simulated_human partner_behaviour person)')
        self.declare_model_parameters()
        if self.parameter_errors:
            raise CecmError('; '.join(self.parameter_errors))
        self.start_diagnostics()
        self.model = self.load_model()
        self.mapping = read_mapping(self.param('mapping_file') or _default_mapping(),
                                    self.model)
        self.key_order = panel_view_for(self.model).layout().get('key_order', ())
        self.answers = IntentAnswers(self.model, self.param('sender'))
        self._lock = threading.Lock()
        self.team_states = conv.TeamStates(self.model)
        self.request: TaskRequest | None = None   # the run asked for (its goal)
        self.chosen: dict[tuple, str] = {}    # (task, attempt, step) -> the partner's action
        self.pressed: list[int] = []
        self.presses = self.sent = 0
        self.finished = Future()   # run_node spins until it is done
        self.exit_code = 0
        self.correction_pub = self.create_publisher(Correction, 'robot/correction', QOS_EVENTS)
        self.choice_pub = self.create_publisher(PartnerChoice, 'human/choice', QOS_EVENTS)
        self.create_subscription(Joy, 'joy', self._on_joy, 10)
        self.create_subscription(RobotIntent, 'robot/intent', self._on_intent, QOS_EVENTS)
        self.create_subscription(StepResult, 'robot/step_result', self.answers.step_done,
                                 QOS_EVENTS)
        self.create_subscription(TaskRequest, 'task/request', self._on_task, QOS_LATCHED)
        self.create_subscription(TeamState, 'team_state', self._on_team_state, QOS_TEAM_STATE)
        self.get_logger().info(
            f'answering robot/intent from joy as {self.param("sender")!r}: ' + ', '.join(
                f'button {b} {who + " " if who != ROBOT or w.isdigit() else ""}{w}'
                for b, (who, w) in sorted(self.mapping.items())))

    # run_node's process-exit hooks: nothing to release.
    def request_stop(self) -> None:
        pass

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ topics
    def _on_task(self, msg: TaskRequest) -> None:
        try:
            if self.answers.task(msg):
                with self._lock:
                    self.request = msg
                    self.team_states.restart(msg.task_id)
                    self.team_states.current = msg.task_id
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring task request: {error}')

    def _on_intent(self, msg: RobotIntent) -> None:
        try:
            self.answers.intent(msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring intent: {error}')

    def _on_team_state(self, msg: TeamState) -> None:
        try:
            with self._lock:
                self.team_states.add(msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring team_state: {error}')

    def _on_joy(self, msg: Joy) -> None:
        """Each button that went down since the last message is one press."""
        before, self.pressed = self.pressed, list(msg.buttons)
        for button, value in enumerate(msg.buttons):
            if value and not (button < len(before) and before[button]) and \
                    button in self.mapping:
                self.presses += 1
                self.press(button)

    # ----------------------------------------------------------------- presses
    def press(self, button: int) -> None:
        who, what = self.mapping[button]
        name = f'button {button} ({who + " " if who != ROBOT or what.isdigit() else ""}{what})'
        try:
            said = self._choose(what) if who == 'partner' else self._answer(what)
        except (conv.MessageError, NotAnsweredError) as why:
            self.get_logger().warning(f'{name}: not sent: {why}')
            return
        self.sent += 1
        self.get_logger().info(f'{name}: {said}')

    def _answer(self, what: str) -> str:
        def corrected(intent: RobotIntent) -> str:
            if what == 'agree':
                return intent.action
            if what == 'wait':
                return NOOP
            if not what.isdigit():
                return what
            others = [a for a in self.model.applicable_actions(self._state(
                intent.task_id, intent.step), ROBOT) if a not in (NOOP, intent.action)]
            if int(what) > len(others):
                raise conv.MessageError(f'the robot has {len(others)} other actions at step '
                                        f'{intent.step}: {", ".join(others) or "none"}')
            return others[int(what) - 1]

        correction, verdict = self.answers.answer(corrected)
        self.correction_pub.publish(correction)
        return verdict

    def _choose(self, what: str) -> str:
        """The partner's own action at the world's current step (play mode)."""
        if not self.param('play'):
            raise conv.MessageError('play mode is off (joy_corrections parameter play)')
        with self._lock:
            request = self.request
            step = self.team_states.latest(request.task_id) if request is not None else None
        if request is None or step is None:
            raise conv.MessageError('no task is running (no task request or team state yet)')
        run = (request.task_id, request.attempt)
        if (*run, step) in self.chosen:
            raise conv.MessageError(f'step {step} has a choice already: '
                                    f'{self.chosen[(*run, step)]}')
        here = self._state(run[0], step)
        if self.model.goal_reached(conv.task_from_msg(self.model, request), here):
            raise conv.MessageError("the task's goal is reached")
        offered = play_keys([NOOP, *self.model.applicable_actions(here, HUMAN)],
                            self.key_order)
        action = NOOP if what == 'wait' else what
        if what.isdigit():
            action = next((e['action'] for e in offered if e['key'] == what), '')
        if action not in [e['action'] for e in offered]:
            raise conv.MessageError(f'{action or "no action on key " + what} does not apply '
                                    f'at step {step}; the partner\'s actions now: '
                                    f'{", ".join(e["action"] for e in offered)}')
        self.chosen[(*run, step)] = action
        while len(self.chosen) > 200:
            self.chosen.pop(next(iter(self.chosen)))
        choice = PartnerChoice(task_id=run[0], attempt=run[1], step=step, action=action,
                               sender=self.param('sender'))
        choice.header.stamp = self.get_clock().now().to_msg()
        self.choice_pub.publish(choice)
        said = f'your action for step {step}: {action}'
        intent = self.answers.current()
        if intent is not None and (intent.task_id, intent.step) == (run[0], step):
            try:
                correction, verdict = self.answers.answer(lambda open_intent: open_intent.action)
                self.correction_pub.publish(correction)
                said += f'; {verdict}'
            except NotAnsweredError:
                pass   # its step ended meanwhile
        return said

    def _state(self, task_id: str, step: int):
        """The world's state at ``step`` of the task (its latest one until that step's
        comes)."""
        with self._lock:
            steps = self.team_states.steps(task_id)
            held = steps.get(step) or (steps[max(steps)] if steps else None)
        if held is None:
            raise conv.MessageError(f'no team_state of task {task_id} yet')
        return conv.state_from_team_state(self.model, held)

    def diagnostic_values(self) -> dict:
        intent = self.answers.current()
        return {'presses': self.presses, 'answers_sent': self.sent, 'play': self.param('play'),
                'open_intent': f'{intent.task_id} step {intent.step}' if intent else 'none'}


def _default_mapping() -> str:
    from ament_index_python.packages import get_package_share_directory

    return str(Path(get_package_share_directory('cecm_ros')) / 'config' /
               'joy_corrections.yaml')


def main(args=None) -> int:
    return run_node(JoyCorrections, args, threads=2)


if __name__ == '__main__':
    sys.exit(main())
