"""Before a task's first intent the executor waits for every listener the demo starts on
robot/intent: the partner, the web panel, the recorder and scene_markers each count, so
that one of them matching first cannot let the intent go out unheard by another (a
recording once lost a session's first intent that way)."""

from __future__ import annotations

import pytest
import yaml
from paths import REPO

from cecm_ros.cli.main import build_parser
from cecm_ros.tools.demo_graph import write_params


@pytest.mark.parametrize(('flags', 'listeners'), [
    ([], 1),
    (['--markers'], 2),
    (['--record'], 3),               # the recorder, and the markers a recording shows
    (['--web'], 2),
    (['--web', '--markers'], 3),
    (['--web', '--record'], 4),
])
def test_every_listener_the_demo_starts_is_waited_for(tmp_path, flags, listeners):
    args = build_parser().parse_args(['demo', f'--out={tmp_path}', *flags])
    args.partner = 'low_capability'
    path = write_params(REPO / 'config' / 'tidyup_sim.yaml', args, tmp_path)
    executor = yaml.safe_load(path.read_text())['executor']['ros__parameters']
    assert executor['intent_subscribers'] == listeners


@pytest.mark.parametrize(('flags', 'planned_ahead'), [([], True), (['--no-plan-ahead'], False)])
def test_the_estimator_plans_ahead_unless_the_demo_is_told_not_to(tmp_path, flags,
                                                                   planned_ahead):
    args = build_parser().parse_args(['demo', f'--out={tmp_path}', *flags])
    args.partner = 'low_capability'
    path = write_params(REPO / 'config' / 'tidyup_sim.yaml', args, tmp_path)
    estimator = yaml.safe_load(path.read_text())['capability_estimator']['ros__parameters']
    assert estimator.get('plan_ahead', True) is planned_ahead
