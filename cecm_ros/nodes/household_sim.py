"""household_sim: the world simulator (:mod:`cecm_ros.nodes.world_sim`) under the name the
TidyUP graph, its parameters file and existing users' graphs give it."""

from __future__ import annotations

from functools import partial

from cecm_ros.nodes.common import run_node
from cecm_ros.nodes.world_sim import DEFAULT_SKILLS, WorldSim

__all__ = ['DEFAULT_SKILLS', 'HouseholdSim', 'main']

HouseholdSim = partial(WorldSim, 'household_sim')


def main(args=None) -> int:
    return run_node(HouseholdSim, args)
