"""``cecm study export``: session recordings (MCAP) into a study dataset.

A recording holds a session as the graph's messages (cecm_ros/tools/recording.py reads
them). Each run of a task that reached its goal becomes an episode, cut as ``cecm
estimate --from-recording`` cuts it (the run the session went on with, in the order the
runs finished); its steps are put together from the messages of that run: the team
states (``team_state``: the state after each joint step and the actions applied), the
robot's intents (``robot/intent``), the executor's verdicts on the answers
(``robot/correction_status``; the answers themselves, ``robot/correction``, where the
verdicts were not recorded), the executed robot steps (``robot/step_result``) and a
person's own choices in play mode (``human/choice``). Whether each action changed the
world is computed with the domain under the participant's capabilities, in the world's
order (the partner first), and checked against the recorded next state.

The participant's capabilities come from the first of: the world node's ``partner``
parameter as recorded on ``/parameter_events``, the task manager's ``partner``
parameter there, the task manager's summary (``--summary``), ``--capabilities``; every
other one of those that is present must agree. The simulated partner's own plans
(``human/joint_plan``, planned for the truth) are used only when none of them is there,
and are otherwise a cross-check: a partner plans with its capabilities less at most the
one it declines (``forgo:P``), so a plan with more, or with two fewer, contradicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core.dataset import Episode, Step, WireState
from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, Domain
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.tools.recording import (
    TASK_REQUEST,
    TEAM_STATE,
    RecordedMessage,
    Recording,
    RecordingError,
    TaskRun,
    read_recording,
    reconstruct_runs,
    session_records,
)

ROBOT_INTENT = 'cecm_ros/msg/RobotIntent'
CORRECTION = 'cecm_ros/msg/Correction'
CORRECTION_STATUS = 'cecm_ros/msg/CorrectionStatus'
STEP_RESULT = 'cecm_ros/msg/StepResult'
PARTNER_CHOICE = 'cecm_ros/msg/PartnerChoice'
JOINT_PLAN = 'cecm_ros/msg/JointPlan'
PARAMETER_EVENT = 'rcl_interfaces/msg/ParameterEvent'
STEP_TYPES = (TASK_REQUEST, TEAM_STATE, ROBOT_INTENT, CORRECTION, CORRECTION_STATUS,
              STEP_RESULT, PARTNER_CHOICE, JOINT_PLAN)
WORLD_NODES = ('household_sim', 'world_sim')
NOOP_SPELLINGS = ('', NOOP, 'wait')


@dataclass
class Capabilities:
    """The participant's assigned vector, its type name and where it was read."""

    vector: np.ndarray
    type_name: str
    source: str


@dataclass
class RecordingExport:
    """What one recording gave: its episodes per participant, and what was left out."""

    path: Path
    episodes: list[Episode] = field(default_factory=list)
    capabilities: dict[str, Capabilities] = field(default_factory=dict)   # by participant
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------- capabilities
def type_name_of(domain: Domain, vector: np.ndarray, spec: str = '') -> str:
    """The partner type ``spec`` names, else the type whose vector it is, else the
    vector's ``name=0,...`` text."""
    catalog = domain.catalog
    if spec in catalog.partner_types:
        return spec
    for name in catalog.partner_types:
        if np.array_equal(catalog.partner_vector(name), vector):
            return name
    return catalog.format_vector(vector)


def _resolve(domain: Domain, spec: str, source: str) -> Capabilities:
    try:
        vector = domain.catalog.resolve(spec.strip())
    except CecmError as error:
        raise ConfigError(f'{source}: {spec!r} is no partner of {domain.name!r}: {error}') \
            from None
    return Capabilities(vector, type_name_of(domain, vector, spec.strip()), source)


def summary_capabilities(domain: Domain, path: str | Path) -> Capabilities:
    """The partner of a task manager's summary (``summary_path``, ``cecm demo``'s
    OUT/summary.json): its ``true_capabilities``, named by its ``settings.partner``."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_text())
        truth = str(data['true_capabilities'])
        named = str(data.get('settings', {}).get('partner', ''))
    except FileNotFoundError:
        raise ConfigError(f'{path}: no such file (a task manager\'s summary_path)') from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(f'{path} is not a session summary (true_capabilities: '
                          f'{error})') from None
    found = _resolve(domain, truth, f'the summary {path}')
    if named in domain.catalog.partner_types and np.array_equal(
            domain.catalog.partner_vector(named), found.vector):
        found.type_name = named
    return found


def _body(message: RecordedMessage) -> Any:
    """A recorded message's decoded fields (typed by the recording's schema)."""
    return message.message


def _stamp(message: RecordedMessage) -> float:
    """Seconds since the epoch: the message's header stamp, else when it was sent."""
    header = getattr(_body(message), 'header', None)
    stamp = getattr(header, 'stamp', None)
    if stamp is not None and (stamp.sec or stamp.nanosec):
        return stamp.sec + stamp.nanosec / 1e9
    return message.time / 1e9


def _parameter_values(recording: Recording, nodes: Sequence[str], before: int) -> str | None:
    """The last ``partner`` value one of ``nodes`` declared or set before ``before`` (ns;
    else its first value at all), from the recorded parameter events."""
    values: list[tuple[int, str]] = []
    for message in recording.of_type(PARAMETER_EVENT):
        node = str(_body(message).node).rsplit('/', 1)[-1]
        if node not in nodes:
            continue
        for parameter in [*_body(message).new_parameters,
                          *_body(message).changed_parameters]:
            if parameter.name == 'partner' and parameter.value.type == 4:   # string
                values.append((message.time, str(parameter.value.string_value)))
    if not values:
        return None
    earlier = [value for time, value in values if time <= before]
    return earlier[-1] if earlier else values[0][1]


def _partner_plans(domain: Domain, partner_plans: list[RecordedMessage]
                   ) -> list[tuple[str, np.ndarray]]:
    """(task id, the capabilities the simulated partner planned it with) per plan."""
    vectors = []
    for message in partner_plans:
        names = list(_body(message).capability_names)
        if set(names) != set(domain.catalog.names):
            continue
        vector = np.zeros(len(domain.catalog), dtype=bool)
        for name, bit in zip(names, _body(message).capability_estimate):
            vector[domain.catalog.index(name)] = bool(bit)
        vectors.append((str(_body(message).task_id), vector))
    return vectors


def recorded_capabilities(domain: Domain, recording: Recording, runs: list[TaskRun],
                          summary: Capabilities | None, given: Capabilities | None,
                          notes: list[str]) -> Capabilities:
    """The participant's capabilities in one recording (module docstring: which source
    counts, which must agree). A simulated partner plans with its capabilities, less at
    most one it declines (forgo:P): a plan with one more, or two fewer, contradicts."""
    catalog = domain.catalog
    first = min(run.started for run in runs)
    candidates = []
    world = _parameter_values(recording, WORLD_NODES, first)
    if world is not None:
        candidates.append(_resolve(domain, world, "the world node's parameter 'partner' "
                                                  '(/parameter_events)'))
    manager = _parameter_values(recording, ('task_manager',), first)
    if manager is not None:
        candidates.append(_resolve(domain, manager, "the task manager's parameter "
                                                    "'partner' (/parameter_events)"))
    candidates += [c for c in (summary, given) if c is not None]
    task_ids = {run.task_id for run in runs}
    plans = _partner_plans(domain, [m for m in recording.of_type(JOINT_PLAN)
                                    if str(_body(m).planned_for) == 'truth'
                                    and _body(m).task_id in task_ids])
    if not candidates:
        if not plans:
            raise ConfigError(
                'the recording names no capabilities of the partner (no world or task manager '
                "parameter 'partner' on /parameter_events, no partner plan on "
                "human/joint_plan); give them with --capabilities TYPE|name=0,... or the "
                "task manager's summary with --summary")
        planned = np.logical_or.reduce([vector for _, vector in plans])
        return Capabilities(planned, type_name_of(domain, planned),
                            "the simulated partner's plans (human/joint_plan, planned for the "
                            'truth: a capability any of them was made with)')
    chosen = candidates[0]
    for other in candidates[1:]:
        if not np.array_equal(other.vector, chosen.vector):
            raise ConfigError(f'{chosen.source} says the partner lacks '
                              f'{catalog.describe_missing(chosen.vector)}, but {other.source} '
                              f'says it lacks {catalog.describe_missing(other.vector)}')
    for task_id, vector in plans:
        declined = chosen.vector & ~vector
        if (vector & ~chosen.vector).any() or declined.sum() > 1:
            raise ConfigError(f'{chosen.source} says the partner lacks '
                              f'{catalog.describe_missing(chosen.vector)}, but the simulated '
                              f'partner planned task {task_id} with capabilities that lack '
                              f'{catalog.describe_missing(vector)} (human/joint_plan)')
        if declined.any():
            notes.append(f'the simulated partner declined '
                         f'{catalog.names[int(np.flatnonzero(declined)[0])]} in its plan of '
                         f'{task_id} (forgo:P); the episodes keep {chosen.source}')
    return chosen


# -------------------------------------------------------------------------- episodes
def _action(domain: Domain, text: str, agent: str, what: str) -> str:
    if str(text).strip() in NOOP_SPELLINGS:
        return NOOP
    try:
        action = domain.canonical_action(str(text))
        owner = domain.action_agent(action)
    except CecmError as error:
        raise RecordingError(f'{what} {text!r}: {error}') from None
    if owner != agent:
        raise RecordingError(f'{what} {text!r} is an action of the {owner}, not of the '
                             f'{agent}')
    return action


def _first(messages: list[RecordedMessage], run: TaskRun, step: int,
           attempts: Sequence[int] | None = None) -> RecordedMessage | None:
    """The first message of ``run``'s task at ``step`` sent while the run was on."""
    for message in messages:
        body = _body(message)
        if body.task_id == run.task_id and int(body.step) == step \
                and run.started <= message.time <= run.finished \
                and (attempts is None or int(body.attempt) in attempts):
            return message
    return None


def _run_states(team_states: list[RecordedMessage], run: TaskRun) -> list[RecordedMessage]:
    """The team state messages of steps 0..H of ``run`` (the first of each step)."""
    found: dict[int, RecordedMessage] = {}
    for message in team_states:
        step = int(_body(message).step)
        if _body(message).task_id == run.task_id and step < len(run.states) \
                and step not in found and run.started <= message.time <= run.finished:
            found[step] = message
    missing = [step for step in range(len(run.states)) if step not in found]
    if missing:   # reconstruct_runs found them: only a clock that jumped could lose one
        raise RecordingError(f'task {run.task_id}: the team states of steps {missing} are '
                             'not inside the run')
    return [found[step] for step in range(len(run.states))]


def run_episode(domain: Domain, recording: Recording, run: TaskRun, truth: Capabilities,
                participant: str, set_index: int, episode_index: int, protocol: str,
                source: str, options: dict[str, str]) -> Episode:
    """One run of a task as an episode of the dataset."""
    by_type = {kind: recording.of_type(kind) for kind in STEP_TYPES}
    attempts = (run.attempt,)
    states = _run_states(by_type[TEAM_STATE], run)
    decoded = [domain.state_from_wire(list(_body(m).true_propositions),
                                      list(_body(m).state_features)) for m in states]
    statuses = [m for m in by_type[CORRECTION_STATUS] if _body(m).accepted]
    intents = [m for m in by_type[ROBOT_INTENT] if not _body(m).repeated]
    verdicts_recorded = any(t.type_name == CORRECTION_STATUS
                            for t in recording.topics.values())
    notes = []
    if frozenset(run.states[0]) != frozenset(run.initial):
        notes.append('the observed start differs from the requested one; the estimator uses '
                     'the observed one, as the live estimator does')
    steps = []
    for k in range(len(states) - 1):
        after = _body(states[k + 1])
        where = f'task {run.task_id} step {k}'
        robot = _action(domain, after.robot_action, ROBOT, f'{where}: robot action')
        partner = _action(domain, after.human_action, HUMAN, f'{where}: partner action')
        stamps = {'state': _stamp(states[k + 1])}
        intent_message = _first(intents, run, k, attempts)
        intent = None
        if intent_message is not None:
            intent = _action(domain, _body(intent_message).action, ROBOT, f'{where}: intent')
            stamps['intent'] = _stamp(intent_message)
        answered, correction = False, None
        if verdicts_recorded:
            verdict = _first(statuses, run, k, attempts)
            if verdict is not None:
                answered = True
                stamps['answer'] = _stamp(verdict)
                asked = _action(domain, _body(verdict).corrected_action, ROBOT,
                                f'{where}: correction')
                if asked != _action(domain, _body(verdict).intended_action, ROBOT,
                                    f'{where}: corrected intent'):
                    correction = asked
        else:
            answer = _first(by_type[CORRECTION], run, k, (0, run.attempt))
            if answer is not None:
                answered = True
                stamps['answer'] = _stamp(answer)
                asked = _action(domain, _body(answer).corrected_action, ROBOT,
                                f'{where}: correction')
                if asked != intent:
                    correction = asked
        result = _first(by_type[STEP_RESULT], run, k)
        if result is not None and bool(_body(result).corrected) != (correction is not None):
            notes.append(f'step {k}: the executor reports it '
                         f'{"corrected" if _body(result).corrected else "not corrected"}, '
                         'the recorded answers say otherwise')
        choice = _first(by_type[PARTNER_CHOICE], run, k, (0, run.attempt))
        if choice is not None:
            stamps['choice'] = _stamp(choice)
        middle, human_outcome = domain.transition(decoded[k], HUMAN, partner, truth.vector)
        reached, robot_outcome = domain.transition(middle, ROBOT, robot, truth.vector)
        if reached != decoded[k + 1]:
            notes.append(f'step {k}: {partner} then {robot} under the assigned capabilities '
                         'does not lead to the recorded next state')
        steps.append(Step(k, robot, partner, WireState.of(domain, decoded[k + 1]), intent,
                          answered, correction, robot_outcome.changed,
                          human_outcome.changed, stamps))
    if not verdicts_recorded:
        notes.append('answers read from robot/correction (robot/correction_status was not '
                     'recorded)')
    return Episode(participant, set_index, episode_index, domain.name, truth.type_name,
                   tuple(domain.catalog.names), tuple(bool(b) for b in truth.vector),
                   run.task_id, tuple(run.initial), tuple(run.goal),
                   WireState.of(domain, decoded[0]), tuple(steps), protocol, options, True,
                   _stamp(states[0]), _stamp(states[-1]),
                   f'{source}, {run.task_id} attempt {run.attempt}', tuple(notes))


def _canonical(domain: Domain):
    def canonical(atoms) -> tuple[str, ...]:
        try:
            return tuple(domain.canonical_atoms(atoms))
        except CecmError as error:
            raise RecordingError(f'{error}: the recording is of another domain or household '
                                 '(give it with --domain, --household)') from None
    return canonical


def export_recording(path: str | Path, domain: Domain, set_of: dict[str, int],
                     participant: str | None = None, partner_id: str | None = None,
                     summary: Capabilities | None = None, given: Capabilities | None = None,
                     protocol: str = '', options: dict[str, str] | None = None,
                     order: Callable[[str, str], int | None] | None = None
                     ) -> RecordingExport:
    """The episodes of one recording: one set per partner in it, numbered by ``order``
    (participant, type -> set index, or None) where it knows them, else in the order
    met (``set_of`` counts each participant's sets so far and is advanced)."""
    path = Path(path)
    recording = read_recording(path, STEP_TYPES)
    if any(t.type_name == PARAMETER_EVENT and t.schema_encoding == 'ros2msg'
           for t in recording.topics.values()):
        recording = read_recording(path, (*STEP_TYPES, PARAMETER_EVENT))
    requests, states = session_records(recording)
    if not requests:
        topics = ', '.join(sorted(recording.topics)) or 'none'
        raise RecordingError(f'{path} holds no task: no {TASK_REQUEST} message on any topic '
                             f'(topics: {topics})')
    partners = [partner_id] if partner_id else sorted({r.partner_id for r in requests})
    if participant and len(partners) > 1:
        raise ConfigError(f'{path} holds the tasks of {len(partners)} partners '
                          f'({", ".join(map(repr, partners))}); --participant names one: '
                          'choose it with --partner-id')
    found = RecordingExport(path, notes=list(recording.problems))
    for partner in partners:
        runs = reconstruct_runs(requests, states, partner, _canonical(domain))
        found.left_out += [f'{label}: {why}' for label, why in runs.left_out]
        if not runs.runs:
            found.notes.append(f'partner {partner!r}: no run of a task reached its goal')
            continue
        name = participant or partner
        truth = recorded_capabilities(domain, recording, runs.runs, summary, given,
                                      found.notes)
        set_of[name] = set_of.get(name, 0) + 1
        set_index = (order(name, truth.type_name) if order else None) or set_of[name]
        found.capabilities[name] = truth
        for index, run in enumerate(runs.runs, 1):
            found.episodes.append(run_episode(domain, recording, run, truth, name,
                                              set_index, index, protocol,
                                              f'recording {path.name}', options or {}))
    return found


def export_recordings(paths: Sequence[str | Path], domain: Domain, out: str | Path,
                      participant: str | None = None, partner_id: str | None = None,
                      summary: str | Path | None = None, capabilities: str | None = None,
                      protocol: str = '', options: dict[str, str] | None = None,
                      overwrite: bool = False) -> tuple[list[RecordingExport], list[Path]]:
    """Every recording's episodes, written as one dataset (a file per participant); a
    participant's recordings are their sets in the order given, or, with ``protocol`` a
    study protocol file, in that participant's order of types there (its digest is then
    the episodes' protocol). Nothing is written unless every recording could be read."""
    from cecm_ros.core.dataset import write_dataset

    if not paths:
        raise ConfigError('no recording given')
    order = None
    if protocol and Path(protocol).expanduser().is_file():
        protocol, order = _protocol_order(Path(protocol).expanduser(), domain)
    from_summary = summary_capabilities(domain, summary) if summary else None
    given = _resolve(domain, capabilities, '--capabilities') if capabilities else None
    set_of: dict[str, int] = {}
    exports = [export_recording(path, domain, set_of, participant, partner_id, from_summary,
                                given, protocol, options, order) for path in paths]
    episodes = [episode for export in exports for episode in export.episodes]
    if not episodes:
        raise ConfigError('no run of any task reached its goal in the recordings given: '
                          + '; '.join(f'{e.path}: {", ".join(e.left_out) or "no tasks"}'
                                      for e in exports))
    return exports, write_dataset(out, episodes, overwrite=overwrite)


def _protocol_order(path: Path, domain: Domain
                    ) -> tuple[str, Callable[[str, str], int | None]]:
    """A protocol file's digest, and the set index of a participant's type in it."""
    from cecm_ros.study.protocol import load_protocol

    plan = load_protocol(path)
    if not plan.domain.endswith(('.yaml', '.yml')) and plan.domain != domain.name:
        raise ConfigError(f'{path} is a protocol of domain {plan.domain!r}, not '
                          f'{domain.name!r}')

    def order(participant: str, type_name: str) -> int | None:
        if participant not in plan.participants or type_name not in plan.types:
            return None
        return plan.type_order(participant).index(type_name) + 1
    return plan.digest, order


def describe_export(export: RecordingExport) -> list[str]:
    """What ``cecm study export`` says about one recording."""
    lines = []
    for participant, found in export.capabilities.items():
        count = sum(1 for e in export.episodes if e.participant == participant)
        set_index = next(e.set_index for e in export.episodes if e.participant == participant)
        bits = ''.join('1' if b else '0' for b in found.vector)
        lines.append(f'{export.path}: participant {participant!r}, set {set_index}: {count} '
                     f'episodes; capabilities {found.type_name} ({bits}) from {found.source}')
    lines += [f'  left out {item}' for item in export.left_out]
    lines += [f'  note: {note}' for note in export.notes]
    return lines


def export_study(folder: str | Path, protocol_path: str | Path, domain: Domain,
                 out: str | Path, options: dict[str, str] | None = None,
                 overwrite: bool = False) -> tuple[list[RecordingExport], list[Path]]:
    """Every participant's recorded sets under ``folder`` (`cecm study run`'s
    ``OUT/<study>``), as one dataset. A set started more than once has a recording per
    start: its episodes are numbered by the task's place in the set, and a task that
    reached its goal in two recordings (stopped after the goal, before it was journaled
    done) keeps the later run, which is the one the session counted."""
    from dataclasses import replace

    from cecm_ros.core.dataset import write_dataset
    from cecm_ros.study.progress import Progress
    from cecm_ros.study.protocol import load_protocol

    protocol = load_protocol(protocol_path)
    folder = Path(folder).expanduser()
    participants = [p for p in protocol.participants if (folder / p / 'progress.json').is_file()]
    if not participants:
        raise ConfigError(f'{folder}: no participant of study {protocol.name!r} has progress '
                          'there (expected <participant>/progress.json, as `cecm study run '
                          '--out` writes under <out>/<study>)')
    exports: list[RecordingExport] = []
    episodes: list[Episode] = []
    for participant in participants:
        progress = Progress.open(folder / participant, protocol.name, participant,
                                 protocol.digest)
        plan = {s.label: s for s in protocol.plan_for(participant, domain)}
        for entry in progress.sets:
            study_set = plan[entry.label]
            given = _resolve(domain, study_set.partner_type, f'{entry.label} type')
            place = {task.task_id: i for i, task in enumerate(study_set.tasks, 1)}
            kept: dict[str, Episode] = {}
            for name in entry.recordings:
                path = folder / participant / entry.label / name
                if not path.exists():
                    exports.append(RecordingExport(path, notes=[f'{path}: not written (the set '
                                                                'stopped as it started)']))
                    continue
                try:
                    found = export_recording(path, domain, {}, participant, participant,
                                             None, given, protocol.digest, options,
                                             lambda *_, number=study_set.index + 1: number)
                except RecordingError as error:
                    # A start that ended before its first task (stopped as it came up, or
                    # every task done already): nothing of it to keep.
                    exports.append(RecordingExport(path, notes=[f'{path}: no episode: {error}']))
                    continue
                exports.append(found)
                for episode in found.episodes:
                    if episode.task_id not in place:
                        found.notes.append(f'task {episode.task_id!r} is not one of '
                                           f'{entry.label}: left out')
                        continue
                    if episode.task_id in kept:
                        found.notes.append(f'task {episode.task_id!r} reached its goal in '
                                           'an earlier recording too: the later run kept')
                    kept[episode.task_id] = replace(episode,
                                                    episode_index=place[episode.task_id])
            episodes += sorted(kept.values(), key=lambda e: e.episode_index)
    if not episodes:
        raise ConfigError(f'{folder}: no recorded episode reached its goal')
    return exports, write_dataset(out, episodes, overwrite=overwrite)
