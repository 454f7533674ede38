"""A session of tasks run piecewise (e.g. by the ROS node graph) instead of by run_once.

The node graph observes what ``run_once`` computes in one process: per task the
robot's first plan, the partner's plan, the corrections and the belief after the
update. These helpers turn those observations into the same ``TaskResult`` rows and
the same summary document as ``cecm experiment`` (one run), through the same
``task_metrics`` and ``summarise`` calls. Also: task lists read from YAML, and the
journal that lets a restarted task manager resume its session.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from cecm_ros.core import metrics
from cecm_ros.core.domain import Domain, JointPlan, Task
from cecm_ros.core.errors import CecmError, ConfigError
from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.core.metrics import HeldoutPool
from cecm_ros.core.partners import PartnerBehaviour, TaskRecord, steps_off_plan
from cecm_ros.experiments.experiment import (
    ExperimentSettings,
    TaskResult,
    add_heldout_metrics,
    summarise,
    task_metrics,
)


def session_task_result(model: Domain, index: int, task: Task, estimate: np.ndarray,
                        truth: np.ndarray, robot_plan: JointPlan, human_plan: JointPlan,
                        corrections: int, robot_decisions: int, goal_reached: bool,
                        accepted: int, message: str, theta: Sequence[float],
                        statuses: Sequence = (),
                        pool: HeldoutPool | None = None) -> TaskResult:
    """The metrics row of task ``index`` (0-based), Hamming after that task's update;
    with a held-out ``pool`` also the held-out agreement and identifiable Hamming."""
    record = TaskRecord(task=task, robot_plan=robot_plan, human_plan=human_plan,
                        trajectory=[], corrections=corrections,
                        robot_decisions=robot_decisions, goal_reached=goal_reached)
    result = task_metrics(model, record, np.asarray(estimate, dtype=bool),
                          np.asarray(theta, dtype=float), np.asarray(truth, dtype=bool),
                          accepted, message, run=0, index=index, statuses=statuses)
    if pool is not None:
        add_heldout_metrics(model, pool, [result])
    return result


def estimate_distance(model: Domain, estimate: np.ndarray, truth: np.ndarray
                      ) -> tuple[float, float]:
    """(Hamming, Hamming over the capabilities that are not inert in this household)."""
    return (metrics.hamming(estimate, truth),
            metrics.hamming(estimate, truth, ~model.inert_mask))


def session_summary(model: Domain, partner: str, method: str, seed: int,
                    estimator: EstimatorSettings, results: Sequence[TaskResult],
                    wall_s: float, extra: dict | None = None,
                    forgo_probability: float = 0.0, task_choice: str = 'given',
                    candidates: int = 1, heldout: int = 0,
                    partner_behaviour: str | None = None) -> dict:
    """The ``cecm experiment`` summary document of one run over ``results``."""
    if not results:
        raise ConfigError('a session summary needs at least one finished task')
    settings = ExperimentSettings(partner=partner, method=method, runs=1,
                                  tasks=len(results), seed=seed, jobs=1, estimator=estimator,
                                  forgo_probability=forgo_probability,
                                  partner_behaviour=partner_behaviour or None,
                                  task_choice=task_choice, candidates=candidates,
                                  heldout=heldout)
    return summarise(settings, list(results), wall_s, model, extra)


def load_tasks(model: Domain, path: str | Path) -> list[Task]:
    """Tasks from YAML: ``tasks: [{id: ..., initial: [atoms], goal: [atoms]}, ...]``.

    Atoms may be written ``(item-at plate kitchen)`` or ``item-at plate kitchen``; a
    missing id becomes ``<file stem>-<n>``. Every task is validated against the model.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f'cannot read tasks file {path}: {error}') from error
    entries = data.get('tasks') if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f'{path}: expected a non-empty list under "tasks"')
    tasks = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or 'initial' not in entry or 'goal' not in entry:
            raise ConfigError(f'{path}: task {number} needs "initial" and "goal" lists')
        task_id = str(entry.get('id') or f'{path.stem}-{number}')
        try:
            task = model.task_from_dict({**entry, 'id': task_id}, task_id)
        except (CecmError, TypeError) as error:
            raise ConfigError(f'{path}: task {task_id}: {error}') from error
        tasks.append(task)
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ConfigError(f'{path}: task ids must be unique, got {ids}')
    return tasks


def who_follows_no_plan(behaviour: str) -> str:
    """Who plays a partner of ``behaviour`` (a partner node's parameter) when it follows
    no plan of the robot's model: 'the person' (play mode), 'the <behaviour> partner'
    (another decision rule: greedy, a plug-in), '' for a partner that plans like the
    robot or a behaviour that cannot be read."""
    text = behaviour.strip()
    if text == 'person':
        return 'the person'
    try:
        if text and not PartnerBehaviour.parse(text).plan_based:
            return f'the {text} partner'
    except CecmError:
        pass
    return ''


def partner_plan_note(label: str, plan: JointPlan, executed: list[tuple[str, str]],
                      who: str) -> tuple[bool, str]:
    """What to say when a task went otherwise than the simulated partner's plan: CE-CM
    assumes the team followed it (the partner enforces it), so the task's evidence may
    mislead the belief, unless ``who`` (:func:`who_follows_no_plan`) never meant to
    follow it. (whether it is a warning, the line); (False, '') when the plan was kept."""
    off = steps_off_plan(plan, executed)
    if not off:
        return False, ''
    total = max(len(executed), len(plan.steps))
    if who:
        return False, (f'{label}: {who} played {off} of {total} steps otherwise than the '
                       "simulated partner's reference plan (it need not follow it)")
    return True, (f"{label}: {off} of {total} steps were not the partner's plan: nobody "
                  'enforced it (answer for a simulated partner). CE-CM assumes they were, '
                  "so this task's evidence may mislead the belief")


class SessionJournal:
    """What a session has done, written down as it happens, so that a restarted task
    manager resumes it: which task each position chose, which finished (and their
    metrics), which were interrupted or failed, and whether the session ended.

    One JSON object per line, appended and flushed to disk before the next step; a torn
    last line (a crash mid-write) is ignored. Without a path it is kept in memory.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self.events: list[dict] = []
        self._lock = threading.Lock()   # metrics are journaled from a thread of their own
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue   # a line cut short by a crash
                if isinstance(event, dict) and 'event' in event:
                    self.events.append(event)

    def append(self, event: str, **fields) -> None:
        record = {'event': event, 'time': time.time(), **fields}
        with self._lock:
            self.events.append(record)
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, 'a') as stream:
                stream.write(json.dumps(record) + '\n')
                stream.flush()
                os.fsync(stream.fileno())

    def _last(self, event: str, index: int) -> dict | None:
        with self._lock:
            events = list(self.events)
        found = [e for e in events if e['event'] == event and e.get('index') == index]
        return found[-1] if found else None

    def chosen(self, index: int) -> str | None:
        """The task id position ``index`` chose (it was started), or None."""
        started = self._last('started', index)
        return started['task_id'] if started else None

    def result(self, index: int) -> TaskResult | None:
        """The finished task's metrics row (with its held-out metrics once they were
        journaled, which happens after the task), or None."""
        done = self._last('done', index)
        if not done:
            return None
        result = TaskResult(**done['result'])
        metrics = self._last('metrics', index)
        if metrics and metrics['time'] >= done['time']:
            result.heldout_agreement = float(metrics['heldout_agreement'])
            result.hamming_identifiable = float(metrics['hamming_identifiable'])
        return result

    def failure(self, index: int) -> dict | None:
        """The 'failed' record of position ``index`` (it ran and failed), or None."""
        return self._last('failed', index)

    def started_unfinished(self, index: int) -> bool:
        return self.chosen(index) is not None and self.result(index) is None \
            and self._last('failed', index) is None

    def records(self, event: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e['event'] == event]

    @property
    def finished(self) -> bool:
        with self._lock:
            return any(e['event'] == 'finished' for e in self.events)
