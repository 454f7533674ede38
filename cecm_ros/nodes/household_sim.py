"""household_sim: the world simulator's first name, deprecated (issue 47). It runs
:mod:`cecm_ros.nodes.world_sim` as a node named ``household_sim``, so that a graph that
still names it starts for one more release, and says once what to run instead."""

from __future__ import annotations

from cecm_ros.nodes.common import run_node
from cecm_ros.nodes.world_sim import WorldSim

DEPRECATED = ('the executable household_sim is deprecated and will be removed: run world_sim '
              "(the node world_sim; the task manager's reset_service and the lifecycle "
              "manager's node_names now name world_sim by default)")


class HouseholdSim(WorldSim):
    def __init__(self, **kwargs):
        super().__init__('household_sim', **kwargs)
        self.get_logger().warning(DEPRECATED)


def main(args=None) -> int:
    return run_node(HouseholdSim, args)
