"""Partner capabilities as data: the catalogue, named partner types and vectors.

A capability vector is a numpy bool array ordered like the catalogue. The robot is
always fully capable; vectors describe the human partner only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from .errors import ConfigError, UnknownNameError


@dataclass(frozen=True)
class Capability:
    """One binary capability: it gates ``action`` for the partner in ``room``."""

    name: str
    action: str
    room: str
    description: str = ''


@dataclass(frozen=True)
class PartnerType:
    name: str
    description: str
    missing: tuple[str, ...]


class CapabilityCatalog:
    """The ordered list of capabilities and the partner types defined over it."""

    def __init__(self, capabilities: Sequence[Capability],
                 partner_types: Mapping[str, PartnerType] | None = None):
        if not capabilities:
            raise ConfigError('the capability catalogue is empty')
        self.capabilities: tuple[Capability, ...] = tuple(capabilities)
        self.names: tuple[str, ...] = tuple(c.name for c in self.capabilities)
        if len(set(self.names)) != len(self.names):
            twice = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ConfigError(f'capability {", ".join(repr(n) for n in twice)} is named more '
                              'than once')
        self._index = {name: i for i, name in enumerate(self.names)}
        self._by_gate = {(c.action, c.room): i for i, c in enumerate(self.capabilities)}
        self.partner_types: dict[str, PartnerType] = dict(partner_types or {})
        for partner in self.partner_types.values():
            for name in partner.missing:
                self.index(name)  # validates

    def __len__(self) -> int:
        return len(self.capabilities)

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise UnknownNameError(
                f'unknown capability {name!r}; known: {", ".join(self.names)}') from None

    def gate_index(self, action: str, room: str) -> int | None:
        """The capability that gates ``action`` in ``room``, or None when ungated."""
        return self._by_gate.get((action, room))

    def groups(self) -> tuple[tuple[int, ...], ...]:
        """Capabilities that belong together (those of one room), as index tuples."""
        by_room: dict[str, list[int]] = {}
        for index, capability in enumerate(self.capabilities):
            by_room.setdefault(capability.room, []).append(index)
        return tuple(tuple(members) for members in by_room.values() if len(members) > 1)

    def all_capable(self) -> np.ndarray:
        return np.ones(len(self), dtype=bool)

    def vector_without(self, missing: Iterable[str]) -> np.ndarray:
        vector = self.all_capable()
        for name in missing:
            vector[self.index(name)] = False
        return vector

    def partner_vector(self, partner: str) -> np.ndarray:
        """The true vector of a named partner type."""
        try:
            partner_type = self.partner_types[partner]
        except KeyError:
            raise UnknownNameError(
                f'unknown partner type {partner!r}; known: '
                f'{", ".join(sorted(self.partner_types))}') from None
        return self.vector_without(partner_type.missing)

    def parse_vector(self, text: str) -> np.ndarray:
        """Parse ``name=0,name=1,...`` over a default of all ones.

        Also accepts a plain 0/1 string of catalogue length (e.g. ``1101...``) and
        ``all`` (what :meth:`format_vector` writes for a fully capable partner).
        """
        text = text.strip()
        if text in ('', 'all'):
            return self.all_capable()
        if set(text) <= {'0', '1'}:
            if len(text) != len(self):
                raise ConfigError(
                    f'capability bit string has {len(text)} digits, expected {len(self)}')
            return np.array([ch == '1' for ch in text], dtype=bool)
        vector = self.all_capable()
        for item in text.split(','):
            item = item.strip()
            if not item:
                continue
            name, sep, value = item.partition('=')
            name, value = name.strip(), value.strip()
            if not sep or value not in ('0', '1'):
                raise ConfigError(
                    f'malformed capability assignment {item!r}: expected name=0 or name=1')
            vector[self.index(name)] = value == '1'
        return vector

    def resolve(self, spec: str) -> np.ndarray:
        """A partner type name, or a vector in :meth:`parse_vector` syntax."""
        if spec in self.partner_types:
            return self.partner_vector(spec)
        if spec == 'all' or '=' in spec or (spec and set(spec) <= {'0', '1'}):
            return self.parse_vector(spec)
        return self.partner_vector(spec)  # raises with the list of known types

    def format_vector(self, vector: np.ndarray) -> str:
        """The canonical ``name=0,...`` text of the zeros (``all`` when none)."""
        vector = self.check_vector(vector)
        missing = [f'{self.names[i]}=0' for i in np.flatnonzero(~vector)]
        return ','.join(missing) if missing else 'all'

    def describe_missing(self, vector: np.ndarray) -> str:
        """What a vector lacks, for messages: the missing names, or ``nothing``."""
        vector = self.check_vector(vector)
        return ', '.join(self.names[i] for i in np.flatnonzero(~vector)) or 'nothing'

    def check_vector(self, vector: Sequence[bool] | np.ndarray) -> np.ndarray:
        array = np.asarray(vector)
        if array.shape != (len(self),):
            raise ConfigError(
                f'capability vector has shape {array.shape}, expected ({len(self)},)')
        if array.dtype != bool:
            if not np.isin(array, (0, 1)).all():
                raise ConfigError('capability vector entries must be 0 or 1')
            array = array.astype(bool)
        return array

    @classmethod
    def from_yaml(cls, path: str | Path) -> CapabilityCatalog:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f'cannot read capability file {path}: {error}') from error
        if not isinstance(data, dict) or 'capabilities' not in data:
            raise ConfigError(f'{path}: expected a mapping with a "capabilities" list')
        capabilities = []
        for entry in data['capabilities']:
            try:
                capabilities.append(Capability(
                    name=str(entry['name']), action=str(entry['action']),
                    room=str(entry['room']), description=str(entry.get('description', ''))))
            except (KeyError, TypeError) as error:
                raise ConfigError(
                    f'{path}: capability entry {entry!r} needs name, action and room') from error
        partners = {}
        for name, entry in (data.get('partner_types') or {}).items():
            partners[name] = PartnerType(
                name=name, description=str(entry.get('description', '')),
                missing=tuple(entry.get('missing') or ()))
        return cls(capabilities, partners)
