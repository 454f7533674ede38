"""Play mode (issue 36): a person plays the partner on the web panel, by key presses only.

First the panel's ROS-free part: which of the partner's actions it offers and on which
keys, how it reads a step's outcome from two team states (a self-loop included), and
which choices it refuses and why. Then, per domain, the installed node processes over DDS
as ``play:=true`` runs them (simulated_human ``partner_behaviour: person``, the panel's
``play``, a world without a step limit) with the page in a real headless Chromium: TidyUP
(household renderer), the workshop file domain (facts renderer) and Overcooked (kitchen
renderer, macro actions on fixed keys). Each plays a task's first steps: at step 0 the
robot is told to wait (``W``) and the person picks an action the assigned partner type
lacks, which the page shows as failed and the world's team_state shows unchanged; at step 1
one key picks a capable action and agrees to the robot's intent. Each graph is stopped
after its steps.

Without Chromium or Playwright the browser tests skip with the reason, except with
CI=true, where they fail.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

rclpy = pytest.importorskip('rclpy', reason='needs rclpy (make build)')
pytest.importorskip('cecm_ros.msg', reason='needs the generated interfaces (make build)')

import yaml  # noqa: E402
from browser_fixtures import browser_or_skip, panel_in_chromium  # noqa: E402
from graph_fixtures import (  # noqa: E402
    MANAGER,
    NODES,
    NodeProcesses,
    RosClient,
    RosDomain,
    installed_or_skip,
    scaled,
    write_overcooked_task_file,
)
from paths import REPO  # noqa: E402

from cecm_ros.core.domain import HUMAN, NOOP  # noqa: E402
from cecm_ros.core.simulator import WorldSimulator  # noqa: E402
from cecm_ros.domains import load_domain  # noqa: E402
from cecm_ros.msg import CorrectionStatus, PartnerChoice, TaskRequest, TeamState  # noqa: E402
from cecm_ros.nodes.common import QOS_EVENTS, QOS_TEAM_STATE  # noqa: E402
from cecm_ros.nodes.conversions import (  # noqa: E402
    TeamStates,
    state_from_team_state,
    task_from_msg,
    team_state_msg,
)
from cecm_ros.nodes.web_panel import relay_checks  # noqa: E402
from cecm_ros.web.session_state import (  # noqa: E402
    ChoiceRefusedError,
    SessionState,
    explain_step,
    play_keys,
)

PANEL = 'web_panel'
GRAPH = (*NODES[:-1], PANEL, NODES[-1])     # the panel serves before the session starts
SENDER = 'web_panel'
TOKEN = 'play-token'
UI_MS = round(scaled(60_000))
STATE_WAIT_S = 60.0
WORKSHOP = REPO / 'config' / 'domains' / 'workshop' / 'domain.yaml'


# ================================================================ the pure parts
def test_keys_are_1_to_9_then_letters_and_0_waits():
    actions = [NOOP, *(f'(a{i} human)' for i in range(12))]
    keys = [entry['key'] for entry in play_keys(actions)]
    assert keys == ['0', *'123456789', 'b', 'c', 'd']     # A and W are the robot's
    # A domain's fixed keys (Overcooked's macro actions): the same key in every state.
    fixed = play_keys([NOOP, '(chop partner)', '(get_onion partner)'],
                      key_order=['get_lettuce', 'get_onion', 'chop'])
    assert [(e['action'], e['key']) for e in fixed] == \
        [(NOOP, '0'), ('(chop partner)', '3'), ('(get_onion partner)', '2')]


def _team_state(model, task_id, step, state, robot='', human=''):
    return team_state_msg(model, task_id, step, state, robot_action=robot, human_action=human)


def _play_session(model):
    """The panel's session in play mode, as the node makes it."""
    return SessionState(model=model, sender=SENDER,
                        state_of=functools.partial(state_from_team_state, model),
                        team_states=TeamStates(model), checks=relay_checks(model),
                        window_s=10.0, play=True,
                        task_of=functools.partial(task_from_msg, model))


def _tidyup_task(model):
    """The partner in the study with the plate, which low_capability may not pick up."""
    return model.task_from_dict({
        'id': 'play-study', 'goal': ['(item-at plate kitchen)'],
        'initial': ['(agent-at robot kitchen)', '(agent-at human study)', '(hand-free robot)',
                    '(hand-free human)', '(item-at plate study)', '(item-at bowl kitchen)',
                    '(item-at toothbrush bathroom)', '(item-at blanket bedroom)',
                    '(clean plate)', '(clean bowl)', '(clean toothbrush)',
                    '(clean blanket)']}, 'play-study')


def test_the_session_offers_the_partners_actions_and_explains_a_self_loop():
    model = load_domain('tidyup')
    task = _tidyup_task(model)
    request = TaskRequest(task_id=task.task_id, initial_propositions=sorted(task.initial),
                          goal_propositions=sorted(task.goal))
    session = _play_session(model)
    session.observe('task', request)
    start = model.initial_state(task)
    session.observe('team_state', _team_state(model, task.task_id, 0, start))
    play = session.to_json()['play']
    assert play['step'] == 0 and play['problem'] == '' and play['chosen'] is None
    assert [e['action'] for e in play['actions']] == \
        [NOOP, *model.applicable_actions(start, HUMAN)]
    assert play['actions'][0]['key'] == '0' and play['actions'][1]['key'] == '1'
    lacking = '(pick human plate study)'
    assert lacking in [e['action'] for e in play['actions']]
    # Refused, with the reason, and nothing recorded.
    for given, reason in [
            (dict(step=1, action=NOOP), 'step 1 is not open: the world is at step 0'),
            (dict(task_id='other'), "the choice is for task 'other'"),
            (dict(attempt=4), 'the choice is for run 4'),
            (dict(action='(juggle human)'), "unknown action '(juggle human)'"),
            (dict(action='(move robot kitchen study)'), 'is an action of the robot'),
            (dict(action='(move human kitchen study)'), 'does not apply at step 0')]:
        choice = {'task_id': task.task_id, 'attempt': 0, 'step': 0, 'action': lacking,
                  'sender': 'me', **given}
        with pytest.raises(ChoiceRefusedError, match=re.escape(reason)):
            session.take_choice(**choice)
    assert session.to_json()['play']['chosen'] is None
    assert session.take_choice(task.task_id, 0, 0, ' ( pick human plate study ) ', 'me') == \
        (lacking, 0)
    assert session.to_json()['play']['chosen'] == {'action': lacking, 'sender': 'me'}
    with pytest.raises(ChoiceRefusedError, match='step 0 has a choice already'):
        session.take_choice(task.task_id, 0, 0, NOOP, 'me')
    # The world of a low_capability partner: the pick self-loops, the robot moves on.
    world = WorldSimulator(model, model.catalog.resolve('low_capability'), start)
    world.step('(move robot kitchen study)', lacking)
    session.observe('team_state', _team_state(model, task.task_id, 1, world.state,
                                              '(move robot kitchen study)', lacking))
    play = session.to_json()['play']
    assert play['step'] == 1 and play['chosen'] is None
    assert play['history'] == [{
        'step': 0, 'human_action': lacking, 'robot_action': '(move robot kitchen study)',
        'human': 'failed', 'human_reason': 'missing capability pick_study',
        'robot': 'done', 'robot_reason': ''}]
    # A task whose goal holds offers nothing.
    done = model.state_from_atoms({*task.initial, '(item-at plate kitchen)'}
                                  - {'(item-at plate study)'})
    session.observe('team_state', _team_state(model, task.task_id, 2, done))
    play = session.to_json()['play']
    assert (play['step'], play['actions']) == (None, [])
    assert play['problem'] == "the task's goal is reached"
    with pytest.raises(ChoiceRefusedError, match="the task's goal is reached"):
        session.take_choice(task.task_id, 0, 2, NOOP, 'me')


def test_a_step_is_read_from_the_states_before_and_after():
    model = load_domain('tidyup')
    start = model.initial_state(_tidyup_task(model))
    truth = model.catalog.resolve('low_capability')
    cases = [('(move human study kitchen)', '(move robot kitchen study)', ('done', 'done')),
             ('(pick human plate study)', NOOP, ('failed', 'waited')),
             (NOOP, '(move robot kitchen bedroom)', ('waited', 'done'))]
    for human, robot, expected in cases:
        world = WorldSimulator(model, truth, start)
        world.step(robot, human)
        partner, robot_did = explain_step(model, start, human, robot, world.state)
        outcome = tuple('waited' if o.action == NOOP else 'done' if o.changed else 'failed'
                        for o in (partner, robot_did))
        assert outcome == expected, (human, robot)
    # A state neither reading leads to is not explained.
    assert explain_step(model, start, NOOP, NOOP, world.state) is None


def test_overcookeds_macro_actions_keep_their_keys():
    from cecm_ros.domains import panel_view_for

    model = load_domain('overcooked')
    order = panel_view_for(model).layout()['key_order']
    task = next(t for t in model.tasks if t.task_id == 'A-lettuce_onion')
    start = model.initial_state(task)
    keys = {e['action']: e['key'] for e in
            play_keys([NOOP, *model.applicable_actions(start, HUMAN)], order)}
    assert keys['(get_lettuce partner)'] == '1' and keys['(get_plate_1 partner)'] == '4'
    assert keys[NOOP] == '0' and len(set(keys.values())) == len(keys)


# ============================================================ graph and browser
@dataclass
class Played:
    tab: object
    errors: list
    client: RosClient
    seen: dict
    processes: NodeProcesses
    model: object

    def logs(self) -> str:
        """The nodes' last log lines and what the page holds, for a failure's message."""
        page = ''
        if self.tab is not None:
            try:
                page = self.tab.evaluate('() => JSON.stringify(window.cecmPanel.state.session)')
            except Exception as error:   # noqa: BLE001 - a failure's detail only
                page = f'(no page state: {error})'
        return '\n'.join(f'--- {name}\n{self.processes.log(name)[-2500:]}'
                         for name in (*GRAPH, MANAGER)) + f'\n--- the page\'s session\n{page}'


    def wait_open(self, step: int) -> dict:
        """The session's play part once the page offers the person's actions for ``step``
        and the robot's intent of that step waits for an answer."""
        try:
            self.tab.wait_for_function(OPEN_STEP, arg=step, timeout=UI_MS)
        except Exception as error:   # noqa: BLE001 - the graph's logs say why
            raise AssertionError(f'step {step} did not open on the page: {error}\n'
                                 f'{self.logs()}') from None
        return self.tab.evaluate('() => window.cecmPanel.state.session')

    def key_of(self, action: str) -> str:
        button = self.tab.locator(f'#your-actions button[data-action="{action}"]')
        assert button.count() == 1, f'{action} is not offered'
        return button.get_attribute('data-key')

    def happened(self, step: int) -> dict:
        """What the page says happened at ``step`` (once it says)."""
        try:
            row = self.tab.wait_for_selector(f'#play-history li[data-step="{step}"]',
                                             timeout=UI_MS)
        except Exception as error:   # noqa: BLE001 - the graph's logs say why
            raise AssertionError(f'step {step} is not in the page\'s history: {error}\n'
                                 f'{self.logs()}') from None
        return {'human': row.get_attribute('data-human'),
                'robot': row.get_attribute('data-robot'), 'text': row.inner_text()}

    def state(self, step: int) -> TeamState:
        seen = self.seen['states']
        assert self.client.wait_for(lambda: any(s.step == step for s in seen), STATE_WAIT_S), \
            f'no team_state of step {step}\n{self.logs()}'
        return [s for s in seen if s.step == step][-1]

    def choices(self) -> list[tuple[int, str]]:
        return [(c.step, c.action) for c in self.seen['choices'] if c.sender == SENDER]


OPEN_STEP = """(step) => {
  const session = window.cecmPanel.state.session;
  const play = session && session.play;
  return Boolean(play && play.step === step && !play.chosen && session.open &&
    session.open.step === step && !session.open.answer &&
    !document.getElementById('agree').disabled &&
    document.querySelectorAll('#your-actions button:not([disabled])').length > 0);
}"""


@contextmanager
def playing(tmp_path, name: str, domain: str, partner: str, tasks_file):
    """The graph of ``play:=true`` on ``domain`` with one task, and the page in Chromium."""
    executables, params = installed_or_skip(PANEL)
    browser_or_skip()
    ros_domain = RosDomain()
    client = RosClient(f'play_{name}_test')
    seen: dict[str, list] = {'choices': [], 'states': [], 'statuses': []}
    client.collect(PartnerChoice, 'human/choice', QOS_EVENTS, seen['choices'])
    client.collect(TeamState, 'team_state', QOS_TEAM_STATE, seen['states'])
    client.collect(CorrectionStatus, 'robot/correction_status', QOS_EVENTS, seen['statuses'])
    processes = NodeProcesses(executables, params, ros_domain.env, tmp_path)
    # What play:=true sets (launch/cecm_graph.launch.py), with the test's timeouts.
    overrides = {
        'capability_estimator': {'samples': 40, 'store_path': 'memory'},
        'world_sim': {'partner': partner, 'step_timeout_s': 0.0},
        'simulated_human': {'partner': partner, 'partner_behaviour': 'person'},
        'executor': {'correction_window_s': scaled(120.0), 'intent_subscribers': 2,
                     'skill_timeout_s': 3600.0, 'server_wait_s': 120.0,
                     'state_timeout_s': 120.0},
        'task_manager': {'partner': partner, 'tasks_file': str(tasks_file),
                         'heldout_tasks': 0, 'task_timeout_s': 3600.0,
                         'server_wait_s': 120.0, 'message_timeout_s': 120.0},
        PANEL: {'port': 0, 'access_token': TOKEN, 'play': True},
    }
    try:
        for node in GRAPH:
            processes.start(node, {'domain': domain, **overrides.get(node, {})})
        client.wait_for_nodes(GRAPH, 60.0)
        processes.start(MANAGER, {'shutdown_timeout_s': 20.0, 'node_names': list(GRAPH)})
        up = processes.wait_for_log(PANEL, 'web panel: http://', 180.0)
        match = re.search(r'web panel: (http://\S+)', processes.log(PANEL))
        model = load_domain(domain)
        if not (up and match):
            raise AssertionError('the panel did not come up\n' + Played(
                None, [], client, seen, processes, model).logs())
        with panel_in_chromium(match.group(1), UI_MS) as (tab, errors):
            yield Played(tab, errors, client, seen, processes, model)
    finally:
        processes.close()
        client.close()
        ros_domain.release()


def _same_world(before: TeamState, after: TeamState) -> bool:
    return sorted(before.true_propositions) == sorted(after.true_propositions) and \
        list(before.state_features) == list(after.state_features)


def play_a_lacking_action(play: Played, step: int, action: str, reason: str) -> None:
    """The robot waits (W), then the person's key picks ``action``, which the assigned
    type lacks: failed on the page, the world unchanged."""
    tab = play.tab
    play.wait_open(step)
    tab.keyboard.press('w')
    tab.wait_for_selector('#answered', timeout=UI_MS)       # the robot's wait is accepted
    # The robot's step is answered: the person's key now chooses only their own action.
    assert 'also agrees' not in tab.locator('#play-agrees').inner_text()
    tab.keyboard.press(play.key_of(action))
    shown = play.happened(step)
    assert shown['human'] == 'failed' and shown['robot'] == 'waited', shown
    assert 'you could not' in shown['text'] and reason in shown['text'], shown
    assert (step, action) in play.choices()
    before, after = play.state(step), play.state(step + 1)
    assert (after.human_action, after.robot_action) == (action, NOOP)
    assert _same_world(before, after), (before, after)


def play_one_key(play: Played, step: int, action: str, words: str) -> None:
    """One key picks ``action`` (which the partner has) and agrees to the robot's intent."""
    tab = play.tab
    session = play.wait_open(step)
    intended = session['open']['intended_action']
    assert 'also agrees' in tab.locator('#play-agrees').inner_text()
    button = tab.locator(f'#your-actions button[data-action="{action}"]')
    key = play.key_of(action)
    assert button.locator('kbd').inner_text() == key.upper()
    assert words in button.locator('.label').inner_text()
    statuses = play.seen['statuses']
    tab.keyboard.press(key)
    assert play.client.wait_for(lambda: any(
        s.sender == SENDER and s.step == step and s.accepted for s in statuses), 60.0), \
        f'the robot got no agreement of step {step}\n{play.logs()}'
    verdict = next(s for s in statuses if s.sender == SENDER and s.step == step and s.accepted)
    assert verdict.corrected_action == verdict.intended_action == intended
    shown = play.happened(step)
    assert shown['human'] == ('waited' if action == NOOP else 'done'), shown
    assert (step, action) in play.choices()
    assert play.state(step + 1).human_action == action


BAD_CHOICES = """async ([choices]) => {
  const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws' + location.search);
  await new Promise((resolve) => { ws.onopen = resolve; });
  const answers = [];
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.op === 'status' && String(message.id).startsWith('bad')) answers.push(message);
  };
  choices.forEach((msg, i) => ws.send(JSON.stringify(
    { op: 'publish', id: 'bad' + i, topic: '/human/choice', msg })));
  const deadline = Date.now() + 10000;
  while (answers.length < choices.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  ws.close();
  return answers.map((a) => [a.id, a.level, a.msg]);
}"""


def test_play_tidyup_by_keys(tmp_path):
    model = load_domain('tidyup')
    task = _tidyup_task(model)
    tasks_file = tmp_path / 'tasks.yaml'
    tasks_file.write_text(yaml.safe_dump({'tasks': [model.task_to_dict(task)]}))
    with playing(tmp_path, 'tidyup', 'tidyup', 'low_capability', tasks_file) as play:
        tab = play.tab
        play.wait_open(0)
        assert tab.locator('#play-card').is_visible() and tab.locator('#play-keys').is_visible()
        assert tab.locator('#house [data-room]').count() == 5     # the household renderer
        play_a_lacking_action(play, 0, '(pick human plate study)',
                              'missing capability pick_study')
        # Bad choices over the page's WebSocket: refused with the reason, none published.
        published = len(play.choices())
        play.wait_open(1)
        answers = tab.evaluate(BAD_CHOICES, [[
            {'task_id': task.task_id, 'step': 7, 'action': 'noop'},
            {'task_id': task.task_id, 'step': 1, 'action': '(juggle human)'},
            {'task_id': 'another-task', 'step': 1, 'action': 'noop'},
            {'task_id': task.task_id, 'step': 1, 'action': '(move robot study kitchen)'}]])
        assert [level for _, level, _ in answers] == ['error'] * 4, answers
        reasons = dict((i, text) for i, _, text in answers)
        assert 'step 7 is not open: the world is at step 1' in reasons['bad0']
        assert "unknown action '(juggle human)'" in reasons['bad1']
        assert "the choice is for task 'another-task'" in reasons['bad2']
        assert 'is an action of the robot' in reasons['bad3']
        play_one_key(play, 1, '(move human study kitchen)', 'go to kitchen')
        assert len(play.choices()) == published + 1
        # "wait" on 0; the plan's lanes mark the step the partner could not do.
        play_one_key(play, 2, NOOP, 'wait')
        tag = tab.wait_for_selector('#plan tr[data-step="0"] td.human .tag', timeout=UI_MS)
        assert tag.inner_text() == 'could not'
        assert not play.errors, play.errors


def test_play_the_workshop_file_domain_by_keys(tmp_path):
    model = load_domain(str(WORKSHOP))
    task = model.task_from_dict({
        'id': 'play-bench', 'goal': ['(inspected bolt)'],
        'initial': ['(agent-at robot inspection)', '(agent-at worker bench)',
                    '(hand-free robot)', '(hand-free worker)', '(part-at bolt bench)',
                    '(part-at bracket shelf)', '(part-at gear shelf)',
                    '(part-at panel shelf)']}, 'play-bench')
    tasks_file = tmp_path / 'tasks.yaml'
    tasks_file.write_text(yaml.safe_dump({'tasks': [model.task_to_dict(task)]}))
    # The apprentice carries parts anywhere but neither assembles nor inspects.
    with playing(tmp_path, 'workshop', str(WORKSHOP), 'apprentice', tasks_file) as play:
        tab = play.tab
        play.wait_open(0)
        assert tab.locator('#facts').is_visible() and tab.locator('#house').is_hidden()
        play_a_lacking_action(play, 0, '(assemble worker bolt bench)',
                              'missing capability assemble')
        # No phrases in a file domain: the action's name and arguments, the agent left out.
        play_one_key(play, 1, '(fetch worker bolt bench)', 'fetch bolt bench')
        assert not play.errors, play.errors


def test_play_overcooked_by_keys(tmp_path):
    tasks_file = write_overcooked_task_file(tmp_path / 'tasks.yaml')
    # type_1 cannot handle any vegetable.
    with playing(tmp_path, 'overcooked', 'overcooked', 'type_1', tasks_file) as play:
        tab = play.tab
        tab.wait_for_selector('#house [data-agent=partner]', timeout=UI_MS)
        session = play.wait_open(0)
        keys = {e['action']: e['key'] for e in session['play']['actions']}
        # Macro actions on fixed keys, in the domain's order.
        assert keys['(get_lettuce partner)'] == '1' and keys['(get_plate_1 partner)'] == '4'
        play_a_lacking_action(play, 0, '(get_lettuce partner)', 'the partner lacks '
                              'handle_lettuce')
        play_one_key(play, 1, '(get_plate_1 partner)', 'get plate 1')
        assert not play.errors, play.errors
