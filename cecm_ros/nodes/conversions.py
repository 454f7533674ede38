"""Messages <-> core values: the only place that knows both.

Every ``*_from_msg`` function validates what it reads against the node's domain and
raises :class:`MessageError` with a message that names the offending field and value; a
node logs that message as a warning and keeps running. Atoms and actions travel as the
domain's canonical texts, e.g. ``(item-at plate kitchen)``; a state as the domain's
facts (``true_propositions``) or numbers (``state_features``). Messages name their
domain; one of another domain is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from lifecycle_msgs.msg import State

from cecm_ros.core.capabilities import CapabilityCatalog
from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, Domain, JointPlan, JointStep, Task
from cecm_ros.core.errors import CecmError
from cecm_ros.core.estimator import CapabilityBelief
from cecm_ros.core.inference import STATUSES, CapabilityReport, describe_report
from cecm_ros.core.simulator import predicted_trajectory
from cecm_ros.core.world_conditions import evidence_of
from cecm_ros.msg import CapabilityBelief as CapabilityBeliefMsg
from cecm_ros.msg import Correction, RobotIntent, StepResult, TaskOutcome, TaskRequest, TeamState
from cecm_ros.msg import JointPlan as JointPlanMsg
from cecm_ros.msg import JointStep as JointStepMsg
from cecm_ros.nodes.skill_kinds import WAIT, skills_of
from cecm_ros.session.graph import GraphView, NodeStatus

NOOP_SPELLINGS = ('', NOOP, WAIT)    # accepted for "do nothing this step" in what the
                                     # graph sends (an answer must name it: answer_action)

# Size limits. Nothing legitimate comes near them; a message beyond them can only be
# wrong, and refusing it before reading it keeps a node from spending time and memory
# on it. A list of propositions is also limited by the domain (it cannot hold more
# distinct ones than the domain has), a capability vector by the catalogue.
MAX_STEPS = 10_000        # joint steps of one task: plans, trajectories (executor max_steps)
MAX_CANDIDATES = 100      # candidate tasks of one RankTasks request
SHOWN_CHARS = 120         # of a value quoted in an error message (a sender may send 1 MB)
TASKS_KEPT = 3            # tasks whose team states a TeamStates record keeps


class MessageError(CecmError, ValueError):
    """A message that does not fit the model (unknown name, wrong length, wrong task)."""


def shown(text: str) -> str:
    """``text`` quoted for an error message or a log line, cut at SHOWN_CHARS."""
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f'{text[:SHOWN_CHARS]!r}... ({len(text)} characters)'


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as it is (a name, a reason), cut at ``limit`` characters."""
    if len(text) <= limit:
        return text
    return f'{text[:limit]}... ({len(text)} characters)'


def check_step(step: int, what: str) -> None:
    """A step number a task can have: at most MAX_STEPS (a forged 4294967295 is none)."""
    if step > MAX_STEPS:
        raise MessageError(f'{what}: step {step} is beyond the last a task can have '
                           f'({MAX_STEPS})')


# ------------------------------------------------------------------------ actions
def canonical_action(model: Domain, text: str, agent: str | None = None,
                     what: str = 'action') -> str:
    """The canonical text of a ground action of ``agent``, or ``noop``."""
    if text.strip() in NOOP_SPELLINGS:
        return NOOP
    try:
        name = model.canonical_action(text)
        owner = model.action_agent(name)
    except CecmError as error:   # (which quotes the text again)
        raise MessageError(f'{what} {shown(text)}: {clipped(str(error), 4 * SHOWN_CHARS)}') \
            from None
    if agent is not None and owner != agent:
        raise MessageError(f'{what} {shown(text)} is an action of the {owner}, '
                           f'not of the {agent}')
    return name


def answer_action(model: Domain, text: str, what: str = 'corrected_action') -> str:
    """The robot action a partner's answer names, canonical: the one check of an answer,
    wherever it is typed or sent (the executor, the web panel, the console). Unlike a
    plan's or a team state's empty action, an empty answer says nothing (wait is
    ``noop``), and a NUL would cut the text where ROS carries it."""
    if '\x00' in text:
        raise MessageError(f'{what} {shown(text)} holds a NUL character, which a ROS '
                           'string cannot carry (it would end the text there)')
    if not text.strip():
        raise MessageError(f'{what} {shown(text)} must name an action (noop = wait)')
    return canonical_action(model, text, ROBOT, what)


def correction_from_msg(model: Domain, msg: Correction) -> tuple[str, str]:
    """(the corrected action, the intended one or '') of a Correction, canonical; what
    does not depend on the open step, checked as the executor and the panel both do."""
    check_step(msg.step, 'Correction')
    corrected = answer_action(model, msg.corrected_action)
    intended = canonical_action(model, msg.intended_action, ROBOT, 'intended_action') \
        if msg.intended_action else ''
    return corrected, intended


def intent_from_msg(model: Domain, msg: RobotIntent) -> str:
    """The canonical action a RobotIntent announces (a robot action, at a step a task
    can have)."""
    what = f'RobotIntent of task {shown(msg.task_id)} step {msg.step}'
    check_step(msg.step, what)
    return canonical_action(model, msg.action, ROBOT, f'{what}: action')


def step_result_action(model: Domain, msg: StepResult) -> str:
    """The canonical robot action a StepResult says was executed."""
    what = f'StepResult of task {shown(msg.task_id)} step {msg.step}'
    check_step(msg.step, what)
    return canonical_action(model, msg.action, ROBOT, f'{what}: action')


def skill_kind(model: Domain, action: str) -> str:
    """The skill server kind that executes ``action``: the domain's kind, or ``wait``."""
    action = canonical_action(model, action)
    return WAIT if action == NOOP else skills_of(model).kind_of(action)


def check_domain(model: Domain, name: str, what: str) -> None:
    """A message that names a domain must name this node's ('' = unnamed, accepted)."""
    if name and name != model.name:
        raise MessageError(f'{what} is of domain {name!r}; this node runs {model.name!r}')


# ------------------------------------------------------------------------- states
def state_from_wire(model: Domain, facts: Iterable[str], features: Sequence[float],
                    what: str):
    """The domain's state of a message's facts and features."""
    try:
        return model.state_from_wire(list(facts), [float(x) for x in features])
    except CecmError as error:
        raise MessageError(f'{what}: {error}') from None


def atoms_from_msg(model: Domain, atoms: Iterable[str], what: str) -> list[str]:
    """A message's atoms in the domain's spelling (the domain refuses unknown and
    repeated ones)."""
    try:
        return model.canonical_atoms(list(atoms))
    except CecmError as error:
        raise MessageError(f'{what}: {error}') from None


def team_state_msg(model: Domain, task_id: str, step: int, state,
                   robot_action: str = '', human_action: str = '', stamp=None,
                   robot_failed: bool = False) -> TeamState:
    msg = TeamState(domain=model.name, task_id=task_id, step=step,
                    true_propositions=model.state_facts(state),
                    state_features=model.state_features(state),
                    robot_action=robot_action, human_action=human_action,
                    robot_failed=robot_failed)
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def state_from_team_state(model: Domain, msg: TeamState):
    """The domain's state of a team state; the step and the actions applied last are
    checked too (a robot action of the robot, a human action of the human)."""
    what = f'TeamState of task {shown(msg.task_id)} step {msg.step}'
    check_domain(model, msg.domain, what)
    check_step(msg.step, what)
    canonical_action(model, msg.robot_action, ROBOT, f'{what} robot_action')
    canonical_action(model, msg.human_action, HUMAN, f'{what} human_action')
    return state_from_wire(model, msg.true_propositions, msg.state_features, what)


def _content(msg: TeamState) -> tuple:
    """What a team state says, without its stamp: a state sent again is the same."""
    return (msg.domain, msg.task_id, msg.step, tuple(msg.true_propositions),
            tuple(msg.state_features), msg.robot_action, msg.human_action)


class TeamStates:
    """The team states of the latest tasks, by step, as every node that follows the
    world keeps them (the executor, the task manager, the web panel): one set of rules.

    The world applies one joint step at a time and publishes each state once, in
    order, from the task's start (a node that joins late hears the world's last 50, from
    the start of a task of up to 50 steps); a task run again starts from the same state.
    So a state that does not fit the domain is refused (:func:`state_from_team_state`);
    the same state again (also with another stamp) changes nothing; another state for a
    step held is refused (the first is the one acted on); a task's first state must be
    its start, step 0, and step k is taken only once step k-1 is held. :meth:`restart`
    forgets a task's later steps when it is run again. Not thread-safe: its owner holds
    a lock.
    """

    def __init__(self, model: Domain, kept: int = TASKS_KEPT):
        self.model = model
        self.kept = kept
        self.tasks: dict[str, dict[int, TeamState]] = {}
        self.current = ''   # the task whose states are never dropped for another's

    def add(self, msg: TeamState) -> bool:
        """Take ``msg``: True when it is new, False when it is held already;
        MessageError says why it is refused."""
        state_from_team_state(self.model, msg)
        steps = self.tasks.get(msg.task_id)
        what = f'TeamState of task {shown(msg.task_id)} step {msg.step}'
        if not steps:
            if msg.step != 0:
                raise MessageError(f'{what}: the start of that task (step 0) was not '
                                   'received (the world publishes every step in order)')
            steps = self.tasks[msg.task_id] = {}
            others = [t for t in self.tasks if t not in (msg.task_id, self.current)]
            while len(self.tasks) > self.kept and others:
                del self.tasks[others.pop(0)]
        held = steps.get(msg.step)
        if held is not None:
            if _content(held) == _content(msg):
                return False
            raise MessageError(f'{what}: it differs from the one received before for that '
                               'step (kept)')
        if msg.step > 0 and msg.step - 1 not in steps:
            raise MessageError(
                f'{what}: step {msg.step - 1} of that task was not received (the world '
                f'publishes every step in order; the latest here is {max(steps)})')
        steps[msg.step] = msg
        return True

    def steps(self, task_id: str) -> dict[int, TeamState]:
        """The held states of a task, by step (empty when none)."""
        return self.tasks.get(task_id, {})

    def latest(self, task_id: str) -> int | None:
        """The latest step held of a task (None when none)."""
        steps = self.tasks.get(task_id)
        return max(steps) if steps else None

    def restart(self, task_id: str) -> None:
        """The task runs again: its start (step 0) stays, its later steps go."""
        steps = self.tasks.get(task_id)
        if steps:
            start = steps.get(0)
            steps.clear()
            if start is not None:
                steps[0] = start

    def forget(self, task_id: str) -> None:
        self.tasks.pop(task_id, None)


def trajectory_from_msgs(model: Domain, states: Sequence[TeamState],
                         task_id: str) -> list:
    """States s_0..s_H; the messages must be that task's steps 0..H in order."""
    if not states:
        raise MessageError(f'task {task_id!r}: the trajectory is empty')
    if len(states) > MAX_STEPS + 1:
        raise MessageError(f'task {task_id!r}: the trajectory has {len(states)} states; at '
                           f'most {MAX_STEPS + 1} (a task has at most {MAX_STEPS} steps)')
    trajectory = []
    for expected, msg in enumerate(states):
        if msg.task_id != task_id:
            raise MessageError(f'trajectory of task {task_id!r} holds a state of task '
                               f'{msg.task_id!r}')
        if msg.step != expected:
            raise MessageError(f'trajectory of task {task_id!r}: state {expected} has step '
                               f'{msg.step} (steps must run 0, 1, 2, ...)')
        trajectory.append(state_from_team_state(model, msg))
    return trajectory


# -------------------------------------------------------------------------- tasks
def task_msg(task: Task, partner_id: str = '', attempt: int = 0,
             domain: str = '') -> TaskRequest:
    return TaskRequest(domain=domain, task_id=task.task_id, partner_id=partner_id,
                       attempt=attempt, initial_propositions=sorted(task.initial),
                       goal_propositions=sorted(task.goal))


def task_from_msg(model: Domain, msg: TaskRequest) -> Task:
    """A validated core task: known atoms, a consistent start, a goal."""
    if not msg.task_id:
        raise MessageError('TaskRequest has an empty task_id')
    what = f'TaskRequest {msg.task_id!r}'
    check_domain(model, msg.domain, what)
    initial = atoms_from_msg(model, msg.initial_propositions, what + ' initial_propositions')
    goal = atoms_from_msg(model, msg.goal_propositions, what + ' goal_propositions')
    task = Task(msg.task_id, frozenset(initial), frozenset(goal))
    try:
        model.validate_task(task)
    except CecmError as error:
        raise MessageError(f'{what}: {error}') from None
    return task


def task_from_state(task: Task, model: Domain, state) -> Task:
    """The same goal from another (intermediate) state."""
    return model.task_from_state(task, state)


# ---------------------------------------------------------------------- vectors
def vector_from_msg(catalog: CapabilityCatalog, names: Sequence[str],
                    values: Sequence, what: str) -> np.ndarray:
    """A capability vector sent as parallel name/value lists, in catalogue order."""
    names, values = list(names), list(values)
    if len(names) != len(catalog):
        raise MessageError(f'{what}: {len(names)} capability names, but the catalogue has '
                           f'{len(catalog)}')
    if len(names) != len(values):
        raise MessageError(f'{what}: {len(names)} capability names but {len(values)} values')
    if names != list(catalog.names):
        unknown = [n for n in names if n not in catalog.names]
        detail = (f'unknown capabilities {unknown}' if unknown else
                  f'{len(names)} names in another order than the {len(catalog)} of the '
                  'catalogue')
        raise MessageError(f'{what}: capability names do not match the catalogue ({detail})')
    return np.asarray(values, dtype=bool)


def vector_text(vector: np.ndarray) -> str:
    return ''.join('1' if bit else '0' for bit in vector)


# ------------------------------------------------------------------------- plans
def plan_msg(plan: JointPlan, catalog: CapabilityCatalog, vector: np.ndarray,
             planned_for: str, stamp=None) -> JointPlanMsg:
    msg = JointPlanMsg(
        task_id=plan.task_id,
        steps=[JointStepMsg(robot_action=s.robot, human_action=s.human) for s in plan.steps],
        total_cost=float(plan.cost), robot_cost=float(plan.robot_cost),
        human_cost=float(plan.human_cost), capability_names=list(catalog.names),
        capability_estimate=[bool(b) for b in vector], planned_for=planned_for,
        planning_time_s=float(plan.planning_time_s))
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def plan_from_msg(model: Domain, msg: JointPlanMsg, start=None
                  ) -> JointPlan:
    """The plan's joint steps as a core plan (costs copied). With ``start``, the state it
    was planned from, the states it predicts too (under the capabilities it names);
    without, no state trajectory."""
    if len(msg.steps) > MAX_STEPS:
        raise MessageError(f'JointPlan of task {msg.task_id!r} has {len(msg.steps)} steps; at '
                           f'most {MAX_STEPS}')
    steps = []
    for index, step in enumerate(msg.steps):
        what = f'JointPlan of task {msg.task_id!r} step {index}'
        steps.append(JointStep(
            canonical_action(model, step.robot_action, 'robot', what + ' robot_action'),
            canonical_action(model, step.human_action, 'human', what + ' human_action')))
    trajectory = ()
    if start is not None:
        vector = vector_from_msg(model.catalog, msg.capability_names,
                                 msg.capability_estimate, f'JointPlan of task {msg.task_id!r}')
        trajectory = predicted_trajectory(model, start, steps, vector)
    return JointPlan(msg.task_id, tuple(steps), msg.total_cost, msg.robot_cost,
                     msg.human_cost, trajectory=trajectory,
                     human_capabilities_used=frozenset(), planning_time_s=msg.planning_time_s)


# ------------------------------------------------------------------------ beliefs
def belief_msg(model: Domain, belief: CapabilityBelief, partner_id: str,
               last_update_accepted_any: bool, stamp=None) -> CapabilityBeliefMsg:
    report = belief.report
    msg = CapabilityBeliefMsg(
        partner_id=partner_id, method=belief.method,
        inference=belief.settings.variant if belief.method.startswith('cecm') else '',
        capability_names=list(belief.capability_names),
        theta=[float(x) for x in belief.theta], estimate=[bool(b) for b in belief.estimate],
        status=[entry.status for entry in report],
        confounded_with=[','.join(entry.confounded_with) for entry in report],
        inert_capabilities=list(model.inert_capabilities),
        accepted_samples=int(belief.accepted_count), hypotheses=int(belief.hypotheses_count),
        tasks_seen=int(belief.tasks_seen),
        last_update_accepted_any=bool(last_update_accepted_any))
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def estimate_from_belief_msg(catalog: CapabilityCatalog, msg: CapabilityBeliefMsg
                             ) -> np.ndarray:
    what = f'CapabilityBelief of partner {msg.partner_id!r}'
    estimate = vector_from_msg(catalog, msg.capability_names, msg.estimate, what)
    if len(msg.theta) != len(catalog):
        raise MessageError(f'{what}: theta has {len(msg.theta)} entries, expected '
                           f'{len(catalog)}')
    if any(not np.isfinite(x) or not -1e-9 <= x <= 1.0 + 1e-9 for x in msg.theta):
        raise MessageError(f'{what}: theta must hold probabilities in [0, 1]')
    for field in ('status', 'confounded_with'):
        entries = getattr(msg, field)
        if entries and len(entries) != len(catalog):
            raise MessageError(f'{what}: {field} has {len(entries)} entries, expected '
                               f'{len(catalog)} (or none)')
    unknown = sorted(set(msg.status) - set(STATUSES))
    if unknown:
        raise MessageError(f'{what}: unknown status {unknown[0]!r} (statuses: '
                           f'{", ".join(STATUSES)})')
    return estimate


def stamped_before(msg, than) -> bool:
    """Whether ``msg`` was stamped before ``than``: an out-of-order (stale) message.

    A message without a stamp (e.g. typed with ``ros2 topic pub``) is never stale.
    """
    new, old = msg.header.stamp, than.header.stamp
    if not (new.sec or new.nanosec) or not (old.sec or old.nanosec):
        return False
    return (new.sec, new.nanosec) < (old.sec, old.nanosec)


def report_from_belief_msg(msg: CapabilityBeliefMsg) -> list[CapabilityReport]:
    """The belief's evidence report as the core keeps it (statuses and confounders), so
    a session's summary.json says what is confounded as an experiment's does."""
    confounded = list(msg.confounded_with) or [''] * len(msg.status)
    return [CapabilityReport(status, float(theta), tuple(filter(None, others.split(','))))
            for status, theta, others in zip(msg.status, msg.theta, confounded)]


def report_lines(msg: CapabilityBeliefMsg) -> list[str]:
    """The belief's evidence report in words: one line per kind of status."""
    confounded = [text.split(',') for text in msg.confounded_with]
    return describe_report(msg.capability_names, msg.status, confounded)


# ----------------------------------------------------------------------- outcomes
def outcome_msg(task: Task, partner_id: str, trajectory: Sequence[TeamState],
                robot_decisions: int, corrections: int, goal_reached: bool,
                domain: str = '', robot_failed_steps: Sequence[int] = ()) -> TaskOutcome:
    return TaskOutcome(domain=domain, task_id=task.task_id, partner_id=partner_id,
                       goal_propositions=sorted(task.goal),
                       initial_propositions=sorted(task.initial), trajectory=list(trajectory),
                       robot_failed_steps=[int(s) for s in robot_failed_steps],
                       robot_actions=robot_decisions, corrections=corrections,
                       goal_reached=goal_reached)


def outcome_from_msg(model: Domain, msg: TaskOutcome) -> tuple[Task, list]:
    """The observed task (start = first state) and the states an estimator weighs: the
    trajectory with its glitches repaired where the neighbouring states tell, without the
    robot's failed steps that changed nothing seen
    (:func:`~cecm_ros.core.world_conditions.evidence_of`)."""
    if not msg.task_id:
        raise MessageError('TaskOutcome has an empty task_id')
    what = f'TaskOutcome {msg.task_id!r}'
    check_domain(model, msg.domain, what)
    goal = atoms_from_msg(model, msg.goal_propositions, what + ' goal_propositions')
    if not goal:
        raise MessageError(f'{what}: goal_propositions is empty')
    trajectory = trajectory_from_msgs(model, msg.trajectory, msg.task_id)
    failed = sorted(set(int(s) for s in msg.robot_failed_steps))
    if failed and failed[-1] >= len(trajectory) - 1:
        raise MessageError(f'{what}: robot_failed_steps names step {failed[-1]}, but the '
                           f'trajectory has {len(trajectory) - 1} steps')
    flags = [False] * (len(trajectory) - 1)
    for step in failed:
        flags[step] = True
    if msg.initial_propositions:
        # The start was set up, not seen: it stands for what perception showed of it.
        start = atoms_from_msg(model, msg.initial_propositions, what + ' initial_propositions')
        trajectory[0] = model.initial_state(Task(msg.task_id, frozenset(start),
                                                 frozenset(goal)))
    trajectory = evidence_of(model, Task(msg.task_id, frozenset(), frozenset(goal)),
                             trajectory, flags)
    task = model.task_from_state(Task(msg.task_id, frozenset(), frozenset(goal)),
                                 trajectory[0])
    try:
        model.validate_task(task)   # the first state is where the task started
    except CecmError as error:
        raise MessageError(f'{what}: trajectory state 0: {error}') from None
    return task, trajectory


def graph_view_from_msg(msg) -> GraphView:
    """A GraphStatus as the session reads it (:mod:`cecm_ros.session.graph`)."""
    return GraphView(msg.mode, (msg.manager_started.sec, msg.manager_started.nanosec),
                     tuple(NodeStatus(n.name, n.state == State.PRIMARY_STATE_ACTIVE,
                                      n.responsive, n.recoveries) for n in msg.nodes))


def executed_steps(model: Domain, trajectory: Sequence[TeamState]) -> list[tuple[str, str]]:
    """The joint steps a recorded trajectory took, as canonical (robot, human) actions
    (MessageError naming an action the domain does not know)."""
    return [(canonical_action(model, s.robot_action or NOOP, ROBOT),
             canonical_action(model, s.human_action or NOOP, HUMAN)) for s in trajectory[1:]]
