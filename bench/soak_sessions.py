"""Soak run: several node graphs at once, each in its own namespace, under random kills.

    .venv/bin/python bench/soak_sessions.py --sessions 3 --tasks 20 --kill-every 45

Every session is the full simulated graph (six lifecycle nodes and a lifecycle manager,
respawned when they die) in namespace /soak<k>, all in one ROS domain. While they run,
one node process of a random session is killed with SIGKILL every ``--kill-every``
seconds. At the end the script reports, per session: tasks completed, node restarts,
interruptions, failed tasks, tasks lost (in the plan but not in the partner store's
log), tasks counted twice, and whether the final belief equals the belief the ROS-free
core computes for the same seed without any fault. It prints one JSON document (and
writes it with ``--out``). It is a benchmark, not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import numpy as np

from cecm_ros.core.estimator import EstimatorSettings
from cecm_ros.core.partner_store import PartnerStore
from cecm_ros.domains.pddl.planner import FastDownwardPlanner
from cecm_ros.domains.tidyup.model import TidyUpModel
from cecm_ros.experiments.experiment import ExperimentSettings, run_once
from cecm_ros.tools.process_graph import ProcessGraph
from cecm_ros.tools.ros_domain_ids import reserve_domain_id

NODES = ('world_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
         'executor', 'task_manager')
MANAGER = 'lifecycle_manager'


def installed() -> tuple[Path, Path]:
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    return (Path(get_package_prefix('cecm_ros')) / 'lib' / 'cecm_ros',
            Path(get_package_share_directory('cecm_ros')) / 'config' / 'tidyup_sim.yaml')


def start_session(graph: ProcessGraph, index: int, args, work: Path) -> dict:
    """One graph in namespace /soak<index>, seeded with its index."""
    executables, params = installed()
    namespace = f'/soak{index}'
    folder = work / f'soak{index}'
    folder.mkdir(parents=True, exist_ok=True)
    overrides = {
        'capability_estimator': {'samples': args.samples, 'seed': index,
                                 'store_path': str(folder / 'partners.sqlite')},
        'world_sim': {'partner': args.partner},
        'simulated_human': {'partner': args.partner, 'seed': index},
        'task_manager': {'partner': args.partner, 'num_tasks': args.tasks, 'seed': index,
                         'exit_when_done': True, 'heldout_tasks': 0,
                         'summary_path': str(folder / 'summary.json'),
                         'journal_dir': str(folder / 'journal')},
    }
    for name in (*NODES, MANAGER):
        command = [str(executables / name), '--ros-args', '--params-file', str(params),
                   '-r', f'__ns:={namespace}']
        for key, value in overrides.get(name, {}).items():
            command += ['-p', f'{key}:={str(value).lower() if isinstance(value, bool) else value}']
        graph.start(f'{namespace[1:]}/{name}', command)
    return {'index': index, 'folder': folder, 'namespace': namespace}


def reference(args, seed: int) -> dict:
    """The undisturbed session of this seed, computed by the core."""
    model = TidyUpModel()
    settings = ExperimentSettings(partner=args.partner, runs=1, tasks=args.tasks, seed=0,
                                  jobs=1, estimator=EstimatorSettings(samples=args.samples),
                                  heldout=0)
    with FastDownwardPlanner(model, workers=1) as planner:
        rows = run_once(model, planner, settings, run=seed)
    return {'task_ids': [r.task_id for r in rows], 'estimate': rows[-1].estimate,
            'theta': [float(v) for v in rows[-1].theta.split()]}


def finished(graph: ProcessGraph, session: dict) -> bool:
    process = graph.processes[f'soak{session["index"]}/task_manager']
    return process.poll() == 0 and (session['folder'] / 'summary.json').is_file()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sessions', type=int, default=3)
    parser.add_argument('--tasks', type=int, default=20)
    parser.add_argument('--samples', type=int, default=100)
    parser.add_argument('--partner', default='low_capability')
    parser.add_argument('--kill-every', type=float, default=45.0, metavar='S',
                        help='seconds between two kills (0: no kills)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the kill schedule')
    parser.add_argument('--timeout', type=float, default=5400.0)
    parser.add_argument('--work', default='results/soak')
    parser.add_argument('--out', help='write the JSON report here too')
    args = parser.parse_args()
    work = Path(args.work).resolve()
    # A partner store or journal left by an earlier run would be continued (its tasks
    # would count twice and the belief would not be the undisturbed one): start fresh.
    earlier = [work / 'logs', work / 'tmp', *(work / f'soak{k}' for k in range(args.sessions))]
    earlier = [path for path in earlier if path.exists()]
    for path in earlier:
        shutil.rmtree(path)
    if earlier:
        print(f'[soak] removed the files of an earlier run in {work}', flush=True)
    work.mkdir(parents=True, exist_ok=True)
    # The temporary files of a killed process stay behind: here, not in the system's.
    (work / 'tmp').mkdir()
    rng = random.Random(args.seed)
    started = time.monotonic()
    kills: list[dict] = []
    with reserve_domain_id() as domain:
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain.domain_id), TMPDIR=str(work / 'tmp'),
                   ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', PYTHONUNBUFFERED='1',
                   RCUTILS_CONSOLE_OUTPUT_FORMAT='[{severity}] [{name}]: {message}')
        graph = ProcessGraph(env, work / 'logs', respawn=True,
                             report=lambda text: print(f'[soak] {text}', flush=True))
        sessions = [start_session(graph, k, args, work) for k in range(args.sessions)]
        print(f'[soak] {args.sessions} sessions x {args.tasks} tasks in domain '
              f'{domain.domain_id}; logs in {work / "logs"}', flush=True)
        next_kill = time.monotonic() + args.kill_every
        try:
            while not all(finished(graph, s) for s in sessions):
                if time.monotonic() - started > args.timeout:
                    print('[soak] timeout', flush=True)
                    break
                if args.kill_every and time.monotonic() >= next_kill:
                    running = [s for s in sessions if not finished(graph, s)]
                    victim = f'soak{rng.choice(running)["index"]}/{rng.choice((*NODES, MANAGER))}'
                    if graph.alive(victim):
                        graph.signal(victim, signal.SIGKILL)
                        kills.append({'process': victim,
                                      'at_s': round(time.monotonic() - started, 1)})
                        print(f'[soak] killed {victim}', flush=True)
                    next_kill = time.monotonic() + args.kill_every
                time.sleep(1.0)
        finally:
            graph.stop(first=tuple(f'soak{s["index"]}/{MANAGER}' for s in sessions))
    report = {'sessions': args.sessions, 'tasks': args.tasks, 'samples': args.samples,
              'partner': args.partner, 'kill_every_s': args.kill_every,
              'wall_s': round(time.monotonic() - started, 1), 'kills': kills, 'per_session': []}
    for session in sessions:
        report['per_session'].append(check(session, graph, args))
    report['tasks_lost'] = sum(s['tasks_lost'] for s in report['per_session'])
    report['tasks_counted_twice'] = sum(s['tasks_counted_twice'] for s in report['per_session'])
    report['all_beliefs_as_undisturbed'] = all(s['belief_as_undisturbed']
                                               for s in report['per_session'])
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0 if report['tasks_lost'] == 0 and report['all_beliefs_as_undisturbed'] else 1


def check(session: dict, graph: ProcessGraph, args) -> dict:
    folder, index = session['folder'], session['index']
    summary_path = folder / 'summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    with PartnerStore(folder / 'partners.sqlite') as store:
        belief = store.load('partner')
        log = store.log('partner')
    expected = reference(args, index)
    logged = [e.task.task_id for e in log]
    restarts = {name.split('/', 1)[1]: count for name, count in graph.respawns.items()
                if name.startswith(f'soak{index}/') and count > 0}
    same = (belief is not None and belief.tasks_seen == args.tasks
            and ''.join('1' if b else '0' for b in belief.estimate) == expected['estimate']
            and bool(np.allclose(belief.theta, expected['theta'], atol=1e-3)))
    return {
        'session': session['namespace'],
        'tasks_completed': len(summary.get('per_task', [])),
        'tasks_in_log': len(log),
        'tasks_lost': len(set(expected['task_ids']) - set(logged)),
        'tasks_counted_twice': len(logged) - len(set(logged)),
        'log_in_task_order': logged == expected['task_ids'][:len(logged)],
        'restarts': restarts,
        'interruptions': len(summary.get('interruptions', [])),
        'failed_tasks': summary.get('failed_tasks', []),
        'belief_as_undisturbed': same,
    }


if __name__ == '__main__':
    sys.exit(main())
