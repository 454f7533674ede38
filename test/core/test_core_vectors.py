"""unique_rows gives exactly what np.unique(axis=0) gives, for boolean matrices of any
width (rows packed into bytes are compared as a whole, padding included)."""

import numpy as np
import pytest

from cecm_ros.core.vectors import unique_rows


@pytest.mark.parametrize('width', [1, 7, 8, 9, 40, 65])
def test_unique_rows_is_np_unique_along_rows(width):
    rng = np.random.default_rng(width)
    rows = rng.random((300, width)) < 0.7
    rows[:100] = rows[0]
    expected = np.unique(rows, axis=0, return_index=True, return_inverse=True,
                         return_counts=True)
    found = unique_rows(rows, return_index=True, return_inverse=True, return_counts=True)
    for mine, theirs in zip(found, expected):
        np.testing.assert_array_equal(mine, np.asarray(theirs).ravel()
                                      if mine.ndim == 1 else theirs)
    np.testing.assert_array_equal(found[0][found[2]], rows)
    np.testing.assert_array_equal(unique_rows(rows), expected[0])


def test_other_arrays_go_to_np_unique():
    rows = np.array([[2, 1], [0, 3], [2, 1]])
    np.testing.assert_array_equal(unique_rows(rows), [[0, 3], [2, 1]])
    vectors, inverse = unique_rows(rows, return_inverse=True)
    assert inverse.tolist() == [1, 0, 1]
    assert unique_rows(np.zeros((0, 4), dtype=bool)).shape == (0, 4)


def _graded_by_hand(predicted, observed):
    def differ(a, b):
        return (a ^ b).bit_count() if isinstance(a, int) and isinstance(b, int) else \
            int(a != b)
    forward = np.mean([min(differ(s, t) for t in predicted) for s in observed])
    backward = np.mean([min(differ(s, t) for t in observed) for s in predicted])
    return (forward + backward) / 2.0


@pytest.mark.parametrize('bits', [5, 63, 64, 65, 200])
def test_graded_distance_counts_differing_propositions_of_bit_masks(bits):
    import random

    from cecm_ros.core.inference import graded_distance

    draw = random.Random(bits)
    for _ in range(50):
        predicted = [draw.getrandbits(bits) for _ in range(draw.randint(1, 12))]
        observed = [draw.getrandbits(bits) for _ in range(draw.randint(1, 12))]
        assert graded_distance(predicted, observed) == \
            pytest.approx(_graded_by_hand(predicted, observed))
    tuples = [(1, 2), (3, 4)], [(1, 2), (5, 6), (7, 8)]
    assert graded_distance(*tuples) == pytest.approx(_graded_by_hand(*tuples))
