"""A scripted participant: a "person" in Chromium who does a study through its pages and
plays the partner on the web panel by key presses, as a person would.

It reads what a person sees (the study page's screen, the panel's task, world and offered
actions) and decides as the simulated partner of a behaviour would
(:class:`~cecm_ros.core.partners.SimulatedPartner`, docs/partners.md): it knows the
capability type the set assigns (the set's page says it), plans under it (or, a partner
of another decision rule such as ``greedy``, decides from the world it sees), corrects
the robot's intent when its plan needs another robot action (Shift+digit, or W for
wait), and presses its own action's key (which also agrees when there is nothing to
correct; a partner that follows no plan lets the intent's window close first, as a
person who says nothing). Its seeds and searches are its own, never the estimator's.

It is for tests and for a synthetic study (docs/study.md): the data it makes is
labelled scripted, not human. Needs Playwright for Python and Chromium
(``CECM_CHROMIUM``, default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cecm_ros.core.domain import NOOP, Domain, Task
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.core.partners import SimulatedPartner, resolve_partner_behaviour

CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                 '--disable-background-networking', '--disable-component-update',
                 '--disable-sync']
POLL_S = 0.1
# A step's intent normally shows within a moment of its world state; after this long the
# participant chooses without it (the robot's window then runs out as consent).
INTENT_WAIT_S = 20.0
UI_MS = 60_000

# What a person sees of the panel, for one decision: the step open for them, the robot's
# intent of that step, the task and the world's state at that step.
PANEL_VIEW = """() => {
  const panel = window.cecmPanel;
  if (!panel || !panel.state) return null;
  const s = panel.state;
  const session = s.session;
  const play = session && session.play;
  if (!play || play.step === null || play.step === undefined || play.chosen) return null;
  if (!s.connected || s.chosen === play.task_id + '/' + play.attempt + '/' + play.step) {
    return null;
  }
  const team = s.teamTask === play.task_id && s.teamStates ? s.teamStates.get(play.step) : null;
  if (!team || !s.task || s.task.task_id !== play.task_id) return null;
  const shown = session.open && session.open.task_id === play.task_id &&
    session.open.step === play.step ? session.open : null;
  const open = shown && !shown.answer && !shown.window_closed ? shown : null;
  const robot = open ? open.actions.filter((a) => a !== 'noop' && a !== open.intended_action)
    : [];
  return {task_id: play.task_id, attempt: play.attempt, step: play.step,
          offered: play.actions.map((e) => [e.action, e.key]),
          intent: open ? open.intended_action : null, alternatives: robot,
          window: shown ? (shown.answer ? 'answered' : shown.window_closed ? 'closed' : 'open')
            : null,
          initial: s.task.initial_propositions, goal: s.task.goal_propositions,
          facts: team.true_propositions, features: Array.from(team.state_features || [])};
}"""


class ParticipantStoppedError(Exception):
    pass


def chromium_path() -> str:
    path = os.environ.get('CECM_CHROMIUM', '/usr/bin/chromium')
    if not os.access(path, os.X_OK):
        raise ConfigError(f'the scripted participant needs Chromium: none at {path} (apt-get '
                          'install chromium, or point CECM_CHROMIUM at one)')
    return path


def check_browser() -> None:
    """Raise ConfigError, saying how to get them, without Playwright or Chromium."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise ConfigError('the scripted participant needs Playwright for Python (pip install '
                          'playwright; `make test` installs it into .venv)') from None
    chromium_path()


class ScriptedParticipant:
    """Does one participant's study at ``url`` (the study pages, with token)."""

    def __init__(self, domain: Domain, url: str, behaviour: str, seed: int = 0,
                 answer_seed: int = 0, say: Callable[[str], None] | None = None,
                 headless: bool = True, planner: Any = None):
        from cecm_ros.domains import planner_for

        self.domain, self.url, self.seed = domain, url, seed
        self.behaviour = resolve_partner_behaviour(
            behaviour, 0.0, default=domain.default_partner_behaviour)
        self.behaviour.check()
        # The plan store the nodes share: a plan the graph made already is read, not
        # searched again (the same search gives the same plan); the partner's own
        # searches take seeds of its own (SimulatedPartner).
        self.planner = planner if planner is not None else \
            planner_for(domain, workers=1, plan_cache=True)
        self._decided: tuple | None = None   # the step it last decided (decided once)
        self.answers = np.random.default_rng([answer_seed, 31])
        self.say = say or (lambda line: None)
        self.headless = headless
        self._stop = threading.Event()
        self.steps_played = 0
        self.corrections = 0

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ---------------------------------------------------------------- the study
    def play(self) -> None:
        """The whole study, until its last page (or :meth:`stop`)."""
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), headless=self.headless, args=CHROMIUM_ARGS)
            try:
                study = browser.new_page()
                self._open(study, self.url)
                panel = None
                handled = ''
                while not self._stop.is_set():
                    name, sequence, data = self._screen(study, handled)
                    handled = sequence
                    if name == 'done':
                        self.say(f'scripted participant: done ({self.steps_played} steps '
                                 f'played, {self.corrections} corrections)')
                        return
                    if name in ('consent', 'instructions', 'set'):
                        study.wait_for_selector('#continue:focus', timeout=UI_MS)
                        study.keyboard.press('Enter')
                    elif name == 'questionnaire':
                        self._answer(study)
                    elif name == 'playing' and study.locator('#panel').count():
                        link = study.get_attribute('#panel', 'href') or ''
                        if panel is None or panel.is_closed():
                            panel = browser.new_page(viewport={'width': 1280, 'height': 800})
                        self._open(panel, link)
                        self._play_set(panel, study, sequence, data['type'])
            except ParticipantStoppedError:
                return
            finally:
                browser.close()

    def _open(self, tab, link: str, timeout_s: float = 120.0) -> None:
        """Open ``link``; a refused connection (the panel restarting) is tried again, as
        a person would reload."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                tab.goto(link)
                return
            except Exception:  # noqa: BLE001 - Playwright's error of a refused page
                if time.monotonic() > deadline or self._stop.is_set():
                    raise
                time.sleep(1.0)

    def _screen(self, study, handled: str) -> tuple[str, str, dict[str, str]]:
        """The next screen after the one ``handled`` (its sequence)."""
        while not self._stop.is_set():
            data = study.evaluate('() => Object.assign({}, document.body.dataset)')
            if data.get('screen') and data.get('sequence') != handled:
                return data['screen'], data['sequence'], data
            time.sleep(POLL_S)
        raise ParticipantStoppedError()

    def _answer(self, study) -> None:
        """Each Likert item by keys: Space picks 1, each ArrowRight one more, Tab goes on."""
        study.wait_for_selector('#answers input:focus', timeout=UI_MS)
        groups = study.evaluate("""() => Array.from(document.querySelectorAll(
            '#answers fieldset')).map((f) => f.querySelectorAll('input').length)""")
        for points in groups:
            point = int(self.answers.integers(1, points + 1))
            study.keyboard.press('Space')
            for _ in range(point - 1):
                study.keyboard.press('ArrowRight')
            study.keyboard.press('Tab')
        study.keyboard.press('Enter')

    # ------------------------------------------------------------------ a set
    def _play_set(self, panel, study, sequence: str, partner_type: str) -> None:
        """Play until the study page leaves this set's 'playing' screen."""
        truth = self.domain.catalog.resolve(partner_type)
        partner = SimulatedPartner(self.planner, truth, self.behaviour, seed=self.seed)
        try:
            self._play_tasks(panel, study, sequence, partner)
        finally:
            partner.close()

    def _play_tasks(self, panel, study, sequence: str, partner: SimulatedPartner) -> None:
        human: Any = None
        run: tuple[str, int] | None = None
        first_seen: dict[tuple[str, int, int], float] = {}
        while not self._stop.is_set():
            if study.evaluate('() => document.body.dataset.sequence') != sequence:
                return
            try:
                view = panel.evaluate(PANEL_VIEW)
            except Exception:  # noqa: BLE001 - the panel reloading or restarting
                view = None
            if view is None:
                time.sleep(POLL_S)
                continue
            key = (view['task_id'], view['attempt'], view['step'])
            if view['intent'] is None and view['window'] != 'closed' and \
                    time.monotonic() - first_seen.setdefault(key, time.monotonic()) < \
                    INTENT_WAIT_S:
                time.sleep(POLL_S)
                continue
            if run != key[:2]:
                run = key[:2]
                human = self._begin(view, partner)
            assert human is not None
            self._step(panel, human, view)
        raise ParticipantStoppedError()

    def _begin(self, view: dict, partner: SimulatedPartner) -> Any:
        task = Task(view['task_id'], frozenset(self.domain.canonical_atoms(view['initial'])),
                    frozenset(self.domain.canonical_atoms(view['goal'])))
        human = partner.for_task(task.task_id)
        human.begin_task(task)
        self._decided = None
        return human

    def _step(self, panel, human: Any, view: dict) -> None:
        state = self.domain.state_from_wire(view['facts'], view['features'])
        while human.step < view['step']:   # the steps taken since its last decision
            human.advance(state)
        if not human.expects(state):
            try:
                human.replan(state)
            except CecmError:
                pass   # no plan from here: its old one, as the simulated partner does
        step_key = (view['task_id'], view['attempt'], view['step'])
        if self._decided != step_key:   # a step read again is not decided again
            human.choose_step(state, view['intent'] or NOOP)
            self._decided = step_key
        own = human.current_step.human
        keys = {action: key for action, key in view['offered'] if key}
        if own not in keys:
            own = NOOP
        if view['intent'] is not None:
            correction = human.review_intent(view['intent'])
            if correction is not None and not self._correct(panel, view, correction.corrected):
                return   # not taken (yet): the step is read again from the panel
            if correction is None and not human.enforces_plan:
                return   # no answer: its own key once the window has closed
        elif view['window'] is None and not self._intent_still_missing(panel, view):
            return       # the intent came meanwhile: decide with it
        # (A window answered already, or closed - its intent heard again while the world
        # waits for the partner - leaves the robot's step decided: only its own key.)
        panel.keyboard.press(keys[own])
        self.steps_played += 1
        # The simulated partner moves past this step when the panel shows the next one
        # (the catch-up above): a refused choice leaves it at this step.
        # The next decision waits for the panel to show the choice was taken.
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not self._stop.is_set():
            taken = panel.evaluate("""(key) => { const p = window.cecmPanel.state.session;
              const play = p && p.play;
              return !play || play.step !== key[2] || Boolean(play.chosen) ||
                window.cecmPanel.state.chosen === key.join('/'); }""",
                                   [view['task_id'], view['attempt'], view['step']])
            if taken:
                return
            time.sleep(POLL_S)

    def _intent_still_missing(self, panel, view: dict) -> bool:
        """Whether the step's intent is still not shown (choosing then agrees to
        nothing); False when it came since ``view`` was read."""
        return bool(panel.evaluate("""(key) => { const p = window.cecmPanel.state.session;
          return !p || !p.open || p.open.task_id !== key[0] || p.open.step !== key[1]; }""",
                                   [view['task_id'], view['step']]))

    def _correct(self, panel, view: dict, wanted: str) -> bool:
        """Tell the robot to do ``wanted`` instead of its intent (W: wait); whether the
        panel shows the step answered (its own key may then go out without agreeing)."""
        alternatives = view['alternatives']
        if wanted != NOOP and wanted not in alternatives:
            return True   # not the robot's to do now: its intent passes
        if wanted == NOOP:
            panel.keyboard.press('w')
        elif (index := alternatives.index(wanted) + 1) <= 9:
            panel.keyboard.press(f'Shift+Digit{index}')
        else:   # beyond the keys: its button
            panel.click(f'#alternatives button[data-action="{wanted}"]')
        # Its own key next must not agree as well: wait until the answer is the step's.
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not self._stop.is_set():
            answered = panel.evaluate("""(step) => { const p = window.cecmPanel.state.session;
              return Boolean(p && p.open && p.open.step === step && p.open.answer); }""",
                                      view['step'])
            if answered:
                self.corrections += 1
                return True
            time.sleep(POLL_S)
        return False
