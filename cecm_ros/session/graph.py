"""Which changes in the node graph interrupt a task, read from the lifecycle manager's
status (its GraphStatus, without ROS).

A mark is what the graph looked like when a run began: when the manager started and
how often it has brought each node back. A task is interrupted when a node it needs
was lost or came back since its mark; nodes that only show or relay what the others do
(the ``observers``, e.g. a web panel) are healed without interrupting anyone.
"""

from __future__ import annotations

from dataclasses import dataclass

Mark = tuple[tuple[int, int], tuple[int, ...]]


@dataclass(frozen=True)
class NodeStatus:
    name: str
    active: bool        # in the lifecycle state 'active'
    responsive: bool    # answers the manager
    recoveries: int     # times the manager brought it back


@dataclass(frozen=True)
class GraphView:
    mode: str                          # the manager's: 'active', 'recovering', ...
    manager_started: tuple[int, int]   # (sec, nanosec): a restarted manager counts anew
    nodes: tuple[NodeStatus, ...]


def graph_mark(graph: GraphView | None) -> Mark | None:
    """What the graph looks like: (manager start, recoveries of every node)."""
    if graph is None:
        return None
    return graph.manager_started, tuple(n.recoveries for n in graph.nodes)


def task_nodes_active(graph: GraphView, observers: list[str]) -> bool:
    """The manager is up (not starting, paused or stopped) and every managed node but
    the observers is active and answers: ``all_active`` with the observers left out
    (an inactive observer makes the manager report 'recovering')."""
    return graph.mode in ('active', 'recovering') and all(
        entry.responsive and entry.active
        for entry in graph.nodes if entry.name not in observers)


def graph_changed(graph: GraphView | None, before: Mark | None, observers: list[str],
                  node: str = '') -> bool:
    """A node (``node``, or any but the ``observers``) was lost or came back since
    ``before`` (a restarted manager counts from zero, so then any return is news)."""
    now = graph_mark(graph)
    if graph is None or now is None:
        return False
    if not node:
        if before is None or now[0] != before[0]:
            return True
        return not task_nodes_active(graph, observers) or any(
            index >= len(before[1]) or now[1][index] != before[1][index]
            for index, entry in enumerate(graph.nodes) if entry.name not in observers)
    entries = [(i, n) for i, n in enumerate(graph.nodes) if n.name == node]
    if not entries:
        return False
    index, entry = entries[0]
    if not entry.responsive or before is None or now[0] != before[0]:
        return True
    return index < len(before[1]) and now[1][index] != before[1][index]
