"""The domain interface's own parts (core/domain.py) on the stub domain: the defaults a
domain inherits, the set-of-atoms states, a joint plan as a table and the planner's
default action values. TidyUP's grounding (its propositions, actions, checks of a
task) is tested in test/domains/tidyup/test_tidyup_model.py."""

from __future__ import annotations

import numpy as np
import pytest
from stub_domain import ERRANDS, HUMAN_COST, ROBOT_COST, Errands

from cecm_ros.core.capabilities import Capability, CapabilityCatalog, PartnerType
from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, JointPlan, JointStep, Task
from cecm_ros.core.errors import ConfigError

GOAL = frozenset({'(done letter)', '(done parcel)'})


def test_atom_set_states_check_save_and_read_back(errands):
    domain, _ = errands
    state = frozenset({'(done parcel)', '(ran-by-partner parcel)', '(done keys)'})
    domain.check_state(state)
    text = domain.state_to_text(state)
    assert text == '(done keys) (done parcel) (ran-by-partner parcel)'
    assert domain.state_from_text(text) == state
    assert domain.state_facts(state) == sorted(state)
    assert domain.state_features(state) == []
    assert domain.state_from_wire([' (done keys) ', '(done parcel)',
                                   '(ran-by-partner parcel)'], []) == state
    for bad in ({'(done keys)'}, frozenset({1, 2}), 7, ('(done keys)',)):
        with pytest.raises(ConfigError, match='not a state'):
            domain.check_state(bad)


def test_a_tasks_start_goal_and_the_same_goal_from_a_state_on_the_way(errands):
    domain, _ = errands
    task = Task('t', frozenset({'(done keys)'}), GOAL)
    start = domain.initial_state(task)
    assert start == frozenset({'(done keys)'}) and not domain.goal_reached(task, start)
    halfway = start | {'(done letter)'}
    later = domain.task_from_state(task, halfway)
    assert (later.task_id, later.initial, later.goal) == ('t', halfway, GOAL)
    assert later.origin is task
    # The origin is a hint, not part of the task's identity.
    assert later == Task('t', halfway, GOAL) and later.key == Task('t', halfway, GOAL).key
    assert domain.goal_reached(task, halfway | {'(done parcel)'})
    assert domain.goal_progress(task, halfway) == 1.0
    assert domain.goal_progress(task, halfway | {'(done parcel)', '(done plant)'}) == 2.0


def test_tasks_are_read_from_and_written_to_plain_values(errands):
    domain, _ = errands
    entry = {'id': 'mine', 'initial': ['(done keys)'], 'goal': ['(done plant)', '(done letter)']}
    task = domain.task_from_dict(entry, 'default')
    assert task == Task('mine', frozenset({'(done keys)'}),
                        frozenset({'(done plant)', '(done letter)'}))
    assert domain.task_to_dict(task) == {'id': 'mine', 'initial': ['(done keys)'],
                                         'goal': ['(done letter)', '(done plant)']}
    assert domain.task_from_dict({'initial': [], 'goal': ['(done keys)']}, 'n7').task_id == 'n7'
    for bad in ({'goal': []}, {'initial': []}, ['(done keys)']):
        with pytest.raises(ConfigError, match='task x: needs "initial" and "goal"'):
            domain.task_from_dict(bad, 'x')


def test_the_default_partner_is_low_capability_else_the_first_type_else_a_capable_one():
    domain = Errands()
    assert domain.default_partner() == 'low_capability'
    capabilities = [Capability(f'run-{e}', 'run', e) for e in ERRANDS]
    domain.catalog = CapabilityCatalog(capabilities, {
        'slow': PartnerType('slow', '', ('run-keys',)),
        'lazy': PartnerType('lazy', '', ('run-letter',))})
    assert domain.default_partner() == 'slow'
    domain.catalog = CapabilityCatalog(capabilities)
    assert domain.default_partner() == 'all'


def test_distances_novelty_and_costs_default_to_sets_of_states(errands):
    domain, _ = errands
    a, b, c, d = (frozenset(), frozenset({'(done keys)'}),
                  frozenset({'(done keys)', '(done letter)'}), frozenset({'(done plant)'}))
    assert domain.distance((a, b, c), (a, b, c)) == 0.0
    assert domain.distance((a, b, c), (a, d)) == pytest.approx(1 - 1 / 4)
    assert domain.distance((a, b, b, c), (c, a, b)) == 0.0      # visited sets, not order
    assert domain.novelty((a, b, c), (a, d)) == pytest.approx(2 / 3)
    assert domain.novelty((a, d), (a, b, c)) == pytest.approx(1 / 2)
    assert domain.action_cost(NOOP) == 0.0
    assert domain.action_cost('(run robot keys)') == ROBOT_COST
    assert domain.action_cost('(run human keys)') == HUMAN_COST


def test_inert_capabilities_are_none_unless_the_domain_knows_better(errands):
    domain, _ = errands
    task = domain.task_generator(0).next_task()
    assert not domain.inert_mask.any() and domain.inert_capabilities == []
    placed = Errands(places={'town': ('letter', 'parcel'), 'attic': ()})
    assert placed.inert_capabilities == ['go-attic']
    assert np.array_equal(placed.task_inert_mask(task), placed.inert_mask)
    assert placed.interchangeable_capabilities() == ()


def test_a_perception_misses_facts_and_sees_no_false_one_by_default(errands):
    domain, _ = errands
    state = frozenset({'(done keys)', '(done letter)', '(ran-by-partner letter)'})
    rng = np.random.default_rng(0)
    assert domain.misperceived(state, rng, missed=0.0, spurious=0.0) == state
    assert domain.misperceived(state, rng, missed=1.0, spurious=0.0) == frozenset()
    # Nothing perceivable is declared, so a spurious fact has nothing to come from.
    assert domain.perceivable_facts() == ()
    assert domain.misperceived(state, rng, missed=0.0, spurious=1.0) == state
    seen = [domain.misperceived(state, np.random.default_rng(s), 0.5, 0.0) for s in range(20)]
    assert all(view <= state for view in seen) and len(set(seen)) > 2


def test_a_joint_plan_is_a_table_of_who_does_what(errands):
    domain, planner = errands
    plan = planner.plan(Task('t', frozenset(), GOAL), domain.catalog.resolve('low_capability'))
    assert plan.steps == (JointStep('(run robot parcel)', '(run human letter)'),)
    assert plan.actions_of(ROBOT) == ['(run robot parcel)']
    assert plan.actions_of(HUMAN) == ['(run human letter)']
    assert plan.steps[0].action_of(HUMAN) == '(run human letter)'
    lines = plan.format(width=10, partner='friend').splitlines()
    assert lines[0].split() == ['step', 'robot', 'friend']
    assert lines[1].split() == ['1', '(run', 'robot', 'parcel)', '(run', 'human', 'letter)']
    assert lines[2] == 'cost 5 (robot 3, friend 1), 1 joint steps'
    # The robot's column is as wide as its longest action, so columns never run together.
    assert lines[1].index('(run human') > lines[1].index('parcel)') + len('parcel)')
    empty = JointPlan('e', (), 0.0, 0.0, 0.0, (frozenset(),), frozenset())
    assert empty.actions_of(HUMAN) == [] and empty.format().splitlines()[-1].startswith('cost 0')


def test_the_planners_default_action_values_are_minus_what_each_action_costs_in_all(errands):
    domain, planner = errands
    task = Task('t', frozenset(), GOAL)
    state = domain.initial_state(task)
    everything = domain.catalog.all_capable()
    actions = [NOOP, '(run human letter)', '(run human keys)']
    values = planner.action_values(task, state, everything, actions)
    # Waiting leaves the whole plan (the partner runs both: 2 steps of 1 + 1); the letter
    # leaves one errand; the keys are not asked for and cost their step on top.
    assert values == pytest.approx({NOOP: -4.0, '(run human letter)': -(1.0 + 2.0),
                                    '(run human keys)': -(1.0 + 4.0)})
    assert max(values, key=values.get) == '(run human letter)'
