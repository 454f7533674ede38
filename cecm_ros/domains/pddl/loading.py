"""A user's PDDL domain as the registry loads it: read, then its first tasks planned.

Kept apart from the model (file_domain.py) so that the model never imports its
planner: the check needs both.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from cecm_ros.core.domain import HUMAN, JointPlan, Planner, Task
from cecm_ros.core.errors import CecmError, ConfigError, UnsolvableTaskError

from .file_domain import TASKS_CHECKED, FileDomain
from .model import PddlModel
from .planner import FastDownwardPlanner

# Where the docs say what to do about a partner who does no work in the plans.
IDLE_PARTNER_HELP = 'docs/domains.md, "When the partner does no work" (costs and starts)'


def load_file_domain(path: str | Path) -> FileDomain:
    """The domain of a ``domain.yaml``, once a fully capable team can finish its first
    tasks: a domain whose tasks cannot be done is an error now, not in the middle of an
    experiment. A domain whose partner does nothing in those tasks loads with a warning
    (on standard error, and in ``load_warnings``): nothing could be learned of it."""
    domain = FileDomain(path)
    tasks = domain.problem_tasks or domain.task_generator(0).tasks(TASKS_CHECKED)
    with FastDownwardPlanner(domain, workers=1) as planner:
        plans = [fully_capable_plan(domain, planner, task) for task in tasks]
    domain.load_warnings = [w for w in [idle_partner_warning(plans)] if w]
    for warning in domain.load_warnings:
        print(f'cecm: warning: {domain.path}: {warning}', file=sys.stderr, flush=True)
    return domain


def fully_capable_plan(domain: FileDomain, planner: Planner, task: Task) -> JointPlan:
    """The plan of ``task`` with every capability; a task no team can finish is a
    ConfigError at the file the task comes from, naming the goal atoms out of reach."""
    try:
        return planner.plan(task, domain.catalog.all_capable())
    except UnsolvableTaskError:
        raise ConfigError(f'{domain.task_origin(task)} cannot be reached even by a fully '
                          f'capable team: {out_of_reach(domain, task)}') from None
    except CecmError as error:
        raise ConfigError(f'{domain.task_origin(task)}: {error}') from None


def out_of_reach(domain: PddlModel, task: Task) -> str:
    """What of an unreachable goal no team can reach, in words."""
    atoms = domain.unreachable_atoms(task)
    if atoms:
        return (f'no actions of the two agents, with every capability, make '
                f'{" ".join(atoms)} true from its start')
    return 'each goal atom can be reached on its own, but not all of them together'


def idle_partner_warning(plans: Sequence[JointPlan]) -> str | None:
    """A warning when the partner takes no action in any of ``plans`` (each with every
    capability): the robot would then learn nothing of what the partner can do."""
    if not plans or any(plan.actions_of(HUMAN) for plan in plans):
        return None
    return (f'the partner acts in 0 of {len(plans)} sampled tasks: nothing can be learned; '
            f'{IDLE_PARTNER_HELP}')
