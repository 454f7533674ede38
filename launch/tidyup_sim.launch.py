"""The simulated TidyUP node graph under the name it has always had: the graph of
cecm_graph.launch.py (world node ``world_sim``, config/tidyup_sim.yaml, TidyUP by
default). Every argument is that file's.

    ros2 launch cecm_ros tidyup_sim.launch.py num_tasks:=2 samples:=60
    ros2 launch cecm_ros tidyup_sim.launch.py web:=true answer_intents:=false
    ros2 launch cecm_ros tidyup_sim.launch.py play:=true     # a person plays the partner
"""

import importlib.util
import os


def _graph_module():
    # A launch file is loaded by path, not imported: load its neighbour the same way.
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cecm_graph.launch.py')
    spec = importlib.util.spec_from_file_location('cecm_graph_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_launch_description():
    return _graph_module().graph_description()
