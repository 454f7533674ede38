"""The ROS 2 node graph of cecm_ros: one module per node, each a lifecycle node.

Nodes translate messages to core values (``conversions``), call the ROS-free core
(``cecm_ros.core``) and publish the answers; no algorithm lives here.
"""
