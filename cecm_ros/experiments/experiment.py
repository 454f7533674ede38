"""The estimation-planning loop of the paper, repeated over seeded runs.

Each run draws a sequence of tasks. For every task the robot plans under its current
estimate, the simulated partner executes with corrections, and the observed trajectory
updates the estimate. Per task we record what happened (corrections, plan overlap,
infeasible assignments, all under the estimate the robot planned with) and the
estimate's Hamming distance after the update.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from cecm_ros.core import metrics
from cecm_ros.core.domain import Domain, Planner
from cecm_ros.core.errors import CecmError, ConfigError, PlannerTimeoutError
from cecm_ros.core.estimator import EstimatorSettings, UpdateReport, make_estimator
from cecm_ros.core.evidence import STATUS_LETTERS, confounded_text, evidence_entries
from cecm_ros.core.hypotheses import PLAN_SET_DEFAULTS, evaluator_for
from cecm_ros.core.likelihood import seeded_planners
from cecm_ros.core.metrics import HeldoutPool
from cecm_ros.core.partners import (
    PARTNER_SEARCHES,
    PartnerBehaviour,
    ReplanRule,
    RobotTeammate,
    SimulatedPartner,
    TaskRecord,
    resolve_partner_behaviour,
    run_shared_task,
)
from cecm_ros.core.task_choice import choose_task
from cecm_ros.core.tasks import TaskSequence, heldout_seed
from cecm_ros.core.world_conditions import WORLD_SETTINGS, WorldConditions
from cecm_ros.domains import baseline_planner_for, planner_for
from cecm_ros.experiments.run_files import (
    failure_record,
    keep,
    open_folder,
    read_run,
    run_record,
    write_atomic,
)

METRICS = ('hamming', 'hamming_active', 'hamming_identifiable', 'heldout_agreement',
           'correction_ratio', 'iou', 'infeasible_assigned', 'accepted_samples', 'decided',
           'wrong_known', 'heldout_feasible', 'partner_deviation', 'partner_changed')
# 'qlearning': the optimistic baseline as a domain's own learned policy (Overcooked's
# Q-policy, Domain.baseline_planner); 'optimistic' plans with the domain's planner and a
# fully capable partner, the paper's equivalent of a converged Q-policy (appendix B.3).
METHODS = ('cecm', 'cecm_div', 'optimistic', 'pessimistic', 'qlearning')
TASK_CHOICES = ('given', 'informative')


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
    # 'own' (the default; 'independent' is its older name): the simulated partner searches
    # with a seed of its own per task, where the planner has seeds (equally good plans
    # need not be the predicted one); 'shared': with the robot's own search, an oracle
    # (the true vector then reproduces its plans exactly), labelled so in summaries.
    partner_search: str = 'own'
    # How the simulated partner departs from the optimal one (PartnerBehaviour text,
    # docs/partners.md); None: what forgo_probability and partner_search say, else the
    # domain's default_partner_behaviour.
    partner_behaviour: str | None = None
    task_choice: str = 'given'               # or 'informative': the most informative of
    candidates: int = 5                      # this many candidate tasks
    heldout: int = 40                        # size of the held-out pool for the metrics
    # CE-CM-Div: delta, the share of states a plan must differ in from every plan kept
    # before it (appendix C.3); None: the paper's 0.35 (PLAN_SET_DEFAULTS).
    set_diversity: float | None = None
    # The world a robot meets (core/world_conditions.py): perception noise and failing
    # skills, each off (0) by default.
    perception_missed: float = 0.0
    perception_spurious: float = 0.0
    skill_failure: float = 0.0
    partner_pace_low: float = 0.0      # both 0: the partner in lockstep with the robot
    partner_pace_high: float = 0.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f'unknown method {self.method!r}; methods: {", ".join(METHODS)}')
        if self.runs < 1 or self.tasks < 1:
            raise ConfigError('runs and tasks must be at least 1')
        if self.jobs < 1:
            raise ConfigError(f'jobs must be at least 1, got {self.jobs}')
        if self.partner_search not in PARTNER_SEARCHES:
            raise ConfigError(f'partner_search must be one of {", ".join(PARTNER_SEARCHES)}, '
                              f'got {self.partner_search!r}')
        if not 0.0 <= self.forgo_probability <= 1.0:
            raise ConfigError(f'forgo_probability must lie in [0, 1], got '
                              f'{self.forgo_probability}')
        resolve_partner_behaviour(self.partner_behaviour, self.forgo_probability,
                                  self.partner_search)
        if (self.switch_partner is None) != (self.switch_after is None):
            raise ConfigError('switch_partner and switch_after go together')
        if self.task_choice not in TASK_CHOICES:
            raise ConfigError(f'task_choice must be one of {", ".join(TASK_CHOICES)}, got '
                              f'{self.task_choice!r}')
        if self.candidates < 1:
            raise ConfigError(f'candidates must be at least 1, got {self.candidates}')
        if self.heldout < 0:
            raise ConfigError(f'heldout must be at least 0, got {self.heldout}')
        if self.set_diversity is not None and not 0.0 <= self.set_diversity <= 1.0:
            raise ConfigError(f'set_diversity must lie in [0, 1], got {self.set_diversity}')
        _ = self.world   # checks the world's settings

    @property
    def world(self) -> WorldConditions:
        return WorldConditions(**{name: getattr(self, name) for name in WORLD_SETTINGS})

    def identity(self, unset_behaviour_kept: bool = False) -> dict[str, Any]:
        """These settings as a run's identity: all but the number of runs and of jobs
        (which change no run), and without the settings added later at their off value,
        so that runs made before those settings existed are still found (a sweep's cells
        also leave out an unset partner behaviour and set diversity; an experiment's
        folder has always named them: ``unset_behaviour_kept``)."""
        described = asdict(self)
        del described['runs'], described['jobs']
        for later in ('partner_behaviour', 'set_diversity'):
            if described[later] is None and not unset_behaviour_kept:
                del described[later]
        for later in WORLD_SETTINGS:
            if not described[later]:
                del described[later]
        if not described['estimator'].get('misperception'):
            described['estimator'].pop('misperception', None)
        return described

    @property
    def heldout_seed(self) -> int:
        return heldout_seed(self.seed)

    def behaviour(self, model: Domain) -> PartnerBehaviour:
        """The simulated partner's behaviour in ``model``'s experiments."""
        return resolve_partner_behaviour(self.partner_behaviour, self.forgo_probability,
                                         self.partner_search, model.default_partner_behaviour)


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
    status: str = ''     # per capability, what the evidence decided (STATUS_LETTERS)
    confounded: str = ''  # each undecided capability's confounders (evidence.py)
    decided: int = 0     # capabilities known present or absent
    wrong_known: int = 0  # capabilities reported as known whose value is wrong
    candidates: int = 1  # tasks the task was chosen from
    information: float = 0.0   # its expected information gain (bits; 0 when given)
    heldout_agreement: float = float('nan')      # filled in by HeldoutPool
    hamming_identifiable: float = float('nan')   # filled in by HeldoutPool
    # Of the partner actions in open-loop plans under the estimate on the run's held-out
    # tasks (a domain with few tasks: those the run does not learn on), the feasible share.
    heldout_feasible: float = float('nan')
    # Of the task's joint steps, the share where the partner did not take its plan's step
    # (a per-step partner behaviour: docs/partners.md).
    partner_deviation: float = 0.0
    # The update took the partner for changed and set the earlier tasks aside.
    partner_changed: bool = False
    # The world's imperfections in this task (world conditions): states perception
    # reported other than they were, and robot actions whose skill failed.
    misperceived_states: int = 0
    robot_failures: int = 0


def task_metrics(model: Domain, record: TaskRecord, estimate: np.ndarray,
                 theta: np.ndarray, truth: np.ndarray, accepted: int, message: str, run: int,
                 index: int, statuses: Sequence[Any] = ()) -> TaskResult:
    """The paper's metrics for one task (Hamming after the update on that task), and
    what the evidence decided (``statuses``: one per capability, or none; status names
    or the belief's report entries, which also say what is confounded)."""
    reports = list(statuses)
    statuses = [getattr(entry, 'status', entry) for entry in reports]
    confounders = [getattr(entry, 'confounded_with', ()) for entry in reports]
    active = ~model.inert_mask
    bits = ''.join('1' if b else '0' for b in estimate)
    known = [s in ('known_present', 'known_absent') for s in statuses]
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
        update_message=message,
        status=''.join(STATUS_LETTERS.get(s, '?') for s in statuses),
        confounded=confounded_text(model.catalog.names, confounders),
        decided=sum(known),
        wrong_known=sum(1 for k, e, t in zip(known, estimate, truth) if k and e != t),
        partner_deviation=record.partner_deviations / max(1, len(record.steps)),
        misperceived_states=record.misperceived, robot_failures=record.robot_failures)


def run_seed(seed: int, run: int) -> int:
    """The seed of one run of an experiment with base ``seed``: its tasks, estimator and
    partner draw from it, so runs of one base seed see the same tasks in every method."""
    return seed * 100_003 + run


def split_tasks(model: Domain, seed: int, count: int) -> tuple[list, list]:
    """A domain with few tasks (``task_universe``): the run's ``count`` learning tasks and
    the rest, held out, from one seeded order; ([], []) for an open-ended domain."""
    universe = model.task_universe()
    if not universe or count > len(universe):
        return [], []
    order = model.task_generator(seed).tasks(len(universe))
    return order[:count], order[count:]


def run_once(model: Domain, planner: Planner, settings: ExperimentSettings,
             run: int, report: Callable[[str], None] | None = None,
             robot_planner: Planner | None = None,
             timings: list[dict] | None = None,
             plan_ahead: bool = False) -> list[TaskResult]:
    """One run: a seeded task sequence with one estimator learning along it.

    With informative task choice each task is the most informative of ``candidates``
    (see :class:`~cecm_ros.core.tasks.TaskSequence`); ``given`` runs exactly the tasks
    the seeded generator draws. In a domain with few tasks the run learns on the first
    ``tasks`` of a seeded order (informative choice picks the order among them) and
    the rest are held out. ``robot_planner`` plans for the robot when it is not
    ``planner`` (a domain's own optimistic baseline). ``timings``, when given, gets one
    entry per task: the seconds its choice, its execution and its update took.
    ``plan_ahead`` plans ahead before each update as the estimator node does while the
    team works (with each prefix of the task's states, as they would come); its seconds
    and plans are timed apart (``ahead_s``), and the update's belief is the same.
    """
    seed = run_seed(settings.seed, run)
    informative = settings.task_choice == 'informative'
    learning, heldout = split_tasks(model, seed, settings.tasks)
    if learning:
        sequence = TaskSequence(model, seed, tasks=learning,
                                candidates=settings.candidates if informative else 1)
    else:
        sequence = TaskSequence(model, seed, count=settings.tasks,
                                candidates=settings.candidates if informative else 1)
    robot_planner = robot_planner or planner
    behaviour = settings.behaviour(model)
    simulated = SimulatedPartner(planner, model.catalog.resolve(settings.partner), behaviour,
                                 seed=seed, search=settings.partner_search)
    if report and run == 0:
        report(partner_note(model, planner, simulated))
    evaluator = evaluator_for(settings.method, planner, settings.set_diversity)
    estimator = make_estimator(settings.method, model, evaluator, settings.estimator,
                               seed=seed)
    try:
        results = []
        for index in range(settings.tasks):
            partner = settings.partner
            if settings.switch_partner is not None and settings.switch_after is not None \
                    and index >= settings.switch_after:
                partner = settings.switch_partner
            truth = model.catalog.resolve(partner)
            started, calls = time.perf_counter(), planner.calls
            candidates = sequence.offer()
            choice = choose_task(candidates, *estimator.hypotheses(), evaluator,
                                 settings.estimator.epsilon)
            task = sequence.take(choice.index)
            if choice.skipped and report is not None:
                report(f'[run {run + 1}/{settings.runs} task {index + 1}/{settings.tasks}] '
                       f'{len(choice.skipped)} of '
                       f'{len(candidates)} candidates left out (a search timed out)')
            chosen, chosen_calls = time.perf_counter(), planner.calls
            information = choice.information[choice.index] if choice.information else 0.0
            human = simulated.for_task(task.task_id, truth)
            # A partner that answers only when it corrects leaves the robot to follow the
            # world after a step it did not answer (as in the node graph).
            robot = RobotTeammate(robot_planner, estimator.estimate,
                                  ReplanRule(follow_world=True))
            record = run_shared_task(model, task, robot, human, settings.world, seed)
            ahead_began, ahead_calls = time.perf_counter(), planner.calls
            evidence = record.evidence(model)
            if plan_ahead:
                for count in range(1, len(evidence) + 1):
                    estimator.plan_ahead(task, evidence[:count])
            executed, executed_calls = time.perf_counter(), planner.calls
            try:
                update = estimator.update(task, evidence)
            except PlannerTimeoutError as error:
                # An update that cannot finish leaves the belief as it was (the estimator
                # never keeps a partial one); the run goes on with the next task.
                update = UpdateReport(task.task_id, 0, 0, False,
                                      f'update not finished ({error}); the belief is as '
                                      'before this task')
                if report is not None:
                    report(f'[run {run + 1}/{settings.runs} task {index + 1}/'
                           f'{settings.tasks}] {update.message}')
            if timings is not None:
                now = time.perf_counter()
                timings.append({'task': task.task_id, 'choose_s': chosen - started,
                                'execute_s': ahead_began - chosen,
                                'update_s': now - executed,
                                'total_s': now - started,
                                'choose_plans': chosen_calls - calls,
                                'ahead_s': executed - ahead_began,
                                'ahead_plans': executed_calls - ahead_calls,
                                'update_plans': planner.calls - executed_calls})
            result = task_metrics(model, record, estimator.estimate, estimator.belief.theta, truth,
                                  update.samples_accepted, update.message, run, index,
                                  estimator.belief.report)
            result.candidates = len(candidates)
            result.information = round(information, 4)
            result.partner_changed = update.changed
            if heldout:
                try:
                    result.heldout_feasible = metrics.open_loop_feasible(
                        model, robot_planner, heldout, estimator.estimate, truth)
                except PlannerTimeoutError as error:
                    # A metric, not the run: left empty (nan) for this task.
                    if report is not None:
                        report(f'[run {run + 1}/{settings.runs} task {index + 1}/'
                               f'{settings.tasks}] held-out feasibility not measured: '
                               f'{error}')
            results.append(result)
            if report:
                report(f'[run {run + 1}/{settings.runs} task {index + 1}/{settings.tasks}] '
                       f'{settings.method}: hamming={result.hamming:.2f} corrections='
                       f'{result.corrections}/{result.robot_decisions} iou={result.iou:.2f} '
                       f'accepted={result.accepted_samples} decided={result.decided} '
                       f'({time.perf_counter() - started:.1f} s)')
        return results
    finally:
        simulated.close()


def partner_note(model: Domain, planner: Planner, partner: SimulatedPartner) -> str:
    """One line on who the simulated partner is: its decision rule and random stream."""
    behaviour = partner.behaviour
    kind = 'in-model (the robot\'s planner)' if behaviour.in_model else \
        f'out of model ({behaviour.family})'
    if partner.oracle:
        stream = 'ORACLE: it searches with the robot\'s own stream (partner_search shared)'
    elif planner.search_seed is None and behaviour.kind != 'satisficing':
        stream = (f'{model.name}\'s planner has no seed (deterministic), so where it plans '
                  'it plans as the robot\'s planner would')
    else:
        stream = 'its own search seeds (from the run\'s seed and the task)'
    return f'partner {behaviour}: {kind}; {stream}'


def baseline_for(model: Domain, method: str) -> Planner | None:
    """The robot's own planner for a method that plans with a domain's learned baseline
    policy; None for every other method."""
    if method != 'qlearning':
        return None
    baseline = baseline_planner_for(model)
    if baseline is None:
        raise ConfigError(f'the domain {model.name!r} has no learned baseline policy (method '
                          "qlearning); 'optimistic' plans with a fully capable partner")
    return baseline


def heldout_pool(model: Domain, planner: Planner, settings: ExperimentSettings) -> HeldoutPool:
    """The held-out pool of an experiment; identifiability also asks the searches of as
    many other seeds as the likelihood does (none for a planner without a seed)."""
    seeds = settings.estimator.for_domain(model).likelihood_seeds or 1
    twins = [evaluator_for('cecm', twin) for twin in seeded_planners(planner, seeds)[1:]]
    return HeldoutPool(model, evaluator_for('cecm', planner), settings.heldout_seed,
                       settings.heldout, twins=twins)


def add_heldout_metrics(model: Domain, pool: HeldoutPool, results: list[TaskResult]
                        ) -> dict[str, list[str]]:
    """Fill in each row's held-out agreement and identifiable Hamming distance; returns
    the identifiable capabilities of every true vector that occurs."""
    size = len(model.catalog)
    estimates = np.array([[ch == '1' for ch in r.estimate] for r in results], dtype=bool) \
        .reshape(len(results), size)
    identifiable = {}
    for truth_bits in sorted({r.truth for r in results}):
        truth = np.array([ch == '1' for ch in truth_bits], dtype=bool)
        mask = pool.identifiable(truth)
        assert mask is not None   # with plan=True every plan is made
        identifiable[model.catalog.format_vector(truth)] = \
            [model.catalog.names[i] for i in np.flatnonzero(mask)]
        rows = [i for i, r in enumerate(results) if r.truth == truth_bits]
        agreement = pool.agreement(estimates[rows], truth)
        for row, value in zip(rows, agreement):
            results[row].heldout_agreement = float(value)
            results[row].hamming_identifiable = metrics.hamming(estimates[row], truth, mask) \
                if mask.any() else 0.0
    return identifiable


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
              model: Domain, extra: dict | None = None) -> dict:
    per_task = []
    # (A session's failed tasks have no row: only positions with results are summed up.)
    for index in sorted({r.task_index for r in results}):
        rows = [r for r in results if r.task_index == index]
        entry: dict[str, Any] = {'task': index + 1, 'runs': len(rows)}
        for name in METRICS:
            values = [getattr(r, name) for r in rows]
            measured = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
            if len(measured) == len(values):
                entry[name] = mean_ci95(values)
            elif measured:
                # Some runs could not measure it (a held-out search that timed out): the
                # mean of those that did, and how many.
                entry[name] = {**mean_ci95(measured), 'measured_runs': len(measured)}
        # The paper's appendix B.1: how each capability's estimate evolves over tasks.
        thetas = np.array([[float(v) for v in r.theta.split()] for r in rows])
        entry['theta'] = {name: mean_ci95(thetas[:, i])
                          for i, name in enumerate(model.catalog.names)}
        per_task.append(entry)
    settings_dict = asdict(settings)
    if settings.method == 'cecm_div':
        settings_dict['plan_sets'] = dict(PLAN_SET_DEFAULTS)
        if settings.set_diversity is not None:
            settings_dict['plan_sets']['diversity'] = settings.set_diversity
    return {
        'format': 'cecm_ros/experiment_summary/1',
        'settings': settings_dict,
        'domain': model.describe(),
        'capabilities': list(model.catalog.names),
        'inert_capabilities': model.inert_capabilities,
        'true_capabilities': model.catalog.format_vector(model.catalog.resolve(settings.partner)),
        'wall_time_s': round(wall_s, 3),
        'per_task': per_task,
        # Per run and task, every capability's status (evidence.py).
        'evidence': evidence_entries(model.catalog.names, results),
        **(extra or {}),
    }


def write_outputs(out_dir: Path, summary: dict, results: list[TaskResult]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / 'summary.json', json.dumps(summary, indent=1))
    with open(out_dir / 'runs.csv', 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=[f.name for f in fields(TaskResult)])
        writer.writeheader()
        for result in results:
            writer.writerow(asdict(result))


def experiment_key(settings: ExperimentSettings, model: Domain) -> str:
    """The name of the folder an experiment keeps its runs in: a hash of its settings
    (all but the number of runs and of jobs, which change no run) and of the domain (what
    it plans with and the tasks it draws), so that a run is reused only by the same
    experiment."""
    described = settings.identity(unset_behaviour_kept=True)
    scope = getattr(model, 'plan_scope', None)
    first = model.task_generator(run_seed(settings.seed, 0)).tasks(settings.tasks)
    identity = {'format': 'cecm_ros/experiment/1', 'settings': described,
                'domain': model.describe(), 'scope': scope() if callable(scope) else None,
                'capabilities': list(model.catalog.names),
                'partner': model.catalog.format_vector(model.catalog.resolve(settings.partner)),
                'tasks': [(sorted(t.initial), sorted(t.goal)) for t in first]}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    return f'{settings.method}-{digest.hexdigest()[:10]}'


def run_experiment(settings: ExperimentSettings, model: Domain,
                   out_dir: str | Path | None = None, quiet: bool = False,
                   planner: Planner | None = None) -> dict:
    """Run ``settings.runs`` runs (``jobs`` at a time) and write the outputs to ``out_dir``.

    Each run is kept in ``out_dir/runs/<experiment_key>/`` the moment it finishes
    (run_files.py), with its held-out metrics; runs kept there by an earlier call with
    the same settings are not run again, and a run that fails is recorded with its
    error (``failed_runs`` in the summary) while the others go on. The summary is of
    the runs there are."""
    for spec in filter(None, (settings.partner, settings.switch_partner)):
        model.catalog.resolve(spec)  # fail early on a bad partner
    settings.behaviour(model).check()   # and on a plug-in that does not load
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            print(line, file=sys.stderr, flush=True)

    def report(line: str) -> None:
        if not quiet:
            say(line)

    key = experiment_key(settings, model) if out_dir is not None else ''
    folder = Path(out_dir) / 'runs' / key if out_dir is not None else None
    kept: dict[int, dict] = {}
    if folder is not None:
        open_folder(folder)
        for run in range(settings.runs):
            record = read_run(folder, key, run, settings.tasks)
            if record is not None:
                kept[run] = record
        if kept:
            say(f'{len(kept)} of {settings.runs} runs were finished before and are kept '
                f'({folder}); running the other {settings.runs - len(kept)}')
    failed: dict[int, dict] = {}
    own_planner = planner is None
    planner = planner or planner_for(model, workers=settings.jobs)
    baseline = baseline_for(model, settings.method)
    calls_before, hits_before = planner.calls, planner.cache_hits
    started = time.perf_counter()
    pool = None
    if settings.heldout:
        report(f'held-out metrics: {settings.heldout} tasks (seed {settings.heldout_seed})')
        pool = heldout_pool(model, planner, settings)

    def one_run(run: int) -> tuple[list[TaskResult], float]:
        began = time.perf_counter()
        return run_once(model, planner, settings, run, report, baseline), \
            time.perf_counter() - began

    def finished(run: int, outcome: Callable[[], tuple[list[TaskResult], float]]) -> None:
        """Keep a run that finished, with its held-out metrics, or its error."""
        try:
            rows, wall = outcome()
            identifiable = add_heldout_metrics(model, pool, rows) if pool is not None else {}
            record = run_record(key, run, rows, identifiable, wall)
        except Exception as error:   # noqa: BLE001 - recorded with the run; the others go on
            record = failure_record(key, run, error)
            failed[run] = record
            say(f'[run {run + 1}/{settings.runs}] failed: {record["error"]}')
        else:
            kept[run] = record
        if folder is not None:
            keep(folder, record)

    todo = [run for run in range(settings.runs) if run not in kept]
    try:
        if settings.jobs > 1 and len(todo) > 1:
            threads = ThreadPoolExecutor(settings.jobs)
            try:
                futures = {threads.submit(one_run, run): run for run in todo}
                for future in as_completed(futures):
                    finished(futures[future], future.result)
            except BaseException:
                threads.shutdown(wait=False, cancel_futures=True)
                raise
            threads.shutdown()
        else:
            for run in todo:
                finished(run, functools.partial(one_run, run))
    except KeyboardInterrupt:
        if folder is not None:
            say(f'interrupted: {len(kept)} of {settings.runs} runs are kept in {folder}; '
                'the same command goes on with the rest')
        raise
    finally:
        if own_planner:
            planner.close()
        if baseline is not None:
            baseline.close()
    wall = time.perf_counter() - started
    if not kept:
        first = min(failed)
        raise CecmError(f'every run failed; run {first + 1}: {failed[first]["error"]}' +
                        (f' (traces in {folder})' if folder is not None else ''))
    results = [TaskResult(**row) for run in sorted(kept) for row in kept[run]['rows']]
    identifiable: dict[str, list[str]] = {}
    for run in sorted(kept):
        identifiable.update(kept[run]['identifiable_capabilities'])
    behaviour = settings.behaviour(model)
    extra: dict[str, Any] = {'partner_behaviour': str(behaviour),
                             'partner_family': behaviour.family,
                             'partner_in_model': behaviour.in_model,
                             'partner_search': 'shared (oracle)'
                             if settings.partner_search == 'shared' else 'own',
                             'planner_calls': planner.calls - calls_before,
                             'planner_cache_hits': planner.cache_hits - hits_before,
                             'estimator_variant': settings.estimator.variant}
    if settings.estimator.inference == 'posterior':
        extra['likelihood'] = settings.estimator.for_domain(model).likelihood
    if settings.heldout:
        extra['identifiable_capabilities'] = dict(sorted(identifiable.items()))
        extra['heldout_seed'] = settings.heldout_seed
    if folder is not None:
        extra['runs_folder'] = str(folder)
    if len(todo) < settings.runs:
        extra['runs_from_before'] = settings.runs - len(todo)
    if failed:
        extra['failed_runs'] = [{'run': run + 1, 'error': failed[run]['error']}
                                for run in sorted(failed)]
    summary = summarise(settings, results, wall, model, extra)
    if out_dir is not None:
        write_outputs(Path(out_dir), summary, results)
    return summary


PLOT_LABELS = {'hamming': 'Hamming distance', 'hamming_active': 'Hamming (non-inert)',
               'hamming_identifiable': 'Hamming (identifiable)',
               'heldout_agreement': 'Held-out agreement', 'decided': 'Capabilities decided',
               'wrong_known': 'Wrong capabilities reported known',
               'correction_ratio': 'Ratio of corrected actions', 'iou': 'Plan overlap (IoU)',
               'infeasible_assigned': 'Infeasible actions assigned',
               'accepted_samples': 'Accepted samples',
               'heldout_feasible': 'Feasible partner actions (held-out, open loop)',
               'partner_deviation': "Partner steps off its plan",
               'partner_changed': 'Updates that found the partner changed'}
METHOD_LABELS = {'cecm': 'CE-CM', 'cecm_div': 'CE-CM-Div', 'optimistic': 'Optimistic',
                 'qlearning': 'Q-learning (optimistic)',
                 'pessimistic': 'Pessimistic'}


def plot_summaries(summaries: dict[str, dict], out_dir: Path, title: str = '') -> list[Path]:
    """One PNG per metric: mean over runs with a 95% band, one line per method."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    written = []
    for name in METRICS:
        figure, axes = plt.subplots(figsize=(4.2, 3.2), dpi=120)
        plotted = False
        for method, summary in summaries.items():
            rows = [row for row in summary['per_task'] if name in row]
            if not rows:
                continue
            plotted = True
            x = [row['task'] for row in rows]
            mean = [row[name]['mean'] for row in rows]
            low = [row[name]['ci95_low'] for row in rows]
            high = [row[name]['ci95_high'] for row in rows]
            line, = axes.plot(x, mean, marker='o', label=METHOD_LABELS.get(method, method))
            axes.fill_between(x, low, high, alpha=0.2, color=line.get_color())
            axes.set_xticks(x)
        if not plotted:
            plt.close(figure)
            continue
        axes.set_xlabel('Task')
        axes.set_ylabel(PLOT_LABELS[name])
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
