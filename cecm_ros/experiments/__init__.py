"""Experiment harness: simulated runs, sweeps (Ray) and benchmarks over the ROS-free core."""
