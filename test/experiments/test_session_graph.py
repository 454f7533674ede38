"""Which changes of the node graph interrupt a session's task (cecm_ros.session.graph)."""

from dataclasses import replace

from cecm_ros.session.graph import (
    GraphView,
    NodeStatus,
    graph_changed,
    graph_mark,
    task_nodes_active,
)

OBSERVERS = ['web_panel']


def view(recoveries=(0, 0, 0), started=(5, 0), mode='active', **changes) -> GraphView:
    nodes = [NodeStatus('executor', True, True, recoveries[0]),
             NodeStatus('capability_estimator', True, True, recoveries[1]),
             NodeStatus('web_panel', True, True, recoveries[2])]
    for index, node in enumerate(nodes):
        nodes[index] = replace(node, **changes.get(node.name, {}))
    return GraphView(mode, started, tuple(nodes))


def test_without_a_status_nothing_changes():
    assert graph_mark(None) is None
    assert not graph_changed(None, None, OBSERVERS)


def test_a_task_is_interrupted_by_its_nodes_not_by_an_observer():
    before = graph_mark(view())
    assert not graph_changed(view(), before, OBSERVERS)
    assert not graph_changed(view(recoveries=(0, 0, 1)), before, OBSERVERS)
    assert graph_changed(view(recoveries=(1, 0, 0)), before, OBSERVERS)
    assert graph_changed(view(executor={'active': False}), before, OBSERVERS)
    assert graph_changed(view(started=(9, 0)), before, OBSERVERS)   # a restarted manager
    assert graph_changed(view(), None, OBSERVERS)
    assert not graph_changed(view(web_panel={'responsive': False}), before, OBSERVERS)
    assert graph_changed(view(mode='paused'), before, OBSERVERS)


def test_one_node_s_loss_is_that_node_s_alone():
    before = graph_mark(view())
    estimator = 'capability_estimator'
    assert not graph_changed(view(recoveries=(1, 0, 0)), before, OBSERVERS, estimator)
    assert graph_changed(view(recoveries=(0, 1, 0)), before, OBSERVERS, estimator)
    assert graph_changed(view(capability_estimator={'responsive': False}), before,
                         OBSERVERS, estimator)
    assert not graph_changed(view(), before, OBSERVERS, 'no_such_node')


def test_the_graph_is_active_for_tasks_without_its_observers():
    assert task_nodes_active(view(), OBSERVERS)
    assert task_nodes_active(view(mode='recovering', web_panel={'active': False}), OBSERVERS)
    assert not task_nodes_active(view(executor={'responsive': False}), OBSERVERS)
    assert not task_nodes_active(view(mode='starting'), OBSERVERS)
