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
