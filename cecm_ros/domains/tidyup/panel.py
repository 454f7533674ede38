"""How the web panel draws a TidyUP household (rooms, doors, sinks, items, agents)."""

from __future__ import annotations

from cecm_ros.domains.pddl.model import split_atom

from .model import TidyUpModel


class HouseholdView:
    """The ``household`` renderer of the panel's page (web/app.js)."""

    def __init__(self, domain: TidyUpModel):
        self.domain = domain

    def render(self, state: int) -> dict:
        """Rooms, who stands where, what lies where and who holds what."""
        facts = self.domain.atoms_of(state)
        parts = [split_atom(f) for f in facts]
        return {
            'facts': facts, 'features': [],
            'rooms': list(self.domain.household.rooms),
            'agents': {p[1]: p[2] for p in parts if p[0] == 'agent-at'},
            'items': {p[1]: p[2] for p in parts if p[0] == 'item-at'},
            'holding': {p[1]: p[2] for p in parts if p[0] == 'holding'},
            'dirty': sorted(p[1] for p in parts if p[0] == 'dirty'),
        }

    def layout(self) -> dict:
        """The household drawing: rooms, doors, sinks and items."""
        house = self.domain.household
        return {
            'renderer': 'household', 'household': house.name, 'rooms': list(house.rooms),
            'phrases': {'move': 'go to {the}{2}', 'pick': 'pick up {the}{1}',
                        'place': 'put {the}{1} down', 'wash': 'wash {the}{1}'},
            'doors': [list(door) for door in house.doors] if house.doors is not None else None,
            'sinks': list(house.sinks),
            'items': [{'name': item.name, 'washable': item.washable,
                       'goal_rooms': list(item.goal_rooms)} for item in house.items],
        }
