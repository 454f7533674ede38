"""The Overcooked domain: kitchens and A*, the macro actions' rules and self-loops, the
rewards, the cosine distance, and the MCTS planner's determinism and plan store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import deque
from pathlib import Path

import numpy as np
import pytest
import yaml
from paths import REPO  # noqa: E402

from cecm_ros.core.errors import ConfigError, UnknownNameError
from cecm_ros.core.plan_store import PlanStore
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.overcooked.kitchen import Kitchen
from cecm_ros.domains.overcooked.mcts import MctsSettings, search_plan
from cecm_ros.domains.overcooked.model import MACROS, OvercookedDomain

ROOT = REPO
CONFIG = ROOT / 'config' / 'domains' / 'overcooked'


@pytest.fixture(scope='module')
def domain() -> OvercookedDomain:
    return OvercookedDomain(CONFIG / 'domain.yaml')


def task_named(domain, task_id):
    return next(t for t in domain.tasks if t.task_id == task_id)


def state_of(domain, facts):
    return domain.state_from_wire(facts, [])


def reachable_states(domain, limit=4000):
    """States a fully capable team reaches from every task's start (breadth first)."""
    seen, queue = [], deque(domain.initial_state(t) for t in domain.tasks)
    known = set(queue)
    while queue and len(seen) < limit:
        state = queue.popleft()
        seen.append(state)
        for agent in (0, 1):
            for macro in MACROS:
                after = domain.act(state, agent, macro)[0]
                if after not in known:
                    known.add(after)
                    queue.append(after)
    return seen


# ------------------------------------------------------------------ kitchens
def test_three_kitchens_three_recipes_nine_tasks(domain):
    assert sorted(domain.kitchens) == ['A', 'B', 'C']
    assert len(domain.tasks) == 9
    assert len({t.task_id for t in domain.tasks}) == 9
    assert domain.catalog.names == ('handle_lettuce', 'handle_onion', 'handle_tomato',
                                    'handle_plate_1', 'handle_plate_2', 'handle_knife_1',
                                    'handle_knife_2', 'deliver', 'chop', 'out_of_the_way')
    assert domain.catalog.format_vector(domain.catalog.resolve('type_2')) == \
        'deliver=0,chop=0'


def test_astar_walks_the_shortest_way_round_the_other_agent(domain):
    kitchen = domain.kitchens['A']
    robot = kitchen.cell(1, 2)
    lettuce = kitchen.objects['lettuce']          # (1, 6): worked from (1, 5)
    assert kitchen.walk(robot, lettuce, blocked=-1) == (kitchen.cell(1, 5), 3)
    # The partner on (1, 4) is in the way: round it through row 2.
    assert kitchen.walk(robot, lettuce, blocked=kitchen.cell(1, 4)) == (kitchen.cell(1, 5), 5)
    # Kitchen B's wall: the robot's side has no way to the vegetables.
    wall = domain.kitchens['B']
    assert wall.walk(wall.cell(1, 2), wall.objects['lettuce'], blocked=-1) is None


def test_a_kitchen_with_an_unreachable_object_is_refused(tmp_path):
    grid = [[1, 1, 1, 1, 1, 3, 1],
            [6, 0, 2, 0, 2, 0, 4],
            [6, 0, 0, 0, 0, 0, 8],
            [1, 1, 0, 0, 0, 0, 1],
            [7, 1, 0, 0, 0, 0, 1],     # the delivery counter walled in
            [1, 1, 0, 0, 0, 0, 5],
            [1, 1, 1, 1, 1, 5, 1]]
    with pytest.raises(ConfigError, match='no agent has a path to delivery'):
        Kitchen.from_dict({'name': 'X', 'grid': grid, 'park': [3, 3]}, 'x.yaml')


@pytest.mark.parametrize('change, message', [
    ({'grid': [[1, 9]]}, 'code 9'),
    ({'starts': {'robot': 0}}, 'starts'),
    ({'park': [0, 0]}, 'not a floor cell'),
    ({'colour': 'red'}, 'unknown keys'),
])
def test_malformed_kitchens_are_named(change, message):
    data = yaml.safe_load((CONFIG / 'kitchens' / 'a.yaml').read_text())
    data.update(change)
    with pytest.raises(ConfigError, match=message):
        Kitchen.from_dict(data, 'bad.yaml')


def _domain_file(tmp_path, **changes):
    data = yaml.safe_load((CONFIG / 'domain.yaml').read_text())
    data['kitchens'] = [str(CONFIG / k) for k in data['kitchens']]
    data.update(changes)
    path = tmp_path / 'domain.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_recipe_with_an_unknown_vegetable_is_refused(tmp_path):
    path = _domain_file(tmp_path, recipes={'soup': ['lettuce', 'potato']})
    with pytest.raises(ConfigError, match="unknown vegetable 'potato'"):
        OvercookedDomain(path)


@pytest.mark.parametrize('change, message', [
    ({'max_steps': 'abc'}, 'max_steps must be a whole number'),
    ({'rewards': {'step': 'x'}}, 'rewards maps'),
    ({'partner_types': ['a']}, 'partner_types maps'),
    ({'partner_types': {'a': {'missing': 'chop'}}}, '"missing" a list'),
    ({'partner_types': {'a': {'missing': ['juggling']}}}, "unknown capability 'juggling'"),
    ({'recipes': {'tomato-lettuce': ['tomato']}}, 'letters, digits'),
])
def test_malformed_domain_files_are_named(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message) as raised:
        OvercookedDomain(_domain_file(tmp_path, **change))
    assert 'domain.yaml' in str(raised.value)


@pytest.mark.parametrize('change, message', [
    ({'starts': {'robot': 0, 'partner': 'x'}}, 'starts'),
    ({'middle': 5}, '"middle" is a list'),
    ({'name': 'my kitchen'}, 'letters, digits'),
])
def test_malformed_kitchen_values_are_named(change, message):
    data = yaml.safe_load((CONFIG / 'kitchens' / 'b.yaml').read_text())
    data.update(change)
    with pytest.raises(ConfigError, match=message):
        Kitchen.from_dict(data, 'bad.yaml')


def test_a_capability_gating_an_unknown_macro_is_refused(tmp_path):
    data = yaml.safe_load((CONFIG / 'domain.yaml').read_text())
    capabilities = data['capabilities']
    capabilities[0] = dict(capabilities[0], action='juggle')
    with pytest.raises(ConfigError, match="unknown macro action 'juggle'"):
        OvercookedDomain(_domain_file(tmp_path, capabilities=capabilities))


def test_unknown_actions_are_named(domain):
    state = domain.initial_state(domain.tasks[0])
    with pytest.raises(UnknownNameError, match='unknown action'):
        domain.transition(state, 'human', '(juggle partner)', domain.catalog.all_capable())
    with pytest.raises(UnknownNameError, match='not an action of the robot'):
        domain.transition(state, 'robot', '(chop partner)', domain.catalog.all_capable())
    with pytest.raises(UnknownNameError):
        domain.canonical_action('get_lettuce')


def test_the_registry_finds_overcooked():
    assert isinstance(load_domain('overcooked'), OvercookedDomain)
    with pytest.raises(ConfigError, match='takes no option'):
        load_domain('overcooked', household='x.yaml')


# ------------------------------------------------------------------- rules
@pytest.mark.parametrize('capability', range(10))
def test_each_missing_capability_turns_its_action_into_a_self_loop(domain, capability):
    macro = domain.catalog.capabilities[capability].action
    serving = state_of(domain, [
        '(kitchen A)', '(recipe lettuce_onion)', '(at robot 1 1)', '(at partner 3 3)',
        '(holds partner plate_1)', '(on lettuce plate_1)', '(on onion plate_1)',
        '(chopped lettuce 3)', '(chopped onion 3)', '(at tomato 0 5)', '(at plate_2 6 5)'])
    state = next(s for s in [serving] + reachable_states(domain)
                 if domain.act(s, 1, macro)[0] != s)
    action = domain.action_text(macro, 1)
    capable = domain.catalog.all_capable()
    after, outcome = domain.transition(state, 'human', action, capable)
    assert after != state and outcome.changed
    lacking = capable.copy()
    lacking[capability] = False
    after, outcome = domain.transition(state, 'human', action, lacking)
    assert after == state and outcome.self_loop
    assert domain.catalog.names[capability] in outcome.reason
    assert not domain.partner_capable(action, lacking)
    # The robot is always capable.
    assert domain.partner_capable(domain.action_text(macro, 0), lacking)


def test_rewards_chop_dish_and_wrong_dish(domain):
    board = ['(kitchen A)', '(recipe lettuce_onion)', '(at robot 1 1)', '(at partner 3 3)',
             '(at lettuce 1 0)', '(at onion 2 6)', '(at tomato 0 5)', '(at plate_1 5 6)',
             '(at plate_2 6 5)']
    after, ticks, bonus = domain.act(state_of(domain, board), 0, 'chop')
    assert (ticks, bonus) == (3, 0.5)
    assert '(chopped lettuce 3)' in domain.state_facts(after)
    tomato = [f.replace('(at tomato 0 5)', '(at tomato 1 0)').replace(
        '(at lettuce 1 0)', '(at lettuce 1 6)') for f in board]
    assert domain.act(state_of(domain, tomato), 0, 'chop')[2] == 0.0   # not in the recipe
    served = ['(kitchen A)', '(recipe lettuce_onion)', '(at robot 3 1)', '(at partner 3 3)',
              '(holds robot plate_1)', '(on lettuce plate_1)', '(on onion plate_1)',
              '(chopped lettuce 3)', '(chopped onion 3)', '(at tomato 0 5)',
              '(at plate_2 6 5)']
    state = state_of(domain, served)
    after, ticks, bonus = domain.act(state, 0, 'deliver')
    task = task_named(domain, 'A-lettuce_onion')
    assert bonus == 1.0 and domain.goal_reached(task, after)
    wrong = [f for f in served if f != '(on onion plate_1)'] + ['(at onion 2 6)']
    after, _, bonus = domain.act(state_of(domain, wrong), 0, 'deliver')
    assert bonus == -1.0 and not after[-1]
    assert '(holds robot plate_1)' in domain.state_facts(after)   # the dish was refused


def test_a_state_text_out_of_range_is_refused(domain):
    good = domain.state_to_text(domain.initial_state(domain.tasks[0])).split()
    for position, value in ((4, '150'), (12, '7'), (0, 'Z')):
        bad = list(good)
        bad[position] = value
        with pytest.raises(ConfigError):
            domain.state_from_text(' '.join(bad))


def test_a_partner_chop_and_a_put_down_are_proven_used(domain):
    board = state_of(domain, [
        '(kitchen A)', '(recipe lettuce_onion)', '(at robot 4 4)', '(at partner 1 1)',
        '(at lettuce 1 0)', '(at onion 2 6)', '(at tomato 0 5)', '(at plate_1 5 6)',
        '(at plate_2 6 5)'])
    chopped = domain.act(board, 1, 'chop')[0]
    used = domain.exercised_capabilities([board, chopped])
    assert [domain.catalog.names[i] for i in np.flatnonzero(used)] == ['chop']
    holding = state_of(domain, [
        '(kitchen A)', '(recipe lettuce_onion)', '(at robot 4 4)', '(at partner 3 3)',
        '(holds partner onion)', '(at lettuce 1 6)', '(at tomato 0 5)', '(at plate_1 5 6)',
        '(at plate_2 6 5)'])
    down = domain.act(holding, 1, 'out_of_the_way')[0]
    assert domain.catalog.names[int(np.flatnonzero(
        domain.exercised_capabilities([holding, down]))[0])] == 'out_of_the_way'


def test_states_round_trip_through_facts_and_text(domain):
    for state in reachable_states(domain, limit=500):
        assert domain.state_from_wire(domain.state_facts(state), []) == state
        assert domain.state_from_text(domain.state_to_text(state)) == state
        assert len(domain.state_features(state)) == 26


@pytest.mark.parametrize('facts, message', [
    (['(kitchen Z)'], 'unknown or missing kitchen'),
    (['(kitchen A)', '(recipe lettuce_onion)', '(at robot 0 0)'], 'agents stand on the floor'),
    (['(kitchen A)', '(recipe lettuce_onion)', '(hold robot plate_1)'], 'unknown fact'),
    (['(kitchen A)', '(kitchen B)'], 'more than one kitchen'),
    (['(kitchen A)', '(recipe lettuce_onion)', '(served tomato_lettuce)'],
     'but the recipe is lettuce_onion'),
    (['(kitchen A)', '(recipe lettuce_onion)', '(at lettuce 0 5)', '(holds robot lettuce)'],
     'placed twice'),
    (['(kitchen A)', '(recipe lettuce_onion)', '(at plate_1 1 0)'], 'only a vegetable'),
])
def test_malformed_states_are_named(domain, facts, message):
    with pytest.raises(ConfigError, match=message):
        domain.state_from_wire(facts, [])


# ---------------------------------------------------------------- distance
def test_cosine_distance_and_its_padding_rule(domain):
    plan = search_plan(domain, task_named(domain, 'A-lettuce_onion'),
                       domain.catalog.all_capable(), MctsSettings())
    trajectory = plan.trajectory
    assert domain.distance(trajectory, trajectory) == pytest.approx(0.0, abs=1e-12)
    # A trajectory that stays where it ended compares as if padded with its last state.
    assert domain.distance(trajectory, trajectory + (trajectory[-1],) * 3) == \
        pytest.approx(0.0, abs=1e-12)
    other = search_plan(domain, task_named(domain, 'A-lettuce_onion'),
                        domain.catalog.resolve('type_1'), MctsSettings()).trajectory
    d = domain.distance(trajectory, other)
    assert 0.0 < d <= 1.0
    assert d == pytest.approx(domain.distance(other, trajectory))
    assert domain.default_epsilon == 0.03


# -------------------------------------------------------------------- MCTS
def test_mcts_serves_a_kitchen_a_salad_with_a_capable_partner(domain):
    plan = search_plan(domain, task_named(domain, 'A-lettuce_onion'),
                       domain.catalog.all_capable(), MctsSettings())
    assert domain.goal_reached(task_named(domain, 'A-lettuce_onion'), plan.trajectory[-1])
    assert len(plan.trajectory) == len(plan.steps) + 1
    assert all(not (s.robot == 'noop' and s.human == 'noop') for s in plan.steps)


def test_mcts_never_plans_a_partner_action_it_lacks(domain):
    for name in ('type_1', 'type_2', 'type_3'):
        vector = domain.catalog.resolve(name)
        for task in domain.tasks[:3]:
            plan = search_plan(domain, task, vector, MctsSettings())
            assert all(domain.partner_capable(s.human, vector) for s in plan.steps
                       if s.human != 'noop')
            used = domain.exercised_capabilities(plan.trajectory)
            assert not (used & ~vector).any()


def test_mcts_is_deterministic_per_seed_in_any_process(domain):
    task = task_named(domain, 'C-tomato_lettuce')
    vector = domain.catalog.resolve('type_3')
    first = search_plan(domain, task, vector, MctsSettings(seed=7))
    again = search_plan(OvercookedDomain(CONFIG / 'domain.yaml'), task, vector,
                        MctsSettings(seed=7))
    assert again.steps == first.steps and again.trajectory == first.trajectory
    script = textwrap.dedent(f'''
        from cecm_ros.domains.overcooked.model import OvercookedDomain
        from cecm_ros.domains.overcooked.mcts import MctsSettings, search_plan
        d = OvercookedDomain({str(CONFIG / 'domain.yaml')!r})
        task = next(t for t in d.tasks if t.task_id == 'C-tomato_lettuce')
        plan = search_plan(d, task, d.catalog.resolve('type_3'), MctsSettings(seed=7))
        print('|'.join(d.state_to_text(s) for s in plan.trajectory))
    ''')
    output = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            check=True, env={'PYTHONHASHSEED': '123',
                                             'PATH': '/usr/bin:/bin'}).stdout.strip()
    assert output == '|'.join(domain.state_to_text(s) for s in first.trajectory)


def test_search_processes_end_with_a_parent_that_was_killed(tmp_path):
    """A parent killed outright (no pool shutdown) leaves no search process behind."""
    script = textwrap.dedent(f'''
        import numpy as np
        from cecm_ros.domains import planner_for
        from cecm_ros.domains.overcooked.model import OvercookedDomain
        d = OvercookedDomain({str(CONFIG / 'domain.yaml')!r})
        planner = planner_for(d, workers=2, plan_cache=False, simulations=5000)
        task = d.tasks[0]
        vectors = np.random.default_rng(0).random((8, len(d.catalog))) < 0.5
        import threading, time
        threading.Thread(target=planner.plan_many, args=(task, vectors), daemon=True).start()
        while planner._pool is None or len(planner._pool._processes or ()) < 2:
            time.sleep(0.1)
        print(' '.join(str(p) for p in planner._pool._processes), flush=True)
        time.sleep(600)
    ''')
    parent = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, text=True)
    try:
        children = [int(pid) for pid in parent.stdout.readline().split()]
    finally:
        parent.kill()
        parent.wait()
    assert len(children) == 2
    deadline = time.monotonic() + 60
    alive = children
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = [pid for pid in children if Path(f'/proc/{pid}').exists()
                 and 'Z' not in Path(f'/proc/{pid}/stat').read_text().split()[2]]
    assert not alive, f'search processes {alive} outlived their parent'


def test_bad_planner_settings_are_named(domain):
    with pytest.raises(ConfigError, match='simulations'):
        planner_for(domain, simulations=0, plan_cache=False)
    with pytest.raises(ConfigError, match='prior'):
        planner_for(domain, prior='clairvoyant', plan_cache=False)
    with pytest.raises(ConfigError, match='overcooked planner'):
        planner_for(domain, temperatur=1.0, plan_cache=False)


def test_vectors_equal_on_what_a_task_uses_share_a_plan(domain):
    task = task_named(domain, 'A-lettuce_onion')     # no tomato in this recipe
    with planner_for(domain, plan_cache=False) as planner:
        with_tomato = domain.catalog.all_capable()
        without = with_tomato.copy()
        without[domain.catalog.index('handle_tomato')] = False
        planner.plan_many(task, [with_tomato, without])
        assert planner.calls == 1


def test_plans_outlive_the_process_in_the_plan_store(domain, tmp_path):
    path = tmp_path / 'plans.sqlite'
    task = task_named(domain, 'A-tomato_lettuce')
    vectors = [domain.catalog.resolve(name) for name in ('type_1', 'type_2', 'full')]
    with planner_for(domain, plan_cache=str(path)) as first:
        made = first.plan_many(task, vectors)
        assert first.calls == 3
    with planner_for(domain, plan_cache=str(path)) as second:
        loaded = second.plan_many(task, vectors)
        assert second.calls == 0 and second.store_hits == 3
    assert [p.steps for p in made] == [p.steps for p in loaded]
    assert [p.trajectory for p in made] == [p.trajectory for p in loaded]
    # Other settings are another scope: nothing is reused across them.
    with planner_for(domain, plan_cache=str(path), seed=1) as third:
        third.plan(task, vectors[0])
        assert third.calls == 1


def test_a_corrupt_plan_store_is_set_aside_with_a_warning(tmp_path):
    path = tmp_path / 'plans.sqlite'
    path.write_bytes(b'this is not a database' * 100)
    with pytest.warns(RuntimeWarning, match='moved aside'):
        store = PlanStore(path)
    assert store.info()['plans'] == 0
    assert list(tmp_path.glob('plans.sqlite.bad-*'))


def test_a_run_holds_out_the_tasks_it_does_not_learn_on(domain):
    from cecm_ros.experiments.experiment import split_tasks

    learning, heldout = split_tasks(domain, seed=3, count=5)
    assert len(learning) == 5 and len(heldout) == 4
    assert {t.task_id for t in learning} | {t.task_id for t in heldout} == \
        {t.task_id for t in domain.tasks}
    assert split_tasks(domain, seed=3, count=5) == (learning, heldout)
    assert split_tasks(domain, seed=4, count=5) != (learning, heldout)
    assert np.all(domain.relevant_mask(task_named(domain, 'A-lettuce_onion')) ==
                  [True, True, False] + [True] * 7)


# ---------------------------------------------------------------- commands
def test_cecm_experiment_runs_overcooked_and_holds_out_tasks(tmp_path, capsys):
    import csv

    from cecm_ros.cli.main import main as cecm_main

    out = tmp_path / 'experiment'
    assert cecm_main(['experiment', '--domain', 'overcooked', '--partner', 'type_2',
                      '--inference', 'paper', '--samples', '8', '--runs', '1', '--tasks',
                      '2', '--heldout', '0', '--jobs', '1', '--quiet', '--out',
                      str(out)]) == 0
    capsys.readouterr()
    with open(out / 'runs.csv', newline='') as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2
    for row in rows:
        assert 0.0 <= float(row['heldout_feasible']) <= 1.0
        assert row['truth'] == '1111111001'


def test_cecm_cache_info_and_clear(tmp_path, capsys, monkeypatch):
    from cecm_ros.cli.main import main as cecm_main

    monkeypatch.setenv('CECM_CACHE_DIR', str(tmp_path))
    assert cecm_main(['cache', 'info']) == 0
    assert 'no plan store' in capsys.readouterr().out
    domain = OvercookedDomain(CONFIG / 'domain.yaml')
    with planner_for(domain) as planner:
        planner.plan(task_named(domain, 'A-lettuce_onion'), domain.catalog.all_capable())
    assert cecm_main(['cache', 'info']) == 0
    assert 'plans: 1\n' in capsys.readouterr().out
    assert cecm_main(['cache', 'clear']) == 0
    assert 'removed 1 plans' in capsys.readouterr().out


def test_an_independent_partner_searches_with_a_seed_of_its_own(domain, tmp_path):
    from cecm_ros.experiments.experiment import ExperimentSettings

    task = task_named(domain, 'C-lettuce_onion')
    vector = domain.catalog.resolve('type_2')
    with planner_for(domain, plan_cache=str(tmp_path / 'plans.sqlite')) as planner:
        twin = planner.with_seed(11)
        assert twin.settings.seed == 11 and planner.settings.seed == 0
        first = twin.plan(task, vector)
        assert twin.calls == 1
        again = planner.with_seed(11)
        assert again.plan(task, vector).steps == first.steps
        assert again.calls == 0 and again.store_hits == 1   # kept in the shared store
    with pytest.raises(ConfigError, match='partner_search'):
        ExperimentSettings(partner_search='telepathic')


def test_a_plan_store_that_cannot_be_opened_leaves_the_planner_without_one(domain, tmp_path):
    folder = tmp_path / 'plans.sqlite'
    folder.mkdir()
    with pytest.warns(RuntimeWarning, match='is a directory'):
        planner = planner_for(domain, plan_cache=str(folder))
    with planner:
        assert planner.store is None
        planner.plan(task_named(domain, 'A-lettuce_onion'), domain.catalog.all_capable())
    assert folder.is_dir() and not list(tmp_path.glob('*.bad-*'))


def _open_store(path):
    PlanStore(path).close()


def test_processes_opening_a_new_store_at_once_keep_it(tmp_path):
    import multiprocessing

    for round_ in range(3):
        path = tmp_path / f'plans-{round_}.sqlite'
        context = multiprocessing.get_context('spawn')
        workers = [context.Process(target=_open_store, args=(str(path),)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
    assert not list(tmp_path.glob('*.bad-*'))


def test_cecm_cache_info_leaves_a_foreign_file_alone(tmp_path, capsys):
    from cecm_ros.cli.main import main as cecm_main

    foreign = tmp_path / 'notes.sqlite'
    foreign.write_text('my notes')
    assert cecm_main(['cache', 'info', '--path', str(foreign)]) == 2
    assert 'not a plan store' in capsys.readouterr().err
    assert foreign.read_text() == 'my notes'
