"""CE-CM-Div's plan sets made by the planners themselves: DiverseMCTS in Overcooked (the
set rules, the completion of tree paths, determinism, the store) and top-k plans for a
PDDL domain through the optional `plansets` extra (and what happens without it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from paths import REPO  # noqa: E402

from cecm_ros.core.hypotheses import DiversePlanEvaluator
from cecm_ros.domains.overcooked import diverse
from cecm_ros.domains.overcooked.diverse import (
    SetRules,
    candidate_paths,
    complete,
    novelty,
    select,
    tree_paths,
)
from cecm_ros.domains.overcooked.mcts import MctsPlanner, MctsSettings, search_plan
from cecm_ros.domains.overcooked.model import DONE, OvercookedDomain

ROOT = REPO
CONFIG = ROOT / 'config' / 'domains' / 'overcooked'
# Small and fast: a 6-step plan whose tree has some 60 paths.
TASK = 'A-lettuce_onion'


@pytest.fixture(scope='module')
def domain() -> OvercookedDomain:
    return OvercookedDomain(CONFIG / 'domain.yaml')


def task_named(domain, task_id):
    return next(t for t in domain.tasks if t.task_id == task_id)


def tree_of(domain, task, vector):
    tree: list = []
    plan = search_plan(domain, task, vector, MctsSettings(), tree)
    return plan, tree


# ------------------------------------------------------------- the set rules
def test_select_keeps_own_plan_first_and_compares_with_kept_plans_only():
    own = ([], ['a', 'b', 'c', 'd'])
    candidates = [
        (['x'], ['a', 'b', 'c', 'e']),        # 1/4 new: below 0.35
        (['y'], ['a', 'b', 'e', 'f']),        # 2/4 new against the own plan: kept
        (['z'], ['a', 'b', 'e', 'g']),        # 1/4 new against y (kept), 2/4 against own
        (['w'], ['h', 'i', 'j', 'k']),        # all new
    ]
    kept = select(own, candidates, SetRules(size=50, diversity=0.35))
    assert [actions for actions, _ in kept] == [[], ['y'], ['w']]
    # The candidate that only the dropped 'x' resembles is no reason to drop anything:
    # the printed algorithm's min over a set holding the path itself would keep none.
    assert len(select(own, candidates, SetRules(size=2, diversity=0.35))) == 2
    assert select(own, candidates, SetRules(size=1, diversity=0.0)) == [own]


def test_diverse_mcts_sets_follow_the_rules(domain):
    task = task_named(domain, TASK)
    planner = MctsPlanner(domain, plan_cache=False)
    vectors = [domain.catalog.all_capable(), domain.catalog.partner_vector('type_1')]
    for size, delta in ((50, 0.35), (4, 0.1)):
        for vector, plans in zip(vectors, planner.plan_sets(task, vectors, size, delta)):
            own = planner.plan(task, vector)
            assert plans[0].steps == own.steps and plans[0].trajectory == own.trajectory
            assert 1 < len(plans) <= size
            for index in range(1, len(plans)):
                assert min(novelty(plans[index].trajectory, plans[before].trajectory)
                           for before in range(index)) >= delta
                assert plans[index].trajectory[-1][DONE]
                # Every plan is the partner's: no capability the vector lacks.
                assert all(vector[g] for g in plans[index].human_capabilities_used)
    # With k = 4 and delta = 0.1 the tree has more than enough paths: k binds.
    assert len(planner.plan_sets(task, vectors[:1], 4, 0.1)[0]) == 4


def test_l_min_leaves_out_short_tree_paths(domain):
    task = task_named(domain, TASK)
    plan, (search, root, chosen) = tree_of(domain, task, domain.catalog.all_capable())
    lengths = sorted(len(indices) for indices, _ in tree_paths(root))
    middle = lengths[len(lengths) // 2]
    candidates, counts = candidate_paths(search, root, domain, middle)
    assert counts['short'] == sum(1 for n in lengths if n < middle) > 0
    assert len(candidates) == counts['paths'] - counts['short'] - counts['unfinished']
    # Sorted by descending tree length: the completed trajectories keep their tree prefix.
    assert len(candidates) > 1
    # L_min above the deepest path: only the own plan is left.
    planner = MctsPlanner(domain, plan_cache=False)
    planner.set_min_length = lengths[-1] + 1
    only = planner.plan_sets(task, [domain.catalog.all_capable()], 50, 0.0)[0]
    assert len(only) == 1 and only[0].steps == plan.steps


def test_completion_goes_on_by_the_prior_without_revisiting_states(domain):
    task = task_named(domain, TASK)
    _, (search, root, _) = tree_of(domain, task, domain.catalog.all_capable())
    unfinished = [(i, nodes) for i, nodes in tree_paths(root) if not nodes[-1].state[DONE]]
    assert unfinished
    indices, nodes = unfinished[0]
    actions = [node.actions[i] for node, i in zip(nodes, indices)]
    trajectory = [node.state for node in nodes]
    prefix = len(actions)
    assert complete(search, domain, actions, trajectory)
    assert trajectory[-1][DONE] and len(actions) <= domain.max_steps
    assert len(set(trajectory)) == len(trajectory)
    for index in range(prefix, len(actions)):
        state = trajectory[index]
        options, priors, _ = search.options(state)
        assert actions[index] in options
        assert search.step(state, actions[index])[0] == trajectory[index + 1]
        # The most probable action among those that lead somewhere new.
        fresh = [priors[k] for k, a in enumerate(options)
                 if search.step(state, a)[0] not in trajectory[:index + 1]]
        assert priors[options.index(actions[index])] == max(fresh)


def test_completion_that_misses_the_step_limit_drops_the_path(domain):
    short = OvercookedDomain(CONFIG / 'domain.yaml')
    short.max_steps = 2
    task = task_named(short, TASK)
    _, (search, root, _) = tree_of(short, task, short.catalog.all_capable())
    indices, nodes = tree_paths(root)[0]
    actions = [node.actions[i] for node, i in zip(nodes[:1], indices[:1])]
    assert not complete(search, short, actions, [nodes[0].state, nodes[1].state])
    _, counts = candidate_paths(search, root, short, 0)
    assert counts['unfinished'] == counts['paths']


# --------------------------------------------------- determinism and the store
def set_fingerprint(plans) -> list:
    return [[[s.robot, s.human] for s in plan.steps] for plan in plans]


def test_sets_are_the_same_in_another_planner_and_another_interpreter(domain):
    task = task_named(domain, TASK)
    vector = domain.catalog.partner_vector('type_1')
    first = MctsPlanner(domain, plan_cache=False).plan_sets(task, [vector], 50, 0.35)[0]
    second = MctsPlanner(domain, plan_cache=False).plan_sets(task, [vector], 50, 0.35)[0]
    assert set_fingerprint(first) == set_fingerprint(second)
    assert [p.trajectory for p in first] == [p.trajectory for p in second]
    code = textwrap.dedent(f'''
        import json
        from cecm_ros.domains.overcooked.mcts import MctsPlanner
        from cecm_ros.domains.overcooked.model import OvercookedDomain
        domain = OvercookedDomain({str(CONFIG / 'domain.yaml')!r})
        task = next(t for t in domain.tasks if t.task_id == {TASK!r})
        vector = domain.catalog.partner_vector('type_1')
        plans = MctsPlanner(domain, plan_cache=False).plan_sets(task, [vector], 50, 0.35)[0]
        print(json.dumps([[[s.robot, s.human] for s in p.steps] for p in plans]))
    ''')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True, env={'PYTHONPATH': str(ROOT), 'PYTHONHASHSEED': '7'})
    assert json.loads(out.stdout) == set_fingerprint(first)


def test_sets_are_kept_in_the_plan_store(domain, tmp_path, monkeypatch):
    task = task_named(domain, TASK)
    vector = domain.catalog.all_capable()
    store = str(tmp_path / 'plans.sqlite')
    made = MctsPlanner(domain, plan_cache=store).plan_sets(task, [vector], 50, 0.35)[0]

    def no_search(*args, **kwargs):
        raise AssertionError('a stored set was searched again')

    monkeypatch.setattr(diverse, 'plan_set_actions', no_search)
    loaded = MctsPlanner(domain, plan_cache=store).plan_sets(task, [vector], 50, 0.35)[0]
    assert set_fingerprint(loaded) == set_fingerprint(made)
    assert [p.trajectory for p in loaded] == [p.trajectory for p in made]
    # Another delta is another set: searched, not read.
    with pytest.raises(AssertionError, match='searched again'):
        MctsPlanner(domain, plan_cache=store).plan_sets(task, [vector], 50, 0.5)


# ------------------------------------------------------------- the evaluator
def test_diverse_evaluator_uses_the_planners_own_sets(domain):
    task = task_named(domain, TASK)
    planner = MctsPlanner(domain, plan_cache=False)
    samples = np.array([domain.catalog.all_capable(),
                        domain.catalog.partner_vector('type_1')])
    evaluator = DiversePlanEvaluator(planner, max_plans=6, diversity=0.2)
    sets = evaluator.plan_sets(task, samples)
    native = planner.plan_sets(task, samples, 6, 0.2)
    assert [set_fingerprint(s) for s in sets] == [set_fingerprint(s) for s in native]
    # Not the declined-capability sets: those hold plans of other vectors only.
    assert any(len(s) > 1 for s in sets)
    assert evaluator.trajectory_sets(task, samples)[0][0] == \
        evaluator.predicted_trajectories(task, samples)[0]


# ----------------------------------------------------- PDDL: K* (optional extra)
@pytest.fixture(scope='module')
def tidyup():
    from core_fixtures import close_planner, make_task

    from cecm_ros.domains.pddl.planner import FastDownwardPlanner
    from cecm_ros.domains.tidyup.model import TidyUpModel, atom
    model = TidyUpModel()
    planner = FastDownwardPlanner(model)
    # Two items to move: K*'s top-k stays fast.
    task = make_task('two', [atom('item-at', 'plate', 'bathroom'),
                             atom('item-at', 'bowl', 'study')])
    yield model, planner, task
    close_planner(planner)


def test_without_kstar_ce_cm_div_falls_back_and_says_so_once(tidyup, monkeypatch):
    from cecm_ros.domains.pddl import plan_sets
    model, planner, task = tidyup
    monkeypatch.setitem(sys.modules, 'kstar_planner', None)   # the import fails
    monkeypatch.setattr(plan_sets, '_warned', type(plan_sets._warned)())
    assert plan_sets.kstar_binary() is None
    vectors = np.array([model.catalog.all_capable()])
    with pytest.warns(RuntimeWarning, match=r"kstar-planner is not installed.*pip install"):
        assert planner.plan_sets(task, vectors, 50, 0.35) is None
    with warnings.catch_warnings():
        warnings.simplefilter('error')   # said once: the second call is silent
        assert planner.plan_sets(task, vectors, 50, 0.35) is None
        sets = DiversePlanEvaluator(planner).plan_sets(task, vectors)
    # The declined-capability sets: the own plan, then plans of smaller vectors.
    own = planner.plan(task, vectors[0])
    assert sets[0][0].sequential == own.sequential and len(sets[0]) > 1


def kstar_or_skip():
    from cecm_ros.domains.pddl.plan_sets import kstar_binary
    if kstar_binary() is None:
        pytest.skip('kstar-planner is not installed (the optional plansets extra)')


def test_kstar_sets_follow_the_rules(tidyup, monkeypatch):
    kstar_or_skip()
    from cecm_ros.domains.pddl import plan_sets
    model, planner, task = tidyup
    vectors = np.array([model.catalog.all_capable(),
                        model.catalog.partner_vector(model.default_partner())])
    sets = planner.plan_sets(task, vectors, 50, 0.1)
    for vector, plans in zip(vectors, sets):
        assert plans[0].sequential == planner.plan(task, vector).sequential
        assert 1 < len(plans) <= 50
        for index in range(1, len(plans)):
            assert min(model.novelty(plans[index].trajectory, plans[before].trajectory)
                       for before in range(index)) >= 0.1
            # Lifted like any plan, and gated by the vector.
            assert all(vector[g] for g in plans[index].human_capabilities_used)
            assert plans[index].planner_cost >= plans[0].planner_cost
    # Deterministic: K* searched again (nothing remembered) gives the same sets.
    monkeypatch.setattr(plan_sets, '_known', {})
    again = planner.plan_sets(task, vectors, 50, 0.1)
    assert [[p.sequential for p in s] for s in again] == [[p.sequential for p in s] for s in sets]
    # CE-CM-Div uses them.
    evaluated = DiversePlanEvaluator(planner, diversity=0.1).plan_sets(task, vectors)
    assert [[p.sequential for p in s] for s in evaluated] == \
        [[p.sequential for p in s] for s in sets]
