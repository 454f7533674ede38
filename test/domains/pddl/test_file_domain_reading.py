"""A user's domain as first users write it: PDDL costs in every standard form, and every
entry of domain.yaml read strictly (a misspelling is an error naming the file, the entry
and the known keys, never a silent default)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from paths import REPO, line_of  # noqa: E402

from cecm_ros.core.domain import HUMAN
from cecm_ros.core.errors import ConfigError
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.pddl.costs import rewrite_costs
from cecm_ros.domains.pddl.file_domain import FileDomain

ROOT = REPO
LAB = ROOT / 'config' / 'domains' / 'lab'
WORKSHOP = ROOT / 'config' / 'domains' / 'workshop'


@pytest.fixture(scope='module')
def lab():
    return load_domain(str(LAB / 'domain.yaml'))


def copy_of(example: Path, tmp_path: Path, change=None, pddl_change=None,
            problem_change=None) -> Path:
    target = tmp_path / example.name
    shutil.copytree(example, target)
    spec = yaml.safe_load((target / 'domain.yaml').read_text())
    if change:
        change(spec)
    (target / 'domain.yaml').write_text(yaml.safe_dump(spec))
    if pddl_change:
        pddl = target / spec['pddl']
        pddl.write_text(pddl_change(pddl.read_text()))
    if problem_change:
        problem = target / 'problems' / 'spin_blood.pddl'
        problem.write_text(problem_change(problem.read_text()))
    return target / 'domain.yaml'


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        FileDomain(path)
    return str(caught.value)


def names_line(message: str, path: Path, token: str, last: bool = False) -> bool:
    """Whether ``message`` starts with ``path:line:column:`` at the line of ``token``."""
    return re.match(rf'{re.escape(str(path))}:{line_of(path, token, last)}:\d+: ',
                    message) is not None


# ------------------------------------------------------------------------- costs
ROUTES = '''(define (domain routes)
  (:requirements :strips :typing :action-costs)
  (:types person spot)
  (:predicates (at ?who - person ?s - spot) (road ?a ?b - spot) (highway ?a ?b - spot))
  (:functions (total-cost) - number {functions})
  (:action drive :parameters (?who - person ?a - spot ?b - spot)
    :precondition (and (at ?who ?a) (road ?a ?b))
    :effect (and (not (at ?who ?a)) (at ?who ?b) (increase (total-cost) {drive})))
  (:action speed :parameters (?who - person ?a - spot ?b - spot)
    :precondition (and (at ?who ?a) (highway ?a ?b))
    :effect (and (not (at ?who ?a)) (at ?who ?b) (increase (total-cost) {speed})))
  (:action wave :parameters (?who - person ?s - spot)
    :precondition (at ?who ?s)
    :effect (and (at ?who ?s))))
'''


def routes(tmp_path: Path, drive: str, speed: str, functions: str = '',
           costs: dict | None = None) -> FileDomain:
    """Two agents at home; the goal is the rider at the farm, by two roads (home-town,
    town-farm) or one highway (home-farm). What each costs decides the route."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / 'routes.pddl').write_text(ROUTES.format(drive=drive, speed=speed,
                                                        functions=functions))
    spec = {'pddl': 'routes.pddl', 'agents': {'robot': 'van', 'partner': 'rider'},
            'objects': {'person': ['van', 'rider'], 'spot': ['home', 'town', 'farm']},
            'static': ['(road home town)', '(road town farm)', '(highway home farm)'],
            'capabilities': [{'name': 'highway', 'action': 'speed'}],
            'tasks': {'generate': {'initial': ['(at van home)', '(at rider home)'],
                                   'goal': ['(at rider farm)']}}}
    if costs:
        spec['costs'] = costs
    (tmp_path / 'domain.yaml').write_text(yaml.safe_dump(spec))
    return FileDomain(tmp_path / 'domain.yaml')


def route_of(domain: FileDomain) -> tuple[str, ...]:
    task = domain.task_generator(0).next_task()
    with planner_for(domain) as planner:
        plan = planner.plan(task, domain.catalog.all_capable())
    return tuple(plan.actions_of(HUMAN)), plan.cost


def test_constant_costs_decide_the_plan(tmp_path):
    # Two roads at 1 each beat a highway at 5; a highway at 1 beats two roads at 1.
    assert route_of(routes(tmp_path / 'a', '1', '5')) == \
        (('(drive rider home town)', '(drive rider town farm)'), 2.0)
    assert route_of(routes(tmp_path / 'b', '1', '1')) == (('(speed rider home farm)',), 1.0)


def test_cost_functions_of_any_arity_and_costless_actions(tmp_path):
    # A nullary and a binary cost function, values from domain.yaml; `wave` has no cost
    # effect and costs 0, as PDDL says.
    domain = routes(tmp_path, '(road-cost ?a ?b)', '(highway-cost)',
                    '(road-cost ?a ?b - spot) (highway-cost)',
                    {'(road-cost home town)': 1, '(road-cost town farm)': 2,
                     '(highway-cost)': 4, 'default': 9})
    assert route_of(domain) == (('(drive rider home town)', '(drive rider town farm)'), 3.0)
    assert domain.action('(wave rider home)').cost == 0
    cheap = routes(tmp_path / 'cheap', '(road-cost ?a ?b)', '(highway-cost)',
                   '(road-cost ?a ?b - spot) (highway-cost)',
                   {'(highway-cost)': 2, 'default': 9})
    assert route_of(cheap) == (('(speed rider home farm)',), 2.0)


def test_a_domain_with_cost_functions_everywhere_is_not_rewritten():
    text = (WORKSHOP / 'workshop.pddl').read_text()
    assert rewrite_costs(text, WORKSHOP / 'workshop.pddl').text == text


def test_the_lab_example_plans_with_its_constant_costs(lab):
    constants = {'walk': 2, 'take': 1, 'put': 1, 'spin': 3, 'label': 2}
    task = lab.task_generator(0).next_task()
    with planner_for(lab) as planner:
        plan = planner.plan(task, lab.catalog.resolve('trainee'))
    assert plan.cost == sum(constants[lab.action(a).schema] for a in plan.sequential)
    assert not any(lab.action(a).schema in ('spin', 'label') for a in plan.actions_of(HUMAN))
    assert lab.goal_reached(task, plan.trajectory[-1])


@pytest.mark.parametrize('cost, words', [
    ('(* 2 (road-cost ?a ?b))', "unsupported cost (* 2 (road-cost ?a ?b))"),
    ('25', 'cost 25 must be a whole number from 0 to 20'),
    ('1.5', 'cost 1.5 must be a whole number'),
])
def test_a_cost_the_planner_cannot_take_names_the_pddl_file_and_the_action(
        tmp_path, cost, words):
    with pytest.raises(ConfigError) as caught:
        routes(tmp_path, cost, '1', '(road-cost ?a ?b - spot)', {'default': 1})
    message = str(caught.value)
    # Where the cost is written: the drive action's effect, line 8 of routes.pddl.
    assert re.match(rf"{re.escape(str(tmp_path / 'routes.pddl'))}:8:\d+: action 'drive': ",
                    message)
    assert words in message and 'domain.yaml' not in message


def test_a_bad_cost_value_names_the_file_once(tmp_path):
    message = refused(copy_of(WORKSHOP, tmp_path, lambda s: s['costs'].update(
        {'(move-cost robot)': 50})))
    assert message.count('domain.yaml') == 1
    assert 'costs: (move-cost robot) must be a whole number from 1 to 20, got 50' in message


def test_overlapping_capabilities_name_the_file_once(tmp_path):
    message = refused(copy_of(WORKSHOP, tmp_path, lambda s: s['capabilities'].append(
        {'name': 'move_anywhere', 'action': 'move'})))
    assert message.count('domain.yaml') == 1 and 'move_anywhere all gate' in message


# ------------------------------------------------------------- strict domain.yaml
def _set(path: str, value):
    def change(spec):
        *parents, last = path.split('.')
        node = spec
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return change


def _rename(path: str, old: str, new: str):
    def change(spec):
        node = spec
        for key in path.split('.'):
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[new] = node.pop(old)
    return change


@pytest.mark.parametrize('change, words, token', [
    (_rename('partner_types.trainee', 'missing', 'lacks'),
     "partner_types: trainee: unknown key 'lacks'; known: description, missing", 'lacks:'),
    (_rename('capabilities.0', 'arguments', 'argumnts'),
     "capabilities[1] (walk_centrifuge): unknown key 'argumnts'; known: name, action, "
     'arguments, fact, description', 'argumnts:'),
    (_set('tasks.problem', ['problems/spin_blood.pddl']),
     "tasks: unknown key 'problem'; known: problems, generate", 'problem:'),
    (_set('tasks.generate', {'initial': ['(free robot)'], 'goal': ['(spun blood)']}),
     'tasks: give either "problems" or "generate", not both', 'tasks:'),
    (_set('costs', {'(spinn-cost tech)': 3}),
     "costs: (spinn-cost tech): no cost function 'spinn-cost' in the PDDL domain; cost "
     'functions: none (its costs are numbers)', '(spinn-cost tech)'),
    (_set('static', ['(free robot)']),
     "static: (free robot): 'free' is changed by the actions put, take, so it is no "
     'static fact', '(free robot)'),
    (_set('static', ['(path fridge attic)']),
     "static: (path fridge attic): 'attic' is not an object of type 'station'",
     '(path fridge attic)'),
    (_set('static', ['(paths fridge bench)']),
     "static: (paths fridge bench): no predicate 'paths' in the PDDL domain",
     '(paths fridge bench)'),
    (_set('agents.partner', 'person'),
     "agents: partner: 'person' is not an object listed under objects; objects: ",
     'partner: person'),
    (_set('objects.samples', ['swab']),
     "objects: 'samples' is no type of the PDDL domain; types: agent, sample, station",
     'samples:'),
    (_set('objects.sample', ['blood', 'urine', 'tissue', 'tech']),
     'objects: tech listed more than once', '- tech'),
    (_set('schema_order', ['label', 'spinn', 'put']),
     "schema_order: 'spinn' is no action of the PDDL domain; actions: label, put, spin, "
     'take, walk', '- spinn'),
    (_set('static', ['(path fridge)']),
     "static: (path fridge): 'path' takes 2 arguments (?from - station ?to - station), "
     'got 1', '(path fridge)'),
    (_set('capabilities.1.name', 'walk_centrifuge'),
     "capabilities[2] (walk_centrifuge): capability 'walk_centrifuge' is named more than "
     'once', 'name: walk_centrifuge'),
], ids=['partner-type-key', 'capability-key', 'tasks-key', 'problems-and-generate',
        'cost-of-unknown-function', 'fluent-under-static', 'static-unknown-object',
        'static-unknown-predicate', 'agent-not-an-object', 'unknown-object-type',
        'object-twice', 'schema-order-unknown-action', 'static-wrong-arity',
        'capability-twice'])
def test_a_misreading_of_domain_yaml_is_refused(tmp_path, change, words, token):
    """Each mistake is named with the file, the line and the column where it is written
    (the file is written anew by the test: the line is looked up in it; where the token
    is written twice, the second is the mistake)."""
    path = copy_of(LAB, tmp_path, change)
    message = refused(path)
    assert names_line(message, path, token, last=token in ('- tech', 'name: walk_centrifuge')), \
        message
    assert words in message


def test_a_cost_for_an_unknown_function_or_object_is_refused(tmp_path):
    message = refused(copy_of(WORKSHOP, tmp_path, lambda s: s['costs'].update(
        {'(spinn-cost worker)': 3})))
    assert "no cost function 'spinn-cost'" in message and 'move-cost' in message
    message = refused(copy_of(WORKSHOP, tmp_path / 'b', lambda s: s['costs'].update(
        {'(move-cost wroker)': 3})))
    assert "(move-cost wroker): 'wroker' is not an object of type 'agent'" in message


@pytest.mark.parametrize('entry, words', [
    ({'one_of': ['(hand-free robot)'], 'for_eech': {'p': 'part'}},
     "initial[6]: unknown key 'for_eech'; known: fact, one_of, some_of, count, for_each"),
    ({'one_of': ['(hand-free robot)'], 'count': [1, 1]}, 'count goes with some_of'),
])
def test_a_misspelt_template_entry_is_refused(tmp_path, entry, words):
    path = copy_of(WORKSHOP, tmp_path,
                   lambda s: s['tasks']['generate']['initial'].append(entry))
    with pytest.raises(ConfigError, match='tasks: generate') as caught:
        FileDomain(path)
    assert words in str(caught.value)
    path = copy_of(WORKSHOP, tmp_path / 'b',
                   _set('tasks.generate.goals', ['(inspected bolt)']))
    assert "tasks: generate: unknown key 'goals'; known: initial, goal" in refused(path)


@pytest.mark.parametrize('problem_change, words, token', [
    (lambda t: t.replace('blood urine tissue - sample', 'blood urine tissue swab - sample'),
     'objects swab are not listed under objects in', 'swab'),
    (lambda t: t.replace('(= (total-cost) 0)', '(= (total-cost) 0) (= (total-cost) 4)'),
     '(= (total-cost) 4): costs are not read from problem files', '(= (total-cost) 4)'),
    (lambda t: t.replace('(has-printer printer)', ''),
     'the static facts differ from those under static in', '(:init'),
    (lambda t: t.replace('(has-printer printer)', '(has-printer bench)'),
     "(has-printer bench) is not under static in", '(has-printer bench)'),
    (lambda t: t.replace('(sample-at blood', '(sample-at blod'),
     'cannot read the PDDL problem', 'blod'),
], ids=['undeclared-object', 'cost-value', 'static-facts-missing', 'static-fact-extra',
        'unknown-object'])
def test_a_problem_file_that_disagrees_with_domain_yaml_is_refused(
        tmp_path, problem_change, words, token):
    path = copy_of(LAB, tmp_path, problem_change=problem_change)
    message = refused(path)
    problem = path.parent / 'problems' / 'spin_blood.pddl'
    assert names_line(message, problem, token), message
    assert words in message


def test_a_problem_file_without_static_facts_takes_those_of_domain_yaml(tmp_path, lab):
    static = yaml.safe_load((LAB / 'domain.yaml').read_text())['static']

    def strip(text):
        for fact in static:
            text = text.replace(fact, '')
        return text
    domain = FileDomain(copy_of(LAB, tmp_path, problem_change=strip))
    assert domain._problem_tasks == lab._problem_tasks


# -------------------------------------------------------------- evidence report
def test_the_evidence_report_names_every_capability_and_its_confounders():
    from types import SimpleNamespace

    from cecm_ros.core.evidence import describe_evidence, evidence_entries

    names = ['walk', 'take', 'spin', 'label', 'dance']
    row = SimpleNamespace(run=0, task_index=1, task_id='t', status='PAUU' + 'N',
                          truth='10011', confounded='spin:label label:spin+walk')
    baseline = SimpleNamespace(run=0, task_index=0, task_id='b', status='', truth='00000',
                               confounded='')
    assert evidence_entries(names, [baseline]) == []   # a baseline reports no statuses
    entry, = evidence_entries(names, [row])
    assert entry == {'run': 1, 'task': 2, 'task_id': 't', 'known_present': ['walk'],
                     'known_absent': ['take'],
                     'undecided': {'spin': ['label'], 'label': ['spin', 'walk']},
                     'never_exercised': ['dance'], 'inert': [], 'wrong': []}
    wrong = SimpleNamespace(**{**vars(row), 'truth': '01011'})
    assert evidence_entries(names, [wrong])[0]['wrong'] == ['walk', 'take']
    summary = {'capabilities': names, 'true_capabilities': 'take=0,spin=0',
               'evidence': evidence_entries(names, [row, wrong]),
               'per_task': [{'task': 1, 'hamming': {'mean': 0.4}},
                            {'task': 2, 'hamming': {'mean': 0.2}}]}
    text = '\n'.join(describe_evidence(summary))
    assert 'the partner lacks take, spin' in text
    assert 'undecided: spin with label; label with spin, walk' in text
    assert 'decided wrongly: walk (1/2 runs), take (1/2 runs)' in text
    assert 'Hamming 0.40 -> 0.20' in text


def test_an_experiment_on_the_lab_reports_its_evidence(tmp_path, capsys):
    from cecm_ros.cli.main import main as cecm_main

    out = tmp_path / 'out'
    assert cecm_main(['experiment', '--domain', str(LAB / 'domain.yaml'), '--partner',
                      'trainee', '--runs', '2', '--tasks', '2', '--samples', '60',
                      '--heldout', '5', '--jobs', '1', '--quiet', '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    summary = yaml.safe_load((out / 'summary.json').read_text())
    names = summary['capabilities']
    assert [(e['run'], e['task']) for e in summary['evidence']] == [(1, 1), (1, 2), (2, 1),
                                                                   (2, 2)]
    for entry in summary['evidence']:
        listed = [n for key in ('known_present', 'known_absent', 'never_exercised', 'inert')
                  for n in entry[key]] + list(entry['undecided'])
        assert sorted(listed) == sorted(names)
    assert 'evidence after task 2 (2 runs; the partner lacks spin, label):' in printed
    assert 'held-out agreement' in printed.split('evidence after task 2')[1]


def test_the_plan_table_keeps_long_actions_apart(lab):
    task = lab.task_generator(1).next_task()
    with planner_for(lab) as planner:
        plan = planner.plan(task, lab.catalog.all_capable())
    table = plan.format()
    for line, step in zip(table.splitlines()[1:], plan.steps):
        assert f'{step.robot}  ' in line   # never "(walk robot fridge centrifuge_room)noop"
    assert plan.format(width=10).splitlines()[1].split()[1:] == \
        [*plan.steps[0].robot.split(), *plan.steps[0].human.split()]


def test_the_demo_headline_leads_with_what_was_decided(tmp_path, capsys):
    from cecm_ros.tools.demo_graph import _report

    summary = {'true_capabilities': 'spin=0,label=0',
               'per_task': [{'hamming': {'mean': 0.3}, 'hamming_active': {'mean': 0.3},
                             'heldout_agreement': {'mean': 1.0},
                             'hamming_identifiable': {'mean': 0.0}}],
               'prior': {'hamming': 0.3, 'hamming_active': 0.3},
               'report': {'lines': ['known absent: spin'],
                          'status': {'walk': 'known_present', 'spin': 'known_absent',
                                     'label': 'undecided', 'take': 'known_absent'}}}
    (tmp_path / 'summary.json').write_text(json.dumps(summary))
    _report(tmp_path / 'summary.json')
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ('[cecm] learned in 1 tasks: 3 of 4 capabilities decided (1 wrongly: '
                     'take), 1 undecided; held-out agreement 1.00')


# ------------------------------------------------ one capability, several action schemas
def _fridge_and_centrifuge(spec):
    """The lab with one capability for the fridge (taking and putting there) and one for
    the centrifuge (walking into its room and spinning)."""
    kept = [c for c in spec['capabilities']
            if c['name'] not in ('take_fridge', 'put_fridge', 'walk_centrifuge', 'spin')]
    spec['capabilities'] = kept + [
        {'name': 'fridge', 'action': ['take', 'put'], 'arguments': {'?s': 'fridge'}},
        {'name': 'centrifuge', 'action': [
            {'action': 'walk', 'arguments': {'to': 'centrifuge_room'}}, 'spin']}]
    spec['partner_types'] = {'trainee': {'missing': ['centrifuge', 'label']},
                             'no_cold_room': {'missing': ['fridge']}}


def test_a_capability_may_gate_several_actions(tmp_path):
    domain = load_domain(str(copy_of(LAB, tmp_path, _fridge_and_centrifuge)))
    index = domain.catalog.index
    assert domain.action('(take tech blood fridge)').gate == index('fridge')
    assert domain.action('(put tech blood fridge)').gate == index('fridge')
    assert domain.action('(take tech blood bench)').gate == index('take_bench')
    assert domain.action('(walk tech hallway centrifuge_room)').gate == index('centrifuge')
    assert domain.action('(spin tech blood centrifuge_room)').gate == index('centrifuge')
    assert domain.action('(walk tech hallway printer)').gate == index('walk_printer')
    lacking = domain.catalog.resolve('no_cold_room')
    with planner_for(domain) as planner, planner_for(domain, 'reference') as reference:
        for task in domain.problem_tasks:
            plan = planner.plan(task, lacking)
            assert reference.plan(task, lacking).sequential == plan.sequential
            assert not any(domain.action(a).gate == index('fridge')
                           for a in plan.actions_of(HUMAN))


@pytest.mark.parametrize('entry, token, words', [
    ({'name': 'fridge', 'action': ['take', 'teleport'], 'arguments': {'s': 'fridge'}},
     '- teleport', "capability 'fridge' gates an unknown action 'teleport'; actions: label, "
     'put, spin, take, walk'),
    ({'name': 'fridge', 'action': [{'action': 'take', 'argumnts': {'s': 'fridge'}}]},
     'argumnts:', "capabilities[8] (fridge): action[1]: unknown key 'argumnts'; known: "
     'action, arguments'),
    ({'name': 'fridge', 'action': ['take', 'walk'], 'arguments': {'s': 'fridge'}},
     '  s: fridge', "capability 'fridge': action 'walk' has no argument 's'; arguments: a, "
     'from, to (each written with or without "?")'),
    ({'name': 'fridge', 'action': []}, 'action: []',
     'action: expected an action or a non-empty list of actions'),
], ids=['unknown-action-in-list', 'unknown-key-in-list', 'argument-one-action-lacks',
        'empty-list'])
def test_a_capability_over_several_actions_is_checked_entry_by_entry(tmp_path, entry, token,
                                                                     words):
    path = copy_of(LAB, tmp_path, lambda s: s['capabilities'].append(entry))
    message = refused(path)
    assert names_line(message, path, token, last=True), message   # the entry appended
    assert words in message


# --------------------------------------------------- every template checked at load
def with_entry(tmp_path: Path, part: str, entry) -> Path:
    """A copy of the workshop with one more entry, on a line of its own, at the end of
    the templates' ``initial`` or ``goal``."""
    target = tmp_path / 'workshop'
    shutil.copytree(WORKSHOP, target)
    lines = (target / 'domain.yaml').read_text().splitlines()
    text = yaml.safe_dump(entry, default_flow_style=True, width=1000).strip()
    if text.endswith('...'):      # a plain scalar's end-of-document marker
        text = text[:-3].strip()
    at = len(lines) if part == 'goal' else lines.index('    goal:')
    lines.insert(at, f'      - {text}')
    (target / 'domain.yaml').write_text('\n'.join(lines) + '\n')
    return target / 'domain.yaml'


@pytest.mark.parametrize('part, entry, words', [
    # Never drawn (count 0), refused all the same.
    ('goal', {'some_of': ['(inspected bolt)', '(inspected gear bench)'], 'count': [0, 0]},
     "goal[3]: (inspected gear bench): 'inspected' takes 1 argument (?p - part), got 2"),
    ('goal', {'one_of': ['(inspected bolt)', '(inspected bench)']},
     "goal[3]: (inspected bench): 'bench' is not an object of type 'part' (bolt, bracket, "
     'gear, panel)'),
    ('goal', {'one_of': ['(inspectd bolt)']},
     "goal[3]: (inspectd bolt): no predicate 'inspectd' in the PDDL domain; predicates: "
     'agent-at, assembled'),
    ('initial', '(connected shelf inspection)',
     "initial[6]: (connected shelf inspection) is a static fact (no action changes "
     "'connected'): it is the same in every task, so it goes under static"),
    ('initial', {'for_each': {'p': 'prt'}, 'one_of': ['(part-at {p} shelf)']},
     "initial[6]: for_each: 'prt' is no type of the PDDL domain; types: agent, part, "
     'station'),
    ('initial', {'for_each': {'p': 'part'}, 'one_of': ['(part-at {q} shelf)']},
     "initial[6]: '(part-at {q} shelf)' names 'q' that for_each does not bind"),
    ('goal', {'some_of': ['(inspected bolt)', '(inspected gear)'], 'count': [1, 3]},
     'goal[3]: count must be [low, high] within 0-2, got [1, 3]'),
    ('goal', {'one_of': ['(inspected bolt)'], 'some_of': ['(inspected gear)']},
     'goal[3]: an entry is a fact, one_of, some_of or fact (with for_each); it has one_of '
     'and some_of'),
], ids=['arity-never-drawn', 'type', 'predicate', 'static-fact', 'for-each-type',
        'unbound-name', 'count', 'two-kinds'])
def test_every_fact_a_template_can_draw_is_checked_at_load(tmp_path, part, entry, words):
    path = with_entry(tmp_path, part, entry)
    message = refused(path)
    line = len(path.read_text().splitlines()) if part == 'goal' else \
        path.read_text().splitlines().index('    goal:')
    assert re.match(rf'{re.escape(str(path))}:{line}:\d+: tasks: generate: ', message), \
        message
    assert words in message
