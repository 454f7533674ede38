"""Capability-conditioned joint planning with Fast Downward through unified-planning.

Every plan here comes from a real planner call on a small task; a module-scoped planner
shares its cache between the tests.
"""

import threading
import time

import numpy as np
import pytest
from core_fixtures import (
    close_planner,
    household_yaml,
    human_actions,
    load_model,
    make_task,
    replay,
    robot_actions,
)

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, JointPlan
from cecm_ros.core.errors import PlannerTimeoutError, UnsolvableTaskError
from cecm_ros.domains.pddl.planner import FastDownwardPlanner, canonical_order, lift_to_joint_steps
from cecm_ros.domains.tidyup.model import atom
from cecm_ros.domains.tidyup.tasks import TaskGenerator

PROPERTY_SEEDS = range(12)
SENTINEL = 'not a planner file\n'



@pytest.fixture(scope='module')
def planner(model):
    planner = FastDownwardPlanner(model)
    yield planner
    close_planner(planner)


@pytest.fixture(scope='module')
def task(model):
    return TaskGenerator(model, seed=0).next_task()


@pytest.fixture(scope='module')
def other_planner(model, task, tmp_path_factory):
    """A second planner (its own cache and planning process), first used from a directory
    that holds a file named like Fast Downward's intermediate output."""
    directory = tmp_path_factory.mktemp('caller-cwd')
    (directory / 'output.sas').write_text(SENTINEL)
    planner = FastDownwardPlanner(model)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        first = planner.plan(task, model.catalog.partner_vector('high_capability'))
    yield planner, directory, first
    close_planner(planner)


def sampled_case(model, seed):
    """A seeded (task, human vector) pair: TaskGenerator(seed) and Bernoulli(0.8) bits."""
    task = TaskGenerator(model, seed=seed).next_task()
    vector = np.random.default_rng(seed).random(len(model.catalog)) < 0.8
    return task, vector


def sequential_cost(model, plan):
    return sum(model.action(name).cost for name in plan.sequential)


# ------------------------------------------------------------------------- basics
def test_plan_reaches_the_goal_when_replayed(model, planner, task):
    vector = model.catalog.all_capable()
    plan = planner.plan(task, vector)
    assert isinstance(plan, JointPlan) and plan.task_id == task.task_id
    world, outcomes = replay(model, task, plan.steps, vector)
    assert world.goal_reached(task)
    assert not any(outcome.self_loop for pair in outcomes for outcome in pair)
    assert tuple(world.trajectory) == plan.trajectory
    assert len(plan.trajectory) == len(plan.steps) + 1


def test_plan_bookkeeping_is_consistent(model, planner, task):
    plan = planner.plan(task, model.catalog.all_capable())
    in_steps = sorted(robot_actions(plan.steps) + human_actions(plan.steps))
    assert in_steps == sorted(plan.sequential)
    assert plan.cost == pytest.approx(sequential_cost(model, plan))
    assert plan.cost == pytest.approx(plan.robot_cost + plan.human_cost)
    assert plan.human_cost == pytest.approx(
        sum(model.action(a).cost for a in human_actions(plan.steps)))
    assert plan.actions_of(ROBOT) == robot_actions(plan.steps)
    assert plan.actions_of(HUMAN) == human_actions(plan.steps)
    used = {model.action(a).gate for a in human_actions(plan.steps)}
    assert plan.human_capabilities_used == frozenset(used)
    assert f'{len(plan.steps)} joint steps' in plan.format()


def test_joint_steps_give_each_agent_its_own_actions(model, planner, task):
    plan = planner.plan(task, model.catalog.all_capable())
    for step in plan.steps:
        assert step.robot != NOOP or step.human != NOOP  # no empty steps
        if step.robot != NOOP:
            assert model.action(step.robot).agent == ROBOT
        if step.human != NOOP:
            assert model.action(step.human).agent == HUMAN
    # This task is seeded so that the optimal plan has work for both, at the same time.
    assert robot_actions(plan.steps) and human_actions(plan.steps)
    assert any(step.robot != NOOP and step.human != NOOP for step in plan.steps)


def test_same_task_and_vector_give_the_identical_plan(model, planner, task):
    vector = model.catalog.parse_vector('place_bedroom=0,pick_kitchen=0')
    first = planner.plan(task, vector)
    second = planner.plan(task, vector.copy())
    assert second.steps == first.steps and second.cost == first.cost
    assert second.trajectory == first.trajectory


def test_fresh_planner_gives_the_same_steps(model, planner, task, other_planner):
    _, _, first = other_planner
    expected = planner.plan(task, model.catalog.partner_vector('high_capability'))
    assert first.steps == expected.steps and first.sequential == expected.sequential
    assert first.cost == expected.cost


def test_planning_leaves_the_callers_directory_alone(other_planner):
    """Fast Downward writes output.sas into its working directory; the planner must
    neither depend on nor clobber the caller's."""
    planner, directory, _ = other_planner
    assert planner.calls == 1
    assert (directory / 'output.sas').read_text() == SENTINEL
    assert sorted(p.name for p in directory.iterdir()) == ['output.sas']


def test_already_satisfied_goal_gives_an_empty_plan(model, planner):
    done = make_task('done', {atom('item-at', 'plate', 'kitchen'), atom('clean', 'bowl')})
    plan = planner.plan(done, model.catalog.all_capable())
    assert plan.steps == () and plan.cost == 0
    assert plan.trajectory == (model.state_from_atoms(done.initial),)
    assert plan.sequential == ()


# ------------------------------------------------------------------ property test
@pytest.mark.parametrize('seed', PROPERTY_SEEDS)
def test_plans_respect_the_human_vector_and_execute_without_self_loops(model, planner, seed):
    task, vector = sampled_case(model, seed)
    plan = planner.plan(task, vector)
    for action in human_actions(plan.steps):
        assert model.human_capable(model.action(action), vector), (seed, action)
    assert plan.human_capabilities_used <= set(np.flatnonzero(vector))
    world, outcomes = replay(model, task, plan.steps, vector)
    loops = [o for pair in outcomes for o in pair if o.self_loop]
    assert not loops, (seed, loops)
    assert world.goal_reached(task)
    assert tuple(world.trajectory) == plan.trajectory
    # Actions sharing a joint step are independent: the robot may as well act first.
    state = model.state_from_atoms(task.initial)
    for step in plan.steps:
        for action in (model.action(a) for a in (step.robot, step.human) if a != NOOP):
            assert action.applicable(state), (seed, action.name)
            state = action.apply(state)
    assert state == world.state
    # Fast Downward's optimal search: losing capabilities can never make a plan cheaper.
    full = planner.plan(task, model.catalog.all_capable())
    assert full.cost <= plan.cost


def test_property_sample_is_not_vacuous(model, planner):
    """The sampled vectors do remove live capabilities and do change plans."""
    changed = 0
    for seed in PROPERTY_SEEDS:
        task, vector = sampled_case(model, seed)
        assert (~(vector | model.inert_mask)).any()
        full = planner.plan(task, model.catalog.all_capable())
        changed += planner.plan(task, vector).sequential != full.sequential
    assert changed >= len(PROPERTY_SEEDS) // 2


def test_planner_avoids_gaps_by_giving_the_work_to_the_robot(model, planner):
    # Everything happens in the living room, where the low-capability human cannot
    # pick or place: the robot must carry the blanket although it is in the kitchen.
    task = make_task('gap', {atom('item-at', 'blanket', 'study')}, robot='kitchen',
                     human='living_room', items={'blanket': 'living_room'})
    low = model.catalog.partner_vector('low_capability')
    plan = planner.plan(task, low)
    assert human_actions(plan.steps) == []
    assert robot_actions(plan.steps) == [
        '(move robot kitchen living_room)', '(pick robot blanket living_room)',
        '(move robot living_room study)', '(place robot blanket study)']
    full = planner.plan(task, model.catalog.all_capable())
    assert full.cost < plan.cost
    assert robot_actions(full.steps) == []


def test_handoff_from_robot_to_human_is_scheduled_in_order(model, planner):
    """The human cannot enter the bathroom but washes cheaper than the robot: the robot
    brings the dirty bowl to the kitchen and the human takes over. The human's pick must
    come in a later joint step than the robot's place (the simulator would otherwise
    execute it first, as a self-loop)."""
    task = make_task('handoff', {atom('item-at', 'bowl', 'kitchen'), atom('clean', 'bowl')},
                     robot='bathroom', human='kitchen', items={'bowl': 'bathroom'},
                     dirty={'bowl'})
    vector = model.catalog.vector_without(['move_bathroom'])
    plan = planner.plan(task, vector)
    assert plan.cost == 12  # robot pick 4 + move 1 + place 4; human pick, wash, place 1 each
    assert robot_actions(plan.steps) == [
        '(pick robot bowl bathroom)', '(move robot bathroom kitchen)',
        '(place robot bowl kitchen)']
    assert human_actions(plan.steps) == [
        '(pick human bowl kitchen)', '(wash human bowl kitchen)', '(place human bowl kitchen)']
    index = {action: i for i, step in enumerate(plan.steps)
             for action in (step.robot, step.human)}
    assert index['(place robot bowl kitchen)'] < index['(pick human bowl kitchen)']
    world, outcomes = replay(model, task, plan.steps, vector)
    assert not any(outcome.self_loop for pair in outcomes for outcome in pair)
    assert world.goal_reached(task)


# ------------------------------------------------------------------------- errors
def test_goal_needing_a_wash_without_any_sink_is_unsolvable(model, tmp_path):
    items = {name: {'cost': {'robot': item.cost['robot'], 'human': item.cost['human']},
                    'washable': item.washable, 'goal_rooms': list(item.goal_rooms)}
             for name, item in ((i.name, i) for i in model.household.items)}
    no_sink = load_model(tmp_path, household_yaml(list(model.household.rooms), [], items))
    assert no_sink.inert_capabilities == [f'wash_{room}' for room in model.household.rooms]
    task = make_task('no-sink', {atom('clean', 'plate')}, dirty={'plate'})
    planner = FastDownwardPlanner(no_sink)
    try:
        with pytest.raises(UnsolvableTaskError, match='no-sink'):
            planner.plan(task, no_sink.catalog.all_capable())
    finally:
        close_planner(planner)


def test_goal_that_no_state_satisfies_is_unsolvable(model, planner):
    two_in_hand = make_task('two-in-hand',
                            {atom('holding', 'robot', 'plate'), atom('holding', 'robot', 'bowl')})
    with pytest.raises(UnsolvableTaskError, match='two-in-hand'):
        planner.plan(two_in_hand, model.catalog.all_capable())


def test_unsolvable_message_does_not_claim_a_capable_human_lacks_everything(model, planner):
    two_in_hand = make_task('two-in-hand-msg',
                            {atom('holding', 'robot', 'plate'), atom('holding', 'robot', 'bowl')})
    with pytest.raises(UnsolvableTaskError) as error:
        planner.plan(two_in_hand, model.catalog.all_capable())
    assert 'lacks all' not in str(error.value)


def test_planner_timeout_raises_planner_timeout_error(model, planner, task):
    """unified-planning passes ``timeout`` to OneshotPlanner.solve; Fast Downward cannot
    even start within a millisecond, so the engine reports TIMEOUT."""
    hasty = FastDownwardPlanner(model, timeout_s=0.001)
    try:
        with pytest.raises(PlannerTimeoutError, match=task.task_id):
            hasty.plan(task, model.catalog.all_capable())
    finally:
        close_planner(hasty)
    # The same task is solvable with the default time limit.
    assert planner.plan(task, model.catalog.all_capable()).steps


# -------------------------------------------------------------------------- cache
def test_second_call_is_a_cache_hit(model, planner):
    task = TaskGenerator(model, seed=101).next_task()
    vector = model.catalog.partner_vector('low_capability')
    calls, hits = planner.calls, planner.cache_hits
    first = planner.plan(task, vector)
    assert (planner.calls, planner.cache_hits) == (calls + 1, hits)
    second = planner.plan(task, vector)
    assert (planner.calls, planner.cache_hits) == (calls + 1, hits + 1)
    assert second.steps == first.steps


def test_cache_is_keyed_by_content_not_task_id(model, planner):
    task = TaskGenerator(model, seed=101).next_task()
    vector = model.catalog.partner_vector('low_capability')
    planner.plan(task, vector)
    renamed = type(task)('renamed', task.initial, task.goal)
    calls = planner.calls
    plan = planner.plan(renamed, vector)
    assert planner.calls == calls
    assert plan.task_id == 'renamed'


def test_inert_capability_toggles_share_a_cache_entry(model, planner):
    task = TaskGenerator(model, seed=102).next_task()
    base = model.catalog.all_capable()
    reference = planner.plan(task, base)
    calls, hits = planner.calls, planner.cache_hits
    for inert in model.inert_capabilities:
        toggled = model.catalog.vector_without([inert])
        assert planner.plan(task, toggled).steps == reference.steps
    all_inert_off = model.catalog.vector_without(model.inert_capabilities)
    assert planner.plan(task, all_inert_off).steps == reference.steps
    assert planner.calls == calls
    assert planner.cache_hits == hits + len(model.inert_capabilities) + 1
    # A live capability is a different entry.
    planner.plan(task, model.catalog.vector_without(['move_kitchen']))
    assert planner.calls == calls + 1


def test_concurrent_callers_get_the_sequential_plans(model, planner, other_planner):
    tasks = TaskGenerator(model, seed=7).tasks(4)
    vector = model.catalog.partner_vector('high_capability')
    results = {}

    def work(task):
        results[task.task_id] = planner.plan(task, vector).sequential

    threads = [threading.Thread(target=work, args=(task,)) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reference, _, _ = other_planner  # its own cache: these are solved again, one by one
    for task in tasks:
        assert results[task.task_id] == reference.plan(task, vector).sequential


# ---------------------------------------------------------------- joint lifting
def test_lifting_puts_independent_actions_of_both_agents_in_one_step(model):
    actions = [model.action(a) for a in (
        '(pick robot blanket kitchen)', '(pick human plate kitchen)',
        '(move robot kitchen study)', '(move human kitchen bedroom)',
        '(place robot blanket study)', '(place human plate bedroom)')]
    steps = lift_to_joint_steps(actions)
    assert [(r.name, h.name) for r, h in steps] == [
        ('(pick robot blanket kitchen)', '(pick human plate kitchen)'),
        ('(move robot kitchen study)', '(move human kitchen bedroom)'),
        ('(place robot blanket study)', '(place human plate bedroom)')]


def test_lifting_keeps_dependent_actions_in_order(model):
    # The human can only pick the plate up after the robot has put it down in the study.
    actions = [model.action(a) for a in (
        '(pick robot plate kitchen)', '(move robot kitchen study)',
        '(place robot plate study)', '(pick human plate study)')]
    steps = lift_to_joint_steps(actions)
    names = [(r.name if r else NOOP, h.name if h else NOOP) for r, h in steps]
    assert names == [('(pick robot plate kitchen)', NOOP), ('(move robot kitchen study)', NOOP),
                     ('(place robot plate study)', NOOP), (NOOP, '(pick human plate study)')]


def test_canonical_order_makes_reordered_plans_identical(model):
    """Two trips in either order use the same actions; both become one plan."""
    start = model.state_from_atoms(
        {atom('agent-at', ROBOT, 'living_room'), atom('agent-at', HUMAN, 'kitchen'),
         atom('hand-free', ROBOT), atom('hand-free', HUMAN),
         atom('item-at', 'blanket', 'living_room'), atom('clean', 'blanket'),
         atom('item-at', 'plate', 'living_room'), atom('clean', 'plate'),
         atom('item-at', 'bowl', 'kitchen'), atom('clean', 'bowl'),
         atom('item-at', 'toothbrush', 'bathroom'), atom('clean', 'toothbrush')})
    goal = model.state_from_atoms({atom('item-at', 'blanket', 'bedroom'),
                                   atom('item-at', 'plate', 'study')})
    blanket_trip = ['(pick robot blanket living_room)', '(move robot living_room bedroom)',
                    '(place robot blanket bedroom)', '(move robot bedroom living_room)']
    plate_trip = ['(pick robot plate living_room)', '(move robot living_room study)',
                  '(place robot plate study)', '(move robot study living_room)']
    first = [model.action(a) for a in blanket_trip + plate_trip]
    second = [model.action(a) for a in plate_trip + blanket_trip]
    ordered = canonical_order(first, start, goal)
    assert ordered == canonical_order(second, start, goal)
    assert sorted(a.name for a in ordered) == sorted(a.name for a in first)
    state = start
    for action in ordered:
        assert action.applicable(state)
        state = action.apply(state)
    assert state & goal == goal



class _SlowPlanner:
    """A CachingPlanner whose search takes a while and is counted (which plan it
    returns does not matter here: the real planner's is tested above)."""

    def __new__(cls, model, plan, fail_first=False):
        from cecm_ros.core.domain import PlannerGuarantees
        from cecm_ros.core.planning import CachingPlanner

        class Slow(CachingPlanner):
            searches = 0
            entered = threading.Event()

            def solve_all(self, task, vectors):
                type(self).searches += 1
                type(self).entered.set()
                time.sleep(0.5)
                if fail_first and type(self).searches == 1:
                    raise PlannerTimeoutError('the first search timed out')
                return [plan for _ in vectors]

        return Slow(model, PlannerGuarantees(cost_optimal=True, deterministic=True))


@pytest.mark.parametrize('fail_first', [False, True])
def test_two_threads_asking_for_one_plan_wait_for_one_search(model, planner, task, fail_first):
    plan = planner.plan(task, model.catalog.all_capable())
    slow = _SlowPlanner(model, plan, fail_first)
    vector = model.catalog.all_capable()
    answers: dict[str, object] = {}

    def ask(name):
        try:
            answers[name] = slow.plan(task, vector)
        except PlannerTimeoutError as error:
            answers[name] = error

    first = threading.Thread(target=ask, args=('first',))
    first.start()
    assert type(slow).entered.wait(10)
    second = threading.Thread(target=ask, args=('second',))
    second.start()
    first.join(10)
    second.join(10)
    if not fail_first:
        assert type(slow).searches == 1 and slow.in_flight_hits == 1
        assert answers['first'] is answers['second'] is not None
    else:
        # The first search timed out: the caller waiting for it gets the same answer,
        # without a search of its own.
        assert isinstance(answers['first'], PlannerTimeoutError)
        assert answers['second'] is answers['first'] and type(slow).searches == 1
