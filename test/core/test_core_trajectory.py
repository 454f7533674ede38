"""Jaccard distances between the sets of states two trajectories visit."""

import numpy as np
import pytest

from cecm_ros.core.trajectory import jaccard_distance, min_jaccard_distance


def test_identical_trajectories_are_at_distance_zero():
    trajectory = [0b0011, 0b0110, 0b1100]
    assert jaccard_distance(trajectory, list(trajectory)) == 0.0


def test_disjoint_trajectories_are_at_distance_one():
    assert jaccard_distance([0b0011, 0b0111], [0b1100, 0b0100]) == 1.0


def test_states_are_compared_whole_not_proposition_by_proposition():
    # 0b0111 and 0b0110 share two propositions but are different joint states.
    assert jaccard_distance([0b0111], [0b0110]) == 1.0


def test_hand_computed_example_of_visited_state_sets():
    first = [0b0001, 0b0011, 0b0111, 0b1111]
    second = [0b0001, 0b0101, 0b0111]
    # visited: {1, 3, 7, 15} and {1, 5, 7}: shared {1, 7}, union {1, 3, 5, 7, 15}
    assert jaccard_distance(first, second) == pytest.approx(1 - 2 / 5)


def test_lengths_need_no_alignment_and_revisits_count_once():
    on_time = [0b001, 0b110]
    late = [0b001, 0b001, 0b001, 0b110]
    assert jaccard_distance(on_time, late) == 0.0
    detour = [0b001, 0b011, 0b110]
    assert jaccard_distance(on_time, detour) == pytest.approx(1 - 2 / 3)


@pytest.mark.parametrize('seed', range(5))
def test_symmetric_and_bounded(seed):
    rng = np.random.default_rng(seed)
    first = [int(x) for x in rng.integers(0, 2**12, size=int(rng.integers(1, 8)))]
    second = [int(x) for x in rng.integers(0, 2**12, size=int(rng.integers(1, 8)))]
    distance = jaccard_distance(first, second)
    assert distance == jaccard_distance(second, first)
    assert 0.0 <= distance <= 1.0


def test_empty_trajectory_is_rejected():
    with pytest.raises(ValueError, match='at least one state'):
        jaccard_distance([], [1])
    with pytest.raises(ValueError, match='at least one state'):
        jaccard_distance([1], [])


def test_min_jaccard_distance_takes_the_closest_candidate():
    observed = [0b0011, 0b0111]
    far = [0b1100, 0b1000]
    near = [0b0011, 0b0110]  # shares 1 of the 3 states the two visit
    assert min_jaccard_distance([far, near], observed) == pytest.approx(1 - 1 / 3)
    assert min_jaccard_distance([far], observed) == 1.0
    assert min_jaccard_distance([far, observed], observed) == 0.0
    with pytest.raises(ValueError):
        min_jaccard_distance([], observed)
