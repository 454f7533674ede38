"""The node graph takes any domain: the stub (test/stub_domain.py), installed as a plug-in
by an entry point, runs through `cecm demo`'s real node processes over DDS (world_sim
with the default single skill kind, the facts panel view) and the robot learns its
partner."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from graph_fixtures import RosDomain, installed_or_skip, scaled
from paths import TEST_DIR, VENV

pytest.importorskip('rclpy', reason='needs rclpy (make build)')


@pytest.fixture
def plugin_site(tmp_path):
    """A site folder with a distribution that declares the stub in ``cecm_ros.domains``."""
    info = tmp_path / 'site' / 'errands_stub-1.0.dist-info'
    info.mkdir(parents=True)
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: errands-stub\nVersion: 1.0\n')
    (info / 'entry_points.txt').write_text('[cecm_ros.domains]\nerrands = stub_domain:SPEC\n')
    return info.parent


def test_a_plugin_domain_runs_through_the_node_graph(tmp_path, plugin_site):
    installed_or_skip('world_sim')
    ros = RosDomain()
    try:
        env = dict(ros.env)
        env['PYTHONPATH'] = os.pathsep.join(
            filter(None, [str(plugin_site), str(TEST_DIR), env.get('PYTHONPATH', '')]))
        out = tmp_path / 'demo'
        done = subprocess.run(
            [str(VENV / 'bin' / 'cecm'), 'demo', '--domain', 'errands',
             '--tasks', '3', '--samples', '100', '--seed', '1', '--no-plan-store',
             '--out', str(out)],
            env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=scaled(300), stdin=subprocess.DEVNULL)
    finally:
        ros.release()
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['domain'] == 'errands'
    assert summary['source'] == 'cecm_ros node graph (task_manager)'
    assert len(summary['per_task']) == 3
    last = summary['per_task'][-1]
    # The partner runs the letter errand only; the robot learns it and claims nothing
    # false as known.
    assert last['wrong_known']['mean'] == 0.0, log[-3000:]
    assert last['hamming']['mean'] <= 0.25, log[-3000:]
    assert summary['report']['status']['run-letter'] == 'known_present'
    # The world node ran the stub's single skill kind and drew nothing domain-specific.
    world_log = (out / 'logs' / 'world_sim.log').read_text()
    assert 'skills act, wait' in world_log, world_log[-2000:]
