"""A kitchen of the Overcooked domain, read from YAML, and shortest walks on its grid.

A kitchen is a grid of floor cells (agents walk there) and counters (objects lie
there). An agent works at a counter from a floor cell next to it (up, down, left or
right), so every macro action first walks to the nearest such cell: A* over the floor,
the other agent's cell blocked.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cecm_ros.core.errors import ConfigError

FLOOR, COUNTER, START, TOMATO, LETTUCE, PLATE, KNIFE, DELIVERY, ONION = range(9)
CODES = {FLOOR: 'floor', COUNTER: 'counter', START: 'agent start', TOMATO: 'tomato',
         LETTUCE: 'lettuce', PLATE: 'plate', KNIFE: 'knife', DELIVERY: 'delivery',
         ONION: 'onion'}
VEGETABLES = ('lettuce', 'onion', 'tomato')   # the order of the capabilities
VEGETABLE_CODES = {'lettuce': LETTUCE, 'onion': ONION, 'tomato': TOMATO}
# The order neighbours are tried in, so that equally short walks end in one fixed cell.
STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))
ROLES = ('robot', 'partner')


@dataclass(frozen=True)
class Kitchen:
    """One kitchen: its cells and where every object starts. Cells are numbered
    ``row * width + column``."""

    name: str
    description: str
    width: int
    height: int
    floor: frozenset[int]
    starts: tuple[int, int]                  # robot, partner
    objects: dict[str, int]                  # vegetables, plate_k, knife_k, delivery
    middle: tuple[int, ...] = ()             # counters items are passed over
    park: int | None = None                  # out_of_the_way's cell without a middle
    source: str = ''
    _walks: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    # ---------------------------------------------------------------- geometry
    def cell(self, row: int, column: int) -> int:
        return row * self.width + column

    def row_column(self, cell: int) -> tuple[int, int]:
        return divmod(cell, self.width)

    def neighbours(self, cell: int) -> list[int]:
        row, column = self.row_column(cell)
        found = []
        for d_row, d_column in STEPS:
            r, c = row + d_row, column + d_column
            if 0 <= r < self.height and 0 <= c < self.width:
                found.append(self.cell(r, c))
        return found

    def walk(self, start: int, target: int, blocked: int, stand_on: bool = False
             ) -> tuple[int, int] | None:
        """(end cell, moves) of the shortest walk from floor cell ``start`` to a floor cell
        next to ``target`` (or onto it, with ``stand_on``), avoiding ``blocked``; None
        when there is none. A*, Manhattan heuristic."""
        key = (start, target, blocked, stand_on)
        known = self._walks.get(key, False)
        if known is not False:
            return known
        if stand_on:
            goals = {target} if target != blocked and target in self.floor else set()
        else:
            goals = {n for n in self.neighbours(target) if n in self.floor and n != blocked}
        result = self._astar(start, goals, blocked) if goals else None
        self._walks[key] = result
        return result

    def _astar(self, start: int, goals: set[int], blocked: int) -> tuple[int, int] | None:
        goal_points = [self.row_column(g) for g in sorted(goals)]

        def estimate(cell: int) -> int:
            row, column = self.row_column(cell)
            return min(abs(row - r) + abs(column - c) for r, c in goal_points)

        frontier = [(estimate(start), 0, start)]
        best = {start: 0}
        while frontier:
            _, moves, cell = heapq.heappop(frontier)
            if cell in goals:
                return cell, moves
            if moves > best.get(cell, moves):
                continue
            for nxt in self.neighbours(cell):
                if nxt not in self.floor or nxt == blocked:
                    continue
                if moves + 1 < best.get(nxt, 1 << 30):
                    best[nxt] = moves + 1
                    heapq.heappush(frontier, (moves + 1 + estimate(nxt), moves + 1, nxt))
        return None

    @property
    def put_down_cells(self) -> tuple[int, ...]:
        """Where out_of_the_way puts what an agent holds: the middle counters, else every
        counter that is not a board or the delivery counter."""
        if self.middle:
            return self.middle
        special = {c for n, c in self.objects.items() if n.startswith(('knife', 'delivery'))}
        return tuple(c for c in range(self.width * self.height)
                     if c not in self.floor and c not in special)

    def reachable(self, start: int) -> set[int]:
        """Floor cells an agent can walk to from ``start`` (nobody in the way)."""
        seen, todo = {start}, [start]
        while todo:
            for nxt in self.neighbours(todo.pop()):
                if nxt in self.floor and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    # ------------------------------------------------------------------ files
    @classmethod
    def from_yaml(cls, path: str | Path) -> Kitchen:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f'cannot read kitchen file {path}: {error}') from error
        if not isinstance(data, dict):
            raise ConfigError(f'{path}: a kitchen file is a mapping (name, grid, starts, ...)')
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = 'kitchen') -> Kitchen:
        known = {'name', 'description', 'grid', 'starts', 'middle', 'park'}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f'{source}: unknown keys {unknown}; known: {sorted(known)}')
        name = str(data.get('name') or Path(source).stem)
        if not re.match(r'^[A-Za-z0-9_]+$', name):
            raise ConfigError(f'{source}: kitchen name {name!r}: use letters, digits and _ '
                              'only')
        grid = data.get('grid')
        if not isinstance(grid, list) or not grid or not all(isinstance(r, list) for r in grid):
            raise ConfigError(f'{source}: "grid" must be a list of rows of cell codes')
        width = len(grid[0])
        if any(len(row) != width for row in grid):
            raise ConfigError(f'{source}: every row of "grid" needs {width} cells')
        height = len(grid)
        floor, starts, objects = set(), [], {}
        counts: dict[int, list[int]] = {}
        for r, row in enumerate(grid):
            for c, code in enumerate(row):
                if code not in CODES:
                    raise ConfigError(f'{source}: cell ({r}, {c}) has code {code!r}; codes: '
                                      + ', '.join(f'{k} {v}' for k, v in CODES.items()))
                cell = r * width + c
                counts.setdefault(code, []).append(cell)
                if code in (FLOOR, START):
                    floor.add(cell)
                if code == START:
                    starts.append(cell)
        if len(starts) != 2:
            raise ConfigError(f'{source}: needs exactly 2 agent starts (code 2), found '
                              f'{len(starts)}')
        for vegetable, code in VEGETABLE_CODES.items():
            cells = counts.get(code, [])
            if len(cells) > 1:
                raise ConfigError(f'{source}: {len(cells)} cells of {vegetable}; at most one')
            if cells:
                objects[vegetable] = cells[0]
        for code, kind, number in ((PLATE, 'plate', 2), (KNIFE, 'knife', 2),
                                   (DELIVERY, 'delivery', 1)):
            cells = counts.get(code, [])
            if len(cells) != number:
                raise ConfigError(f'{source}: needs exactly {number} {kind} cell(s) (code '
                                  f'{code}), found {len(cells)}')
            if number == 1:
                objects[kind] = cells[0]
            else:
                for index, cell in enumerate(cells, 1):
                    objects[f'{kind}_{index}'] = cell
        order = data.get('starts', {'robot': 0, 'partner': 1})
        if not isinstance(order, dict) or sorted(map(str, order)) != sorted(ROLES) \
                or sorted(order.values(), key=repr) != [0, 1]:
            raise ConfigError(f'{source}: "starts" maps robot and partner to start 0 and 1 '
                              f'(reading order), got {order!r}')
        role_starts = (starts[order['robot']], starts[order['partner']])

        def cell_of(value: Any, what: str) -> int:
            if not (isinstance(value, list) and len(value) == 2
                    and all(isinstance(v, int) for v in value)
                    and 0 <= value[0] < height and 0 <= value[1] < width):
                raise ConfigError(f'{source}: {what} must be [row, column] inside the grid, '
                                  f'got {value!r}')
            return value[0] * width + value[1]

        if not isinstance(data.get('middle') or [], list):
            raise ConfigError(f'{source}: "middle" is a list of [row, column] counters')
        middle = tuple(cell_of(v, 'a "middle" counter') for v in data.get('middle') or ())
        for cell in middle:
            if grid[cell // width][cell % width] != COUNTER:
                raise ConfigError(f'{source}: middle counter {list(divmod(cell, width))} is '
                                  'not a plain counter (code 1)')
        park = cell_of(data['park'], '"park"') if data.get('park') is not None else None
        if park is not None and park not in floor:
            raise ConfigError(f'{source}: "park" {data["park"]} is not a floor cell')
        if not middle and park is None:
            raise ConfigError(f'{source}: give "middle" counters or a "park" cell (where '
                              'out_of_the_way goes)')
        kitchen = cls(name=name, description=str(data.get('description', '')), width=width,
                      height=height, floor=frozenset(floor), starts=role_starts,
                      objects=objects, middle=middle, park=park, source=source)
        kitchen._check_reachable()
        return kitchen

    def _check_reachable(self) -> None:
        """Every object must be workable by some agent: a kitchen where nobody can reach
        the delivery counter can never serve a dish."""
        areas = [self.reachable(start) for start in self.starts]
        for name, cell in list(self.objects.items()) + [('middle counter', c) for c in self.middle]:
            sides = [n for n in self.neighbours(cell) if n in self.floor]
            if not any(side in area for area in areas for side in sides):
                row, column = self.row_column(cell)
                raise ConfigError(f'{self.source}: no agent has a path to {name} at '
                                  f'[{row}, {column}]')
        if self.park is not None and not any(self.park in area for area in areas):
            raise ConfigError(f'{self.source}: no agent has a path to the park cell')

    def grid_rows(self) -> list[list[str]]:
        """The grid as kinds of cell, for a panel: floor, counter, or an object's name."""
        names = {cell: name for name, cell in self.objects.items()}
        rows = []
        for r in range(self.height):
            row = []
            for c in range(self.width):
                cell = self.cell(r, c)
                if cell in self.floor:
                    row.append('floor')
                elif cell in names and names[cell].startswith(('knife', 'delivery')):
                    row.append(names[cell])
                elif cell in self.middle:
                    row.append('middle')
                else:
                    row.append('counter')
            rows.append(row)
        return rows
