"""The world a robot meets, simulated: perception that misses and invents facts, and
robot skills that fail. Every option is off by default and draws from a random stream of
its own (from the run's seed and the task, never an estimator's), so a run with them is
reproducible and the estimator's own draws are the same with or without them.

* **Perception noise.** Each state the team passes through is reported once, as a robot's
  perception would report it: each true fact missed with probability
  ``perception_missed``, and with probability ``perception_spurious`` one false fact added
  (the domain says what a fact is and which may be seen:
  :meth:`~cecm_ros.core.domain.Domain.misperceived`). The world itself, and what the
  robot's skills act on, stay true; only the evidence is noisy.
* **Skill failures.** Each robot action fails with probability ``skill_failure``: the
  world does not change for it, the robot is told (as a ``NavigateToPose`` that ends
  aborted) and re-plans from where the world is.

What the estimator is given of a task (:func:`evidence_of`) is the observed states with
the glitches no world can be in repaired from their neighbours (:func:`repaired`), and
without the robot's failed steps that changed nothing seen (:func:`evidence_trajectory`):
a failure is the robot's event and is never evidence about the partner. The estimator's
own side of noise is its ``misperception`` setting (:mod:`~cecm_ros.core.likelihood`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from .errors import CecmError, ConfigError

# Tags of the streams below (the run's seed and the task's id complete each seed).
_PERCEPTION_STREAM = 41
_SKILL_STREAM = 43
_PACE_STREAM = 47
_REPORT_STREAM = 53


@dataclass(frozen=True)
class WorldConditions:
    """How far the simulated world is from a perfect one (module docstring)."""

    perception_missed: float = 0.0     # per reported state: each true fact not seen
    perception_spurious: float = 0.0   # per reported state: one false fact seen
    skill_failure: float = 0.0   # per robot action: chance its skill fails
    # The partner at its own pace: each of its actions takes between these many robot
    # actions' time (uniform); both 0: one action per joint step, in lockstep.
    partner_pace_low: float = 0.0
    partner_pace_high: float = 0.0

    def __post_init__(self):
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f'world conditions: {item.name} must be a number, got '
                                  f'{value!r}')
            if item.name.startswith('partner_pace'):
                continue
            if not 0.0 <= value < 1.0:
                raise ConfigError(f'world conditions: {item.name} must be a probability in '
                                  f'[0, 1), got {value!r}')
        low, high = self.partner_pace_low, self.partner_pace_high
        if (low, high) != (0.0, 0.0) and not 0.0 < low <= high <= 100.0:
            raise ConfigError(f'world conditions: the partner\'s pace needs 0 < '
                              f'partner_pace_low <= partner_pace_high <= 100 (robot actions '
                              f'per partner action), got {low:g} and {high:g}')

    @property
    def perfect(self) -> bool:
        return not (self.noisy_perception or self.skill_failure or self.paced)

    @property
    def paced(self) -> bool:
        return self.partner_pace_high > 0

    @property
    def noisy_perception(self) -> bool:
        return bool(self.perception_missed or self.perception_spurious)

    def as_dict(self) -> dict[str, float]:
        return {item.name: float(getattr(self, item.name)) for item in fields(self)}

    def __str__(self) -> str:
        if self.perfect:
            return 'perfect (perception sees every state as it is; every skill succeeds)'
        return ', '.join(f'{name} {value:g}' for name, value in self.as_dict().items()
                         if value)

    @classmethod
    def from_dict(cls, values: dict | None, where: str = 'world conditions'
                  ) -> WorldConditions:
        values = dict(values or {})
        known = [item.name for item in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f'{where}: unknown keys {unknown}; known: {known}')
        try:
            return cls(**values)
        except ConfigError as error:
            raise ConfigError(f'{where}: {error}') from None


# The settings above, by name (an experiment's, a sweep's, the world node's), and what
# each means (the command line's and the node's help).
WORLD_SETTINGS = tuple(item.name for item in fields(WorldConditions))
# Those the node graph's world (lockstep joint steps) can simulate: not the pace.
LOCKSTEP_WORLD_SETTINGS = tuple(name for name in WORLD_SETTINGS
                                if not name.startswith('partner_pace'))
WORLD_SETTING_HELP = {
    'perception_missed': 'chance that perception misses each true fact of a state it '
                         'reports (Overcooked: a person or object seen on a neighbouring '
                         'cell)',
    'perception_spurious': 'chance that perception sees one false fact in a state it '
                           'reports (Overcooked: one more thing seen a cell off)',
    'skill_failure': "chance that a robot action's skill fails (the world does not change; "
                     'the robot re-plans)',
    'partner_pace_low': "the shortest a partner action takes, in robot actions (with "
                        'partner_pace_high: the partner at its own pace, no longer in '
                        'lockstep; 0 = lockstep)',
    'partner_pace_high': 'the longest a partner action takes, in robot actions (its '
                         'duration is uniform between the two)',
}


def _stream(seed: int, tag: int, task_id: str) -> np.random.Generator:
    return np.random.default_rng([seed, tag, zlib.crc32(task_id.encode())])


class Perception:
    """What a robot's perception reports of one task's states (module docstring)."""

    def __init__(self, domain, conditions: WorldConditions, seed: int, task_id: str):
        self.domain = domain
        self.conditions = conditions
        self._rng = _stream(seed, _PERCEPTION_STREAM, task_id)
        self.misperceived = 0    # states reported other than they were

    def see(self, state):
        if not self.conditions.noisy_perception:
            return state
        seen = self.domain.misperceived(state, self._rng, self.conditions.perception_missed,
                                        self.conditions.perception_spurious)
        self.misperceived += seen != state
        return seen


class SkillFailures:
    """Which of one task's robot actions fail (module docstring)."""

    def __init__(self, probability: float, seed: int, task_id: str):
        self.probability = probability
        self._rng = _stream(seed, _SKILL_STREAM, task_id)
        self.failed = 0

    def fails(self, action: str | None) -> bool:
        """Whether the robot's ``action`` fails; one draw per action that is not idle,
        so the draws do not depend on what else happens."""
        if not self.probability or action in (None, 'noop'):
            return False
        failed = bool(self._rng.random() < self.probability)
        self.failed += failed
        return failed


class PartnerPace:
    """How long each of one task's partner actions takes, in robot actions (uniform
    between the conditions' bounds; a stream of its own)."""

    def __init__(self, conditions: WorldConditions, seed: int, task_id: str):
        self.low, self.high = conditions.partner_pace_low, conditions.partner_pace_high
        self._rng = _stream(seed, _PACE_STREAM, task_id)

    def duration(self) -> float:
        return float(self._rng.uniform(self.low, self.high))


class ReportTiming:
    """When a perception's reports of one task reach the robot: each ``delay`` seconds
    after it was seen (uniform in ``[0, most_delay_s]``, so reports overtake each other),
    and sent twice with probability ``repeat`` (a stream of its own)."""

    def __init__(self, most_delay_s: float, repeat: float, seed: int, task_id: str):
        if not 0.0 <= most_delay_s <= 60.0:
            raise ConfigError(f'perception_delay_s must lie in [0, 60], got {most_delay_s}')
        if not 0.0 <= repeat < 1.0:
            raise ConfigError(f'perception_repeat must be a probability in [0, 1), got '
                              f'{repeat}')
        self.most_delay_s, self.repeat = most_delay_s, repeat
        self._rng = _stream(seed, _REPORT_STREAM, task_id)

    def delays(self) -> list[float]:
        """The delays of one report's sendings (one, or two when it is repeated); three
        draws per report whatever the settings, so the stream does not depend on them."""
        first, again, second = self._rng.random(3)
        delays = [float(first * self.most_delay_s)]
        if again < self.repeat:
            delays.append(float(second * self.most_delay_s))
        return delays


def evidence_trajectory(observed: Sequence, robot_failed: Sequence[bool]) -> list:
    """The states an estimator weighs for a task: ``observed`` (states ``0..H``) without
    the state after each step ``t`` (``robot_failed[t]``) at which the robot's skill
    failed and nothing seen changed. Such a step is the robot's failure alone; kept, it
    would read as the team idling where every hypothesis's plan had it act. A failed
    step at which something changed is kept: the change is the partner's (or a glitch,
    which the likelihood's misperception term weighs)."""
    if len(robot_failed) != max(0, len(observed) - 1):
        raise ConfigError(f'{len(robot_failed)} step flags for a trajectory of '
                          f'{len(observed)} states')
    kept = list(observed[:1])
    for step, state in enumerate(observed[1:]):
        if robot_failed[step] and state == kept[-1]:
            continue
        kept.append(state)
    return kept


def state_to_act_on(domain, task, seen, last):
    """The state a robot plans and checks its goal from after seeing ``seen``: that state
    when the domain can start ``task`` from it, else ``last`` (the last one it could),
    and why ``seen`` was set aside ('' when it was not). A perception glitch can report
    a state no world is in (a person in no room, a hand both free and full); planning
    from it would fail, and the evidence keeps it anyway."""
    try:
        domain.validate_task(domain.task_from_state(task, seen))
    except CecmError as error:
        return last, str(error)
    return seen, ''


def repaired(domain, task, states: Sequence) -> tuple[list, int]:
    """``states`` with each one no world can be in (a perception glitch: an item in two
    rooms, a hand neither free nor full) replaced, where that makes one the world can be
    in, by its facts as its neighbours agree on them: a fact seen before and after but
    not then is taken as missed, one seen only then as false (a majority over three
    frames, the smoothing a robot's perception stack does before it acts on a fact).
    A state the world can be in is kept as seen, so a real one-step event (a person
    passing through a room) stays. Also how many were replaced. Needs a domain whose
    :meth:`~cecm_ros.core.domain.WorldModel.validate_task` knows its states' rules
    (TidyUP does; a plain PDDL file's any set of facts is a state)."""
    kept = list(states)
    fixed = 0
    for t in range(1, len(kept) - 1):
        if not state_to_act_on(domain, task, kept[t], None)[1]:
            continue
        before, here, after = (set(domain.state_facts(kept[t + k])) for k in (-1, 0, 1))
        facts = (here | (before & after)) - (here - before - after)
        try:
            candidate = domain.state_from_wire(sorted(facts), [])
        except CecmError:
            continue
        if not state_to_act_on(domain, task, candidate, None)[1]:
            kept[t] = candidate
            fixed += 1
    return kept, fixed


def evidence_of(domain, task, observed: Sequence, robot_failed: Sequence[bool],
                repair: bool = True) -> list:
    """What an estimator weighs of a task seen as ``observed``: its glitches repaired
    where their neighbours tell (:func:`repaired`; ``repair`` False: perception is known
    to have seen every state as it was), then without the robot's failed steps that
    changed nothing (:func:`evidence_trajectory`)."""
    states = repaired(domain, task, observed)[0] if repair else list(observed)
    return evidence_trajectory(states, robot_failed)
