"""ROS-free, domain-free core of cecm_ros: CE-CM's inference, task choice, metrics,
experiments and sessions over the domain interface of :mod:`cecm_ros.core.domain`.

Nothing in this package imports rclpy or a domain (tests check both); domains live in
``cecm_ros.domains`` and the ROS nodes in ``cecm_ros.nodes`` are thin wrappers.
"""
