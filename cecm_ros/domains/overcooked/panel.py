"""The node layer's view of Overcooked: how the panel draws a kitchen, and the robot's
skill kinds (one per macro action)."""

from __future__ import annotations

from typing import Any

from cecm_ros.domains.scene import empty_scene

from .kitchen import ROLES, VEGETABLES
from .model import (
    ABSENT,
    CHOP,
    CHOPS,
    DONE,
    HELD,
    MACROS,
    ON_PLATE,
    PLATES,
    PLOC,
    POS,
    RECIPE,
    SERVED,
    VLOC,
    K,
    OvercookedDomain,
)


class KitchenView:
    """The ``kitchen`` renderer of the panel's page (web/app.js)."""

    def __init__(self, domain: OvercookedDomain):
        self.domain = domain

    def render(self, state: tuple) -> dict[str, Any]:
        kitchen = self.domain.kitchens[state[K]]
        objects = {}
        for name, where in [(v, state[VLOC + i]) for i, v in enumerate(VEGETABLES)] + \
                [(p, state[PLOC + k]) for k, p in enumerate(PLATES)]:
            entry: dict[str, Any] = {}
            if where == ABSENT:
                continue
            if where == SERVED:
                entry['served'] = True
            elif where >= ON_PLATE:
                entry['on'] = PLATES[where - ON_PLATE]
            elif where >= HELD:
                entry['held_by'] = ROLES[where - HELD]
            else:
                entry['cell'] = list(kitchen.row_column(where))
            if name in VEGETABLES:
                entry['chops'] = state[CHOP + VEGETABLES.index(name)]
            objects[name] = entry
        return {'kitchen': state[K], 'recipe': state[RECIPE],
                'needs': list(self.domain.recipes[state[RECIPE]]),
                'agents': {role: list(kitchen.row_column(state[POS + i]))
                           for i, role in enumerate(ROLES)},
                'objects': objects, 'served': bool(state[DONE]),
                'facts': self.domain.state_facts(state),
                'features': list(self.domain.features(state))}

    def layout(self) -> dict[str, Any]:
        return {'renderer': 'kitchen', 'feature_names': self.domain.feature_names(),
                'kitchens': {name: {'rows': k.grid_rows(), 'width': k.width,
                                    'height': k.height}
                             for name, k in self.domain.kitchens.items()},
                'chops': CHOPS,
                'phrases': {m: m.replace('_', ' ') for m in MACROS},
                # Play mode: every macro action on a key of its own, the same in every
                # state (1-9, then b), so that a player learns them.
                'key_order': list(MACROS)}


    def scene(self, state: tuple) -> dict[str, Any]:
        """The kitchen's cells, 1 m each (row 0 at the top), the cooks on theirs, every
        object on its counter, in its holder's hands, on its plate or at the delivery."""
        drawn = self.render(state)
        kitchen = self.domain.kitchens[state[K]]
        scene = empty_scene()
        delivery = None
        for row, kinds in enumerate(kitchen.grid_rows()):
            for column, kind in enumerate(kinds):
                scene['places'].append({'name': f'{kind} ({row},{column})', 'kind': kind,
                                        'x': float(column), 'y': -float(row),
                                        'width': 1.0, 'depth': 1.0})
                delivery = (row, column) if kind == 'delivery' else delivery
        cells = dict(drawn['agents'])
        for role in ROLES:
            row, column = cells[role]
            scene['agents'].append({'name': 'robot' if role == 'robot' else 'human',
                                    'x': float(column), 'y': -float(row), 'label': role})
        objects = drawn['objects']

        def cell_of(name: str, depth: int = 0):
            entry = objects.get(name, {})
            if 'cell' in entry:
                return entry['cell'], 0.0
            if 'held_by' in entry:
                return cells[entry['held_by']], 0.3
            if 'on' in entry and depth < 2:
                where, lift = cell_of(entry['on'], depth + 1)
                return where, lift + 0.15
            return (delivery, 0.15) if entry.get('served') and delivery else (None, 0.0)

        for name, entry in objects.items():
            where, lift = cell_of(name)
            if where is None:
                continue
            kind = name if name in VEGETABLES else 'plate'
            chops = entry.get('chops')
            label = name + (f' chopped {chops}/{CHOPS}' if chops is not None else '')
            scene['objects'].append({'name': name, 'kind': kind,
                                     'x': where[1] + lift, 'y': -where[0] - lift,
                                     'label': label + (' served' if entry.get('served')
                                                       else '')})
        return scene


class MacroSkills:
    """One skill kind per macro action; an action's kind is its macro."""

    kinds: tuple[str, ...] = MACROS

    def __init__(self, domain: OvercookedDomain):
        self.domain = domain

    def kind_of(self, action: str) -> str:
        return self.domain.parse_action(action)[0]
