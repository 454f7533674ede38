"""Simulated teammates and the shared-task loop with the paper's alignment protocol.

Both agents plan jointly, each under its own model of the human: the simulated human
under its true capabilities, the robot under its estimate. Each executes only its own
actions. Before every step the robot announces what it intends to do; when that
conflicts with the human's joint plan, the human corrects it (do this instead, or
wait) and the robot re-plans from the state the step leaves. The observed trajectory
therefore always follows the human's plan.

How the simulated partner departs from an optimal one is its :class:`PartnerBehaviour`
(docs/partners.md): it may search with a seed of its own, decline a capability, pursue
the goal's atoms in an order of its own, or, step by step, take another action than its
plan's (Boltzmann-rational, noisy, detours). After such a step it re-plans from where
the world is and goes on enforcing its new plan.

Outside that protocol (a person who answers for the partner, or lets a wrong action
pass) the world can leave both plans behind: :func:`off_plan` tells when, and
:meth:`SimulatedHuman.replan` lets the partner carry on from where the world is.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import TYPE_CHECKING

import numpy as np

from .domain import HUMAN, NOOP, Domain, JointPlan, JointStep, Planner, State, Task
from .errors import CecmError, ConfigError, UnsolvableTaskError
from .simulator import ActionOutcome, WorldSimulator
from .world_conditions import (
    PartnerPace,
    Perception,
    SkillFailures,
    WorldConditions,
    evidence_of,
)

if TYPE_CHECKING:
    from .partner_policies import PolicyPartner


def off_plan(plan: JointPlan, done: int, state: State) -> bool:
    """Whether ``state``, seen after ``done`` steps of ``plan``, is not the state the plan
    predicted there; past its last step the plan predicts its goal state, so a plan that
    ran out before the goal holds is off too. The rest of such a plan no longer fits."""
    return plan.trajectory[min(done, len(plan.trajectory) - 1)] != state


class ReplanRule:
    """When a robot that follows a joint plan re-plans, and for whom.

    Always after a correction (the paper's protocol) and after the robot's own skill
    failed (the world is not where its plan goes on from). With ``follow_world``, after a
    step nobody answered (silence is consent, but nobody then enforces the partner's
    plan), also when the world is not where the plan predicted (:func:`off_plan`), and,
    after ``idle_limit`` such steps in a row in which the plan gave the partner an
    action, for the robot alone from then on: a partner who will not do what the robot
    expects, whether it waits or does something else, must not hold the task up
    (``idle_limit`` 0 waits for it until the task's step limit). Answered steps never
    trigger these, so a partner who answers every intent gets exactly the paper's
    protocol.
    """

    def __init__(self, follow_world: bool = False, idle_limit: int = 3):
        if idle_limit < 0:
            raise ValueError(f'idle_limit must be at least 0, got {idle_limit}')
        self.follow_world = follow_world
        self.idle_limit = idle_limit
        self.idle = 0
        self.alone = False   # planning as if the partner does nothing more

    def begin_task(self) -> None:
        self.idle, self.alone = 0, False

    def after_step(self, plan: JointPlan, done: int, before: State, state: State,
                   corrected: bool, answered: bool = True, failed: bool = False
                   ) -> str | None:
        """After ``done`` steps of ``plan`` took the world from ``before`` to ``state``:
        None (go on), 'belief' (re-plan under the estimate) or 'alone' (re-plan with a
        partner who does nothing; the caller sets ``alone`` once such a plan exists)."""
        if corrected or failed:
            self.idle = 0
            return 'alone' if self.alone else 'belief'
        if not self.follow_world or answered or not off_plan(plan, done, state):
            self.idle = 0
            return None
        partner_due = 0 < done <= len(plan.steps) and plan.steps[done - 1].human != NOOP
        self.idle = self.idle + 1 if partner_due else 0
        if self.alone or (self.idle_limit and self.idle >= self.idle_limit):
            self.idle = 0
            return 'alone'
        return 'belief'


def steps_off_plan(plan: JointPlan, executed: list[tuple[str, str]]) -> int:
    """How many of the joint steps executed, as (robot action, human action), are not the
    plan's step at that place (either longer sequence counts its extra steps). 0 for a
    task run as the paper's protocol runs it: a partner that enforces its plan."""
    planned = ((step.robot, step.human) for step in plan.steps)
    return sum(a != b for a, b in zip_longest(planned, executed, fillvalue=(NOOP, NOOP)))


@dataclass(frozen=True)
class Correction:
    step: int
    intended: str    # what the robot announced
    corrected: str   # what it must do instead ("noop" = wait)


def concatenate_plans(plans: Sequence[JointPlan]) -> JointPlan:
    """One plan of several that each start where the one before ended."""
    first = plans[0]
    return replace(
        first, steps=tuple(s for p in plans for s in p.steps),
        cost=sum(p.cost for p in plans), robot_cost=sum(p.robot_cost for p in plans),
        human_cost=sum(p.human_cost for p in plans),
        trajectory=first.trajectory + tuple(s for p in plans[1:] for s in p.trajectory[1:]),
        human_capabilities_used=frozenset().union(*(p.human_capabilities_used
                                                    for p in plans)),
        planning_time_s=sum(p.planning_time_s for p in plans),
        sequential=tuple(a for p in plans for a in p.sequential),
        planner_cost=sum(p.planner_cost for p in plans))


def partner_seed(seed: int, task_id: str) -> int:
    """The seed of a simulated partner's choices in one task: from the run's seed and the
    task's id only, so that a restarted partner decides as the first would have."""
    return int(np.random.default_rng([seed, 7, zlib.crc32(task_id.encode())])
               .integers(2**32))


BEHAVIOUR_FORMS = ('optimal', 'independent', 'boltzmann:BETA', 'noisy:P', 'forgo:P',
                   'preference', 'detour:P', 'greedy', 'satisficing', 'habit:P',
                   'MODULE:CLASS', 'FILE.py:CLASS', 'PLUGIN')
# Behaviours with a number after the colon, and what it is.
_PARAMETERS = {'boltzmann': 'BETA', 'noisy': 'P', 'forgo': 'P', 'detour': 'P', 'habit': 'P'}
_KINDS = ('optimal', 'independent', 'boltzmann', 'noisy', 'forgo', 'preference', 'detour',
          'greedy', 'satisficing', 'habit', 'plugin')
# Behaviours made from the robot's own planner under (part of) the true capabilities,
# re-planned with it after a slip: the generative story the likelihoods model ("in-model").
IN_MODEL = ('optimal', 'independent', 'boltzmann', 'noisy', 'forgo', 'preference', 'detour')
# Where a simulated partner's searches come from: 'own' (a search seed of its own per
# task, where the planner has seeds), or 'shared' (the robot's own search: an oracle,
# since the true vector then reproduces the partner's plans exactly). 'independent' is
# the older spelling of 'own'.
PARTNER_SEARCHES = ('own', 'shared', 'independent')
# A partner deviates only in the first this many times its first plan's length steps of
# a task, so that a task ends whatever it draws.
DEVIATION_HORIZON = 3
# Partner search seeds lie in [1, PARTNER_SEED_SPAN]: below every estimator seed
# (LIKELIHOOD_SEED_BASE + m) and never 0, the planners' default seed.
PARTNER_SEED_SPAN = 1_000_000_000


def partner_search_seed(seed: int, task_id: str) -> int:
    """The search seed of a simulated partner's own planner in one task: from the run's
    seed and the task's id only (a restarted partner searches as the first would have),
    in a range no estimator search uses."""
    mixed = np.random.default_rng([seed, 13, zlib.crc32(task_id.encode())])
    return 1 + int(mixed.integers(PARTNER_SEED_SPAN))


def partner_trait_seed(seed: int) -> int:
    """The seed of what a simulated partner keeps across tasks (a habit, a plug-in's
    own state): from the run's seed alone."""
    return int(np.random.default_rng([seed, 17]).integers(2**32))


def _plugin_text(text: str) -> bool:
    """Whether ``text`` names a partner plug-in (MODULE:CLASS, FILE.py:CLASS) rather than
    a built-in behaviour with a number."""
    where, colon, name = text.rpartition(':')
    return bool(colon) and name.isidentifier() and (
        where.endswith('.py') or '.' in where or where.isidentifier()) \
        and where not in _PARAMETERS


@dataclass(frozen=True)
class PartnerBehaviour:
    """How a simulated partner decides (docs/partners.md).

    Built on the robot's planner (in-model): ``optimal``, the joint plan of its true
    capabilities; ``independent``, the older name of the same (every partner searches on
    a stream of its own); ``forgo:P``, per task with probability P it declines one
    capability its plan uses; ``preference``, the goal's atoms one at a time in an order
    of its own; ``boltzmann:BETA``, per step a softmax (inverse temperature BETA) over
    the planner's action values; ``noisy:P``, per step with probability P a random action
    it can do; ``detour:P``, per step with probability P an extra action not in its plan.
    Other decision rules: ``greedy``, myopic (:class:`~cecm_ros.core.partner_policies.
    GreedyPolicy`); ``satisficing``, the first plan of another search
    (``Planner.satisficing``); ``habit:P``, a preference of its own kept across tasks,
    followed with probability P per task; a plug-in (``target``: MODULE:CLASS,
    FILE.py:CLASS or an entry point of ``cecm_ros.partners``).
    """

    kind: str = 'optimal'
    value: float = 0.0   # BETA or P
    target: str = ''     # a plug-in's name

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ConfigError(f'unknown partner behaviour {self.kind!r}; behaviours: '
                              f'{", ".join(BEHAVIOUR_FORMS)}')
        if self.kind == 'boltzmann' and not (0.0 <= self.value < math.inf):
            raise ConfigError(f'boltzmann:BETA needs a BETA of at least 0, got {self.value}')
        if self.kind in ('noisy', 'forgo', 'detour', 'habit') and not 0.0 <= self.value <= 1.0:
            raise ConfigError(f'{self.kind}:P needs a P in [0, 1], got {self.value}')
        if (self.kind == 'plugin') != bool(self.target):
            raise ConfigError('a partner plug-in needs its name (target), and only a plug-in '
                              'has one')

    @classmethod
    def parse(cls, text: str) -> PartnerBehaviour:
        """``optimal``, ``boltzmann:2``, ``pkg.mod:Persona``, ...; ConfigError naming the
        text and the forms. A plug-in is named, not loaded, here (:meth:`check`)."""
        text = str(text).strip()
        kind, colon, number = text.partition(':')
        if kind not in _KINDS or kind == 'plugin':
            if _plugin_text(text) or (not colon and text in _entry_point_names()):
                return cls('plugin', target=text)
            raise ConfigError(f'unknown partner behaviour {text!r}; behaviours: '
                              f'{", ".join(BEHAVIOUR_FORMS)}' + _installed_plugins())
        wanted = _PARAMETERS.get(kind)
        if bool(colon) != bool(wanted):
            raise ConfigError(f'unknown partner behaviour {text!r}; behaviours: '
                              f'{", ".join(BEHAVIOUR_FORMS)}')
        if not wanted:
            return cls(kind)
        try:
            return cls(kind, float(number))
        except ValueError as error:   # (ConfigError is one too)
            reason = error if isinstance(error, ConfigError) else f'{wanted} must be a number'
            raise ConfigError(f'partner behaviour {text!r}: {reason}; behaviours: '
                              f'{", ".join(BEHAVIOUR_FORMS)}') from None

    def check(self) -> None:
        """Raise ConfigError when this behaviour cannot be made (a plug-in that does not
        load); every other behaviour is checked when parsed."""
        if self.kind == 'plugin':
            from .partner_policies import load_policy_factory

            load_policy_factory(self.target)

    def __str__(self) -> str:
        if self.kind == 'plugin':
            return self.target
        return f'{self.kind}:{self.value:g}' if self.kind in _PARAMETERS else self.kind

    @property
    def per_step(self) -> bool:
        """Whether it may leave its plan at any step (and then re-plans)."""
        return self.kind in ('boltzmann', 'noisy', 'detour')

    @property
    def plan_based(self) -> bool:
        """Whether it follows (and enforces) a joint plan; else a policy decides each step."""
        return self.kind not in ('greedy', 'plugin')

    @property
    def in_model(self) -> bool:
        """Whether it is made from the robot's planner as the likelihoods model it."""
        return self.kind in IN_MODEL

    @property
    def family(self) -> str:
        """Its decision rule's family, for tables: 'robot planner' (in-model), 'greedy',
        'satisficing', 'habit' or 'plug-in'."""
        if self.in_model:
            return 'robot planner'
        return 'plug-in' if self.kind == 'plugin' else self.kind


def _entry_point_names() -> set[str]:
    from .partner_policies import policy_entry_points

    return set(policy_entry_points())


def _installed_plugins() -> str:
    names = sorted(_entry_point_names())
    return f'; installed plug-ins: {", ".join(names)}' if names else ''


def resolve_partner_behaviour(text: str | None, forgo_probability: float = 0.0,
                              partner_search: str = 'own',
                              default: str = 'optimal') -> PartnerBehaviour:
    """The behaviour a partner runs with: ``text`` when given ('' or None: not given),
    which must agree with the older option forgo_probability (P > 0 is ``forgo:P``);
    else what it says; else ``default`` (the domain's ``default_partner_behaviour``).
    ``partner_search`` (where its searches come from) is checked, and no longer chooses a
    behaviour: every partner searches on its own stream unless it is ``shared``."""
    if partner_search not in PARTNER_SEARCHES:
        raise ConfigError(f'partner_search must be one of {", ".join(PARTNER_SEARCHES)}, got '
                          f'{partner_search!r}')
    if text is not None and str(text).strip():
        behaviour = PartnerBehaviour.parse(text)
        if forgo_probability > 0 and behaviour != PartnerBehaviour('forgo', forgo_probability):
            raise ConfigError(f'partner behaviour {text!r} contradicts forgo_probability '
                              f'{forgo_probability:g} (which means forgo:'
                              f'{forgo_probability:g}); give one of them')
        return behaviour
    if forgo_probability > 0:
        return PartnerBehaviour('forgo', forgo_probability)
    return PartnerBehaviour.parse(default)


@dataclass(frozen=True)
class _Deviation:
    """A step the partner takes instead of its plan's: the robot waits."""

    step: JointStep
    after: State              # where the world goes (the partner acts alone)
    plan: JointPlan           # its plan from there


@dataclass(frozen=True)
class Habit:
    """A partner's own preference, the same in every task: a fixed rank of every name
    (drawn from ``seed``, the partner's trait seed), by which it orders a goal's atoms
    (those of its favourite objects first) and picks, of capabilities the domain calls
    interchangeable (``Domain.interchangeable_capabilities``: Overcooked's two plates, two
    knives), the one it uses, declining the others where the task allows."""

    seed: int

    def rank(self, name: str) -> int:
        return zlib.crc32(f'{self.seed}:{name}'.encode())

    def goal_order(self, goal: frozenset[str]) -> tuple[str, ...]:
        def key(atom: str) -> tuple[int, str]:
            names = atom.strip('()').split()[1:] or [atom]
            return min(self.rank(name) for name in names), atom

        return tuple(sorted(goal, key=key))

    def declined(self, domain: Domain, capabilities: np.ndarray) -> np.ndarray:
        """The capabilities it leaves unused: in each interchangeable group it has more
        than one of, all but its favourite."""
        declined = np.zeros(len(capabilities), dtype=bool)
        names = domain.catalog.names
        for group in domain.interchangeable_capabilities():
            held = [i for i in group if capabilities[i]]
            if len(held) > 1:
                favourite = min(held, key=lambda i: self.rank(names[i]))
                declined[[i for i in held if i != favourite]] = True
        return declined


class SimulatedHuman:
    """A partner that knows everyone's true capabilities and enforces its own plan.

    Its ``behaviour`` (:class:`PartnerBehaviour`; default optimal) says how it departs
    from the optimal plan; ``forgo_probability`` P > 0 is the older spelling of
    ``forgo:P``. Every random choice draws from ``seed`` (give it
    :func:`partner_seed`), never from the estimator's stream, and ``planner`` should be
    the partner's own (:class:`SimulatedPartner` makes one per task). A ``habit:P``
    partner needs its ``habit``. The loop asks :meth:`choose_step` before each step and
    calls :meth:`advance` after it.
    """

    # It answers every intent (silence is agreement) and decides from its plan.
    enforces_plan = True
    needs_world_state = False

    def __init__(self, planner: Planner, capabilities: np.ndarray,
                 forgo_probability: float = 0.0, seed: int = 0,
                 behaviour: PartnerBehaviour | None = None, habit: Habit | None = None):
        if not 0.0 <= forgo_probability <= 1.0:
            raise ValueError(f'forgo_probability must lie in [0, 1], got {forgo_probability}')
        if behaviour is None:
            behaviour = PartnerBehaviour('forgo', forgo_probability) if forgo_probability \
                else PartnerBehaviour()
        elif forgo_probability and behaviour != PartnerBehaviour('forgo', forgo_probability):
            raise ValueError(f'forgo_probability {forgo_probability} contradicts the '
                             f'behaviour {behaviour}')
        if not behaviour.plan_based:
            raise ValueError(f'{behaviour} decides by a policy: make it with '
                             'SimulatedPartner (a PolicyPartner)')
        if behaviour.kind == 'habit' and habit is None:
            raise ValueError('a habit partner needs its habit (SimulatedPartner makes it)')
        self.planner = planner
        self.capabilities = planner.domain.catalog.check_vector(capabilities)
        self.behaviour = behaviour
        self.habit = habit
        self.habitual = False    # a habit partner: whether it follows its habit this task
        self.forgo_probability = behaviour.value if behaviour.kind == 'forgo' else 0.0
        self.rng = np.random.default_rng(seed)
        self.goal_order: tuple[str, ...] = ()   # a 'preference' partner's, per task
        self.deviations = 0      # steps of this task not its plan's step at the time
        self.deviation_limit = 0
        self._deviation: _Deviation | None = None
        self.plan: JointPlan | None = None
        self.forgone: str | None = None
        self.willing = self.capabilities   # what it plans with: less any it declines
        self.task: Task | None = None
        self.step_index = 0   # into the current plan
        self.first_step = 0   # the task's step at which the current plan began
        self.earlier: tuple[JointStep, ...] = ()   # steps of earlier plans, one per step
        self.replans = 0

    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.forgone = None
        self.willing = self.capabilities
        self.goal_order = ()
        if self.behaviour.kind == 'preference':
            goal = sorted(task.goal)
            self.goal_order = tuple(goal[i] for i in self.rng.permutation(len(goal)))
            self.plan = self._plan_for(task)
        elif self.behaviour.kind == 'habit':
            self.plan = self._habit_plan(task)
        else:
            self.plan = self.planner.plan(task, self.capabilities)
        used = sorted(self.plan.human_capabilities_used)
        if used and self.rng.random() < self.forgo_probability:
            declined = int(self.rng.choice(used))
            willing = self.capabilities.copy()
            willing[declined] = False
            self.plan = self.planner.plan(task, willing)
            self.willing = willing
            self.forgone = self.planner.domain.catalog.names[declined]
        self.step_index = 0
        self.first_step = 0
        self.earlier = ()
        self.replans = 0
        self.deviations = 0
        self._deviation = None
        self.deviation_limit = DEVIATION_HORIZON * max(1, len(self.plan.steps))
        return self.plan

    def _habit_plan(self, task: Task) -> JointPlan:
        """With probability P its habit's plan (its favourite tools only, the goal's atoms
        in its favourite order), where the task can be done so; else the plain one."""
        assert self.habit is not None
        self.habitual = bool(self.rng.random() < self.behaviour.value)
        if self.habitual:
            declined = self.habit.declined(self.planner.domain, self.capabilities)
            self.willing = self.capabilities & ~declined
            self.goal_order = self.habit.goal_order(task.goal) if len(task.goal) > 1 else ()
            try:
                return self._plan_for(task)
            except UnsolvableTaskError:
                self.willing, self.goal_order = self.capabilities, ()
        return self.planner.plan(task, self.capabilities)

    def _plan_for(self, task: Task) -> JointPlan:
        """Its plan of ``task`` (from the task's start): the planner's under the
        capabilities it is willing to use, or, with a goal order (a preference, a habit),
        one plan per prefix of that order, each from where the one before ended
        (prefixes already achieved add nothing)."""
        if not self.goal_order:
            return self.planner.plan(task, self.willing)
        domain = self.planner.domain
        state = domain.initial_state(task)
        pieces: list[JointPlan] = []
        for size in range(1, len(self.goal_order) + 1):
            prefix = Task(task.task_id, domain.task_from_state(task, state).initial,
                          frozenset(self.goal_order[:size]))
            if domain.goal_reached(prefix, state):
                continue
            pieces.append(self.planner.plan(prefix, self.willing))
            state = pieces[-1].trajectory[-1]
        if not pieces or not domain.goal_reached(task, state):
            return self.planner.plan(task, self.willing)
        return concatenate_plans(pieces)

    def choose_step(self, state: State | None = None, intent: str = NOOP) -> JointStep:
        """This step's joint step: its plan's, or, for a per-step behaviour, a deviation
        (its own action while the robot waits) that :meth:`advance` then re-plans after.
        ``state`` is the world's (default: where its plan says the world is by now); the
        robot's ``intent`` does not change what a plan-following partner does."""
        self._deviation = None
        if not self.behaviour.per_step or self.finished or self.step >= self.deviation_limit:
            return self.current_step
        assert self.plan is not None and self.task is not None
        if state is None:
            state = self.plan.trajectory[min(self.step_index, len(self.plan.trajectory) - 1)]
        planned = self.plan.steps[self.step_index].human
        domain = self.planner.domain
        allowed = [a for a in domain.applicable_actions(state, HUMAN)
                   if domain.partner_capable(a, self.willing)]
        kind = self.behaviour.kind
        if kind == 'boltzmann':
            chosen = self._boltzmann_choice(state, planned, allowed)
        elif self.rng.random() >= self.behaviour.value:
            return self.current_step
        elif kind == 'noisy':
            chosen = self._random_choice(state, allowed)
        else:   # detour: an action its plan does not have ahead
            ahead = {step.human for step in self.plan.steps[self.step_index:]}
            chosen = self._random_choice(state, [a for a in allowed if a not in ahead])
        if chosen is not None and chosen[0] != planned:
            self._deviation = _Deviation(JointStep(NOOP, chosen[0]), *chosen[1:])
        return self.current_step

    def _after(self, state: State, action: str) -> tuple[State, JointPlan] | None:
        """Where ``action`` (the partner alone) leads and its plan from there; None when
        the goal is out of reach from there (or its plan, a search's, does not reach it)."""
        domain = self.planner.domain
        assert self.task is not None
        after, _ = domain.transition(state, HUMAN, action, self.capabilities)
        try:
            plan = self._plan_for(domain.task_from_state(self.task, after))
        except UnsolvableTaskError:
            return None
        return (after, plan) if domain.goal_reached(self.task, plan.trajectory[-1]) else None

    def _random_choice(self, state: State, actions: Sequence[str]
                       ) -> tuple[str, State, JointPlan] | None:
        """A random one of ``actions`` after which the goal stays in reach."""
        for index in self.rng.permutation(len(actions)):
            found = self._after(state, actions[int(index)])
            if found is not None:
                return (actions[int(index)], *found)
        return None

    def _boltzmann_choice(self, state: State, planned: str, allowed: Sequence[str]
                          ) -> tuple[str, State, JointPlan] | None:
        """An action drawn with probability proportional to exp(BETA * value). Waiting
        is a candidate only where its plan waits: when costs are sums of action costs,
        waiting is never worse than acting, and offered everywhere it would idle. An
        action exactly as good as its plan's is not drawn apart from it (a tie keeps the
        plan), so a large BETA is the optimal partner."""
        assert self.task is not None
        candidates = list(allowed) + ([planned] if planned not in allowed else [])
        values = self.planner.action_values(self.task, state, self.willing, candidates)
        if planned not in values:   # (a search that never tried it): its own plan's
            values[planned] = max(values.values(), default=0.0)
        names = [a for a in candidates if a in values and
                 (a == planned or not math.isclose(values[a], values[planned]))]
        scores = np.array([values[a] for a in names]) * self.behaviour.value
        weights = np.exp(scores - scores.max())
        action = names[int(self.rng.choice(len(names), p=weights / weights.sum()))]
        found = None if action == planned else self._after(state, action)
        return None if found is None else (action, *found)

    @property
    def step(self) -> int:
        """The task's joint step the partner is at (plans re-made mid-task start at 0)."""
        return self.first_step + self.step_index

    def expects(self, state: State) -> bool:
        """Whether the world is where its plan says it should be by now."""
        return self.plan is None or not off_plan(self.plan, self.step_index, state)

    def replan(self, state: State) -> JointPlan:
        """Carry on from ``state`` (the world left its plan: nobody enforced it), with the
        same capabilities, declined one included; the step count goes on."""
        assert self.task is not None and self.plan is not None, 'no task begun'
        here = self.planner.domain.task_from_state(self.task, state)
        plan = self._plan_for(here)   # may raise: then nothing changes
        done = self.plan.steps[:self.step_index]
        self.earlier += done + (JointStep(),) * (self.step_index - len(done))
        self.first_step += self.step_index
        self.step_index = 0
        self.plan = plan
        self.replans += 1
        return plan

    def task_plan(self) -> JointPlan:
        """The plan of the whole task as it now stands: the steps planned so far for the
        steps taken, then the current plan, so that step t of the task is step t here
        (costs and states are the current plan's)."""
        assert self.plan is not None, 'no task begun'
        return replace(self.plan, steps=self.earlier + self.plan.steps)

    @property
    def finished(self) -> bool:
        return self.plan is None or self.step_index >= len(self.plan.steps)

    @property
    def current_step(self) -> JointStep:
        if self._deviation is not None:
            return self._deviation.step
        if self.plan is None or self.finished:
            return JointStep()
        return self.plan.steps[self.step_index]

    @property
    def deviating(self) -> bool:
        """Whether this step (as :meth:`choose_step` decided it) is not its plan's."""
        return self._deviation is not None

    def review_intent(self, intended: str) -> Correction | None:
        """A correction when the robot's announced action is not the one the plan needs."""
        expected = self.current_step.robot
        if intended == expected:
            return None
        return Correction(self.step, intended, expected)

    def advance(self, state: State | None = None) -> None:
        """Past this step. After a deviation it re-plans from ``state`` (the world's;
        default: where the deviation led) and the task's step count goes on."""
        deviation, self._deviation = self._deviation, None
        if deviation is None:
            self.step_index += 1
            return
        assert self.plan is not None and self.task is not None
        plan = deviation.plan
        if state is not None and state != deviation.after:   # the robot did not wait
            plan = self._plan_for(self.planner.domain.task_from_state(self.task, state))
        self.earlier += self.plan.steps[:self.step_index] + (deviation.step,)
        self.first_step += self.step_index + 1
        self.step_index = 0
        self.plan = plan
        self.replans += 1
        self.deviations += 1


class SimulatedPartner:
    """One simulated partner across the tasks of a run: who it is and what it keeps.

    ``planner`` is the domain's (the robot's) planner. For each task :meth:`for_task`
    gives the partner that plays it, with a planner of its own: its own search seed for
    that task (:func:`partner_search_seed`, never an estimator's; a planner without seeds
    is deterministic and shares nothing random) or, for ``satisficing``, the planner's
    satisficing configuration on that seed. ``search='shared'`` makes it search with the
    robot's own stream instead: an oracle, labelled so (:attr:`oracle`). What lasts
    across tasks (a habit, a plug-in's policy) comes from ``seed`` alone
    (:func:`partner_trait_seed`); the choices within a task from :func:`partner_seed`.
    """

    def __init__(self, planner: Planner, capabilities: np.ndarray,
                 behaviour: PartnerBehaviour | None = None, seed: int = 0,
                 search: str = 'own'):
        if search not in PARTNER_SEARCHES:
            raise ConfigError(f'partner_search must be one of {", ".join(PARTNER_SEARCHES)}, '
                              f'got {search!r}')
        self.planner = planner
        self.domain = planner.domain
        self.capabilities = self.domain.catalog.check_vector(capabilities)
        self.behaviour = behaviour or PartnerBehaviour()
        self.seed = seed
        self.search = 'own' if search == 'independent' else search
        trait = partner_trait_seed(seed)
        self.habit = Habit(trait) if self.behaviour.kind == 'habit' else None
        self._factory = None
        if self.behaviour.kind == 'plugin':
            from .partner_policies import load_policy_factory

            self._factory = load_policy_factory(self.behaviour.target)
        self._policy: tuple[bytes, object] | None = None   # (for which capabilities, it)
        self._own: Planner | None = None   # the current task's planner, when made here
        if self.behaviour.kind == 'satisficing':
            probe = planner.satisficing(1)
            if probe is None:
                raise ConfigError(f'partner behaviour satisficing: the {self.domain.name} '
                                  f'planner ({type(planner).__name__}) has no satisficing '
                                  'configuration')
            probe.close()
        if not self.behaviour.plan_based:
            self._policy_for(self.capabilities)   # a plug-in that cannot be made says so now

    @property
    def oracle(self) -> bool:
        """Whether it searches with the robot's own stream (an oracle, not a partner)."""
        return self.search == 'shared'

    def search_seed(self, task_id: str) -> int | None:
        """The seed its searches of ``task_id`` take (None: the robot's, an oracle's)."""
        if self.oracle:
            return None
        seed = partner_search_seed(self.seed, task_id)
        # Never the robot's own seed (which a user may set to anything).
        return seed + 1 if seed == self.planner.search_seed else seed

    def planner_for_task(self, task_id: str) -> Planner:
        """The planner this partner plans ``task_id`` with (closed by the next call)."""
        self._close_own()
        seed = self.search_seed(task_id)
        if self.behaviour.kind == 'satisficing':
            made = self.planner.satisficing(self.planner.search_seed or 0 if seed is None
                                            else seed)
        elif seed is None:
            made = None
        else:
            made = self.planner.with_seed(seed)
        self._own = made
        return made or self.planner

    def for_task(self, task_id: str, capabilities: np.ndarray | None = None):
        """The partner of task ``task_id`` (with ``capabilities`` when they change):
        a :class:`SimulatedHuman` for a plan-following behaviour, else a
        :class:`~cecm_ros.core.partner_policies.PolicyPartner`. Call its
        ``begin_task``."""
        truth = self.capabilities if capabilities is None else \
            self.domain.catalog.check_vector(capabilities)
        planner = self.planner_for_task(task_id)
        seed = partner_seed(self.seed, task_id)
        if self.behaviour.plan_based:
            return SimulatedHuman(planner, truth, seed=seed, behaviour=self.behaviour,
                                  habit=self.habit)
        from .partner_policies import PolicyPartner

        return PolicyPartner(self._policy_for(truth), str(self.behaviour), planner, truth,
                             seed=seed)

    def _policy_for(self, truth: np.ndarray):
        """Its policy, made once (again only when its capabilities change)."""
        from .partner_policies import GreedyPolicy, make_policy

        key = truth.tobytes()
        if self._policy is None or self._policy[0] != key:
            trait = partner_trait_seed(self.seed)
            if self.behaviour.kind == 'greedy':
                policy: object = GreedyPolicy(self.domain, truth.copy(), trait)
            else:
                assert self._factory is not None
                policy = make_policy(self._factory, self.behaviour.target, self.domain,
                                     truth, trait)
            self._policy = (key, policy)
        return self._policy[1]

    def _close_own(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            own.close()

    def close(self) -> None:
        self._close_own()


class RobotTeammate:
    """The robot: plans jointly under its estimate, acts only for itself."""

    def __init__(self, planner: Planner, estimate: np.ndarray,
                 rule: ReplanRule | None = None):
        self.planner = planner
        self.estimate = planner.domain.catalog.check_vector(estimate)
        self.rule = rule or ReplanRule()
        self.task: Task | None = None
        self.plan: JointPlan | None = None
        self.state: State = 0
        self.step_index = 0
        self.replans = 0
        self.relaxed_plans = 0   # plans made as if the partner were fully capable

    def begin_task(self, task: Task) -> JointPlan:
        self.task = task
        self.state = self.planner.domain.initial_state(task)
        self.plan, relaxed = self.planner.plan_under_estimate(task, self.estimate)
        self.relaxed_plans = int(relaxed)
        self.step_index = 0
        self.replans = 0
        self.rule.begin_task()
        return self.plan

    def intent(self) -> str:
        if self.plan is None or self.step_index >= len(self.plan.steps):
            return NOOP
        return self.plan.steps[self.step_index].robot

    def after_step(self, corrected: bool, state: State, answered: bool = True,
                   failed: bool = False) -> None:
        """Advance along the plan, or re-plan from ``state`` when the rule says so
        (``answered``: whether anyone answered the step's intent; ``failed``: the
        robot's skill for it failed)."""
        before, self.state = self.state, state
        self.step_index += 1
        assert self.task is not None and self.plan is not None, 'no task begun'
        replan = self.rule.after_step(self.plan, self.step_index, before, state, corrected,
                                      answered, failed)
        if replan is None:
            return
        here = self.planner.domain.task_from_state(self.task, state)
        if replan == 'alone':
            try:
                alone = self.planner.plan(here, np.zeros(len(self.estimate), dtype=bool))
            except CecmError:   # e.g. the partner holds an item: it has to act
                replan = 'belief'
            else:
                if self.planner.domain.goal_reached(here, alone.trajectory[-1]):
                    self.plan = alone
                    self.rule.alone = True
                else:   # (a search's plan that stops short): it cannot do it alone
                    replan = 'belief'
        if replan == 'belief':
            self.plan, relaxed = self.planner.plan_under_estimate(here, self.estimate)
            self.relaxed_plans += int(relaxed)
        self.step_index = 0
        self.replans += 1


@dataclass
class StepRecord:
    step: int
    intended: str
    robot: ActionOutcome
    human: ActionOutcome
    corrected: bool
    deviated: bool = False   # the partner did not take its plan's step (the robot waited)
    answered: bool = True    # the partner answered the intent (a policy: only corrections)
    robot_failed: bool = False   # the robot's skill failed (the world did not change for it)


@dataclass
class TaskRecord:
    """What happened in one shared task."""

    task: Task
    robot_plan: JointPlan        # the robot's plan at the start, under its estimate
    human_plan: JointPlan        # the partner's plan under its true capabilities
    trajectory: list[State]      # the world's joint states s_0..s_H
    # What perception reported of them (the same states in a perfect world).
    observed: list[State] = field(default_factory=list)
    corrections: int = 0
    robot_decisions: int = 0     # steps where the robot intended or was asked to act
    partner_deviations: int = 0  # the partner's steps that were not its plan's step then
    replans: int = 0
    goal_reached: bool = False
    steps: list[StepRecord] = field(default_factory=list)
    misperceived: int = 0        # observed states that were not the world's
    robot_failures: int = 0      # robot actions whose skill failed
    # A partner at its own pace: per observed change, whether it was the robot's failed
    # skill (None: one observed state per joint step, flagged by ``steps``).
    change_failed: list[bool] | None = None
    partner_actions: int = 0     # actions the partner finished (a paced partner)

    def evidence(self, domain: Domain) -> list[State]:
        """What an estimator weighs of this task: the observed states, their glitches
        repaired where the neighbours tell, without the robot's failed steps that
        changed nothing seen (world_conditions.evidence_of)."""
        flags = self.change_failed if self.change_failed is not None else \
            [step.robot_failed for step in self.steps]
        return evidence_of(domain, self.task, self.observed or self.trajectory, flags,
                           repair=self.misperceived > 0)


def run_shared_task(model: Domain, task: Task, robot: RobotTeammate,
                    human: SimulatedHuman | PolicyPartner,
                    conditions: WorldConditions | None = None, seed: int = 0) -> TaskRecord:
    """Execute one task with both teammates; the world follows the self-loop rule.

    A partner that enforces its plan (:class:`SimulatedHuman`) answers every intent, so
    the robot re-plans only after corrections (the paper's protocol); a policy partner
    answers only when it corrects, and after a step it left unanswered the robot follows
    the world as its :class:`ReplanRule` says (give the robot ``follow_world``).

    ``conditions`` make the world an imperfect one (perception noise, skills that fail:
    :mod:`~cecm_ros.core.world_conditions`), drawn from streams of ``seed`` and the task:
    a failed robot action leaves the world as it was, and both teammates go on from
    there (the robot re-plans, a partner whose plan expected the robot's change too)."""
    start = model.initial_state(task)
    world = WorldSimulator(model, human.capabilities, start)
    robot_plan = robot.begin_task(task)
    human_plan = human.begin_task(task)
    record = TaskRecord(task, robot_plan, human_plan, trajectory=world.trajectory)
    conditions = conditions or WorldConditions()
    perception = Perception(model, conditions, seed, task.task_id)
    failures = SkillFailures(conditions.skill_failure, seed, task.task_id)
    record.observed.append(perception.see(start))
    if conditions.paced:
        _run_paced(model, task, robot, human, world, record, perception, failures,
                   conditions, seed)
        return record
    # As the node graph's executor does, the task ends when its goal holds (a partner's
    # satisficing plan may have steps left that change nothing the goal asks for).
    while not human.finished and not world.goal_reached(task):
        intended = robot.intent()
        human.choose_step(world.state, intended)
        correction = human.review_intent(intended)
        executed = correction.corrected if correction else intended
        if intended != NOOP or executed != NOOP:
            record.robot_decisions += 1
        failed = failures.fails(executed)
        robot_outcome, human_outcome = world.step(executed, human.current_step.human, failed)
        record.observed.append(perception.see(world.state))
        answered = human.enforces_plan or correction is not None
        record.steps.append(StepRecord(human.step, intended, robot_outcome,
                                       human_outcome, correction is not None,
                                       human.deviating, answered, failed))
        record.corrections += correction is not None
        human.advance(world.state)
        if failed and not human.expects(world.state):
            try:   # its plan counted on the robot's change
                human.replan(world.state)
            except CecmError:
                pass   # it goes on with the plan it has
        robot.after_step(correction is not None, world.state, answered=answered,
                         failed=failed)
    _close_record(record, robot, human, world, perception, failures)
    return record


def _close_record(record: TaskRecord, robot: RobotTeammate,
                  human: SimulatedHuman | PolicyPartner, world: WorldSimulator,
                  perception: Perception, failures: SkillFailures) -> None:
    """What a task's record says once the task is over."""
    record.replans = robot.replans
    record.misperceived = perception.misperceived
    record.robot_failures = failures.failed
    record.partner_deviations = human.deviations
    record.goal_reached = world.goal_reached(record.task)


# A paced task ends after this many robot steps per step of the partner's first plan
# (and a few more), goal or not: a partner and a robot that keep undoing each other's
# work must not run for ever.
PACED_STEP_FACTOR, PACED_STEP_EXTRA = 4, 20


def paced_partner_action(model: Domain, human: SimulatedHuman | PolicyPartner,
                         state: State) -> str:
    """The next action of a partner at its own pace, from ``state``: one that follows a
    plan re-plans when its next action no longer applies (the robot did it, or has not
    yet done what it needs) or its plan ran out; a policy decides anew. NOOP when no plan
    is left (the partner stands by)."""
    stuck = human.enforces_plan and (human.finished or human.current_step.human not in
                                     (NOOP, *model.applicable_actions(state, HUMAN)))
    if stuck:
        try:
            human.replan(state)
        except CecmError:
            return NOOP
    human.choose_step(state, NOOP)
    return human.current_step.human


def _run_paced(model: Domain, task: Task, robot: RobotTeammate,
               human: SimulatedHuman | PolicyPartner, world: WorldSimulator,
               record: TaskRecord, perception: Perception, failures: SkillFailures,
               conditions: WorldConditions, seed: int) -> None:
    """The task with a partner at its own pace (world_conditions): each robot action
    takes one unit of time, each of the partner's a duration of its own drawn from the
    conditions' range, so between two robot steps the partner finishes none, one or
    several actions, and perception reports the world each time it changes. The partner
    works down its own part of its plan, re-planning when its next action no longer
    applies or its plan ran out before the goal; it does not wait for the robot's
    announcements, so it corrects nothing, and the robot follows the world."""
    pace = PartnerPace(conditions, seed, task.task_id)
    limit = PACED_STEP_FACTOR * max(1, len(record.human_plan.steps)) + PACED_STEP_EXTRA
    flags: list[bool] = []
    record.change_failed = flags
    ends = 0.0      # when the partner's current (or last) action ends
    action: str | None = None   # the partner's action under way (None: it chooses next)

    def seen(failed: bool) -> None:
        """Perception reports the world when it changed."""
        if world.trajectory[-1] != world.trajectory[-2]:
            record.observed.append(perception.see(world.state))
            flags.append(failed)

    def partner_next() -> str:
        return paced_partner_action(model, human, world.state)

    for step in range(limit):
        if world.goal_reached(task):
            break
        intended = robot.intent()
        finish = float(step + 1)
        while True:
            if action is None:
                action = partner_next()
                ends += pace.duration()
            if ends > finish:
                break
            world.step(NOOP, action)
            seen(False)
            record.partner_actions += 1
            human.advance(world.state)
            action = None
            if world.goal_reached(task):
                break
        if world.goal_reached(task):
            break
        failed = failures.fails(intended)
        outcome, idle = world.step(intended, None, failed)
        seen(failed)
        record.robot_decisions += intended != NOOP
        record.steps.append(StepRecord(step, intended, outcome, idle, False,
                                       answered=False, robot_failed=failed))
        robot.after_step(False, world.state, answered=False, failed=failed)
    _close_record(record, robot, human, world, perception, failures)
