"""The process graph's respawn (launch's respawn=True) and its guard against a process
that fails at every start."""

from __future__ import annotations

import sys
import time

from cecm_ros.tools.process_graph import ProcessGraph

FAIL_AT_START = [sys.executable, '-c', 'import sys; sys.exit(3)']


def _wait(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_process_failing_at_every_start_is_given_up_after_the_limit(tmp_path):
    reports: list[str] = []
    graph = ProcessGraph({}, tmp_path, respawn=True, respawn_delay_s=0.05,
                         report=reports.append, crash_loop_limit=3)
    try:
        graph.start('broken', FAIL_AT_START, stream=True)
        assert _wait(lambda: graph.ended() == [('broken', 3)])
        assert graph.respawns['broken'] == 2 and graph.given_up == {'broken'}
        assert any('3 times in a row' in r and 'not respawned again' in r for r in reports)
        assert 'not respawned again' in graph.log('broken')
        lines = []
        while not graph.lines.empty():
            lines.append(graph.lines.get_nowait())
        assert ('broken', None) in lines   # a streamed process's end reaches its reader
    finally:
        graph.stop()


def test_a_process_that_lived_long_enough_is_respawned_again(tmp_path):
    """With crash_loop_s 0 no exit is quick: the respawns go on past the limit."""
    graph = ProcessGraph({}, tmp_path, respawn=True, respawn_delay_s=0.05,
                         crash_loop_s=0.0, crash_loop_limit=2)
    try:
        graph.start('flaky', FAIL_AT_START)
        assert _wait(lambda: graph.respawns['flaky'] >= 4)
        assert graph.given_up == set() and graph.ended() == []
    finally:
        graph.stop()
