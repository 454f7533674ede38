"""The simulated node graph of any domain: six lifecycle nodes and the lifecycle manager.

    ros2 launch cecm_ros cecm_graph.launch.py domain:=overcooked num_tasks:=2
    ros2 launch cecm_ros cecm_graph.launch.py web:=true answer_intents:=false
    ros2 launch cecm_ros cecm_graph.launch.py play:=true

The world simulator runs as ``world_sim`` with the parameters of config/tidyup_sim.yaml;
tidyup_sim.launch.py is this graph under the name the TidyUP graph always had.

``web:=true`` adds the browser correction panel (web_panel, managed like the others;
its URL is in the log) and gives a person 30 s per intent unless
``correction_window_s`` says otherwise; with ``answer_intents:=false`` the simulated
partner leaves the answers to that person. ``play:=true`` goes further: a person plays
the partner in the browser (the panel's play mode; simulated_human
``partner_behaviour: person`` sends the person's choices to the world), with time for a
person: a 120 s correction window unless ``correction_window_s`` says otherwise, no
limit on the world's wait for the partner, an hour per task.

Parameters come from ``params_file`` (default: the package's config/tidyup_sim.yaml);
the arguments partner, num_tasks, seed, samples, summary_path and exit_when_done
override it when given (empty = keep the file's value); another ``domain:=`` without
``partner:=`` takes that domain's default partner (Overcooked: ``type_2``), as the
file's partner is a TidyUP type. The
lifecycle manager configures and activates the nodes in order; the task manager then
runs the session. When the task manager exits (exit_when_done:=true) the whole launch
shuts down. A node process that dies is respawned, and the lifecycle manager brings it
back to active.
With record:=true a session_recorder records every topic into an MCAP file
(record_path, default ~/.ros/cecm_ros/recordings/), the markers among them.

``markers:=true`` (implied by record:=true) adds scene_markers: the session as a
visualization_msgs/MarkerArray on /markers for RViz and Foxglove; ``rviz:=true`` also
starts RViz with the package's config/cecm.rviz (where rviz2 is installed).
``joy:=true`` adds joy_corrections: a gamepad's buttons (sensor_msgs/Joy on /joy, from
``ros2 run joy joy_node``) answer the robot, mapped by config/joy_corrections.yaml or
``joy_mapping``; with play:=true they choose the partner's actions too.

``paced:=true`` leaves lockstep: each agent acts at its own pace (world_sim
``lockstep: false``, its pace and perception settings from params_file), perception
reports ObservedState events that the executor turns into observed steps
(``perception: events``), and paced_partner, who never waits for the robot, takes
simulated_human's place (docs/robot.md, "Perception as events").
"""

import os
from functools import partial

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = 'cecm_ros'
WORLD = 'world_sim'   # the world simulator's executable and node name
# Start order after the world node; the lifecycle manager configures them all, then
# activates them all.
NODES = ['joint_planner', 'capability_estimator', 'simulated_human', 'executor',
         'task_manager']
WEB_PANEL = 'web_panel'
PERSON_WINDOW_S = 30.0   # with web:=true: seconds a person gets to answer each intent
# With play:=true a person also chooses the partner's own action at every step.
PLAY_WINDOW_S = 120.0    # seconds to answer each intent
PLAY_TIMEOUT_S = 3600.0  # how long a task, and the robot's skill waiting for the partner, may take

RESPAWN_DELAY_S = 1.0


def _config(name: str) -> str:
    return os.path.join(get_package_share_directory(PACKAGE), 'config', name)


ARGUMENTS = {
    'params_file': ('', "Parameters file with one section per node; '' = the package's "
                        'config/tidyup_sim.yaml'),
    'domain': ('', "The domain of every node: a registered name (cecm domains) or a domain "
                   "file; '' = params_file (tidyup)"),
    'partner': ('', "The simulated partner's TRUE type or vector spec name=0,... "
                    "(the world node, simulated_human, task_manager); '' = params_file "
                    "(another domain: that domain's default, Overcooked type_2)"),
    'num_tasks': ('', "Tasks in the session; '' = params_file (5)"),
    'seed': ('', "Seed of the task generator and of CE-CM's sampling; '' = params_file (0)"),
    'samples': ('', "CE-CM samples per task; '' = params_file (500)"),
    'method': ('', "Estimator: cecm, cecm_div, optimistic or pessimistic; "
                   "'' = params_file (cecm)"),
    'inference': ('', "CE-CM's inference: posterior (every hypothesis explains every task), "
                      "paper (Algorithm 1 as published) or sequential; '' = params_file "
                      '(posterior)'),
    'likelihood': ('', "How the posterior weighs a task: stepwise, usage, kernel or "
                       "indicator (docs/design.md); '' = params_file (the domain's)"),
    'proposal': ('', "abc inference draws samples from the 'prior' or the current 'belief'; "
                     "'' = params_file (the inference preset's)"),
    'window': ('', "Keep this many recent tasks as evidence, 0 = all, -1 = the inference "
                   "preset's; '' = params_file (-1)"),
    'task_choice': ('', "given (the tasks in their order) or informative (the most "
                        "informative of task_candidates each time); '' = params_file (given)"),
    'task_candidates': ('', "Candidates per informative choice; '' = params_file (5)"),
    'summary_path': ('', "Where the task manager writes summary.json; '' = params_file"),
    'partner_id': ('', "Whose profile the estimator keeps and resumes; '' = params_file "
                       '(partner)'),
    'store_path': ('', "The partner store (SQLite); 'memory' = kept in memory only; '' = "
                       'params_file (~/.ros/cecm_ros/partners-{domain}.sqlite)'),
    'plan_store': ('', "Plans kept on disk for later runs (SQLite) by the nodes that plan: "
                       "'off' = none, a file path, or '' = params_file (the user's cache: "
                       '$XDG_CACHE_HOME/cecm_ros/plans.sqlite)'),
    'journal_dir': ('', "Where session journals go; 'none' = no journal; '' = params_file "
                        '(~/.ros/cecm_ros/sessions)'),
    'heldout_tasks': ('', "Held-out tasks of the agreement metrics, 0 = off; '' = "
                          'params_file (40)'),
    'exit_when_done': ('', "true: stop everything when the session ends, or when a node "
                           "can never be brought up (lifecycle_manager, exit code 1); "
                           "'' = params_file"),
    'partner_behaviour': ('', "How the simulated partner departs from the optimal one: "
                              'optimal, independent, boltzmann:BETA, noisy:P, forgo:P, '
                              "preference or detour:P (docs/partners.md); '' = params_file"),
    'answer_intents': ('', "false: the simulated partner leaves the robot's intents to a "
                           "person (correction_console); '' = params_file (true)"),
    'correction_window_s': ('', "Seconds the robot waits for an answer to each intent; "
                                "'' = params_file (2.0), or 30 with web:=true"),
    'web': ('false', 'true: also start the browser correction panel (web_panel)'),
    'play': ('false', 'true: a person plays the partner in the browser (implies web:=true): '
                      'simulated_human partner_behaviour person, the panel in play mode, a '
                      f'{PLAY_WINDOW_S:g} s correction window unless correction_window_s is '
                      'given, the world waits for the partner without limit and a task may '
                      f'take {PLAY_TIMEOUT_S:g} s'),
    'web_host': ('', "Address the panel listens on; '' = params_file (127.0.0.1)"),
    'web_port': ('', "Port of the panel, 0 = any free one; '' = params_file (8090)"),
    'web_token': ('', "Access token the panel requires; '' = params_file (there '': a "
                      'random one per start of the panel, printed in the URL it logs)'),
    'web_allow_without_token': ('', "true: serve the panel without any token (development "
                                    "only; it warns); '' = params_file (false)"),
    'log_level': ('info', 'Log level of every node'),
    'record': ('false', 'true: also start session_recorder, which records every topic into '
                        'an MCAP file'),
    'record_path': ('', "Its output file or folder; '' = params_file "
                        '(~/.ros/cecm_ros/recordings/)'),
    'markers': ('false', 'true: also start scene_markers (a MarkerArray on /markers for RViz '
                         'and Foxglove); record:=true implies it'),
    'rviz': ('false', "true: also start rviz2 with the package's config/cecm.rviz (implies "
                      'markers:=true; needs rviz2 installed)'),
    'joy': ('false', "true: also start joy_corrections (a gamepad's sensor_msgs/Joy buttons "
                     'answer the robot; with play:=true also the partner)'),
    'joy_mapping': ('', "joy_corrections' button mapping (YAML); '' = params_file (the "
                        "package's config/joy_corrections.yaml)"),
    'paced': ('false', 'true: each agent at its own pace: world_sim lockstep false, '
                       'perception as ObservedState events (executor perception: events), '
                       'paced_partner instead of simulated_human (not with play:=true)'),
}
PARTNER = 'simulated_human'
PACED_PARTNER = 'paced_partner'


def _overrides(context) -> dict[str, dict]:
    """Per-node parameter overrides from the launch arguments that were given."""
    def value(name):
        return LaunchConfiguration(name).perform(context).strip()

    def typed(text, kind):
        if kind is bool:
            return text.lower() in ('1', 'true', 'yes', 'on')
        return kind(text)

    per_node = {node: {} for node in (WORLD, *NODES, PACED_PARTNER, WEB_PANEL)}
    partners = [PARTNER, PACED_PARTNER]
    wiring = {
        'domain': (str, [WORLD, *NODES, PACED_PARTNER, WEB_PANEL]),
        'partner': (str, [WORLD, *partners, 'task_manager']),
        'num_tasks': (int, ['task_manager']),
        'seed': (int, ['task_manager', 'capability_estimator', *partners]),
        'samples': (int, ['capability_estimator']),
        'method': (str, ['capability_estimator']),
        'inference': (str, ['capability_estimator']),
        'likelihood': (str, ['capability_estimator']),
        'proposal': (str, ['capability_estimator']),
        'window': (int, ['capability_estimator']),
        'task_choice': (str, ['task_manager']),
        'task_candidates': (int, ['task_manager']),
        'summary_path': (str, ['task_manager']),
        'partner_id': (str, ['capability_estimator', 'task_manager']),
        'store_path': (str, ['capability_estimator']),
        'plan_store': (str, ['joint_planner', 'capability_estimator', *partners,
                             'task_manager']),
        'journal_dir': (str, ['task_manager']),
        'heldout_tasks': (int, ['task_manager']),
        'exit_when_done': (bool, ['task_manager']),
        'answer_intents': (bool, ['simulated_human']),
        'partner_behaviour': (str, partners),
        'correction_window_s': (float, ['executor']),
        'web_host': (str, [WEB_PANEL]),
        'web_port': (int, [WEB_PANEL]),
        'web_token': (str, [WEB_PANEL]),
        'web_allow_without_token': (bool, [WEB_PANEL]),
    }
    web_names = {'web_host': 'host', 'web_port': 'port', 'web_token': 'access_token',
                 'web_allow_without_token': 'allow_without_token'}
    for argument, (kind, nodes) in wiring.items():
        text = value(argument)
        if text:
            for node in nodes:
                per_node[node][web_names.get(argument, argument)] = typed(text, kind)
    partner = _default_partner(value('domain')) if not value('partner') else ''
    if partner:
        for node in wiring['partner'][1]:
            per_node[node]['partner'] = partner
    if _web(context):
        if not value('correction_window_s'):
            per_node['executor']['correction_window_s'] = \
                PLAY_WINDOW_S if _play(context) else PERSON_WINDOW_S
        # The partner and the panel both hear each intent: the first one must not go out
        # before the partner's subscription has matched (the panel's may match first).
        per_node['executor']['intent_subscribers'] = 2
    if _record(context):
        # The recorder hears each intent too: the first must not go out before it does.
        per_node['executor']['intent_subscribers'] = \
            per_node['executor'].get('intent_subscribers', 1) + 1
    if _markers(context):
        # scene_markers listens as well; not counted, its subscription could stand in for
        # the recorder's (or the partner's) and the first intent go out unheard by them.
        per_node['executor']['intent_subscribers'] = \
            per_node['executor'].get('intent_subscribers', 1) + 1
    if _flag(context, 'joy'):
        # So does the gamepad, which answers them.
        per_node['executor']['intent_subscribers'] = \
            per_node['executor'].get('intent_subscribers', 1) + 1
    if _paced(context):
        # Nobody in lockstep: the world applies each action once its time passed and
        # reports what it sees as events, the partner acts on its own.
        per_node[WORLD]['lockstep'] = False
        per_node['executor']['perception'] = 'events'
        per_node['task_manager']['partner_node'] = PACED_PARTNER
    if _play(context):
        # The person is the partner: the simulated one only passes their choices on.
        per_node['simulated_human']['partner_behaviour'] = 'person'
        per_node[WEB_PANEL]['play'] = True
        per_node[WORLD]['step_timeout_s'] = 0.0          # the world waits for the person
        per_node['executor']['skill_timeout_s'] = PLAY_TIMEOUT_S
        per_node['task_manager']['task_timeout_s'] = PLAY_TIMEOUT_S
    return per_node


def _default_partner(domain: str) -> str:
    """The domain's own default partner when domain:= names another domain than the
    parameters file's (whose partner is a TidyUP type); '' to keep the file's."""
    if not domain or domain == 'tidyup':
        return ''
    from cecm_ros.core.errors import CecmError
    from cecm_ros.domains import load_domain

    try:
        return load_domain(domain).default_partner()
    except CecmError:
        return ''   # the nodes refuse the domain and say why


def _web(context) -> bool:
    """The panel runs: web:=true, or play:=true (which needs it)."""
    return _play(context) or LaunchConfiguration('web').perform(context).strip().lower() in \
        ('1', 'true', 'yes', 'on')


def _play(context) -> bool:
    return LaunchConfiguration('play').perform(context).strip().lower() in \
        ('1', 'true', 'yes', 'on')


def _paced(context) -> bool:
    """paced:=true, unless a person plays the partner (who answers every step)."""
    return _flag(context, 'paced') and not _play(context)


def _record(context) -> bool:
    return _flag(context, 'record')


def _flag(context, name: str) -> bool:
    return LaunchConfiguration(name).perform(context).strip().lower() in \
        ('1', 'true', 'yes', 'on')


def _markers(context) -> bool:
    """scene_markers runs: markers:=true, rviz:=true or record:=true."""
    return _flag(context, 'markers') or _flag(context, 'rviz') or _record(context)


def _tools(context, params_file: str, log_level: str) -> list:
    """The tools beside the managed graph, each until the launch shuts down: the marker
    publisher (and RViz) and the gamepad."""
    arguments = ['--ros-args', '--log-level', log_level]
    domain = LaunchConfiguration('domain').perform(context).strip()
    common = {'domain': domain} if domain else {}
    actions = []
    rviz = _flag(context, 'rviz')
    if _markers(context):
        actions.append(Node(package=PACKAGE, executable='scene_markers', name='scene_markers',
                            parameters=[params_file, common], output='screen',
                            arguments=arguments, respawn=True, respawn_delay=RESPAWN_DELAY_S))
    if rviz:
        actions.append(Node(package='rviz2', executable='rviz2', name='rviz2', output='log',
                            arguments=['-d', _config('cecm.rviz')]))
    if _flag(context, 'joy'):
        mapping = LaunchConfiguration('joy_mapping').perform(context).strip()
        joy = {**common, 'play': _play(context), **({'mapping_file': mapping} if mapping
                                                   else {})}
        actions.append(Node(package=PACKAGE, executable='joy_corrections',
                            name='joy_corrections', parameters=[params_file, joy],
                            output='screen', arguments=arguments, respawn=True,
                            respawn_delay=RESPAWN_DELAY_S))
    return actions


def _shut_down_after_the_session(event, context):
    # Only a finished session (exit code 0 or 1, exit_when_done) ends the launch: a task
    # manager that was killed or crashed is respawned and resumes its session. It also
    # exits when the launch itself is stopping (Ctrl-C, or launch_testing's end); a
    # second Shutdown then would make launch_ros stop its adapter twice and log an error.
    if context.is_shutdown or event.returncode not in (0, 1):
        return None
    return [LogInfo(msg='task_manager exited; shutting the graph down'),
            EmitEvent(event=Shutdown(reason='task_manager finished'))]


class BringUpFailedError(RuntimeError):
    """Raised to end the launch with a non-zero exit code (launch has no other way)."""


def _shut_down_when_bring_up_failed(event, context):
    # Exit code 1: with exit_when_done the manager gave up on a node that never came up
    # (its log says which and why). The launch ends rather than wait for it, and ends
    # non-zero: an error raised here is how a launch does (it logs it, then shuts
    # down). A manager that was killed is respawned as any node is.
    if context.is_shutdown or event.returncode != 1:
        return None
    raise BringUpFailedError('lifecycle_manager gave up bringing a node up (its ERROR line '
                        'names the node and why); the graph is shut down')


def _nodes(context, default_params: str):
    params_file = LaunchConfiguration('params_file').perform(context).strip() or \
        _config(default_params)
    log_level = LaunchConfiguration('log_level').perform(context)
    overrides = _overrides(context)
    names = [WORLD, *NODES]
    if _paced(context):
        names[names.index(PARTNER)] = PACED_PARTNER
    if _web(context):   # serving before the session starts, so no intent goes by unseen
        names.insert(names.index('task_manager'), WEB_PANEL)
    actions = []
    if _flag(context, 'paced') and _play(context):
        actions.append(LogInfo(msg='paced:=true is ignored with play:=true: the person who '
                                   'plays the partner does so step by step, in lockstep'))
    for name in names:
        # A node that dies is started again; the lifecycle manager then brings it back
        # to active and the task manager runs the interrupted task again. A plain Node
        # action: our lifecycle_manager drives the transitions, and launch_ros's
        # LifecycleNode would add a ROS node in the launch process with a subscription
        # and a client per node to discover (about 0.6 s of bring-up, measured).
        node = Node(
            package=PACKAGE, executable=name, name=name,
            namespace='',
            parameters=[params_file, overrides[name]], output='screen',
            arguments=['--ros-args', '--log-level', log_level],
            respawn=True, respawn_delay=RESPAWN_DELAY_S)
        actions.append(node)
        if name == 'task_manager':
            actions.append(RegisterEventHandler(OnProcessExit(
                target_action=node, on_exit=_shut_down_after_the_session)))
    manager = {'node_names': names, 'autostart': True}
    exit_when_done = LaunchConfiguration('exit_when_done').perform(context).strip()
    if exit_when_done:
        # The manager then gives up (exit code 1) on a node that can never come up.
        manager['exit_when_done'] = exit_when_done.lower() in ('1', 'true', 'yes', 'on')
    manager_node = Node(
        package=PACKAGE, executable='lifecycle_manager', name='lifecycle_manager',
        parameters=[params_file, manager], output='screen',
        arguments=['--ros-args', '--log-level', log_level],
        respawn=True, respawn_delay=RESPAWN_DELAY_S)
    actions += [manager_node, RegisterEventHandler(OnProcessExit(
        target_action=manager_node, on_exit=_shut_down_when_bring_up_failed))]
    actions += _tools(context, params_file, log_level)
    if _record(context):
        # A tool, not a managed node: it records until the launch shuts down.
        path = LaunchConfiguration('record_path').perform(context).strip()
        actions.append(Node(
            package=PACKAGE, executable='session_recorder', name='session_recorder',
            parameters=[params_file, {'output': path} if path else {}], output='screen',
            arguments=['--ros-args', '--log-level', log_level]))
    return actions


def graph_description(params_file: str = 'tidyup_sim.yaml') -> LaunchDescription:
    """The graph with ``params_file`` (a file of the package's config folder) as the
    default parameters."""
    return LaunchDescription([
        *[DeclareLaunchArgument(name, default_value=default, description=description)
          for name, (default, description) in ARGUMENTS.items()],
        OpaqueFunction(function=partial(_nodes, default_params=params_file)),
    ])


def generate_launch_description():
    return graph_description()
