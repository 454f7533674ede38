"""A study of people sharing tasks with the robot, without ROS: its dataset made from
session recordings (``export``) or from simulated partners (``simulate``), and the
paper's offline re-estimation and trajectory analyses over it (``reestimate``).
The dataset format itself is the core's (:mod:`cecm_ros.core.dataset`)."""
