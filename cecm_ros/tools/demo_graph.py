"""``cecm demo``: a session of a domain (TidyUP by default) run by the ROS 2 node graph.

With ``ros2 launch`` available (a full ROS 2 install) the demo runs
``launch/tidyup_sim.launch.py``; elsewhere (e.g. the PyPI wheels in .venv) it starts
the same installed executables as separate processes with the same parameters file.
Either way it streams the task manager's per-task lines, waits for the session to end
(the task manager writes ``summary.json`` into ``--out``), stops the graph with SIGINT
(SIGTERM after a grace period) and prints ``summary: PATH``.

With ``--web`` the browser correction panel (web_panel) runs too and a person answers
the robot: the simulated partner only acts its plan (``answer_intents: false``), the
robot waits ``--correction-window`` seconds for each answer, and the panel's URL (with
its access token, a random one unless ``--web-token`` gives it) is printed. With
``--play`` (which implies ``--web``) the person plays the partner too: the simulated
partner passes the person's choices to the world (``partner_behaviour: person``), the
panel offers the partner's actions, and the robot and the world give a person time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import re
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from ament_index_python.packages import (
    PackageNotFoundError,
    get_package_prefix,
    get_package_share_directory,
)

from cecm_ros.core.world_conditions import WORLD_SETTINGS
from cecm_ros.domains import load_domain
from cecm_ros.tools.options import task_choice_text
from cecm_ros.tools.process_graph import ProcessGraph, open_private, private_folder
from cecm_ros.tools.ros_domain_ids import reserve_domain_id

PACKAGE = 'cecm_ros'
NODES = ('world_sim', 'joint_planner', 'capability_estimator', 'simulated_human',
         'executor', 'task_manager')
MANAGER = 'lifecycle_manager'
WEB_PANEL = 'web_panel'
RECORDER = 'session_recorder'
MARKERS = 'scene_markers'
PAPER_SAMPLES = 500
GRACE_S = 15.0
_DOMAIN = None   # the ROS_DOMAIN_ID this demo holds, when it chose one
# "[INFO] [task_manager]: message", optionally behind ros2 launch's "[task_manager-6] ".
LINE = re.compile(r'\[(?P<severity>[A-Z]+)\] \[(?P<name>[\w/.]+)\]: (?P<message>.*)')
PANEL_URL = re.compile(r'web panel: (?P<url>http://\S+)')
# The nodes that plan, and so take the plan_store parameter.
PLANNING_NODES = ('joint_planner', 'capability_estimator', 'simulated_human', 'paced_partner',
                  'task_manager')
PARTNER, PACED_PARTNER = 'simulated_human', 'paced_partner'
OUTPUT_FORMAT = '[{severity}] [{name}]: {message}'
# Seconds the robot waits for each answer when --correction-window is not given: a
# person answering (--web), a person who also plays the partner (--play).
WEB_WINDOW_S = 30.0
PLAY_WINDOW_S = 120.0
PLAY_TIMEOUT_S = 3600.0   # with --play: a task, and the robot's skill waiting for the partner


class DemoError(Exception):
    """The demo cannot go on; the message says why and where to look."""


def _say(text: str) -> None:
    print(f'[cecm] {text}', flush=True)


def package_paths() -> tuple[Path, Path]:
    """(folder of the node executables, installed parameters file)."""
    try:
        prefix = Path(get_package_prefix(PACKAGE))
        share = Path(get_package_share_directory(PACKAGE))
    except PackageNotFoundError as error:
        raise DemoError(f'the {PACKAGE} package is not installed in this environment '
                        f'(AMENT_PREFIX_PATH); run `make build` first ({error})') from None
    executables = prefix / 'lib' / PACKAGE
    missing = [n for n in (*NODES, PACED_PARTNER, WEB_PANEL, MANAGER)
               if not (executables / n).is_file()]
    if missing:
        raise DemoError(f'node executables {missing} are missing from {executables}; '
                        'run `make build`')
    return executables, share / 'config' / 'tidyup_sim.yaml'


def write_params(base: Path, args, out: Path,
                 extra: dict[str, dict] | None = None) -> Path:
    """The installed parameters file with this demo's settings, as out/params.yaml;
    ``extra`` adds or replaces parameters per node (a study's tasks file and session)."""
    params = yaml.safe_load(base.read_text())
    spec = args.capabilities or args.partner
    settings: dict[str, dict[str, Any]] = {
        'world_sim': {'partner': spec, 'world_seed': args.seed,
                      **{name: float(getattr(args, name, 0.0) or 0.0)
                         for name in WORLD_SETTINGS}},
        partner_node(args): {'partner': spec, 'seed': args.seed},
        'task_manager': {'partner': spec, 'num_tasks': args.tasks, 'seed': args.seed,
                         'exit_when_done': True,
                         'summary_path': str((out / 'summary.json').resolve())},
        'capability_estimator': {
            'method': args.method, 'seed': args.seed,
            'store_path': str((out / 'partners.sqlite').resolve()),
            **_estimator_parameters(args)},
    }
    if getattr(args, 'no_plan_ahead', False):
        settings['capability_estimator']['plan_ahead'] = False
    settings['task_manager']['journal_dir'] = str((out / 'journal').resolve())
    if getattr(args, 'partner_behaviour', None):
        settings[partner_node(args)]['partner_behaviour'] = args.partner_behaviour
    if paced(args):
        # Nobody in lockstep: the world applies each action once its time passed and
        # reports what it sees as events; the partner acts on its own.
        settings['world_sim']['lockstep'] = False
        settings['executor'] = {'perception': 'events'}
        settings['task_manager']['partner_node'] = PACED_PARTNER
        manager_names = params.setdefault(MANAGER, {}).setdefault('ros__parameters', {})
        manager_names['node_names'] = list(graph_nodes(args))
    settings['task_manager'].update(task_choice=args.task_choice,
                                    task_candidates=args.candidates)
    # The demo stops the lifecycle manager first and gives it time to take the nodes
    # down in order (under ros2 launch every node gets SIGINT at once instead).
    manager = params.setdefault(MANAGER, {}).setdefault('ros__parameters', {})
    manager['shutdown_timeout_s'] = 20.0
    manager['exit_when_done'] = True   # a node that can never come up ends the demo
    if getattr(args, 'web', False):
        _web_settings(params, settings, args)
    # The recorder and scene_markers hear each intent too; the first must not go out
    # before every listener's subscription has matched (one counted for another would let
    # it go out unheard by the recorder).
    extra_listeners = (getattr(args, 'record', None) is not None) + markers_wanted(args)
    if extra_listeners:
        executor = settings.setdefault('executor', {})
        configured = params.get('executor', {}).get('ros__parameters', {})
        executor['intent_subscribers'] = int(executor.get(
            'intent_subscribers', configured.get('intent_subscribers', 1))) + extra_listeners
    files = {'tidyup.household': args.household, 'tidyup.capabilities': args.capabilities_file}
    domain = getattr(args, 'domain', None)
    if domain and Path(domain).is_file():
        domain = str(Path(domain).resolve())
    plan_store = 'off' if getattr(args, 'no_plan_store', False) else \
        str(Path(args.plan_store).expanduser().resolve()) if getattr(args, 'plan_store', None) \
        else ''
    for node, values in (extra or {}).items():
        settings.setdefault(node, {}).update(values)
    for node in (*graph_nodes(args), *((MARKERS,) if markers_wanted(args) else ())):
        entry = params.setdefault(node, {}).setdefault('ros__parameters', {})
        entry.update(settings.get(node, {}))
        if node in PLANNING_NODES:
            entry['plan_store'] = plan_store
        if domain:
            entry['domain'] = domain
        for key, value in files.items():
            if value:
                # Nested as in the parameters file: tidyup: {household: ...}.
                section, option = key.split('.')
                entry.setdefault(section, {})[option] = str(Path(value).resolve())
    path = out / 'params.yaml'
    with open_private(path, 'w') as written:   # it holds the panel's access token
        written.write('# Written by `cecm demo` from the installed config/tidyup_sim.yaml.\n'
                      + yaml.safe_dump(params, sort_keys=False))
    return path


def paced(args) -> bool:
    """--partner-pace-low/high: each agent at its own pace (a paced_partner)."""
    return bool(getattr(args, 'partner_pace_high', 0.0))


def partner_node(args) -> str:
    return PACED_PARTNER if paced(args) else PARTNER


def graph_nodes(args) -> tuple[str, ...]:
    """The managed nodes in start order; the panel serves before the session starts."""
    nodes = tuple(partner_node(args) if node == PARTNER else node for node in NODES)
    if not getattr(args, 'web', False):
        return nodes
    return (*nodes[:-1], WEB_PANEL, nodes[-1])


def _web_settings(params: dict, settings: dict, args) -> None:
    """A person answers from the browser: the partner stays silent, the robot waits."""
    if not paced(args):   # a paced partner answers nothing anyway
        settings[PARTNER]['answer_intents'] = False
    # The partner and the panel both hear each intent; the first must reach both.
    settings.setdefault('executor', {}).update(
        correction_window_s=correction_window(args), intent_subscribers=2)
    # A person may take the whole window at every step of a task.
    settings['task_manager']['task_timeout_s'] = 3600.0
    if playing(args):
        # The person is the partner: the simulated one passes their choices to the world,
        # which waits for them without limit, as does the robot's skill.
        settings['simulated_human']['partner_behaviour'] = 'person'
        settings['world_sim']['step_timeout_s'] = 0.0
        settings['executor']['skill_timeout_s'] = PLAY_TIMEOUT_S
        settings['task_manager']['task_timeout_s'] = PLAY_TIMEOUT_S
    # --web-token '': no token at all (the panel then warns); None was made random.
    settings[WEB_PANEL] = {'port': int(args.web_port), 'access_token': args.web_token or '',
                           'allow_without_token': args.web_token == '',
                           'play': playing(args)}
    manager = params.setdefault(MANAGER, {}).setdefault('ros__parameters', {})
    manager['node_names'] = list(graph_nodes(args))


def playing(args) -> bool:
    """--play: a person plays the partner in the panel."""
    return bool(getattr(args, 'play', False))


def correction_window(args) -> float:
    """--correction-window, else a person's time: more when they also play the partner."""
    given = getattr(args, 'correction_window', None)
    if given is not None:
        return float(given)
    return PLAY_WINDOW_S if playing(args) else WEB_WINDOW_S


def _estimator_parameters(args) -> dict:
    """The estimator node's parameters for the CLI's estimator options."""
    from cecm_ros.session.estimator_parameters import parameters_from_values
    from cecm_ros.tools.options import estimator_values

    return parameters_from_values(estimator_values(args))


def demo_environment() -> dict[str, str]:
    env = dict(os.environ)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    if not env.get('ROS_DOMAIN_ID'):
        # Held by this process for the demo's length (released when it exits).
        global _DOMAIN
        _DOMAIN = reserve_domain_id()
        env['ROS_DOMAIN_ID'] = str(_DOMAIN.domain_id)
    # A format of the caller's own (with {time}, say) is kept.
    env.setdefault('RCUTILS_CONSOLE_OUTPUT_FORMAT', OUTPUT_FORMAT)
    env['PYTHONUNBUFFERED'] = '1'
    return env


def private_ros_logs(env: dict[str, str], out: Path) -> dict[str, str]:
    """``env`` with ROS_LOG_DIR in ``out``, a folder only this user can enter (unless the
    caller set one): ROS writes every node's log lines there, the panel's URL with its
    access token too."""
    if env.get('ROS_LOG_DIR'):
        return env
    return {**env, 'ROS_LOG_DIR': str(private_folder(out / 'logs' / 'ros'))}


def time_budget(args) -> float:
    """Generous upper bound on the session's wall time (measured: ~10-60 s per task).

    With a person answering, a task may take its whole time limit (an hour).
    """
    if getattr(args, 'web', False):
        return 300.0 + args.tasks * 3700.0
    return 120.0 + args.tasks * (90.0 + 0.5 * args.samples)


def _show(line: str, quiet_names=(), play: bool = False) -> None:
    """Print the task manager's report lines, the panel's URL (and, with ``play``, how to
    play), every warning or error."""
    match = LINE.search(line)
    if not match:
        return
    name, severity, message = match['name'], match['severity'], match['message']
    url = PANEL_URL.search(message) if name == WEB_PANEL else None
    if url:
        rule = '=' * 72
        if play:
            print(f'\n{rule}\n  Play the partner from your browser: open\n\n      {url["url"]}\n\n'
                  '  Pick your action for each step by its key (0: wait); it also agrees to\n'
                  "  the robot's step. The robot: A agree, W wait, Shift+1-9 another action.\n"
                  f'{rule}\n', flush=True)
            return
        print(f'\n{rule}\n  Correct the robot from your browser: open\n\n      {url["url"]}\n\n'
              '  Agree, Wait or pick another action for each step (keys A, W, 1-9);\n'
              '  silence for the whole window counts as agreeing.\n'
              f'{rule}\n', flush=True)
    elif name == 'task_manager' and severity == 'INFO':
        if message.startswith(('[task ', 'session done', '[belief] ')):
            print(f'  {message}', flush=True)
    elif severity in ('WARN', 'ERROR', 'FATAL') and name not in quiet_names:
        print(f'  {severity} [{name}] {message}', flush=True)


def _follow(graph: ProcessGraph, watched: str, budget_s: float, play: bool = False) -> int:
    """Stream the watched process's lines until it ends for good; returns its exit code."""
    deadline = time.monotonic() + budget_s
    ended = False
    while not ended:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DemoError(f'the session did not finish within {budget_s:.0f} s; logs in '
                            f'{graph.log_dir}')
        try:
            name, line = graph.lines.get(timeout=min(1.0, left))
        except queue.Empty:
            dead = graph.ended(ignore=watched)
            if dead:
                name, code = dead[0]
                raise DemoError(f'{name} exited early (code {code}); its log ends with:\n'
                                f'{graph.tail(name)}\nerrors in the node logs:\n'
                                f'{graph.errors()}') from None
            continue
        if line is None:
            ended = name == watched
        else:
            _show(line, play=play)
    return graph.processes[watched].wait()


def recording_path(args, out: Path) -> Path | None:
    """The MCAP file ``--record`` asks for (None without it)."""
    if getattr(args, 'record', None) is None:
        return None
    from cecm_ros.tools.recording import output_file

    return output_file(args.record or str(out / 'session.mcap')).resolve()


def markers_wanted(args) -> bool:
    """scene_markers runs: --markers, or --record (a recording shows the scene)."""
    return bool(getattr(args, 'markers', False)) or getattr(args, 'record', None) is not None


def _start_tools(env, params: Path, executables: Path, log_dir: Path,
                 path: Path | None, markers: bool) -> ProcessGraph:
    """The recorder and the marker publisher, in a process graph of their own: they start
    before the nodes and are stopped after them, so that they see every topic from its
    first message to the last."""
    tools = ProcessGraph(env, log_dir)
    for tool, wanted in ((MARKERS, markers), (RECORDER, path is not None)):
        if wanted and not (executables / tool).is_file():
            raise DemoError(f'{executables / tool} is missing; run `make build`')
    if markers:
        tools.start(MARKERS, [str(executables / MARKERS), '--ros-args', '--params-file',
                              str(params)])
    if path is not None:
        if path.exists():
            _say(f'replacing the recording {path}')
        tools.start(RECORDER, [str(executables / RECORDER), '--ros-args', '--params-file',
                               str(params), '-p', f'output:={path}', '-p', 'overwrite:=true'])
    return tools


def _stop_tools(tools: ProcessGraph | None) -> None:
    if tools is None:
        return
    forced = tools.stop(first=tuple(name for name in (MARKERS,) if name in tools.processes))
    for name, process in tools.processes.items():
        if name in forced or process.returncode != 0:
            _say(f'{name} ended with exit code {process.returncode}; its log ends with:\n'
                 f'{tools.tail(name)}')


def _run_processes(args, env, params: Path, executables: Path, out: Path,
                   record: Path | None = None) -> int:
    log_dir = out / 'logs'
    log_dir.mkdir(parents=True, exist_ok=True)
    env = private_ros_logs(env, out)
    tools = None
    graph = ProcessGraph(env, log_dir, respawn=True, report=lambda text: _say(text))
    nodes = graph_nodes(args)
    _say(f'starting the node graph as {len(nodes) + 1} processes (ROS_DOMAIN_ID='
         f'{env["ROS_DOMAIN_ID"]}, no `ros2 launch` here; a node that dies is respawned); '
         f'node logs in {log_dir}' + (f'; recording every topic to {record}' if record else '')
         + ('; scene_markers publishes /markers for RViz and Foxglove'
            if markers_wanted(args) else ''))
    _say(_plan_store_line(args))
    code = 1
    try:
        if record or markers_wanted(args):
            tools = _start_tools(env, params, executables, log_dir, record,
                                 markers_wanted(args))
        for node in nodes:
            graph.start(node, [str(executables / node), '--ros-args', '--params-file',
                               str(params)], stream=node in ('task_manager', WEB_PANEL))
        # With exit_when_done the manager exits 1 when a node can never be brought up:
        # that ends the demo with its reason (a crash of the manager is respawned).
        graph.start(MANAGER, [str(executables / MANAGER), '--ros-args', '--params-file',
                              str(params)], final_codes=(1,))
        code = _follow(graph, 'task_manager', time_budget(args), playing(args))
    finally:
        # A second Ctrl-C (or SIGTERM) must not cut the stop short: nodes left running,
        # a recording never closed.
        with signals_held():
            forced = graph.stop(first=(MANAGER,))
            if forced:
                _say(f'had to force {", ".join(forced)} to stop (see {log_dir})')
            if any(count > 0 for count in graph.respawns.values()):
                _say('respawned during the session: ' + ', '.join(
                    f'{name} x{count}' for name, count in graph.respawns.items()
                    if count > 0))
            _stop_tools(tools)
    return code


def launch_command(args, params: Path, out: Path, record: Path | None = None) -> list[str]:
    """The ``ros2 launch`` command of the demo's graph."""
    spec = args.capabilities or args.partner
    command = ['ros2', 'launch', PACKAGE, 'tidyup_sim.launch.py', f'params_file:={params}',
               f'partner:={spec}', f'num_tasks:={args.tasks}', f'seed:={args.seed}',
               f'samples:={args.samples}', f'summary_path:={out / "summary.json"}',
               'exit_when_done:=true']
    if getattr(args, 'partner_behaviour', None):
        command.append(f'partner_behaviour:={args.partner_behaviour}')
    if paced(args):
        command.append('paced:=true')
    if getattr(args, 'web', False):
        command += ['web:=true', 'answer_intents:=false',
                    f'correction_window_s:={correction_window(args)}',
                    f'web_port:={args.web_port}']
        if playing(args):
            command.append('play:=true')
        # The token is in params_file (readable by this user only), not on a command
        # line every user of the machine can read.
        if args.web_token == '':
            command.append('web_allow_without_token:=true')
    if record:
        command += ['record:=true', f'record_path:={record}']
    if getattr(args, 'markers', False):
        command.append('markers:=true')
    return command


def _run_launch(args, env, params: Path, out: Path, record: Path | None = None) -> int:
    command = launch_command(args, params, out, record)
    log_dir = out / 'logs'
    env = private_ros_logs(env, out)
    graph = ProcessGraph(env, log_dir)
    _say(f'running: {" ".join(command)} (ROS_DOMAIN_ID={env["ROS_DOMAIN_ID"]})')
    try:
        graph.start('launch', command, stream=True)
        return _follow(graph, 'launch', time_budget(args), playing(args))
    finally:
        graph.stop()


def _report(summary_path: Path) -> None:
    summary = json.loads(summary_path.read_text())
    rows = summary.get('per_task') or []
    prior = summary.get('prior') or {}
    statuses = (summary.get('report') or {}).get('status') or {}
    if rows and statuses:
        # The headline is what was learned: Hamming counts capabilities no task could
        # show as errors, so "0.12 -> 0.12" can hide 15 of 17 decided rightly.
        lacking = {item.split('=')[0] for item in
                   str(summary.get('true_capabilities', '')).split(',') if '=' in item}
        decided = {n: s for n, s in statuses.items() if s in ('known_present', 'known_absent')}
        wrong = [n for n, s in decided.items() if (s == 'known_absent') != (n in lacking)]
        undecided = [n for n, s in statuses.items() if s == 'undecided']
        agreement = rows[-1].get('heldout_agreement')
        _say(f'learned in {len(rows)} tasks: {len(decided)} of {len(statuses)} capabilities '
             f'decided ({f"{len(wrong)} wrongly: " + ", ".join(wrong) if wrong else "all rightly"})'
             + (f', {len(undecided)} undecided' if undecided else '')
             + (f'; held-out agreement {agreement["mean"]:.2f}' if agreement else ''))
    if rows and prior:
        last = rows[-1]
        _say(f'belief Hamming distance to the true capabilities: {prior["hamming"]:.2f} '
             f'(prior) -> {last["hamming"]["mean"]:.2f} after {len(rows)} tasks '
             f'(non-inert capabilities: {prior["hamming_active"]:.2f} -> '
             f'{last["hamming_active"]["mean"]:.2f})')
        if 'heldout_agreement' in last:
            _say(f'held-out agreement after {len(rows)} tasks: '
                 f'{last["heldout_agreement"]["mean"]:.2f} (identifiable Hamming '
                 f'{last["hamming_identifiable"]["mean"]:.2f})')
    report = summary.get('report') or {}
    if report.get('lines'):
        _say('what the evidence has decided (undecided ones are not facts):')
        for line in report['lines']:
            print(f'  {line}', flush=True)


def _estimator_variant(args) -> str:
    """Which CE-CM reading the session runs, in words."""
    from cecm_ros.core.inference import CONFOUNDED_PRESENT, UNDECIDED_RULE_WORDS
    from cecm_ros.tools.options import estimator_settings

    settings = estimator_settings(args)
    if settings.inference == 'posterior':
        structure = f' with alike rooms (concentration {settings.alike_rooms:g})' \
            if settings.alike_rooms > 0 else \
            f' coupled per room ({settings.coupling:g})' if settings.coupling > 0 else ''
        rule = UNDECIDED_RULE_WORDS[settings.undecided]
        if structure and settings.undecided in ('cautious', 'analogy'):
            rule = (f'absent where confounded (present where other rooms make them at least '
                    f'{CONFOUNDED_PRESENT:g} probable), else by their probability')
            if settings.undecided == 'analogy':
                rule = f'like a room the evidence decided where it allows, else {rule}'
        return (f'the posterior over every task ({settings.samples} particles, prior '
                f'{settings.prior:g}{structure}, undecided capabilities planned '
                f'{rule}); `--inference paper` runs the '
                'paper\'s Algorithm 1')
    return f'{settings.variant} (abc: samples from the {settings.proposal}, window ' \
           f'{settings.window or "off"})'


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (then act as before); in the main
    thread only, elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.signal(signum, lambda number, frame: held.append(number))
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """SIGTERM (``kill``, ``timeout``, a service manager) ends a run as Ctrl-C does: the
    node processes it started are stopped, not left behind."""
    def interrupted(signum, frame) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)


def run_graph_demo(args) -> int:
    stop_on_sigterm()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = out / 'summary.json'
    # A demo starts with a partner it has not met: no belief, no journal from before.
    for stale in (summary, out / 'partners.sqlite', out / 'partners.sqlite-wal',
                  out / 'partners.sqlite-shm'):
        if stale.exists():
            stale.unlink()
    shutil.rmtree(out / 'journal', ignore_errors=True)
    started = time.perf_counter()
    try:
        domain = load_domain(args.domain, household=args.household,
                             capabilities=args.capabilities_file)
        if args.partner is None:
            args.partner = domain.default_partner()
        spec = args.capabilities or args.partner
        domain.catalog.resolve(spec)  # fail early
        if getattr(args, 'web', False) and args.web_token is None:
            args.web_token = secrets.token_urlsafe(12)   # other local users stay out
        executables, base_params = package_paths()
        params = write_params(base_params, args, out)
        record = recording_path(args, out)
        env = demo_environment()
        note = '' if args.samples >= PAPER_SAMPLES else \
            f' (the paper uses {PAPER_SAMPLES}; fewer keep the demo short)'
        _say(f'{domain.describe()} session: partner {spec}, {args.tasks} tasks, seed {args.seed}, '
             f'{args.method} with {args.samples} samples per task{note}')
        if args.method.startswith('cecm'):
            _say(f'estimator: {_estimator_variant(args)}')
        _say(f'tasks: {task_choice_text(args.task_choice, args.candidates)}')
        use_launch = shutil.which('ros2') is not None and \
            importlib.util.find_spec('launch_ros') is not None
        if use_launch:
            code = _run_launch(args, env, params, out, record)
        else:
            code = _run_processes(args, env, params, executables, out, record)
    except DemoError as error:
        _say(f'demo failed: {error}')
        return 1
    except KeyboardInterrupt:
        _say('interrupted; the node graph was stopped')
        return 130
    wall = time.perf_counter() - started
    if code != 0:
        _say(f'the task manager ended with exit code {code}; see the logs in {out / "logs"}')
        return 1
    if not summary.is_file():
        _say(f'the session ended without writing {summary}; see the logs in {out / "logs"}')
        return 1
    _report(summary)
    _say(f'demo finished in {wall:.0f} s')
    print(f'summary: {summary}', flush=True)
    if record is not None:
        if not record.is_file():
            _say(f'the recording {record} was not written; see {out / "logs"}')
            return 1
        print(f'recording: {record}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit('run the demo with `cecm demo`')


def _plan_store_line(args) -> str:
    """Where the nodes keep their plans (what makes a second run fast)."""
    from cecm_ros.core.plan_store import default_store_path

    if getattr(args, 'no_plan_store', False):
        return 'plans: made anew in every node (--no-plan-store)'
    path = Path(args.plan_store).expanduser() if getattr(args, 'plan_store', None) \
        else default_store_path()
    return (f'plans: kept in {path} and reused by later runs (--no-plan-store: off; '
            '`cecm cache clear` empties it)')
