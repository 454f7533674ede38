"""What the simulated partner keeps of a session's runs, without ROS
(cecm_ros/session/partner_runs.py), and the key a ranking is shared by
(cecm_ros/core/task_choice.ranking_key, which the estimator node dedupes requests with)."""

from __future__ import annotations

import time

import numpy as np

from cecm_ros.core.task_choice import ranking_key
from cecm_ros.session import partner_runs
from cecm_ros.session.partner_runs import (
    HeldIntents,
    PersonChoices,
    RunOrder,
    SentAction,
    WorldSteps,
)


def test_held_intents_are_taken_by_their_run_and_dropped_for_another():
    held = HeldIntents(most=3)
    held.hold('t1', 1, 0, 'a')
    held.hold('t1', 2, 0, 'b')
    held.hold('t1', 2, 1, 'c')
    held.drop_other_runs('t1', 2)
    assert held.take('t1', 1) == []
    assert held.take('t1', 2) == ['b', 'c'] and held.take('t1', 2) == []
    for step in range(5):
        held.hold('t2', 0, step, step)
    assert held.take('t2', 0) == [2, 3, 4]   # the newest few


def test_world_steps_count_only_since_the_run_began():
    world = WorldSteps(most=2)
    world.heard('t1', 1, 'before', True)
    time.sleep(0.01)
    world.begin_run()
    assert world.state_at('t1', 1) is None and not world.robot_failed('t1', 1)
    world.heard('t1', 1, 'state 1', True)
    world.heard('t1', 2, 'state 2', False)
    assert world.state_at('t1', 1) == 'state 1' and world.robot_failed('t1', 1)
    assert not world.robot_failed('t1', 2)
    world.heard('t1', 1, 'again', False)   # the newest: kept when a third comes
    world.heard('t1', 3, 'state 3', False)
    assert world.state_at('t1', 2) is None and world.state_at('t1', 1) == 'again'


def test_a_run_asked_for_later_supersedes_an_earlier_one():
    runs = RunOrder()
    runs.asked('t1', 0)
    runs.asked('t1', 0)   # the same request again
    assert not runs.superseded('t1', 0) and not runs.superseded('t9', 0)
    runs.asked('t1', 1)
    assert runs.superseded('t1', 0) and not runs.superseded('t1', 1)


def test_the_first_choice_of_a_step_stands():
    choices = PersonChoices(most=2)
    assert choices.choose('t1', 0, 3, 'pick cup') is None
    assert choices.choose('t1', 0, 3, 'noop') == 'pick cup'
    assert choices.of('t1', 0, 3) == 'pick cup' and choices.of('t1', 1, 3) is None
    choices.choose('t1', 0, 4, 'a')
    choices.choose('t1', 0, 5, 'b')
    assert choices.of('t1', 0, 3) is None


def test_a_sent_action_is_lost_when_refused_or_unanswered(monkeypatch):
    assert SentAction('noop', 'failed').lost()
    assert not SentAction('noop', 'taken', sent_at=0.0).lost()
    sent = SentAction('noop')
    assert not sent.lost()
    monkeypatch.setattr(partner_runs, 'GOAL_LOST_AFTER_S', 0.0)
    assert sent.lost()


class _Task:
    def __init__(self, task_id: str, key: tuple):
        self.task_id, self.key = task_id, key


def test_a_ranking_key_changes_with_what_the_ranking_depends_on():
    tasks = [_Task('a', (1,)), _Task('b', (2,))]
    vectors, weights = np.array([[True, False]]), np.array([1.0])
    key = ranking_key(tasks, vectors, weights, 0.1)
    assert key == ranking_key(list(tasks), vectors.copy(), weights.copy(), 0.1)
    assert key != ranking_key(tasks[::-1], vectors, weights, 0.1)
    assert key != ranking_key(tasks, ~vectors, weights, 0.1)
    assert key != ranking_key(tasks, vectors, np.array([0.5]), 0.1)
    assert key != ranking_key(tasks, vectors, weights, 0.2)
