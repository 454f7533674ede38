"""A domain's scene, the robot's next action, the joint plan and the belief as
``visualization_msgs/MarkerArray`` (for RViz and Foxglove): scene_markers publishes them.

The scene comes from the domain's panel view (web/panel_view.py: places, links, objects,
agents, facts, in metres); everything lies on the floor plane z = 0 of ``frame_id``, so a
fixed frame of that name needs no transform. Namespaces, one per part, so that a display
can hide any: ``places``, ``links``, ``objects``, ``agents``, ``labels``, ``next_action``,
``joint_plan``, ``belief``, ``facts``. Every array starts with a DELETEALL, so what a
state no longer has disappears.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

# Colours (r, g, b, a) by what a thing is.
PLACE_COLOURS = {'room': (0.86, 0.86, 0.82, 1.0), 'room with sink': (0.78, 0.85, 0.92, 1.0),
                 'floor': (0.93, 0.93, 0.9, 1.0), 'counter': (0.74, 0.64, 0.5, 1.0),
                 'delivery': (0.55, 0.8, 0.55, 1.0)}
OBJECT_COLOURS = {'item clean': (0.25, 0.65, 0.35, 1.0), 'item dirty': (0.55, 0.35, 0.15, 1.0),
                  'lettuce': (0.35, 0.75, 0.25, 1.0), 'onion': (0.6, 0.4, 0.7, 1.0),
                  'tomato': (0.85, 0.2, 0.15, 1.0), 'plate': (0.97, 0.97, 0.97, 1.0)}
AGENT_COLOURS = {'robot': (0.2, 0.4, 0.85, 1.0), 'human': (0.95, 0.55, 0.1, 1.0)}
# The belief: one bar per capability, coloured by what the evidence has decided.
STATUS_COLOURS = {'known_present': (0.2, 0.7, 0.3, 1.0), 'known_absent': (0.85, 0.25, 0.2, 1.0),
                  'undecided': (0.95, 0.7, 0.1, 1.0), 'never_exercised': (0.6, 0.6, 0.6, 1.0),
                  'inert': (0.35, 0.35, 0.35, 1.0), '': (0.3, 0.55, 0.9, 1.0)}
TEXT_COLOUR = (0.1, 0.1, 0.1, 1.0)
BAR_LENGTH = 3.0     # m: a capability held with probability 1
BAR_PITCH = 0.45     # m between two capabilities' bars
PLAN_LINES = 12      # joint steps listed at most


@dataclass
class Picture:
    """What the markers show, as the node last heard it."""

    scene: dict[str, Any]
    title: str = ''
    next_action: str = ''                 # the robot's next action ('' = none known)
    plan: Sequence[tuple[str, str]] = ()  # (robot, partner) actions still to come
    plan_first_step: int = 0
    belief: Any = None                    # a CapabilityBelief message


def colour(rgba: Sequence[float]) -> ColorRGBA:
    return ColorRGBA(r=float(rgba[0]), g=float(rgba[1]), b=float(rgba[2]), a=float(rgba[3]))


def pastel(name: str) -> tuple[float, float, float, float]:
    """A steady light colour for a kind no table names (a kitchen's dispensers)."""
    hue = zlib.crc32(name.encode()) % 360 / 360.0
    return (0.65 + 0.3 * hue, 0.75 - 0.2 * hue, 0.6 + 0.25 * (1 - hue), 1.0)


class _Builder:
    def __init__(self, frame_id: str, stamp):
        self.frame_id, self.stamp = frame_id, stamp
        self.markers: list[Marker] = [Marker(action=Marker.DELETEALL)]
        self.ids: dict[str, int] = {}

    def add(self, ns: str, kind: int, x: float, y: float, z: float,
            scale: tuple[float, float, float], rgba: Sequence[float], text: str = '',
            points: Sequence[tuple[float, float, float]] = ()) -> Marker:
        self.ids[ns] = self.ids.get(ns, -1) + 1
        marker = Marker(ns=ns, id=self.ids[ns], type=kind, action=Marker.ADD, text=text)
        marker.header.frame_id = self.frame_id
        marker.header.stamp = self.stamp
        marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = x, y, z
        marker.pose.orientation.w = 1.0
        marker.scale.x, marker.scale.y, marker.scale.z = scale
        marker.color = colour(rgba)
        marker.points = [Point(x=p[0], y=p[1], z=p[2]) for p in points]
        self.markers.append(marker)
        return marker

    def text(self, ns: str, x: float, y: float, z: float, text: str, size: float = 0.25):
        return self.add(ns, Marker.TEXT_VIEW_FACING, x, y, z, (0.0, 0.0, size),
                        TEXT_COLOUR, text)


def marker_array(picture: Picture, frame_id: str, stamp) -> MarkerArray:
    """The whole picture as one MarkerArray (a DELETEALL first)."""
    build = _Builder(frame_id, stamp)
    scene = picture.scene
    places = {place['name']: place for place in scene['places']}
    for place in scene['places']:
        build.add('places', Marker.CUBE, place['x'], place['y'], -0.025,
                  (place['width'] * 0.97, place['depth'] * 0.97, 0.05),
                  PLACE_COLOURS.get(place['kind']) or pastel(place['kind']))
        if len(places) <= 20:   # a kitchen's cells are not named one by one
            build.text('labels', place['x'], place['y'] + place['depth'] / 2 - 0.3, 0.1,
                       place['name'], 0.3)
    for first, second in scene['links']:
        if first in places and second in places:
            a, b = places[first], places[second]
            build.add('links', Marker.LINE_LIST, 0.0, 0.0, 0.0, (0.08, 0.0, 0.0),
                      (0.45, 0.3, 0.2, 1.0), points=[(a['x'], a['y'], 0.02),
                                                     (b['x'], b['y'], 0.02)])
    for thing in scene['objects']:
        build.add('objects', Marker.CUBE, thing['x'], thing['y'], 0.2, (0.3, 0.3, 0.3),
                  OBJECT_COLOURS.get(thing['kind']) or pastel(thing['kind']))
        build.text('labels', thing['x'], thing['y'], 0.5, thing['label'], 0.18)
    robot = None
    for agent in scene['agents']:
        shape = Marker.CUBE if agent['name'] == 'robot' else Marker.CYLINDER
        build.add('agents', shape, agent['x'], agent['y'], 0.3, (0.45, 0.45, 0.6),
                  AGENT_COLOURS.get(agent['name'], (0.5, 0.5, 0.5, 1.0)))
        build.text('labels', agent['x'], agent['y'], 0.9, agent['label'], 0.22)
        robot = agent if agent['name'] == 'robot' else robot
    left, top, right, bottom = _bounds(scene)
    if picture.title:
        build.text('labels', (left + right) / 2, top + 0.7, 0.0, picture.title, 0.35)
    _next_action(build, picture.next_action, robot, places, (left + right) / 2, top)
    _plan(build, picture, robot, places, left, bottom)
    _belief(build, picture.belief, right + 1.0, top)
    if scene['facts']:
        lines = scene['facts'][:40]
        build.text('facts', left + 2.0, top - 0.15 * len(lines), 0.0, '\n'.join(lines), 0.2)
    return MarkerArray(markers=build.markers)


def _bounds(scene: dict) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the places, or a 4 m square."""
    if not scene['places']:
        return 0.0, 0.0, 4.0, -4.0
    return (min(p['x'] - p['width'] / 2 for p in scene['places']),
            max(p['y'] + p['depth'] / 2 for p in scene['places']),
            max(p['x'] + p['width'] / 2 for p in scene['places']),
            min(p['y'] - p['depth'] / 2 for p in scene['places']))


def target_place(action: str, places: dict) -> dict | None:
    """The last argument of ``action`` that names a place: where it goes or works."""
    for word in reversed(action.strip().strip('()').split()[1:]):
        if word in places:
            return places[word]
    return None


def _next_action(build: _Builder, action: str, robot: dict | None, places: dict,
                 x: float, top: float) -> None:
    if not action:
        return
    at = robot or {'x': x, 'y': top + 0.3}
    build.text('next_action', at['x'], at['y'], 1.4, f'next: {action}', 0.28)
    target = target_place(action, places)
    if robot is not None and target is not None and \
            abs(target['x'] - at['x']) + abs(target['y'] - at['y']) > 1.0:
        build.add('next_action', Marker.ARROW, 0.0, 0.0, 0.0, (0.12, 0.25, 0.3),
                  AGENT_COLOURS['robot'], points=[(at['x'], at['y'], 0.7),
                                                  (target['x'], target['y'], 0.7)])


def _plan(build: _Builder, picture: Picture, robot: dict | None, places: dict,
          left: float, bottom: float) -> None:
    """The joint steps to come as text below the scene, and the robot's route through
    the places its actions name."""
    steps = list(picture.plan)[:PLAN_LINES]
    if not steps:
        return
    lines = [f'{picture.plan_first_step + i}: robot {r}  |  partner {h}'
             for i, (r, h) in enumerate(steps)]
    if len(picture.plan) > PLAN_LINES:
        lines.append(f'... {len(picture.plan) - PLAN_LINES} more steps')
    lines.insert(0, 'joint plan:')
    build.text('joint_plan', left + 4.0, bottom - 0.25 - 0.15 * len(lines), 0.0,
               '\n'.join(lines), 0.22)
    route = [(robot['x'], robot['y'], 0.05)] if robot is not None else []
    for robot_action, _ in picture.plan:
        target = target_place(robot_action, places)
        if target is not None and (not route or route[-1][:2] != (target['x'], target['y'])):
            route.append((target['x'], target['y'], 0.05))
    if len(route) > 1:
        build.add('joint_plan', Marker.LINE_STRIP, 0.0, 0.0, 0.0, (0.06, 0.0, 0.0),
                  (0.2, 0.4, 0.85, 0.7), points=route)


def _belief(build: _Builder, belief: Any, x: float, top: float) -> None:
    """One horizontal bar per capability (its length: theta), coloured by its status,
    with its name and value."""
    if belief is None:
        return
    build.text('belief', x + BAR_LENGTH / 2, top + 0.4, 0.0,
               f'belief about {belief.partner_id} after {belief.tasks_seen} tasks', 0.28)
    statuses = list(belief.status) or [''] * len(belief.capability_names)
    for index, (name, theta, status) in enumerate(zip(belief.capability_names, belief.theta,
                                                      statuses)):
        y = top - index * BAR_PITCH
        build.add('belief', Marker.CUBE, x + BAR_LENGTH / 2, y, 0.0,
                  (BAR_LENGTH, 0.3, 0.02), (0.9, 0.9, 0.9, 1.0))
        length = max(0.02, BAR_LENGTH * float(theta))
        build.add('belief', Marker.CUBE, x + length / 2, y, 0.02, (length, 0.3, 0.04),
                  STATUS_COLOURS.get(status, STATUS_COLOURS['']))
        words = f'{name} {float(theta):.2f}' + (f' {status.replace("_", " ")}' if status else '')
        build.text('belief', x + BAR_LENGTH + 1.6, y, 0.0, words, 0.2)
