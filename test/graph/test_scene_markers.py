"""scene_markers follows the world and the belief: the installed node as its own process,
this process playing the graph over DDS (task request, team states, intents, plans,
beliefs) and reading the MarkerArray on ``markers`` as RViz or Foxglove would.

Where a thing is drawn is read from the markers alone: a room is the ``places`` cube
under the label that names it, and the robot must stand in the room the team state
puts it in.
"""

from __future__ import annotations

import time

import pytest
import yaml

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import NodeProcesses, RosClient, RosDomain, installed_or_skip, scaled  # noqa: E402
from paths import REPO  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from cecm_ros.core.domain import ROBOT  # noqa: E402
from cecm_ros.core.inference import STATUSES  # noqa: E402
from cecm_ros.domains.pddl.model import split_atom  # noqa: E402
from cecm_ros.domains.tidyup.model import TidyUpModel  # noqa: E402
from cecm_ros.msg import (  # noqa: E402
    CapabilityBelief,
    CorrectionStatus,
    JointPlan,
    JointStep,
    RobotIntent,
    StepResult,
    TaskRequest,
    TeamState,
)
from cecm_ros.nodes import conversions as conv  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_LATCHED, QOS_TEAM_STATE  # noqa: E402
from cecm_ros.nodes.markers import BAR_LENGTH, STATUS_COLOURS  # noqa: E402

NODE = 'scene_markers'


@pytest.fixture(scope='module')
def scene(tmp_path_factory):
    executables, params = installed_or_skip(NODE)
    ros_domain = RosDomain()
    processes = NodeProcesses(executables, params, ros_domain.env,
                              tmp_path_factory.mktemp('markers'))
    client = RosClient('markers_test')
    arrays: list[MarkerArray] = []
    client.collect(MarkerArray, 'markers', QOS_LATCHED, arrays)
    publishers = {name: client.node.create_publisher(kind, topic, qos)
                  for name, kind, topic, qos in (
        ('task', TaskRequest, 'task/request', QOS_LATCHED),
        ('state', TeamState, 'team_state', QOS_TEAM_STATE),
        ('intent', RobotIntent, 'robot/intent', QOS_EVENTS),
        ('answer', CorrectionStatus, 'robot/correction_status', QOS_EVENTS),
        ('step', StepResult, 'robot/step_result', QOS_EVENTS),
        ('plan', JointPlan, 'robot/joint_plan', QOS_LATCHED),
        ('belief', CapabilityBelief, 'capability_belief', QOS_LATCHED))}
    processes.start(NODE, {'max_rate_hz': 20.0})
    try:
        deadline = time.monotonic() + scaled(30.0)
        while time.monotonic() < deadline and not all(
                p.get_subscription_count() for p in publishers.values()):
            time.sleep(0.1)
        assert all(p.get_subscription_count() for p in publishers.values()), \
            processes.log(NODE)
        model = TidyUpModel()
        task = model.task_generator(0).next_task()
        publishers['task'].publish(conv.task_msg(task, attempt=1))
        yield {'client': client, 'arrays': arrays, 'publish': publishers, 'model': model,
               'task': task, 'processes': processes, 'states': [model.initial_state(task)]}
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _latest(scene, predicate, what: str) -> MarkerArray:
    """The first array (from now on, or the latest one) that ``predicate`` accepts."""
    def found():
        return next((a for a in reversed(scene['arrays']) if predicate(a)), None)
    assert scene['client'].wait_for(lambda: found() is not None, 30.0), \
        f'no marker array {what}\n{scene["processes"].log(NODE)}'
    return found()


def _of(array: MarkerArray, ns: str, kind: int | None = None) -> list[Marker]:
    return [m for m in array.markers if m.ns == ns and (kind is None or m.type == kind)]


def _titled(text: str):
    return lambda array: any(m.text == text for m in _of(array, 'labels'))


def _room(array: MarkerArray, name: str) -> Marker:
    """The places cube under the label that names ``name``."""
    label = next(m for m in _of(array, 'labels') if m.text == name)
    return next(m for m in _of(array, 'places') if _inside(label, m))


def _inside(marker: Marker, box: Marker) -> bool:
    return abs(marker.pose.position.x - box.pose.position.x) <= box.scale.x / 2 and \
        abs(marker.pose.position.y - box.pose.position.y) <= box.scale.y / 2


def _where(model, state, predicate: str, thing: str) -> str:
    return next(split_atom(a)[2] for a in model.atoms_of(state)
                if split_atom(a)[0] == predicate and split_atom(a)[1] == thing)


def _publish_state(scene, step: int) -> None:
    model, task = scene['model'], scene['task']
    scene['publish']['state'].publish(conv.team_state_msg(model, task.task_id, step,
                                                          scene['states'][step]))


def test_the_scene_follows_the_world(scene):
    model, task = scene['model'], scene['task']
    _publish_state(scene, 0)
    array = _latest(scene, _titled(f'task {task.task_id}, step 0'), 'of step 0')
    assert array.markers[0].action == Marker.DELETEALL
    assert {m.header.frame_id for m in array.markers[1:]} == {'map'}
    rooms = list(model.household.rooms)
    assert sorted(m.text for m in _of(array, 'labels') if m.text in rooms) == sorted(rooms)
    start = scene['states'][0]
    robot = _of(array, 'agents', Marker.CUBE)
    assert len(robot) == 1 and _inside(robot[0], _room(array, _where(model, start, 'agent-at',
                                                                         'robot')))
    human = _of(array, 'agents', Marker.CYLINDER)
    assert len(human) == 1 and _inside(human[0], _room(array, _where(model, start, 'agent-at',
                                                                         'human')))
    for item in model.household.items:
        label = next(m for m in _of(array, 'labels') if m.text.split(' ')[0] == item.name)
        assert _inside(label, _room(array, _where(model, start, 'item-at', item.name)))
    # The robot goes to another room: the next array shows it there.
    move = next(a for a in model.applicable_actions(start, ROBOT) if a.startswith('(move'))
    after, _ = model.transition(start, ROBOT, move, model.catalog.all_capable())
    scene['states'].append(after)
    _publish_state(scene, 1)
    array = _latest(scene, _titled(f'task {task.task_id}, step 1'), 'of step 1')
    target = split_atom(move)[3]
    assert target != _where(model, start, 'agent-at', 'robot')
    assert _inside(_of(array, 'agents', Marker.CUBE)[0], _room(array, target))


def test_the_belief_bars_follow_the_belief(scene):
    model = scene['model']
    names = list(model.catalog.names)

    def belief(thetas, sec: int) -> CapabilityBelief:
        msg = CapabilityBelief(partner_id='partner', method='cecm', capability_names=names,
                               theta=thetas, estimate=[t >= 0.5 for t in thetas],
                               status=[STATUSES[i % len(STATUSES)] for i in range(len(names))],
                               tasks_seen=sec)
        msg.header.stamp.sec = sec
        return msg

    def bars(array):
        # Per capability a grey frame and a coloured bar, in the catalogue's order.
        return _of(array, 'belief', Marker.CUBE)[1::2]

    first = [round((i + 1) / len(names), 3) for i in range(len(names))]
    scene['publish']['belief'].publish(belief(first, 1))
    array = _latest(scene, lambda a: len(bars(a)) == len(names) and
                    abs(bars(a)[-1].scale.x - BAR_LENGTH) < 1e-6, 'with the first belief')
    for index, bar in enumerate(bars(array)):
        assert bar.scale.x == pytest.approx(max(0.02, BAR_LENGTH * first[index]))
        status = STATUSES[index % len(STATUSES)]
        rgba = STATUS_COLOURS[status]
        assert (bar.color.r, bar.color.g, bar.color.b) == pytest.approx(rgba[:3])
    texts = [m.text for m in _of(array, 'belief', Marker.TEXT_VIEW_FACING)]
    assert any(t.startswith(f'{names[0]} {first[0]:.2f}') for t in texts), texts
    # A newer belief moves the bars; an older one and a malformed one change nothing.
    second = list(reversed(first))
    scene['publish']['belief'].publish(belief(second, 3))
    array = _latest(scene, lambda a: len(bars(a)) == len(names) and
                    bars(a)[0].scale.x == pytest.approx(BAR_LENGTH * second[0]),
                    'with the second belief')
    count = len(scene['arrays'])
    scene['publish']['belief'].publish(belief(first, 2))                    # older
    scene['publish']['belief'].publish(belief([1.5] * len(names), 4))      # no probability
    assert scene['processes'].wait_for_log(NODE, 'theta must hold probabilities', 15.0)
    time.sleep(0.5)
    for array in scene['arrays'][count:]:
        assert bars(array)[0].scale.x == pytest.approx(BAR_LENGTH * second[0])
    assert scene['processes'].alive(NODE)


def test_the_next_action_and_the_plan_are_drawn(scene):
    model, task = scene['model'], scene['task']
    here = scene['states'][-1]
    step = len(scene['states']) - 1
    moves = [a for a in model.applicable_actions(here, ROBOT) if a.startswith('(move')]
    intended, instead = moves[0], moves[1]
    plan = JointPlan(task_id=task.task_id, steps=[JointStep(robot_action=intended,
                                                            human_action='noop'),
                                                  JointStep(robot_action='noop',
                                                            human_action='noop')])
    scene['publish']['plan'].publish(plan)
    scene['publish']['intent'].publish(RobotIntent(task_id=task.task_id, attempt=1,
                                                   step=step, action=intended))

    def next_text(array):
        return next((m.text for m in _of(array, 'next_action', Marker.TEXT_VIEW_FACING)), '')

    array = _latest(scene, lambda a: next_text(a) == f'next: {intended}', 'with the intent')
    arrow = _of(array, 'next_action', Marker.ARROW)
    assert len(arrow) == 1
    end = arrow[0].points[1]
    target = _room(array, split_atom(intended)[3])
    assert (end.x, end.y) == pytest.approx((target.pose.position.x, target.pose.position.y))
    listed = [m.text for m in _of(array, 'joint_plan', Marker.TEXT_VIEW_FACING)]
    assert listed and f'robot {intended}' in listed[0], listed
    # The executor accepted another answer: that is the next action now.
    scene['publish']['answer'].publish(CorrectionStatus(
        task_id=task.task_id, attempt=1, step=step, intended_action=intended,
        corrected_action=instead, accepted=True))
    _latest(scene, lambda a: next_text(a) == f'next: {instead}', 'with the accepted answer')
    # Done: no next action is drawn until the next intent.
    scene['publish']['step'].publish(StepResult(task_id=task.task_id, step=step,
                                                action=instead, corrected=True))
    scene['publish']['state'].publish(conv.team_state_msg(
        model, task.task_id, step + 1,
        model.transition(here, ROBOT, instead, model.catalog.all_capable())[0]))
    _latest(scene, lambda a: _titled(f'task {task.task_id}, step {step + 1}')(a) and
            not next_text(a), 'without a next action')


def test_the_rviz_config_shows_every_part_drawn(scene):
    """config/cecm.rviz: its MarkerArray display takes /markers as it is published
    (latched) in the markers' frame, and lists every namespace the arrays above used."""
    config = yaml.safe_load((REPO / 'config' / 'cecm.rviz').read_text())
    manager = config['Visualization Manager']
    display = next(d for d in manager['Displays']
                   if d['Class'] == 'rviz_default_plugins/MarkerArray')
    assert display['Topic']['Value'] == '/markers'
    assert (display['Topic']['Reliability Policy'], display['Topic']['Durability Policy']) == \
        ('Reliable', 'Transient Local')
    drawn = [m for array in scene['arrays'] for m in array.markers if m.action == Marker.ADD]
    assert {m.header.frame_id for m in drawn} == {manager['Global Options']['Fixed Frame']}
    used = {m.ns for m in drawn}
    assert {'places', 'agents', 'labels', 'next_action', 'joint_plan', 'belief'} <= used
    assert used <= {ns for ns, shown in display['Namespaces'].items() if shown}
