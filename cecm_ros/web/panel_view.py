"""How the web panel draws a domain's states: a role of its own, outside the world model.

A view has two calls: ``layout()`` once per page (the name of a renderer the page knows,
web/app.js, and that renderer's fixed data) and ``render(state)`` per team state. A
domain names its view in its registry spec (:mod:`cecm_ros.domains`); a domain that
names none is drawn by :class:`FactsView`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from cecm_ros.core.domain import Domain


class PanelView(Protocol):
    def layout(self) -> dict[str, Any]: ...

    def render(self, state: Hashable) -> dict[str, Any]: ...


class FactsView:
    """The ``facts`` renderer: a state's facts (or features) beside the goal, for any
    domain."""

    def __init__(self, domain: Domain):
        self.domain = domain

    def layout(self) -> dict[str, Any]:
        return {'renderer': 'facts', 'feature_names': []}

    def render(self, state: Hashable) -> dict[str, Any]:
        return {'facts': self.domain.state_facts(state),
                'features': self.domain.state_features(state)}
