"""The browser panel on a domain of one's own: the workshop, drawn by the generic renderer
(the facts that hold, the goal's facts, actions in words) and answered by a person in a
real Chromium through the whole task.

The graph runs with every node's ``domain`` parameter at config/domains/workshop/; the
simulated partner acts but leaves the robot's intents to the page, as in a study.
"""

from __future__ import annotations

import re
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

from browser_fixtures import browser_or_skip, panel_in_chromium  # noqa: E402
from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
)
from paths import REPO  # noqa: E402

from cecm_ros.msg import CorrectionStatus, RobotIntent, TaskReport  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_HISTORY  # noqa: E402

DOMAIN_FILE = REPO / 'config' / 'domains' / 'workshop' / \
    'domain.yaml'
PANEL = 'web_panel'
GRAPH = (*NODES[:-1], PANEL, NODES[-1])
# A partner who can do everything: agreeing with every intent of a robot that plans
# under the prior finishes the task.
PARTNER = 'full'
TOKEN = 'workshop-token'
UI_MS = round(scaled(45_000))
STEP_LIMIT_S = scaled(240.0)   # from one intent to the next or the task's report


@pytest.fixture(scope='module')
def graph(tmp_path_factory):
    executables, params = installed_or_skip(PANEL)
    ros_domain = RosDomain()
    work = tmp_path_factory.mktemp('web_workshop')
    client = RosClient('web_workshop_test')
    processes = NodeProcesses(executables, params, ros_domain.env, work)
    seen = {'intents': [], 'statuses': [], 'reports': []}
    client.collect(RobotIntent, 'robot/intent', QOS_EVENTS, seen['intents'])
    client.collect(CorrectionStatus, 'robot/correction_status', QOS_EVENTS, seen['statuses'])
    client.collect(TaskReport, 'task_manager/task_report', QOS_HISTORY, seen['reports'])
    domain = {'domain': str(DOMAIN_FILE)}
    overrides = {
        'capability_estimator': {'samples': 40},
        'world_sim': {'partner': PARTNER},
        'simulated_human': {'partner': PARTNER, 'answer_intents': False},
        'executor': {'correction_window_s': scaled(120.0), 'intent_subscribers': 2,
                     'server_wait_s': 120.0, 'state_timeout_s': 120.0},
        'task_manager': {'partner': PARTNER, 'num_tasks': 1, 'heldout_tasks': 0,
                         'server_wait_s': 120.0, 'message_timeout_s': 120.0},
        PANEL: {'port': 0, 'access_token': TOKEN},
    }
    try:
        for node in GRAPH:
            processes.start(node, {**domain, **overrides.get(node, {})})
        client.wait_for_nodes(GRAPH, 60.0)
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0, 'node_names': list(GRAPH)})
        up = processes.wait_for_log(PANEL, 'web panel: http://', 180.0)
        match = re.search(r'web panel: (http://\S+)', processes.log(PANEL))
        yield {'processes': processes, 'client': client, 'seen': seen,
               'url': match.group(1) if up and match else ''}
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _logs(graph) -> str:
    return '\n'.join(f'--- {name}\n{graph["processes"].log(name)[-2500:]}'
                     for name in (*GRAPH, MANAGER))


@pytest.fixture(scope='module')
def page(graph):
    browser_or_skip()
    assert graph['url'], f'the panel did not come up\n{_logs(graph)}'
    with panel_in_chromium(graph['url'], UI_MS) as opened:
        yield opened


# Why the executor refuses an answer to a step that was over as it arrived.
STALE = ('no correction window is open', 'but the open correction window is for step',
         'no task is running', 'already has an answer')
# Reads the open intent and answers Agree in one go (the page re-renders live: reading
# and clicking in separate calls could straddle the next step).
AGREE = """() => {
  const agree = document.getElementById('agree');
  const intended = document.getElementById('intended');
  if (agree.disabled || !intended) return null;
  const seen = {action: intended.dataset.action, words: intended.textContent,
                alternatives: [...document.querySelectorAll('#alternatives button')]
                  .map((b) => b.dataset.action)};
  agree.click();
  return seen;
}"""


def test_a_person_answers_a_whole_workshop_task_from_the_page(graph, page):
    tab, errors = page
    seen, client = graph['seen'], graph['client']
    answered = worded = 0
    deadline = time.monotonic() + STEP_LIMIT_S
    tab.wait_for_function("() => !document.getElementById('agree').disabled", timeout=UI_MS)
    # The generic renderer: the workshop's facts by predicate, no household.
    assert tab.locator('#house').is_hidden() and tab.locator('#facts').is_visible()
    assert tab.locator('#house-title').inner_text() == 'The workshop'
    predicates = tab.locator('#facts .fact-row').evaluate_all(
        'rows => rows.map(r => r.dataset.predicate)')
    assert 'agent-at' in predicates and 'part-at' in predicates
    goal = tab.locator('#goal .g').evaluate_all('gs => gs.map(g => g.dataset.fact)')
    assert goal and all(g.startswith(('(inspected', '(assembled')) for g in goal)
    while not seen['reports']:
        assert time.monotonic() < deadline, f'no progress for {STEP_LIMIT_S:.0f} s\n' + \
            _logs(graph)
        before = len(seen['statuses'])
        intent = tab.evaluate(AGREE)
        if intent is None:
            client.wait_for(lambda: bool(seen['reports']), 0.5)
            continue
        # The intent and the other choices (the robot's actions that apply now) in words:
        # the action's name and arguments, the agent left out.
        action, words = intent['action'], intent['words']
        if action == 'noop':
            assert words == 'wait'
        else:
            assert ' robot ' in action and '(' not in words and 'robot' not in words, words
            assert words.split()[0] == action.strip('()').split()[0]
            worded += 1
        assert all(' robot ' in a for a in intent['alternatives']), intent
        assert client.wait_for(lambda count=before: len(seen['statuses']) > count, 60.0), \
            _logs(graph)
        verdict = seen['statuses'][-1]
        # The page may still show a step the robot has left (the answer crossed the next
        # intent, or the task's end): the executor refuses it and nothing changes.
        assert verdict.accepted or any(stale in verdict.reason for stale in STALE), verdict
        answered += verdict.accepted
        deadline = time.monotonic() + STEP_LIMIT_S
    assert answered >= 1 and worded >= 1
    report = seen['reports'][-1]
    assert report.goal_reached, report
    assert not errors, errors
