"""How the web panel draws a domain's states: a role of its own, outside the world model.

A view has three calls: ``layout()`` once per page (the name of a renderer the page
knows, web/app.js, and that renderer's fixed data), ``render(state)`` per team state, and
``scene(state)``: the same drawing laid out on the floor in metres, for RViz and Foxglove
(nodes/scene_markers.py makes its markers). A scene is a dict:

* ``places``: ``{name, kind, x, y, width, depth}`` rectangles (centre, size), e.g. rooms
  or a kitchen's cells; ``links``: pairs of place names (doors);
* ``objects``: ``{name, kind, x, y, label}`` (an item, a vegetable, a plate);
* ``agents``: ``{name, x, y, label}`` for ``robot`` and ``human``;
* ``facts``: lines of text beside the drawing (all of a state's facts, where the view
  draws nothing else).

A domain names its view in its registry spec (:mod:`cecm_ros.domains`); a domain that
names none is drawn by :class:`FactsView`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from cecm_ros.core.domain import Domain
from cecm_ros.domains.scene import empty_scene


class PanelView(Protocol):
    def layout(self) -> dict[str, Any]: ...

    def render(self, state: Hashable) -> dict[str, Any]: ...

    def scene(self, state: Hashable) -> dict[str, Any]: ...


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

    def scene(self, state: Hashable) -> dict[str, Any]:
        """No floor plan: the state's facts (or features) as lines of text."""
        drawn = self.render(state)
        scene = empty_scene()
        scene['facts'] = list(drawn['facts']) or \
            [f'x{i} = {value:.2f}' for i, value in enumerate(drawn['features'])]
        return scene
