"""The estimation-planning loop of the paper, repeated over seeded runs.

Each run draws a sequence of tasks. For every task the robot plans under its current
estimate, the simulated partner executes with corrections, and the observed trajectory
updates the estimate. Per task we record what happened (corrections, plan overlap,
infeasible assignments, all under the estimate the robot planned with) and the
estimate's Hamming distance after the update.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import metrics
from .domain import TidyUpModel
from .errors import ConfigError
from .estimator import EstimatorSettings, make_estimator
from .hypotheses import DiversePlanEvaluator, SharedPlanEvaluator
from .partners import RobotTeammate, SimulatedHuman, TaskRecord, run_shared_task
from .planner import JointPlanner
from .tasks import TaskGenerator

METRICS = ('hamming', 'hamming_active', 'correction_ratio', 'iou', 'infeasible_assigned',
           'accepted_samples')
METHODS = ('cecm', 'cecm_div', 'optimistic', 'pessimistic')


@dataclass(frozen=True)
class ExperimentSettings:
    partner: str = 'low_capability'          # partner type or name=0,... vector
    method: str = 'cecm'
    runs: int = 20
    tasks: int = 5
    seed: int = 0
    jobs: int = 2
    estimator: EstimatorSettings = field(default_factory=EstimatorSettings)
    switch_partner: str | None = None        # partner after `switch_after` tasks
    switch_after: int | None = None
    forgo_probability: float = 0.0           # chance the partner declines a capability

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f'unknown method {self.method!r}; methods: {", ".join(METHODS)}')
        if self.runs < 1 or self.tasks < 1:
            raise ConfigError('runs and tasks must be at least 1')
        if self.jobs < 1:
            raise ConfigError(f'jobs must be at least 1, got {self.jobs}')
        if not 0.0 <= self.forgo_probability <= 1.0:
            raise ConfigError(f'forgo_probability must lie in [0, 1], got '
                              f'{self.forgo_probability}')
        if (self.switch_partner is None) != (self.switch_after is None):
            raise ConfigError('switch_partner and switch_after go together')


@dataclass
class TaskResult:
    run: int
    task_index: int
    task_id: str
    hamming: float
    hamming_active: float
    correction_ratio: float
    iou: float
    infeasible_assigned: int
    accepted_samples: int
    corrections: int
    robot_decisions: int
    goal_reached: bool
    estimate: str
    truth: str
    theta: str           # P(c_i = 1) per capability after the update, space-separated
    update_message: str


def task_metrics(model: TidyUpModel, record: TaskRecord, estimate: np.ndarray,
                 theta: np.ndarray, truth: np.ndarray, accepted: int, message: str, run: int,
                 index: int) -> TaskResult:
    """The paper's metrics for one task (Hamming after the update on that task)."""
    active = ~model.inert_mask
    bits = ''.join('1' if b else '0' for b in estimate)
    return TaskResult(
        run=run, task_index=index, task_id=record.task.task_id,
        hamming=metrics.hamming(estimate, truth),
        hamming_active=metrics.hamming(estimate, truth, active),
        correction_ratio=metrics.correction_ratio(record.corrections, record.robot_decisions),
        iou=metrics.plan_overlap_iou(record.robot_plan, record.human_plan),
        infeasible_assigned=metrics.infeasible_assigned(model, record.robot_plan, truth),
        accepted_samples=accepted, corrections=record.corrections,
        robot_decisions=record.robot_decisions, goal_reached=record.goal_reached,
        estimate=bits, truth=''.join('1' if b else '0' for b in truth),
        theta=' '.join(f'{value:.3f}' for value in theta),
        update_message=message)


def run_once(model: TidyUpModel, planner: JointPlanner, settings: ExperimentSettings,
             run: int, report: Callable[[str], None] | None = None) -> list[TaskResult]:
    """One run: a seeded task sequence with one estimator learning along it."""
    run_seed = settings.seed * 100_003 + run
    generator = TaskGenerator(model, run_seed)
    evaluator = (DiversePlanEvaluator(planner) if settings.method == 'cecm_div'
                 else SharedPlanEvaluator(planner))
    estimator = make_estimator(settings.method, model, evaluator, settings.estimator,
                               seed=run_seed)
    partner_rng = np.random.default_rng([run_seed, 7])
    results = []
    for index in range(settings.tasks):
        partner = settings.partner
        if settings.switch_after is not None and index >= settings.switch_after:
            partner = settings.switch_partner
        truth = model.catalog.resolve(partner)
        task = generator.next_task()
        started = time.perf_counter()
        human = SimulatedHuman(planner, truth, settings.forgo_probability,
                               seed=int(partner_rng.integers(2**32)))
        record = run_shared_task(model, task, RobotTeammate(planner, estimator.estimate),
                                 human)
        update = estimator.update(task, record.trajectory)
        result = task_metrics(model, record, estimator.estimate, estimator.belief.theta, truth,
                              update.samples_accepted,
                              update.message, run, index)
        results.append(result)
        if report:
            report(f'[run {run + 1}/{settings.runs} task {index + 1}/{settings.tasks}] '
                   f'{settings.method}: hamming={result.hamming:.2f} corrections='
                   f'{result.corrections}/{result.robot_decisions} iou={result.iou:.2f} '
                   f'accepted={result.accepted_samples} '
                   f'({time.perf_counter() - started:.1f} s)')
    return results


T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def mean_ci95(values) -> dict[str, float]:
    """Mean with a Student-t 95% confidence interval (the interval is the mean for n=1)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return {'mean': mean, 'ci95_low': mean, 'ci95_high': mean}
    t = T_975[len(values) - 2] if len(values) - 1 <= len(T_975) else 1.96
    half = t * float(values.std(ddof=1)) / math.sqrt(len(values))
    return {'mean': mean, 'ci95_low': mean - half, 'ci95_high': mean + half}


def summarise(settings: ExperimentSettings, results: list[TaskResult], wall_s: float,
              model: TidyUpModel, extra: dict | None = None) -> dict:
    per_task = []
    for index in range(settings.tasks):
        rows = [r for r in results if r.task_index == index]
        entry = {'task': index + 1, 'runs': len(rows)}
        for name in METRICS:
            entry[name] = mean_ci95([getattr(r, name) for r in rows])
        # The paper's appendix B.1: how each capability's estimate evolves over tasks.
        thetas = np.array([[float(v) for v in r.theta.split()] for r in rows])
        entry['theta'] = {name: mean_ci95(thetas[:, i])
                          for i, name in enumerate(model.catalog.names)}
        per_task.append(entry)
    settings_dict = asdict(settings)
    return {
        'format': 'cecm_ros/experiment_summary/1',
        'settings': settings_dict,
        'capabilities': list(model.catalog.names),
        'inert_capabilities': model.inert_capabilities,
        'true_capabilities': model.catalog.format_vector(model.catalog.resolve(settings.partner)),
        'wall_time_s': round(wall_s, 3),
        'per_task': per_task,
        **(extra or {}),
    }


def write_outputs(out_dir: Path, summary: dict, results: list[TaskResult]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / 'summary.json').write_text(json.dumps(summary, indent=1))
    with open(out_dir / 'runs.csv', 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=list(asdict(results[0])))
        writer.writeheader()
        for result in results:
            writer.writerow(asdict(result))


def run_experiment(settings: ExperimentSettings, model: TidyUpModel | None = None,
                   out_dir: str | Path | None = None, quiet: bool = False,
                   planner: JointPlanner | None = None) -> dict:
    """Run ``settings.runs`` runs (``jobs`` at a time) and write the outputs to ``out_dir``."""
    model = model or TidyUpModel()
    for spec in filter(None, (settings.partner, settings.switch_partner)):
        model.catalog.resolve(spec)  # fail early on a bad partner
    lock = threading.Lock()

    def report(line: str) -> None:
        if not quiet:
            with lock:
                print(line, file=sys.stderr, flush=True)

    own_planner = planner is None
    planner = planner or JointPlanner(model, workers=settings.jobs)
    calls_before, hits_before = planner.calls, planner.cache_hits
    started = time.perf_counter()
    try:
        if settings.jobs > 1 and settings.runs > 1:
            with ThreadPoolExecutor(settings.jobs) as pool:
                batches = list(pool.map(
                    lambda run: run_once(model, planner, settings, run, report),
                    range(settings.runs)))
        else:
            batches = [run_once(model, planner, settings, run, report)
                       for run in range(settings.runs)]
    finally:
        if own_planner:
            planner.close()
    wall = time.perf_counter() - started
    results = [r for batch in batches for r in batch]
    summary = summarise(settings, results, wall, model,
                        {'planner_calls': planner.calls - calls_before,
                         'planner_cache_hits': planner.cache_hits - hits_before})
    if out_dir is not None:
        write_outputs(Path(out_dir), summary, results)
    return summary


PLOT_LABELS = {'hamming': 'Hamming distance', 'hamming_active': 'Hamming (non-inert)',
               'correction_ratio': 'Ratio of corrected actions', 'iou': 'Plan overlap (IoU)',
               'infeasible_assigned': 'Infeasible actions assigned',
               'accepted_samples': 'Accepted samples'}
METHOD_LABELS = {'cecm': 'CE-CM', 'cecm_div': 'CE-CM-Div', 'optimistic': 'Optimistic',
                 'pessimistic': 'Pessimistic'}


def plot_summaries(summaries: dict[str, dict], out_dir: Path, title: str = '') -> list[Path]:
    """One PNG per metric: mean over runs with a 95% band, one line per method."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    written = []
    for name in METRICS:
        figure, axes = plt.subplots(figsize=(4.2, 3.2), dpi=120)
        for method, summary in summaries.items():
            rows = summary['per_task']
            x = [row['task'] for row in rows]
            mean = [row[name]['mean'] for row in rows]
            low = [row[name]['ci95_low'] for row in rows]
            high = [row[name]['ci95_high'] for row in rows]
            line, = axes.plot(x, mean, marker='o', label=METHOD_LABELS.get(method, method))
            axes.fill_between(x, low, high, alpha=0.2, color=line.get_color())
        axes.set_xlabel('Task')
        axes.set_ylabel(PLOT_LABELS[name])
        axes.set_xticks(x)
        if title:
            axes.set_title(title, fontsize=9)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        path = out_dir / f'{name}.png'
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    if all('theta' in s['per_task'][0] for s in summaries.values()):
        written.append(_plot_capabilities(summaries, out_dir, title, plt))
    return written


def _plot_capabilities(summaries: dict[str, dict], out_dir: Path, title: str, plt) -> Path:
    """One panel per capability: theta over tasks per method, the truth dashed."""
    first = next(iter(summaries.values()))
    names = list(first['per_task'][0]['theta'])
    missing = set(first.get('true_capabilities', 'all').split(','))
    truth = {name: 0.0 if f'{name}=0' in missing else 1.0 for name in names}
    columns = 5
    rows = -(-len(names) // columns)
    figure, grid = plt.subplots(rows, columns, figsize=(2.3 * columns, 1.7 * rows), dpi=110,
                                sharex=True, sharey=True, squeeze=False)
    for index, name in enumerate(names):
        axes = grid[index // columns][index % columns]
        for method, summary in summaries.items():
            per_task = summary['per_task']
            x = [row['task'] for row in per_task]
            mean = [row['theta'][name]['mean'] for row in per_task]
            low = [max(0.0, row['theta'][name]['ci95_low']) for row in per_task]
            high = [min(1.0, row['theta'][name]['ci95_high']) for row in per_task]
            line, = axes.plot(x, mean, marker='.', label=METHOD_LABELS.get(method, method))
            axes.set_xticks(x)
            axes.fill_between(x, low, high, alpha=0.2, color=line.get_color())
        axes.axhline(truth[name], color='black', linestyle='--', linewidth=1)
        axes.set_title(name, fontsize=8)
        axes.set_ylim(-0.05, 1.05)
        axes.grid(alpha=0.3)
    for axes in grid.flat[len(names):]:
        axes.set_visible(False)
    handles, labels = grid[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc='lower center', ncol=len(labels), fontsize=8)
    figure.suptitle(f'{title}: P(capability) per task, truth dashed' if title
                    else 'P(capability) per task, truth dashed', fontsize=9)
    figure.tight_layout(rect=(0, 0.05, 1, 0.97))
    path = out_dir / 'capabilities.png'
    figure.savefig(path)
    plt.close(figure)
    return path
