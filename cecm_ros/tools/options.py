"""The command-line options shared by `cecm` and the demo graph, and the settings they
make (one place, so that the two read an option the same way)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cecm_ros.core.errors import CecmError
from cecm_ros.core.estimator_settings import SETTINGS, EstimatorSettings, settings_from_values
from cecm_ros.core.likelihood import likelihood_help
from cecm_ros.experiments.experiment import TASK_CHOICES


def domain_from_args(args):
    """The domain ``--domain`` names, with TidyUP's household and catalogue options; a
    ``--partner`` left open becomes the domain's default partner."""
    from cecm_ros.domains import load_domain

    model = load_domain(args.domain, household=args.household,
                        capabilities=args.capabilities_file)
    if getattr(args, 'partner', False) is None:
        args.partner = model.default_partner()
    return model


def partner_spec(args) -> str:
    return args.capabilities if args.capabilities else args.partner


def add_model_options(parser: argparse.ArgumentParser) -> None:
    from cecm_ros.domains import DEFAULT_DOMAIN

    parser.add_argument('--domain', metavar='NAME|PATH', default=DEFAULT_DOMAIN,
                        help='the domain: a registered name (see `cecm domains`) or a '
                             'domain file (default: %(default)s)')
    parser.add_argument('--household', metavar='YAML',
                        help='tidyup: household file (default: config/tidyup_household.yaml)')
    parser.add_argument('--capabilities-file', metavar='YAML',
                        help='tidyup: capability catalogue (default: the one the household '
                             'file names, else config/capabilities.yaml)')


def add_partner_options(parser: argparse.ArgumentParser, default: str) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--partner',
                       help=f'named partner type (default: the domain\'s; TidyUP {default}, '
                            'Overcooked type_2)')
    group.add_argument('--capabilities', metavar='SPEC',
                       help='partner vector as name=0,name=1,... over all ones')


def add_behaviour_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--partner-behaviour', metavar='BEHAVIOUR',
                        help='how the simulated partner decides (docs/partners.md): on the '
                             "robot's planner (in-model) optimal, independent, "
                             'boltzmann:BETA, noisy:P, forgo:P, preference, detour:P; by '
                             'other rules greedy, satisficing, habit:P; or a plug-in '
                             'MODULE:CLASS, FILE.py:CLASS or an entry point of '
                             "cecm_ros.partners (default: the domain's: optimal; Overcooked "
                             'independent)')


def partner_behaviour(args) -> str | None:
    """The --partner-behaviour text as given (None: the domain's default)."""
    return args.partner_behaviour


class PlayAction(argparse.Action):
    """``--play``: a person plays the partner in the browser panel, which needs the panel
    (``--web``) too; both are set, so that every check of ``--web`` holds for it."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, True)
        namespace.web = True


def option_name(setting: str) -> str:
    """The command-line option of an estimator setting: ``--likelihood-seeds``."""
    return '--' + setting.replace('_', '-')


def add_estimator_options(parser: argparse.ArgumentParser, replaying: bool = False) -> None:
    """One option per estimator setting, as the schema declares it
    (core/estimator_settings.py): its type, choices, help and what leaving it out means.
    ``replaying`` (`cecm estimate`): every option left out is the replayed belief's own
    setting, so none has a default of its own."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for name, spec in SETTINGS.items():
        if spec.group and spec.group not in groups:
            groups[spec.group] = parser.add_mutually_exclusive_group()
        target = groups[spec.group] if spec.group else parser
        text = spec.help
        if name == 'likelihood':
            text += f': {likelihood_help()}; proven capabilities are certain in the graded ones'
        if spec.off is not None:
            text += f' ({spec.off}: off)'
        shown = spec.open or ('%(default)s' if spec.default is not None else 'none')
        if replaying:
            shown = ("the belief's own; from a recording, the estimator node's; with "
                     "--from-dataset, the method's preset")
        elif name == 'likelihood':
            shown += ': usage in every built-in domain'
        elif name == 'window':
            shown += ': sequential 1, others off'
        kind = {int: int, float: float, str: str}[spec.type]
        target.add_argument(option_name(name), dest=name, type=kind, choices=spec.allowed(),
                            default=None if spec.open or replaying else spec.default,
                            help=f'{text} (default: {shown})')


def estimator_values(args) -> dict:
    """The estimator settings the options gave, by name (None: left open)."""
    return {name: getattr(args, name, None) for name in SETTINGS}


def estimator_settings(args, model=None) -> EstimatorSettings:
    return settings_from_values(estimator_values(args), getattr(model, 'default_epsilon', None))


def add_task_choice_options(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument('--task-choice', choices=TASK_CHOICES, default=default,
                        help="'given': run the tasks in the order drawn; 'informative': run "
                             'the most informative of --candidates tasks each time '
                             '(default: %(default)s)')
    parser.add_argument('--candidates', type=int, default=5, metavar='K',
                        help='candidate tasks per choice with --task-choice informative '
                             '(default: %(default)s)')


def task_choice_text(choice: str, candidates: int) -> str:
    """How a session's tasks are chosen, in words: `cecm experiment` and `cecm demo` have
    different defaults (the experiments' published figures use given tasks, the demo
    shows what learning can do), so both print which they use."""
    if choice == 'informative':
        return (f'each the most informative of {candidates} candidates (--task-choice '
                'informative: the default of cecm demo, not of cecm experiment)')
    return ('in the seeded order drawn (--task-choice given: the default of cecm '
            'experiment, not of cecm demo)')


def add_plan_store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--plan-store', metavar='PATH',
                       help='keep plans in this SQLite file (default: plans.sqlite in '
                            '$CECM_CACHE_DIR, else $XDG_CACHE_HOME/cecm_ros, else '
                            '~/.cache/cecm_ros); later runs reuse them')
    group.add_argument('--no-plan-store', action='store_true',
                       help='plan everything in this process; keep nothing on disk')


def add_ray_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--ray-address', metavar='ADDR', default='',
                        help="send the planner's searches to the Ray cluster at ADDR, in "
                             'chunks, one Ray task each: auto, HOST:PORT, ray://HOST:PORT, '
                             'or local:N (a head of N CPUs started for this command); plans, '
                             'the plan store and the results stay as without it (default: '
                             'search on this machine)')


def plan_cache(args) -> bool | str:
    """The planners' ``plan_cache`` option from --plan-store / --no-plan-store."""
    if getattr(args, 'no_plan_store', False):
        return False
    path = getattr(args, 'plan_store', None)
    if path:
        if Path(path).is_dir():
            raise CecmError(f'--plan-store {path}: a directory; give a file path')
        return str(Path(path).expanduser().resolve())
    return True


# ------------------------------------------------------------------------ commands


def add_world_options(parser, lockstep: bool = False) -> None:
    """The world a robot meets (core/world_conditions.py), each off by default;
    ``lockstep``: only those a world of joint steps (the node graph's) can simulate."""
    from cecm_ros.core.world_conditions import LOCKSTEP_WORLD_SETTINGS, WORLD_SETTING_HELP

    for name, text in WORLD_SETTING_HELP.items():
        if lockstep and name not in LOCKSTEP_WORLD_SETTINGS:
            continue
        parser.add_argument('--' + name.replace('_', '-'), dest=name, type=float,
                            default=0.0, metavar='P', help=f'{text} (default: 0)')


def world_settings(args) -> dict[str, float]:
    from cecm_ros.core.world_conditions import WORLD_SETTINGS

    return {name: getattr(args, name) for name in WORLD_SETTINGS if hasattr(args, name)}


# ------------------------------------------------------------------------ the demo
def add_demo_options(sub: argparse.ArgumentParser) -> None:
    """`cecm demo`'s options; a study's sets are run as the demo runs (study/run.py)."""
    add_model_options(sub)
    add_partner_options(sub, 'low_capability')
    add_estimator_options(sub)
    add_world_options(sub)
    # The demo shows what learning can do: it picks informative tasks (the node graph's
    # own default, and the experiment's, is the given order).
    add_task_choice_options(sub, 'informative')
    sub.add_argument('--tasks', type=int, default=5, help='tasks in the session (default: 5)')
    sub.add_argument('--seed', type=int, default=0, help='seed (default: 0)')
    sub.add_argument('--method', default='cecm', help='estimation method (default: cecm)')
    sub.add_argument('--out', default='results/demo', help='output folder (default: %(default)s)')
    sub.add_argument('--no-ros', action='store_true',
                     help='plan and simulate without the ROS 2 node graph')
    add_behaviour_option(sub)
    add_plan_store_options(sub)
    sub.add_argument('--no-plan-ahead', action='store_true',
                     help="the estimator plans only in its updates, not while the team works "
                          "(capability_estimator's plan_ahead: false)")
    web = sub.add_argument_group('browser correction panel')
    web.add_argument('--web', action='store_true',
                     help='a person answers the robot from the web panel (URL printed)')
    web.add_argument('--web-port', type=int, default=0, metavar='PORT',
                     help='port of the panel (default: any free one)')
    web.add_argument('--web-token', metavar='TOKEN',
                     help="access token of the panel (default: a random one; '' = none, for "
                          'development only)')
    web.add_argument('--correction-window', type=float, metavar='S',
                     help='with --web: seconds the robot waits for each answer (default: 30; '
                          'with --play 120)')
    web.add_argument('--play', action=PlayAction,
                     help='a person plays the partner in the web panel (implies --web): the '
                          "partner's action at each step is the person's choice")
    sub.add_argument('--record', nargs='?', const='', metavar='PATH',
                     help='record every topic of the session into an MCAP file (default: '
                          'OUT/session.mcap; a folder gets a timestamped file), the markers '
                          'of --markers among them')
    sub.add_argument('--markers', action='store_true',
                     help='also publish the session for RViz and Foxglove (scene_markers: a '
                          'MarkerArray on /markers; --record implies it)')


def demo_parser() -> argparse.ArgumentParser:
    """The parser of `cecm demo`'s options alone (without the command's name)."""
    parser = argparse.ArgumentParser(prog='cecm demo')
    add_demo_options(parser)
    return parser
