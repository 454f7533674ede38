"""docs/nodes.md documents every parameter every node declares, with its default."""

from __future__ import annotations

import importlib
import re
import threading

import pytest
from paths import REPO  # noqa: E402

rclpy = pytest.importorskip('rclpy')

DOC = REPO / 'docs' / 'nodes.md'
NODES = {'world_sim': 'WorldSim', 'joint_planner': 'JointPlannerNode',
         'capability_estimator': 'CapabilityEstimator', 'simulated_human': 'SimulatedHumanNode',
         'executor': 'Executor', 'task_manager': 'TaskManager', 'web_panel': 'WebPanel',
         'skill_bridge': 'SkillBridge', 'scene_markers': 'SceneMarkers',
         'joy_corrections': 'JoyCorrections', 'paced_partner': 'PacedPartner'}
# Documented once for every node, at the top of the section "Nodes".
COMMON = {'use_sim_time', 'start_type_description_service', 'domain',
          'tidyup.household', 'tidyup.capabilities', 'overcooked.file',
          'diagnostics_period_s'}


def _section(node: str) -> str:
    text = DOC.read_text()
    start = text.index(f'#### {node}')
    end = text.find('\n#### ', start + 1)
    return text[start:end if end > 0 else None]


def _documented(section: str) -> dict[str, str]:
    """Parameter name -> documented default, from the section's table rows."""
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or not cells[0].startswith('`'):
            continue
        names = re.findall(r'`([^`]+)`', cells[0])
        defaults = re.findall(r'`([^`]*)`', cells[1])
        for index, name in enumerate(names):
            rows[name] = defaults[min(index, len(defaults) - 1)] if defaults else ''
    return rows


def _text(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, list):
        return '[' + ', '.join(str(v) for v in value) + ']'
    return str(value) if value != '' else "''"


@pytest.fixture(scope='module')
def declared():
    context = rclpy.Context()
    rclpy.init(context=context)
    found = {}
    try:
        nodes = [(module, getattr(importlib.import_module(f'cecm_ros.nodes.{module}'), name)(
            context=context)) for module, name in NODES.items()]
        from cecm_ros.nodes.lifecycle_manager import LifecycleManager

        nodes.append(('lifecycle_manager', LifecycleManager(threading.Event(),
                                                            context=context)))
        for module, node in nodes:
            found[module] = {p: node.get_parameter(p).value for p in node._parameters
                             if p not in COMMON}
            node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    return found


@pytest.mark.parametrize('node', [*NODES, 'lifecycle_manager'])
def test_every_parameter_is_documented_with_its_default(declared, node):
    rows = _documented(_section(node))
    for name, value in declared[node].items():
        if name.startswith('skills.'):   # one row: skills.move ... skills.wait
            assert 'skills.move' in rows and rows['skills.move'] == 'robot/skills/<kind>'
            assert value == f'robot/skills/{name.split(".")[1]}'
            continue
        assert name in rows, f'{node}: parameter {name!r} is not documented'
        assert rows[name] == _text(value), \
            f'{node}.{name}: documented {rows[name]!r}, declared {value!r}'
