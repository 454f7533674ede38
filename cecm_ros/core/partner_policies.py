"""Partners who decide step by step by a rule of their own, not by a joint plan.

The simulated partners of :mod:`~cecm_ros.core.partners` follow a joint plan of the
robot's planner (perhaps with slips): the generative story the likelihoods model. People
decide by other rules: myopically, by habit, by heuristics of their own. A
:class:`PartnerPolicy` is such a rule. At every joint step it sees a
:class:`PartnerView` (the domain, the task, the world's state, its true capabilities,
the robot's announced intent, a generator seeded for it alone, and its own planner) and
returns its own action, optionally with a correction of the robot (:class:`PartnerMove`).
:class:`PolicyPartner` runs a policy in the shared-task loop and the partner node; it
does not enforce a plan, so a step it leaves unanswered lets the robot follow the world
(:class:`~cecm_ros.core.partners.ReplanRule`), as a silent person does.

Built in: :class:`GreedyPolicy` (``greedy``). A researcher's own model plugs in by name
(docs/partners.md, "Your own partner"): ``package.module:Class``, ``path/to/file.py:Class``
or an entry point in the group ``cecm_ros.partners``; :func:`load_policy_factory` finds
it. What a policy returns is checked: an action its capabilities do not allow, one that
is not the partner's, or one that cannot change the state is refused with
:class:`PartnerPolicyError`, naming the policy, the task, the step and the action.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .domain import HUMAN, NOOP, ROBOT, Domain, JointPlan, JointStep, Planner, State, Task
from .errors import CecmError, ConfigError, UnsolvableTaskError

ENTRY_POINT_GROUP = 'cecm_ros.partners'
# How far ahead (the partner's own actions) a greedy partner looks for its next gain.
GREEDY_DEPTH = 8
# Joint steps in a row with no gain in its reach before a greedy partner does something
# else (a random action that keeps the goal in reach and loses no progress): Carroll et
# al.'s "auto-unstuck" (in a kitchen cut in two it passes what it holds over the wall).
# More than a robot waits for a partner who leaves its part undone (ReplanRule's
# idle_limit) before it plans alone.
UNSTUCK_AFTER = 4
# A policy partner's task ends at the goal or after this many times the steps of the
# optimal plan of its true capabilities (plus a few), whatever it does.
STEP_LIMIT_FACTOR = 3
STEP_LIMIT_EXTRA = 6
_MODULE_PATH = re.compile(r'^[A-Za-z_][\w.]*$')


class PartnerPolicyError(ConfigError):
    """A partner policy is missing, malformed, or returned an action it cannot take."""


@dataclass(frozen=True)
class PartnerView:
    """What a partner policy sees at one joint step.

    ``capabilities`` are the partner's true ones (a copy: changing it changes nothing);
    ``intent`` is what the robot announced for this step (NOOP when it waits); ``rng`` is
    the partner's own generator for this task (seeded from the run's seed and the task,
    never from the estimator's); ``planner`` is the partner's own planner (its own search
    seed where the planner has one), for a policy that plans.
    """

    domain: Domain
    task: Task
    state: State
    step: int
    capabilities: np.ndarray
    intent: str
    rng: np.random.Generator
    planner: Planner

    def allowed_actions(self, state: State | None = None) -> list[str]:
        """The partner's actions that change ``state`` (default: the view's) and that its
        capabilities allow."""
        here = self.state if state is None else state
        return [action for action in self.domain.applicable_actions(here, HUMAN)
                if self.domain.partner_capable(action, self.capabilities)]


@dataclass(frozen=True)
class PartnerMove:
    """A policy's answer: its own action (NOOP: it waits) and, when it corrects the robot,
    what the robot must do instead of its intent (NOOP: wait); None leaves the intent
    unanswered."""

    action: str = NOOP
    robot: str | None = None


class PartnerPolicy(Protocol):
    """A partner's decision rule (docs/partners.md, "Your own partner").

    Made once per simulated partner as ``factory(domain=..., capabilities=..., seed=...)``
    (``seed``: the partner's own, for traits that last across tasks), then asked
    :meth:`act` at every joint step; ``begin_task(view)``, when the policy has it, is
    called at the start of each task with the view of its first step.
    """

    def act(self, view: PartnerView) -> str | PartnerMove: ...


def load_policy_factory(target: str) -> Callable[..., Any]:
    """The factory of a partner policy named by ``target``: ``package.module:Name``,
    ``path/to/file.py:Name`` or the name of an entry point in ``cecm_ros.partners``.
    Raises :class:`PartnerPolicyError` saying what could not be found."""
    text = str(target).strip()
    if ':' not in text:
        points = policy_entry_points()
        if text not in points:
            known = ', '.join(sorted(points)) or 'none installed'
            raise PartnerPolicyError(f'partner behaviour {text!r}: no partner plug-in of that '
                                     f'name (entry points of {ENTRY_POINT_GROUP}: {known})')
        try:
            factory = points[text].load()
        except Exception as error:  # noqa: BLE001 - a plug-in's own import error
            raise PartnerPolicyError(f'partner plug-in {text!r} ({points[text].value}) does '
                                     f'not load: {type(error).__name__}: {error}') from None
        return _checked_factory(factory, text)
    where, _, name = text.rpartition(':')
    if not name.isidentifier():
        raise PartnerPolicyError(f'partner behaviour {text!r}: {name!r} is not a Python '
                                 'name (write MODULE:CLASS or FILE.py:CLASS)')
    if where.endswith('.py'):
        module = _module_from_file(Path(where).expanduser(), text)
    elif _MODULE_PATH.match(where):
        try:
            module = importlib.import_module(where)
        except ImportError as error:
            raise PartnerPolicyError(f'partner behaviour {text!r}: cannot import module '
                                     f'{where!r}: {error}') from None
        except Exception as error:  # noqa: BLE001 - the module's own failure
            raise PartnerPolicyError(f'partner behaviour {text!r}: importing {where!r} '
                                     f'failed: {type(error).__name__}: {error}') from None
    else:
        raise PartnerPolicyError(f'partner behaviour {text!r}: {where!r} is neither a module '
                                 'path nor a .py file')
    factory = getattr(module, name, None)
    if factory is None:
        raise PartnerPolicyError(f'partner behaviour {text!r}: {where} has no {name!r}')
    return _checked_factory(factory, text)


def policy_entry_points() -> dict[str, metadata.EntryPoint]:
    return {point.name: point for point in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _module_from_file(path: Path, text: str) -> Any:
    if not path.is_file():
        raise PartnerPolicyError(f'partner behaviour {text!r}: no file {path}')
    name = f'cecm_partner_{abs(hash(str(path.resolve())))}'
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PartnerPolicyError(f'partner behaviour {text!r}: {path} is not a Python file')
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - the file's own failure
        del sys.modules[name]
        raise PartnerPolicyError(f'partner behaviour {text!r}: {path} failed to load: '
                                 f'{type(error).__name__}: {error}') from None
    return module


def _checked_factory(factory: Any, text: str) -> Callable[..., Any]:
    if not callable(factory):
        raise PartnerPolicyError(f'partner behaviour {text!r}: {factory!r} is not a class or '
                                 'function')
    return factory


def make_policy(factory: Callable[..., Any], text: str, domain: Domain,
                capabilities: np.ndarray, seed: int) -> Any:
    """One partner's policy from its factory, checked to have ``act``."""
    try:
        policy = factory(domain=domain, capabilities=capabilities.copy(), seed=seed)
    except CecmError:
        raise
    except Exception as error:  # noqa: BLE001 - the plug-in's own failure, named
        raise PartnerPolicyError(f'partner plug-in {text!r} could not be made: '
                                 f'{type(error).__name__}: {error} (it is called as '
                                 'factory(domain=..., capabilities=..., seed=...))') from None
    if not callable(getattr(policy, 'act', None)):
        raise PartnerPolicyError(f'partner plug-in {text!r}: {type(policy).__name__} has no '
                                 'act(view) method')
    return policy


class PolicyPartner:
    """A simulated partner whose every step a :class:`PartnerPolicy` decides.

    It speaks the shared-task loop's language (:func:`~cecm_ros.core.partners.
    run_shared_task`, the partner node): ``begin_task``, ``choose_step(state, intent)``,
    ``review_intent``, ``advance``. It enforces no plan: the robot hears from it only
    when the policy corrects it. ``reference`` is the optimal plan of its true
    capabilities (its own planner), what the metrics compare the robot's plan with;
    ``deviations`` counts its steps that were not the step of such a plan from where the
    world was (one plan each time the world leaves the last one).
    """

    enforces_plan = False
    needs_world_state = True

    def __init__(self, policy: Any, label: str, planner: Planner, capabilities: np.ndarray,
                 seed: int = 0):
        self.policy = policy
        self.label = label
        self.planner = planner
        self.capabilities = planner.domain.catalog.check_vector(capabilities)
        self.willing = self.capabilities
        self.rng = np.random.default_rng(seed)
        self.forgone: str | None = None
        self.task: Task | None = None
        self.plan: JointPlan | None = None     # the reference plan of the task
        self.step = 0
        self.limit = 0
        self.deviations = 0
        self.replans = 0
        self._move = PartnerMove()
        self._deviating = False
        self._state: State | None = None
        self._compare: tuple[JointPlan, int] | None = None   # (plan, its step) at the state
        self._steps: list[JointStep] = []

    # ------------------------------------------------------------------ the loop
    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.plan = self.planner.plan(task, self.capabilities)
        self.step = 0
        self.limit = STEP_LIMIT_FACTOR * max(1, len(self.plan.steps)) + STEP_LIMIT_EXTRA
        self.deviations = 0
        self.replans = 0
        self._state = self.planner.domain.initial_state(task)
        self._compare = (self.plan, 0)
        self._steps = []
        self._move = PartnerMove()
        begin = getattr(self.policy, 'begin_task', None)
        if callable(begin):
            begin(self._view(self._state, NOOP))
        return self.plan

    def _view(self, state: State, intent: str) -> PartnerView:
        assert self.task is not None, 'no task begun'
        return PartnerView(self.planner.domain, self.task, state, self.step,
                           self.capabilities.copy(), intent, self.rng, self.planner)

    def choose_step(self, state: State | None = None, intent: str = NOOP) -> JointStep:
        """Ask the policy for this step (``state``: the world's; ``intent``: the robot's
        announced action), check its answer and keep it for :attr:`current_step`."""
        assert self.task is not None, 'no task begun'
        if state is None:
            state = self._state
        self._state = state
        if self.finished:
            self._move = PartnerMove()
            return self.current_step
        answer = self.policy.act(self._view(state, intent))
        self._move = self._checked(answer, state)
        self._deviating = self._off_reference(state, self._move.action)
        return self.current_step

    def _checked(self, answer: Any, state: State) -> PartnerMove:
        domain = self.planner.domain
        move = answer if isinstance(answer, PartnerMove) else PartnerMove(answer)
        where = (f'partner {self.label!r}, task {self.task.task_id if self.task else "?"}, '
                 f'step {self.step}')
        if not isinstance(move.action, str) or (move.robot is not None
                                                and not isinstance(move.robot, str)):
            raise PartnerPolicyError(f'{where}: act() must return an action text or a '
                                     f'PartnerMove, got {answer!r}')
        action = move.action.strip() or NOOP
        if action != NOOP:
            try:
                action = domain.canonical_action(action)
                agent = domain.action_agent(action)
            except CecmError as error:
                raise PartnerPolicyError(f'{where}: returned {move.action!r}: {error}') \
                    from None
            if agent != HUMAN:
                raise PartnerPolicyError(f'{where}: returned {action}, an action of the '
                                         f'{agent}, not of the partner')
            if not domain.partner_capable(action, self.capabilities):
                raise PartnerPolicyError(f'{where}: returned {action}, which its capabilities '
                                         f'do not allow (it lacks '
                                         f'{domain.catalog.describe_missing(self.capabilities)})')
            if action not in domain.applicable_actions(state, HUMAN):
                raise PartnerPolicyError(f'{where}: returned {action}, which cannot change '
                                         'the state here (not applicable)')
        robot = move.robot
        if robot is not None:
            robot = robot.strip() or None
            if robot is None:
                raise PartnerPolicyError(f'{where}: a correction must name the robot\'s '
                                         'action (noop = wait), got an empty text')
            if robot != NOOP:
                try:
                    robot = domain.canonical_action(robot)
                    agent = domain.action_agent(robot)
                except CecmError as error:
                    raise PartnerPolicyError(f'{where}: corrected the robot to {move.robot!r}: '
                                             f'{error}') from None
                if agent != ROBOT:
                    raise PartnerPolicyError(f'{where}: corrected the robot to {robot}, an '
                                             f'action of the {agent}')
        return PartnerMove(action, robot)

    def _off_reference(self, state: State, action: str) -> bool:
        """Whether ``action`` is not the partner's step of an optimal plan from ``state``
        (the last plan while the world follows it, else one made from here)."""
        domain = self.planner.domain
        assert self.task is not None
        if self._compare is not None:
            plan, index = self._compare
            if index < len(plan.trajectory) and plan.trajectory[index] == state:
                expected = plan.steps[index].human if index < len(plan.steps) else NOOP
                return action != expected
        try:
            plan = self.planner.plan(domain.task_from_state(self.task, state),
                                     self.capabilities)
        except (UnsolvableTaskError, CecmError):
            self._compare = None
            return False
        self._compare = (plan, 0)
        return action != (plan.steps[0].human if plan.steps else NOOP)

    @property
    def current_step(self) -> JointStep:
        robot = self._move.robot if self._move.robot is not None else NOOP
        return JointStep(robot, self._move.action)

    def review_intent(self, intended: str):
        """A correction when the policy asked the robot for something else."""
        from .partners import Correction

        robot = self._move.robot
        if robot is None or robot == intended:
            return None
        return Correction(self.step, intended, robot)

    @property
    def deviating(self) -> bool:
        return self._deviating

    def advance(self, state: State | None = None) -> None:
        """Past this step (``state``: where the world is now)."""
        self._steps.append(self.current_step)
        if self._deviating:
            self.deviations += 1
        if self._compare is not None:
            plan, index = self._compare
            self._compare = (plan, index + 1)
        self.step += 1
        self._move = PartnerMove()
        self._deviating = False
        if state is not None:
            self._state = state

    @property
    def finished(self) -> bool:
        if self.task is None or self.plan is None:
            return True
        if self.step >= self.limit:
            return True
        return self._state is not None and self.planner.domain.goal_reached(self.task,
                                                                             self._state)

    # ---------------------------------------------- what the partner node asks of it
    def expects(self, state: State) -> bool:
        return True   # it enforces nothing, so the world cannot leave its plan

    def replan(self, state: State) -> JointPlan:
        assert self.plan is not None, 'no task begun'
        self._state = state
        return self.plan

    def task_plan(self) -> JointPlan:
        """The reference plan (what it would do with the optimal partner's plan)."""
        assert self.plan is not None, 'no task begun'
        return self.plan


class GreedyPolicy:
    """A myopic partner: it goes for the nearest gain it can make on its own.

    It looks ahead over its own actions only (the robot standing still: no joint plan,
    no thought of what the robot will do) for the nearest states, at most
    :data:`GREEDY_DEPTH` of its actions away, whose goal progress
    (``Domain.goal_progress``: by default how many of the goal's atoms hold) is above
    the present one, picks one of the largest such gains (ties drawn from its own
    generator) and walks its way there, one action a step, looking again only when it
    got there or the world went elsewhere (a subgoal, as Carroll et al. 2019's greedy
    human model has; a plain hill-climber would undo and redo). An action after which no
    plan of its true capabilities reaches the goal is never taken (unless the goal is out
    of reach already). With no gain in reach it waits, and after :data:`UNSTUCK_AFTER`
    such steps in a row it takes a random action that loses no progress instead (their
    model's "auto-unstuck"). It never corrects the robot.
    """

    def __init__(self, domain: Domain, capabilities: np.ndarray, seed: int = 0,
                 depth: int = GREEDY_DEPTH):
        self.domain = domain
        self.capabilities = capabilities
        self.depth = depth
        self._idle = 0   # steps in a row with no gain in reach
        self._way: list[tuple[str, State]] = []   # (action, the state it starts from)

    def begin_task(self, view: PartnerView) -> None:
        self._idle, self._way = 0, []

    def act(self, view: PartnerView) -> str:
        action = self._choose(view)
        self._idle = self._idle + 1 if action == NOOP else 0
        return action

    def _choose(self, view: PartnerView) -> str:
        if not self._way or self._way[0][1] != view.state:
            # Got there, or the world went elsewhere (the robot, a step that did nothing).
            self._way = self._way_to_gain(view)
        if self._way:
            return self._way.pop(0)[0]
        if self._idle + 1 >= UNSTUCK_AFTER:
            return self._unstuck(view)
        return NOOP

    def _way_to_gain(self, view: PartnerView) -> list[tuple[str, State]]:
        """A way (actions and the states they lead to) to one of the largest gains at the
        least depth, drawn among the ties; [] when none is in reach (or safe)."""
        ways = self.nearest_gains(view)
        careful = self._reachable(view, view.state)
        for index in view.rng.permutation(len(ways)):
            way = ways[int(index)]
            if not careful or self._reachable(view, way[0][1]):
                return self._anchored(view, way)
        return []

    @staticmethod
    def _anchored(view: PartnerView, way: list[tuple[str, State]]) -> list[tuple[str, State]]:
        """The way with the state each action starts from, for checking the next step."""
        starts = [view.state] + [state for _, state in way[:-1]]
        return [(action, start) for (action, _), start in zip(way, starts)]

    def nearest_gains(self, view: PartnerView) -> list[list[tuple[str, State]]]:
        """Every way of least depth to a state of the largest gain in goal progress (as
        (action, state after it) pairs), in a fixed order."""
        domain, task = view.domain, view.task
        base = domain.goal_progress(task, view.state)
        frontier = {view.state}
        parent: dict[State, tuple[State, str]] = {}
        seen = {view.state}
        for _ in range(self.depth):
            reached: dict[State, tuple[State, str]] = {}
            for state in sorted(frontier, key=repr):
                for action in view.allowed_actions(state):
                    after, _ = domain.transition(state, HUMAN, action, view.capabilities)
                    if after not in seen and after not in reached:
                        reached[after] = (state, action)
            if not reached:
                return []
            seen.update(reached)
            parent.update(reached)
            gains = {state: domain.goal_progress(task, state) for state in reached}
            best = max(gains.values())
            if best > base:
                ways = []
                for state in sorted((s for s, g in gains.items() if g == best), key=repr):
                    way = []
                    while state != view.state:
                        before, action = parent[state]
                        way.append((action, state))
                        state = before
                    ways.append(way[::-1])
                return ways
            frontier = set(reached)
        return []

    def _unstuck(self, view: PartnerView) -> str:
        domain = view.domain
        base = domain.goal_progress(view.task, view.state)
        careful = self._reachable(view, view.state)
        allowed = view.allowed_actions()
        for index in view.rng.permutation(len(allowed)):
            action = allowed[int(index)]
            after, _ = domain.transition(view.state, HUMAN, action, view.capabilities)
            if domain.goal_progress(view.task, after) >= base and \
                    (not careful or self._reachable(view, after)):
                return action
        return NOOP

    @staticmethod
    def _reachable(view: PartnerView, state: State) -> bool:
        """Whether a plan of its true capabilities reaches the goal from ``state``."""
        domain = view.domain
        try:
            plan = view.planner.plan(domain.task_from_state(view.task, state),
                                     view.capabilities)
        except UnsolvableTaskError:
            return False
        return domain.goal_reached(view.task, plan.trajectory[-1])
