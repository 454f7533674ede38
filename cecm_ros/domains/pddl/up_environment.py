"""unified-planning's global environment, with its engine factory made when first used.

Reading a PDDL file needs an ``Environment``, and unified-planning's makes its engine
``Factory`` at once, which imports every engine module and, through them, ConfigSpace and
scipy.stats: about 1.2 s of CPU in each node process of the graph (measured: a node's
start 1.9 s, the TidyUP model itself 0.2 s of it), though only a process that plans needs
the engines. :func:`install` puts in an environment that makes the factory when a planner
first asks for it; everything else is the library's own. Written against
unified-planning 1.3.0 (requirements-ros.txt); ``test/domains/pddl/test_up_environment.py``
checks that it holds what the library's own environment holds.
"""

from __future__ import annotations

import threading

import unified_planning.environment as up_environment
import unified_planning.model
import unified_planning.model.type_manager
import unified_planning.model.walkers

_LOCK = threading.Lock()


class PlanningLaterEnvironment(up_environment.Environment):
    """The library's environment but for the engine factory, made on first use."""

    def __init__(self) -> None:   # the base's, without the factory
        model, walkers = unified_planning.model, unified_planning.model.walkers
        self._type_manager = model.type_manager.TypeManager()
        self._factory = None
        self._tc = walkers.TypeChecker(self)
        self._expression_manager = model.ExpressionManager(self)
        self._free_vars_oracle = model.FreeVarsOracle()
        self._simplifier = walkers.Simplifier(self)
        self._substituter = walkers.Substituter(self)
        self._free_vars_extractor = walkers.FreeVarsExtractor()
        self._names_extractor = walkers.NamesExtractor()
        self._credits_stream = None   # engines print no credits in cecm_ros's logs
        self._error_used_name = True

    @property
    def factory(self):
        with _LOCK:
            if self._factory is None:
                import unified_planning.engines

                self._factory = unified_planning.engines.Factory(self)
        return self._factory


def install() -> None:
    """Make the global environment this one, unless one is made already."""
    with _LOCK:
        if up_environment.GLOBAL_ENVIRONMENT is None:
            up_environment.GLOBAL_ENVIRONMENT = PlanningLaterEnvironment()
        up_environment.GLOBAL_ENVIRONMENT.credits_stream = None
