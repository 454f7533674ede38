"""The estimator's searches on a Ray cluster (planner option ``ray_address``): the same
belief as searching here, on a local head of 2 CPUs; an address nothing answers at is
refused at once, naming it; a cluster lost during an update fails that update and keeps
the belief, and the next update connects again."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import time

import numpy as np
import pytest

from cecm_ros.cli.main import main as cecm_main
from cecm_ros.cluster import ray_searches
from cecm_ros.cluster.ray_searches import ClusterError, chunks_of, parse_address
from cecm_ros.core.errors import ConfigError
from cecm_ros.core.estimator import EstimatorSettings, make_estimator
from cecm_ros.core.hypotheses import evaluator_for
from cecm_ros.domains import load_domain, planner_for
from cecm_ros.domains.tidyup.tasks import TaskGenerator

IN_CI = os.environ.get('CI', '').lower() in ('true', '1', 'yes')
TASKS = 3
SAMPLES = 80


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture(scope='module')
def ray_installed():
    if importlib.util.find_spec('ray') is None:
        if IN_CI:
            pytest.fail(f'CI=true: the Ray tests must run, but ray is not installed in '
                        f'{sys.prefix} (make venv installs it)')
        pytest.skip('ray is not installed (make venv installs it)')


@pytest.fixture(scope='module')
def tidyup():
    return load_domain('tidyup')


@pytest.fixture(scope='module')
def evidence(tidyup):
    """A few seeded tasks and what a low-capability partner did in each (planned here)."""
    tasks = TaskGenerator(tidyup, 5).tasks(TASKS + 1)     # the last after a lost cluster
    truth = tidyup.catalog.resolve('low_capability')
    with planner_for(tidyup, workers=2, plan_cache=False) as planner:
        return [(task, planner.plan(task, truth).trajectory) for task in tasks]


def estimator(model, planner):
    return make_estimator('cecm', model, evaluator_for('cecm', planner),
                          EstimatorSettings(samples=SAMPLES), seed=5)


def snapshot(belief) -> str:
    """Everything the belief is (particles, weights, evidence, reports), as text."""
    return json.dumps(belief.to_dict(), sort_keys=True, default=str)


@pytest.fixture(scope='module')
def local_run(tidyup, evidence):
    """The updates searched in this process: per task, the report and the belief."""
    with planner_for(tidyup, workers=2, plan_cache=False) as planner:
        cecm = estimator(tidyup, planner)
        steps, calls = [], []
        for task, observed in evidence:
            report = cecm.update(task, observed)
            steps.append((report, cecm.belief.theta.copy(), snapshot(cecm.belief)))
            calls.append(planner.calls)
        return steps, calls


# ------------------------------------------------------------------ without a cluster
def test_addresses_are_checked_before_ray_is_asked():
    assert parse_address('auto') == ('auto', None)
    assert parse_address('local:2') == ('local', 2)
    assert parse_address(' 10.0.0.5:6379 ') == ('head', ('10.0.0.5', 6379))
    assert parse_address('ray://head.example:10001') == ('client', ('head.example', 10001))
    for bad in ('local:0', 'local:two', 'head', 'http://head:80/x', '10.0.0.5:0', ':6379'):
        with pytest.raises(ConfigError, match='auto, HOST:PORT, ray://HOST:PORT or local:N'):
            parse_address(bad)


def test_chunks_deal_the_long_searches_out_and_cover_every_vector():
    vectors = [np.array(bits, dtype=bool) for bits in
               ([1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 0, 1])]
    chunks = chunks_of(vectors, 2)
    assert sorted(i for chunk in chunks for i in chunk) == list(range(5))
    assert [chunk[0] for chunk in chunks] == [1, 2]     # the fewest capabilities first
    assert chunks_of(vectors, 9) == [[1], [2], [4], [3], [0]]


def test_without_ray_the_error_says_how_to_install_it(tidyup, monkeypatch):
    assert ray_searches._CONNECTION is None            # no cluster left by another test
    monkeypatch.setitem(sys.modules, 'ray', None)      # import ray fails
    with pytest.raises(ConfigError, match=r'needs ray.*pip install ray'):
        planner_for(tidyup, ray_address='local:1')


def test_an_address_nothing_answers_at_is_refused_at_once(tidyup, ray_installed, capsys):
    address = f'127.0.0.1:{free_port()}'
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f'cannot connect to the Ray cluster at {address}'):
        planner_for(tidyup, ray_address=address)
    assert time.monotonic() - started < 30     # ray.init alone waits for minutes
    assert ray_searches._CONNECTION is None
    # The command says so and stops before any run.
    assert cecm_main(['experiment', '--ray-address', address, '--runs', '1', '--tasks', '1',
                      '--samples', '10', '--heldout', '0', '--no-plan-store', '--out',
                      '/nonexistent/never-written']) == 2
    assert f'cannot connect to the Ray cluster at {address}' in capsys.readouterr().err


# ------------------------------------------------------------------ on a local head
def test_the_posterior_on_a_local_head_is_the_posterior_here(tidyup, evidence, local_run,
                                                             ray_installed):
    steps, calls = local_run
    with planner_for(tidyup, workers=2, plan_cache=False, ray_address='local:2') as planner:
        offload = planner.offload
        cecm = estimator(tidyup, planner)
        for (task, observed), (report, theta, belief) in zip(evidence[:TASKS], steps):
            assert cecm.update(task, observed) == report
            assert np.array_equal(cecm.belief.theta, theta)
            assert snapshot(cecm.belief) == belief
        # Every search this process would have made was made, and on the cluster.
        assert planner.calls == calls[TASKS - 1] == offload.searches > 0
        assert offload.chunks >= TASKS and offload.processes
        assert all(pid != os.getpid() for _, pid in offload.processes)

        # The cluster is lost: the next update fails and keeps the belief as it was.
        import ray
        before = snapshot(cecm.belief)
        ray.shutdown()
        task, observed = evidence[TASKS]
        with pytest.raises(ClusterError, match='Ray cluster at local:2'):
            cecm.update(task, observed)
        assert snapshot(cecm.belief) == before
        # The next update connects again (a new local head) and learns what it would here.
        report, theta, belief = steps[TASKS]
        assert cecm.update(task, observed) == report
        assert snapshot(cecm.belief) == belief
    assert ray_searches._CONNECTION is None and not ray.is_initialized()


# ------------------------------------------------------------------ the estimator node
def test_the_estimator_node_refuses_a_cluster_it_cannot_reach_and_keeps_the_belief(
        tidyup, evidence, ray_installed, tmp_path, capfd):
    rclpy = pytest.importorskip('rclpy')
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from cecm_ros.core.partner_store import PartnerStore
    from cecm_ros.nodes.capability_estimator import CapabilityEstimator

    path = str(tmp_path / 'partners.sqlite')
    with planner_for(tidyup, workers=2, plan_cache=False) as planner:
        cecm = estimator(tidyup, planner)
        cecm.update(*evidence[0])
    store = PartnerStore(path)
    store.save('partner', cecm.belief)
    store.close()
    address = f'127.0.0.1:{free_port()}'
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = CapabilityEstimator(context=context, parameter_overrides=[
            Parameter('store_path', value=path), Parameter('ray_address', value=address),
            Parameter('plan_store', value='off')])
        refused = node.set_parameters([Parameter('ray_address', value='nowhere')])[0]
        assert not refused.successful and 'not an address' in refused.reason
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert node.planner is None
        assert f'cannot connect to the Ray cluster at {address}' in capfd.readouterr().err
        node.set_parameters([Parameter('ray_address', value='')])
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert snapshot(node.estimator.belief) == snapshot(cecm.belief)   # resumed as kept
        node.trigger_cleanup()
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
