"""A published-style PDDL domain brought as it is: typed STRIPS, two workers of one type,
what a worker can do already written as its static facts ((can-weld ?w)), problem files
that list every fact. test/domains/pddl/shipyard/ is such a domain; its PDDL and
problem files are not edited, and every capability is one a task decides."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from paths import TEST_DIR, line_of

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.domain import HUMAN, ROBOT
from cecm_ros.core.errors import ConfigError, UnsolvableTaskError
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.pddl.file_domain import FileDomain

SHIPYARD = TEST_DIR / 'domains' / 'pddl' / 'shipyard'


@pytest.fixture(scope='module')
def shipyard():
    return load_domain(str(SHIPYARD / 'domain.yaml'))


def copy_shipyard(tmp_path: Path, change=None, problem_change=None) -> Path:
    target = tmp_path / 'shipyard'
    shutil.copytree(SHIPYARD, target)
    spec = yaml.safe_load((target / 'domain.yaml').read_text())
    if change:
        change(spec)
    (target / 'domain.yaml').write_text(yaml.safe_dump(spec))
    if problem_change:
        for problem in (target / 'problems').glob('*.pddl'):
            problem.write_text(problem_change(problem.read_text()))
    return target / 'domain.yaml'


def test_the_partners_own_facts_are_its_capabilities(shipyard):
    assert shipyard.catalog.names == ('weld', 'paint', 'inspect', 'east_dock')
    assert not shipyard.inert_capabilities
    gate = {name: shipyard.catalog.index(name) for name in shipyard.catalog.names}
    assert shipyard.action('(weld tech h1 east)').gate == gate['weld']
    assert shipyard.action('(sail tech middle east)').gate == gate['east_dock']
    assert shipyard.action('(tow tech h1 middle east)').gate == gate['east_dock']
    # The partner's other facts, and every fact of the robot, are the world's (static).
    assert shipyard.action('(sail tech west middle)').gate is None
    for action in ('(weld robot h1 east)', '(sail robot middle east)'):
        ground = shipyard.action(action)
        assert ground.agent == ROBOT and ground.gate is None and ground.statically_possible


def test_every_capability_is_one_a_task_decides(shipyard):
    """For each capability, a problem where the team plans otherwise without it; the
    unified-planning path (its fact made false) and the search path (its operators left
    out) plan alike."""
    changes = {name: [] for name in shipyard.catalog.names}
    with planner_for(shipyard) as planner, planner_for(shipyard, 'reference') as reference:
        for task in shipyard.problem_tasks:
            full = planner.plan(task, shipyard.catalog.all_capable())
            assert full.actions_of(HUMAN), task.task_id
            for name in shipyard.catalog.names:
                lacking = shipyard.catalog.vector_without([name])
                plan = planner.plan(task, lacking)
                assert reference.plan(task, lacking).sequential == plan.sequential
                assert not any(shipyard.action(a).gate == shipyard.catalog.index(name)
                               for a in plan.actions_of(HUMAN))
                if plan.sequential != full.sequential:
                    changes[name].append(task.task_id)
    assert all(changes.values()), changes


@pytest.mark.parametrize('partner, absent', [('landlubber', ['east_dock']),
                                             ('trainee', ['paint', 'inspect'])])
def test_an_experiment_learns_the_partners_facts(tmp_path, capsys, partner, absent):
    """The partner here plans as the robot does (in-model), so the test takes the
    in-model likelihood: the default (usage) is slower on such a partner by design
    (docs/experiments.md, "With an optimal partner")."""
    out = tmp_path / 'out'
    assert cecm_main(['experiment', '--domain', str(SHIPYARD / 'domain.yaml'), '--partner',
                      partner, '--runs', '2', '--tasks', '12', '--heldout', '6', '--jobs',
                      '2', '--quiet', '--no-plan-store', '--likelihood', 'stepwise',
                      '--out', str(out)]) == 0
    capsys.readouterr()
    summary = json.loads((out / 'summary.json').read_text())
    for run in (1, 2):
        last = [e for e in summary['evidence'] if e['run'] == run][-1]
        assert last['known_absent'] == absent and not last['wrong']
        if partner == 'landlubber':   # every one of them decided
            assert sorted(last['known_present']) == ['inspect', 'paint', 'weld']


def test_the_robots_own_facts_stay_as_static_says(tmp_path):
    path = copy_shipyard(tmp_path, lambda s: s['static'].remove('(can-paint robot)'),
                         lambda t: t.replace('(can-paint robot)', ''))
    domain = FileDomain(path)
    assert not domain.action('(paint robot h1 east)').statically_possible
    assert domain.action('(paint tech h1 east)').statically_possible
    task = next(t for t in domain.problem_tasks if t.task_id == 'paint-east')
    with planner_for(domain) as planner:
        assert planner.plan(task, domain.catalog.all_capable()).actions_of(HUMAN) == \
            ['(paint tech h1 east)']
        with pytest.raises(UnsolvableTaskError):   # nobody left who can paint
            planner.plan(task, domain.catalog.vector_without(['paint']))


def _capability(index: int, **entry):
    def change(spec):
        spec['capabilities'][index] = {'name': spec['capabilities'][index]['name'], **entry}
    return change


@pytest.mark.parametrize('change, token, words', [
    (_capability(0, fact='(at partner east)'), '(at partner east)',
     "capabilities[1] (weld): fact: (at tech east): 'at' is changed by the actions sail, "
     'tow; a capability is a fact no action changes'),
    (_capability(0, fact='(can-weld robot)'), '(can-weld robot)',
     "(can-weld robot) is not about the partner 'tech'"),
    (_capability(0, fact='(can-wled partner)'), '(can-wled partner)',
     "no predicate 'can-wled' in the PDDL domain; predicates: at, can-inspect"),
    (_capability(3, fact='(cleared partner)'), '(cleared partner)',
     "(cleared tech): 'cleared' takes 2 arguments (?w - worker ?d - dock), got 1"),
    (_capability(3, fact='(cleared partner attic)'), '(cleared partner attic)',
     "'attic' is not an object of type 'dock' (west, middle, east)"),
    (_capability(0, fact='(can-weld partner)', action='weld'), 'action: weld',
     'give the "action" (or list of actions) it gates, or the partner\'s "fact" it is'),
    (_capability(1, fact='(can-weld partner)'), '(can-weld partner)',
     "capabilities[2] (paint): fact (can-weld tech) is capability 1's too"),
    (lambda s: s['static'].append('(can-weld tech)'), '- (can-weld tech)',
     "static: (can-weld tech) is the fact of capability 'weld', which the package varies; "
     'leave it out of static'),
], ids=['changing-predicate', 'not-the-partners', 'unknown-predicate', 'wrong-arity',
        'wrong-type', 'fact-and-action', 'fact-twice', 'fact-under-static'])
def test_a_capability_fact_that_cannot_be_one_is_refused_at_its_line(tmp_path, change,
                                                                      token, words):
    path = copy_shipyard(tmp_path, change)
    with pytest.raises(ConfigError) as caught:
        FileDomain(path)
    message = str(caught.value)
    line = line_of(path, token, last=token == '(can-weld partner)')
    assert re.match(rf'{re.escape(str(path))}:{line}:\d+: ', message), message
    assert words in message


@pytest.mark.parametrize('pddl_change, words', [
    # The robot's action asks for the partner's fact: a capability gates the partner only.
    (lambda t: t.replace('(:action weld', """(:action coach
    :parameters (?w ?v - worker ?d - dock)
    :precondition (and (at ?w ?d) (at ?v ?d) (can-weld ?v))
    :effect (and))
  (:action weld"""), "(coach robot tech west) is an action of the robot that needs the "
     "partner's capability 'weld'; a capability gates actions of the partner"),
    (lambda t: t.replace('(hull-at ?h ?d) (can-weld ?w))', '(hull-at ?h ?d) (can-weld ?w)\n'
                         '                       (can-paint ?w))'),
     'capabilities weld, paint all gate (weld tech h1 west); one action may need one '
     'capability'),
], ids=['robot-action', 'two-capabilities'])
def test_an_action_a_capability_fact_cannot_gate_is_refused_at_the_action(tmp_path,
                                                                          pddl_change, words):
    path = copy_shipyard(tmp_path)
    pddl = path.parent / 'shipyard.pddl'
    pddl.write_text(pddl_change(pddl.read_text()))
    with pytest.raises(ConfigError) as caught:
        FileDomain(path)
    action = 'coach' if 'coach' in words else 'weld'
    line = line_of(pddl, f'(:action {action}')
    assert str(caught.value).startswith(f'{pddl}:{line}:3: {words}'), str(caught.value)


def test_the_plan_table_names_the_partner_as_the_domain_does(capsys):
    assert cecm_main(['plan', '--domain', str(SHIPYARD / 'domain.yaml'), '--partner',
                      'trainee', '--no-plan-store']) == 0
    printed = capsys.readouterr().out
    assert re.search(r'step  robot +tech\n', printed), printed
    assert re.search(r'cost \d+ \(robot \d+, tech \d+\)', printed)


def test_capabilities_says_how_much_the_partner_does(capsys):
    assert cecm_main(['capabilities', '--domain', str(SHIPYARD / 'domain.yaml'),
                      '--no-plan-store']) == 0
    printed = capsys.readouterr().out
    assert 'the partner acts in 6 of 6 sampled tasks (each planned with every capability)' \
        in printed
    assert re.search(r'east_dock +Sail into the east dock  \(used in 2 of 6 sampled tasks\)',
                     printed), printed
    assert 'warning' not in printed


def test_a_partner_who_does_no_work_is_warned_of_at_load_and_by_capabilities(tmp_path,
                                                                              capsys):
    """The robot starts where the work is in every problem: with unit costs the
    partner's plans are empty, and nothing could be learned."""
    def robot_at_the_work(spec):
        spec['tasks']['problems'] = ['problems/weld-east.pddl', 'problems/paint-east.pddl',
                                     'problems/inspect-east.pddl']
    path = copy_shipyard(tmp_path, robot_at_the_work, lambda t: t.replace(
        '(at robot west) (at tech east)', '(at robot east) (at tech west)'))
    domain = load_domain(str(path))
    warning = ('the partner acts in 0 of 3 sampled tasks: nothing can be learned; '
               'docs/domains.md, "When the partner does no work" (costs and starts)')
    assert domain.load_warnings == [warning]
    assert f'cecm: warning: {path}: {warning}' in capsys.readouterr().err
    assert cecm_main(['capabilities', '--domain', str(path)]) == 0
    printed = capsys.readouterr().out
    assert 'the partner acts in 0 of 3 sampled tasks' in printed
    assert f'warning: {warning}' in printed
