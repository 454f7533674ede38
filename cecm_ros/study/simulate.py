"""``cecm study simulate``: a study dataset made by simulated participants.

A stand-in for people where none are at hand (tests, and the figures docs/study.md
gives): each participant does a set of tasks per partner type, as in the paper's study
(appendix D), with the capabilities of that type and a behaviour that is not the
planner's (``noisy:0.2`` by default: a random action it can do at a fifth of its
steps, docs/partners.md). As there, the robot is a fixed assistant that plans for a
fully capable partner and is corrected; every participant of a type gets the same
tasks, so that their trajectories can be compared (appendix E). Every random choice
draws from ``seed``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np

from cecm_ros.core.dataset import Episode, Step, WireState
from cecm_ros.core.domain import Domain, Planner
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.partners import (
    PartnerBehaviour,
    ReplanRule,
    RobotTeammate,
    SimulatedPartner,
    TaskRecord,
    run_shared_task,
)

DEFAULT_BEHAVIOUR = 'noisy:0.2'


def participant_seed(seed: int, participant: str, set_index: int) -> int:
    """The seed of one participant's set: from the base seed, the participant's id and
    the set's index only."""
    return int(np.random.default_rng([seed, zlib.crc32(participant.encode()), set_index])
               .integers(2**31 - 1))


def task_seed(seed: int, set_index: int) -> int:
    """The seed of a set's tasks: the same for every participant."""
    return int(np.random.default_rng([seed, 0x7A5C, set_index]).integers(2**31 - 1))


def record_episode(domain: Domain, record: TaskRecord, participant: str, set_index: int,
                   episode_index: int, type_name: str, truth: np.ndarray,
                   source: str = '', protocol: str = '',
                   options: dict[str, str] | None = None) -> Episode:
    """A simulated task as an episode: a plan-following partner answers every intent (a
    confirmation or a correction), a policy only the ones it corrects; nothing is
    timed."""
    steps = []
    for k, step in enumerate(record.steps):
        corrected = step.robot.action if step.corrected else None
        steps.append(Step(k, step.robot.action, step.human.action,
                          WireState.of(domain, record.trajectory[k + 1]), step.intended,
                          step.answered, corrected, step.robot.changed, step.human.changed, {}))
    task = record.task
    return Episode(participant, set_index, episode_index, domain.name, type_name,
                   tuple(domain.catalog.names), tuple(bool(b) for b in truth), task.task_id,
                   tuple(sorted(task.initial)), tuple(sorted(task.goal)),
                   WireState.of(domain, record.trajectory[0]), tuple(steps), protocol,
                   dict(options or {}),
                   record.goal_reached, None, None, source)


def simulate_study(domain: Domain, planner: Planner, participants: int,
                   types: Sequence[str], tasks: int, behaviour: str = DEFAULT_BEHAVIOUR,
                   seed: int = 0, progress: Callable[[str], None] | None = None,
                   options: dict[str, str] | None = None) -> list[Episode]:
    """``participants`` participants (``p01``, ``p02``, ...), each with one set of
    ``tasks`` tasks per type in ``types`` (set 1 the first type)."""
    if participants < 1 or tasks < 1 or not types:
        raise ConfigError('a study needs at least one participant, one type and one task')
    kind = PartnerBehaviour.parse(behaviour)
    kind.check()
    catalog = domain.catalog
    episodes = []
    source = f'simulated: partner {kind}, seed {seed}'
    for number in range(1, participants + 1):
        participant = f'p{number:02d}'
        for set_index, type_name in enumerate(types, 1):
            truth = catalog.resolve(type_name)
            # A participant's own partner: its searches and choices from its own seed.
            partner = SimulatedPartner(planner, truth, kind,
                                       seed=participant_seed(seed, participant, set_index))
            try:
                for index, task in enumerate(
                        domain.task_generator(task_seed(seed, set_index)).tasks(tasks), 1):
                    robot = RobotTeammate(planner, catalog.all_capable(),
                                          ReplanRule(follow_world=True))
                    record = run_shared_task(domain, task, robot,
                                             partner.for_task(task.task_id))
                    episodes.append(record_episode(domain, record, participant, set_index,
                                                   index, type_name, truth, source,
                                                   options=options))
                    if progress is not None:
                        progress(f'{participant} set {set_index} ({type_name}) task {index}: '
                                 f'{task.task_id}, {len(record.steps)} steps, '
                                 f'{record.corrections} corrections, '
                                 f'{record.partner_deviations} off its plan')
            finally:
                partner.close()
    return episodes
