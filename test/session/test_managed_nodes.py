"""The lifecycle manager's bookkeeping of its nodes, without ROS
(cecm_ros/session/managed_nodes.py): losses and returns, the back-off of failed
bring-ups, the health on /diagnostics and the graph's mode."""

from __future__ import annotations

import threading
import time

import pytest

from cecm_ros.session.managed_nodes import (
    ACTIVE,
    FINALIZED,
    INACTIVE,
    MAX_RETRY_DELAY_S,
    UNCONFIGURED,
    ErrorLines,
    ManagedNode,
    graph_mode,
)


def test_the_states_are_the_lifecycle_messages_own():
    state = pytest.importorskip('lifecycle_msgs.msg').State
    assert (UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED) == (
        state.PRIMARY_STATE_UNCONFIGURED, state.PRIMARY_STATE_INACTIVE,
        state.PRIMARY_STATE_ACTIVE, state.PRIMARY_STATE_FINALIZED)


def test_a_node_that_never_answered_is_told_once_and_one_that_answered_never():
    silent = ManagedNode()
    for _ in range(2):
        silent.missed(3)
        assert not silent.never_answered(3)
    silent.missed(3)
    assert silent.never_answered(3)
    silent.missed(3)
    assert not silent.never_answered(3)                 # said once
    answered = ManagedNode()
    answered.answered(UNCONFIGURED, 1.0)
    brought_up = ManagedNode(state=ACTIVE)              # answered the start-up's calls
    for node in (answered, brought_up):
        for _ in range(5):
            node.missed(3)
        assert not node.never_answered(3)


def test_a_node_is_lost_after_the_misses_in_a_row_and_a_return_is_a_recovery():
    node = ManagedNode()
    assert not node.missed(2) and not node.missed(2)   # never answered: not lost
    assert not node.answered(ACTIVE, 1.0)
    assert (node.responsive, node.was_active, node.recoveries) == (True, True, 0)
    assert not node.missed(2)
    assert node.missed(2) and node.lost and not node.responsive
    assert not node.missed(2)                          # lost once, said once
    assert node.answered(UNCONFIGURED, 5.0)            # a respawned process
    assert node.lost and node.recoveries == 0 and node.misses == 0
    node.became_active()
    assert (node.state, node.lost, node.recoveries) == (ACTIVE, False, 1)
    assert not node.answered(ACTIVE, 6.0) and node.recoveries == 1


def test_a_node_that_leaves_active_is_lost_until_it_is_back():
    node = ManagedNode()
    node.answered(ACTIVE, 1.0)
    assert not node.answered(INACTIVE, 2.0)   # it answers: no news of answering again
    assert node.lost
    assert not node.answered(ACTIVE, 3.0)
    assert not node.lost and node.recoveries == 1


def test_failed_bring_ups_wait_longer_each_time_until_the_manager_gives_up():
    node = ManagedNode()
    assert node.due(0.0)
    assert [node.failed(5, 100.0) for _ in range(4)] == [2.0, 4.0, 8.0, 16.0]
    assert not node.due(115.0) and node.due(116.0)
    assert node.failed(5, 200.0) is None and node.gave_up and not node.due(1e9)
    node.afresh()
    assert (node.failures, node.gave_up) == (0, False) and node.due(0.0)
    unlimited = ManagedNode()
    assert max(unlimited.failed(0, 0.0) for _ in range(10)) == MAX_RETRY_DELAY_S
    node.failed(5, 0.0)
    node.became_active()
    assert node.failures == 0


def test_the_health_says_stale_warn_error_or_ok():
    node = ManagedNode()
    level, message, values = node.health(3, 10.0)
    assert (level, message) == ('stale', 'not heard yet')
    assert values['silent_s'] == 'never answered' and values['lifecycle_state'] == 'unknown'
    node.answered(INACTIVE, 10.0)
    assert node.health(3, 11.0)[:2] == ('warn', 'inactive: not serving')
    node.answered(ACTIVE, 12.0)
    level, message, values = node.health(3, 12.5)
    assert (level, message, values['lifecycle_state'], values['silent_s']) == \
        ('ok', 'active', 'active', 0.5)
    for _ in range(3):
        node.missed(3)
    assert node.health(3, 14.0)[:2] == \
        ('stale', 'no answer to the heartbeat for 2.0 s (died or hangs)')
    node.reason = 'configure failed'
    for _ in range(2):
        node.failed(2, 0.0)
    assert node.health(3, 14.0)[:2] == \
        ('error', 'given up after 2 failed bring-ups: configure failed')


def test_the_graph_is_recovering_while_a_node_is_not_active():
    up, down = ManagedNode(), ManagedNode()
    up.answered(ACTIVE, 1.0)
    assert graph_mode('active', [up, down]) == ('recovering', False)
    down.answered(ACTIVE, 1.0)
    assert graph_mode('active', [up, down]) == ('active', True)
    assert graph_mode('paused', [up, down]) == ('paused', False)
    assert down.reported() == (ACTIVE, 'active')
    down.missed(1)
    assert down.reported() == (0, 'unknown')


def test_an_error_line_is_waited_for_and_only_a_new_one_counts():
    lines = ErrorLines()
    lines.heard('world_sim', 'old')
    time.sleep(0.01)
    since = time.monotonic()
    assert lines.since('world_sim', since, 0.0) == ''
    late = threading.Timer(0.05, lines.heard, ('world_sim', 'no such household'))
    late.start()
    assert lines.since('world_sim', since, 5.0) == 'no such household'
    assert lines.since('joint_planner', since, 0.0) == ''
