"""What every domain the registry knows must honour, checked the same way for each: the
built-in ones, users' PDDL files (the workshop example, the shipyard test domain) and a
plug-in found by entry point (the stub, test/stub_domain.py). A new domain is added to
DOMAINS."""

from __future__ import annotations

import json

import numpy as np
import pytest
from paths import REPO, TEST_DIR

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, Domain
from cecm_ros.core.estimator import decode_state, encode_state, plain_state
from cecm_ros.core.simulator import predicted_trajectory
from cecm_ros.domains import load_domain, panel_view_for, planner_for, robot_skills_for, spec_of

DOMAINS = {
    'tidyup': 'tidyup',
    'overcooked': 'overcooked',
    'workshop': str(REPO / 'config' / 'domains' / 'workshop' / 'domain.yaml'),
    # A published-style PDDL domain whose capabilities are its own static facts.
    'shipyard': str(TEST_DIR / 'domains' / 'pddl' / 'shipyard' / 'domain.yaml'),
    'errands': 'errands',   # the entry point below
}
RENDERERS = ('facts', 'household', 'kitchen')   # what web/app.js draws


@pytest.fixture(scope='module', autouse=True)
def errands_entry_point(tmp_path_factory):
    """An installed distribution declaring the stub in the group ``cecm_ros.domains``."""
    site = tmp_path_factory.mktemp('site')
    info = site / 'errands_stub-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: errands-stub\nVersion: 1.0\n')
    (info / 'entry_points.txt').write_text('[cecm_ros.domains]\nerrands = stub_domain:SPEC\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        patch.syspath_prepend(str(TEST_DIR))
        yield


@pytest.fixture(scope='module', params=list(DOMAINS))
def loaded(request, errands_entry_point):
    domain = load_domain(DOMAINS[request.param])
    with planner_for(domain) as planner:
        task = domain.task_generator(0).next_task()
        yield request.param, domain, planner, task, planner.plan(
            task, domain.catalog.all_capable())


def test_the_registry_loads_it_as_a_domain_with_its_spec(loaded):
    name, domain, *_ = loaded
    assert isinstance(domain, Domain)
    assert len(domain.catalog) > 0 and domain.default_partner() in \
        [*domain.catalog.partner_types, 'all']
    assert spec_of(domain).planners.get('default')


def test_its_tasks_are_seeded_and_valid(loaded):
    _, domain, *_ = loaded
    first = domain.task_generator(3).tasks(3)
    assert first == domain.task_generator(3).tasks(3)
    for task in first:
        domain.validate_task(task)
        assert domain.task_from_dict(domain.task_to_dict(task), 'x') == task


def test_a_state_survives_text_the_wire_and_a_saved_belief(loaded):
    _, domain, _, task, plan = loaded
    for state in plan.trajectory:
        domain.check_state(state)
        assert domain.state_from_text(domain.state_to_text(state)) == state
        assert domain.state_from_wire(domain.state_facts(state),
                                      domain.state_features(state)) == state
        saved = json.loads(json.dumps(encode_state(state)))
        assert decode_state(saved) == plain_state(state)


def test_its_plan_reaches_the_goal_and_is_what_the_world_does(loaded):
    _, domain, _, task, plan = loaded
    everything = domain.catalog.all_capable()
    start = domain.initial_state(task)
    assert plan.trajectory[0] == start and domain.goal_reached(task, plan.trajectory[-1])
    # The world applies a joint step as the core's simulator does (the partner first).
    assert predicted_trajectory(domain, start, plan.steps, everything) == tuple(plan.trajectory)
    for step in plan.steps:
        for agent, action in ((ROBOT, step.robot), (HUMAN, step.human)):
            if action != NOOP:
                assert domain.action_agent(action) == agent
                assert domain.canonical_action(action) == action


def test_a_missing_capability_is_a_self_loop_not_a_missing_action(loaded):
    _, domain, _, task, plan = loaded
    nothing = np.zeros(len(domain.catalog), dtype=bool)
    gated = 0
    states = plan.trajectory
    for index, step in enumerate(plan.steps):
        action = step.human
        if action == NOOP or domain.partner_capable(action, nothing):
            continue
        before = states[index]   # the partner acts first in a joint step
        after, outcome = domain.transition(before, HUMAN, action, nothing)
        assert after == before and outcome.self_loop
        gated += 1
    assert gated or not plan.actions_of(HUMAN) or all(
        domain.partner_capable(a, nothing) for a in plan.actions_of(HUMAN))


def test_what_a_trajectory_proves_the_partner_has_it_does_have(loaded):
    _, domain, planner, task, _ = loaded
    vector = domain.catalog.resolve(domain.default_partner())
    plan = planner.plan(task, vector)
    proven = domain.exercised_capabilities(plan.trajectory)
    assert not np.any(proven & ~vector)
    assert domain.distance(plan.trajectory, plan.trajectory) == pytest.approx(0.0, abs=1e-12)
    assert 0.0 <= domain.distance(plan.trajectory, plan.trajectory[:1]) <= 1.0


def test_the_node_layer_roles_draw_its_states_and_name_its_skills(loaded):
    _, domain, _, task, plan = loaded
    view = panel_view_for(domain)
    assert view.layout()['renderer'] in RENDERERS
    json.dumps(view.render(plan.trajectory[0]))
    skills = robot_skills_for(domain)
    assert skills.kinds and all(skills.kind_of(a) in skills.kinds
                                for a in plan.actions_of(ROBOT))


def test_its_reference_planner_plans_the_task_too(loaded):
    _, domain, _, task, _ = loaded
    with planner_for(domain, 'reference') as reference:
        plan = reference.plan(task, domain.catalog.all_capable())
    assert domain.goal_reached(task, plan.trajectory[-1])
