"""``cecm estimate --from-dataset``: the paper's offline analysis of a study dataset.

Section 5.3: every participant's every set (one assigned vector, its tasks in order) is
given to a fresh estimator, seeded by the participant and the set, for each method
asked for; after each task we keep the samples (Algorithm 1 and 2) or particles (the
posterior) that explained it and the Hamming distance of the estimate to the assigned
vector. The table gives, per type, method and task position, their means over the sets
with 95% Student-t intervals. Appendix E: the diversity of the trajectories of one task
under one type (NDM over the trajectories' feature vectors) and the distance (the
domain's, as CE-CM's epsilon is compared with) between each observed trajectory and
the planner's plan under the assigned vector. Written as JSON, markdown and plots.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core import metrics
from cecm_ros.core.dataset import Dataset, load_dataset
from cecm_ros.core.domain import Domain, Planner
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.estimator_settings import PRESETS
from cecm_ros.core.hypotheses import PLAN_SET_DEFAULTS, evaluator_for
from cecm_ros.core.storage import write_atomically
from cecm_ros.experiments.experiment import mean_ci95

RESULT_FORMAT = 'cecm_ros/study_reestimate/1'
# --method NAME: (estimation method, inference preset, label as the project's tables
# name it). CE-CM-Div is the paper's Algorithm 2 with Algorithm 1's pooled inference.
METHODS = {
    'posterior': ('cecm', 'posterior', 'CE-CM posterior (default)'),
    'paper': ('cecm', 'paper', 'CE-CM (Algorithm 1)'),
    'cecm_div': ('cecm_div', 'paper', 'CE-CM-Div (Algorithm 2)'),
}


@dataclass(frozen=True)
class MethodSpec:
    name: str                   # posterior, paper, cecm_div
    method: str                 # the estimator: cecm or cecm_div
    settings: EstimatorSettings
    label: str
    set_diversity: float | None = None   # cecm_div's delta (None: the paper's)


def method_specs(names: Sequence[str], domain: Domain, overrides: dict[str, Any],
                 inference: str | None = None, window: int | None = None,
                 set_diversity: float | None = None) -> list[MethodSpec]:
    """The methods asked for, each with its settings: its preset, the options given
    (``overrides``: estimator settings by name, None for those not given), the domain's
    epsilon where none is given. ``inference`` chooses CE-CM-Div's reading."""
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ConfigError(f'unknown method {", ".join(map(repr, unknown)) or "(none)"}; with '
                          f'--from-dataset: {", ".join(METHODS)} (comma-separated)')
    if len(set(names)) != len(names):
        raise ConfigError(f'a method is named twice: {",".join(names)}')
    if inference is not None and 'cecm_div' not in names:
        raise ConfigError('with --from-dataset, --inference chooses the reading of cecm_div '
                          f'only; posterior and paper are --method names (got --inference '
                          f'{inference} with --method {",".join(names)})')
    given = {key: value for key, value in overrides.items() if value is not None}
    if 'epsilon' not in given and domain.default_epsilon:
        given['epsilon'] = domain.default_epsilon
    specs = []
    for name in names:
        method, preset, label = METHODS[name]
        if name == 'cecm_div' and inference is not None and inference != preset:
            preset, label = inference, f'CE-CM-Div ({inference})'
        if preset not in PRESETS:
            raise ConfigError(f'unknown inference {preset!r}; choose one of '
                              f'{", ".join(PRESETS)}')
        settings = EstimatorSettings.preset(preset, **given)
        if window is not None:
            settings = replace(settings, window=window or None)
        specs.append(MethodSpec(name, method, settings, label,
                                set_diversity if method == 'cecm_div' else None))
    return specs


def set_seed(seed: int, participant: str, set_index: int) -> int:
    """The estimator's seed for one set: the base seed, the participant's id and the
    set's index, so that a set's result does not depend on the others or their order
    (and every method draws from the same seed)."""
    return int(np.random.default_rng([seed, zlib.crc32(participant.encode()), set_index,
                                      0xE57]).integers(2**31 - 1))


# ----------------------------------------------------------------------- section 5.3
class SetResults:
    """Each set's rows on disk (``OUT/sets/``), under a key of everything they depend on:
    a long re-estimation that stops loses no finished set, and a dataset that grows
    (participants added) re-estimates only its new sets. Kept only where the planner
    has a plan-store scope (the digest of the domain's files and its settings)."""

    def __init__(self, folder: Path, planner: Planner):
        self.folder = folder
        self.scope = str(getattr(planner, 'store_scope', '') or '')

    def key(self, spec: MethodSpec, seed: int, episodes: Sequence[Any]) -> str | None:
        if not self.scope:
            return None
        text = json.dumps([RESULT_FORMAT, self.scope, spec.name, spec.method,
                           asdict(spec.settings), spec.set_diversity, seed,
                           [episode.to_json() for episode in episodes]],
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, spec: MethodSpec, participant: str, set_index: int) -> Path:
        return self.folder / f'{spec.name}-{participant}-set{set_index}.json'

    def load(self, spec: MethodSpec, participant: str, set_index: int,
             key: str | None) -> list[dict] | None:
        if key is None:
            return None
        try:
            kept = json.loads(self._path(spec, participant, set_index).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get('key') != key or \
                not isinstance(kept.get('rows'), list):
            return None
        return kept['rows']

    def save(self, spec: MethodSpec, participant: str, set_index: int, key: str | None,
             rows: list[dict]) -> None:
        if key is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self._path(spec, participant, set_index),
                             json.dumps(_plain({'key': key, 'rows': rows})))
        except OSError as error:
            raise ConfigError(f'cannot write the results to {self.folder}: {error}') from None


def reestimate(dataset: Dataset, domain: Domain, planner: Planner, spec: MethodSpec,
               seed: int, progress: Callable[[str], None] | None = None,
               kept: SetResults | None = None) -> list[dict]:
    """One row per episode: the update of the set's estimator on it (``kept``: sets
    re-estimated before with the same settings and episodes are read, not redone)."""
    if dataset.decoded is None:
        raise ConfigError('the dataset was loaded without its domain')
    evaluator = evaluator_for(spec.method, planner, spec.set_diversity)
    active = ~domain.inert_mask
    rows: list[dict] = []
    for group in dataset.sets():
        first = dataset.episodes[group.positions[0]]
        truth = dataset.decoded[group.positions[0]].truth
        chosen = set_seed(seed, group.participant, group.set_index)
        key = None if kept is None else \
            kept.key(spec, chosen, [dataset.episodes[i] for i in group.positions])
        found = None if kept is None else \
            kept.load(spec, group.participant, group.set_index, key)
        if kept is not None and found is not None:
            rows += found
            if progress is not None:
                progress(f'{spec.label}: {group.participant} set {group.set_index} '
                         f'({first.type_name}): read from {kept.folder} (done before)')
            continue
        start = len(rows)
        estimator = make_estimator(spec.method, domain, evaluator, spec.settings, chosen)
        for position, index in enumerate(group.positions, 1):
            episode, decoded = dataset.episodes[index], dataset.decoded[index]
            try:
                update = estimator.update(decoded.task, decoded.observed)
            except CecmError as error:
                raise ConfigError(f'{dataset.origins[index]}: {spec.label} could not use it: '
                                  f'{error}') from None
            estimate = estimator.estimate
            rows.append({
                'method': spec.name, 'participant': group.participant,
                'set': group.set_index, 'type': first.type_name, 'truth': group.bits,
                'task': position, 'episode': episode.episode_index,
                'task_id': episode.task_id, 'steps': len(episode.steps), 'seed': chosen,
                'accepted_samples': int(update.samples_accepted),
                'hamming': metrics.hamming(estimate, truth),
                'hamming_active': metrics.hamming(estimate, truth, active),
                'estimate': ''.join('1' if b else '0' for b in estimate),
                'message': update.message})
        if kept is not None:
            kept.save(spec, group.participant, group.set_index, key, rows[start:])
        if progress is not None:
            last = rows[-1]
            progress(f'{spec.label}: {group.participant} set {group.set_index} '
                     f'({first.type_name}, {len(group.positions)} tasks): Hamming '
                     f'{last["hamming"]:.2f}, accepted {last["accepted_samples"]} on its '
                     'last task')
    return rows


def paper_table(rows: list[dict], specs: Sequence[MethodSpec]) -> list[dict]:
    """Per type, method and task position: the sets that reached it, accepted samples
    and Hamming distance (mean and 95% Student-t interval over the sets)."""
    labels = {spec.name: spec.label for spec in specs}
    types = list(dict.fromkeys(row['type'] for row in rows))
    table = []
    for kind in types:
        for spec in specs:
            mine = [r for r in rows if r['type'] == kind and r['method'] == spec.name]
            for task in sorted({r['task'] for r in mine}):
                at = [r for r in mine if r['task'] == task]
                table.append({'type': kind, 'method': spec.name, 'label': labels[spec.name],
                              'task': task, 'sets': len(at),
                              'accepted_samples': mean_ci95([r['accepted_samples'] for r in at]),
                              'hamming': mean_ci95([r['hamming'] for r in at])})
    return table


def final_table(rows: list[dict], specs: Sequence[MethodSpec],
                reference: str = 'paper') -> list[dict]:
    """Per type and method, the Hamming distance after each set's last episode (sets
    that lost tasks end earlier than the protocol's last position), and, where the
    ``reference`` method ran too, the paired difference from it over the same sets and
    how many sets each side won."""
    labels = {spec.name: spec.label for spec in specs}
    last: dict[tuple[str, str, int], dict] = {}
    for row in rows:
        key = (row['method'], row['participant'], row['set'])
        if key not in last or row['task'] > last[key]['task']:
            last[key] = row
    table = []
    for kind in dict.fromkeys(row['type'] for row in rows):
        sets = sorted({(p, i) for (m, p, i), r in last.items() if r['type'] == kind})
        for spec in specs:
            mine = [last[(spec.name, p, i)]['hamming'] for p, i in sets
                    if (spec.name, p, i) in last]
            entry: dict[str, Any] = {'type': kind, 'method': spec.name,
                                     'label': labels[spec.name], 'sets': len(mine),
                                     'hamming': mean_ci95(mine)}
            pairs = [(last[(spec.name, p, i)]['hamming'], last[(reference, p, i)]['hamming'])
                     for p, i in sets if (spec.name, p, i) in last and (reference, p, i) in last]
            if spec.name != reference and pairs:
                entry['versus'] = {'method': reference, 'label': labels.get(reference, reference),
                                   'difference': mean_ci95([a - b for a, b in pairs]),
                                   'lower': sum(a < b for a, b in pairs),
                                   'equal': sum(a == b for a, b in pairs),
                                   'higher': sum(a > b for a, b in pairs)}
            table.append(entry)
    return table


# ------------------------------------------------------------------------ appendix E
def _groups(dataset: Dataset) -> dict[tuple[str, str], list[int]]:
    """Episodes by (type, task id), in the dataset's order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, episode in enumerate(dataset.episodes):
        groups.setdefault((episode.type_name, episode.task_id), []).append(index)
    return groups


def trajectory_vectors(domain: Domain, trajectories: Sequence[Sequence]) -> np.ndarray:
    """One flat vector per trajectory: its states' features (the domain's, or where it
    has none one 0/1 entry per fact that holds anywhere in these trajectories), each
    trajectory padded with its last state to the longest."""
    length = max(len(t) for t in trajectories)
    padded = [list(t) + [t[-1]] * (length - len(t)) for t in trajectories]
    if all(len(domain.state_features(s)) for t in padded for s in t[:1]):
        rows = [[x for s in t for x in domain.state_features(s)] for t in padded]
        return np.asarray(rows, dtype=float)
    facts = sorted({f for t in padded for s in t for f in domain.state_facts(s)})
    column = {fact: i for i, fact in enumerate(facts)}
    vectors = np.zeros((len(padded), length * len(facts)))
    for row, trajectory in enumerate(padded):
        for k, state in enumerate(trajectory):
            for fact in domain.state_facts(state):
                vectors[row, k * len(facts) + column[fact]] = 1.0
    return vectors


def ndm(vectors: np.ndarray) -> dict[str, float | None]:
    """The paper's normalised distance metric over one group's trajectory vectors:
    NDM = 1/N sum_i sum_{j != i} ||tau_i - tau_j|| / D_max (as printed, which grows with
    N), and the mean over pairs of ||tau_i - tau_j|| / D_max (in [0, 1]); None for fewer
    than two trajectories, 0 when all are equal."""
    count = len(vectors)
    if count < 2:
        return {'ndm': None, 'mean_pairwise': None, 'd_max': None}
    distances = np.linalg.norm(vectors[:, None, :] - vectors[None, :, :], axis=2)
    largest = float(distances.max())
    if largest == 0.0:
        return {'ndm': 0.0, 'mean_pairwise': 0.0, 'd_max': 0.0}
    total = float(distances.sum()) / largest      # every ordered pair i != j
    return {'ndm': total / count, 'mean_pairwise': total / (count * (count - 1)),
            'd_max': largest}


def diversity(dataset: Dataset, domain: Domain) -> list[dict]:
    """Appendix E's trajectory diversity per type and task."""
    assert dataset.decoded is not None
    found = []
    for (kind, task_id), indices in _groups(dataset).items():
        trajectories = [dataset.decoded[i].observed for i in indices]
        found.append({'type': kind, 'task_id': task_id, 'trajectories': len(indices),
                      **ndm(trajectory_vectors(domain, trajectories))})
    return found


def planner_distances(dataset: Dataset, domain: Domain, planner: Planner) -> list[dict]:
    """Appendix E's distance (the domain's) between each observed trajectory and the
    planner's plan under the assigned vector from the same start, per type and task:
    mean, sample standard deviation and every value."""
    assert dataset.decoded is not None
    found = []
    for (kind, task_id), indices in _groups(dataset).items():
        values = []
        for index in indices:
            decoded = dataset.decoded[index]
            try:
                plan = planner.plan(decoded.task, decoded.truth)
            except CecmError as error:
                raise ConfigError(f'{dataset.origins[index]}: no plan under its assigned '
                                  f'capabilities: {error}') from None
            values.append(float(domain.distance(decoded.observed, plan.trajectory)))
        found.append({'type': kind, 'task_id': task_id, 'trajectories': len(values),
                      'mean': float(np.mean(values)),
                      'sd': float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
                      'values': values})
    return found


# --------------------------------------------------------------------------- outputs
def _interval(value: dict, digits: int) -> str:
    return (f'{value["mean"]:.{digits}f} [{value["ci95_low"]:.{digits}f}, '
            f'{value["ci95_high"]:.{digits}f}]')


def _number(value: float | None, digits: int = 3) -> str:
    return '-' if value is None else f'{value:.{digits}f}'


def markdown(result: dict) -> str:
    """The tables of ``report.md``."""
    lines = [f'# Re-estimation of {result["dataset"]}', '',
             f'{result["episodes"]} episodes, {result["sets"]} sets, '
             f'{len(result["participants"])} participants; domain {result["domain"]}; '
             f'base seed {result["seed"]}. Made by `{result["command"]}`.', '']
    for spec in result['methods']:
        lines.append(f'- {spec["label"]} (`{spec["name"]}`): {spec["description"]}')
    lines += ['', '## Accepted samples and Hamming distance per task (section 5.3)', '',
              'Mean over the sets of each type with a 95% Student-t interval (none for one '
              'set). Accepted: the samples (Algorithm 1 and 2) or particles (posterior) '
              'that explained the task; Hamming: the estimate after it against the assigned '
              'vector, over every capability.', '',
              '| type | method | task | sets | accepted samples | Hamming |',
              '|---|---|---|---|---|---|']
    for row in result['table']:
        lines.append(f'| {row["type"]} | {row["label"]} | {row["task"]} | {row["sets"]} | '
                     f'{_interval(row["accepted_samples"], 1)} | '
                     f'{_interval(row["hamming"], 2)} |')
    lines += ['', "## Hamming distance after each set's last episode", '',
              'Mean over the sets of each type with a 95% Student-t interval; a set whose '
              'later tasks were left out of the dataset ends earlier. Against '
              'another method: the paired difference over the same sets (negative: '
              'closer to the assigned vector) and the sets where it ended lower, equal '
              'or higher.', '',
              '| type | method | sets | Hamming | difference | lower / equal / higher |',
              '|---|---|---|---|---|---|']
    for row in result.get('final', []):
        versus = row.get('versus')
        lines.append(f'| {row["type"]} | {row["label"]} | {row["sets"]} | '
                     f'{_interval(row["hamming"], 2)} | ' +
                     (f'{_interval(versus["difference"], 2)} against {versus["label"]} | '
                      f'{versus["lower"]} / {versus["equal"]} / {versus["higher"]} |'
                      if versus else '- | - |'))
    lines += ['', '## Trajectory diversity per task (appendix E)', '',
              'NDM as the paper prints it, 1/N sum_i sum_(j != i) ||tau_i - tau_j|| / D_max '
              '(it grows with N), and the same sum over the N (N - 1) ordered pairs (in '
              '[0, 1]); tau: the trajectory\'s state features (or facts) flattened, the '
              'shorter ones padded with their last state; D_max the group\'s largest '
              'distance.', '',
              '| type | task | trajectories | NDM | mean over pairs | D_max |',
              '|---|---|---|---|---|---|']
    for row in result['diversity']:
        lines.append(f'| {row["type"]} | {row["task_id"]} | {row["trajectories"]} | '
                     f'{_number(row["ndm"])} | {_number(row["mean_pairwise"])} | '
                     f'{_number(row["d_max"])} |')
    lines += ['', "## Distance between the observed trajectories and the planner's "
              '(appendix E)', '',
              f'The domain\'s distance ({result["distance"][:1].lower()}'
              f'{result["distance"][1:]}) between each observed '
              'trajectory and the plan under the assigned vector from the same start; mean '
              'and sample standard deviation.', '',
              '| type | task | trajectories | mean | sd |', '|---|---|---|---|---|']
    for row in result['distances']:
        lines.append(f'| {row["type"]} | {row["task_id"]} | {row["trajectories"]} | '
                     f'{row["mean"]:.3f} | {row["sd"]:.3f} |')
    return '\n'.join(lines) + '\n'


def plot(result: dict, out: Path) -> list[Path]:
    """accepted_samples.png and hamming.png (a panel per type, a line per method with its
    95% band, as the paper's figures), diversity.png and distance.png (a bar per task,
    grouped by type)."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    types = list(dict.fromkeys(row['type'] for row in result['table']))
    for metric, title in (('accepted_samples', 'Accepted samples'),
                          ('hamming', 'Hamming distance')):
        figure, panels = plt.subplots(1, len(types), figsize=(3.4 * len(types), 3.0),
                                      dpi=120, squeeze=False, sharey=True)
        for axes, kind in zip(panels[0], types):
            for spec in result['methods']:
                rows = [r for r in result['table']
                        if r['type'] == kind and r['method'] == spec['name']]
                x = [r['task'] for r in rows]
                line, = axes.plot(x, [r[metric]['mean'] for r in rows], marker='o',
                                  label=spec['label'])
                axes.fill_between(x, [r[metric]['ci95_low'] for r in rows],
                                  [r[metric]['ci95_high'] for r in rows], alpha=0.2,
                                  color=line.get_color())
                axes.set_xticks(x)
            axes.set_title(kind, fontsize=9)
            axes.set_xlabel('Task')
            axes.grid(alpha=0.3)
        panels[0][0].set_ylabel(title)
        panels[0][0].legend(fontsize=7)
        figure.tight_layout()
        path = out / f'{metric}.png'
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    for name, key, error, label in (('diversity', 'mean_pairwise', None,
                                     'NDM (mean over pairs)'),
                                    ('distance', 'mean', 'sd',
                                     'Distance to the plan')):
        rows = result['diversity' if name == 'diversity' else 'distances']
        figure, axes = plt.subplots(figsize=(max(4.0, 0.45 * len(rows) + 1.5), 3.2), dpi=120)
        positions: list[float] = []
        names: list[str] = []
        place = 0.0
        for number, kind in enumerate(dict.fromkeys(r['type'] for r in rows)):
            for first, row in enumerate(r for r in rows if r['type'] == kind):
                axes.bar(place, row[key] if row[key] is not None else 0.0, color=f'C{number}',
                         yerr=row[error] if error else None, ecolor='black', capsize=2,
                         label=None if first else kind)
                positions.append(place)
                names.append(row['task_id'])
                place += 1.0
            place += 0.6
        axes.set_xticks(positions, names, rotation=60, fontsize=6, ha='right')
        axes.set_ylabel(label, fontsize=8)
        axes.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.0, 1.0))
        axes.grid(alpha=0.3, axis='y')
        figure.tight_layout()
        path = out / f'{name}.png'
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    return written


def describe(spec: MethodSpec, domain: Domain) -> str:
    settings = spec.settings.for_domain(domain)
    text = (f'{spec.method}, {settings.variant} inference, {settings.samples} '
            f'{"particles" if settings.inference == "posterior" else "samples per task"}, '
            f'prior {settings.prior:g}, epsilon {settings.epsilon:g}')
    if settings.inference == 'posterior':
        text += f', {settings.likelihood} likelihood'
    if spec.method == 'cecm_div':
        sets = dict(PLAN_SET_DEFAULTS)
        if spec.set_diversity is not None:
            sets['diversity'] = spec.set_diversity
        text += ', plan sets ' + ', '.join(f'{k} {v}' for k, v in sets.items())
    return text


def run(path: str | Path, domain: Domain, planner: Planner, specs: Sequence[MethodSpec],
        seed: int, out: str | Path, command: str = '',
        say: Callable[[str], None] = print) -> dict:
    """Load the dataset with ``domain``, re-estimate it with every method, analyse its
    trajectories, and write ``OUT/reestimate.json``, ``OUT/report.md`` and
    ``OUT/plots/*.png``."""
    dataset = load_dataset(path, domain)
    assert dataset.decoded is not None
    sets = dataset.sets()
    say(f'[cecm] dataset {path}: {len(dataset.episodes)} episodes in {len(sets)} sets of '
        f'{len(dataset.participants)} participants ({len(dataset.files)} files)')
    moved = sum(d.start_differs for d in dataset.decoded)
    if moved:
        say(f'[cecm] note: in {moved} episodes the observed start is not the task\'s '
            'initial state; the estimator is given the task from the observed start')
    rows = []
    kept = SetResults(Path(out).expanduser() / 'sets', planner)
    for spec in specs:
        say(f'[cecm] {spec.label}: {describe(spec, domain)}')
        rows += reestimate(dataset, domain, planner, spec, seed, say, kept)
    result: dict[str, Any] = {
        'format': RESULT_FORMAT, 'dataset': str(path), 'domain': domain.name,
        'command': command, 'seed': seed, 'episodes': len(dataset.episodes),
        'sets': len(sets), 'participants': dataset.participants,
        'capabilities': list(domain.catalog.names),
        'distance': _first_sentence(inspect.getdoc(domain.distance) or 'its distance'),
        'methods': [{'name': s.name, 'method': s.method, 'label': s.label,
                     'description': describe(s, domain),
                     'settings': asdict(s.settings),
                     'set_diversity': s.set_diversity} for s in specs],
        'rows': rows, 'table': paper_table(rows, specs), 'final': final_table(rows, specs),
        'diversity': diversity(dataset, domain),
        'distances': planner_distances(dataset, domain, planner)}
    out = Path(out).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_atomically(out / 'reestimate.json',
                         json.dumps(_plain(result), indent=1, allow_nan=False))
        write_atomically(out / 'report.md', markdown(result))
        plots = plot(result, out / 'plots')
    except OSError as error:
        raise ConfigError(f'cannot write the results to {out}: {error}') from None
    for row in result['final']:
        say(f'  {row["type"]:<16} {row["label"]:<28} after the last episode ({row["sets"]} '
            f'sets): Hamming {_interval(row["hamming"], 2)}')
    say(f'results: {out / "reestimate.json"}, {out / "report.md"}')
    say(f'plots: {", ".join(str(p) for p in plots)}')
    return result


def _plain(value):
    """JSON without NaN (a 95% interval of one set is its mean)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _first_sentence(text: str) -> str:
    return ' '.join(text.split()).split('. ')[0].rstrip('.')
