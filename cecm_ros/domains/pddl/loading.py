"""A user's PDDL domain as the registry loads it: read, then its first tasks planned.

Kept apart from the model (file_domain.py) so that the model never imports its
planner: the check needs both.
"""

from __future__ import annotations

from pathlib import Path

from cecm_ros.core.errors import CecmError, ConfigError, UnsolvableTaskError

from .file_domain import TASKS_CHECKED, FileDomain
from .planner import FastDownwardPlanner


def load_file_domain(path: str | Path) -> FileDomain:
    """The domain of a ``domain.yaml``, once a fully capable team can finish its first
    tasks: a domain whose tasks cannot be done is an error now, not in the middle of an
    experiment."""
    domain = FileDomain(path)
    tasks = domain.problem_tasks or domain.task_generator(0).tasks(TASKS_CHECKED)
    with FastDownwardPlanner(domain, workers=1) as planner:
        for task in tasks:
            try:
                planner.plan(task, domain.catalog.all_capable())
            except UnsolvableTaskError:
                raise ConfigError(f'{domain.path}: task {task.task_id} cannot be reached '
                                  'even by a fully capable team') from None
            except CecmError as error:
                raise ConfigError(f'{domain.path}: task {task.task_id}: {error}') from None
    return domain
