"""The Overcooked Q-learning baseline: settings checks, determinism, the on-disk table
cache, and that its plans are joint plans of capable actions (small budgets only: the
full budget trains for minutes)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from paths import REPO  # noqa: E402

from cecm_ros.core.domain import HUMAN, NOOP, ROBOT, JointPlan
from cecm_ros.core.errors import ConfigError
from cecm_ros.domains import baseline_planner_for
from cecm_ros.domains.overcooked.mcts import JointSearch, MctsSettings
from cecm_ros.domains.overcooked.model import DONE, MACROS, OvercookedDomain
from cecm_ros.domains.overcooked.qlearning import (
    QLearningSettings,
    QPolicyPlanner,
    report,
    table_path,
    train_q_table,
)

ROOT = REPO
CONFIG = ROOT / 'config' / 'domains' / 'overcooked'
# Small enough for a test, large enough for replay sweeps and a few curve points.
SMALL = QLearningSettings(steps=12_000, replay_size=4_000, replay_every=3_000,
                          curve_points=3, seed=5)


@pytest.fixture(scope='module')
def domain() -> OvercookedDomain:
    return OvercookedDomain(CONFIG / 'domain.yaml')


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """Each test its own cache, so no test loads what another trained."""
    monkeypatch.setenv('CECM_CACHE_DIR', str(tmp_path))
    return tmp_path


def kitchen_a(domain):
    return [t for t in domain.tasks if t.task_id.startswith('A-')]


@pytest.mark.parametrize('options', [
    {'steps': 0}, {'alpha': 0.0}, {'alpha': 1.5}, {'gamma': 0.0}, {'gamma': 1.01},
    {'explore_softmax': -0.1}, {'explore_softmax': 1.2}, {'softmax_temperature': 0.0},
    {'inference_temperature': -1.0}, {'replay_size': -1}, {'replay_every': 0},
    {'initial_q': math.nan}, {'curve_points': 0}, {'steps': 2.5}, {'fallback': 'mcts'},
])
def test_bad_settings_raise(options):
    with pytest.raises(ConfigError):
        QLearningSettings(**options)


def test_planner_rejects_unknown_options(domain):
    with pytest.raises(ConfigError, match='unknown options'):
        QPolicyPlanner(domain, stepz=10)
    with pytest.raises(ConfigError, match='not both'):
        QPolicyPlanner(domain, SMALL, steps=10)
    with pytest.raises(ConfigError):
        baseline_planner_for(domain, alpha=2.0)


def test_training_is_deterministic_per_seed(domain):
    first = train_q_table(domain, SMALL, cache=False)
    second = train_q_table(domain, SMALL, cache=False)
    assert first.rows == second.rows
    assert first.curve == second.curve
    assert [p.steps for p in first.curve] == [4_000, 8_000, 12_000]
    other = train_q_table(domain, QLearningSettings(**{**SMALL.__dict__, 'seed': 6}),
                          cache=False)
    assert other.rows != first.rows


def test_training_learns_from_rewards(domain):
    table = train_q_table(domain, SMALL, cache=False)
    start = domain.initial_state(domain.tasks[0])
    actions, values = table.rows[start]
    assert actions == tuple(JointSearch(domain, (True,) * len(MACROS),
                                        MctsSettings(prior='uniform'), None).options(start)[0])
    assert any(v != SMALL.initial_q for v in values)
    assert all(math.isfinite(v) for row in table.rows.values() for v in row[1])
    assert all(len(row[0]) == len(row[1]) for row in table.rows.values())
    for point in table.curve:
        assert 0.0 <= point.served <= 1.0 and 0 < point.mean_length <= domain.max_steps
        assert 0.0 <= point.explored_served <= 1.0


def test_cache_round_trip_and_corrupt_file(domain):
    trained = train_q_table(domain, SMALL)
    path = table_path(domain, SMALL)
    assert trained.loaded_from is None and path.is_file()
    assert path.parent.name == 'overcooked'
    loaded = train_q_table(domain, SMALL)
    assert loaded.loaded_from == path
    assert loaded.curve == trained.curve
    assert loaded.rows == trained.rows
    assert all(any(v != SMALL.initial_q for v in r[1]) for r in loaded.rows.values())
    path.write_bytes(b'not a numpy file')
    with pytest.warns(RuntimeWarning, match='not usable'):
        again = train_q_table(domain, SMALL)
    assert again.loaded_from is None and again.rows == trained.rows
    assert train_q_table(domain, SMALL).loaded_from == path


def test_other_settings_use_another_file(domain):
    assert table_path(domain, SMALL) != table_path(
        domain, QLearningSettings(**{**SMALL.__dict__, 'seed': 6}))


def check_plan(domain, task, plan: JointPlan) -> None:
    """A joint plan of capable actions that the joint step model replays exactly."""
    model = JointSearch(domain, (True,) * len(MACROS), MctsSettings(prior='uniform'), None)
    state = domain.initial_state(task)
    assert plan.task_id == task.task_id
    assert plan.trajectory[0] == state
    assert len(plan.trajectory) == len(plan.steps) + 1 <= domain.max_steps + 1
    for step, after in zip(plan.steps, plan.trajectory[1:]):
        robot = 'stay' if step.robot == NOOP else domain.parse_action(step.robot)[0]
        partner = 'stay' if step.human == NOOP else domain.parse_action(step.human)[0]
        if step.robot != NOOP:
            assert domain.parse_action(step.robot)[1] == ROBOT
        if step.human != NOOP:
            assert domain.parse_action(step.human)[1] == HUMAN
        assert (robot, partner) in model.options(state)[0]
        state = model.step(state, (robot, partner))[0]
        assert state == after
    assert plan.cost >= max(plan.robot_cost, plan.human_cost)
    assert plan.cost >= len(plan.steps)
    served = bool(plan.trajectory[-1][DONE])
    assert served or len(plan.steps) == domain.max_steps or not model.options(state)[0]


def test_planner_plans_are_valid_and_ignore_the_vector(domain):
    planner = baseline_planner_for(domain, **SMALL.__dict__)
    assert planner.guarantees.deterministic and not planner.guarantees.cost_optimal
    none = np.zeros(len(domain.catalog), dtype=bool)
    for task in kitchen_a(domain):
        capable, lacking = planner.plan_many(task, [domain.catalog.all_capable(), none])
        assert capable == lacking
        check_plan(domain, task, capable)
    assert planner.calls == 3 and planner.cache_hits == 3
    planner.plan(kitchen_a(domain)[0], none)
    assert planner.calls == 3 and planner.cache_hits == 4
    assert planner.known_plan_count(kitchen_a(domain)[0]) == 1
    planner.close()


def test_planner_is_deterministic_across_planners(domain):
    tasks = domain.tasks
    first = QPolicyPlanner(domain, SMALL)
    plans = [first.plan(t, domain.catalog.all_capable()) for t in tasks]
    second = QPolicyPlanner(domain, SMALL)   # loads the table the first one stored
    assert second.table.loaded_from is not None
    again = [second.plan(t, domain.catalog.all_capable()) for t in tasks]
    assert [(p.steps, p.trajectory, p.cost) for p in plans] == \
        [(p.steps, p.trajectory, p.cost) for p in again]


def test_heuristic_fallback_plans_are_valid(domain):
    settings = QLearningSettings(**{**SMALL.__dict__, 'fallback': 'heuristic'})
    planner = QPolicyPlanner(domain, settings)
    plans = [planner.plan(t, domain.catalog.all_capable()) for t in kitchen_a(domain)]
    for task, plan in zip(kitchen_a(domain), plans):
        check_plan(domain, task, plan)
    uniform = QPolicyPlanner(domain, SMALL)
    assert plans != [uniform.plan(t, domain.catalog.all_capable()) for t in kitchen_a(domain)]


def test_planner_plans_from_an_intermediate_state(domain):
    planner = QPolicyPlanner(domain, SMALL)
    task = kitchen_a(domain)[1]
    whole = planner.plan(task, domain.catalog.all_capable())
    assert len(whole.trajectory) > 2
    middle = domain.task_from_state(task, whole.trajectory[2])
    rest = planner.plan(middle, domain.catalog.all_capable())
    check_plan(domain, middle, rest)
    assert rest.trajectory[0] == whole.trajectory[2]


def test_report_lists_the_curve(domain):
    text = report(domain, SMALL)
    lines = text.splitlines()
    assert '12,000 steps' in lines[0]
    assert len(lines) == 2 + SMALL.curve_points
    assert lines[-1].split()[0] == '12,000'
