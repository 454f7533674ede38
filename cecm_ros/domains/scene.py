"""A panel view's scene on the floor in metres (web/panel_view.py, ``scene()``): the
pieces domains lay theirs out with. In the domains layer, which the web layer is above."""

from __future__ import annotations

from typing import Any


def empty_scene() -> dict[str, Any]:
    return {'places': [], 'links': [], 'objects': [], 'agents': [], 'facts': []}


def grid_places(names: list[str], kinds: dict[str, str], width: float, depth: float,
                gap: float) -> list[dict[str, Any]]:
    """``names`` as rectangles in rows of 2 (up to 4) or 3, the first at the top left, as
    the page's household drawing places rooms (x to the right, y up)."""
    columns = 2 if len(names) <= 4 else 3
    return [{'name': name, 'kind': kinds.get(name, 'room'),
             'x': (index % columns) * (width + gap) + width / 2,
             'y': -((index // columns) * (depth + gap) + depth / 2),
             'width': width, 'depth': depth} for index, name in enumerate(names)]


def slot(place: dict[str, Any], index: int, columns: int = 3) -> tuple[float, float]:
    """Where the ``index``-th thing in a place stands: left to right, then the next row
    down, from its top left corner (after room for its name and its agents)."""
    step_x = place['width'] / (columns + 1)
    return (place['x'] - place['width'] / 2 + step_x * (1 + index % columns),
            place['y'] + place['depth'] / 2 - 1.1 - 0.6 * (index // columns))
