"""``cecm estimate``: a partner's belief computed again, offline, from recorded evidence.

The evidence is a list of task-log entries (task, observed trajectory), whatever it
came from: a session recording (MCAP; the runs that reached their goal, in the order
they finished, see cecm_ros/tools/recording.py), a partner store (SQLite) or an exported
partner profile (JSON). It is replayed through a fresh core estimator with
:func:`~cecm_ros.core.partner_store.rebuild_belief`, as the paper's human-study analysis
re-estimates from recorded play; with the settings the live belief was learned with
the result is that belief again, with others (``--inference paper``, more samples) it
shows what another estimator makes of the same evidence. No rclpy here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from cecm_ros.core.domain import Domain, Task
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.core.estimator import CapabilityBelief, EstimatorSettings, make_estimator
from cecm_ros.core.estimator_settings import PRESETS
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.core.partner_store import LogEntry, PartnerStore, StoreError, rebuild_belief
from cecm_ros.core.storage import write_atomically
from cecm_ros.tools.recording import (
    CAPABILITY_BELIEF,
    RecordingError,
    read_recording,
    reconstruct_runs,
    session_records,
)

PROFILE_FORMAT = 'cecm_ros/partner_profile/1'


@dataclass
class Reference:
    """A belief to compare the offline one with (the live one, or the stored one)."""

    label: str
    names: list[str]
    estimate: list[bool]
    theta: list[float]
    status: list[str]
    tasks_seen: int


@dataclass
class Evidence:
    """What to replay, and what the source says about how it was estimated."""

    source: str
    partner_id: str
    entries: list[LogEntry]
    method: str | None = None
    settings: EstimatorSettings | None = None   # the belief's own (store, profile)
    inference: str | None = None                # the live belief's reading (recording)
    seed: int | None = None
    reference: Reference | None = None
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------ sources
def _canonical(model: Domain) -> Callable:
    def canonical(atoms) -> tuple[str, ...]:
        try:
            return tuple(model.canonical_atoms(atoms))
        except CecmError as error:
            raise RecordingError(f'{error}: the recording is of another household; give '
                                 'its household file with --household') from None
    return canonical


def from_recording(path: str | Path, model: Domain,
                   partner_id: str | None = None) -> Evidence:
    """The runs of a session recording that the estimator saw, as log entries."""
    recording = read_recording(path)
    requests, states = session_records(recording)
    if not requests:
        topics = ', '.join(sorted(recording.topics)) or 'none'
        raise RecordingError(f'{path} holds no task: no cecm_ros/msg/TaskRequest message on '
                             f'any topic (topics: {topics})')
    runs = reconstruct_runs(requests, states, partner_id, _canonical(model))
    if not runs.runs:
        raise RecordingError(f'{path}: no run of a task of partner {runs.partner_id!r} reached '
                             'its goal in the recording (' + '; '.join(
                                 f'{label}: {why}' for label, why in runs.left_out) + ')')
    name = Path(path).name
    entries, notes = [], list(recording.problems)
    for index, run in enumerate(runs.runs):
        observed = tuple(model.state_from_wire(atoms, ()) for atoms in run.states)
        start = frozenset(run.states[0])
        if start != frozenset(run.initial):
            notes.append(f'{run.task_id}: the observed start differs from the requested one; '
                         'the estimator uses the observed one, as the live estimator does')
        entries.append(LogEntry(f'recording:{name}', index,
                                Task(run.task_id, start, frozenset(run.goal)), observed,
                                {'attempt': run.attempt}, run.finished / 1e9))
    notes += [f'left out {label}: {why}' for label, why in runs.left_out]
    beliefs = [m.message for m in recording.of_type(CAPABILITY_BELIEF)
               if m.message.partner_id == runs.partner_id]
    evidence = Evidence(f'recording {path}', runs.partner_id, entries, notes=notes)
    if beliefs:
        first, last = beliefs[0], beliefs[-1]
        evidence.method = str(last.method) or None
        evidence.inference = str(last.inference) if last.inference in PRESETS else None
        evidence.reference = Reference(
            f'the live belief in the recording (after {last.tasks_seen} tasks)',
            list(last.capability_names), [bool(b) for b in last.estimate],
            [float(x) for x in last.theta], list(last.status), int(last.tasks_seen))
        if first.tasks_seen:
            notes.append(f'the live belief had seen {first.tasks_seen} tasks before the first '
                         'one recorded; the offline estimate starts from the prior')
    return evidence


def _reference(belief: CapabilityBelief, label: str) -> Reference:
    return Reference(label, list(belief.capability_names), [bool(b) for b in belief.estimate],
                     [float(x) for x in belief.theta], [r.status for r in belief.report],
                     belief.tasks_seen)


def _from_belief(source: str, partner_id: str, belief: CapabilityBelief,
                 entries: list[LogEntry], where: str) -> Evidence:
    evidence = Evidence(source, partner_id, entries, method=belief.method,
                        settings=belief.settings, seed=belief.seed,
                        reference=_reference(belief, f'the belief {where} '
                                                     f'(after {belief.tasks_seen} tasks)'))
    if belief.tasks_seen != len(entries):
        evidence.notes.append(
            f'the belief has seen {belief.tasks_seen} tasks but its log holds {len(entries)} '
            '(a belief loaded from a file starts its log over); only the logged tasks are '
            'replayed')
    return evidence


def from_store(path: str | Path, partner_id: str | None = None) -> Evidence:
    """A partner's task log and belief from a partner store (the estimator's SQLite)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise StoreError(f'{path}: no such file (a partner store is the estimator\'s '
                         'store_path)')
    with PartnerStore(path) as store:
        partners = [p.partner_id for p in store.partners()]
        if partner_id is None:
            if len(partners) != 1:
                raise StoreError(f'{path} holds {len(partners)} partners '
                                 f'({", ".join(map(repr, partners)) or "none"}); choose one '
                                 'with --partner-id')
            partner_id = partners[0]
        belief = store.load(partner_id)
        if belief is None:
            raise StoreError(f'no partner {partner_id!r} in {path} (partners: '
                             f'{", ".join(map(repr, partners)) or "none"})')
        return _from_belief(f'store {path}', partner_id, belief, store.log(partner_id),
                            'in the store')


def from_profile(path: str | Path) -> Evidence:
    """A partner profile exported by ``export_partner`` or ``cecm estimate --out``."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f'{path}: no such file') from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f'{path} is not a partner profile (not JSON: {error})') from None
    if not isinstance(data, dict) or data.get('format') != PROFILE_FORMAT:
        found = data.get('format') if isinstance(data, dict) else type(data).__name__
        hint = (' (it is a belief file, which has no task log; export the profile with the '
                "estimator's export_partner service or `cecm estimate --out`)"
                if isinstance(data, dict) and 'capability_belief' in str(found) else '')
        raise ConfigError(f'{path} is not a partner profile (format {found!r}, expected '
                          f'{PROFILE_FORMAT!r}){hint}')
    try:
        belief = CapabilityBelief.from_dict(data['belief'])
        entries = [LogEntry.from_dict(entry) for entry in data.get('log', [])]
        partner_id = str(data['partner_id'])
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f'{path}: malformed partner profile: {error}') from None
    return _from_belief(f'profile {path}', partner_id, belief, entries, 'in the profile')


# ----------------------------------------------------------------------- settings
def choose_settings(evidence: Evidence, method: str | None, inference: str | None,
                    overrides: dict, window: int | None, seed: int | None
                    ) -> tuple[str, EstimatorSettings, int]:
    """(method, settings, seed) for the replay: the evidence's own where it has them,
    each option given replacing its value. Another ``inference`` starts from that
    preset and keeps the belief's samples, prior, epsilon and psi."""
    given = {key: value for key, value in overrides.items() if value is not None}
    base = evidence.settings
    if base is None or (inference is not None and inference != base.variant):
        kept = {} if base is None else {'samples': base.samples, 'prior': base.prior,
                                        'epsilon': base.epsilon, 'psi': base.psi}
        settings = EstimatorSettings.preset(inference or evidence.inference or 'posterior',
                                            **{**kept, **given})
    else:
        if 'decay' in given:
            given['window'] = None
        settings = replace(base, **given)
    if window is not None:
        # 0 switches the window off, as the estimator node's `window` parameter does.
        settings = replace(settings, window=window or None)
    chosen_seed = seed if seed is not None else (evidence.seed or 0)
    return method or evidence.method or 'cecm', settings, chosen_seed


def describe_settings(method: str, settings: EstimatorSettings, seed: int) -> str:
    if not method.startswith('cecm'):
        return method
    text = (f'{method}, {settings.variant} inference, {settings.samples} '
            f'{"particles" if settings.inference == "posterior" else "samples per task"}, '
            f'prior {settings.prior:g}, epsilon {settings.epsilon:g}')
    if settings.window:
        text += f', window {settings.window}'
    return text + f', seed {seed}'


# ------------------------------------------------------------------------- replay
class _Reporting:
    """An estimator that reports each update (rebuild_belief only calls update)."""

    def __init__(self, estimator, report: Callable[[int, LogEntry, object, object], None]):
        self.estimator = estimator
        self.report = report
        self.done = 0

    @property
    def belief(self) -> CapabilityBelief:
        return self.estimator.belief

    def update(self, task: Task, observed) -> object:
        entry = LogEntry('', self.done, task, tuple(observed))
        result = self.estimator.update(task, observed)
        self.done += 1
        self.report(self.done, entry, result, self.estimator)
        return result


def check_entries(model: Domain, entries: list[LogEntry], source: str) -> None:
    """Every logged task and state must belong to this household (bit masks of another
    household's propositions would mean something else)."""
    for entry in entries:
        try:
            model.validate_task(entry.task)
        except CecmError as error:
            raise ConfigError(f'{source}, task {entry.task.task_id}: {error}; give the '
                              'household it was learned in with --household') from None
        if not entry.observed or not all(_is_state(model, s) for s in entry.observed):
            raise ConfigError(f'{source}, task {entry.task.task_id}: its observed states are '
                              'not states of this household; give the household it was '
                              'learned in with --household')


def _is_state(model: Domain, state) -> bool:
    try:
        model.check_state(state)
    except CecmError:
        return False
    return True


def replay(evidence: Evidence, model: Domain, method: str, settings: EstimatorSettings,
           seed: int, planner, report: Callable | None = None) -> CapabilityBelief:
    """The belief that the estimator reaches from the prior over the evidence."""
    check_entries(model, evidence.entries, evidence.source)
    template = CapabilityBelief(method, list(model.catalog.names), settings, seed=seed)
    evaluator = evaluator_for(method, planner)

    def make(fresh: CapabilityBelief):
        estimator = make_estimator(method, model, evaluator, settings, seed, belief=fresh)
        return _Reporting(estimator, report or (lambda *args: None))

    return rebuild_belief(template, evidence.entries, make)


def compare(belief: CapabilityBelief, reference: Reference,
            tolerance: float = 1e-6) -> list[str]:
    """How the belief differs from the reference ([] when it does not)."""
    if list(belief.capability_names) != reference.names:
        return ['the capabilities differ (another capability catalogue)']
    differences = []
    if belief.tasks_seen != reference.tasks_seen:
        differences.append(f'tasks seen {belief.tasks_seen} vs {reference.tasks_seen}')
    estimate = [bool(b) for b in belief.estimate]
    flipped = [n for n, a, b in zip(reference.names, estimate, reference.estimate) if a != b]
    if flipped:
        differences.append(f'estimate of {", ".join(flipped)}')
    gap = float(np.max(np.abs(np.asarray(belief.theta) - np.asarray(reference.theta))))
    if gap > tolerance:
        differences.append(f'theta (up to {gap:.3f})')
    status = [r.status for r in belief.report]
    if reference.status and not status:
        differences.append('no evidence report (only the posterior keeps one)')
    elif reference.status and status != reference.status:
        changed = [n for n, a, b in zip(reference.names, status, reference.status) if a != b]
        differences.append(f'evidence status of {", ".join(changed)}')
    return differences


def profile_document(partner_id: str, belief: CapabilityBelief,
                     entries: list[LogEntry]) -> dict:
    """The partner profile (PartnerStore.export's format) of the replayed belief."""
    with PartnerStore(':memory:') as store:
        store.save(partner_id, belief)
        for entry in entries:
            store.record_update(partner_id, belief, entry)
        return store.export(partner_id)


def write_outputs(out: str | Path, partner_id: str, belief: CapabilityBelief,
                  entries: list[LogEntry]) -> tuple[Path, Path]:
    """``OUT/belief.json`` (a belief file) and ``OUT/profile.json`` (belief and task log)."""
    out = Path(out).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
        belief_path, profile_path = out / 'belief.json', out / 'profile.json'
        belief.save(belief_path)
        write_atomically(profile_path, json.dumps(profile_document(partner_id, belief,
                                                                   entries), indent=1))
    except OSError as error:
        raise ConfigError(f'cannot write the results to {out}: {error}') from None
    return belief_path, profile_path


# ------------------------------------------------------------------------ the command
def run(evidence: Evidence, model: Domain, method: str, settings: EstimatorSettings,
        seed: int, planner, out: str | None = None, say: Callable[[str], None] = print
        ) -> CapabilityBelief:
    """Replay the evidence and print what ``cecm estimate`` prints."""
    count = len(evidence.entries)
    say(f'[cecm] partner {evidence.partner_id!r} from the {evidence.source}: {count} tasks '
        'to replay')
    say(f'[cecm] estimator: {describe_settings(method, settings, seed)}')
    for note in evidence.notes:
        say(f'[cecm] note: {note}')
    if not count:
        raise ConfigError(f'the {evidence.source} holds no task to replay (its task log is '
                          'empty)')

    def show(done: int, entry: LogEntry, result, estimator) -> None:
        lacks = model.catalog.describe_missing(estimator.estimate)
        say(f'  [task {done}/{count}] {entry.task.task_id} ({len(entry.observed) - 1} steps): '
            f'{result.message}; estimate lacks {lacks}')

    belief = replay(evidence, model, method, settings, seed, planner, show)
    bits = ''.join('1' if b else '0' for b in belief.estimate)
    say(f'estimate after {belief.tasks_seen} tasks: {bits} (lacks '
        f'{model.catalog.describe_missing(belief.estimate)})')
    lines = belief.describe()
    if lines:
        say('what the evidence has decided (undecided ones are not facts):')
        for line in lines:
            say(f'  {line}')
    if evidence.reference is not None:
        differences = compare(belief, evidence.reference)
        if not differences:
            verdict = 'identical (estimate, theta within 1e-6, evidence status)'
        else:
            verdict = 'differs in ' + '; '.join(differences)
            if evidence.settings is None:
                verdict += (' (were the estimator settings and the seed those of the live '
                            'estimator? give them as options)')
            elif (method, settings, seed) == (evidence.method, evidence.settings,
                                              evidence.seed):
                verdict += ' (with its own settings; see the notes above)'
        say(f'compared with {evidence.reference.label}: {verdict}')
    if out:
        belief_path, profile_path = write_outputs(out, evidence.partner_id, belief,
                                                  evidence.entries)
        say(f'belief: {belief_path}')
        say(f'profile: {profile_path}')
    return belief
