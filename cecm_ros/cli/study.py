"""``cecm study export|simulate``: the command-line side of a study dataset
(``cecm estimate --from-dataset`` re-estimates one; docs/study.md)."""

from __future__ import annotations

import argparse
import os
import sys

from cecm_ros.core.errors import CecmError
from cecm_ros.core.estimator_settings import SETTINGS
from cecm_ros.tools.options import (
    add_model_options,
    add_plan_store_options,
    domain_from_args,
    estimator_values,
    option_name,
    plan_cache,
)


def _domain_options(args, model) -> dict[str, str]:
    """The domain options given, as the dataset records them (a domain file's path
    too: its episodes name the domain by the file's ``name``)."""
    options = {'household': args.household, 'capabilities': args.capabilities_file,
               'path': args.domain if args.domain != model.name else None}
    return {key: str(value) for key, value in options.items() if value}


def cmd_export(args) -> int:
    from cecm_ros.study.export import describe_export, export_recordings

    if args.study:
        from cecm_ros.study.export import export_study

        if args.recordings or not args.protocol:
            raise CecmError('--study DIR takes no recordings, and needs --protocol FILE')
        _default_domain(args, _protocol_domain(args.protocol), 'the protocol')
        model = domain_from_args(args)
        exports, files = export_study(args.study, args.protocol, model, args.out,
                                      _domain_options(args, model), args.overwrite)
    else:
        model = domain_from_args(args)
        if not args.recordings:
            raise CecmError('name the recordings to export, or a study with --study DIR')
        exports, files = export_recordings(
            args.recordings, model, args.out, participant=args.participant,
            partner_id=args.partner_id, summary=args.summary,
            capabilities=args.capabilities, protocol=args.protocol,
            options=_domain_options(args, model), overwrite=args.overwrite)
    for export in exports:
        for line in describe_export(export):
            print(line)
    episodes = sum(len(e.episodes) for e in exports)
    print(f'dataset: {episodes} episodes in {", ".join(str(f) for f in files)}')
    return 0


def _protocol_domain(path: str) -> str:
    from cecm_ros.study.protocol import load_protocol

    return load_protocol(path).domain


def _default_domain(args, domain: str, source: str) -> None:
    """Without --domain, the domain ``source`` names (the protocol's, the dataset's)."""
    from cecm_ros.domains import DEFAULT_DOMAIN

    if args.domain == DEFAULT_DOMAIN and domain and domain != DEFAULT_DOMAIN:
        print(f'[cecm] domain {domain} (from {source}; --domain gives another)',
              file=sys.stderr)
        args.domain = domain


def dataset_domain(args) -> None:
    """``cecm estimate --from-dataset`` without --domain: the dataset's own domain (a
    domain file's path where its episodes recorded one)."""
    from cecm_ros.core.dataset import load_dataset

    episodes = load_dataset(args.from_dataset).episodes
    if episodes:
        first = episodes[0]
        _default_domain(args, first.domain_options.get('path') or first.domain,
                        'the dataset')


def cmd_run(args) -> int:
    from cecm_ros.study.run import cmd_run as run_study

    return run_study(args)


def cmd_simulate(args) -> int:
    from cecm_ros.core.dataset import write_dataset
    from cecm_ros.domains import planner_for
    from cecm_ros.study.simulate import simulate_study

    model = domain_from_args(args)
    types = [t.strip() for t in args.types.split(',') if t.strip()] if args.types \
        else list(model.catalog.partner_types)[:3]
    if not types:
        raise CecmError(f'the domain {model.name!r} has no partner types; name vectors with '
                        '--types name=0,...')
    with planner_for(model, workers=args.jobs, plan_cache=plan_cache(args)) as planner:
        episodes = simulate_study(
            model, planner, args.participants, types, args.tasks, args.partner_behaviour,
            args.seed, None if args.quiet else
            (lambda line: print(f'[cecm study] {line}', file=sys.stderr, flush=True)),
            _domain_options(args, model))
    files = write_dataset(args.out, episodes, overwrite=args.overwrite)
    print(f'dataset: {len(episodes)} episodes ({args.participants} participants x '
          f'{len(types)} types x {args.tasks} tasks) in {args.out} ({len(files)} files)')
    return 0


def add_study_parser(commands) -> None:
    """``cecm study`` and its actions, under the tool's subcommands."""
    study = commands.add_parser(
        'study', help='a study dataset: export session recordings into one, or simulate one',
        description='A study dataset is JSON lines, one episode per line (docs/study.md, '
                    '"Dataset"); `cecm estimate --from-dataset DIR` re-estimates it.')
    actions = study.add_subparsers(dest='study_command', required=True, metavar='ACTION')

    export = actions.add_parser(
        'export', help='session recordings (MCAP) into a dataset',
        description="Each run of a task that reached its goal becomes an episode; a "
                    "participant's recordings are their sets, in the order given. The "
                    "partner's capabilities come from the recording (the world's or the "
                    "task manager's 'partner' parameter), the task manager's summary "
                    '(--summary) or --capabilities; the export says which it used.')
    add_model_options(export)
    export.add_argument('recordings', nargs='*', metavar='RECORDING',
                        help='an MCAP file or a rosbag2 folder of them (session_recorder, '
                             'cecm demo --record)')
    export.add_argument('--study', metavar='DIR',
                        help='instead of recordings: a study `cecm study run` kept '
                             '(OUT/<study>, with --protocol its file): every participant, '
                             'every set, every start of a set')
    export.add_argument('--out', required=True, metavar='DIR',
                        help='the dataset folder (DIR/<participant>.jsonl)')
    export.add_argument('--participant', metavar='ID',
                        help="the participant's id (default: the recording's partner_id)")
    export.add_argument('--partner-id', metavar='ID',
                        help='only the tasks of this partner_id (default: every partner in '
                             'the recording, each a participant)')
    export.add_argument('--capabilities', metavar='SPEC',
                        help="the participant's capabilities when the recording has none: a "
                             'partner type or name=0,... (checked against the recording '
                             'when it has them)')
    export.add_argument('--summary', metavar='JSON',
                        help="the task manager's summary of the session (summary_path; cecm "
                             'demo: OUT/summary.json): its true_capabilities')
    export.add_argument('--protocol', default='', metavar='PROTOCOL.yaml|HASH',
                        help='the study protocol: its file (its digest is kept with every '
                             "episode, and a participant's sets are numbered in their order "
                             'of types there) or its hash (default: none)')
    export.add_argument('--overwrite', action='store_true',
                        help='replace dataset files that exist')
    export.set_defaults(func=cmd_export)

    run = actions.add_parser(
        'run', help="one participant's study in the browser, from a protocol",
        description="Serves the study's pages (consent, instructions, each set, its "
                    'questionnaire) at the URL it prints and runs each set as a node graph '
                    'in play mode (the web panel), recorded to the set\'s folder. Stopped '
                    'at any point, the same command goes on at the episode the participant '
                    'was in (docs/study.md).')
    run.add_argument('protocol', metavar='PROTOCOL.yaml', help='the study protocol')
    run.add_argument('--participant', required=True, metavar='ID',
                     help="a participant id of the protocol's participants")
    run.add_argument('--out', default='studies', metavar='DIR',
                     help='where studies are kept: DIR/<study>/<participant>/ '
                          '(default: %(default)s)')
    run.add_argument('--port', type=int, metavar='PORT',
                     help="the study pages' port (default: the protocol's web.study_port, "
                          'else any free one)')
    run.add_argument('--token', metavar='TOKEN',
                     help='access token of the pages and the panel (default: a random one)')
    run.add_argument('--scripted', metavar='BEHAVIOUR',
                     help='no person: a scripted participant plays in headless Chromium as '
                          'a partner of this behaviour (optimal, noisy:P, boltzmann:B, ...; '
                          'docs/partners.md), for tests and synthetic studies')
    run.add_argument('--scripted-seed', type=int, default=0, metavar='SEED',
                     help="the scripted participant's seed (with the participant's position "
                          'in the protocol; default: %(default)s)')
    run.add_argument('--show-browser', action='store_true',
                     help="the scripted participant's Chromium with a window")
    run.set_defaults(func=cmd_run)

    simulate = actions.add_parser(
        'simulate', help='a dataset of simulated participants (no ROS)',
        description='Each participant does one set of tasks per type (the same tasks for '
                    'every participant of a type) with a robot that plans for a fully '
                    'capable partner and is corrected, as in the paper\'s study.')
    add_model_options(simulate)
    simulate.add_argument('--out', required=True, metavar='DIR', help='the dataset folder')
    simulate.add_argument('--participants', type=int, default=2, metavar='N',
                          help='participants (default: %(default)s)')
    simulate.add_argument('--types', metavar='T1,T2,...',
                          help="partner types or name=0,... vectors, one set each (default: "
                               "the domain's first three types)")
    simulate.add_argument('--tasks', type=int, default=2, metavar='K',
                          help='tasks per set (default: %(default)s)')
    simulate.add_argument('--partner-behaviour', default='noisy:0.2', metavar='BEHAVIOUR',
                          help='how the simulated participants depart from the optimal '
                               'partner (docs/partners.md; default: %(default)s)')
    simulate.add_argument('--seed', type=int, default=0, help='seed (default: 0)')
    simulate.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                          help='parallel planner runs (default: all cores)')
    simulate.add_argument('--overwrite', action='store_true',
                          help='replace dataset files that exist')
    simulate.add_argument('--quiet', action='store_true', help='no progress on stderr')
    add_plan_store_options(simulate)
    simulate.set_defaults(func=cmd_simulate)


def add_dataset_source(source: argparse._MutuallyExclusiveGroup) -> None:
    """``cecm estimate --from-dataset``."""
    source.add_argument('--from-dataset', metavar='DIR',
                        help='a study dataset (a folder of .jsonl files, or one file): '
                             're-estimate every participant x type offline and write the '
                             "paper's section 5.3 table and appendix E analyses to --out")


def estimate_dataset(args, model) -> int:
    """``cecm estimate --from-dataset``: --method names one or more of posterior, paper,
    cecm_div (comma-separated; default posterior)."""
    from cecm_ros.domains import planner_for
    from cecm_ros.study.reestimate import method_specs, run

    overrides = {key: value for key, value in estimator_values(args).items()
                 if key not in ('inference', 'window')}   # both passed on their own
    names = [n.strip() for n in (args.method or 'posterior').split(',') if n.strip()]
    specs = method_specs(names, model, overrides, args.inference, args.window,
                         args.set_diversity)
    out = args.out or 'results/study'
    with planner_for(model, workers=args.jobs, plan_cache=plan_cache(args)) as planner:
        run(args.from_dataset, model, planner, specs, args.seed or 0, out,
            _command(args, names, out))
    return 0


def _command(args, names: list[str], out: str) -> str:
    """The command that makes these results again (every option that was given)."""
    parts = ['cecm estimate --from-dataset', args.from_dataset]
    defaults = {name: spec.default for name, spec in SETTINGS.items()}
    # Every estimator setting given (one at its default is left out: the same settings).
    given = [(option_name(name), value) for name, value in estimator_values(args).items()
             if value is not None and value != defaults[name]]
    for option, value in (('--domain', args.domain), ('--household', args.household),
                          ('--capabilities-file', args.capabilities_file),
                          ('--method', ','.join(names)), *given,
                          ('--set-diversity', args.set_diversity), ('--seed', args.seed or 0),
                          ('--out', out)):
        if value is not None and not (option == '--domain' and value == 'tidyup'):
            parts += [option, str(value)]
    return ' '.join(parts)
