"""Time-indexed Jaccard distances between bitmask trajectories."""

import numpy as np
import pytest

from cecm_ros.core.trajectory import jaccard_distance, min_jaccard_distance


def test_identical_trajectories_are_at_distance_zero():
    trajectory = [0b0011, 0b0110, 0b1100]
    assert jaccard_distance(trajectory, list(trajectory)) == 0.0


def test_disjoint_trajectories_are_at_distance_one():
    assert jaccard_distance([0b0011, 0b0011], [0b1100, 0b0100]) == 1.0


def test_empty_states_count_as_identical():
    assert jaccard_distance([0], [0, 0]) == 0.0


def test_hand_computed_example_pads_the_shorter_with_its_final_state():
    first = [0b0011, 0b0111, 0b1111]
    second = [0b0001, 0b0101]
    # t=0: 0011 vs 0001 -> shared 1, union 2
    # t=1: 0111 vs 0101 -> shared 2, union 3
    # t=2: 1111 vs 0101 (second padded with its final state) -> shared 2, union 4
    assert jaccard_distance(first, second) == pytest.approx(1 - 5 / 9)
    # Padding with an empty state instead would give 1 - 3/9: not what the module says.
    assert jaccard_distance(first, second) != pytest.approx(1 - 3 / 9)


def test_reaching_the_same_states_later_is_close_but_not_zero():
    on_time = [0b001, 0b110, 0b110, 0b110]
    late = [0b001, 0b001, 0b110]
    # t=0: 1/1, t=1: 0/3, t=2: 2/2, t=3 (late padded): 2/2 -> 1 - 5/8
    assert jaccard_distance(on_time, late) == pytest.approx(3 / 8)
    assert jaccard_distance(on_time, on_time[:2]) == 0.0  # the tail repeats the final state


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
    near = [0b0011, 0b0110]  # t=0: 2 of 2, t=1: 2 of 3 -> 1 - 4/5
    assert min_jaccard_distance([far, near], observed) == pytest.approx(0.2)
    assert min_jaccard_distance([far], observed) == 1.0
    assert min_jaccard_distance([far, observed], observed) == 0.0
    with pytest.raises(ValueError):
        min_jaccard_distance([], observed)
