"""The node graph end to end: the installed executables as separate processes over DDS.

One short session (2 tasks, 60 CE-CM samples, a low_capability partner) runs once per
module; the tests then check, from this process over DDS, that the belief moved
toward the partner's true capabilities, that corrections were counted, that malformed
messages are refused with a warning while every node keeps running, and that all
processes exit cleanly on SIGINT. The session is waited for while it makes progress
(graph_fixtures.wait_progressing); no assertion depends on how long something took.

This is the launch-free equivalent of test_launch_tidyup.py (which needs
launch_testing, not available from PyPI).
"""

from __future__ import annotations

import json
import re
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
)
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from cecm_ros.action import EstimateCapabilities, ExecuteSkill  # noqa: E402
from cecm_ros.core import metrics  # noqa: E402
from cecm_ros.domains.tidyup.model import TidyUpModel  # noqa: E402
from cecm_ros.msg import (  # noqa: E402
    CapabilityBelief,
    Correction,
    RobotIntent,
    StepResult,
    TaskOutcome,
    TaskRequest,
    TeamState,
)
from cecm_ros.srv import LoadBelief, PlanTask, SaveBelief  # noqa: E402

PARTNER = 'low_capability'
TASKS = 2
SAMPLES = 60
# The graph reproduces the core exactly: with this seed the posterior (N=60) moves the
# estimate toward low_capability within two tasks.
SEED = 0
WRONG_STEP_ATTEMPTS = 8
DISCOVERY_TIMEOUT_S = 30.0
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
EVENTS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    """Start the graph, run the session, keep the nodes running for the tests."""
    executables, params = installed_or_skip(MANAGER)
    ros_domain = RosDomain()
    env = ros_domain.env
    domain = ros_domain.domain_id
    work = tmp_path_factory.mktemp('graph')
    client = RosClient('cecm_graph_test')
    processes = NodeProcesses(executables, params, env, work)
    state = {'beliefs': [], 'steps': [], 'requests': [], 'sent_wrong_steps': [], 'work': work,
             'client': client, 'processes': processes, 'domain': domain}

    def on_step(msg: StepResult) -> None:
        # While a task runs: a correction for a step that is not open. The subscription
        # may join late and the step seen may be a task's last, so the correction can
        # land between tasks ("no task is running"); try again on the next few steps
        # until the executor has refused one for its step.
        sent = state['sent_wrong_steps']
        if len(sent) < WRONG_STEP_ATTEMPTS and not _refusals(processes):
            sent.append(msg.step + 50)
            state['correction_pub'].publish(Correction(
                task_id=msg.task_id, step=msg.step + 50, corrected_action='noop',
                sender='graph_test'))

    state['correction_pub'] = client.node.create_publisher(Correction, 'robot/correction',
                                                           EVENTS)
    # A second listener on robot/intent (the executor expects 2), lost after the first
    # step and back when the second task is requested: the executor must say both (the
    # loss is logged, not silent).
    state['observer'] = client.node.create_subscription(RobotIntent, 'robot/intent',
                                                        lambda _msg: None, EVENTS)

    def drop_observer(_msg: StepResult) -> None:
        if not state.get('observer_dropped'):
            state['observer_dropped'] = True
            client.node.destroy_subscription(state.pop('observer'))

    def restore_observer(msg: TaskRequest) -> None:
        if state.get('observer_dropped') and 'observer' not in state and \
                len({r.task_id for r in state['requests']}) >= 2:
            state['observer'] = client.node.create_subscription(
                RobotIntent, 'robot/intent', lambda _msg: None, EVENTS)
    state['intent_pub'] = client.node.create_publisher(RobotIntent, 'robot/intent', EVENTS)
    client.collect(CapabilityBelief, 'capability_belief', LATCHED, state['beliefs'])
    client.collect(StepResult, 'robot/step_result', EVENTS, state['steps'],
                   lambda msg: (on_step(msg), drop_observer(msg)))
    client.collect(TaskRequest, 'task/request', LATCHED, state['requests'], restore_observer)
    summary_path = work / 'summary.json'
    try:
        for node in NODES:
            overrides = {
                'capability_estimator': {'samples': SAMPLES, 'seed': SEED,
                                         'store_path': str(work / 'partners.sqlite')},
                'world_sim': {'partner': PARTNER},
                'simulated_human': {'partner': PARTNER},
                'executor': {'intent_subscribers': 2},
                'task_manager': {'partner': PARTNER, 'num_tasks': TASKS, 'seed': SEED,
                                 'exit_when_done': True,
                                 'summary_path': str(summary_path)},
            }.get(node)
            processes.start(node, overrides)
        # The nodes create their publishers when the manager configures them. Once this
        # process has discovered their participants, those publishers match this test's
        # subscriptions at once, so no early belief or step result goes by unseen.
        state['discovered'] = client.wait_for_nodes(NODES, DISCOVERY_TIMEOUT_S)
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0})
        state['task_manager_code'] = processes.wait_for_exit('task_manager',
                                                             'the end of the session')
        state['summary'] = json.loads(summary_path.read_text()) \
            if summary_path.is_file() else None
        yield state
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _refusals(processes) -> str:
    """The executor's refusals of a correction for a step that was not open."""
    return '\n'.join(line for line in processes.log('executor').splitlines()
                     if 'ignoring correction from graph_test' in line and
                     ', but ' in line and 'it is for step' in line)


def _logs(session) -> str:
    logs = '\n'.join(f'--- {name}\n{session["processes"].log(name)[-3000:]}'
                     for name in (*NODES, MANAGER))
    return f'nodes discovered before the start: {session.get("discovered")}\n{logs}'


def _hamming(msg: CapabilityBelief) -> float:
    model = TidyUpModel()
    truth = model.catalog.resolve(PARTNER)
    assert list(msg.capability_names) == list(model.catalog.names)
    return metrics.hamming(list(msg.estimate), truth)


def test_session_completes(session):
    assert session['task_manager_code'] == 0, _logs(session)
    summary = session['summary']
    assert summary is not None, _logs(session)
    assert summary['format'] == 'cecm_ros/experiment_summary/1'
    assert len(summary['per_task']) == TASKS
    for row in summary['per_task']:
        for name in ('hamming', 'hamming_active', 'correction_ratio', 'iou',
                     'infeasible_assigned', 'accepted_samples'):
            assert set(row[name]) == {'mean', 'ci95_low', 'ci95_high'}
    assert all(task['goal_reached'] for task in summary['tasks'])


def test_a_listener_on_intents_lost_in_mid_session_is_logged(session):
    log = session['processes'].log('executor')
    assert re.search(r'\[WARN\] \[executor\]: step \d+: 1 of the 2 expected subscribers '
                     r'listen on robot/intent; an intent they do not answer passes as '
                     r'consent', log), log[-3000:]
    # Said once per loss, not at every intent after it.
    assert log.count('an intent they do not answer passes as consent') == 1
    # And said when the listener is back (at a task's start or at an intent).
    lost = log.index('an intent they do not answer passes as consent')
    assert re.search(r'\[INFO\] \[executor\]: (step|task) \S+: all 2 expected subscribers '
                     r'listen on robot/intent again', log[lost:]), log[lost:][-3000:]


def test_belief_moves_toward_the_true_capabilities(session):
    beliefs = session['beliefs']
    client = session['client']
    assert client.wait_for(lambda: any(b.tasks_seen == TASKS for b in beliefs), 10.0), \
        f'beliefs seen over DDS: {[b.tasks_seen for b in beliefs]}\n{_logs(session)}'
    final = next(b for b in beliefs if b.tasks_seen == TASKS)
    # The prior (P = 0.8 for every capability, nothing decided) plans every capability
    # as present. Its message is checked when it was seen (it is latched with depth 1, so
    # a late match gets only the newest belief).
    prior = next((b for b in beliefs if b.tasks_seen == 0), None)
    if prior is not None:
        assert prior.method == 'cecm' and prior.inference == 'posterior'
        assert all(prior.estimate)
        assert set(prior.status) == {'never_exercised', 'inert'}
    truth = TidyUpModel().catalog.resolve(PARTNER)
    prior_hamming = metrics.hamming([True] * len(truth), truth)
    assert _hamming(final) < prior_hamming, \
        f'hamming {prior_hamming:.2f} (prior) -> {_hamming(final):.2f}'
    assert final.hypotheses > 0 and len(final.status) == len(truth)
    # Nothing is reported as known that is not so.
    for name, status, present in zip(final.capability_names, final.status, truth):
        assert status != 'known_present' or present, name
        assert status != 'known_absent' or not present, name


def test_the_estimator_planned_ahead_while_the_team_worked(session):
    """The estimator follows the running task (task/request, team_state) and plans its
    hypotheses while the team works: an update finds plans made ahead for its task."""
    log = session['processes'].log('capability_estimator')
    ahead = [int(n) for n in re.findall(
        r'updating with a trajectory of \d+ states \((\d+) plans made or read from the '
        r'plan store ahead\)', log)]
    assert len(ahead) == TASKS and sum(ahead) > 0, log[-3000:]
    assert 'planning ahead' not in log, log[-3000:]    # no failure was warned


def test_corrections_were_counted(session):
    summary = session['summary']
    assert summary is not None, _logs(session)
    assert sum(task['corrections'] for task in summary['tasks']) > 0
    assert any(step.corrected for step in session['steps'])
    # Confirmations are not corrections: some steps went as announced.
    assert any(not step.corrected for step in session['steps'])


def test_correction_for_a_wrong_step_is_refused_with_a_warning(session):
    processes = session['processes']
    steps = session['sent_wrong_steps']
    assert steps, 'no StepResult seen during the session'

    def refused() -> bool:
        refusals = _refusals(processes)
        return any(f'it is for step {step}, but' in refusals for step in steps)

    deadline = time.monotonic() + scaled(10.0)
    while not refused() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert refused(), f'wrong steps sent: {steps}\n{processes.log("executor")}'
    assert '[WARN] [executor]: ignoring correction from graph_test' in processes.log('executor')
    assert processes.alive('executor')


def _last_attempt(session, task_id: str) -> int:
    """The attempt of the latest run of ``task_id`` (from the task requests seen)."""
    attempt = next((r.attempt for r in reversed(session['requests']) if r.task_id == task_id),
                   None)
    assert attempt is not None, f'no task request seen for {task_id!r}\n{_logs(session)}'
    return attempt


def test_intent_with_an_unknown_action_is_refused_with_a_warning(session):
    processes = session['processes']
    last = session['summary']['tasks'][-1]['task_id'] if session['summary'] else ''
    attempt = _last_attempt(session, last)
    steps = sum(1 for s in session['steps'] if s.task_id == last)
    session['intent_pub'].publish(RobotIntent(task_id=last, attempt=attempt, step=steps,
                                              action='(fly robot plate kitchen)'))
    assert processes.wait_for_log('simulated_human', "unknown action 'fly'", 10.0), \
        processes.log('simulated_human')
    assert '[WARN] [simulated_human]: ignoring intent' in processes.log('simulated_human')
    assert processes.alive('simulated_human')


def test_outcome_with_an_unknown_proposition_leaves_the_belief_untouched(session):
    client, processes = session['client'], session['processes']
    count = len(session['beliefs'])
    bad = TaskOutcome(task_id='bad-outcome', partner_id='partner',
                      goal_propositions=['(item-at plate kitchen)'],
                      trajectory=[TeamState(task_id='bad-outcome', step=0,
                                            true_propositions=['(item-at spaceship kitchen)'])])
    response = client.send_goal(EstimateCapabilities, 'capability_estimator/estimate',
                                EstimateCapabilities.Goal(outcome=bad))
    assert response is not None and not response.result.updated
    assert 'unknown proposition' in response.result.message
    assert 'belief unchanged' in response.result.message
    assert response.result.belief.tasks_seen == TASKS
    assert processes.wait_for_log('capability_estimator', 'unknown proposition', 10.0)
    assert '[WARN] [capability_estimator]' in processes.log('capability_estimator')
    time.sleep(0.5)   # a belief published by mistake would arrive by now
    assert len(session['beliefs']) == count
    assert processes.alive('capability_estimator')


def test_world_aborts_skill_goals_for_a_wrong_step_or_an_unknown_action(session):
    client, processes = session['client'], session['processes']
    last = session['summary']['tasks'][-1]['task_id'] if session['summary'] else ''
    attempt = _last_attempt(session, last)
    wrong_step = client.send_goal(ExecuteSkill, 'robot/skills/move', ExecuteSkill.Goal(
        task_id=last, attempt=attempt, step=999, action='(move robot kitchen study)'))
    assert wrong_step is not None and not wrong_step.result.success
    assert 'goal is for step 999 but the world is at step' in wrong_step.result.message
    steps = sum(1 for s in session['steps'] if s.task_id == last)
    unknown = client.send_goal(ExecuteSkill, 'robot/skills/pick', ExecuteSkill.Goal(
        task_id=last, attempt=attempt, step=steps, action='(juggle robot plate kitchen)'))
    assert unknown is not None and not unknown.result.success
    assert "unknown action 'juggle'" in unknown.result.message
    assert processes.wait_for_log('world_sim', "unknown action 'juggle'", 10.0)
    assert '[WARN] [world_sim]: robot skill' in processes.log('world_sim')
    assert processes.alive('world_sim')


def test_loading_a_bad_belief_file_leaves_the_belief_untouched(session):
    client, work = session['client'], session['work']
    count = len(session['beliefs'])
    bad = work / 'not-a-belief.json'
    bad.write_text('{"format": "something else"}')
    for path in (bad, work / 'missing.json'):
        response = client.call(LoadBelief, 'capability_estimator/load_belief',
                               LoadBelief.Request(path=str(path)))
        assert not response.success and 'belief unchanged' in response.message
    saved = work / 'belief.json'
    response = client.call(SaveBelief, 'capability_estimator/save_belief',
                           SaveBelief.Request(path=str(saved)))
    assert response.success, response.message
    assert json.loads(saved.read_text())['tasks_seen'] == TASKS
    time.sleep(0.5)
    assert len(session['beliefs']) == count


def test_planner_refuses_a_bad_request_and_keeps_serving(session):
    client = session['client']
    model = TidyUpModel()
    task = TaskRequest(task_id='plan-check', initial_propositions=[
        '(agent-at robot kitchen)', '(agent-at human kitchen)', '(hand-free robot)',
        '(hand-free human)', '(item-at plate living_room)', '(clean plate)',
        '(item-at bowl kitchen)', '(clean bowl)', '(item-at toothbrush kitchen)',
        '(clean toothbrush)', '(item-at blanket kitchen)', '(clean blanket)'],
        goal_propositions=['(item-at plate kitchen)'])
    bad = client.call(PlanTask, 'plan_task',
                      PlanTask.Request(task=task, capabilities='fly_kitchen=0'))
    assert not bad.success and 'fly_kitchen' in bad.message
    good = client.call(PlanTask, 'plan_task',
                       PlanTask.Request(task=task, capabilities=PARTNER))
    assert good.success, good.message
    assert good.plan.planned_for == 'explicit'
    assert list(good.plan.capability_names) == list(model.catalog.names)
    assert len(good.plan.steps) > 0


def test_all_processes_exit_cleanly_on_sigint(session):
    processes = session['processes']
    running = [name for name in (*NODES, MANAGER) if name != 'task_manager']
    assert all(processes.alive(name) for name in running), _logs(session)
    codes = processes.interrupt([MANAGER])
    codes.update(processes.interrupt([n for n in running if n != MANAGER]))
    assert codes == dict.fromkeys(running, 0), f"{codes}\n{_logs(session)}"
    manager = processes.log(MANAGER)
    assert 'executor: deactivate done' in manager and 'world_sim: cleanup done' in manager
    for name in (*NODES, MANAGER):
        assert 'Traceback' not in processes.log(name), processes.log(name)
