"""correction_console: a person answers the robot's intents from a terminal.

For a person working next to the robot: a real one, or the simulated household with
``simulated_human`` told not to answer (``answer_intents: false``; it then only acts
its own plan, and this console speaks for it). Each RobotIntent is printed, with what
the partner's published plan (``human/joint_plan``) expects of the robot at that step
when there is one. The next line read from standard input answers it:

    (empty line)   agree: a confirmation, the robot goes ahead at once
    w, noop        the robot waits this step
    ACTION         the robot does this instead: ``move robot kitchen study``
    q              quit

Answers are checked against the household model before anything is sent; a line that
names an unknown action is refused with the reason and the intent stays open (the rules
of answers.py, which joy_corrections follows too). Lines come from standard input, so a
pipe or a script can answer as well as a keyboard.
"""

from __future__ import annotations

import sys
import threading

from rclpy.node import Node
from rclpy.task import Future

from cecm_ros.core.domain import NOOP
from cecm_ros.core.domain import JointPlan as CorePlan
from cecm_ros.core.errors import CecmError
from cecm_ros.msg import Correction, JointPlan, RobotIntent, StepResult, TaskRequest
from cecm_ros.nodes import conversions as conv
from cecm_ros.nodes.answers import IntentAnswers, NotAnsweredError
from cecm_ros.nodes.common import (
    QOS_EVENTS,
    QOS_LATCHED,
    run_node,
)
from cecm_ros.nodes.diagnostics import NodeDiagnostics
from cecm_ros.nodes.domain_parameters import DomainParameters
from cecm_ros.nodes.logs import BoundedLogging
from cecm_ros.nodes.parameters import DeclaredParameters

QUIT = {'q', 'quit', 'exit'}
WAIT = {'w'}
HELP = 'Enter = agree, w = wait, an action = do that instead, q = quit'


class CorrectionConsole(BoundedLogging, DomainParameters, NodeDiagnostics, DeclaredParameters,
                        Node):
    PARAMETER_REFUSED = 'does not start'

    def __init__(self, **kwargs):
        super().__init__('correction_console', **kwargs)
        self.start_parameter_checks()
        self.declare('sender', 'keyboard', 'Who the corrections are from (their sender)')
        # The domain and its options, declared and read as every node does.
        self.declare_model_parameters()
        if self.parameter_errors:
            # A terminal tool, not a lifecycle node: it cannot wait to be fixed.
            raise CecmError('; '.join(self.parameter_errors))
        self.sender = self.param('sender')
        self.start_diagnostics()
        self.model = self.load_model()
        self._lock = threading.Lock()
        self._print_lock = threading.Lock()
        self.answers = IntentAnswers(self.model, self.sender)
        self.partner_plan: tuple[str, CorePlan] | None = None
        self.finished = Future()   # run_node spins until it is done
        self.exit_code = 0
        self.correction_pub = self.create_publisher(Correction, 'robot/correction', QOS_EVENTS)
        self.create_subscription(RobotIntent, 'robot/intent', self._on_intent, QOS_EVENTS)
        self.create_subscription(StepResult, 'robot/step_result', self._on_step, QOS_EVENTS)
        self.create_subscription(JointPlan, 'human/joint_plan', self._on_partner_plan,
                                 QOS_LATCHED)
        self.create_subscription(TaskRequest, 'task/request', self._on_task, QOS_LATCHED)

    # run_node's process-exit hooks: the input thread is a daemon, nothing to release.
    def request_stop(self) -> None:
        pass

    def close(self) -> None:
        pass

    def say(self, text: str) -> None:
        # One write per line: the intent callback and the input thread both print.
        with self._print_lock:
            sys.stdout.write(text + '\n')
            sys.stdout.flush()

    # ------------------------------------------------------------------ topics
    def _on_task(self, msg: TaskRequest) -> None:
        """The run the robot's intents should belong to: a robot that was stopped may go
        on for a moment with the run before, whose steps are not asked here."""
        try:
            if not self.answers.task(msg):
                return   # the latched request again
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring task request: {error}')
            return
        self.say(f'[{msg.task_id}] task requested (run {msg.attempt}): '
                 f'{len(msg.goal_propositions)} goal propositions')

    def _on_partner_plan(self, msg: JointPlan) -> None:
        try:
            plan = conv.plan_from_msg(self.model, msg)
        except CecmError as error:
            self.get_logger().warning(f"ignoring the partner's plan: {error}")
            return
        with self._lock:
            self.partner_plan = (msg.task_id, plan)

    def _on_intent(self, msg: RobotIntent) -> None:
        """A fresh announcement opens its step (again after an interrupted task runs
        again); a repeat says the step's window has closed: it asks nothing, and closes
        the step if it is the one open. One the partner refuses (an unknown action, a
        step no task has) is not asked either."""
        try:
            news = self.answers.intent(msg)
        except conv.MessageError as error:
            self.get_logger().warning(f'ignoring intent: {error}')
            return
        if news.kind == 'other_run':
            self.get_logger().info(
                f'ignoring intent for step {msg.step} of task {msg.task_id}: it is for '
                f'attempt {msg.attempt}, the task runs attempt {news.run[1]}')
            return
        if news.kind == 'nothing':
            return
        with self._lock:
            hint = self._expected(msg)
        unanswered = news.unanswered
        if unanswered is not None:
            self.say(f'  (step {unanswered.step} went unanswered: its correction window '
                     'closed and the robot went ahead)')
        if msg.repeated:
            if not news.shown_before:
                self.say(f'[{msg.task_id} step {msg.step}] the robot announced {msg.action}; '
                         'its correction window has closed (the world waits for the partner)')
            return
        expected = f'; the partner plan expects {hint}' if hint else ''
        self.say(f'[{msg.task_id} step {msg.step}] the robot intends {msg.action}{expected}')
        self.say(f'  {HELP}:')

    def _expected(self, msg: RobotIntent) -> str:
        """What the partner's plan has the robot do at this step ('' if unknown)."""
        if self.partner_plan is None or self.partner_plan[0] != msg.task_id:
            return ''
        steps = self.partner_plan[1].steps
        return steps[msg.step].robot if msg.step < len(steps) else NOOP

    def _on_step(self, msg: StepResult) -> None:
        self.answers.step_done(msg)
        how = 'as corrected' if msg.corrected else 'as announced'
        self.say(f'  step {msg.step}: the robot did {msg.action} ({how})')

    # ----------------------------------------------------------------- answers
    def answer(self, line: str) -> None:
        """Turn one typed line into a Correction of the open intent, or say why not."""
        text = line.strip()
        if text.lower() in QUIT:
            self.finished.set_result(None)
            return

        def corrected(intent: RobotIntent) -> str:
            if not text:
                return intent.action
            return NOOP if text.lower() in WAIT else text

        try:
            correction, verdict = self.answers.answer(corrected)
        except conv.MessageError as error:
            self.say(f'  not sent: {error}; {HELP}')
            return
        except NotAnsweredError as why:
            self.say(f'  {why}')
            return
        self.correction_pub.publish(correction)
        self.say(f'  {verdict}')

    def read(self, stream) -> None:
        """Answer line by line until the stream ends (then quit)."""
        for line in stream:
            if self.finished.done():
                return
            try:
                self.answer(line)
            except Exception as error:  # noqa: BLE001 - one bad line must not end the console
                self.get_logger().error(f'cannot answer {line.strip()!r}: {error}')
        if not self.finished.done():
            self.say('  standard input closed; quitting')
            self.finished.set_result(None)


def _console_reading_stdin() -> CorrectionConsole:
    node = CorrectionConsole()
    node.say(f'correction_console: answering robot/intent as {node.sender!r}; {HELP}')
    threading.Thread(target=node.read, args=(sys.stdin,), daemon=True).start()
    return node


def main(args=None) -> int:
    return run_node(_console_reading_stdin, args, threads=2)


if __name__ == '__main__':
    sys.exit(main())
