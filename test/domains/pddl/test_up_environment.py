"""unified-planning's environment with the engine factory made on first use: it holds
what the library's own holds, reading a domain imports no engine, and a planner still
gets its factory (each check in a fresh interpreter: the environment is global)."""

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_it_holds_what_the_library_s_environment_holds():
    out = _run(
        'from unified_planning.environment import Environment\n'
        'from cecm_ros.domains.pddl.up_environment import PlanningLaterEnvironment\n'
        'ours, theirs = PlanningLaterEnvironment(), Environment()\n'
        'print(sorted(vars(ours)) == sorted(vars(theirs)))\n'
        'print(type(ours.factory) is type(theirs.factory))\n')
    assert out.splitlines() == ['True', 'True']


@pytest.mark.parametrize('domain', ['tidyup', 'overcooked'])
def test_reading_a_domain_imports_no_planning_engine(domain):
    out = _run(
        'import sys\n'
        'from cecm_ros.domains import load_domain\n'
        f'load_domain({domain!r})\n'
        "print('unified_planning.engines' in sys.modules)\n")
    assert out == 'False'


def test_a_planning_backend_gets_the_factory_when_it_plans():
    """The backend a planner worker runs: unified-planning's OneshotPlanner through the
    environment's factory, made only then."""
    out = _run(
        'import sys\n'
        'from cecm_ros.domains import load_domain\n'
        'from cecm_ros.domains.pddl.planner import DEFAULT_ENGINE, PlanningBackend\n'
        'from unified_planning.environment import get_environment\n'
        'model = load_domain("tidyup")\n'
        'before = get_environment()._factory is None\n'
        'task = next(iter(model.task_generator(0).tasks(1)))\n'
        'backend = PlanningBackend(model, DEFAULT_ENGINE, 60.0)\n'
        'plan = backend.solve(task, model.catalog.resolve("high_capability"))\n'
        "print(type(get_environment()).__name__, before, get_environment()._factory is not None,\n"
        "      'unified_planning.engines' in sys.modules, len(plan.steps) > 0)\n")
    assert out == 'PlanningLaterEnvironment True True True True'
