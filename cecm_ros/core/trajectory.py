"""Distances between joint state trajectories.

A trajectory is the sequence of joint states s_0..s_H, each a set of true propositions.
Two trajectories of different lengths are compared after padding the shorter one with
its own final state (a finished team stays where it is) up to the longer length H.
The Jaccard distance is then taken over time-indexed propositions:

    J(a, b) = 1 - sum_t |a_t & b_t| / sum_t |a_t | b_t|,   t = 0..H

so a plan that reaches the same states one step later, or that differs in who carried
an item, is at a small distance, while a different allocation over a whole task is far.
"""

from __future__ import annotations

from collections.abc import Sequence


def jaccard_distance(first: Sequence[int], second: Sequence[int]) -> float:
    """Time-indexed Jaccard distance of two bitmask trajectories (see module doc)."""
    if not first or not second:
        raise ValueError('a trajectory needs at least one state')
    length = max(len(first), len(second))
    shared = union = 0
    for t in range(length):
        a = first[t] if t < len(first) else first[-1]
        b = second[t] if t < len(second) else second[-1]
        shared += (a & b).bit_count()
        union += (a | b).bit_count()
    return 0.0 if union == 0 else 1.0 - shared / union


def min_jaccard_distance(candidates: Sequence[Sequence[int]], observed: Sequence[int]) -> float:
    """Distance of the closest candidate (CE-CM-Div's set-based comparison)."""
    return min(jaccard_distance(candidate, observed) for candidate in candidates)
