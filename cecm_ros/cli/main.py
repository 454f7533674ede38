"""``cecm``: the project's command-line tool.

  cecm domains               the domains this installation knows (--domain NAME|PATH)
  cecm capabilities          the capability catalogue, partner types and inert ones
  cecm plan                  plan one task for a partner and print who does what
  cecm demo                  the simulated household demo
  cecm experiment            the paper's estimation-planning loop over seeded runs
  cecm bench                 time one CE-CM update naively and with shared plans
  cecm estimate              re-estimate a partner offline from a recording or a task log,
                             or a study dataset (--from-dataset: the paper's 5.3 table)
  cecm study export|simulate a study dataset from session recordings, or simulated
  cecm sweep                 a grid of experiments from a sweep file (local or on Ray)
  cecm cache info|clear      the plans kept on disk (the plan store)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from cecm_ros.core.domain import HUMAN
from cecm_ros.core.errors import CecmError
from cecm_ros.core.likelihood import likelihood_names
from cecm_ros.domains import planner_for
from cecm_ros.tools.options import (
    add_behaviour_option,
    add_demo_options,
    add_estimator_options,
    add_model_options,
    add_partner_options,
    add_plan_store_options,
    add_ray_option,
    add_task_choice_options,
    add_world_options,
    domain_from_args,
    estimator_settings,
    estimator_values,
    partner_behaviour,
    partner_spec,
    plan_cache,
    task_choice_text,
    world_settings,
)


def cmd_cache(args) -> int:
    from cecm_ros.core.plan_store import PlanStore, default_store_path, read_only_info

    path = Path(args.path) if args.path else default_store_path()
    if not path.exists():
        print(f'no plan store at {path}' + ('' if args.action == 'clear' else ' yet'))
        return 0
    info = read_only_info(path)
    if 'error' in info:
        raise CecmError(f'{path} is not a plan store ({info["error"]}); left as it is')
    if args.action == 'clear':
        removed = PlanStore(path).clear()
        print(f'removed {removed} plans from {path}')
        return 0
    print(f'plan store: {info["path"]}\nplans: {info["plans"]}\n'
          f'size: {info["bytes"] / 1e6:.1f} MB')
    return 0


def cmd_domains(args) -> int:
    from cecm_ros.domains import available_domains

    for name, description in available_domains().items():
        print(f'  {name:<16} {description}')
    print('or a domain file: --domain path/to/domain.yaml')
    return 0


def cmd_capabilities(args) -> int:
    from cecm_ros.domains.pddl.file_domain import FileDomain

    model = domain_from_args(args)
    inert = set(model.inert_capabilities)
    sample = args.sample_tasks if args.sample_tasks is not None else \
        SAMPLED_TASKS if isinstance(model, FileDomain) else 0
    used = _partner_work(model, sample, args) if sample > 0 else None
    print(f'{len(model.catalog)} capabilities, domain {model.describe()}:')
    for index, capability in enumerate(model.catalog.capabilities):
        flag = '  (inert here)' if capability.name in inert else ''
        if used is not None and not flag:
            flag = f'  (used in {used[1][index]} of {used[2]} sampled tasks)'
        print(f'  {capability.name:<20} {capability.description}{flag}')
    print('partner types:')
    for name, partner in model.catalog.partner_types.items():
        print(f'  {name:<16} {partner.description}')
        print(f'  {"":<16} lacks: {", ".join(partner.missing) or "nothing"}')
    if used is not None:
        acting, _, sampled, warning = used
        print(f'the partner acts in {acting} of {sampled} sampled tasks (each planned with '
              'every capability)')
        if warning:
            print(f'warning: {warning}')
    return 0


# Tasks `cecm capabilities` plans for a domain file, to say how much the partner does.
SAMPLED_TASKS = 20


def _partner_work(model, count: int, args) -> tuple[int, list[int], int, str | None]:
    """Of ``count`` tasks (a domain's problem files: each once), planned with every
    capability: in how many the partner acts, in how many each capability is used, how
    many were planned, and the warning when the partner does nothing."""
    from cecm_ros.domains.pddl.loading import idle_partner_warning

    problems = getattr(model, 'problem_tasks', None)
    tasks = problems[:count] if problems else model.task_generator(0).tasks(count)
    with planner_for(model, plan_cache=plan_cache(args)) as planner:
        plans = [planner.plan(task, model.catalog.all_capable()) for task in tasks]
    used = [sum(1 for plan in plans if index in plan.human_capabilities_used)
            for index in range(len(model.catalog))]
    acting = sum(1 for plan in plans if plan.actions_of(HUMAN))
    return acting, used, len(plans), idle_partner_warning(plans)


def partner_name(model) -> str:
    """What a domain calls its partner in tables: the partner's PDDL object, else
    'partner'."""
    return getattr(model, 'agent_objects', {}).get(HUMAN, 'partner')


def cmd_plan(args) -> int:
    model = domain_from_args(args)
    truth = model.catalog.resolve(partner_spec(args))
    task = model.task_generator(args.seed).next_task()
    with planner_for(model, timeout_s=args.timeout, plan_cache=plan_cache(args)) as planner:
        plan = planner.plan(task, truth)
    _print_task(model, task)
    print(plan.format(partner=partner_name(model)))
    print(f'planning time {plan.planning_time_s:.3f} s')
    return 0


def _print_task(model, task) -> None:
    print(f'task {task.task_id}')
    print('  start: ' + ' '.join(sorted(task.initial)))
    print('  goal:  ' + ' '.join(sorted(task.goal)))


def cmd_demo(args) -> int:
    if args.web and args.no_ros:
        raise CecmError('--web needs the node graph (the panel is a ROS node); drop --no-ros')
    pace = (args.partner_pace_low, args.partner_pace_high)
    if pace != (0.0, 0.0):
        from cecm_ros.core.world_conditions import WorldConditions

        WorldConditions(partner_pace_low=pace[0], partner_pace_high=pace[1])   # checked
        if args.play:
            raise CecmError('--partner-pace-low/--partner-pace-high: the partner at its own '
                            'pace is a simulated one; with --play a person plays it step by '
                            'step (drop one of them)')
        if args.no_ros:
            raise CecmError('--partner-pace-low/--partner-pace-high need the node graph (a '
                            "world at its own pace); `cecm experiment` has them without ROS")
    if args.partner_behaviour is not None:   # refused here, not by a node in the graph
        from cecm_ros.core.partners import PartnerBehaviour

        PartnerBehaviour.parse(args.partner_behaviour).check()
    if not args.no_ros:
        try:
            from cecm_ros.tools.demo_graph import run_graph_demo
        except ImportError as error:
            print(f'[cecm] the ROS 2 node graph is not available ({error}); '
                  'running the core demo (--no-ros)', file=sys.stderr)
        else:
            return run_graph_demo(args)
    return _core_demo(args)


def _core_demo(args) -> int:
    """Plan and simulate one task per named partner type (no ROS needed)."""
    from cecm_ros.core.metrics import correction_ratio
    from cecm_ros.core.partners import (
        ReplanRule,
        RobotTeammate,
        SimulatedPartner,
        resolve_partner_behaviour,
        run_shared_task,
    )
    from cecm_ros.experiments.experiment import partner_note

    model = domain_from_args(args)
    behaviour = resolve_partner_behaviour(args.partner_behaviour,
                                          default=model.default_partner_behaviour)
    task = model.task_generator(args.seed).next_task()
    _print_task(model, task)
    print(f'inert capabilities here: {", ".join(model.inert_capabilities) or "none"}')
    with planner_for(model, plan_cache=plan_cache(args)) as planner:
        for partner in list(model.catalog.partner_types)[:2]:
            truth = model.catalog.resolve(partner)
            started = time.perf_counter()
            plan = planner.plan(task, truth)
            elapsed = time.perf_counter() - started
            print(f'\n== partner {partner}: lacks {model.catalog.describe_missing(truth)}')
            print(f'joint plan under the true capabilities (planned in {elapsed:.3f} s):')
            print(plan.format(partner=partner_name(model)))
            simulated = SimulatedPartner(planner, truth, behaviour, seed=args.seed)
            print(partner_note(model, planner, simulated))
            robot = RobotTeammate(planner, model.catalog.all_capable(),
                                  ReplanRule(follow_world=True))
            try:
                record = run_shared_task(model, task, robot, simulated.for_task(task.task_id))
            finally:
                simulated.close()
            print(f'an optimistic robot working with this partner: {record.corrections} '
                  f'corrections in {record.robot_decisions} robot decisions '
                  f'({correction_ratio(record.corrections, record.robot_decisions):.0%}), '
                  f'{record.partner_deviations} partner steps off its plan, '
                  f'goal reached: {record.goal_reached}')
    return 0


def cmd_experiment(args) -> int:
    from cecm_ros.experiments.experiment import (
        METHODS,
        ExperimentSettings,
        plot_summaries,
        run_experiment,
    )

    methods = args.compare.split(',') if args.compare else [args.method]
    for method in methods:
        if method not in METHODS:
            raise CecmError(f'unknown method {method!r}; methods: {", ".join(METHODS)}')
    out_dir = Path(args.out)
    model = domain_from_args(args)
    base = ExperimentSettings(
        partner=partner_spec(args), method=methods[0], runs=args.runs, tasks=args.tasks,
        seed=args.seed, jobs=args.jobs, estimator=estimator_settings(args, model),
        switch_partner=args.switch_partner, switch_after=args.switch_after,
        forgo_probability=args.forgo_probability, task_choice=args.task_choice,
        partner_search=args.partner_search or 'own',
        partner_behaviour=partner_behaviour(args),
        candidates=args.candidates, heldout=args.heldout, set_diversity=args.set_diversity,
        **world_settings(args))
    summaries = {}
    print(f'[cecm] tasks: {task_choice_text(base.task_choice, base.candidates)}',
          file=sys.stderr)
    failed = []
    # The methods run the same seeded tasks: one planner (and plan cache) serves them all.
    with planner_for(model, workers=base.jobs, plan_cache=plan_cache(args),
                     ray_address=args.ray_address) as planner:
        for method in methods:
            target = out_dir / method if len(methods) > 1 else out_dir
            print(f'[cecm] {method}: {base.runs} runs x {base.tasks} tasks, partner '
                  f'{base.partner}, {base.estimator.samples} samples, {base.jobs} jobs '
                  f'-> {target}', file=sys.stderr)
            summary = run_experiment(replace(base, method=method), model, target,
                                     quiet=args.quiet, planner=planner)
            summaries[method] = summary
            print(f'[cecm] {method} done in {summary["wall_time_s"]:.1f} s', file=sys.stderr)
            failed += [f'{method} run {entry["run"]}: {entry["error"]}'
                       for entry in summary.get('failed_runs', [])]
    title = f'{base.partner} ({base.runs} runs)'
    plots = plot_summaries(summaries, out_dir, title)
    if len(methods) > 1:
        (out_dir / 'comparison.json').write_text(json.dumps(summaries, indent=1))
    _print_table(summaries)
    from cecm_ros.core.evidence import describe_evidence
    for method, summary in summaries.items():
        print('\n'.join([f'[{method}]' if len(summaries) > 1 else '',
                         *describe_evidence(summary)]).lstrip('\n'))
    print(f'summary: {out_dir / ("comparison.json" if len(methods) > 1 else "summary.json")}')
    print(f'plots: {", ".join(str(p) for p in plots)}')
    if failed:
        raise CecmError(f'{len(failed)} run{"s" if len(failed) > 1 else ""} failed (the '
                        'summary is of the others; their errors and traces: run-*.error.txt '
                        f'under {out_dir}); the same command runs them '
                        'again and keeps the finished ones:\n  ' + '\n  '.join(failed))
    return 0


def _print_table(summaries: dict) -> None:
    columns = [('hamming', 'hamming', '.3f'), ('hamming_identifiable', 'ham-ident', '.3f'),
               ('heldout_agreement', 'held-out', '.3f'), ('correction_ratio', 'corrected', '.3f'),
               ('iou', 'iou', '.3f'), ('decided', 'decided', '.1f'),
               ('wrong_known', 'wrong-known', '.2f'), ('accepted_samples', 'accepted', '.1f'),
               ('heldout_feasible', 'feasible', '.3f')]
    labels = {method: _method_label(method, summary) for method, summary in summaries.items()}
    width = max(12, *(len(label) + 2 for label in labels.values()))
    print(f'{"method":<{width}}{"task":>5}' + ''.join(f'{label:>12}' for _, label, _ in columns))
    for method, summary in summaries.items():
        for row in summary['per_task']:
            cells = ''.join(f'{format(row[key]["mean"], spec):>12}' if key in row
                            else f'{"-":>12}' for key, _, spec in columns)
            print(f'{labels[method]:<{width}}{row["task"]:>5}{cells}')


def _method_label(method: str, summary: dict) -> str:
    """The method as a table row names it: CE-CM with how it infers (Algorithm 1 is
    `cecm (paper)`, the posterior names its likelihood)."""
    if not method.startswith('cecm'):
        return method
    variant = summary.get('estimator_variant', 'posterior')
    if variant == 'posterior' and summary.get('likelihood'):
        variant = summary['likelihood']
    return f'{method} ({variant})'


def cmd_bench(args) -> int:
    from cecm_ros.experiments.bench import run_posterior_benchmark, run_update_benchmark

    model = domain_from_args(args)
    if model.task_universe() and not args.updates:
        from cecm_ros.experiments.bench import run_universe_benchmark

        result = run_universe_benchmark(
            model, partner_spec(args), samples=args.samples, seed=args.seed, jobs=args.jobs,
            runs=args.runs, tasks=max(args.tasks, 5), store_path=args.plan_store,
            progress=None if args.json else
            (lambda line: print(f'[cecm bench] {line}', file=sys.stderr, flush=True)))
    elif args.updates:
        result = run_posterior_benchmark(model, partner_spec(args),
                                         samples=args.samples, seed=args.seed, jobs=args.jobs,
                                         tasks=args.tasks, check_pairs=args.check_pairs)
    else:
        result = run_update_benchmark(model, partner_spec(args), samples=args.samples,
                                      seed=args.seed, jobs=args.jobs, tasks=args.tasks,
                                      progress=None if args.json else _progress_printer())
    if not args.updates and args.session_tasks > 0:
        from cecm_ros.experiments.bench import run_session_benchmark

        result.update(run_session_benchmark(
            model, partner_spec(args), samples=args.samples, seed=args.seed, jobs=args.jobs,
            tasks=args.session_tasks, likelihood=args.likelihood,
            misperception=args.misperception or 0.0, world=world_settings(args),
            progress=None if args.json else
            (lambda line: print(f'[cecm bench] {line}', file=sys.stderr, flush=True))))
    if args.json:
        print(json.dumps(result))
        return 0
    for key, value in result.items():
        if key != 'per_task':
            print(f'{key:>21}: {value}')
    for entry in result.get('per_task', []):
        print('  ' + ', '.join(f'{k} {v}' for k, v in entry.items()))
    return 0


def cmd_estimate(args) -> int:
    from cecm_ros.tools import reestimate

    if args.from_dataset:
        from cecm_ros.cli.study import dataset_domain, estimate_dataset

        dataset_domain(args)
        return estimate_dataset(args, domain_from_args(args))
    model = domain_from_args(args)
    if args.from_recording:
        evidence = reestimate.from_recording(args.from_recording, model, args.partner_id)
    elif args.from_store:
        evidence = reestimate.from_store(args.from_store, args.partner_id)
    else:
        evidence = reestimate.from_profile(args.from_log)
        if args.partner_id and args.partner_id != evidence.partner_id:
            raise CecmError(f'{args.from_log} is the profile of {evidence.partner_id!r}, not '
                            f'{args.partner_id!r}')
    overrides = {key: value for key, value in estimator_values(args).items()
                 if key not in ('inference', 'window')}   # both passed on their own
    if overrides['epsilon'] is None and evidence.settings is None and model.default_epsilon:
        overrides['epsilon'] = model.default_epsilon   # as the estimator node would
    method, settings, seed = reestimate.choose_settings(
        evidence, args.method, args.inference, overrides, args.window, args.seed)
    with planner_for(model, workers=args.jobs, plan_cache=plan_cache(args)) as planner:
        reestimate.run(evidence, model, method, settings, seed, planner, args.out)
    return 0


def _progress_printer():
    last = [0.0]

    def show(label: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] > 2:
            last[0] = now
            print(f'[cecm bench] {label}: {done}/{total} samples', file=sys.stderr, flush=True)
    return show



def cmd_sweep(args) -> int:
    from cecm_ros.domains import load_domain
    from cecm_ros.experiments.sweep import describe, load_sweep, run_sweep

    sweep = load_sweep(args.sweep, load_domain)
    if args.dry_run:
        for line in describe(sweep, args.out):
            print(line)
        return 0
    if args.jobs < 1:
        raise CecmError(f'--jobs must be at least 1, got {args.jobs}')
    address = args.address or os.environ.get('RAY_ADDRESS') or None
    outcome = run_sweep(sweep, args.out, load_domain, jobs=args.jobs, address=address,
                        plan_cache=plan_cache(args),
                        stream=None if args.quiet else sys.stderr)
    print(f'{outcome.cells} cells, {outcome.runs} runs: {outcome.skipped} finished before, '
          f'{outcome.executed} run now, {len(outcome.failed)} failed')
    print(f'table: {outcome.table_md} ({outcome.table_csv.name})')
    if outcome.plots:
        print(f'plots: {len(outcome.plots)} under {Path(args.out) / "plots"}')
    if outcome.failed or outcome.incomplete:
        shown = '\n  '.join(outcome.failed[:5])
        more = f'\n  ... and {len(outcome.failed) - 5} more' if len(outcome.failed) > 5 else ''
        raise CecmError(f'{len(outcome.failed)} runs failed (traces in runs/<cell>/run-*'
                        f'.error.txt); cells left out of the table: '
                        f'{", ".join(outcome.incomplete) or "none"}\n  {shown}{more}')
    return 0


# ---------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='cecm', description=__doc__.split('\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    sub = commands.add_parser('domains', help='list the domains this installation knows')
    sub.set_defaults(func=cmd_domains)

    sub = commands.add_parser('cache', help='the plans kept on disk: where, how many; or '
                                            'clear them')
    sub.add_argument('action', choices=('info', 'clear'))
    sub.add_argument('--path', help='the plan store (default: $CECM_CACHE_DIR, else '
                                    '$XDG_CACHE_HOME/cecm_ros, else ~/.cache/cecm_ros; '
                                    'plans.sqlite there)')
    sub.set_defaults(func=cmd_cache)

    sub = commands.add_parser('capabilities', help='list capabilities and partner types')
    add_model_options(sub)
    sub.add_argument('--sample-tasks', type=int, metavar='N',
                     help='plan N tasks with every capability and say how often the '
                          'partner acts and each capability is used (default: '
                          f'{SAMPLED_TASKS} for a domain file, 0 for the built-in domains)')
    add_plan_store_options(sub)
    sub.set_defaults(func=cmd_capabilities)

    sub = commands.add_parser('plan', help='plan one task and print the joint plan')
    add_model_options(sub)
    add_partner_options(sub, 'low_capability')
    sub.add_argument('--seed', type=int, default=0, help='task generator seed (default: 0)')
    sub.add_argument('--timeout', type=float, default=60.0, help='planner timeout in s')
    add_plan_store_options(sub)
    sub.set_defaults(func=cmd_plan)

    sub = commands.add_parser('demo', help='the simulated household demo')
    add_demo_options(sub)
    sub.set_defaults(func=cmd_demo)

    sub = commands.add_parser('experiment', help="the paper's estimation-planning loop")
    add_model_options(sub)
    add_partner_options(sub, 'low_capability')
    add_estimator_options(sub)
    add_task_choice_options(sub, 'given')
    sub.add_argument('--heldout', type=int, default=40, metavar='N',
                     help='held-out tasks for the agreement and identifiable metrics (0: '
                          'off) (default: %(default)s)')
    sub.add_argument('--method', default='cecm',
                     help='cecm, cecm_div, optimistic, pessimistic or qlearning (the '
                          "optimistic baseline as a domain's learned policy: Overcooked's "
                          'Q-policy) (default: cecm)')
    add_behaviour_option(sub)
    sub.add_argument('--forgo-probability', type=float, default=0.0, metavar='P',
                     help='chance per task that the simulated partner declines one of its '
                          'capabilities (a not quite optimal partner); the same as '
                          '--partner-behaviour forgo:P (default: 0)')
    sub.add_argument('--partner-search', choices=('own', 'shared', 'independent'),
                     help="where the simulated partner's searches come from: 'own' (the "
                          'default; independent is its older name): a seed of its own per '
                          "task where the planner has seeds (Overcooked's MCTS), never an "
                          "estimator's; 'shared': the robot's own search, an ORACLE (the "
                          'true vector reproduces its plans exactly), labelled so in the '
                          'summary')
    sub.add_argument('--compare', metavar='M1,M2,...',
                     help='run these methods on the same seeds and plot them together')
    sub.add_argument('--set-diversity', type=float, metavar='DELTA',
                     help="cecm_div: the share of its states a plan must differ in from "
                          "every plan kept in a hypothesis's set (the paper's delta; "
                          'default: 0.35)')
    add_world_options(sub)
    sub.add_argument('--runs', type=int, default=20, help='runs (default: 20)')
    sub.add_argument('--tasks', type=int, default=5, help='tasks per run (default: 5)')
    sub.add_argument('--seed', type=int, default=0, help='base seed (default: 0)')
    sub.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                     help='parallel planner processes and runs (default: all cores)')
    sub.add_argument('--switch-partner', metavar='SPEC',
                     help='partner that takes over after --switch-after tasks')
    sub.add_argument('--switch-after', type=int, metavar='N')
    sub.add_argument('--out', default='results/experiment', help='output folder')
    sub.add_argument('--quiet', action='store_true', help='no per-task progress lines')
    add_plan_store_options(sub)
    add_ray_option(sub)
    sub.set_defaults(func=cmd_experiment)

    sub = commands.add_parser('bench', help='time CE-CM updates: naive vs shared plans, or '
                                            'the posterior vs the sequential update')
    add_model_options(sub)
    add_partner_options(sub, 'low_capability')
    sub.add_argument('--samples', type=int, default=500, help='N (default: 500)')
    sub.add_argument('--seed', type=int, default=0, help='seed (default: 0)')
    sub.add_argument('--tasks', type=int, default=1,
                     help='time this many tasks of the seeded sequence and add up '
                          '(default: 1)')
    sub.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                     help='parallel planner runs for the fast path (default: all cores)')
    sub.add_argument('--updates', action='store_true',
                     help='time the posterior update against the sequential one over '
                          '--tasks tasks (each on its own planner) and re-check '
                          '--check-pairs of its decisions with the naive evaluator')
    sub.add_argument('--check-pairs', type=int, default=40, metavar='N',
                     help='with --updates: decisions re-checked naively (default: 40)')
    sub.add_argument('--runs', type=int, default=20,
                     help='a domain with few tasks (Overcooked): runs of the experiment '
                          'timed after every vector is planned on every task (default: 20)')
    sub.add_argument('--plan-store', metavar='PATH',
                     help='a domain with few tasks: the plan store to fill (default: a new '
                          'one in a temporary folder, so the plans are timed cold)')
    sub.add_argument('--session-tasks', type=int, default=5, metavar='K',
                     help='also time a K-task session as the demo runs it (informative '
                          'choice), on a new plan store and again on the plans it left: '
                          'first_task_s, update_median_s, update_p95_s, warm_speedup '
                          '(0: skip) (default: %(default)s)')
    sub.add_argument('--likelihood', choices=likelihood_names(),
                     help="the session's likelihood (default: the domain's)")
    sub.add_argument('--misperception', type=float,
                     help="the session's misperception term (default: 0; docs/robot.md)")
    add_world_options(sub)
    sub.add_argument('--json', action='store_true', help='print one JSON object')
    sub.set_defaults(func=cmd_bench)

    sub = commands.add_parser(
        'estimate', help='re-estimate a partner offline from a recording or a task log',
        description='Replay recorded evidence through a fresh estimator and print the '
                    'belief. Estimator options default to the settings the belief was '
                    'learned with (--from-store, --from-log) or to the estimator '
                    "node's defaults (--from-recording; method and inference as recorded); "
                    'give them to see what another estimator makes of the same evidence.')
    add_model_options(sub)
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument('--from-recording', metavar='MCAP',
                        help='a session recording (session_recorder, cecm demo --record, '
                             'ros2 bag record -s mcap)')
    source.add_argument('--from-store', metavar='SQLITE',
                        help="a partner store (the estimator's store_path)")
    source.add_argument('--from-log', metavar='PROFILE_JSON',
                        help='a partner profile (export_partner, or estimate --out)')
    from cecm_ros.cli.study import add_dataset_source, add_study_parser
    add_dataset_source(source)
    sub.add_argument('--partner-id', help='whose tasks (needed when there are several)')
    add_estimator_options(sub, replaying=True)
    sub.add_argument('--method', help='cecm, cecm_div, optimistic or pessimistic (default: '
                                      "the belief's, else cecm); --from-dataset: posterior, "
                                      'paper, cecm_div, comma-separated (default: posterior)')
    sub.add_argument('--set-diversity', type=float, metavar='DELTA',
                     help="--from-dataset, cecm_div: the plan sets' diversity delta (default: "
                          '0.35)')
    sub.add_argument('--seed', type=int, help="seed of the estimator (default: the belief's, "
                                              'else 0 as the estimator node)')
    sub.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                     help='parallel planner runs (default: all cores)')
    sub.add_argument('--out', metavar='DIR',
                     help='write DIR/belief.json and DIR/profile.json (belief and task log); '
                          '--from-dataset: reestimate.json, report.md and plots/ (default: '
                          'results/study)')
    add_plan_store_options(sub)
    sub.set_defaults(func=cmd_estimate)

    add_study_parser(commands)

    sub = commands.add_parser(
        'sweep', help='a grid of experiments from a sweep file, here or on a Ray cluster',
        description='Run every cell (one experiment per combination of the grid) run by '
                    'run, each run on one core, and write runs/<cell>/ (a file per run, '
                    'summary.json, runs.csv), table.csv, table.md and plots/ to --out. '
                    'Started again, it runs only the runs not finished yet. The file '
                    'format: docs/experiments.md, "Sweeps".')
    sub.add_argument('sweep', metavar='SWEEP.yaml', help='the sweep file')
    sub.add_argument('--out', required=True, metavar='DIR', help='output folder')
    sub.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                     help='runs at once on this machine, one process each (default: all '
                          'cores)')
    sub.add_argument('--address', metavar='ADDRESS',
                     help='run on the Ray cluster at ADDRESS (host:port of its head; '
                          'default: $RAY_ADDRESS if set, else this machine)')
    add_plan_store_options(sub)   # with Ray: each node's own cache, or a path all reach
    sub.add_argument('--dry-run', action='store_true',
                     help='check the sweep file, list its cells and the runs finished in '
                          '--out, run nothing')
    sub.add_argument('--quiet', action='store_true', help='no progress on stderr')
    sub.set_defaults(func=cmd_sweep)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CecmError as error:
        print(f'cecm: error: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('cecm: interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
