"""How the web panel draws a TidyUP household (rooms, doors, sinks, items, agents)."""

from __future__ import annotations

from cecm_ros.domains.pddl.model import split_atom
from cecm_ros.domains.scene import empty_scene, grid_places, slot

from .model import TidyUpModel

# A room on the floor, in metres (the page draws the same grid).
ROOM_WIDTH, ROOM_DEPTH, ROOM_GAP = 4.0, 3.0, 0.6


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

    def scene(self, state: int) -> dict:
        """The rooms in the page's grid (sinks marked, doors as links), each agent in its
        room with what it holds, the items lying in a room in rows below them."""
        drawn = self.render(state)
        house = self.domain.household
        scene = empty_scene()
        scene['places'] = grid_places(list(house.rooms),
                                      {room: 'room with sink' for room in house.sinks},
                                      ROOM_WIDTH, ROOM_DEPTH, ROOM_GAP)
        where = {place['name']: place for place in scene['places']}
        scene['links'] = [list(door) for door in house.doors] if house.doors else []
        dirty = set(drawn['dirty'])
        for index, agent in enumerate(('robot', 'human')):
            room = where.get(drawn['agents'].get(agent, ''))
            if room is None:
                continue
            x = room['x'] - room['width'] / 2 + 0.6 + 1.2 * index
            y = room['y'] + room['depth'] / 2 - 0.6
            held = drawn['holding'].get(agent)
            scene['agents'].append({'name': agent, 'x': x, 'y': y,
                                    'label': agent + (f' holds {held}' if held else '')})
            if held:
                scene['objects'].append(_item(held, dirty, x + 0.35, y - 0.35))
        lying: dict[str, int] = {}
        for item in house.items:
            room = where.get(drawn['items'].get(item.name, ''))
            if room is None:
                continue
            index = lying[room['name']] = lying.get(room['name'], -1) + 1
            scene['objects'].append(_item(item.name, dirty, *slot(room, index)))
        return scene


def _item(name: str, dirty: set[str], x: float, y: float) -> dict:
    state = 'dirty' if name in dirty else 'clean'
    return {'name': name, 'kind': f'item {state}', 'x': x, 'y': y,
            'label': name + (' (dirty)' if name in dirty else '')}
