"""The node layer's view of Overcooked: how the panel draws a kitchen, and the robot's
skill kinds (one per macro action)."""

from __future__ import annotations

from typing import Any

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


class MacroSkills:
    """One skill kind per macro action; an action's kind is its macro."""

    kinds: tuple[str, ...] = MACROS

    def __init__(self, domain: OvercookedDomain):
        self.domain = domain

    def kind_of(self, action: str) -> str:
        return self.domain.parse_action(action)[0]
