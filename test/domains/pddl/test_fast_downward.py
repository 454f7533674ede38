"""Translate once, search per vector: the fast path must agree with full planner calls.

Both paths run the real Fast Downward shipped by up-fast-downward; the reference is a
full unified-planning call per vector (``reuse_translation=False``).
"""

from dataclasses import replace

import numpy as np
import pytest
from core_fixtures import close_planner, make_task

from cecm_ros.core.errors import PlannerTimeoutError, PlanningError, UnsolvableTaskError
from cecm_ros.domains.pddl.fast_downward import (
    CRASH_RETRIES,
    FastDownwardSearch,
    TranslatedTask,
    fast_downward_root,
)
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import atom
from cecm_ros.domains.tidyup.tasks import TaskGenerator

pytestmark = pytest.mark.skipif(fast_downward_root() is None,
                                reason='up-fast-downward ships no search binary here')

SAS = """begin_version
3
end_version
begin_metric
1
end_metric
1
begin_variable
var0
-1
2
Atom a()
NegatedAtom a()
end_variable
0
begin_state
1
end_state
begin_goal
1
0 0
end_goal
2
begin_operator
first x
0
1
0 0 -1 0
3
end_operator
begin_operator
second y
0
1
0 0 -1 0
1
end_operator
0
"""



@pytest.fixture(scope='module')
def planners(model):
    fast = FastDownwardPlanner(model, workers=2)
    reference = FastDownwardPlanner(model, reuse_translation=False)
    yield fast, reference
    close_planner(fast)
    close_planner(reference)


def test_sas_operator_section_is_split_and_restricted():
    task = TranslatedTask.parse(SAS)
    assert task.operator_names == ('first x', 'second y')
    only_second = task.restricted([False, True])
    assert 'first x' not in only_second and 'second y' in only_second
    assert only_second.split('end_goal\n')[1].startswith('1\nbegin_operator')
    assert task.restricted([True, True]) == SAS


def test_truncated_sas_is_a_planning_error():
    with pytest.raises(PlanningError, match='operator 2 of 2 is incomplete'):
        TranslatedTask.parse(SAS.split('second y')[0])
    with pytest.raises(PlanningError, match='without a goal'):
        TranslatedTask.parse('begin_version\n3\nend_version\n')


def test_restriction_needs_one_flag_per_operator():
    with pytest.raises(ValueError):
        TranslatedTask.parse(SAS).restricted([True])


def test_rebasing_rewrites_the_start_or_refuses_what_the_translation_left_out():
    task = TranslatedTask.parse(SAS)
    moved = task.rebased(frozenset({'(a)'}), frozenset())
    assert moved is not None and 'begin_state\n0\nend_state' in moved.head
    assert moved.operator_blocks == task.operator_blocks
    # A fact the translation does not describe must start as it did: a different one
    # means facts the translator pruned may be reachable now.
    assert task.rebased(frozenset({'(b)'}), frozenset()) is None
    assert task.rebased(frozenset({'(b)'}), frozenset({'(b)'})) is not None
    # Two facts of one of the translator's mutex groups at once: no start it is for.
    grouped = TranslatedTask.parse(SAS.replace('end_variable\n0\nbegin_state',
                                               'end_variable\n1\nbegin_mutex_group\n2\n'
                                               '0 0\n0 1\nend_mutex_group\nbegin_state'))
    assert grouped.mutex_groups() == [[(0, 0), (0, 1)]]
    assert grouped.rebased(frozenset({'(a)'}), frozenset()) is not None


@pytest.mark.parametrize('seed', range(2))
def test_a_replan_from_a_state_on_the_way_agrees_with_a_fresh_translation(model, planners,
                                                                         seed):
    fast, reference = planners
    task = TaskGenerator(model, seed=220 + seed).next_task()
    vector = model.catalog.partner_vector('low_capability')
    plan = fast.plan(task, vector)
    before = fast.fresh_translations, fast.rebased_translations
    for state in plan.trajectory[1:-1:2]:
        here = model.task_from_state(task, state)
        assert here.origin == task
        expected = reference.plan(here, vector)
        assert fast.plan(here, vector).steps == expected.steps
    # Every re-plan reused the task's translation: no translator run.
    assert fast.fresh_translations == before[0]
    assert fast.rebased_translations > before[1]
    # A goal without a start (what a TaskOutcome message gives) is nobody's origin.
    bare = model.task_from_state(replace(task, initial=frozenset()), plan.trajectory[1])
    assert bare.origin is None
    assert fast.plan(bare, vector).steps == reference.plan(bare, vector).steps


@pytest.mark.parametrize('seed', range(4))
def test_fast_path_finds_plans_as_cheap_as_full_planner_calls(model, planners, seed):
    fast, reference = planners
    task = TaskGenerator(model, seed=200 + seed).next_task()
    rng = np.random.default_rng(seed)
    vectors = [rng.random(len(model.catalog)) < 0.7 for _ in range(3)]
    vectors.append(model.catalog.partner_vector('low_capability'))
    for vector, plan in zip(vectors, fast.plan_many(task, vectors)):
        expected = reference.plan(task, vector)
        assert plan.cost == pytest.approx(expected.cost)
        assert not (set(plan.human_capabilities_used) - set(np.flatnonzero(vector)))
        # The planner's tie-breaking objective makes the two paths agree on the plan too
        # (up to the order of independent actions, which the joint steps do not show).
        assert plan.planner_cost == expected.planner_cost
        assert plan.steps == expected.steps
        assert plan.trajectory == expected.trajectory


def test_fast_path_reports_an_unsolvable_goal(model, planners):
    fast, _ = planners
    two_in_hand = make_task('fast-two-in-hand',
                            {atom('holding', 'robot', 'plate'), atom('holding', 'robot', 'bowl')})
    with pytest.raises(UnsolvableTaskError, match='fast-two-in-hand'):
        fast.plan(two_in_hand, model.catalog.all_capable())


def test_fast_path_timeout_names_the_task(model):
    hasty = FastDownwardPlanner(model, timeout_s=0.001)
    task = TaskGenerator(model, seed=210).next_task()
    try:
        with pytest.raises(PlannerTimeoutError, match=task.task_id):
            hasty.plan(task, model.catalog.all_capable())
    finally:
        close_planner(hasty)


def test_a_search_process_killed_every_time_fails_naming_the_signal(tmp_path):
    """A crash is retried (test_faults kills one real search); one that dies on every
    run ends as a PlanningError that says so, not as an exit code. The binary here is a
    stand-in that kills itself, so that the crash is certain."""
    runs = tmp_path / 'runs.txt'
    binary = tmp_path / 'downward' / 'builds' / 'release' / 'bin' / 'downward'
    binary.parent.mkdir(parents=True)
    binary.write_text(f'#!/bin/sh\necho run >> {runs}\nkill -9 $$\n')
    binary.chmod(0o755)
    search = FastDownwardSearch(tmp_path / 'downward', timeout_s=30.0)
    with pytest.raises(PlanningError, match=f'task crash: the Fast Downward search was '
                                            f'killed by signal 9 in each of '
                                            f'{CRASH_RETRIES + 1} runs'):
        search.search(SAS, 'task crash')
    assert runs.read_text().count('run') == CRASH_RETRIES + 1
