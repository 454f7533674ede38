"""Distances between joint state trajectories.

A trajectory is the sequence of joint states s_0..s_H that a team went through; each
state is one binary vector over the proposition index (an int bitmask here). As in the
CE-CM paper's diversity measure, a trajectory is compared as the *set* of joint states
it visits, S_tau = {s_0, ..., s_H}, and the Jaccard distance between two trajectories is

    J(a, b) = 1 - |S_a & S_b| / |S_a | S_b|

where two states are the same only when all their propositions agree. Trajectories of
different lengths need no alignment: a plan that reaches the same states with extra
steps shares most of them, while a different allocation of work passes through
different intermediate states (who stands where, who holds what) and is far away.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def jaccard_distance(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    """Jaccard distance between the sets of states two trajectories visit."""
    if not first or not second:
        raise ValueError('a trajectory needs at least one state')
    a, b = set(first), set(second)
    return 1.0 - len(a & b) / len(a | b)


def min_jaccard_distance(candidates: Sequence[Sequence[Hashable]],
                         observed: Sequence[Hashable]) -> float:
    """Distance of the closest candidate (CE-CM-Div's set-based comparison)."""
    return min(jaccard_distance(candidate, observed) for candidate in candidates)
