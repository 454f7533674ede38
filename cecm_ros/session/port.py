"""What a session needs from the graph it runs in, in core types.

:class:`GraphPort` is the handful of calls the session loop makes: the ROS task manager
implements it over its services, actions and topics; a test implements it in process
on the core. Every call may block (it waits for peers); the errors below are how a
port says why one did not go through, and each asks the loop for something else:
run the task again, count it failed, or end the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cecm_ros.core.domain import JointPlan, Task
from cecm_ros.core.inference import CapabilityReport
from cecm_ros.experiments.experiment import TaskResult


class SessionError(Exception):
    """The session cannot go on; the message says why."""


class TaskFailedError(SessionError):
    """The task failed for a reason of its own (no plan reaches its goal, the world or the
    estimator refused it): running it again would fail again."""


class SessionStoppedError(Exception):
    """The session was asked to stop (its node deactivated, or the process ends)."""


class NodeLostError(Exception):
    """A node the wait depended on was lost or came back meanwhile: the wait was cut
    short, and what it waited for may be asked again once the graph is whole."""


@dataclass(frozen=True)
class Belief:
    """The estimator's belief about the partner, as the session sees it."""

    estimate: np.ndarray
    theta: tuple[float, ...]
    tasks_seen: int
    method: str = ''
    # Per capability, what the evidence decided; empty for methods that track none.
    status: tuple[str, ...] = ()
    # Per capability, the capabilities it is confounded with, comma-separated (or none).
    confounded_with: tuple[str, ...] = ()
    report: tuple[CapabilityReport, ...] = ()   # status and confounders, as the core has them
    lines: tuple[str, ...] = ()                 # the report in words


@dataclass(frozen=True)
class TaskRun:
    """What the executor reports of one run of a task."""

    corrections: int
    robot_decisions: int
    goal_reached: bool
    steps: int
    evidence: object   # what the port needs to update the belief with (its trajectory)


@dataclass(frozen=True)
class BeliefUpdate:
    belief: Belief      # the belief after the update, as the estimator published it
    accepted: int       # samples or particles that explained the task
    message: str


@dataclass(frozen=True)
class Ranking:
    best: int              # the index of the most informative candidate
    information: float     # its expected information gain (bits)


class GraphPort(Protocol):
    """The calls the session loop makes to the graph. ``label`` prefixes what the port
    logs about a task (``[task 2/5] task-0-2``); ``mark`` is what :meth:`graph_mark`
    returned before the run, so that a node lost since then shows."""

    def closing(self) -> bool:
        """The process is ending: a stopped session then writes nothing more."""
        ...

    def applied_tasks(self, session_id: str) -> dict[int, str]:
        """The task ids the estimator has applied of a session, by position."""
        ...

    def estimator_settings(self) -> dict:
        """The estimator's (and partner's) settings, for the summary."""
        ...

    def current_belief(self) -> Belief | None:
        """The latest belief received, without waiting."""
        ...

    def initial_belief(self) -> Belief:
        """The belief a session starts from (waits for one)."""
        ...

    def rank_tasks(self, label: str, candidates: Sequence[Task]) -> Ranking:
        """The most informative candidate; NodeLostError when the estimator was lost."""
        ...

    def graph_mark(self) -> object:
        """What the graph looks like now, for :meth:`disturbed` and the runs."""
        ...

    def disturbed(self, mark: object) -> bool:
        """Whether a node was lost since ``mark`` (waits a grace for the news)."""
        ...

    def wait_graph_active(self, label: str) -> None:
        """Wait until every node a task needs is active again (SessionError if not)."""
        ...

    def settle(self, seconds: float) -> None:
        """Wait ``seconds``, or raise SessionStoppedError as soon as the session is asked
        to stop: a node lost at the instant a whole launch stops is that stop, not an
        interruption to report."""
        ...

    def reset_world(self, label: str, task: Task, attempt: int) -> None:
        """Put the world in the task's start state (TaskFailedError if it refuses)."""
        ...

    def run_task(self, label: str, task: Task, attempt: int, mark: object) -> TaskRun:
        """Run the task on the executor with the partner, until it ends."""
        ...

    def update_belief(self, label: str, task: Task, index: int, session_id: str,
                      run: TaskRun, mark: object, seen: int) -> BeliefUpdate:
        """Update the belief with the run (the estimator keys it on session and index,
        so it never counts one twice); the belief returned has seen at least ``seen``."""
        ...

    def first_plans(self, label: str, task: Task) -> tuple[JointPlan, JointPlan]:
        """The robot's first plan of the task and the partner's (empty when unknown)."""
        ...

    def report_task(self, index: int, count: int, result: TaskResult,
                    belief: Belief) -> None:
        """Publish a finished task's report."""
        ...

    def report_heldout(self, index: int, result: TaskResult) -> None:
        """Publish that report again, now with its held-out metrics."""
        ...
