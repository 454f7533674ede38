"""A session of tasks as the node graph runs it: ROS-free records, journal and runner."""
