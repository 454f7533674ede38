"""Planner searches on a cluster: a layer between the core and the domains.

The core's :class:`~cecm_ros.core.planning.CachingPlanner` asks a
:class:`~cecm_ros.core.planning.SearchOffload` for the plans it has not got; this
package makes one that runs those searches as Ray tasks
(:mod:`cecm_ros.cluster.ray_searches`). It imports the core only: the domain registry
(``cecm_ros.domains.planner_for`` with ``ray_address``) hands in how a worker builds the
domain and its planner, and ray itself is imported only when a cluster is asked for.
"""
