"""A user's PDDL domain from a YAML file: the example workshop, and every mistake in a
domain file reported with the file and the entry, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from paths import REPO, line_of  # noqa: E402

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.core.domain import HUMAN, ROBOT, Task
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.simulator import WorldSimulator
from cecm_ros.domains import available_domains, load_domain, planner_for, robot_skills_for
from cecm_ros.domains.pddl.file_domain import FileDomain

EXAMPLE = REPO / 'config' / 'domains' / 'workshop'


@pytest.fixture(scope='module')
def workshop():
    return load_domain(str(EXAMPLE / 'domain.yaml'))


def copy_example(tmp_path: Path, change=None, pddl_change=None) -> Path:
    """A copy of the workshop with its YAML (a dict) and PDDL (text) changed."""
    target = tmp_path / 'workshop'
    shutil.copytree(EXAMPLE, target)
    spec = yaml.safe_load((target / 'domain.yaml').read_text())
    if change:
        change(spec)
    (target / 'domain.yaml').write_text(yaml.safe_dump(spec))
    if pddl_change:
        pddl = target / 'workshop.pddl'
        pddl.write_text(pddl_change(pddl.read_text()))
    return target / 'domain.yaml'


def test_the_example_loads_by_path_and_names_its_capabilities(workshop):
    assert workshop.name == 'workshop'
    assert len(workshop.catalog) == 11
    assert set(workshop.catalog.partner_types) >= {'apprentice', 'seated'}
    assert not workshop.inert_mask.any()
    assert robot_skills_for(workshop).kinds == ('move', 'fetch', 'place', 'assemble', 'inspect')
    assert 'tidyup' in available_domains()


def test_a_gated_action_of_the_partner_is_a_self_loop(workshop):
    task = workshop.task_generator(3).next_task()
    start = workshop.initial_state(task)
    facts = workshop.state_facts(start)
    where = next(f for f in facts if f.startswith('(agent-at worker'))[1:-1].split()[2]
    target = 'bench' if where != 'bench' else 'shelf'
    move = f'(move worker {where} {target})'
    lacking = workshop.catalog.vector_without([f'move_{target}'])
    world = WorldSimulator(workshop, lacking, start)
    robot, partner = world.step(None, move)
    assert partner.self_loop and 'missing capability' in partner.reason
    assert world.state == start
    able = WorldSimulator(workshop, workshop.catalog.all_capable(), start)
    assert able.step(None, move)[1].changed
    # The robot is never gated.
    assert workshop.action_agent(move) == HUMAN
    assert workshop.action_agent(move.replace('worker', 'robot')) == ROBOT


def test_generated_tasks_follow_the_seed(workshop):
    first = workshop.task_generator(7).tasks(4)
    again = workshop.task_generator(7).tasks(4)
    other = workshop.task_generator(8).tasks(4)
    assert first == again and first != other
    for task in first:
        assert task.goal and not task.goal <= task.initial
        workshop.validate_task(task)


def test_the_planner_respects_the_partner_and_shares_work(workshop):
    task = workshop.task_generator(2).next_task()
    with planner_for(workshop) as planner:
        full = planner.plan(task, workshop.catalog.all_capable())
        apprentice = planner.plan(task, workshop.catalog.resolve('apprentice'))
    assert full.actions_of(HUMAN)
    assert not any(a.startswith(('(assemble', '(inspect')) for a in apprentice.actions_of(HUMAN))
    assert workshop.goal_reached(task, apprentice.trajectory[-1])


def test_problem_files_are_tasks_too(tmp_path, workshop):
    problem = tmp_path / 'p1.pddl'
    problem.write_text(
        '(define (problem p1) (:domain workshop)\n'
        ' (:objects robot worker - agent shelf bench inspection - station\n'
        '   bolt bracket gear panel - part)\n'
        ' (:init (agent-at robot bench) (agent-at worker shelf) (hand-free robot)\n'
        '   (hand-free worker) (part-at bolt shelf) (part-at bracket bench)\n'
        '   (part-at gear bench) (part-at panel bench))\n'
        ' (:goal (and (assembled bolt))))\n')

    def use_problems(spec):
        spec['tasks'] = {'problems': [str(problem)]}
    domain = FileDomain(copy_example(tmp_path, use_problems))
    tasks = domain.task_generator(0).tasks(2)
    assert all(t.goal == frozenset({'(assembled bolt)'}) for t in tasks)
    assert tasks[0].task_id != tasks[1].task_id


def bad(tmp_path, change=None, pddl_change=None) -> str:
    path = copy_example(tmp_path, change, pddl_change)
    with pytest.raises(ConfigError) as caught:
        load_domain(str(path))   # as a user's command reads it: the tasks are planned too
    return str(caught.value)


def test_a_missing_pddl_file_is_named(tmp_path):
    message = bad(tmp_path, lambda s: s.update(pddl='nowhere.pddl'))
    assert 'domain.yaml' in message and 'nowhere.pddl' in message


def test_a_pddl_parse_error_names_the_pddl_file(tmp_path):
    message = bad(tmp_path, pddl_change=lambda t: t.replace('(:action move', '(:action move (('))
    assert 'workshop.pddl' in message and 'cannot read the PDDL domain' in message


LAB = REPO / 'config' / 'domains' / 'lab'


@pytest.mark.parametrize('example, change, token, words', [
    # The lab writes its costs as numbers: the planner reads a rewritten copy of it, and
    # the position is still that of the user's file.
    ('lab', lambda t: t.replace('(:action take', '(:action take #'), '(:action take',
     "Expected ':parameters', found '#'"),
    ('lab', lambda t: t.replace(':precondition (and (at ?a ?s) (sample-at',
                                ':precondtion (and (at ?a ?s) (sample-at'), ':precondtion',
     'found'),
    ('lab', lambda t: t.replace('(at ?a ?from) (path', '(att ?a ?from) (path'), '(att ?a',
     "no predicate 'att' is declared; predicates: at, free, has-centrifuge"),
    ('workshop', lambda t: t.replace('(agent-at ?a ?from)', '(agnt-at ?a ?from)', 1),
     '(agnt-at', "no predicate 'agnt-at' is declared"),
], ids=['lab-stray-character', 'lab-misspelt-keyword', 'lab-unknown-predicate',
        'workshop-unknown-predicate'])
def test_a_pddl_mistake_is_named_at_its_line_in_the_users_file(tmp_path, example, change,
                                                                token, words):
    source = {'lab': LAB, 'workshop': EXAMPLE}[example]
    target = tmp_path / example
    shutil.copytree(source, target)
    pddl = target / f'{example}.pddl'
    pddl.write_text(change(pddl.read_text()))
    line = line_of(pddl, token)
    with pytest.raises(ConfigError) as caught:
        load_domain(str(target / 'domain.yaml'))
    message = str(caught.value)
    assert message.startswith(f'{pddl}:{line}:'), message
    assert 'cannot read the PDDL domain' in message and words in message


def test_a_capability_gating_an_unknown_action_is_named(tmp_path):
    message = bad(tmp_path, lambda s: s['capabilities'][0].update(action='teleport'))
    assert "'move_shelf'" in message and "'teleport'" in message and 'actions:' in message


def test_a_capability_gating_an_unknown_argument_is_named(tmp_path):
    message = bad(tmp_path, lambda s: s['capabilities'][0].update(arguments={'via': 'shelf'}))
    assert "'move_shelf'" in message and "'via'" in message
    message = bad(tmp_path / 'again',
                  lambda s: s['capabilities'][0].update(arguments={'to': 'attic'}))
    assert "'attic'" in message and 'station' in message


def test_a_partner_type_naming_an_unknown_capability_is_named(tmp_path):
    message = bad(tmp_path, lambda s: s['partner_types']['seated'].update(
        missing=['move_shelf', 'fly']))
    assert "'seated'" in message and "'fly'" in message


@pytest.mark.parametrize('old, new, action, words', [
    ('(and (at ?a ?from) (path ?from ?to))', '(and (or (at ?a ?from) (free ?a)) (path ?from ?to))',
     'walk', "unsupported precondition (at(a, from) or free(a)) in 'walk'"),
    ('(and (labelled ?x) (increase', '(and (forall (?y - sample) (labelled ?y)) (increase',
     'label', "unsupported effect forall sample y labelled(y) := true in 'label'"),
    (':parameters (?a - agent ?x - sample ?s - station)\n    :precondition (and (at ?a ?s) '
     '(sample-at ?x ?s) (has-centrifuge ?s) (free ?a))',
     ':parameters (?x - sample ?s - station)\n    :precondition (and (sample-at ?x ?s) '
     '(has-centrifuge ?s))', 'spin',
     "action 'spin' has no parameter for the agent doing it (one of robot, tech)"),
    ('(and (at ?a ?from) (path ?from ?to))', '(and (at ?a ?from) (not (free ?a)) (path ?from ?to))',
     'walk', "unsupported precondition (not free(a)) in 'walk'"),
    ('(and (labelled ?x) (increase', '(and (labelled ?x) (when (free ?a) (spun ?x)) (increase',
     'label', "unsupported effect if free(a) then spun(x) := true in 'label'"),
], ids=['disjunction', 'forall-effect', 'no-agent', 'negation', 'conditional-effect'])
def test_what_cecm_cannot_ground_is_named_at_its_action(tmp_path, old, new, action, words):
    target = tmp_path / 'lab'
    shutil.copytree(LAB, target)
    pddl = target / 'lab.pddl'
    assert old in pddl.read_text()
    pddl.write_text(pddl.read_text().replace(old, new, 1))
    line = line_of(pddl, f'(:action {action}')
    with pytest.raises(ConfigError) as caught:
        load_domain(str(target / 'domain.yaml'))
    assert str(caught.value).startswith(f'{pddl}:{line}:3: {words}'), str(caught.value)


def test_a_goal_no_start_can_reach_is_refused_at_its_entry(tmp_path):
    def unreachable(spec):
        # Nothing can be inspected without a gauge anywhere.
        spec['static'] = [f for f in spec['static'] if 'has-gauge' not in f]
    message = bad(tmp_path, unreachable)
    path = tmp_path / 'workshop' / 'domain.yaml'
    assert message.startswith(f'{path}:{line_of(path, "goal:") + 1}:')   # its first entry
    assert 'tasks: generate: goal[1]: (inspected ' in message
    assert 'can never be reached' in message


def test_a_task_no_team_can_reach_names_the_atoms_out_of_reach(tmp_path):
    """A start where the bolt lies on a shelf no one can leave: the task drawn from it
    cannot be done, though the goal can be from other starts."""
    def shelf_cut_off(spec):
        spec['static'] = [f for f in spec['static'] if 'shelf' not in f]
        spec['tasks']['generate'] = {
            'initial': [{'one_of': ['(agent-at robot bench)', '(agent-at robot inspection)']},
                        '(agent-at worker bench)', '(hand-free robot)', '(hand-free worker)',
                        {'one_of': ['(part-at bolt shelf)'] * 3 + ['(part-at bolt bench)']},
                        '(part-at bracket bench)', '(part-at gear bench)',
                        '(part-at panel bench)'],
            'goal': ['(inspected bolt)']}
    message = bad(tmp_path, shelf_cut_off)
    path = tmp_path / 'workshop' / 'domain.yaml'
    assert message.startswith(f'{path}:{line_of(path, "generate:")}:')
    assert 'tasks: generate: task task-0-' in message
    assert message.endswith('cannot be reached even by a fully capable team: no actions of '
                            'the two agents, with every capability, make (inspected bolt) '
                            'true from its start')


def test_a_problem_no_team_can_finish_names_its_file_and_goal(tmp_path):
    target = tmp_path / 'lab'
    shutil.copytree(LAB, target)
    problem = target / 'problems' / 'spin_blood.pddl'
    problem.write_text(problem.read_text().replace(
        '(:goal (and (spun blood)))', '(:goal (and (sample-at blood bench)\n'
        '              (sample-at blood printer)))'))
    with pytest.raises(ConfigError) as caught:
        load_domain(str(target / 'domain.yaml'))
    assert str(caught.value) == (
        f'{problem}:{line_of(problem, "(:goal")}:3: task spin_blood cannot be reached even '
        'by a fully capable team: each goal atom can be reached on its own, but not all of '
        'them together')


def test_unknown_entries_and_missing_files_are_named(tmp_path):
    assert 'unknown entries' in bad(tmp_path, lambda s: s.update(capabilites=[]))
    with pytest.raises(ConfigError, match='cannot read domain file'):
        load_domain(str(tmp_path / 'absent' / 'domain.yaml'))
    with pytest.raises(ConfigError, match='unknown domain'):
        load_domain('kitchen_of_dreams')


def test_the_cli_reports_a_bad_domain_file_without_a_traceback(tmp_path, capsys):
    path = copy_example(tmp_path, lambda s: s['capabilities'][0].update(action='teleport'))
    assert cecm_main(['capabilities', '--domain', str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('cecm: error:') and 'teleport' in err and 'Traceback' not in err
    assert cecm_main(['plan', '--domain', str(path), '--household', 'x.yaml']) == 2
    assert 'Traceback' not in capsys.readouterr().err


def test_a_task_outside_the_domain_is_refused(workshop):
    with pytest.raises(ConfigError, match='garage'):
        workshop.validate_task(Task('t', frozenset({'(agent-at robot garage)'}),
                                    frozenset({'(assembled bolt)'})))


def test_the_example_runs_an_experiment(tmp_path, capsys):
    out = tmp_path / 'out'
    assert cecm_main(['experiment', '--domain', str(EXAMPLE / 'domain.yaml'), '--partner',
                      'apprentice', '--runs', '1', '--tasks', '2', '--samples', '40',
                      '--heldout', '4', '--jobs', '2', '--quiet', '--out', str(out)]) == 0
    capsys.readouterr()
    summary = yaml.safe_load((out / 'summary.json').read_text())
    assert summary['domain'].startswith('workshop')
    assert len(summary['capabilities']) == 11
    assert np.isfinite(summary['per_task'][-1]['hamming']['mean'])


def test_a_domain_given_by_a_relative_path_plans_in_worker_processes(monkeypatch):
    # Planning worker processes run in directories of their own: they must find the
    # domain file all the same (the reference planner plans only in workers).
    monkeypatch.chdir(EXAMPLE.parents[2])
    domain = load_domain('config/domains/workshop/domain.yaml')
    task = domain.task_generator(4).next_task()
    with planner_for(domain, 'reference') as planner:
        plan = planner.plan(task, domain.catalog.resolve('seated'))
    assert domain.goal_reached(task, plan.trajectory[-1])


COSTLESS_PDDL = '''(define (domain courier)
  (:requirements :strips :typing)
  (:types person spot parcel)
  (:predicates (at ?who - person ?s - spot) (parcel-at ?p - parcel ?s - spot)
               (carries ?who - person ?p - parcel) (free ?who - person)
               (road ?a ?b - spot))
  (:action drive :parameters (?who - person ?a - spot ?b - spot)
    :precondition (and (at ?who ?a) (road ?a ?b))
    :effect (and (not (at ?who ?a)) (at ?who ?b)))
  (:action load :parameters (?who - person ?p - parcel ?s - spot)
    :precondition (and (at ?who ?s) (parcel-at ?p ?s) (free ?who))
    :effect (and (not (parcel-at ?p ?s)) (not (free ?who)) (carries ?who ?p)))
  (:action unload :parameters (?who - person ?p - parcel ?s - spot)
    :precondition (and (at ?who ?s) (carries ?who ?p))
    :effect (and (parcel-at ?p ?s) (free ?who) (not (carries ?who ?p)))))
'''
COSTLESS_PROBLEM = '''(define (problem far) (:domain courier)
  (:objects van rider - person depot town farm - spot box - parcel)
  (:init (at van depot) (at rider depot) (free van) (free rider) (parcel-at box depot)
         (road depot town) (road town depot) (road town farm) (road farm town))
  (:goal (and (parcel-at box farm))))
'''


def test_a_domain_without_costs_plans_the_fewest_actions(tmp_path):
    """A domain of someone else's, written as docs/domains.md says: no action costs,
    tasks from a problem file, a capability on one value of an argument."""
    (tmp_path / 'courier.pddl').write_text(COSTLESS_PDDL)
    (tmp_path / 'far.pddl').write_text(COSTLESS_PROBLEM)
    (tmp_path / 'domain.yaml').write_text(yaml.safe_dump({
        'name': 'courier', 'pddl': 'courier.pddl',
        'agents': {'robot': 'van', 'partner': 'rider'},
        'objects': {'person': ['van', 'rider'], 'spot': ['depot', 'town', 'farm'],
                    'parcel': ['box']},
        'static': ['(road depot town)', '(road town depot)', '(road town farm)',
                   '(road farm town)'],
        'capabilities': [
            {'name': 'reach_farm', 'action': 'drive', 'arguments': {'b': 'farm'}},
            {'name': 'lift', 'action': 'load'}],
        'partner_types': {'townie': {'missing': ['reach_farm']}},
        'tasks': {'problems': ['far.pddl']}}))
    domain = load_domain(str(tmp_path / 'domain.yaml'))
    task = domain.task_generator(0).next_task()
    with planner_for(domain) as planner:
        full = planner.plan(task, domain.catalog.all_capable())
        townie = planner.plan(task, domain.catalog.resolve('townie'))
    assert len(full.sequential) == 4 and full.cost == 4   # load, drive, drive, unload
    assert not any('farm' in a for a in townie.actions_of(HUMAN))
    assert domain.goal_reached(task, townie.trajectory[-1])


def test_another_package_adds_a_domain_by_entry_point(tmp_path, monkeypatch):
    """A separate installed distribution declares a domain in the group
    ``cecm_ros.domains``; cecm_ros finds it by name without being edited."""
    package = tmp_path / 'toy_cell'
    package.mkdir()
    (package / '__init__.py').write_text(
        'from pathlib import Path\n'
        'from cecm_ros.domains.pddl.file_domain import FileDomain\n'
        f'WORKSHOP = Path({str(EXAMPLE / "domain.yaml")!r})\n'
        'def make_domain(**options):\n'
        '    return FileDomain(WORKSHOP)\n'
        'def not_a_domain(**options):\n'
        '    return 42\n')
    info = tmp_path / 'toy_cell-1.0.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: toy-cell\nVersion: 1.0\n')
    (info / 'entry_points.txt').write_text(
        '[cecm_ros.domains]\ntoy_cell = toy_cell:make_domain\n'
        'broken_cell = toy_cell:not_a_domain\nmissing_cell = toy_cell_gone:make\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {'toy_cell', 'broken_cell'} <= set(available_domains())
    assert load_domain('toy_cell').name == 'workshop'
    with pytest.raises(ConfigError, match="returned int, not a cecm_ros Domain"):
        load_domain('broken_cell')
    with pytest.raises(ConfigError, match="'missing_cell'.*cannot be loaded"):
        load_domain('missing_cell')


def test_a_planner_with_plan_sets_of_its_own_gives_them_to_ce_cm_div(workshop, monkeypatch):
    """A planner may make CE-CM-Div's plan sets itself (Planner.plan_sets); the evaluator
    then uses those instead of building its own."""
    from cecm_ros.core.hypotheses import DiversePlanEvaluator
    from cecm_ros.domains.pddl.planner import FastDownwardPlanner

    task = workshop.task_generator(5).next_task()
    lazy = workshop.catalog.resolve('apprentice')   # the robot then does more

    class TwoPlans(FastDownwardPlanner):
        asked = 0

        def plan_sets(self, task, vectors, size, diversity=0.35):
            TwoPlans.asked += 1
            return [[self.plan(task, vector), self.plan(task, vector & lazy)]
                    for vector in vectors]

    with TwoPlans(workshop) as planner:
        evaluator = DiversePlanEvaluator(planner, diversity=0.0)
        sets = evaluator.plan_sets(task, np.array([workshop.catalog.all_capable()]))
        full = planner.plan(task, workshop.catalog.all_capable())
        robot_only = planner.plan(task, lazy)
    assert TwoPlans.asked == 1
    assert [p.sequential for p in sets[0]] == [full.sequential, robot_only.sequential]
    # Without the optional K* (the plansets extra): sets built by the evaluator.
    import sys
    import warnings
    monkeypatch.setitem(sys.modules, 'kstar_planner', None)
    with planner_for(workshop) as planner, warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)   # said once (test_plan_sets.py)
        assert planner.plan_sets(task, np.array([lazy]), 5) is None
