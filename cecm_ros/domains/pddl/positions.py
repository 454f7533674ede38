"""Where in a user's own file a mistake is: line and column in ``domain.yaml`` and in the
PDDL files as the user wrote them.

The planner parses a rewritten copy of a domain with constant costs (costs.py), whose
lines are not the user's; every position a message gives is found in the user's text
instead. Positions are written ``file:line:column`` (from 1), as compilers write them,
so that an editor can jump there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

Position = tuple[int, int]


def at(path: Path | str, position: Position | None) -> str:
    """``path:line:column``, or the path alone when the place is not known."""
    return f'{path}:{position[0]}:{position[1]}' if position else str(path)


class YamlPositions:
    """The line and column of every entry of a YAML text, by its path of keys and list
    indexes (``('capabilities', 0, 'action')``)."""

    def __init__(self, text: str):
        self._values: dict[tuple, Position] = {}
        self._keys: dict[tuple, Position] = {}
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            root = None     # the reader reports the syntax error itself
        if root is not None:
            self._walk(root, ())

    def _walk(self, node: yaml.Node, path: tuple) -> None:
        self._values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                self._keys[child] = (key.start_mark.line + 1, key.start_mark.column + 1)
                self._walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, value in enumerate(node.value):
                self._walk(value, (*path, index))

    def of(self, *path: Any, key: bool = False) -> Position | None:
        """Where the value at ``path`` starts (``key``, or a value below its key, as a
        block mapping or list is: where its key is written); the nearest enclosing entry
        the text has when the path goes deeper than it."""
        path = tuple(p if isinstance(p, int) else str(p) for p in path)
        while path and path not in self._values:
            path = path[:-1]
        if path in self._keys and (key or self._values[path][0] > self._keys[path][0]):
            return self._keys[path]
        return self._values.get(path)


def pddl_tokens(text: str) -> list[tuple[str, int, int]]:
    """The tokens of a PDDL text (parentheses apart, comments left out), each with its
    line and column."""
    tokens = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(';', 1)[0]
        for match in re.finditer(r'[()]|[^\s()]+', code):
            tokens.append((match.group(), number, match.start() + 1))
    return tokens


def locate(text: str, *sequences: Sequence[str]) -> Position | None:
    """Where in a PDDL text the last of ``sequences`` of tokens occurs, each searched
    after the one before (case-insensitive): ``locate(text, ['(', ':action', 'walk'],
    ['increase'])`` is the cost of the action walk. None when one is not there."""
    tokens = pddl_tokens(text)
    words = [t[0].lower() for t in tokens]
    start, found = 0, None
    for sequence in sequences:
        wanted = [w.lower() for w in sequence]
        found = next((i for i in range(start, len(words) - len(wanted) + 1)
                      if words[i:i + len(wanted)] == wanted), None)
        if found is None:
            return None
        start = found + len(wanted)
    return None if found is None else (tokens[found][1], tokens[found][2])


def atom_tokens(text: str) -> list[str]:
    """``(at robot bench)`` as the tokens :func:`locate` looks for."""
    return ['(', *text.replace('(', ' ').replace(')', ' ').split(), ')']


# unified-planning writes where it failed as "line: 18, col 35", "line:30, col:3" or
# "line: 17, col: 41": the first is where the expression starts.
_UP_POSITION = re.compile(r'line:?\s*(\d+),\s*col:?\s*(\d+)')


def reader_position(message: str) -> Position | None:
    """The position a unified-planning parse error names, if any."""
    match = _UP_POSITION.search(message)
    return (int(match.group(1)), int(match.group(2))) if match else None
