"""simulated_human sends its action again when the world never took it.

A world that restarts can lose the partner's skill goal; the executor then announces the
step's intent again while the world waits. The partner (the installed executable, its
own process) must send the same action for that step again, and only while the world
has not taken it. This process plays the world: it hosts the human skill servers,
refuses the first goal and accepts the rest.
"""

from __future__ import annotations

import threading

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from core_fixtures import make_task  # noqa: E402
from graph_fixtures import NodeProcesses, RosClient, RosDomain, installed_or_skip  # noqa: E402
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState  # noqa: E402
from rclpy.action import ActionServer  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402

from cecm_ros.action import ExecuteSkill  # noqa: E402
from cecm_ros.core.domain import NOOP  # noqa: E402
from cecm_ros.msg import Correction, PartnerChoice, RobotIntent, TaskRequest  # noqa: E402
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED  # noqa: E402
from cecm_ros.nodes.world_sim import DEFAULT_SKILLS  # noqa: E402

NAMESPACE = 'resend_test_world'
PARTNER = 'simulated_human'
RUN = 70_000   # the task's TaskRequest.attempt


class FakeWorld:
    """Human skill servers that refuse the first goal and accept every later one."""

    def __init__(self):
        self.goals: list[tuple[int, str, bool]] = []   # (step, action, taken)
        self.attempts: list[int] = []                   # the run each goal names
        self.corrections: list[Correction] = []
        self.lock = threading.Condition()
        self.client = RosClient('resend_test_world', setup=self._serve)
        self.intents = self.client.node.create_publisher(RobotIntent, 'robot/intent',
                                                         QOS_EVENTS)
        self.tasks = self.client.node.create_publisher(TaskRequest, 'task/request',
                                                       QOS_LATCHED)
        self.choices = self.client.node.create_publisher(PartnerChoice, 'human/choice',
                                                         QOS_EVENTS)

    def _serve(self, node) -> None:
        group = ReentrantCallbackGroup()
        self.servers = [ActionServer(node, ExecuteSkill, f'{NAMESPACE}/{kind}', self._execute,
                                     callback_group=group)
                        for kind in DEFAULT_SKILLS]
        node.create_subscription(Correction, 'robot/correction', self._on_correction,
                                 QOS_EVENTS)

    def _on_correction(self, msg: Correction) -> None:
        with self.lock:
            self.corrections.append(msg)
            self.lock.notify_all()

    def _execute(self, goal_handle):
        goal = goal_handle.request
        with self.lock:
            taken = bool(self.goals)
            self.goals.append((goal.step, goal.action, taken))
            self.attempts.append(goal.attempt)
            self.lock.notify_all()
        if taken:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return ExecuteSkill.Result(success=taken, state_changed=False,
                                   message='taken' if taken else 'the world restarted')

    def wait_goals(self, count: int, timeout_s: float = 30.0) -> list:
        with self.lock:
            self.lock.wait_for(lambda: len(self.goals) >= count, timeout_s)
            return list(self.goals)

    def wait_correction(self, step: int, timeout_s: float = 30.0) -> list[int]:
        """The steps answered so far, once ``step`` is among them (or the time is up)."""
        with self.lock:
            self.lock.wait_for(lambda: any(c.step == step for c in self.corrections),
                               timeout_s)
            return [c.step for c in self.corrections]

    def change_state(self, transition: int) -> bool:
        return self.client.call(ChangeState, f'{PARTNER}/change_state',
                                ChangeState.Request(transition=Transition(id=transition)),
                                60.0).success

    def close(self):
        self.client.close()


@pytest.fixture
def world(request, tmp_path):
    """The partner process and the fake world; ``request.param``: answer_intents, or
    the partner's parameters."""
    executables, params = installed_or_skip(PARTNER)
    domain = RosDomain()
    processes = NodeProcesses(executables, params, domain.env, tmp_path)
    fake = FakeWorld()
    try:
        chosen = getattr(request, 'param', False)
        settings = chosen if isinstance(chosen, dict) else {'answer_intents': chosen}
        processes.start(PARTNER, {'partner': 'full_capability',
                                  'human_skill_namespace': NAMESPACE, **settings})
        assert fake.change_state(Transition.TRANSITION_CONFIGURE), processes.log(PARTNER)
        assert fake.change_state(Transition.TRANSITION_ACTIVATE), processes.log(PARTNER)
        yield fake, processes
    finally:
        # The partner first: a goal it sends while this world is being destroyed would
        # fail in the world's executor, and rclpy reports that much later.
        processes.close()
        fake.close()
        domain.release()


def test_an_action_the_world_never_took_is_sent_again_when_the_intent_repeats(world):
    fake, processes = world
    task = make_task('resend', ['(item-at plate study)'], robot='study', human='kitchen')
    fake.tasks.publish(conv.task_msg(task, attempt=RUN))
    assert processes.wait_for_log(PARTNER, 'task resend: planned', 60.0), processes.log(PARTNER)

    def announce(step: int) -> None:
        fake.intents.publish(RobotIntent(task_id='resend', attempt=RUN, step=step,
                                         action=NOOP))

    announce(0)
    first = fake.wait_goals(1)
    assert first[0][0] == 0 and not first[0][2], first
    assert processes.wait_for_log(PARTNER, 'failed: the world restarted', 30.0), \
        processes.log(PARTNER)
    fake.intents.publish(RobotIntent(task_id='resend', attempt=RUN, step=0, action=NOOP,
                                     repeated=True))   # the executor's repeat: sent again
    goals = fake.wait_goals(2)
    assert goals[1] == (0, first[0][1], True), goals
    announce(0)                                  # the world has it (or may): not again
    announce(1)                                  # the next step, after the repeat
    goals = fake.wait_goals(3)
    assert [g[0] for g in goals] == [0, 0, 1], goals
    assert fake.attempts == [RUN] * 3   # each goal names the run of the task it is for
    assert 'sending it again' in processes.log(PARTNER)
    assert processes.alive(PARTNER)


@pytest.mark.parametrize('world', [True], indirect=True)
def test_a_partner_that_hears_only_the_repeat_acts_on_it_but_does_not_answer_it(world):
    """A partner restarted after a step's window closed: its answer would be refused."""
    fake, processes = world
    task = make_task('late', ['(item-at plate study)'], robot='study', human='kitchen')
    fake.tasks.publish(conv.task_msg(task))
    assert processes.wait_for_log(PARTNER, 'task late: planned', 60.0), processes.log(PARTNER)
    fake.intents.publish(RobotIntent(task_id='late', step=0, action=NOOP, repeated=True))
    assert fake.wait_goals(1)[0][0] == 0, processes.log(PARTNER)
    fake.intents.publish(RobotIntent(task_id='late', step=1, action=NOOP))
    assert fake.wait_correction(1) == [1], processes.log(PARTNER)
    assert [g[0] for g in fake.wait_goals(2)] == [0, 1], processes.log(PARTNER)


@pytest.mark.parametrize('world', [{'partner_behaviour': 'person', 'answer_intents': False}],
                         indirect=True)
def test_a_run_begun_again_ends_the_wait_for_the_persons_choice_of_the_old_one(world):
    """A task interrupted while the partner waits for the person's choice (a node of the
    graph was lost) is run again. The new run's request must end that wait: tasks and
    intents are handled one at a time, so it would otherwise queue behind it for ever,
    and the new run's steps would never be taken whatever the person chose."""
    fake, processes = world
    task = make_task('rerun', ['(item-at plate study)'], robot='study', human='kitchen')
    fake.tasks.publish(conv.task_msg(task, attempt=RUN))
    assert processes.wait_for_log(PARTNER, 'task rerun: planned', 60.0), processes.log(PARTNER)
    fake.intents.publish(RobotIntent(task_id='rerun', attempt=RUN, step=0, action=NOOP))
    assert processes.wait_for_log(PARTNER, "step 0: waiting for the person's choice", 30.0), \
        processes.log(PARTNER)
    fake.tasks.publish(conv.task_msg(task, attempt=RUN + 1))
    fake.choices.publish(PartnerChoice(task_id='rerun', attempt=RUN + 1, step=0, action=NOOP,
                                       sender='test'))
    fake.intents.publish(RobotIntent(task_id='rerun', attempt=RUN + 1, step=0, action=NOOP))
    goals = fake.wait_goals(1)
    assert [g[0] for g in goals] == [0], processes.log(PARTNER)
    assert fake.attempts == [RUN + 1]   # nothing was sent for the run that ended
    assert f'run {RUN} of task rerun ended' in processes.log(PARTNER)
    assert processes.alive(PARTNER)
