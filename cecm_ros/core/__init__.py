"""ROS-free core of cecm_ros: the household model, joint planning, CE-CM and experiments.

Nothing in this package imports rclpy, so planning researchers can use and test it
without a ROS installation; the ROS nodes in ``cecm_ros.nodes`` are thin wrappers.
"""
